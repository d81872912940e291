"""Export a recorded trace's spans: the same spans the live run gave, read back from its file.

Replay never emits spans (it re-checks a run, it is not a run); exporting a recorded trace is
asked for explicitly, with :func:`export_trace` or ``fsm-agent replay --export-spans``. The
records go through the same :class:`~fsm_agent.telemetry.spans.RunSpans` as a live run's, and
a record's time is the run's start (``meta.started``) plus its ``elapsed_ms``: records without
one (stream events, transitions, effects) take the time of the last event before them.
"""

from __future__ import annotations

import datetime as dt
import os
from typing import IO, TYPE_CHECKING

from fsm_agent.telemetry.config import Telemetry, tracer_for
from fsm_agent.telemetry.spans import RunSpans
from fsm_agent.trace.reader import TraceReader
from fsm_agent.trace.records import ELAPSED

if TYPE_CHECKING:
    from opentelemetry.trace import Tracer


def export_trace(
    source: str | os.PathLike[str] | IO[bytes], *, telemetry: Telemetry | bool = True
) -> None:
    """Build the spans of a recorded run (a trace file, or a binary file holding one) and
    hand them to the tracer ``telemetry`` names.

    A run whose trace has no ``end`` record (it crashed) still gets its spans, closed at its
    last record.

    Raises:
        ConfigError: telemetry cannot work (see :func:`~fsm_agent.telemetry.config.tracer_for`).
        TraceError: the file is not a readable trace.
    """
    tracer = tracer_for(telemetry)
    if tracer is None:
        return
    build_trace_spans(source, tracer)


def build_trace_spans(source: str | os.PathLike[str] | IO[bytes], tracer: Tracer) -> None:
    """Build the spans of a recorded run with ``tracer`` (what :func:`export_trace` does once
    it has its tracer; the Temporal driver calls it with the worker agent's tracer).

    Raises:
        TraceError: the file is not a readable trace.
    """
    with TraceReader(source, allow_truncated=True, deep=False) as reader:
        header = reader.header.to_record()
        start_ns = _start_ns(str(header["meta"].get("started") or ""))
        at_ns = start_ns
        spans = RunSpans(tracer, header=header, at_ns=start_ns)
        last: dict[str, object] = {}
        for record in reader:
            elapsed = record.data.get(ELAPSED)
            if isinstance(elapsed, int | float):
                at_ns = max(at_ns, start_ns + int(elapsed * 1_000_000))
            spans.record(record.data, at_ns)
            last = record.data
    if not spans.ended:
        spans.record({"record": "end", "terminal": None, "usage": {}, **_unended(last)}, at_ns)


def _unended(last: dict[str, object]) -> dict[str, object]:
    """What the ``end`` of a trace that stops early says: that it stopped early."""
    return {"fault": f"the trace ends at seq {last.get('seq', 0)} without an end record"}


def _start_ns(started: str) -> int:
    """``meta.started`` in nanoseconds since the epoch (0 when it is missing or unreadable)."""
    try:
        moment = dt.datetime.fromisoformat(started)
    except ValueError:
        return 0
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return int(moment.timestamp() * 1_000_000_000)
