"""One run's OpenTelemetry spans, built from its trace records (issue 13).

The spans are derived from the records of the trace (the dicts :mod:`fsm_agent.trace.records`
builds, the same ones a JSONL trace holds) and from nothing else, so what a collector shows
cannot drift from what the trace says: a live run feeds its records here as they happen
(:mod:`fsm_agent.telemetry.live`), and a recorded trace can be exported later by reading its
lines back (:mod:`fsm_agent.telemetry.export`).

The span tree::

    invoke_agent fsm_agent               one per run (kind INTERNAL)
      fsm_agent.iteration                one per loop iteration (iteration_started)
        chat <model>                     one per model request attempt (CallModel; CLIENT)
        execute_tool <tool>              one per tool call, from queued to yielded

Model-call and tool spans follow the OpenTelemetry GenAI semantic conventions (span names,
``gen_ai.*`` attributes); what the conventions do not cover is under ``fsm_agent.*``. Every
transition becomes a span event named after it: loop transitions on the iteration span (on the
run span outside an iteration), tool-call transitions on the call's span.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer

from fsm_agent.core.pricing import usage_cost
from fsm_agent.trace.redact import KEY_RULES_ONLY, Redactor

# GenAI semantic conventions (attribute names as the conventions spell them).
OPERATION: Final = "gen_ai.operation.name"
PROVIDER: Final = "gen_ai.provider.name"
SYSTEM: Final = "gen_ai.system"  # the provider's name before gen_ai.provider.name; kept for
# collectors and dashboards that still read it
AGENT_NAME: Final = "gen_ai.agent.name"
REQUEST_MODEL: Final = "gen_ai.request.model"
REQUEST_MAX_TOKENS: Final = "gen_ai.request.max_tokens"
RESPONSE_MODEL: Final = "gen_ai.response.model"
RESPONSE_ID: Final = "gen_ai.response.id"
FINISH_REASONS: Final = "gen_ai.response.finish_reasons"
INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
CACHE_READ_TOKENS: Final = "gen_ai.usage.cache_read.input_tokens"
CACHE_WRITE_TOKENS: Final = "gen_ai.usage.cache_creation.input_tokens"
TOOL_NAME: Final = "gen_ai.tool.name"
TOOL_CALL_ID: Final = "gen_ai.tool.call.id"
TOOL_TYPE: Final = "gen_ai.tool.type"
ERROR_TYPE: Final = "error.type"

# Ours.
RUN_ID: Final = "fsm_agent.run_id"
PARENT_RUN: Final = "fsm_agent.parent_run"
TERMINAL: Final = "fsm_agent.terminal"
FAULT: Final = "fsm_agent.fault"
COST: Final = "fsm_agent.cost_usd"
ITERATION: Final = "fsm_agent.iteration"
CONTINUE_REASON: Final = "fsm_agent.continue_reason"
REQUEST_ID: Final = "fsm_agent.request_id"
ATTEMPT: Final = "fsm_agent.attempt"
TOOL_OUTCOME: Final = "fsm_agent.tool.outcome"
TOOL_IS_ERROR: Final = "fsm_agent.tool.is_error"
SOURCE: Final = "fsm_agent.source"
DEST: Final = "fsm_agent.dest"

PROVIDER_NAME: Final = "anthropic"
"""Every model this library drives speaks the Anthropic Messages API."""
RUN_SPAN: Final = "invoke_agent fsm_agent"
ITERATION_SPAN: Final = "fsm_agent.iteration"

STREAM_TYPES: Final = frozenset({"message_start", "message_delta", "content_block_start"})
"""The stream events the spans read (response id and model, usage, stop reason, tool names);
a live run skips building records for the others, which are most of a trace."""
EVENT_TYPES: Final = frozenset(
    {
        "ModelStreamEvent",
        "ModelStreamClosed",
        "ModelStreamFailed",
        "PermissionDecided",
        "ToolCallFinished",
    }
)
"""The events the spans read; a live run builds no record for the others (some carry whole
transcripts). Transitions are all read."""
EFFECT_TYPES: Final = frozenset({"CallModel", "RunToolStep", "AskPermission"})
"""The effects the spans read; likewise."""

_USAGE_ATTRIBUTES: Final = (
    ("input_tokens", INPUT_TOKENS),
    ("output_tokens", OUTPUT_TOKENS),
    ("cache_read_input_tokens", CACHE_READ_TOKENS),
    ("cache_creation_input_tokens", CACHE_WRITE_TOKENS),
)
_FAILED_TERMINALS: Final = frozenset(
    {"model_error", "prompt_too_long", "image_error", "blocking_limit"}
)
"""Terminal reasons that mean the run could not get an answer: the run span's status is ERROR."""


class RunSpans:
    """Turns one run's trace records, in trace order, into spans.

    Args:
        tracer: where the spans go.
        header: the trace's header record (only ``meta`` and ``config.model`` are read).
        at_ns: the run's start (nanoseconds since the epoch).
        parent: the context the run span is a child of (default: the current one, so a run
            started inside an application's span nests under it).
        redactor: what every record is redacted with before it is read, as the trace writer
            redacts it (DESIGN §8): a live run's records come straight from its core, so a
            model error, a fault or a tool name quoting a secret would otherwise reach the
            collector in clear. Default: the key rules and API-key-shaped text only (a
            recorded trace was redacted when it was written).
    """

    def __init__(
        self,
        tracer: Tracer,
        *,
        header: Mapping[str, Any],
        at_ns: int,
        parent: otel_context.Context | None = None,
        redactor: Redactor = KEY_RULES_ONLY,
    ) -> None:
        self._tracer = tracer
        self._redactor = redactor
        header = redactor.value(header)
        meta = header.get("meta") or {}
        self._price = meta.get("price")
        model = str(meta.get("model") or (header.get("config") or {}).get("model") or "")
        attributes: dict[str, Any] = {
            OPERATION: "invoke_agent",
            PROVIDER: PROVIDER_NAME,
            SYSTEM: PROVIDER_NAME,
            AGENT_NAME: "fsm_agent",
            REQUEST_MODEL: model,
        }
        if meta.get("run_id"):
            attributes[RUN_ID] = str(meta["run_id"])
        lineage = meta.get("parent")  # a fork or resume names the run it continues
        if isinstance(lineage, Mapping) and lineage.get("run_id"):
            attributes[PARENT_RUN] = str(lineage["run_id"])
        self._run = tracer.start_span(
            RUN_SPAN,
            context=parent,
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            start_time=at_ns,
        )
        self._run_context = trace.set_span_in_context(self._run, parent)
        self._iteration: Span | None = None
        self._iteration_context = self._run_context
        self._iterations = 0
        self._models: dict[str, Span] = {}  # request id -> the span of its current attempt
        self._tools: dict[str, Span] = {}  # call id -> its span, until yielded
        self._tool_names: dict[str, str] = {}  # call id -> tool name, from tool_use blocks
        self._asked: dict[str, str] = {}  # AskPermission effect id -> call id
        self.ended = False
        """Whether the ``end`` record has been seen (later records are ignored)."""

    def call_context(self, call_id: str) -> otel_context.Context | None:
        """The context whose current span is the open span of tool call ``call_id`` (a child
        agent the call starts nests its run span under it), or None."""
        span = self._tools.get(call_id)
        return None if span is None else trace.set_span_in_context(span)

    # --- records -------------------------------------------------------------------------

    def record(self, fields: Mapping[str, Any], at_ns: int) -> None:
        """Take one trace record (an ``event``, ``transition``, ``effect`` or ``end``)."""
        if self.ended:
            return
        fields = self._redactor.value(fields)
        kind = fields.get("record")
        if kind == "transition":
            self._transition(fields, at_ns)
        elif kind == "effect":
            self._effect(fields["effect"], at_ns)
        elif kind == "event":
            self._event(fields["event"], at_ns)
        elif kind == "end":
            self._end(fields, at_ns)

    def _transition(self, fields: Mapping[str, Any], at_ns: int) -> None:
        name, dest = str(fields["name"]), str(fields["dest"])
        attributes = {SOURCE: str(fields["source"]), DEST: dest}
        if fields.get("machine") == "tool":
            call_id = str(fields.get("call_id") or "")
            span = self._tools.get(call_id) or self._start_tool(call_id, at_ns)
            span.add_event(name, attributes, timestamp=at_ns)
            if dest == "yielded":
                # The state a call leaves for ``yielded`` is how it ended (DESIGN §3).
                self._end_tool(call_id, outcome=str(fields["source"]), at_ns=at_ns)
            return
        if name == "iteration_started":
            self._end_iteration(at_ns)
            self._iterations += 1
            self._iteration = self._tracer.start_span(
                ITERATION_SPAN,
                context=self._run_context,
                kind=SpanKind.INTERNAL,
                attributes={ITERATION: self._iterations},
                start_time=at_ns,
            )
            self._iteration_context = trace.set_span_in_context(self._iteration)
        (self._iteration or self._run).add_event(name, attributes, timestamp=at_ns)
        if dest == "iter_init" and self._iteration is not None:
            # A continue transition (DESIGN §2) closes the iteration it ends.
            self._iteration.set_attribute(CONTINUE_REASON, name)
            self._end_iteration(at_ns)

    def _effect(self, effect: Mapping[str, Any], at_ns: int) -> None:
        kind = effect.get("type")
        if kind == "CallModel":
            self._start_model(effect, at_ns)
        elif kind == "RunToolStep":
            self._name_tool(str(effect["call_id"]), str(effect["tool_name"]))
        elif kind == "AskPermission":
            self._asked[str(effect["effect_id"])] = str(effect["call_id"])

    def _event(self, event: Mapping[str, Any], at_ns: int) -> None:
        kind = event.get("type")
        if kind == "ModelStreamEvent":
            self._stream(str(event["request_id"]), event["event"])
        elif kind == "ModelStreamClosed":
            self._end_model(str(event["request_id"]), at_ns)
        elif kind == "ModelStreamFailed":
            self._end_model(str(event["request_id"]), at_ns, failure=event)
        elif kind == "PermissionDecided":
            span = self._tools.get(self._asked.get(str(event["effect_id"]), ""))
            if span is not None:
                span.add_event(
                    "permission_decided",
                    {
                        f"fsm_agent.permission.{key}": str(event.get(key) or "")
                        for key in ("behavior", "source", "rule", "rule_source")
                    },
                    timestamp=at_ns,
                )
        elif kind == "ToolCallFinished" and event.get("is_error"):
            span = self._tools.get(str(event["call_id"]))
            if span is not None:
                span.set_attribute(TOOL_IS_ERROR, True)

    def _end(self, fields: Mapping[str, Any], at_ns: int) -> None:
        """The ``end`` record: close whatever is open, then the run."""
        self.ended = True
        for call_id in list(self._tools):
            self._end_tool(call_id, outcome="", at_ns=at_ns)
        for request_id in list(self._models):
            self._end_model(request_id, at_ns, unfinished=True)
        self._end_iteration(at_ns)
        terminal = str(fields.get("terminal") or "")
        usage = fields.get("usage") or {}
        self._run.set_attribute(TERMINAL, terminal)
        _set_usage(self._run, usage)
        cost = usage_cost(self._price, usage)
        if cost is not None:
            self._run.set_attribute(COST, cost)
        fault = fields.get("fault")
        if fault:
            self._run.set_attribute(FAULT, str(fault))
            self._run.set_attribute(ERROR_TYPE, str(fault).split(":", 1)[0])
            self._run.set_status(Status(StatusCode.ERROR, str(fault)))
        elif terminal in _FAILED_TERMINALS:
            self._run.set_attribute(ERROR_TYPE, terminal)
            self._run.set_status(Status(StatusCode.ERROR, terminal))
        self._run.end(end_time=at_ns)

    # --- model calls ---------------------------------------------------------------------

    def _start_model(self, effect: Mapping[str, Any], at_ns: int) -> None:
        request_id = str(effect["request_id"])
        # A new attempt of a request whose failure was not recorded closes the old span.
        self._end_model(request_id, at_ns, unfinished=True)
        model = str(effect.get("model") or "")
        self._models[request_id] = self._tracer.start_span(
            f"chat {model}",
            context=self._iteration_context,
            kind=SpanKind.CLIENT,
            attributes={
                OPERATION: "chat",
                PROVIDER: PROVIDER_NAME,
                SYSTEM: PROVIDER_NAME,
                REQUEST_MODEL: model,
                REQUEST_MAX_TOKENS: int(effect.get("max_output_tokens") or 0),
                REQUEST_ID: request_id,
                ATTEMPT: int(effect.get("attempt") or 1),
            },
            start_time=at_ns,
        )

    def _stream(self, request_id: str, data: Mapping[str, Any]) -> None:
        kind = data.get("type")
        if kind == "content_block_start":
            block = data.get("content_block") or {}
            if block.get("type") == "tool_use":
                self._name_tool(str(block.get("id")), str(block.get("name")))
            return
        span = self._models.get(request_id)
        if span is None:
            return
        if kind == "message_start":
            message = data.get("message") or {}
            if message.get("id"):
                span.set_attribute(RESPONSE_ID, str(message["id"]))
            if message.get("model"):
                span.set_attribute(RESPONSE_MODEL, str(message["model"]))
            _set_usage(span, message.get("usage") or {})
        elif kind == "message_delta":
            stop_reason = (data.get("delta") or {}).get("stop_reason")
            if stop_reason:
                span.set_attribute(FINISH_REASONS, (str(stop_reason),))
            # message_delta usage is cumulative (NOTES.md): it replaces, never adds.
            _set_usage(span, data.get("usage") or {})

    def _end_model(
        self,
        request_id: str,
        at_ns: int,
        *,
        failure: Mapping[str, Any] | None = None,
        unfinished: bool = False,
    ) -> None:
        span = self._models.pop(request_id, None)
        if span is None:
            return
        if failure is not None:
            kind = str(failure.get("kind") or "error")
            span.set_attribute(ERROR_TYPE, kind)
            span.set_status(Status(StatusCode.ERROR, str(failure.get("message") or kind)))
        elif unfinished:
            span.set_attribute(ERROR_TYPE, "unfinished")
            span.set_status(Status(StatusCode.ERROR, "the response never ended"))
        span.end(end_time=at_ns)

    # --- tool calls ----------------------------------------------------------------------

    def _start_tool(self, call_id: str, at_ns: int) -> Span:
        name = self._tool_names.get(call_id, "")
        span = self._tracer.start_span(
            f"execute_tool {name}" if name else "execute_tool",
            context=self._iteration_context,
            kind=SpanKind.INTERNAL,
            attributes={
                OPERATION: "execute_tool",
                TOOL_CALL_ID: call_id,
                TOOL_TYPE: "function",
                **({TOOL_NAME: name} if name else {}),
            },
            start_time=at_ns,
        )
        self._tools[call_id] = span
        return span

    def _name_tool(self, call_id: str, name: str) -> None:
        if call_id in self._tool_names:
            return
        self._tool_names[call_id] = name
        span = self._tools.get(call_id)
        if span is not None:  # queued before its name was seen
            span.update_name(f"execute_tool {name}")
            span.set_attribute(TOOL_NAME, name)

    def _end_tool(self, call_id: str, *, outcome: str, at_ns: int) -> None:
        span = self._tools.pop(call_id)
        span.set_attribute(TOOL_OUTCOME, outcome or "unfinished")
        if outcome == "errored" or not outcome:
            span.set_attribute(ERROR_TYPE, outcome or "unfinished")
            span.set_status(Status(StatusCode.ERROR, outcome or "unfinished"))
        span.end(end_time=at_ns)

    def _end_iteration(self, at_ns: int) -> None:
        if self._iteration is not None:
            self._iteration.end(end_time=at_ns)
            self._iteration = None
            self._iteration_context = self._run_context


def _set_usage(span: Span, usage: Mapping[str, Any]) -> None:
    for key, attribute in _USAGE_ATTRIBUTES:
        value = usage.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            span.set_attribute(attribute, value)
