"""Careless calls of ``Agent`` get a clear error naming what is wrong, not a failure deep
inside a run."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from fsm_agent.errors import ConfigError, UsageError
from fsm_agent.runtime.agent import Agent, RunResult
from fsm_agent.testing.scenario import ScriptedModel, parse_scenario
from fsm_agent.toolbox import default_tools


def scripted() -> ScriptedModel:
    return ScriptedModel(parse_scenario({"steps": [{"content": [{"text": "hi"}]}]}))


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({"model": "claude-sonnet"}, "model must be a Model"),
        ({"tools": None}, "tools must be a list of tools"),
        ({"tools": [*default_tools(), *default_tools()]}, "two tools are named 'Read'"),
        ({"trace": 123}, "trace must be a path, True, False or None"),
        ({"cwd": "no-such-folder"}, "is not a folder"),
    ],
)
def test_a_wrong_argument_is_a_config_error_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, arguments: dict[str, Any], named: str
) -> None:
    """A model that is a string, tools that are None or share a name, a trace of the wrong
    type and a cwd that is no folder are refused when the agent is made."""
    monkeypatch.chdir(tmp_path)
    values: dict[str, Any] = {"model": scripted(), "tools": [], "trace": False}
    with pytest.raises(ConfigError, match=named):
        Agent(**(values | arguments))


@pytest.mark.parametrize("prompt", [None, 42, [], ["not a message"]])
def test_a_prompt_that_is_no_text_nor_messages_is_a_usage_error(
    tmp_path: Path, prompt: Any
) -> None:
    """``run_sync(None)`` and friends say what a prompt must be."""
    agent = Agent(model=scripted(), tools=[], trace=False, cwd=tmp_path)
    with pytest.raises(UsageError, match="the prompt must be text"):
        agent.run_sync(prompt)


def test_run_sync_inside_an_event_loop_says_to_await_run(tmp_path: Path) -> None:
    """``run_sync`` called from async code is refused with the call to use instead."""
    agent = Agent(model=scripted(), tools=[], trace=False, cwd=tmp_path)

    async def inside() -> RunResult:
        return agent.run_sync("hi")

    with pytest.raises(UsageError, match=r"await agent\.run"):
        asyncio.run(inside())
