"""Traces: write-ahead JSONL records of a run, reading with clear errors, replay, fork, resume.

See DESIGN §5. Modules: ``records`` (record shapes), ``redact``, ``writer``, ``reader``,
``replay`` (replay, fork, resume, diff) and ``timeline`` (text and HTML views).
"""

from __future__ import annotations

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
    replay,
    resume,
)
from fsm_agent.trace.timeline import render_timeline
from fsm_agent.trace.timeline_page import render_html
from fsm_agent.trace.writer import TraceWriter, TracingCore

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
    "replay",
    "resume",
]
