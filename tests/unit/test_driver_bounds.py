"""Default bounds on what the driver awaits (issue 8, "Bounded tools"), and config types.

A tool call, a Python hook and a permission callback that never finish each end as a named
outcome in the trace, and the run goes on; ``LoopConfig`` refuses values of the wrong type.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from test_agent_scripted import results_of
from test_run_always_ends import RawModel, tool_call

from fsm_agent.core import texts
from fsm_agent.core.config import LoopConfig
from fsm_agent.errors import ConfigError
from fsm_agent.runtime.agent import Agent, RunResult
from fsm_agent.runtime.hooks import HookInput, Hooks
from fsm_agent.runtime.permissions import PermissionPolicy, PermissionRequest
from fsm_agent.runtime.tool import Tool, tool
from fsm_agent.toolbox import Write
from fsm_agent.trace.reader import read_trace
from fsm_agent.trace.replay import replay

FAST = {"retry_base_ms": 1, "retry_cap_ms": 2}


@tool(name="Hang", description="Never finishes.")
async def hang(*, x: Any = None) -> str:
    await asyncio.sleep(3_600)
    return "never"


def run(tmp_path: Path, name: str, tools: list[Tool[Any]], **options: Any) -> RunResult:
    config = LoopConfig(**FAST, **options.pop("config", {}))
    agent = Agent(
        model=RawModel(tool_call(name, '{"file_path": "n.txt", "content": "x"}')),
        tools=tools,
        trace=tmp_path / "t.jsonl",
        cwd=tmp_path,
        config=config,
        **options,
    )
    return asyncio.run(agent.run("go"))


def recorded(tmp_path: Path, event_type: str) -> list[dict[str, Any]]:
    """The recorded events of one type, from the run's trace."""
    events = [r.data["event"] for r in read_trace(tmp_path / "t.jsonl").of_kind("event")]
    return [event for event in events if event["type"] == event_type]


def test_a_tool_past_its_bound_is_answered_with_a_timeout_error(tmp_path: Path) -> None:
    """A call past tool_timeout_ms gets an error result saying so; the run completes."""
    hang_any: Tool[Any] = hang
    agent = Agent(
        model=RawModel(tool_call("Hang", "{}")),
        tools=[hang_any],
        trace=tmp_path / "t.jsonl",
        cwd=tmp_path,
        config=LoopConfig(**FAST, tool_timeout_ms=50),
    )
    result = asyncio.run(agent.run("go"))
    assert result.terminal == "completed"
    block = results_of(result)["toolu_1"]
    assert block.is_error
    assert "did not finish within 0.05 s" in str(block.content)
    assert replay(tmp_path / "t.jsonl").terminal == "completed"


async def slow_hook(hook_input: HookInput) -> None:
    await asyncio.sleep(3_600)


def test_a_python_hook_past_its_bound_is_stopped_with_a_warning(tmp_path: Path) -> None:
    """A PreToolUse hook past hook_timeout_ms is stopped; the warning is in the trace."""
    result = run(
        tmp_path,
        "Write",
        [Write()],
        config={"hook_timeout_ms": 50},
        hooks=Hooks(pre_tool_use=[slow_hook]),
        permissions=PermissionPolicy(allow={"Write"}),
    )
    assert result.terminal == "completed"
    assert (tmp_path / "n.txt").read_text(encoding="utf-8") == "x"
    outcomes = [event["outcome"] for event in recorded(tmp_path, "HooksFinished")]
    assert any(
        "slow_hook timed out after 0.05 s" in m for o in outcomes for m in o["system_messages"]
    )


async def never_answers(request: PermissionRequest) -> bool:
    await asyncio.sleep(3_600)
    return True


def test_a_permission_callback_past_its_bound_denies(tmp_path: Path) -> None:
    """A permission callback past permission_timeout_ms is a denial with a named reason."""
    result = run(
        tmp_path,
        "Write",
        [Write()],
        config={"permission_timeout_ms": 50},
        permissions=PermissionPolicy(ask=never_answers),
    )
    assert result.terminal == "completed"
    assert not (tmp_path / "n.txt").exists()
    assert results_of(result)["toolu_1"].is_error
    decided = recorded(tmp_path, "PermissionDecided")
    assert decided[0]["behavior"] == "deny"
    assert decided[0]["reason"] == texts.PERMISSION_TIMED_OUT


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("max_turns", "5"),
        ("max_turns", 5.0),
        ("max_turns", True),
        ("max_output_tokens", "32000"),
        ("retry_base_ms", 0.5),
        ("tool_timeout_ms", "600000"),
        ("autocompact", 1),
        ("streaming_tool_execution", "yes"),
        ("model", 4),
        ("fallback_model", 4.5),
    ],
)
def test_config_refuses_a_value_of_the_wrong_type(field: str, value: object) -> None:
    """A string, float or bool where an int belongs (and so on) is a ConfigError naming it."""
    with pytest.raises(ConfigError, match=f"^{field} must be "):
        LoopConfig(**{field: value})


def test_config_bounds_may_be_switched_off() -> None:
    """None disables a driver bound; the defaults bound every callable."""
    assert LoopConfig(tool_timeout_ms=None, hook_timeout_ms=None).tool_timeout_ms is None
    defaults = LoopConfig()
    assert defaults.tool_timeout_ms and defaults.hook_timeout_ms and defaults.permission_timeout_ms
