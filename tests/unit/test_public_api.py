"""What users get from ``fsm_agent``: every exported name resolves, and the run result and
updates carry what a caller needs (turns, duration, cost; each transition's own destination;
a retry backoff that can be replaced)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import fsm_agent
from fsm_agent import (
    Agent,
    HookOutcome,
    ModelPrice,
    PermissionAnswer,
    PermissionRequest,
    RetryScheduled,
    RunFinished,
    TransitionUpdate,
    Update,
)
from fsm_agent.core.messages import Usage
from fsm_agent.testing.scenario import ScriptedModel, parse_scenario
from fsm_agent.toolbox import default_tools

OVERLOADED_TWICE = {
    "steps": [
        {"error": {"kind": "overloaded"}},
        {"error": {"kind": "overloaded"}},
        {"content": [{"text": "fine"}], "usage": {"input_tokens": 1000, "output_tokens": 200}},
    ]
}


def test_every_public_name_resolves() -> None:
    """Each name in __all__ loads, including the types users return or receive."""
    for name in fsm_agent.__all__:
        assert getattr(fsm_agent, name) is not None, name
    for needed in (HookOutcome, PermissionAnswer, PermissionRequest, Update):
        assert needed is not None


def test_sleep_and_clock_are_replaceable_and_the_result_counts(tmp_path: Path) -> None:
    """Backoff goes through the given sleep; the result has turns, duration and cost."""
    slept: list[float] = []
    ticks = iter(range(1000))

    async def fake_sleep(seconds: float) -> None:
        slept.append(seconds)

    agent = Agent(
        model=ScriptedModel(parse_scenario(OVERLOADED_TWICE)),
        tools=default_tools(),
        cwd=tmp_path,
        trace=False,
        sleep=fake_sleep,
        clock=lambda: float(next(ticks)),
        price=ModelPrice(input=3.0, output=15.0),
    )

    async def go() -> list[Update]:
        return [update async for update in agent.stream("hi")]

    seen = asyncio.run(go())
    finished = seen[-1]
    assert isinstance(finished, RunFinished)
    result = finished.result
    assert len(slept) == 2 and all(seconds > 0 for seconds in slept)
    retries = [u for u in seen if isinstance(u, RetryScheduled)]
    assert [r.attempt for r in retries] == [2, 3]
    assert [r.delay_ms / 1000 for r in retries] == slept[:2]
    assert result.terminal == "completed" and result.turns == 1
    assert result.duration_s > 0
    assert result.cost_usd == ModelPrice(input=3.0, output=15.0).cost(result.usage)
    assert (
        ModelPrice(input=3.0, output=15.0).cost(
            Usage(input_tokens=1_000_000, output_tokens=1_000_000)
        )
        == 18.0
    )


def test_a_transition_update_carries_its_own_destination(tmp_path: Path) -> None:
    """Within a step of several transitions, each update names where its own transition went."""
    agent = Agent(
        model=ScriptedModel(parse_scenario({"steps": [{"content": [{"text": "hi"}]}]})),
        cwd=tmp_path,
        trace=False,
    )

    async def go() -> list[TransitionUpdate]:
        return [u async for u in agent.stream("hi") if isinstance(u, TransitionUpdate)]

    updates = asyncio.run(go())
    started = next(u for u in updates if u.transition.name == "iteration_started")
    assert started.dest == "preprocess"
    assert started.phase != "preprocess"  # the step went on; phase is where it ended
