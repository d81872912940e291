"""The run store for many writers on many machines: PostgreSQL through psycopg 3 (issue 13).

Needs the ``fsm_agent[postgres]`` extra. The schema is the one SQLite uses (``migrations/``);
migrations run under an advisory lock, so processes opening a new database at once apply each
migration exactly once.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from fsm_agent.credentials import url_passwords, without_passwords
from fsm_agent.errors import ConfigError
from fsm_agent.store.sql_store import Cursor, SqlRunStore, migrations

CONNECT_TIMEOUT_S = 10
"""Seconds a connection attempt may take when the URL sets no ``connect_timeout``."""
# An arbitrary constant naming the lock that serializes schema migrations.
_MIGRATION_LOCK = 0x0F5A_6E70


class PostgresRunStore(SqlRunStore):
    """A run store in a PostgreSQL database.

    Args:
        url: a libpq connection URL (``postgresql://user@host:port/dbname``).

    Raises:
        ConfigError: psycopg is not installed, or the server cannot be reached.
    """

    marker = "%s"

    def __init__(self, url: str) -> None:
        self.secrets = url_passwords(url)
        """The password of ``url``: an agent recording to this store keeps it out of its
        traces, spans and terminal output (DESIGN §8)."""
        try:
            import psycopg  # noqa: PLC0415 - an optional extra
        except ImportError:
            raise ConfigError(
                "a postgresql:// run store needs psycopg: pip install 'fsm_agent[postgres]'"
            ) from None
        self._errors: type[Exception] = psycopg.Error
        try:
            # A server that does not answer (a host gone quiet) must not hold the store
            # writer for minutes: bound the connection attempt unless the URL says otherwise.
            if "connect_timeout" in url:
                self._connection: Any = psycopg.connect(url, autocommit=True)
            else:
                self._connection = psycopg.connect(
                    url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S
                )
            self._migrate()
        except psycopg.Error as exc:
            shown = without_passwords(f"run store {url}: {exc}", url)
            raise ConfigError(shown) from None

    def _migrate(self) -> None:
        with self.transaction() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_MIGRATION_LOCK])
            cursor.execute("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER)")
            cursor.execute("SELECT version FROM schema_migrations")
            done = {row[0] for row in cursor.fetchall()}
            for version, script in migrations():
                if version not in done:
                    cursor.execute(script)
                    cursor.execute("INSERT INTO schema_migrations (version) VALUES (%s)", [version])

    @contextmanager
    def transaction(self) -> Iterator[Cursor]:
        """A cursor inside a transaction, committed on success and rolled back on error."""
        with self._connection.transaction(), self._connection.cursor() as cursor:
            yield cursor

    def close(self) -> None:
        """Close the connection."""
        self._connection.close()
