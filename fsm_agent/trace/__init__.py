"""Traces: JSONL records of a run (a line per feed, on file before its effects run), reading
with clear errors, replay, fork, resume.

See DESIGN §5. Modules: ``records`` (record shapes), ``redact``, ``writer``, ``reader``,
``replay`` (replay, fork, resume, diff) and ``timeline`` (text and HTML views).

The names below are loaded on first use, so a program that writes traces does not pay for
replay and the timelines. ``fsm_agent.trace.replay`` is the module; the function is
``fsm_agent.replay`` (or ``fsm_agent.trace.replay.replay``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fsm_agent.lazy_exports import lazy_exports

_PUBLIC = {
    "SCHEMA_VERSION": "fsm_agent.trace.records",
    "TraceHeader": "fsm_agent.trace.records",
    "TraceRecord": "fsm_agent.trace.records",
    "Trace": "fsm_agent.trace.reader",
    "TraceReader": "fsm_agent.trace.reader",
    "iter_records": "fsm_agent.trace.reader",
    "read_header": "fsm_agent.trace.reader",
    "read_trace": "fsm_agent.trace.reader",
    "register_upgrade": "fsm_agent.trace.reader",
    "Divergence": "fsm_agent.trace.replay",
    "ForkPoint": "fsm_agent.trace.replay",
    "InFlight": "fsm_agent.trace.replay",
    "ReplayResult": "fsm_agent.trace.replay",
    "ResumePoint": "fsm_agent.trace.replay",
    "diff_traces": "fsm_agent.trace.replay",
    "fork": "fsm_agent.trace.replay",
    "resume": "fsm_agent.trace.replay",
    "render_timeline": "fsm_agent.trace.timeline",
    "render_html": "fsm_agent.trace.timeline_page",
    "TraceWriter": "fsm_agent.trace.writer",
    "TracingCore": "fsm_agent.trace.writer",
}

__all__ = [
    "SCHEMA_VERSION",
    "Divergence",
    "ForkPoint",
    "InFlight",
    "ReplayResult",
    "ResumePoint",
    "Trace",
    "TraceHeader",
    "TraceReader",
    "TraceRecord",
    "TraceWriter",
    "TracingCore",
    "diff_traces",
    "fork",
    "iter_records",
    "read_header",
    "read_trace",
    "register_upgrade",
    "render_html",
    "render_timeline",
    "resume",
]

if TYPE_CHECKING:
    from fsm_agent.trace.reader import (
        Trace,
        TraceReader,
        iter_records,
        read_header,
        read_trace,
        register_upgrade,
    )
    from fsm_agent.trace.records import SCHEMA_VERSION, TraceHeader, TraceRecord
    from fsm_agent.trace.replay import (
        Divergence,
        ForkPoint,
        InFlight,
        ReplayResult,
        ResumePoint,
        diff_traces,
        fork,
        resume,
    )
    from fsm_agent.trace.timeline import render_timeline
    from fsm_agent.trace.timeline_page import render_html
    from fsm_agent.trace.writer import TraceWriter, TracingCore


__getattr__, __dir__ = lazy_exports(__name__, _PUBLIC, globals())
