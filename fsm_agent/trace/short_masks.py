"""The records before a divergence whose redaction may have changed a length (DESIGN §8).

A mask keeps the length of what it replaced (:func:`fsm_agent.trace.redact.mask`), except
where that was shorter than :data:`~fsm_agent.trace.redact.REDACTED`: a short secret, or a
number under a credential's name. There the trace reads ``[REDACTED]`` with no ``*`` after it,
and a replayed core measures text longer than the recording one did (a tool result's budget,
a token estimate) and may decide otherwise. When a replay diverges, the lines up to the
divergence are searched again for such a mask, so that the report can say so; replay itself
pays nothing for it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import IO, Final

import orjson

from fsm_agent.errors import TraceDivergence, TraceFormatError
from fsm_agent.trace import records
from fsm_agent.trace.records import TraceRecord

_SHORT_MASK: Final = re.compile(rb"\[REDACTED\](?!\*)")
"""A mask that may stand for something shorter: not padded."""


def noted(error: TraceDivergence, lines: Iterable[tuple[int, bytes]]) -> TraceDivergence:
    """``error`` naming the records up to it that hold a short mask, read from the trace's
    ``(number, content)`` lines (its header included); ``error`` itself when there are none."""
    seqs: list[int] = []
    for number, content in lines:
        if error.line is not None and number > error.line:
            break
        if number > 1 and _SHORT_MASK.search(content) is not None:
            seqs += (seq for seq in _masked_records(content, number) if seq < error.seq)
    if not seqs:
        return error
    return error.replace(redacted_before=seqs)


def _masked_records(content: bytes, number: int) -> list[int]:
    """The seqs of the records a line holding a short mask stands for that hold one (an
    event line carries the transitions and effects made of its event); none for a line that
    cannot be read, which replay reported already if it came before the divergence."""
    try:
        data = orjson.loads(content)
        if type(data) is not dict:
            return []
        if data.get("record") == "step":
            found = records.expand_step(data, number, None)
        else:
            carried = records.carried_step(data)
            found = [records.event_alone(data)]
            if carried is not None:
                found += records.expand_step(carried, number, None)
    except (orjson.JSONDecodeError, TraceFormatError):
        return []
    return [
        record["seq"]
        for record in found
        if type(record.get("seq")) is int and _SHORT_MASK.search(orjson.dumps(record))
    ]


def file_lines(file: IO[bytes]) -> Iterable[tuple[int, bytes]]:
    """A trace file's lines from its start (none when it cannot be read again: a pipe)."""
    try:
        file.seek(0)
    except (OSError, ValueError):
        return
    yield from enumerate(file, start=1)


def record_lines(records: Iterable[TraceRecord]) -> Iterable[tuple[int, bytes]]:
    """The lines of a trace read already (``Trace.records``), rendered again."""
    for record in records:
        yield record.line, orjson.dumps(record.data)
