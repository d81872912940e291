"""One writer per trace file: a second run given the same file is refused, and loses nothing;
nor does a run given a file that holds something other than a trace, or an earlier run's trace.

Without the lock, the second writer truncated the file while the first went on writing at its
own offset, so neither trace survived.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fsm_agent.cli import main
from fsm_agent.core.config import LoopConfig
from fsm_agent.errors import NotATraceFile, TraceFileBusy, TraceFileHoldsRun
from fsm_agent.runtime.agent import Agent
from fsm_agent.testing.scenario import ScriptedModel, parse_scenario
from fsm_agent.trace.writer import TraceWriter

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = ROOT / "fsm_agent" / "scenarios" / "text_reply.json"


def replies(*texts: str) -> ScriptedModel:
    """A scripted model answering each request with the next text."""
    return ScriptedModel(parse_scenario({"steps": [{"content": [{"text": t}]} for t in texts]}))


HOLDER = """
import sys, time
from fsm_agent.core.config import LoopConfig
from fsm_agent.trace.writer import TraceWriter
writer = TraceWriter(sys.argv[1], config=LoopConfig(model="m"))
print("holding", flush=True)
time.sleep(600)
"""


def test_a_second_writer_is_refused_and_the_first_loses_nothing(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    first = TraceWriter(path, config=LoopConfig(model="m"))
    written = path.read_bytes()
    with pytest.raises(TraceFileBusy, match="another run is writing this trace file"):
        TraceWriter(path, config=LoopConfig(model="other"))
    assert path.read_bytes() == written  # not truncated
    first.close()
    TraceWriter(path, config=LoopConfig(model="m")).close()  # free again once closed


def test_a_writer_in_another_process_holds_it_until_it_dies(tmp_path: Path) -> None:
    """The lock is the process's: SIGKILL, with no clean-up at all, frees the file."""
    path = tmp_path / "t.jsonl"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path)], stdout=subprocess.PIPE, env=env, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "holding\n"
        with pytest.raises(TraceFileBusy):
            TraceWriter(path, config=LoopConfig(model="m"))
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()
    deadline = time.monotonic() + 10
    while True:
        try:
            TraceWriter(path, config=LoopConfig(model="m")).close()
            break
        except TraceFileBusy:
            assert time.monotonic() < deadline
            time.sleep(0.05)


def test_the_command_line_says_which_file_is_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    busy = TraceWriter(tmp_path / "t.jsonl", config=LoopConfig(model="m"))
    try:
        status = main(["run", "hi", "--model", f"scripted:{SCENARIO}", "--trace", "t.jsonl"])
    finally:
        busy.close()
    err = capsys.readouterr().err
    assert status == 1
    assert "t.jsonl: another run is writing this trace file" in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    "kept",
    [
        b"my notes\n",
        b"{}\n",
        b'{"record":"header"}\n',
        b"\x00\x01",
        b" ",
        # JSON that begins as a header does: a minified settings file, a JSON lines file
        b'{"config":{"theme":"dark"}}',
        b'{"config":{"theme":"dark"}}\n',
        b'{"config":1,"record":"settings"}\n{"config":2}\n',
        b'{"config":{"theme":"dark"},\n"more":1}',
    ],
)
def test_a_file_that_is_not_a_trace_is_not_overwritten(tmp_path: Path, kept: bytes) -> None:
    """Found: ``fsm-agent run --trace notes.txt`` emptied notes.txt and wrote a trace there."""
    path = tmp_path / "notes.txt"
    path.write_bytes(kept)
    with pytest.raises(NotATraceFile, match="not overwritten"):
        TraceWriter(path, config=LoopConfig(model="m"))
    assert path.read_bytes() == kept
    TraceWriter(tmp_path / "new.jsonl", config=LoopConfig(model="m")).close()  # a new file


def test_a_trace_or_an_empty_file_is_written_over(tmp_path: Path) -> None:
    """A trace (a finished one, or one whose run was killed as it wrote its header) and an
    empty file (a run killed as it made it) are a run's to write again."""
    path = tmp_path / "t.jsonl"
    TraceWriter(path, config=LoopConfig(model="first")).close()
    whole = path.read_bytes()
    first_line = whole[: whole.index(b"\n") + 1]
    for before in (whole, whole[:20], whole[: len(first_line) // 2], first_line, b""):
        path.write_bytes(before)
        TraceWriter(path, config=LoopConfig(model="second")).close()
        assert b'"model":"second"' in path.read_bytes()


def test_the_command_line_refuses_a_file_that_is_not_a_trace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "README.md").write_text("# my project\n", encoding="utf-8")
    status = main(["run", "hi", "--model", f"scripted:{SCENARIO}", "--trace", "README.md"])
    err = capsys.readouterr().err
    assert status == 1
    assert "README.md: this file holds something that is not a trace" in err
    assert "Traceback" not in err
    assert (tmp_path / "README.md").read_text(encoding="utf-8") == "# my project\n"


def test_a_run_keeps_an_earlier_runs_trace(tmp_path: Path) -> None:
    """Found: a second run given the same trace file (the same command run again, an agent run
    twice) emptied it, and the record of the first run, the only way to replay or resume it,
    was gone."""
    path = tmp_path / "t.jsonl"
    agent = Agent(model=replies("one", "two", "three"), trace=path)
    assert agent.run_sync("first").terminal == "completed"
    first = path.read_bytes()
    with pytest.raises(TraceFileHoldsRun, match="holds an earlier run's trace"):
        agent.run_sync("second")
    assert path.read_bytes() == first
    path.unlink()  # deleted, the name is free again
    assert agent.run_sync("third").terminal == "completed"
    assert path.read_bytes() != first


@pytest.mark.parametrize("cut", ["empty", "half a header"])
def test_a_run_writes_over_a_trace_cut_off_in_its_header(tmp_path: Path, cut: str) -> None:
    """A run killed before its header was whole recorded nothing: its file is free."""
    path = tmp_path / "t.jsonl"
    TraceWriter(path, config=LoopConfig(model="first")).close()
    header = path.read_bytes()
    path.write_bytes(b"" if cut == "empty" else header[: len(header) // 2])
    agent = Agent(model=replies("hi"), trace=path)
    assert agent.run_sync("go").terminal == "completed"
    assert path.read_bytes().count(b"\n") > 2


def test_the_command_line_keeps_an_earlier_runs_trace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--trace`` given the file of an earlier run, or of the run being forked or resumed,
    fails before anything runs; the earlier trace is as it was."""
    monkeypatch.chdir(tmp_path)
    model = f"scripted:{SCENARIO}"
    assert main(["run", "hi", "--model", model, "--trace", "t.jsonl"]) == 0
    first = (tmp_path / "t.jsonl").read_bytes()
    capsys.readouterr()
    for argv in (
        ["run", "again", "--model", model, "--trace", "t.jsonl"],
        ["fork", "t.jsonl", "--at", "3", "--model", model, "--trace", "t.jsonl"],
    ):
        assert main(argv) == 1, argv
        err = capsys.readouterr().err
        assert "t.jsonl: this file holds an earlier run's trace" in err
        assert "Traceback" not in err
        assert (tmp_path / "t.jsonl").read_bytes() == first
    # A conversation's next turn goes beside it, as before.
    assert main(["run", "more", "--model", model, "--resume", "t.jsonl", "--trace", "t.jsonl"]) == 0
    assert (tmp_path / "t.jsonl").read_bytes() == first
    assert (tmp_path / "t.turn2.jsonl").is_file()


def test_the_trace_of_a_killed_run_is_kept_for_its_resume(tmp_path: Path) -> None:
    """A run killed midway (its trace cut after some records) and started again with the same
    file: the cut trace is what ``resume`` needs, so it is kept, and the error says so."""
    path = tmp_path / "t.jsonl"
    assert Agent(model=replies("one"), trace=path).run_sync("first").terminal == "completed"
    lines = path.read_bytes().splitlines(keepends=True)
    cut = b"".join(lines[: len(lines) // 2])
    path.write_bytes(cut)  # as kill -9 leaves it: whole lines, no end record
    with pytest.raises(TraceFileHoldsRun, match="fsm-agent resume FILE"):
        Agent(model=replies("two"), trace=path).run_sync("again")
    assert path.read_bytes() == cut
