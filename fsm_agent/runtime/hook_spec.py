"""What a hook is: what it is told, the two kinds of hook, and the matcher that groups them.

A hook is either a Python callable (``HookFunction``) or a shell command (``CommandHook``, the
kind Claude Code's settings files declare). Hooks are registered in ``HookMatcher`` groups, as
in claude-agent-sdk: a group's ``matcher`` picks the tool names (or, for the events that have
no tool, the value SPEC §6 matches on) it runs for.

Matcher syntax (the settings files' own): empty or ``*`` matches everything; names made only
of letters, digits, ``_`` and ``|`` are an exact list (``"Write|Edit"``); anything else is a
regular expression searched in the value (``"mcp__.*"``, ``"Notebook.*"``).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from fsm_agent.core.kinds import HookEvent
from fsm_agent.credentials import command_credentials
from fsm_agent.errors import ConfigError

if TYPE_CHECKING:
    from fsm_agent.core.events import HookOutcome

DEFAULT_TIMEOUT_S = 60.0
"""A command hook's time limit when neither the hook nor its group sets one."""
SESSION_END_TIMEOUT_S = 1.5
"""SessionEnd hooks get less: the session is closing (SPEC §6.1 Timeout row)."""


@attrs.frozen(kw_only=True)
class HookInput:
    """What a hook is told.

    Attributes:
        hook_event: which hook point fired.
        tool_name: the tool, for tool hooks.
        tool_input: the tool's input, for tool hooks.
        payload: the rest, under the settings files' key names (``tool_response`` for
            PostToolUse, ``error`` for PostToolUseFailure, ``prompt`` for UserPromptSubmit,
            ``stop_hook_active`` and ``last_assistant_message`` for Stop, ``source`` for
            SessionStart, ``trigger`` for PreCompact, ``message`` and ``notification_type``
            for Notification, ``reason`` for SessionEnd; SubagentStop adds ``agent_type``,
            ``agent_id`` and ``agent_transcript_path`` to the Stop fields).
        session_id: the run's id (the same for every hook of one run).
        cwd: the working directory of the run.
        trace_path: the run's trace file, when it writes one.
    """

    hook_event: HookEvent
    tool_name: str | None = None
    tool_input: dict[str, Any] = attrs.field(factory=dict)
    payload: dict[str, Any] = attrs.field(factory=dict)
    session_id: str = ""
    cwd: str = ""
    trace_path: str | None = None

    def wire(self) -> dict[str, Any]:
        """The JSON object a command hook reads on its stdin."""
        data: dict[str, Any] = {
            "session_id": self.session_id,
            "cwd": self.cwd,
            "hook_event_name": self.hook_event.value,
        }
        if self.trace_path is not None:
            data["trace_path"] = self.trace_path
        if self.tool_name is not None:
            data["tool_name"] = self.tool_name
            data["tool_input"] = self.tool_input
        data.update(self.payload)
        return data

    @property
    def match_value(self) -> str | None:
        """What matchers are tested against; None when this event has nothing to match."""
        key = _MATCHED_KEY.get(self.hook_event)
        if key is None:
            return None
        if key == "tool_name":
            return self.tool_name or ""
        return str(self.payload.get(key, ""))


# The value each event's matchers look at (the reference's choice); other events run all hooks.
_MATCHED_KEY = {
    HookEvent.PRE_TOOL_USE: "tool_name",
    HookEvent.POST_TOOL_USE: "tool_name",
    HookEvent.POST_TOOL_USE_FAILURE: "tool_name",
    HookEvent.SESSION_START: "source",
    HookEvent.PRE_COMPACT: "trigger",
    HookEvent.NOTIFICATION: "notification_type",
    HookEvent.SESSION_END: "reason",
    HookEvent.SUBAGENT_STOP: "agent_type",
}

HookFunction = Callable[[HookInput], "HookOutcome | Awaitable[HookOutcome | None] | None"]
"""A Python hook: given a ``HookInput``, return a ``HookOutcome`` or None (may be async)."""


@attrs.frozen(kw_only=True)
class CommandHook:
    """A shell command run as a hook (Claude Code's ``{"type": "command"}`` entry).

    The command reads the hook's JSON payload on stdin; its exit code and output say what it
    wants (SPEC §6.1). ``timeout`` is in seconds; None takes the group's, else 60 s.
    """

    command: str
    timeout: float | None = None

    @property
    def secrets(self) -> tuple[str, ...]:
        """The credentials written in the command (``--token VALUE``, ``API_KEY=VALUE``, a
        header's token, ``mysql -pVALUE``): an error about the hook quotes the command, so
        the agent keeps them out of its traces and spans as its own (DESIGN §8)."""
        return tuple(command_credentials(self.command))

    def __attrs_post_init__(self) -> None:
        if not self.command.strip():
            raise ConfigError("a command hook's command is empty")
        if self.timeout is not None and not self.timeout > 0:
            raise ConfigError(f"command hook {self.command!r}: timeout must be > 0 seconds")


Hook = HookFunction | CommandHook


def _as_tuple(hooks: Sequence[Hook]) -> tuple[Hook, ...]:
    return tuple(hooks)


_NAME_LIST = re.compile(r"[A-Za-z0-9_|]+")


def _compile(matcher: str | None) -> re.Pattern[str] | None:
    if not matcher or matcher == "*" or _NAME_LIST.fullmatch(matcher):
        return None
    try:
        return re.compile(matcher)
    except re.error as exc:
        raise ConfigError(
            f"hook matcher {matcher!r} is not a valid regular expression: {exc}"
        ) from None


@attrs.frozen(kw_only=True)
class HookMatcher:
    """A group of hooks that run when ``matcher`` matches (claude-agent-sdk's ``HookMatcher``).

    Attributes:
        matcher: ``None``, ``""`` or ``"*"`` for everything; ``"Write|Edit"`` for exact names;
            any other text is a regular expression searched in the tool name (or the event's
            matched value, see ``HookInput.match_value``).
        hooks: Python callables and ``CommandHook`` entries.
        timeout: seconds each hook of the group may take (a command hook's own wins).
    """

    matcher: str | None = None
    hooks: Sequence[Hook] = attrs.field(default=(), converter=_as_tuple)
    timeout: float | None = None
    _pattern: re.Pattern[str] | None = attrs.field(init=False, repr=False, eq=False)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "_pattern", _compile(self.matcher))
        for position, hook in enumerate(self.hooks):
            if not (isinstance(hook, CommandHook) or callable(hook)):
                raise ConfigError(
                    f"hook matcher {self.matcher!r}: hooks[{position}] is a "
                    f"{type(hook).__name__}, not a callable or a CommandHook"
                )
        if self.timeout is not None and not self.timeout > 0:
            raise ConfigError(f"hook matcher {self.matcher!r}: timeout must be > 0 seconds")

    def matches(self, value: str | None) -> bool:
        """Whether this group runs for an event whose matched value is ``value``."""
        if value is None or not self.matcher or self.matcher == "*":
            return True
        if self._pattern is None:
            return value in self.matcher.split("|")
        return self._pattern.search(value) is not None
