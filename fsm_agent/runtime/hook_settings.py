"""The ``hooks`` key of a Claude Code settings file, read into hook matchers.

The shape::

    {"PreToolUse": [{"matcher": "Bash",
                     "hooks": [{"type": "command", "command": "./check.sh", "timeout": 30}]}]}

Every malformed part is a ``ConfigError`` naming the file and the key path
(``settings.json: hooks.PreToolUse[0].hooks[1].timeout: ...``); nothing is dropped silently,
so a user never believes a hook guards them when it does not run. An event name that is not
a hook event at all (a typo) is refused for the same reason. An event Claude Code defines but
fsm_agent never fires (``PostCompact``, ``PermissionRequest``, ...) is skipped with a
``SettingsWarning`` naming it: a user's existing settings file still loads, and they are told
which hooks will not run.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from fsm_agent.core.kinds import HookEvent
from fsm_agent.errors import ConfigError, SettingsWarning
from fsm_agent.runtime.hook_spec import CommandHook, HookMatcher

_EVENTS = {event.value: event for event in HookEvent}
CLAUDE_CODE_EVENTS_NOT_RUN = (
    frozenset(
        {
            "PermissionRequest",
            "PermissionDenied",
            "PostCompact",
            "SubagentStart",
            "StopFailure",
            "TaskCompleted",
            "TaskCreated",
            "TeammateIdle",
            "ConfigChange",
            "WorktreeCreate",
            "WorktreeRemove",
            "InstructionsLoaded",
            "Elicitation",
            "ElicitationResult",
            "CwdChanged",
            "FileChanged",
            "PostToolBatch",
            "UserPromptExpansion",
        }
    )
    - _EVENTS.keys()
)
"""Hook events of Claude Code's settings format that fsm_agent never fires: skipped, with a
warning, so that a settings file written for Claude Code still loads."""
_GROUP_KEYS = frozenset({"matcher", "hooks"})
_HOOK_KEYS = frozenset({"type", "command", "timeout"})


def matchers_from_settings(
    value: object, *, source: str
) -> dict[HookEvent, tuple[HookMatcher, ...]]:
    """Read a settings file's ``hooks`` value; ``source`` names the file in errors."""
    where = f"{source}: hooks"
    if not isinstance(value, Mapping):
        raise ConfigError(
            f"{where}: must be an object mapping event names to lists of matcher groups, "
            f"not {_kind(value)}"
        )
    found: dict[HookEvent, tuple[HookMatcher, ...]] = {}
    for name, groups in value.items():
        path = f"{where}.{name}"
        event = _EVENTS.get(name) if isinstance(name, str) else None
        if event is None and name in CLAUDE_CODE_EVENTS_NOT_RUN:
            warnings.warn(
                f"{path}: fsm_agent never fires {name} hooks; they are skipped",
                SettingsWarning,
                stacklevel=2,
            )
            continue
        if event is None:
            known = ", ".join(_EVENTS)
            raise ConfigError(f"{path}: not a hook event fsm_agent runs (it runs: {known})")
        entries = _list(groups, path)
        found[event] = tuple(
            _group(group, f"{path}[{position}]") for position, group in enumerate(entries)
        )
    return found


def _group(group: object, path: str) -> HookMatcher:
    entries = _object(group, path, _GROUP_KEYS)
    matcher = entries.get("matcher")
    if matcher is not None and not isinstance(matcher, str):
        raise ConfigError(f"{path}.matcher: must be a string, not {_kind(matcher)}")
    if "hooks" not in entries:
        raise ConfigError(f"{path}: has no 'hooks' list")
    hooks_path = f"{path}.hooks"
    hooks = [
        _command(hook, f"{hooks_path}[{position}]")
        for position, hook in enumerate(_list(entries["hooks"], hooks_path))
    ]
    try:
        return HookMatcher(matcher=matcher, hooks=hooks)
    except ConfigError as exc:
        raise ConfigError(f"{path}.matcher: {exc}") from None


def _command(hook: object, path: str) -> CommandHook:
    kind = hook.get("type") if isinstance(hook, Mapping) else None
    if isinstance(hook, Mapping) and kind != "command":
        raise ConfigError(
            f"{path}.type: must be 'command' (the only kind of hook fsm_agent runs), not {kind!r}"
        )
    entries = _object(hook, path, _HOOK_KEYS)
    command = entries.get("command")
    if not isinstance(command, str) or not command.strip():
        raise ConfigError(f"{path}.command: must be a non-empty string, not {command!r}")
    timeout = entries.get("timeout")
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0
    ):
        raise ConfigError(f"{path}.timeout: must be a number of seconds > 0, not {timeout!r}")
    return CommandHook(command=command, timeout=float(timeout) if timeout is not None else None)


def _object(value: object, path: str, allowed: frozenset[str]) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ConfigError(f"{path}: must be an object, not {_kind(value)}")
    unknown = sorted(str(key) for key in value if key not in allowed)
    if unknown:
        raise ConfigError(
            f"{path}: unknown key {unknown[0]!r} (allowed: {', '.join(sorted(allowed))})"
        )
    return value


def _list(value: object, path: str) -> Sequence[object]:
    if not isinstance(value, list | tuple):
        raise ConfigError(f"{path}: must be a list, not {_kind(value)}")
    return value


def _kind(value: object) -> str:
    return "null" if value is None else type(value).__name__
