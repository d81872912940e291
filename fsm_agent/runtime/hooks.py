"""Hooks as Python callables: PreToolUse, PostToolUse and Stop (SPEC §6).

A hook receives a ``HookInput`` and returns a ``HookOutcome`` (or None: nothing to say). It
may be a plain function or a coroutine function. Outcomes of several hooks for one event are
combined as SPEC §6.1 says: deny beats ask beats allow; blocking errors, context and system
messages accumulate; any ``prevent_continuation`` stops the loop. A hook that raises does not
block: its error becomes a system message the user sees ("Stop hook failed: ...").
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import attrs

from fsm_agent.core.effects import HookEvent
from fsm_agent.core.events import HookDecision, HookOutcome


@attrs.frozen(kw_only=True)
class HookInput:
    """What a hook is told.

    Attributes:
        hook_event: which hook point fired.
        tool_name: the tool, for tool hooks.
        tool_input: the tool's input, for tool hooks.
        payload: the rest (``tool_response`` for PostToolUse; ``stop_hook_active`` and
            ``last_assistant_message`` for Stop).
    """

    hook_event: HookEvent
    tool_name: str | None = None
    tool_input: dict[str, Any] = attrs.field(factory=dict)
    payload: dict[str, Any] = attrs.field(factory=dict)


HookFunction = Callable[[HookInput], "HookOutcome | Awaitable[HookOutcome | None] | None"]

_PRECEDENCE = {HookDecision.DENY: 3, HookDecision.ASK: 2, HookDecision.ALLOW: 1}


@attrs.frozen(kw_only=True)
class Hooks:
    """The hooks of an agent, by hook point."""

    pre_tool_use: Sequence[HookFunction] = ()
    post_tool_use: Sequence[HookFunction] = ()
    stop: Sequence[HookFunction] = ()

    def for_event(self, hook_event: HookEvent) -> Sequence[HookFunction]:
        """The hooks registered for one hook point (StopFailure hooks are not supported yet)."""
        return {
            HookEvent.PRE_TOOL_USE: self.pre_tool_use,
            HookEvent.POST_TOOL_USE: self.post_tool_use,
            HookEvent.STOP: self.stop,
        }.get(hook_event, ())

    async def run(self, hook_input: HookInput) -> HookOutcome:
        """Run every hook for ``hook_input.hook_event`` in order and combine their outcomes."""
        outcomes: list[HookOutcome] = []
        for hook in self.for_event(hook_input.hook_event):
            try:
                result = hook(hook_input)
                if inspect.isawaitable(result):
                    result = await result
            except Exception as exc:  # a broken hook warns, never blocks (SPEC §6.3)
                name = getattr(hook, "__name__", "hook")
                label = hook_input.hook_event.value
                text = f"{label} hook {name} failed: {type(exc).__name__}: {exc}"
                outcomes.append(HookOutcome(system_messages=(text,)))
                continue
            if result is not None:
                outcomes.append(result)
        return combine(outcomes)


def combine(outcomes: Sequence[HookOutcome]) -> HookOutcome:
    """Aggregate several hooks' outcomes for one event (SPEC §6.1)."""
    if not outcomes:
        return HookOutcome()
    decision: HookDecision | None = None
    reason = ""
    updated: dict[str, Any] | None = None
    for outcome in outcomes:
        if outcome.decision is not None and (
            decision is None or _PRECEDENCE[outcome.decision] > _PRECEDENCE[decision]
        ):
            decision, reason = outcome.decision, outcome.decision_reason
        if outcome.updated_input is not None and outcome.decision is not HookDecision.DENY:
            updated = outcome.updated_input
    stop_reasons = [o.stop_reason for o in outcomes if o.prevent_continuation and o.stop_reason]
    return HookOutcome(
        blocking_errors=tuple(e for o in outcomes for e in o.blocking_errors),
        prevent_continuation=any(o.prevent_continuation for o in outcomes),
        stop_reason=stop_reasons[0] if stop_reasons else "",
        decision=decision,
        decision_reason=reason,
        updated_input=updated,
        additional_context=tuple(c for o in outcomes for c in o.additional_context),
        system_messages=tuple(m for o in outcomes for m in o.system_messages),
    )
