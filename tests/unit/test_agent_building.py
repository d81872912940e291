"""Building an ``Agent`` checks its parts at once: a bad part is refused before any run."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from fsm_agent import Agent, ConfigError, LoopConfig, PermissionPolicy, tool
from fsm_agent.runtime.models import ModelRequest


class SilentModel:
    """A model that must never be asked: these agents are built, never run."""

    name = "claude-test"

    async def stream(self, request: ModelRequest) -> AsyncIterator[dict[str, Any]]:
        raise AssertionError("an agent that failed to build was run")
        yield {}


@tool(read_only=True)
async def echo(text: str) -> str:
    """Echo the text."""
    return text


def _bad_hooks_file(tmp_path: Path) -> Path:
    settings = tmp_path / "settings.json"
    bad = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x", "timeout": 0}]}]}}
    settings.write_text(json.dumps(bad), encoding="utf-8")
    return settings


BAD_PARTS: dict[str, tuple[Callable[[Path], dict[str, Any]], str]] = {
    "deny rule for a missing tool": (
        lambda _: {"permissions": PermissionPolicy(deny={"Write"})},
        r"no tool 'Write'",
    ),
    "malformed hook in a settings file": (
        lambda tmp_path: {"settings": _bad_hooks_file(tmp_path)},
        r"hooks.Stop\[0\].hooks\[0\].timeout",
    ),
    "settings file that does not exist": (
        lambda tmp_path: {"settings": tmp_path / "absent.json"},
        "does not exist",
    ),
    "attachment provider that is not one": (
        lambda _: {"attachments": [object()]},
        "attachment",
    ),
    "tool provider that is not one": (
        lambda _: {"tool_providers": [object()]},
        "provider",
    ),
    "plain function among the tools": (
        lambda _: {"tools": [echo, print]},
        r"tools\[1\] is not a tool: builtin_function_or_method print",
    ),
    "async function not made a tool": (
        lambda _: {"tools": [_undecorated]},
        r"tools\[0\] is not a tool: .*decorate _undecorated with @tool",
    ),
    "tool named by its name": (
        lambda _: {"tools": ["Read"]},
        r"tools\[0\] is not a tool: str 'Read'",
    ),
    "config given as a dict": (
        lambda _: {"config": {"max_turns": 2}},
        r"config must be a LoopConfig\(...\) or None, not dict",
    ),
    "config given as the class": (
        lambda _: {"config": LoopConfig},
        r"config must be a LoopConfig\(...\) or None, not the class itself",
    ),
    "hooks given as a dict": (
        lambda _: {"hooks": {"stop": []}},
        r"hooks must be a Hooks\(...\) or None, not dict",
    ),
    "permissions given as a dict": (
        lambda _: {"permissions": {"deny": ["Bash"]}},
        r"permissions must be a PermissionPolicy\(...\) or None, not dict",
    ),
}


async def _undecorated(text: str) -> str:
    return text


@pytest.mark.parametrize("case", sorted(BAD_PARTS))
def test_a_bad_part_is_refused_when_the_agent_is_built(case: str, tmp_path: Path) -> None:
    """Each bad part of an agent raises a ConfigError naming it from ``Agent(...)`` itself,
    not from the first run (the run machinery is loaded later, issue 10)."""
    arguments, message = BAD_PARTS[case]
    with pytest.raises(ConfigError, match=message):
        Agent(**{"model": SilentModel(), "tools": [echo], "trace": False, **arguments(tmp_path)})
