"""What ``fsm-agent runs`` can ask the store: a :class:`RunQuery`, turned into SQL.

The SQL is the same for every backend but for the parameter marker (``?`` for SQLite, ``%s``
for psycopg), so both answer a query the same way (issue 13: same traces, same answers).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import attrs

from fsm_agent.errors import ConfigError
from fsm_agent.store.summary import StoredRun


@attrs.frozen(kw_only=True)
class TransitionCount:
    """A filter on how often a run took one transition.

    Attributes:
        name: the transition name (``reactive_compact_retry``...).
        at_least: the smallest count that matches.
    """

    name: str
    at_least: int = 1

    @classmethod
    def parse(cls, text: str) -> TransitionCount:
        """Read ``NAME`` or ``NAME:MIN_COUNT``.

        Raises:
            ConfigError: the name is empty or the count is not a whole number >= 1.
        """
        name, _, count = text.partition(":")
        if not name:
            raise ConfigError(f"--transition {text!r}: give a transition name (NAME[:MIN])")
        if not count:
            return cls(name=name)
        if not count.isdigit() or int(count) < 1:
            raise ConfigError(f"--transition {text!r}: MIN must be a whole number >= 1")
        return cls(name=name, at_least=int(count))


@attrs.frozen(kw_only=True)
class RunQuery:
    """Which runs to list; every field left at its default matches every run.

    Attributes:
        terminal: the terminal reason the runs ended with.
        transitions: transitions each run took at least so many times (all must hold).
        tool: a tool the run called.
        denied: only runs in which a tool call was denied.
        since: only runs started at or after this time (UTC when naive).
        model: the model of the runs.
        limit: at most this many runs, newest first.
    """

    terminal: str | None = None
    transitions: tuple[TransitionCount, ...] = ()
    tool: str | None = None
    denied: bool = False
    since: dt.datetime | None = None
    model: str | None = None
    limit: int | None = None


def parse_since(text: str) -> dt.datetime:
    """Read ``--since``: an ISO date or date-time (UTC unless it says otherwise).

    Raises:
        ConfigError: the text is not an ISO 8601 date or date-time.
    """
    try:
        moment = dt.datetime.fromisoformat(text)
    except ValueError:
        raise ConfigError(
            f"--since {text!r}: expected an ISO date or date-time, e.g. 2026-11-30 or "
            "2026-11-30T12:00"
        ) from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=dt.UTC)


def select_runs(query: RunQuery, marker: str) -> tuple[str, list[Any]]:
    """The SQL selecting the run rows ``query`` matches, and its parameters.

    Args:
        query: the filters.
        marker: the backend's parameter marker (``?`` or ``%s``).
    """
    where: list[str] = []
    params: list[Any] = []
    if query.terminal is not None:
        where.append(f"r.terminal = {marker}")
        params.append(query.terminal)
    if query.model is not None:
        where.append(f"r.model = {marker}")
        params.append(query.model)
    if query.since is not None:
        # Start times are stored as ISO text in UTC, so text order is time order.
        where.append(f"r.started >= {marker}")
        params.append(query.since.astimezone(dt.UTC).isoformat())
    for wanted in query.transitions:
        where.append(
            "EXISTS (SELECT 1 FROM run_transitions t WHERE t.run_id = r.run_id "
            f"AND t.name = {marker} AND t.count >= {marker})"
        )
        params.extend([wanted.name, wanted.at_least])
    if query.tool is not None:
        where.append(
            f"EXISTS (SELECT 1 FROM tool_calls c WHERE c.run_id = r.run_id AND c.tool = {marker})"
        )
        params.append(query.tool)
    if query.denied:
        where.append(
            "(EXISTS (SELECT 1 FROM tool_calls c WHERE c.run_id = r.run_id "
            "AND c.outcome = 'denied') OR EXISTS (SELECT 1 FROM permission_decisions p "
            "WHERE p.run_id = r.run_id AND p.behavior = 'deny'))"
        )
    sql = f"SELECT {RUN_COLUMNS} FROM runs r"
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += " ORDER BY r.started DESC, r.run_id"
    if query.limit is not None:
        sql += f" LIMIT {marker}"
        params.append(query.limit)
    return sql, params


RUN_FIELDS = tuple(field.name for field in attrs.fields(StoredRun))
"""The columns of the ``runs`` table, in the order rows are written and read."""

RUN_COLUMNS = ", ".join(f"r.{name}" for name in RUN_FIELDS)
