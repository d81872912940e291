"""A store that is down, slow, full or read-only never blocks or breaks a run (issue 13).

Runs are indexed on the store writer's thread once their trace is closed; each test waits for
that writer (``wait_for_store_writes``) before it looks at the log or the index.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

import attrs
import pytest

from fsm_agent.runtime.agent import Agent
from fsm_agent.runtime.hooks import HookInput, Hooks
from fsm_agent.store.background import StoreWriter, wait_for_store_writes
from fsm_agent.store.opening import open_store
from fsm_agent.store.query import RunQuery
from fsm_agent.store.sqlite import SqliteRunStore
from fsm_agent.store.summary import RunSummary, StoredRun, summarize_trace
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


class StalledStore(FullStore):
    """A store whose write waits until the test lets it go (a server that stopped answering),
    then keeps what it was given."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.entered = threading.Event()
        self.written: list[RunSummary] = []

    def add(self, runs: Iterable[RunSummary]) -> int:
        self.entered.set()
        assert self.release.wait(30), "the test never let the write go"
        self.written.extend(runs)
        return len(self.written)


def run_agent(folder: Path, store: object, *, hooks: Hooks | None = None) -> Path:
    folder.mkdir(exist_ok=True)
    trace = folder / "run-1.jsonl"
    agent = Agent(
        model=ScriptedModel(parse_scenario(REPLY)),
        cwd=folder,
        trace=trace,
        store=store,  # type: ignore[arg-type]
        hooks=hooks,
    )
    assert agent.run_sync("hello").terminal == "completed"
    return trace


def finished_and_logged(trace: Path) -> None:
    """The store writer is done, and the trace is complete."""
    assert wait_for_store_writes(60)
    assert replay(trace).terminal == "completed"


def test_a_failing_store_is_logged_and_the_trace_completes(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A store that raises on write: the run completes, its trace replays, a warning is logged."""
    with caplog.at_level(logging.WARNING, logger="fsm_agent.store"):
        trace = run_agent(tmp_path, FullStore())
        finished_and_logged(trace)
    assert f"run {read_header(trace).meta['run_id']} was not indexed" in caplog.text
    assert "No space left on device" in caplog.text


def test_a_slow_store_does_not_hold_the_run_up(tmp_path: Path) -> None:
    """A run returns while its store write is still stuck; the write lands once it unsticks."""
    store = StalledStore()
    try:
        trace = run_agent(tmp_path, store)
        assert store.entered.wait(30)
        assert store.written == []  # the run has returned, the write has not
    finally:
        store.release.set()
    finished_and_logged(trace)
    assert [run.run_id for run in store.written] == [read_header(trace).meta["run_id"]]


def test_a_run_indexed_late_is_the_run_that_ended_even_if_its_trace_file_is_reused(
    tmp_path: Path,
) -> None:
    """Two runs into one trace file (the first's deleted to reuse its name) while the store
    is stuck: each is indexed as it ended."""
    store = StalledStore()
    try:
        trace = run_agent(tmp_path, store)
        first = read_header(trace).meta["run_id"]
        trace.unlink()
        second = read_header(run_agent(tmp_path, store)).meta["run_id"]
    finally:
        store.release.set()
    assert wait_for_store_writes(60)
    assert [run.run_id for run in store.written] == [first, second]
    assert all(run.terminal == "completed" for run in store.written)


def test_a_full_queue_drops_the_run_from_the_index_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """With the writer stuck and its queue full, a further run is logged, not queued."""
    store = StalledStore()
    writer = StoreWriter(capacity=1)
    summary = summarize_trace(run_agent(tmp_path, False))
    try:
        assert writer.submit(summary, store)  # taken by the writer thread
        assert store.entered.wait(30)
        assert writer.submit(summary, store)  # waits in the queue
        with caplog.at_level(logging.WARNING, logger="fsm_agent.store"):
            assert not writer.submit(summary, store)
    finally:
        store.release.set()
    assert writer.wait(30)
    assert "1 runs are already waiting" in caplog.text
    assert "fsm-agent runs import" in caplog.text
    assert len(store.written) == 2


def test_a_full_sqlite_database_does_not_break_a_run(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """SQLite answering 'database or disk is full': logged, the run and its trace complete."""
    store = SqliteRunStore(tmp_path / "index.sqlite3")
    # SQLite's page limit stands in for a full disk: once the pages it has are used up, a
    # write fails with SQLITE_FULL, exactly as on a disk with no room left.
    store._connection.execute("PRAGMA max_page_count = 1")  # lowered to the pages it has
    filler = summarize_trace(run_agent(tmp_path / "filler", False))
    with pytest.raises(sqlite3.OperationalError, match="full"):
        for number in range(10_000):
            store.add([attrs.evolve(filler, run_id=f"filler-{number}")])
    try:
        with caplog.at_level(logging.WARNING, logger="fsm_agent.store"):
            trace = run_agent(tmp_path, store)
            finished_and_logged(trace)
    finally:
        store.close()
    assert "database or disk is full" in caplog.text


def test_a_read_only_sqlite_store_does_not_break_a_run(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A store opened read-only: the write is refused and logged; the run completes."""
    database = tmp_path / "index.sqlite3"
    open_store(database).close()  # an existing, migrated store
    before = database.read_bytes()
    with caplog.at_level(logging.WARNING, logger="fsm_agent.store"):
        trace = run_agent(tmp_path, f"sqlite://{database}?mode=ro")
        finished_and_logged(trace)
    assert "readonly database" in caplog.text
    assert database.read_bytes() == before


def test_a_store_file_that_is_no_database_does_not_break_a_run(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A store file that cannot be opened as a database: the run completes, its trace too."""
    database = tmp_path / "index.sqlite3"
    database.write_bytes(b"not a database, " * 512)
    with caplog.at_level(logging.WARNING, logger="fsm_agent.store"):
        trace = run_agent(tmp_path, str(database))
        finished_and_logged(trace)
    assert "was not indexed" in caplog.text
    assert database.read_bytes() == b"not a database, " * 512


def test_a_store_that_is_down_does_not_break_a_run(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A PostgreSQL URL nobody answers at: the run completes and the failure is logged."""
    pytest.importorskip("psycopg", reason="the fsm_agent[postgres] extra is not installed")
    with caplog.at_level(logging.WARNING, logger="fsm_agent.store"):
        trace = run_agent(tmp_path, "postgresql://fsm@127.0.0.1:1/runs?connect_timeout=2")
        finished_and_logged(trace)
    assert "was not indexed" in caplog.text


def test_postgresql_stopped_mid_run_does_not_break_it(
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    stoppable_postgres: tuple[str, Callable[[], None]],
) -> None:
    """The server dies while the run is going (its store connected before): logged, complete."""
    url, stop_server = stoppable_postgres
    store = open_store(url)

    def stop_hook(_hook_input: HookInput) -> None:
        stop_server()  # the run is about to end: its store write will find no server

    try:
        with caplog.at_level(logging.WARNING, logger="fsm_agent.store"):
            trace = run_agent(tmp_path, store, hooks=Hooks(stop=[stop_hook]))
            finished_and_logged(trace)
    finally:
        store.close()
    assert "was not indexed" in caplog.text


def test_a_finished_run_is_indexed(tmp_path: Path) -> None:
    """With a working store, the run is in the index once the store writer has caught up."""
    database = tmp_path / "index.sqlite3"
    trace = run_agent(tmp_path, str(database))
    assert wait_for_store_writes(60)
    store = open_store(database)
    try:
        run = store.get(read_header(trace).meta["run_id"])
    finally:
        store.close()
    assert run is not None
    assert (run.terminal, run.turns, run.model) == ("completed", 1, "scripted-model")
