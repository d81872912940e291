"""What the run store keeps of one trace: a :class:`RunSummary`, read from the JSONL file.

The trace stays the source of truth (DESIGN §9): a summary is derived from it and nothing else,
so the store can always be rebuilt by reading the traces again. Summaries are read with orjson
record by record, without structuring events, because importing thousands of traces must be
fast; a cut-off last line (a run that crashed mid-write) is skipped, not an error.

A trace need not come from our writer (``fsm-agent runs import`` takes any folder), so what
the store keeps of it is redacted as the writer redacts (DESIGN §8): each value taken from the
trace (a name, a rule, the model: a few dozen per run, however long the run) goes through
:meth:`~fsm_agent.trace.redact.Redactor.value`, which replaces API-key-shaped text, the secrets
the caller names and, inside an object, the values of sensitive keys. For one of our own
traces, redacted when written, that changes nothing.
"""

from __future__ import annotations

import datetime as dt
import os
from collections import Counter
from pathlib import Path
from typing import Any

import attrs
import orjson

from fsm_agent.core.pricing import usage_cost
from fsm_agent.errors import TraceFormatError
from fsm_agent.trace.records import carried_step, event_alone, expand_step
from fsm_agent.trace.redact import KEY_RULES_ONLY, Redactor

# The states a tool call ends in (DESIGN §3); ``yielded`` follows every one of them.
_CALL_ENDINGS = frozenset({"completed", "rejected", "denied", "cancelled", "errored"})


@attrs.frozen(kw_only=True)
class ToolCallSummary:
    """One tool call of a run.

    Attributes:
        call_id: the tool_use id.
        tool: the tool's name.
        path: the tool-call states it went through, in order (``validating>...>yielded``).
        outcome: the state it ended in (``completed``, ``denied``, ...), or ``""`` if unfinished.
    """

    call_id: str
    tool: str
    path: str
    outcome: str


@attrs.frozen(kw_only=True)
class PermissionSummary:
    """One permission decision of a run (DESIGN §3: the permission step records why).

    Attributes:
        call_id: the tool call it was about.
        tool: that call's tool name.
        behavior: ``allow``, ``deny`` or ``ask``.
        source: who decided (``rule``, ``mode``, ``hook``, ``user``, ``policy``...).
        rule: the rule that decided, if one did.
        rule_source: where that rule came from (a settings file, the session...).
    """

    call_id: str
    tool: str
    behavior: str
    source: str
    rule: str
    rule_source: str


@attrs.frozen(kw_only=True)
class StoredRun:
    """One run's row in the run index: what ``fsm-agent runs`` lists and queries return.

    Attributes:
        run_id: the run's id (``run_id`` in the header's meta, else the trace file's stem).
        trace_path: the trace file, as given when the run was indexed (redacted as the
            rest of the row is: a secret in it reads ``[REDACTED]``).
        started: the UTC start time (ISO 8601) from the header's meta, or ``""``.
        ended: the start plus the last recorded elapsed time, or ``""`` when unknown.
        terminal: the terminal reason of the ``end`` record, or ``""`` if the run never ended.
        model: the model of the run.
        turns: how many iterations the loop started.
        input_tokens: input tokens over the run (from the ``end`` record).
        output_tokens: output tokens over the run.
        cost_usd: the run's cost: at the price recorded in the header (``meta.price``, from
            ``Agent(price=...)``) for the usage of the ``end`` record; None without a price.
        parent_run: the run this one was forked or resumed from (``meta.parent``), or ``""``.
    """

    run_id: str
    trace_path: str
    started: str
    ended: str
    terminal: str
    model: str
    turns: int
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    parent_run: str

    def to_json(self) -> dict[str, Any]:
        """The run as a JSON object (what ``fsm-agent runs --json`` prints)."""
        return attrs.asdict(self)


@attrs.frozen(kw_only=True)
class RunSummary(StoredRun):
    """One run as the store indexes it: its row, and what the other tables keep of it.

    Attributes:
        transitions: how often each transition was taken, by name.
        tool_calls: every tool call, in the order they were queued.
        permissions: every permission decision, in order.
    """

    transitions: dict[str, int]
    tool_calls: tuple[ToolCallSummary, ...]
    permissions: tuple[PermissionSummary, ...]


def summarize_trace(
    path: str | os.PathLike[str], redactor: Redactor = KEY_RULES_ONLY
) -> RunSummary:
    """Read one trace file into the summary the store keeps, redacted by ``redactor`` (by
    default the key rules and API-key-shaped text; pass one naming secrets to hide them too).

    Raises:
        TraceFormatError: the file is empty, a line other than the last is not JSON, or the
            first record is not a header.
    """
    source = os.fspath(path)
    with Path(path).open("rb") as file:
        lines = file.read().split(b"\n")
    records: list[dict[str, Any]] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            records.append(orjson.loads(line))
        except orjson.JSONDecodeError:
            if number >= len(lines) - 1:
                break  # a cut-off last line: the run crashed while writing it
            raise TraceFormatError(
                line=number, path="$", problem="not JSON", source=source
            ) from None
    if not records or records[0].get("record") != "header":
        raise TraceFormatError(
            line=1, path="$.record", problem="expected the trace header", source=source
        )
    body: list[dict[str, Any]] = []
    for number, record in enumerate(records[1:], start=2):
        kind = record.get("record")
        if kind == "step":  # schema 2: a step's transitions and effects
            body.extend(expand_step(record, number, source))
        elif kind == "event" and (carried := carried_step(record)) is not None:
            # schema 3: the event line carries its feed's transitions and effects
            body.append(event_alone(record))
            body.extend(expand_step(carried, number, source))
        else:
            body.append(record)
    return _summary(source, records[0], body, redactor)


def _summary(
    source: str, header: dict[str, Any], body: list[dict[str, Any]], redactor: Redactor
) -> RunSummary:
    # The records are read as they are (call ids join them); what is kept is redacted.
    kept = redactor.value
    meta = header.get("meta") or {}
    transitions: Counter[str] = Counter()
    call_tools: dict[str, str] = {}
    call_paths: dict[str, list[str]] = {}
    asked: dict[str, str] = {}  # permission effect id -> call id
    permissions: list[PermissionSummary] = []
    terminal = ""
    usage: dict[str, Any] = {}
    elapsed_ms = 0.0
    for record in body:
        kind = record.get("record")
        elapsed_ms = max(elapsed_ms, float(record.get("elapsed_ms") or 0))
        if kind == "transition":
            transitions[record["name"]] += 1
            call_id = record.get("call_id")
            if record.get("machine") == "tool" and call_id:
                call_paths.setdefault(call_id, []).append(record["dest"])
        elif kind == "effect":
            effect = record["effect"]
            if effect.get("type") == "RunToolStep":
                call_tools.setdefault(effect["call_id"], effect["tool_name"])
            elif effect.get("type") == "AskPermission":
                asked[effect["effect_id"]] = effect["call_id"]
        elif kind == "event":
            event = record["event"]
            if event.get("type") == "PermissionDecided":
                call_id = asked.get(event["effect_id"], "")
                permissions.append(
                    PermissionSummary(
                        call_id=kept(call_id),
                        tool=kept(call_tools.get(call_id, "")),
                        behavior=kept(event.get("behavior", "")),
                        source=kept(event.get("source", "")),
                        rule=kept(event.get("rule", "")),
                        rule_source=kept(event.get("rule_source", "")),
                    )
                )
        elif kind == "end":
            terminal = kept(record.get("terminal") or "")
            usage = record.get("usage") or {}
    started = str(kept(meta.get("started", "")))
    cost = meta.get("cost_usd")
    if not isinstance(cost, int | float):
        # issue 13: the price the run was given rides in the header; the end has the usage.
        cost = usage_cost(meta.get("price"), usage) if terminal else None
    return RunSummary(
        run_id=str(kept(meta.get("run_id") or Path(source).stem)),
        trace_path=kept(str(Path(source).absolute())),  # a folder may be named for a secret
        started=started,
        ended=_ended(started, elapsed_ms),
        terminal=terminal,
        model=str(kept(meta.get("model") or (header.get("config") or {}).get("model", ""))),
        turns=transitions["iteration_started"],
        input_tokens=int(usage.get("input_tokens", 0)),
        output_tokens=int(usage.get("output_tokens", 0)),
        cost_usd=float(cost) if isinstance(cost, int | float) else None,
        parent_run=kept(_parent(meta.get("parent"))),
        transitions=_redacted_names(transitions, redactor),
        # Call ids redacted alike are one call: the table's key is the id.
        tool_calls=tuple(
            {
                kept(call_id): ToolCallSummary(
                    call_id=kept(call_id),
                    tool=kept(tool),
                    path=kept(">".join(call_paths.get(call_id, []))),
                    outcome=_outcome(call_paths.get(call_id, [])),
                )
                for call_id, tool in call_tools.items()
            }.values()
        ),
        permissions=tuple(permissions),
    )


def _redacted_names(counts: Counter[str], redactor: Redactor) -> dict[str, int]:
    """Transition counts by redacted name (names redacted alike are counted together)."""
    redacted: Counter[str] = Counter()
    for name, count in counts.items():
        redacted[redactor.value(name)] += count
    return dict(redacted)


def _parent(lineage: object) -> str:
    """The parent run's id from ``meta.parent`` of a forked or resumed run (the id it names,
    or, in traces written before run ids were recorded, its trace's stem)."""
    if not isinstance(lineage, dict):
        return ""
    if isinstance(lineage.get("run_id"), str) and lineage["run_id"]:
        return str(lineage["run_id"])
    if isinstance(lineage.get("trace"), str):
        return Path(lineage["trace"]).stem
    return ""


def _outcome(path: list[str]) -> str:
    endings = [state for state in path if state in _CALL_ENDINGS]
    return endings[-1] if endings else ""


def _ended(started: str, elapsed_ms: float) -> str:
    if not started or not elapsed_ms:
        return ""
    try:
        start = dt.datetime.fromisoformat(started)
    except ValueError:
        return ""
    return (start + dt.timedelta(milliseconds=elapsed_ms)).isoformat()
