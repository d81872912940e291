"""What performing one effect does, apart from who schedules it.

The in-process driver (:mod:`fsm_agent.runtime.driver`) runs these as asyncio tasks and feeds
what they report to the core as it arrives; the Temporal driver (:mod:`fsm_agent.temporal`)
runs them inside activities and feeds what they return from the workflow. Both give the core
the same answers because both call the code here: how a model request is built and streamed
(with the idle watchdog), how a tool step runs, what a hook is told, how the permission chain
is consulted and what an allowed call may then touch, and how compaction, context collapse and the
tool-result budget turn into events. Scheduling, cancellation and the trace stay with each driver.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from fsm_agent.core import effects as fx
from fsm_agent.core import events as ev
from fsm_agent.core import texts
from fsm_agent.core.messages import Message
from fsm_agent.core.prompt_cache import cache_breakpoints
from fsm_agent.errors import UsageError
from fsm_agent.runtime.compaction import CompactionResult, SummaryCompactor
from fsm_agent.runtime.context_collapse import CollapseResult, collapse_oldest, stage_span
from fsm_agent.runtime.hooks import HookInput
from fsm_agent.runtime.models import (
    Model,
    ModelFailure,
    ModelRequest,
    checked_stream_event,
    classify_failure,
)
from fsm_agent.runtime.permissions import CallFacts
from fsm_agent.runtime.result_files import persist_chosen
from fsm_agent.runtime.tool import (
    OUTSIDE_WORKING_FOLDER,
    SAFETY_CHECK,
    PermissionCheck,
    Tool,
    ToolContext,
    run_call,
    run_validation,
)
from fsm_agent.toolbox.paths import expand_home

Report = Callable[[ev.Event], None]
"""Where an effect's events go as they happen (the driver's queue, or an activity's list)."""


def seconds(milliseconds: int | None) -> float | None:
    """A ``LoopConfig`` limit in milliseconds as seconds (None stays unbounded)."""
    return None if milliseconds is None else milliseconds / 1000


def is_stale(event: ev.Event, cancelled_calls: set[str], effect_calls: dict[str, str]) -> bool:
    """Whether ``event`` reports on a tool call that was cancelled (``CancelTool``): such late
    reports are dropped, never fed. ``effect_calls`` maps hook and permission effect ids to
    their call."""
    call_id = getattr(event, "call_id", None)
    if call_id is None and isinstance(
        event, ev.HooksFinished | ev.PermissionDecided | ev.PermissionPromptShown
    ):
        call_id = effect_calls.get(event.effect_id)
    return call_id is not None and call_id in cancelled_calls


def model_request(
    effect: fx.CallModel,
    *,
    system: str,
    tool_definitions: list[dict[str, Any]],
    messages: list[dict[str, Any]],
    prompt_caching: bool,
) -> ModelRequest:
    """The request a ``CallModel`` effect sends, with prompt-cache breakpoints when wanted."""
    marked_system: str | list[dict[str, Any]] = system
    tools = tool_definitions
    if prompt_caching:
        marked_system, tools, messages = cache_breakpoints(
            system=system, tools=tools, messages=messages
        )
    return ModelRequest(
        model=effect.model,
        max_output_tokens=effect.max_output_tokens,
        messages=messages,
        system=marked_system,
        tools=tools,
    )


async def stream_model(
    model: Model,
    request: ModelRequest,
    *,
    request_id: str,
    idle_timeout_s: float,
    report: Report,
) -> None:
    """Stream one response, reporting each event, then how the stream ended.

    The last event reported is ``ModelStreamClosed`` or a failure event; nothing is raised
    for a failing model (SPEC §2.2 model_error: any exception escaping the stream is data).
    """
    stream = model.stream(request)
    try:
        while True:
            # SPEC §3 idle watchdog: a stream silent for too long is abandoned (the core
            # retries it); the SDK's own timeout covers only single reads.
            try:
                async with asyncio.timeout(idle_timeout_s):
                    raw = await anext(stream)
            except StopAsyncIteration:
                break
            except TimeoutError:
                raise ModelFailure(
                    kind=ev.FailureKind.TIMEOUT,
                    message=f"no stream event for {idle_timeout_s:g} s (idle watchdog)",
                ) from None
            report(ev.ModelStreamEvent(request_id=request_id, event=checked_stream_event(raw)))
    except Exception as exc:  # SPEC §2.2 model_error: any exception escaping the stream
        failure = exc if isinstance(exc, ModelFailure) else classify_failure(exc)
        report(failure.to_event(request_id))
        return
    finally:
        close = getattr(stream, "aclose", None)
        if close is not None:
            await close()
    report(ev.ModelStreamClosed(request_id=request_id))


async def tool_step(
    tool: Tool[Any] | None,
    effect: fx.RunToolStep,
    context: ToolContext,
    *,
    timeout_s: float | None,
    report: Report,
) -> ev.Event:
    """Validate or run one tool call (SPEC §4); progress goes to ``report``.

    Raises:
        UsageError: the core asked to run a tool this agent does not have (validation of an
            unknown tool is an error result, not this).
    """
    if effect.step is fx.ToolStep.VALIDATE:
        return await run_validation(
            tool,
            effect.tool_name,
            effect.input,
            context,
            call_id=effect.call_id,
            timeout_s=timeout_s,
        )
    if tool is None:
        raise UsageError(f"the core asked to call {effect.tool_name!r}, which is not a tool")
    context.extra.update(effect.context)

    def progress(text: str) -> None:
        report(ev.ToolProgressReported(call_id=effect.call_id, text=text))

    return await run_call(
        tool, effect.input, context, progress, call_id=effect.call_id, timeout_s=timeout_s
    )


def hook_input(
    effect: fx.RunHooks, *, session_id: str, cwd: Path, trace_path: Path | None
) -> HookInput:
    """What the hooks of a ``RunHooks`` effect are told (SPEC §9.6)."""
    payload = dict(effect.payload)
    tool_input = payload.pop("tool_input", {})
    return HookInput(
        hook_event=effect.hook_event,
        tool_name=effect.tool_name,
        tool_input=tool_input if isinstance(tool_input, dict) else {},
        payload=payload,
        session_id=session_id,
        cwd=str(cwd),
        trace_path=str(trace_path) if trace_path is not None else None,
    )


def permission_facts(
    tool: Tool[Any] | None,
    effect: fx.AskPermission,
    context: ToolContext,
    session_rules: tuple[str, ...],
) -> tuple[PermissionCheck, CallFacts]:
    """The tool's own opinion of a call and what the permission chain needs to know of it."""
    check = PermissionCheck(behavior="passthrough")
    target: Path | None = None
    if tool is not None:
        try:
            check = tool.check_permissions(tool.parse_input(effect.input), context)
        except Exception as exc:
            # A check that fails has not judged the call: the safety checks it holds did not
            # run, so the call asks, in bypassPermissions too (a failure is never a pass).
            check = PermissionCheck(
                behavior="ask",
                reason=SAFETY_CHECK,
                message=f"the tool's permission check failed ({type(exc).__name__}: {exc})",
            )
        target = target_path(tool, effect.input, context.cwd)
    facts = CallFacts(
        tool=tool, cwd=context.cwd.resolve(), target=target, session_rules=session_rules
    )
    return check, facts


def grant(
    context: ToolContext,
    tool: Tool[Any] | None,
    check: PermissionCheck,
    facts: CallFacts,
    decided: ev.PermissionDecided,
) -> None:
    """After an allow: what the call may touch (the file checked, or outside the folder)."""
    if decided.behavior is not ev.PermissionBehavior.ALLOW:
        return
    # The tool writes exactly the file that was checked (no swap in between), and a read
    # outside the working folder that was allowed may now reach it.
    context.checked_path = facts.target
    if tool is not None and decided.updated_input is not None:
        # the user allowed a changed input: its path is the one they approved
        context.checked_path = target_path(tool, decided.updated_input, context.cwd)
    context.allow_outside = check.reason == OUTSIDE_WORKING_FOLDER


def permission_timed_out(effect: fx.AskPermission, limit_s: float) -> ev.PermissionDecided:
    """No answer within ``LoopConfig.permission_timeout_ms``: no grant."""
    return ev.PermissionDecided(
        effect_id=effect.effect_id,
        behavior=ev.PermissionBehavior.DENY,
        source=ev.DecisionSource.USER,
        reason=texts.PERMISSION_TIMED_OUT,
        message=texts.permission_timed_out(effect.tool_name, limit_s),
    )


def permission_failed(effect: fx.AskPermission, exc: Exception) -> ev.PermissionDecided:
    """The permission callback raised: SPEC §9.6, the call is cancelled and the turn aborted."""
    return ev.PermissionDecided(
        effect_id=effect.effect_id,
        behavior=ev.PermissionBehavior.DENY,
        source=ev.DecisionSource.USER,
        reason=f"the permission callback failed: {type(exc).__name__}: {exc}",
        message=texts.permission_not_asked(effect.tool_name),
        abort_turn=True,
    )


async def compaction(
    effect: fx.Compact,
    compactor: SummaryCompactor,
    messages: Sequence[Message],
    model: Model,
    model_name: str,
) -> ev.CompactionFinished:
    """Summarise the history for a ``Compact`` effect; a failure is data, not a crash."""
    try:
        result = await compactor.compact(
            effect.kind, messages, model, model_name, instructions=effect.instructions
        )
    except Exception as exc:  # a failed compaction is a named transition, not a crash
        result = CompactionResult(ok=False, error=f"{type(exc).__name__}: {exc}")
    return ev.CompactionFinished(
        effect_id=effect.effect_id, ok=result.ok, messages=result.messages, error=result.error
    )


async def collapse(
    effect: fx.DrainCollapse,
    compactor: SummaryCompactor,
    messages: Sequence[Message],
    model: Model,
    model_name: str,
) -> ev.CollapseDrained:
    """Collapse the oldest part of the history for a ``DrainCollapse`` effect; with a span
    staged, the core commits that one and nothing is summarised here (SPEC §7.4)."""
    if effect.staged:
        return ev.CollapseDrained(effect_id=effect.effect_id, committed=effect.staged)
    try:
        result = await collapse_oldest(messages, compactor, model, model_name)
    except Exception:  # nothing committed: the core goes on to its next recovery
        result = CollapseResult(committed=0)
    return ev.CollapseDrained(
        effect_id=effect.effect_id, committed=result.committed, messages=result.messages
    )


async def stage_collapse(
    effect: fx.StageCollapse,
    compactor: SummaryCompactor,
    messages: Sequence[Message],
    model: Model,
    model_name: str,
) -> ev.CollapseStaged:
    """Summarise the span a ``StageCollapse`` effect names, in the background (SPEC §7.4)."""
    span = messages[: effect.message_count]
    try:
        result = await stage_span(span, compactor, model, model_name)
    except Exception as exc:  # no summary: the core stages nothing more this run
        result = CompactionResult(ok=False, error=f"{type(exc).__name__}: {exc}")
    return ev.CollapseStaged(
        effect_id=effect.effect_id,
        through_uuid=effect.through_uuid,
        ok=result.ok,
        summary=result.messages,
    )


async def count_request_tokens(
    effect: fx.CountTokens,
    model: Model,
    *,
    system: str,
    tool_definitions: list[dict[str, Any]],
    messages: list[dict[str, Any]],
    timeout_s: float,
) -> ev.TokensCounted:
    """Ask the model's API how many input tokens the request takes (SPEC §7.5, optional).

    Never raises for a failed count: a model that cannot count, an error, a timeout or an
    answer that is not a count come back as ``TokensCounted`` with the reason, and the core
    keeps its estimate.
    """

    def failed(reason: str) -> ev.TokensCounted:
        return ev.TokensCounted(effect_id=effect.effect_id, error=reason)

    counter = getattr(model, "count_tokens", None)
    if counter is None:
        return failed(f"{type(model).__name__} cannot count tokens")
    try:
        async with asyncio.timeout(timeout_s):
            tokens = await counter(
                messages, system=system, tools=tool_definitions, model=effect.model
            )
    except TimeoutError:
        return failed(f"count_tokens gave no answer within {timeout_s:g} s")
    except Exception as exc:  # a failed count is data: the estimate stays in charge
        return failed(f"{type(exc).__name__}: {exc}")
    if type(tokens) is not int or tokens < 0:
        return failed(f"count_tokens answered {tokens!r}, not a number of tokens")
    return ev.TokensCounted(effect_id=effect.effect_id, input_tokens=tokens)


def persist_results(
    effect: fx.PersistToolResults, messages: Sequence[Message], results_dir: Path | None
) -> ev.ToolResultsPersisted:
    """Save the results the tool-result budget chose, beside the trace (SPEC §7.1)."""
    saved = persist_chosen(messages, effect.results, results_dir)
    return ev.ToolResultsPersisted(effect_id=effect.effect_id, results=saved)


def target_path(tool: Tool[Any], raw_input: dict[str, Any], cwd: Path) -> Path | None:
    """The resolved file or folder a file tool will touch (``~``, ``..`` and links followed)."""
    if tool.path_field is None:
        return None
    raw = raw_input.get(tool.path_field) or "."
    if not isinstance(raw, str):
        return None
    path = expand_home(raw)
    return (path if path.is_absolute() else cwd.resolve() / path).resolve()
