"""Spans of a live run: each fed event and the step it produced, as trace records (issue 13).

The records are built by the same functions the trace writer uses
(:func:`fsm_agent.trace.records.event_fields`, :func:`~fsm_agent.trace.records.transition_fields`,
:func:`~fsm_agent.trace.records.effect_fields`, :func:`~fsm_agent.trace.records.end_fields`),
so the spans say what the trace says, whether or not the run writes a trace. Records the spans
never read (stream deltas, most of a run's events; events and effects that carry whole
transcripts) are not built at all.

Telemetry must never break a run: a failure here (a bug, an exporter that raises) is logged
once and the run goes on without spans.
"""

from __future__ import annotations

import contextvars
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry.trace import Tracer

from fsm_agent.core.events import Event, ModelStreamEvent
from fsm_agent.core.messages import Usage
from fsm_agent.core.step import Step
from fsm_agent.telemetry.spans import EFFECT_TYPES, EVENT_TYPES, STREAM_TYPES, RunSpans
from fsm_agent.trace import records
from fsm_agent.trace.redact import Redactor

LOGGER = logging.getLogger("fsm_agent.telemetry")
"""Telemetry failures are reported here (stdlib logging), never raised into a run."""


class RunTelemetry:
    """The spans of one live run.

    Args:
        tracer: where the spans go.
        meta: the run's header metadata (run id, model, price, lineage).
        secrets: strings no span may hold (the agent's secrets, as its trace writer is given).
        clock: nanoseconds since the epoch (``time.time_ns``), when each record happened.
    """

    def __init__(
        self,
        tracer: Tracer,
        *,
        meta: Mapping[str, Any],
        secrets: Iterable[str] = (),
        clock: Callable[[], int] = time.time_ns,
    ) -> None:
        self._clock = clock
        self._spans: RunSpans | None = None
        try:
            self._spans = RunSpans(
                tracer,
                header={"record": "header", "meta": meta},
                at_ns=clock(),
                redactor=Redactor(secrets),
            )
        except Exception as exc:  # the run must not fail because its telemetry did
            _report(exc)

    def observe(self, event: Event, step: Step) -> None:
        """Take a fed event and the step the core returned for it."""
        spans = self._spans
        if spans is None:
            return
        # Records the spans do not read are not built: stream deltas (most of a run's events)
        # and events or effects that carry whole transcripts. Every transition is read.
        name = type(event).__name__
        wanted = name in EVENT_TYPES and (
            type(event) is not ModelStreamEvent or event.event.get("type") in STREAM_TYPES
        )
        effects = [e for e in step.effects if type(e).__name__ in EFFECT_TYPES]
        if not wanted and not step.transitions and not effects:
            return

        def feed() -> None:
            now = self._clock()
            if wanted:
                spans.record(records.event_fields(event), now)
            for transition in step.transitions:
                spans.record(records.transition_fields(transition), now)
            for effect in effects:
                spans.record(records.effect_fields(effect), now)

        self._guarded(feed)

    def task_context(self, call_id: str) -> contextvars.Context | None:
        """A copy of the current context in which the span of tool call ``call_id`` is the
        current OpenTelemetry span, for the tasks that perform the call (so a child agent it
        starts, or the application's own instrumentation, nests under it); None without one."""
        spans = self._spans
        found = spans.call_context(call_id) if spans is not None else None
        if found is None:
            return None
        copied = contextvars.copy_context()
        copied.run(otel_context.attach, found)
        return copied

    def finish(self, terminal: str | None, usage: Usage, *, fault: str | None = None) -> None:
        """End the run's spans (once; later calls do nothing)."""
        spans = self._spans
        if spans is None or spans.ended:
            return
        self._guarded(
            lambda: spans.record(records.end_fields(terminal, usage, fault=fault), self._clock())
        )

    def _guarded(self, work: Callable[[], None]) -> None:
        try:
            work()
        except Exception as exc:  # the run must not fail because its telemetry did
            self._spans = None
            _report(exc)


def _report(exc: Exception) -> None:
    LOGGER.warning(
        "telemetry is off for the rest of this run (%s: %s); its trace is unaffected",
        type(exc).__name__,
        exc,
    )
