"""A long run holds what its next turn needs, not every turn it has had (issue 10): finished
tasks, tool contexts and request histories were kept for the whole run, so memory and the
garbage collector's full passes grew with every turn."""

from __future__ import annotations

import asyncio
import gc

from fsm_agent.runtime.agent import Agent, TransitionUpdate
from fsm_agent.runtime.tool import ToolContext, tool
from fsm_agent.testing.scenario import ScriptedModel, parse_scenario

TURNS = 120


@tool(name="Echo", description="Say it back.", concurrency_safe=True, read_only=True)
async def echo(*, text: str) -> str:
    return text


def live(kind: type) -> int:
    """Objects of ``kind`` the garbage collector tracks right now."""
    return sum(type(item) is kind for item in gc.get_objects())


def test_tasks_and_tool_contexts_do_not_pile_up_over_a_long_run() -> None:
    """At turn 20 and at turn 120 of one run (a tool call each turn), the driver holds the
    same few tasks and tool contexts."""
    step = {"content": [{"text": "On it."}, {"tool_use": {"name": "Echo", "input": {"text": "x"}}}]}
    scenario = parse_scenario({"steps": [step] * TURNS + [{"content": [{"text": "done"}]}]})
    agent = Agent(model=ScriptedModel(scenario), tools=[echo], trace=False)
    counts: dict[int, tuple[int, int]] = {}

    async def run() -> None:
        turn = 0
        async for update in agent.stream("go"):
            if isinstance(update, TransitionUpdate) and update.transition.name == "next_turn":
                turn += 1
                if turn in (20, TURNS):
                    counts[turn] = (live(asyncio.Task), live(ToolContext))

    asyncio.run(run())
    assert counts[TURNS] == counts[20]
    tasks, contexts = counts[TURNS]
    assert tasks < 10
    assert contexts <= 1
