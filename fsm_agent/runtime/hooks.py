"""The hooks of an agent, by event, and running them (SPEC §6).

``Hooks`` holds, for each hook event, Python callables and ``HookMatcher`` groups (which may
hold ``CommandHook`` entries, e.g. read from a settings file with ``Hooks.from_settings``).
``Hooks.run`` runs every hook whose matcher matches, all at once, and combines their outcomes
as SPEC §6.1 says: deny beats ask beats allow; blocking errors, context and system messages
accumulate; any ``prevent_continuation`` stops the loop.

A hook never breaks the run (SPEC §6.3 "Hook crash"): one that raises, runs past its time
limit, or returns something other than a ``HookOutcome`` or None becomes a warning system
message naming it, and blocks nothing.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from fsm_agent.core import texts
from fsm_agent.core.kinds import HookDecision, HookEvent
from fsm_agent.errors import ConfigError
from fsm_agent.runtime.hook_settings import matchers_from_settings
from fsm_agent.runtime.hook_spec import (
    DEFAULT_TIMEOUT_S,
    SESSION_END_TIMEOUT_S,
    CommandHook,
    Hook,
    HookFunction,
    HookInput,
    HookMatcher,
)

if TYPE_CHECKING:
    from fsm_agent.core.events import HookOutcome

__all__ = ["CommandHook", "HookFunction", "HookInput", "HookMatcher", "Hooks", "combine"]

HookEntry = HookFunction | HookMatcher
"""What ``Hooks`` holds per event: a bare callable (runs for everything) or a matcher group."""

_PRECEDENCE = {HookDecision.DENY: 3, HookDecision.ASK: 2, HookDecision.ALLOW: 1}

# Events whose blocking errors block something (SPEC §6.1, §6.3); for the others a blocking
# error is only shown to the user.
_CAN_BLOCK = frozenset(
    {
        HookEvent.PRE_TOOL_USE,
        HookEvent.POST_TOOL_USE,
        HookEvent.POST_TOOL_USE_FAILURE,
        HookEvent.USER_PROMPT_SUBMIT,
        HookEvent.STOP,
        HookEvent.SUBAGENT_STOP,
    }
)


def _entries(value: Sequence[HookEntry] | HookEntry) -> tuple[HookEntry, ...]:
    if isinstance(value, HookMatcher) or callable(value):
        return (value,)  # a lone hook is one hook, as ``Hooks(stop=check)`` reads
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        raise ConfigError(
            f"a hook event takes a list of callables and HookMatcher groups, not "
            f"{type(value).__name__} {value!r:.40}"
        )
    return tuple(value)


@attrs.frozen(kw_only=True)
class Hooks:
    """The hooks of an agent, by hook event.

    Each field takes Python callables (they run for every tool, or every occurrence of the
    event) and ``HookMatcher`` groups.

    Example:
        >>> hooks = Hooks(pre_tool_use=[HookMatcher(matcher="Write|Edit", hooks=[print])])
        >>> len(hooks.matchers(HookEvent.PRE_TOOL_USE))
        1
    """

    pre_tool_use: Sequence[HookEntry] = attrs.field(default=(), converter=_entries)
    post_tool_use: Sequence[HookEntry] = attrs.field(default=(), converter=_entries)
    post_tool_use_failure: Sequence[HookEntry] = attrs.field(default=(), converter=_entries)
    user_prompt_submit: Sequence[HookEntry] = attrs.field(default=(), converter=_entries)
    stop: Sequence[HookEntry] = attrs.field(default=(), converter=_entries)
    subagent_stop: Sequence[HookEntry] = attrs.field(default=(), converter=_entries)
    stop_failure: Sequence[HookEntry] = attrs.field(default=(), converter=_entries)
    pre_compact: Sequence[HookEntry] = attrs.field(default=(), converter=_entries)
    session_start: Sequence[HookEntry] = attrs.field(default=(), converter=_entries)
    session_end: Sequence[HookEntry] = attrs.field(default=(), converter=_entries)
    notification: Sequence[HookEntry] = attrs.field(default=(), converter=_entries)

    @classmethod
    def from_settings(cls, hooks: Mapping[str, Any], *, source: str) -> Hooks:
        """Command hooks from the ``hooks`` value of a Claude Code settings file.

        Args:
            hooks: the value of the settings file's ``hooks`` key.
            source: names the file in errors (``".claude/settings.json"``).

        Raises:
            ConfigError: a malformed part, named by its key path.
        """
        found = matchers_from_settings(hooks, source=source)
        return cls(**{_FIELDS[event]: groups for event, groups in found.items()})

    @property
    def secrets(self) -> tuple[str, ...]:
        """The credentials written in the command hooks' commands (``CommandHook.secrets``)."""
        found = (
            secret
            for name in _FIELDS.values()
            for entry in getattr(self, name)
            if isinstance(entry, HookMatcher)
            for hook in entry.hooks
            if isinstance(hook, CommandHook)
            for secret in hook.secrets
        )
        return tuple(dict.fromkeys(found))

    def merged(self, other: Hooks) -> Hooks:
        """These hooks and ``other``'s, event by event (``other``'s run alongside)."""
        return Hooks(
            **{name: (*getattr(self, name), *getattr(other, name)) for name in _FIELDS.values()}
        )

    def matchers(self, hook_event: HookEvent) -> tuple[HookMatcher, ...]:
        """The groups registered for one event (a bare callable is a group that matches all)."""
        field = _FIELDS.get(hook_event)
        entries: Sequence[HookEntry] = getattr(self, field) if field is not None else ()
        return tuple(
            entry if isinstance(entry, HookMatcher) else HookMatcher(hooks=(entry,))
            for entry in entries
        )

    def selected(self, hook_input: HookInput) -> list[tuple[Hook, float | None]]:
        """The hooks that run for ``hook_input``, each with its group's time limit.

        A command that several groups select runs once (the reference de-duplicates too).
        """
        value = hook_input.match_value
        chosen: list[tuple[Hook, float | None]] = []
        commands: set[str] = set()
        for group in self.matchers(hook_input.hook_event):
            if not group.matches(value):
                continue
            for hook in group.hooks:
                if isinstance(hook, CommandHook):
                    if hook.command in commands:
                        continue
                    commands.add(hook.command)
                chosen.append((hook, group.timeout))
        return chosen

    async def run(
        self, hook_input: HookInput, *, default_timeout_s: float | None = None
    ) -> HookOutcome:
        """Run every selected hook for ``hook_input`` concurrently; combine their outcomes.

        ``default_timeout_s`` bounds a Python hook whose matcher sets no timeout (the
        driver passes ``LoopConfig.hook_timeout_ms``); command hooks keep their own default.
        """
        from fsm_agent.core.events import HookOutcome  # noqa: PLC0415 - loaded when first used

        chosen = self.selected(hook_input)
        if not chosen:
            return HookOutcome()
        import asyncio  # noqa: PLC0415 - issue 10: loaded by the first run

        outcomes = await asyncio.gather(
            *(_run_one(hook, timeout, hook_input, default_timeout_s) for hook, timeout in chosen)
        )
        return _fit_to_event(hook_input.hook_event, combine(outcomes))


_FIELDS = {
    HookEvent.PRE_TOOL_USE: "pre_tool_use",
    HookEvent.POST_TOOL_USE: "post_tool_use",
    HookEvent.POST_TOOL_USE_FAILURE: "post_tool_use_failure",
    HookEvent.USER_PROMPT_SUBMIT: "user_prompt_submit",
    HookEvent.STOP: "stop",
    HookEvent.SUBAGENT_STOP: "subagent_stop",
    HookEvent.STOP_FAILURE: "stop_failure",
    HookEvent.PRE_COMPACT: "pre_compact",
    HookEvent.SESSION_START: "session_start",
    HookEvent.SESSION_END: "session_end",
    HookEvent.NOTIFICATION: "notification",
}


def _hook_name(hook: Hook) -> str:
    if isinstance(hook, CommandHook):
        return f"[{hook.command}]"
    return str(getattr(hook, "__name__", None) or type(hook).__name__)


async def _run_one(
    hook: Hook,
    group_timeout: float | None,
    hook_input: HookInput,
    default_timeout: float | None,
) -> HookOutcome:
    import asyncio  # noqa: PLC0415 - issue 10: loaded by the first run

    from fsm_agent.core.events import HookOutcome  # noqa: PLC0415 - loaded when first used
    from fsm_agent.runtime.command_hooks import run_command_hook  # noqa: PLC0415 - issue 10: loaded by the first run

    label = hook_input.hook_event.value
    if isinstance(hook, CommandHook):
        default = (
            SESSION_END_TIMEOUT_S
            if hook_input.hook_event is HookEvent.SESSION_END
            else DEFAULT_TIMEOUT_S
        )
        return await run_command_hook(
            hook.command,
            hook_input.wire(),
            hook_event=hook_input.hook_event,
            cwd=hook_input.cwd,
            timeout_s=hook.timeout or group_timeout or default,
        )
    name = _hook_name(hook)
    limit = group_timeout if group_timeout is not None else default_timeout
    try:
        async with asyncio.timeout(limit):
            result: object = hook(hook_input)
            if inspect.isawaitable(result):
                result = await result
    except TimeoutError:
        assert limit is not None
        return HookOutcome(system_messages=(texts.hook_timed_out(label, name, limit),))
    except Exception as exc:  # a broken hook warns, never blocks (SPEC §6.3)
        error = f"{type(exc).__name__}: {exc}"
        return HookOutcome(system_messages=(texts.hook_failed(label, name, error),))
    if result is None:
        return HookOutcome()
    if not isinstance(result, HookOutcome):
        return HookOutcome(
            system_messages=(texts.hook_wrong_type(label, name, type(result).__name__),)
        )
    return result


def _fit_to_event(hook_event: HookEvent, outcome: HookOutcome) -> HookOutcome:
    """An event that cannot block shows its hooks' blocking errors to the user instead."""
    if hook_event in _CAN_BLOCK or not outcome.blocking_errors:
        return outcome
    return attrs.evolve(
        outcome,
        blocking_errors=(),
        system_messages=(*outcome.system_messages, *outcome.blocking_errors),
    )


def combine(outcomes: Sequence[HookOutcome]) -> HookOutcome:
    """Aggregate several hooks' outcomes for one event (SPEC §6.1)."""
    from fsm_agent.core.events import HookOutcome  # noqa: PLC0415 - loaded when first used

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
