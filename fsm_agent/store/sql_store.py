"""The run store interface, and the SQL that both backends share.

:class:`RunStore` is what the rest of fsm_agent sees. :class:`SqlRunStore` writes and reads the
schema of ``migrations/`` through any DB-API connection; a backend supplies the connection, its
parameter marker and how a transaction is opened (:mod:`fsm_agent.store.sqlite`,
:mod:`fsm_agent.store.postgres`).
"""

from __future__ import annotations

import abc
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from importlib import resources
from typing import Any, Protocol

from fsm_agent.store.query import RUN_FIELDS, RunQuery, select_runs
from fsm_agent.store.summary import RunSummary, StoredRun


class RunStore(Protocol):
    """An index of runs, rebuilt from their traces whenever needed."""

    def add(self, runs: Iterable[RunSummary]) -> int:
        """Index runs (a run already indexed is replaced); returns how many were written."""

    def runs(self, query: RunQuery) -> list[StoredRun]:
        """The runs ``query`` matches, newest first."""

    def get(self, run_id: str) -> StoredRun | None:
        """One run by id, or None."""

    def close(self) -> None:
        """Release the connection."""


class Cursor(Protocol):
    """The part of a DB-API cursor the store uses (sqlite3 and psycopg both have it)."""

    def execute(self, sql: str, params: Sequence[Any] = ..., /) -> Any: ...

    def executemany(self, sql: str, params: Iterable[Sequence[Any]], /) -> Any: ...

    def fetchall(self) -> list[Any]: ...


def migrations() -> list[tuple[int, str]]:
    """The schema migrations shipped in the package: (version, SQL), oldest first."""
    folder = resources.files("fsm_agent.store") / "migrations"
    found = [
        (int(entry.name.split("_", 1)[0]), entry.read_text(encoding="utf-8"))
        for entry in folder.iterdir()
        if entry.name.endswith(".sql")
    ]
    return sorted(found)


_BATCH = 500  # runs written per transaction when importing many


class SqlRunStore(abc.ABC):
    """The schema and queries of the run index, over a backend's connection."""

    marker = "?"
    """The DB-API parameter marker of the backend."""

    @abc.abstractmethod
    def transaction(self) -> AbstractContextManager[Cursor]:
        """A cursor inside a transaction that commits on success and rolls back on error."""

    @abc.abstractmethod
    def close(self) -> None:
        """Release the connection."""

    def add(self, runs: Iterable[RunSummary]) -> int:
        """Index runs (a run already indexed is replaced); returns how many were written."""
        written = 0
        for batch in _batches(runs, _BATCH):
            with self.transaction() as cursor:
                self._write(cursor, batch)
            written += len(batch)
        return written

    def runs(self, query: RunQuery) -> list[StoredRun]:
        """The runs ``query`` matches, newest first."""
        sql, params = select_runs(query, self.marker)
        with self.transaction() as cursor:
            cursor.execute(sql, params)
            rows = cursor.fetchall()
        return [_stored(row) for row in rows]

    def get(self, run_id: str) -> StoredRun | None:
        """One run by id, or None."""
        columns = ", ".join(RUN_FIELDS)
        with self.transaction() as cursor:
            cursor.execute(f"SELECT {columns} FROM runs WHERE run_id = {self.marker}", [run_id])
            rows = cursor.fetchall()
        return _stored(rows[0]) if rows else None

    def _write(self, cursor: Cursor, batch: list[RunSummary]) -> None:
        m = self.marker
        # The last write of a run wins. Upserting the run rows first locks them, in id order
        # (so two writers of the same runs cannot deadlock); a second writer of a run then
        # waits, and its deletes below see the first writer's committed rows.
        batch = sorted({run.run_id: run for run in batch}.values(), key=lambda run: run.run_id)
        updates = ", ".join(f"{name} = excluded.{name}" for name in RUN_FIELDS[1:])
        cursor.executemany(
            f"INSERT INTO runs ({', '.join(RUN_FIELDS)}) "
            f"VALUES ({', '.join([m] * len(RUN_FIELDS))}) "
            f"ON CONFLICT (run_id) DO UPDATE SET {updates}",
            [[getattr(run, name) for name in RUN_FIELDS] for run in batch],
        )
        ids = [[run.run_id] for run in batch]
        for table in ("run_transitions", "tool_calls", "permission_decisions"):
            cursor.executemany(f"DELETE FROM {table} WHERE run_id = {m}", ids)
        transitions = [
            [run.run_id, name, count] for run in batch for name, count in run.transitions.items()
        ]
        if transitions:
            cursor.executemany(
                f"INSERT INTO run_transitions (run_id, name, count) VALUES ({m}, {m}, {m})",
                transitions,
            )
        calls = [
            [run.run_id, call.call_id, call.tool, call.path, call.outcome]
            for run in batch
            for call in run.tool_calls
        ]
        if calls:
            cursor.executemany(
                "INSERT INTO tool_calls (run_id, call_id, tool, path, outcome) "
                f"VALUES ({m}, {m}, {m}, {m}, {m})",
                calls,
            )
        decisions = [
            [run.run_id, position, d.call_id, d.tool, d.behavior, d.source, d.rule, d.rule_source]
            for run in batch
            for position, d in enumerate(run.permissions)
        ]
        if decisions:
            cursor.executemany(
                "INSERT INTO permission_decisions (run_id, position, call_id, tool, behavior, "
                f"source, rule, rule_source) VALUES ({m}, {m}, {m}, {m}, {m}, {m}, {m}, {m})",
                decisions,
            )


def _stored(row: Sequence[Any]) -> StoredRun:
    return StoredRun(**dict(zip(RUN_FIELDS, row, strict=True)))


def _batches(runs: Iterable[RunSummary], size: int) -> Iterator[list[RunSummary]]:
    batch: list[RunSummary] = []
    for run in runs:
        batch.append(run)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch
