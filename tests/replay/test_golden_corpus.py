"""The golden corpus in traces/: every file replays identically, covers every named transition,
and is not stale."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fsm_agent.core.tables import LOOP_ROWS, ContinueReason, Terminal
from fsm_agent.errors import TraceDivergence
from fsm_agent.trace.reader import read_trace
from fsm_agent.trace.replay import replay

ROOT = Path(__file__).resolve().parents[2]
TRACES = sorted((ROOT / "traces").glob("*.jsonl"))


def test_corpus_is_not_empty() -> None:
    """The corpus exists (an empty folder would make the replay tests vacuous)."""
    assert len(TRACES) >= 20


@pytest.mark.parametrize("path", TRACES, ids=[p.stem for p in TRACES])
def test_trace_replays_identically(path: Path) -> None:
    """Replaying a golden trace reproduces every transition and effect and its terminal."""
    result = replay(path)
    assert result.ended
    assert result.terminal is not None
    assert result.transitions > 0


def _taken() -> set[str]:
    names: set[str] = set()
    for path in TRACES:
        for record in read_trace(path).of_kind("transition"):
            names.add(record.data["name"])
    return names


def test_corpus_covers_every_continue_and_terminal_reason() -> None:
    """All 7 continue reasons and all 11 terminal reasons appear across the corpus."""
    taken = _taken()
    wanted = {c.value for c in ContinueReason} | {t.value for t in Terminal}
    assert wanted - taken == set()


def test_corpus_covers_fallback_cancel_and_aborts() -> None:
    """Fallback, a sibling cancel, concurrent safe tools and both aborts are in the corpus."""
    taken = _taken()
    assert {"model_fallback", "cancelled", "aborted_streaming", "aborted_tools"} <= taken
    concurrent = read_trace(ROOT / "traces" / "concurrent_reads_next_turn.jsonl")
    started = [r.data for r in concurrent.of_kind("transition") if r.data["name"] == "started"]
    finished = [
        r.seq for r in concurrent.of_kind("transition") if r.data["name"] == "call_returned"
    ]
    assert len(started) == 2
    assert max(r["seq"] for r in started) < min(finished)  # both ran before either returned


def test_corpus_takes_most_loop_rows() -> None:
    """Nearly every loop-table row is exercised by some golden trace."""
    names = {row.name for row in LOOP_ROWS}
    untaken = names - _taken()
    # image_error from `streaming` needs a client-side image failure no scenario can script.
    assert untaken <= {"image_error"} or untaken == set()


def test_corpus_is_current() -> None:
    """Re-recording the catalogue gives the same traces (tools/record_traces.py --check)."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "record_traces.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_tampered_trace_diverges_loudly(tmp_path: Path) -> None:
    """Changing one recorded transition on an event's line makes replay raise TraceDivergence
    at that transition's seq, naming the line."""
    source = ROOT / "traces" / "stop_hook_blocking.jsonl"
    lines = source.read_bytes().splitlines()
    for index, line in enumerate(lines):
        record = json.loads(line)
        names = [t["name"] for t in record.get("transitions", ())]
        if record.get("record") == "event" and "stop_hook_blocking" in names:
            position = names.index("stop_hook_blocking")
            record["transitions"][position]["name"] = "completed"
            lines[index] = json.dumps(record, sort_keys=True).encode()
            seq, number = record["seq"] + 1 + position, index + 1
            break
    tampered = tmp_path / "tampered.jsonl"
    tampered.write_bytes(b"\n".join(lines) + b"\n")
    with pytest.raises(TraceDivergence) as caught:
        replay(tampered)
    assert (caught.value.seq, caught.value.line) == (seq, number)
    assert caught.value.expected is not None
    assert caught.value.actual is not None
    assert caught.value.actual["name"] == "stop_hook_blocking"
    assert caught.value.expected["name"] == "completed"
