"""The order in which tool results reach the loop (SPEC §5.2), in the cases that are easy to
get subtly wrong."""

from __future__ import annotations

from fsm_agent.core.agent_core import AgentCore
from fsm_agent.core.config import LoopConfig
from fsm_agent.core.messages import tool_results
from fsm_agent.testing.catalogue import TOOLS
from fsm_agent.testing.scenario import parse_scenario
from fsm_agent.testing.world import ToolScript, World, WorldRun, prompt


def result_order(calls: list[dict[str, object]], tools: dict[str, ToolScript]) -> list[str]:
    steps = [{"content": [{"tool_use": call} for call in calls]}, {"content": [{"text": "ok"}]}]
    core = AgentCore(config=LoopConfig(), tools=TOOLS)
    run = WorldRun(
        core.feed, World(scenario=parse_scenario({"steps": steps}), tools=tools), prompt("go")
    )
    assert run.run() == "completed"
    return [r.tool_use_id for m in core.transcript for r in tool_results(m)]


def test_an_unknown_tool_waits_behind_an_earlier_unsafe_call() -> None:
    """[Write (unsafe), Nope]: the unknown tool's instant error comes after Write's result,
    as in the reference, where Write is already running when Nope arrives."""
    order = result_order(
        [
            {"name": "Write", "input": {"file_path": "a", "content": "x"}},
            {"name": "Nope", "input": {}},
        ],
        {"Write": ToolScript(safe=False)},
    )
    assert order == ["toolu_001", "toolu_002"]


def test_a_finished_safe_call_does_not_wait_for_a_running_safe_one() -> None:
    """Among safe calls results come in completion order: a later read that finishes first
    is handed back first (SPEC §5.2, §11)."""
    steps = [
        {
            "content": [
                {"tool_use": {"name": "Read", "input": {"file_path": "slow"}}},
                {"tool_use": {"name": "Glob", "input": {"pattern": "*"}}},
            ]
        },
        {"content": [{"text": "ok"}]},
    ]
    core = AgentCore(config=LoopConfig(), tools=TOOLS)
    world = World(scenario=parse_scenario({"steps": steps}))
    run = WorldRun(core.feed, world, prompt("go"))
    # Drive everything but the Read's call result: answer the Glob's pending work first.
    while not run.done:
        keys = [p.key for p in run.pending]
        pick = next((i for i, k in enumerate(keys) if k != "toolu_001"), 0)
        run.advance(pick)
    order = [r.tool_use_id for m in core.transcript for r in tool_results(m)]
    assert order == ["toolu_002", "toolu_001"]
