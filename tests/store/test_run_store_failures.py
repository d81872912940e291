"""A store that is down, full or read-only never breaks a run (issue 13)."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path

import pytest

from fsm_agent.runtime.agent import Agent
from fsm_agent.store.opening import open_store
from fsm_agent.store.query import RunQuery
from fsm_agent.store.sql_store import StoredRun
from fsm_agent.store.summary import RunSummary
from fsm_agent.testing.scenario import ScriptedModel, parse_scenario
from fsm_agent.trace.reader import read_header
from fsm_agent.trace.replay import replay

REPLY = {"steps": [{"content": [{"text": "done"}]}]}


class FullStore:
    """A store whose every write fails, like a full disk."""

    def add(self, runs: Iterable[RunSummary]) -> int:
        raise OSError(28, "No space left on device")

    def runs(self, query: RunQuery) -> list[StoredRun]:
        return []

    def get(self, run_id: str) -> StoredRun | None:
        return None

    def close(self) -> None:
        pass


def run_agent(tmp_path: Path, store: object) -> Path:
    trace = tmp_path / "run-1.jsonl"
    agent = Agent(
        model=ScriptedModel(parse_scenario(REPLY)),
        cwd=tmp_path,
        trace=trace,
        store=store,  # type: ignore[arg-type]
    )
    assert agent.run_sync("hello").terminal == "completed"
    return trace


def test_a_failing_store_is_logged_and_the_trace_completes(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A store that raises on write: the run completes, its trace replays, a warning is logged."""
    with caplog.at_level(logging.WARNING, logger="fsm_agent.store"):
        trace = run_agent(tmp_path, FullStore())
    assert replay(trace).terminal == "completed"
    assert "run-1 was not indexed" in caplog.text
    assert "No space left on device" in caplog.text


def test_a_store_file_that_is_no_database_does_not_break_a_run(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A store file that cannot be opened as a database: the run completes, its trace too."""
    database = tmp_path / "index.sqlite3"
    database.write_bytes(b"not a database, " * 512)
    with caplog.at_level(logging.WARNING, logger="fsm_agent.store"):
        trace = run_agent(tmp_path, str(database))
    assert replay(trace).terminal == "completed"
    assert "was not indexed" in caplog.text
    assert database.read_bytes() == b"not a database, " * 512


def test_a_store_that_is_down_does_not_break_a_run(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A PostgreSQL URL nobody answers at: the run completes and the failure is logged."""
    pytest.importorskip("psycopg", reason="the fsm_agent[postgres] extra is not installed")
    with caplog.at_level(logging.WARNING, logger="fsm_agent.store"):
        trace = run_agent(tmp_path, "postgresql://fsm@127.0.0.1:1/runs?connect_timeout=2")
    assert replay(trace).terminal == "completed"
    assert "was not indexed" in caplog.text


def test_a_finished_run_is_indexed(tmp_path: Path) -> None:
    """With a working store, the run is in the index as soon as it has finished."""
    database = tmp_path / "index.sqlite3"
    trace = run_agent(tmp_path, str(database))
    store = open_store(database)
    try:
        run = store.get(read_header(trace).meta["run_id"])
    finally:
        store.close()
    assert run is not None
    assert (run.terminal, run.turns, run.model) == ("completed", 1, "scripted-model")
