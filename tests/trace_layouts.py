"""Traces laid out as older schemas wrote them, for the tests that prove those still read,
replay and resume (schema 1: a line per record; schema 2: events alone, ``step`` lines).

Both are made from the records of a current trace, so they stay in step with the tables.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson

from fsm_agent.trace.records import SCHEMA_VERSION, carried_step, event_alone, expand_step


def expand_line(data: dict[str, Any], number: int) -> list[dict[str, Any]]:
    """The records one parsed line stands for: a ``step`` line's, or a schema 3 event line's
    event and the transitions and effects it carries, each on its own."""
    if data.get("record") == "step":
        return expand_step(data, number, None)
    carried = carried_step(data) if data.get("record") == "event" else None
    if carried is None:
        return [data]
    return [event_alone(data), *expand_step(carried, number, None)]


def dump_lines(path: Path, lines: Iterable[dict[str, Any]]) -> Path:
    """Write parsed lines to ``path`` as the writer serializes them (sorted keys)."""
    path.write_bytes(b"".join(orjson.dumps(r, option=orjson.OPT_SORT_KEYS) + b"\n" for r in lines))
    return path


def _with_schema(records: list[dict[str, Any]], schema: int) -> list[dict[str, Any]]:
    """The records with a current-schema header saying ``schema`` (any other is kept)."""
    header, *rest = records
    return (
        [{**header, "schema": schema}, *rest] if header.get("schema") == SCHEMA_VERSION else records
    )


def write_schema1(path: Path, records: list[dict[str, Any]]) -> Path:
    """Write record dicts as a schema 1 trace: every record on its own line, and a header of
    the current schema says schema 1 (any other is kept)."""
    return dump_lines(path, _with_schema(records, 1))


def write_schema2(path: Path, records: list[dict[str, Any]]) -> Path:
    """Write record dicts as a schema 2 trace, as the schema 2 writer laid them out: each
    event on its own line, the transitions and effects after it on one ``step`` line; a
    header of the current schema says schema 2 (any other is kept)."""
    lines: list[dict[str, Any]] = []
    for record in _with_schema(records, 2):
        kind = record.get("record")
        last = lines[-1] if lines else {}
        if kind not in ("transition", "effect"):
            lines.append(dict(record))
            continue
        if last.get("record") != "step" or (kind == "transition" and last["effects"]):
            last = {"record": "step", "seq": record["seq"], "transitions": [], "effects": []}
            lines.append(last)
        if kind == "transition":
            last["transitions"].append(
                {k: v for k, v in record.items() if k not in ("record", "seq")}
            )
        else:
            last["effects"].append(record["effect"])
    return dump_lines(path, lines)
