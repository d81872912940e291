"""One suite, both backends: the same traces imported give the same answers (issue 13)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import orjson
import pytest

from fsm_agent.errors import ConfigError
from fsm_agent.store.opening import open_store
from fsm_agent.store.query import RunQuery, TransitionCount, parse_since
from fsm_agent.store.recording import import_traces
from fsm_agent.store.sql_store import RunStore

GOLDEN = Path(__file__).parents[2] / "traces"
# A fixed choice of golden traces, so traces added later do not change the expected answers.
CHOSEN = [
    GOLDEN / f"{name}.jsonl"
    for name in (
        "prompt_too_long",
        "collapse_drain_empty",
        "rejected_and_denied",
        "sibling_cancel",
        "reactive_compact_retry",
        "concurrent_reads_next_turn",
        "max_turns",
        "model_error",
    )
]


def write_trace(
    path: Path, *, meta: dict[str, Any], body: list[dict[str, Any]], end: str | None = "completed"
) -> Path:
    """A small trace: the header of a golden trace with ``meta``, then ``body`` and an end."""
    header = orjson.loads((GOLDEN / "max_turns.jsonl").read_bytes().split(b"\n", 1)[0])
    header["meta"] = meta
    records = [header, *({"seq": n, **r} for n, r in enumerate(body, start=1))]
    if end is not None:
        usage = {"input_tokens": 7, "output_tokens": 3}
        records.append({"record": "end", "seq": len(records), "terminal": end, "usage": usage})
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return path


def transition(name: str) -> dict[str, Any]:
    return {
        "record": "transition",
        "name": name,
        "machine": "loop",
        "source": "a",
        "dest": "b",
        "call_id": None,
    }


def ids(store: RunStore, **filters: Any) -> set[str]:
    return {run.run_id for run in store.runs(RunQuery(**filters))}


@pytest.fixture
def golden_store(store_url: str) -> Any:
    store = open_store(store_url)
    assert import_traces(store, CHOSEN) == (8, 0)
    yield store
    store.close()


def test_golden_traces_answer_the_issue_questions(golden_store: RunStore) -> None:
    """Terminal, denied, tool and transition filters find exactly the runs that match."""
    assert ids(golden_store, terminal="prompt_too_long") == {
        "prompt_too_long",
        "collapse_drain_empty",
    }
    assert ids(golden_store, denied=True) == {"rejected_and_denied"}
    assert ids(golden_store, tool="Bash") == {"sibling_cancel"}
    assert ids(golden_store, transitions=(TransitionCount(name="reactive_compact_retry"),)) == {
        "reactive_compact_retry"
    }
    assert ids(golden_store, terminal="completed", tool="Bash", denied=True) == set()


def test_importing_again_replaces_runs(golden_store: RunStore) -> None:
    """Indexing the same traces twice leaves one row per run, not two."""
    assert import_traces(golden_store, CHOSEN) == (8, 0)
    assert len(golden_store.runs(RunQuery())) == 8


def test_a_run_is_found_by_id_with_its_figures(golden_store: RunStore) -> None:
    """``get`` returns the run's terminal, turns, usage and its trace's absolute path."""
    run = golden_store.get("rejected_and_denied")
    assert run is not None
    assert (run.terminal, run.turns, run.input_tokens, run.output_tokens) == (
        "completed",
        2,
        20,
        29,
    )
    assert Path(run.trace_path) == (GOLDEN / "rejected_and_denied.jsonl").absolute()
    assert golden_store.get("no-such-run") is None


def test_transition_counts_time_model_and_limit(store_url: str, tmp_path: Path) -> None:
    """NAME:MIN counts, --since, --model and --limit select the same runs on every backend."""
    folder = tmp_path / "runs"
    folder.mkdir()
    twice = [transition("reactive_compact_retry")] * 2
    write_trace(
        folder / "old.jsonl",
        meta={"started": "2026-11-01T10:00:00+00:00", "model": "m-a"},
        body=twice,
    )
    write_trace(
        folder / "new.jsonl",
        meta={"started": "2026-11-29T10:00:00+00:00", "model": "m-b"},
        body=twice[:1],
        end=None,
    )
    store = open_store(store_url)
    try:
        assert import_traces(store, [folder]) == (2, 0)
        retry = "reactive_compact_retry"
        assert ids(store, transitions=(TransitionCount.parse(f"{retry}:2"),)) == {"old"}
        assert ids(store, transitions=(TransitionCount.parse(retry),)) == {"old", "new"}
        assert ids(store, since=parse_since("2026-11-15")) == {"new"}
        assert ids(store, model="m-a") == {"old"}
        assert ids(store, terminal="") == {"new"}
        assert [run.run_id for run in store.runs(RunQuery(limit=1))] == ["new"]
    finally:
        store.close()


def test_an_unreadable_trace_is_skipped_and_counted(store_url: str, tmp_path: Path) -> None:
    """An import indexes the good traces and reports how many could not be read."""
    write_trace(tmp_path / "good.jsonl", meta={}, body=[])
    (tmp_path / "bad.jsonl").write_bytes(b'{"record": "event"}\n')
    store = open_store(store_url)
    try:
        assert import_traces(store, [tmp_path]) == (1, 1)
        assert ids(store) == {"good"}
    finally:
        store.close()


def test_bad_filters_and_urls_are_config_errors() -> None:
    """A malformed NAME:MIN, --since or store URL is refused with a message naming it."""
    with pytest.raises(ConfigError, match="MIN must be a whole number"):
        TransitionCount.parse("next_turn:zero")
    with pytest.raises(ConfigError, match="--since 'last week'"):
        parse_since("last week")
    with pytest.raises(ConfigError, match="unknown kind of database"):
        open_store("mysql://localhost/runs")


def test_since_reads_naive_times_as_utc() -> None:
    """A --since without a zone is taken as UTC."""
    assert parse_since("2026-11-30T12:00") == dt.datetime(2026, 11, 30, 12, tzinfo=dt.UTC)
