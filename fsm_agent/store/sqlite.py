"""The embedded run store: one SQLite file (stdlib ``sqlite3``), the default (issue 13)."""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from fsm_agent.errors import ConfigError
from fsm_agent.store.sql_store import Cursor, SqlRunStore, migrations


class SqliteRunStore(SqlRunStore):
    """A run store in one SQLite file; the schema is created or migrated on opening.

    Args:
        path: the database file (its folder is created), ``:memory:``, or a SQLite URI
            (``file:/path/runs.sqlite3?mode=ro``).

    Raises:
        ConfigError: the file cannot be opened or is not a run store database.
    """

    marker = "?"

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        try:
            uri = self.path.startswith("file:")
            if self.path != ":memory:" and not uri:
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            # Autocommit mode: transactions are opened explicitly in transaction(). Runs are
            # written from the store writer's thread (fsm_agent.store.background), so the
            # connection may be used from another thread than the one that opened it; the
            # lock keeps two threads' transactions apart.
            self._connection = sqlite3.connect(
                self.path, timeout=30, isolation_level=None, check_same_thread=False, uri=uri
            )
            self._writing = threading.RLock()
            self._connection.execute("PRAGMA foreign_keys = ON")
            self._migrate()
        except (OSError, sqlite3.Error) as exc:
            raise ConfigError(f"run store {self.path}: cannot open it: {exc}") from None

    def _migrate(self) -> None:
        with self.transaction() as cursor:
            cursor.execute("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER)")
            cursor.execute("SELECT version FROM schema_migrations")
            done = {row[0] for row in cursor.fetchall()}
            for version, script in migrations():
                if version in done:
                    continue
                for statement in script.split(";"):
                    if statement.strip():
                        cursor.execute(statement)
                cursor.execute("INSERT INTO schema_migrations (version) VALUES (?)", [version])

    @contextmanager
    def transaction(self) -> Iterator[Cursor]:
        """A cursor inside ``BEGIN IMMEDIATE`` (one writer at a time), committed on success."""
        with self._writing:
            cursor = self._connection.cursor()
            cursor.execute("BEGIN IMMEDIATE")
            try:
                yield cursor
            except BaseException:
                # SQLite rolls back by itself on some errors (SQLITE_FULL): a second ROLLBACK
                # would fail and hide the error that matters.
                if self._connection.in_transaction:
                    cursor.execute("ROLLBACK")
                raise
            cursor.execute("COMMIT")

    def close(self) -> None:
        """Close the database file."""
        self._connection.close()
