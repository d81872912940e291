"""A human-readable view of a trace: the timeline entries and the text timeline.

The entries (:func:`timeline_entries`) are phase changes with the transition that made them,
tool-call steps, permission decisions with who decided and why, hooks, compactions, model
requests with their token usage, and the terminal reason. Stream deltas are folded into one
line per model response. Each entry also carries what the HTML page
(:mod:`fsm_agent.trace.timeline_page`) groups and highlights by: its tool call, its time, the
full text it shortens, and whether it is a recovery, an error or a permission decision.
"""

from __future__ import annotations

from typing import Any, Final

import attrs
import orjson

from fsm_agent.core.tables import ContinueReason, Terminal
from fsm_agent.trace.reader import Trace

_WIDTH: Final = 100


@attrs.frozen(kw_only=True)
class TimelineEntry:
    """One line of a timeline.

    Attributes:
        seq: the record's seq (0 for header lines).
        category: ``phase``, ``tool``, ``permission``, ``hooks``, ``compact``, ``model``,
            ``event``, ``effect``, ``end`` or ``info``.
        text: what happened, in one line.
        name: the transition's name, or the event's or effect's type.
        call_id: the tool call the entry belongs to, if any.
        detail: the full text the line shortens (a tool's input or output, a message), if any.
        elapsed_ms: milliseconds since the run started, from the last timed event.
        tone: ``recovery``, ``error``, ``permission`` or ``denied`` for what a reader should
            notice, else empty.
    """

    seq: int
    category: str
    text: str
    name: str = ""
    call_id: str | None = None
    detail: str = ""
    elapsed_ms: float | None = None
    tone: str = ""


RECOVERIES: Final = frozenset(
    {reason.value for reason in ContinueReason} - {ContinueReason.NEXT_TURN.value}
) | frozenset({"request_retried", "max_tokens_reduced", "model_fallback", "autocompact_failed"})
"""Transitions a run takes to recover from something; highlighted in the timeline."""

ERROR_TERMINALS: Final = frozenset(terminal.value for terminal in Terminal) - {
    Terminal.COMPLETED.value
}
"""Terminal reasons other than ``completed``."""


def _short(value: Any, width: int = 80) -> str:
    text = value if isinstance(value, str) else orjson.dumps(value).decode()
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _pretty(value: Any) -> str:
    """A JSON value as indented text, for the expandable details of the HTML page."""
    return orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode()


def _usage_text(usage: dict[str, Any]) -> str:
    parts = [f"in {usage.get('input_tokens', 0)}", f"out {usage.get('output_tokens', 0)}"]
    if usage.get("cache_read_input_tokens"):
        parts.append(f"cache read {usage['cache_read_input_tokens']}")
    if usage.get("cache_creation_input_tokens"):
        parts.append(f"cache write {usage['cache_creation_input_tokens']}")
    return ", ".join(parts)


def _message_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        texts = [b.get("text", "") for b in content if isinstance(b, dict) and "text" in b]
        if texts:
            return " ".join(texts)
        kinds = [str(b.get("type")) for b in content if isinstance(b, dict)]
        return "[" + ", ".join(kinds) + "]"
    return str(message.get("text", message.get("subtype", "")))


def _citations(message: dict[str, Any]) -> list[dict[str, Any]]:
    """The citations on a message's text blocks, in order."""
    content = message.get("content")
    if not isinstance(content, list):
        return []
    return [
        citation
        for block in content
        if isinstance(block, dict)
        for citation in block.get("citations") or ()
        if isinstance(citation, dict)
    ]


def _citation_text(citation: dict[str, Any]) -> str:
    """One citation as a line: where it points (title and url, or a document and place)."""
    where = citation.get("url") or citation.get("document_title") or citation.get("type", "")
    title = citation.get("title")
    cited = citation.get("cited_text")
    text = f"{_short(title, 40)} <{where}>" if title else str(where)
    return f'{text}: "{_short(cited, 60)}"' if cited else text


class _Builder:
    """Walks the records once, keeping what later lines refer back to."""

    def __init__(self) -> None:
        self.entries: list[TimelineEntry] = []
        self.permission_calls: dict[str, str] = {}  # AskPermission effect_id → call_id
        self.streams: dict[str, dict[str, Any]] = {}
        self.counts = {"event": 0, "transition": 0, "effect": 0}
        self.terminal: str | None = None
        self.hook_calls: dict[str, str] = {}  # RunHooks effect_id → call_id
        # What the record being read says about every line it adds.
        self.name = ""
        self.call_id: str | None = None
        self.elapsed: float | None = None

    def add(self, seq: int, category: str, text: str, *, detail: str = "", tone: str = "") -> None:
        self.entries.append(
            TimelineEntry(
                seq=seq,
                category=category,
                text=text,
                name=self.name,
                call_id=self.call_id,
                detail=detail,
                elapsed_ms=self.elapsed,
                tone=tone,
            )
        )

    def _context(self, kind: str, data: dict[str, Any]) -> None:
        if isinstance(data.get("elapsed_ms"), int | float):
            self.elapsed = float(data["elapsed_ms"])
        inner = data.get(kind) if kind in {"event", "effect"} else data
        inner = inner if isinstance(inner, dict) else {}
        self.name = str(inner.get("name") or inner.get("type") or kind)
        call = inner.get("call_id")
        if call is None and kind == "event":
            effect_id = str(inner.get("effect_id", ""))
            call = self.permission_calls.get(effect_id) or self.hook_calls.get(effect_id)
        self.call_id = str(call) if call is not None else None

    def record(self, data: dict[str, Any]) -> None:
        kind = data["record"]
        seq = data["seq"]
        self._context(kind, data)
        if kind in self.counts:
            self.counts[kind] += 1
        if kind == "event":
            self.event(seq, data["event"])
        elif kind == "transition":
            self.transition(seq, data)
        elif kind == "effect":
            self.effect(seq, data["effect"])
        elif kind == "end":
            self.terminal = data.get("terminal")
            self.add(
                seq,
                "end",
                f"end: terminal {self.terminal or '(none)'}; usage "
                f"{_usage_text(data.get('usage') or {})}",
                tone="error" if self.terminal in ERROR_TERMINALS else "",
            )

    def transition(self, seq: int, data: dict[str, Any]) -> None:
        move = f"{data['source']} → {data['dest']}  [{data['name']}]"
        if data.get("machine") == "tool":
            tone = "error" if data["dest"] in {"errored", "rejected", "cancelled"} else ""
            if data["dest"] == "denied":
                tone = "denied"
            self.add(seq, "tool", f"tool {data.get('call_id')}: {move}", tone=tone)
        else:
            tone = "recovery" if data["name"] in RECOVERIES else ""
            if data["dest"] in ERROR_TERMINALS:
                tone = "error"
            self.add(seq, "phase", f"phase {move}", tone=tone)

    def event(self, seq: int, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "ModelStreamEvent":
            self.stream_event(event)
            return
        if kind == "TurnStarted":
            messages = event.get("messages") or []
            last = _message_text(messages[-1]) if messages else ""
            self.add(
                seq,
                "event",
                f"turn started ({len(messages)} messages): {_short(last)}",
                detail=last,
            )
        elif kind == "ModelStreamClosed":
            self.add(seq, "model", self.stream_summary(event.get("request_id", "")))
        elif kind == "ModelStreamFailed":
            status = f" {event['status']}" if event.get("status") is not None else ""
            self.add(
                seq,
                "model",
                f"model request {event.get('request_id')} failed: {event.get('kind')}{status}"
                f" {_short(event.get('message', ''), 60)}".rstrip(),
                detail=str(event.get("message", "")),
                tone="error",
            )
        elif kind == "ToolInputValidated":
            verdict = "valid" if event.get("ok") else f"invalid: {_short(event.get('error', ''))}"
            flags = [name for name in ("concurrency_safe", "read_only") if event.get(name)]
            extra = f" ({', '.join(flags)})" if flags else ""
            self.add(
                seq,
                "tool",
                f"tool {event.get('call_id')} input {verdict}{extra}",
                detail=str(event.get("error", "")),
                tone="" if event.get("ok") else "error",
            )
        elif kind == "ToolCallFinished":
            state = "failed" if event.get("is_error") else "finished"
            content = event.get("content", "")
            self.add(
                seq,
                "tool",
                f"tool {event.get('call_id')} {state}: {_short(content, 60)}",
                detail=content if isinstance(content, str) else _pretty(content),
                tone="error" if event.get("is_error") else "",
            )
        elif kind == "SubagentStarted":
            where = event.get("trace") or "(not traced)"
            self.add(
                seq,
                "tool",
                f"tool {event.get('call_id')} started subagent {event.get('agent')!r}: "
                f"run {event.get('run_id')}, trace {where}",
            )
        elif kind == "ToolProgressReported":
            self.add(
                seq, "tool", f"tool {event.get('call_id')} progress: {_short(event.get('text'))}"
            )
        elif kind == "PermissionDecided":
            call = self.permission_calls.get(event.get("effect_id", ""), "?")
            self.add(
                seq,
                "permission",
                f"permission for {call}: {_permission_reason(event)}",
                detail=str(event.get("message") or ""),
                tone="permission" if event.get("behavior") == "allow" else "denied",
            )
        elif kind == "HooksFinished":
            self.add(
                seq,
                "hooks",
                f"hooks {event.get('effect_id')} finished: "
                f"{self.hook_outcome(event.get('outcome') or {})}",
            )
        elif kind == "CompactionFinished":
            result = "ok" if event.get("ok") else f"failed: {_short(event.get('error', ''))}"
            count = len(event.get("messages") or [])
            self.add(
                seq,
                "compact",
                f"compaction {event.get('effect_id')} {result} ({count} messages)",
                tone="" if event.get("ok") else "error",
            )
        elif kind == "CollapseDrained":
            self.add(seq, "compact", f"collapse drained: {event.get('committed')} committed")
        elif kind == "CollapseStaged":
            result = "staged" if event.get("ok") else "failed"
            self.add(seq, "compact", f"collapse through {event.get('through_uuid')} {result}")
        elif kind == "ToolResultsPersisted":
            count = len(event.get("results") or [])
            self.add(seq, "compact", f"tool results saved to files: {count}")
        elif kind == "TokensCounted":
            counted = event.get("input_tokens")
            if counted is None:
                self.add(seq, "compact", f"token count failed: {event.get('error')}", tone="error")
            else:
                self.add(seq, "compact", f"the API counted {counted} input tokens")
        elif kind == "AttachmentsReady":
            count = len(event.get("messages") or [])
            self.add(seq, "event", f"attachments ready ({count} messages)")
        elif kind == "AbortRequested":
            self.add(seq, "event", f"abort requested ({event.get('reason')})", tone="error")
        else:
            self.add(seq, "event", f"{kind}")

    def hook_outcome(self, outcome: dict[str, Any]) -> str:
        parts = []
        if outcome.get("decision"):
            reason = outcome.get("decision_reason")
            parts.append(f"decision {outcome['decision']}" + (f" ({reason})" if reason else ""))
        if outcome.get("blocking_errors"):
            parts.append(f"{len(outcome['blocking_errors'])} blocking error(s)")
        if outcome.get("prevent_continuation"):
            parts.append(f"stop: {_short(outcome.get('stop_reason', ''), 40)}")
        return ", ".join(parts) or "no objection"

    def stream_event(self, event: dict[str, Any]) -> None:
        stream = self.streams.setdefault(
            event.get("request_id", ""), {"events": 0, "usage": {}, "stop_reason": None}
        )
        stream["events"] += 1
        payload = event.get("event") or {}
        kind = payload.get("type")
        if kind == "message_start":
            usage = (payload.get("message") or {}).get("usage") or {}
            stream["usage"].update(usage)
        elif kind == "message_delta":
            stream["usage"].update(payload.get("usage") or {})
            stop = (payload.get("delta") or {}).get("stop_reason")
            if stop:
                stream["stop_reason"] = stop

    def stream_summary(self, request_id: str) -> str:
        stream = self.streams.get(request_id, {"events": 0, "usage": {}, "stop_reason": None})
        return (
            f"model response {request_id}: {stream['events']} stream events, stop "
            f"{stream['stop_reason'] or '(none)'}, usage {_usage_text(stream['usage'])}"
        )

    def effect(self, seq: int, effect: dict[str, Any]) -> None:
        kind = effect.get("type")
        if kind == "CallModel":
            delay = f", after {effect['delay_ms']} ms" if effect.get("delay_ms") else ""
            self.add(
                seq,
                "model",
                f"call model {effect.get('model')} (request {effect.get('request_id')}, attempt "
                f"{effect.get('attempt', 1)}, max output {effect.get('max_output_tokens')}"
                f"{delay})",
            )
        elif kind == "RunToolStep":
            self.add(
                seq,
                "tool",
                f"run {effect.get('tool_name')} {effect.get('step')} for {effect.get('call_id')}"
                f": {_short(effect.get('input', {}), 60)}",
                detail=_pretty(effect.get("input", {})),
            )
        elif kind == "AskPermission":
            self.permission_calls[effect.get("effect_id", "")] = str(effect.get("call_id"))
            hook = ""
            if effect.get("hook_decision"):
                hook = f"; hook says {effect['hook_decision']}"
                if effect.get("hook_reason"):
                    hook += f" ({_short(effect['hook_reason'], 40)})"
            self.add(
                seq,
                "permission",
                f"ask permission for {effect.get('tool_name')} {effect.get('call_id')}{hook}",
            )
        elif kind == "RunHooks":
            if effect.get("call_id"):
                self.hook_calls[str(effect.get("effect_id", ""))] = str(effect["call_id"])
            target = f" for {effect['call_id']}" if effect.get("call_id") else ""
            self.add(seq, "hooks", f"run {effect.get('hook_event')} hooks{target}")
        elif kind == "Compact":
            trigger = f" ({effect['trigger']})" if effect.get("trigger") else ""
            self.add(seq, "compact", f"compact: {effect.get('kind')}{trigger}")
        elif kind == "DrainCollapse":
            self.add(seq, "compact", "drain staged context collapses")
        elif kind == "StageCollapse":
            count = effect.get("message_count")
            self.add(seq, "compact", f"stage a collapse of the oldest {count} messages")
        elif kind == "PersistToolResults":
            ids = ", ".join(str(r.get("tool_use_id")) for r in effect.get("results") or [])
            self.add(seq, "compact", f"save oversized tool results to files: {ids}")
        elif kind == "CountTokens":
            self.add(seq, "compact", "count the request's input tokens")
        elif kind == "CancelTool":
            self.add(seq, "tool", f"cancel {effect.get('call_id')}: {effect.get('reason')}")
        elif kind == "FetchAttachments":
            self.add(seq, "effect", f"fetch attachments for turn {effect.get('turn')}")
        elif kind == "Emit":
            message = effect.get("message") or {}
            self.add(
                seq,
                "effect",
                f"emit {message.get('type')} message: {_short(_message_text(message), 60)}",
                detail=_message_text(message),
            )
            for citation in _citations(message):
                self.add(seq, "effect", f"  cites {_citation_text(citation)}")
        else:
            self.add(seq, "effect", f"{kind}")


def timeline_entries(trace: Trace) -> list[TimelineEntry]:
    """The entries of a trace's timeline, header lines first, summary last."""
    header = trace.header
    builder = _Builder()
    tools = ", ".join(tool.name for tool in header.tools) or "(none)"
    builder.add(
        0,
        "info",
        f"trace {trace.source or '(in memory)'}: schema {header.schema}, fsm_agent "
        f"{header.library_version}, tables {header.table_digest}",
    )
    builder.add(0, "info", f"model {header.config.model}; tools: {tools}")
    parent = header.meta.get("subagent_of")
    if isinstance(parent, dict):
        builder.add(
            0,
            "info",
            f"subagent {parent.get('agent')!r} of run {parent.get('run_id')}, for its call "
            f"{parent.get('call_id')} (trace {parent.get('trace') or '(not traced)'})",
        )
    for record in trace.records:
        builder.record(record.data)
    counts = builder.counts
    tail = "; trace cut off (truncated)" if trace.truncated else ""
    builder.add(
        0,
        "info",
        f"{counts['event']} events, {counts['transition']} transitions, {counts['effect']} "
        f"effects; terminal {builder.terminal or '(none)'}{tail}",
    )
    return builder.entries


def render_timeline(trace: Trace) -> str:
    """A plain-text timeline, one line per entry: seq, category, what happened."""
    lines = []
    for entry in timeline_entries(trace):
        seq = f"{entry.seq:>6}" if entry.seq else " " * 6
        line = f"{seq}  {entry.category:<10}  {entry.text}"
        lines.append(line)
    return "\n".join(lines) + "\n"


def _permission_reason(event: dict[str, Any]) -> str:
    """Who decided and why: the kind, the SPEC §9.3 step, the rule and its source, the mode."""
    text = f"{event.get('behavior')} by {event.get('source')}"
    details = []
    if event.get("step"):
        details.append(f"step {event['step']}")
    if event.get("rule"):
        details.append(f"rule {event['rule']} from {event.get('rule_source') or '?'}")
    if event.get("mode"):
        details.append(f"mode {event['mode']}")
    if details:
        text += f" ({', '.join(details)})"
    reason = event.get("reason") or event.get("message") or ""
    if reason:
        text += f" — {_short(reason, 80)}"
    if event.get("added_rules"):
        text += f"; session rules added: {', '.join(event['added_rules'])}"
    return text
