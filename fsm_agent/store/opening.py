"""Which run store to use: ``FSM_AGENT_STORE``, else one SQLite file beside the traces.

``FSM_AGENT_STORE`` holds a URL: ``postgresql://...`` (or ``postgres://``) for PostgreSQL,
``sqlite:///path/to/file`` or a plain path for SQLite (``sqlite:///path?mode=ro`` passes
SQLite's URI parameters, here: open it read-only). Without it, the store is
``index.sqlite3`` in the default trace folder (the user state folder, see
:mod:`fsm_agent.trace.location`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from fsm_agent.credentials import without_passwords
from fsm_agent.errors import ConfigError
from fsm_agent.trace.location import default_trace_folder

if TYPE_CHECKING:
    # An agent asks which store it records to when it is built, before any run needs one.
    from fsm_agent.store.sql_store import RunStore

STORE_ENV = "FSM_AGENT_STORE"
"""The environment variable naming the run store (a URL or a SQLite file path)."""

STORE_FILE_NAME = "index.sqlite3"


def default_store_url(environ: Mapping[str, str] | None = None) -> str:
    """The store runs are indexed in when none is given.

    Args:
        environ: the environment to read ``FSM_AGENT_STORE`` (and the trace folder) from.
    """
    env = os.environ if environ is None else environ
    configured = env.get(STORE_ENV)
    if configured:
        return configured
    return os.fspath(default_trace_folder(env) / STORE_FILE_NAME)


def open_store(url: str | os.PathLike[str] | None = None) -> RunStore:
    """Open (and create or migrate) the run store at ``url``; default: :func:`default_store_url`.

    Raises:
        ConfigError: the URL names an unknown kind of database, PostgreSQL is asked for without
            the ``fsm_agent[postgres]`` extra, or the database cannot be opened.
    """
    target = os.fspath(url) if url is not None else default_store_url()
    if target.startswith(("postgresql://", "postgres://")):
        from fsm_agent.store.postgres import PostgresRunStore  # noqa: PLC0415 - optional extra

        return PostgresRunStore(target)
    if target.startswith("sqlite://"):
        target = target.removeprefix("sqlite://")
        if "?" in target:
            # URI parameters go to SQLite as they are (``sqlite:///runs.sqlite3?mode=ro``).
            from fsm_agent.store.sqlite import SqliteRunStore  # noqa: PLC0415

            path, parameters = target.split("?", 1)
            return SqliteRunStore(f"file:{Path(path).expanduser()}?{parameters}")
    elif "://" in target:
        raise ConfigError(
            f"run store {without_passwords(target, target)!r}: unknown kind of database; "
            "use postgresql://..., sqlite:///FILE or a file path"
        )
    from fsm_agent.store.sqlite import SqliteRunStore  # noqa: PLC0415

    return SqliteRunStore(Path(target).expanduser())
