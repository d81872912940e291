"""Compaction under any overflow pattern: bounded per user turn, never a loop, pairing kept."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from fsm_agent.core.agent_core import AgentCore
from fsm_agent.core.config import LoopConfig
from fsm_agent.testing.invariants import check_run
from fsm_agent.testing.scenario import parse_scenario
from fsm_agent.testing.strategies import tool_specs_for
from fsm_agent.testing.world import ToolScript, World, WorldRun, prompt

_COMPACTIONS = {"autocompact_done", "reactive_compact_retry"}

# Windows whose autocompact threshold is 5 tokens (even a summary is over it: the context
# refills at once), 10,000 and 167,000 tokens.
_WINDOWS = (33_005, 43_000, 200_000)


def _steps() -> st.SearchStrategy[list[dict[str, Any]]]:
    """Model turns that each ask for a tool with a reported context size, and refusals."""
    tool_turn = st.sampled_from([100, 9_000, 15_000, 25_000, 190_000]).map(
        lambda tokens: {
            "content": [{"tool_use": {"name": "Read", "input": {"arg": "x"}}}],
            "usage": {"input_tokens": tokens, "output_tokens": 10},
        }
    )
    refused = st.just({"error": {"kind": "prompt_too_long"}})
    return st.lists(st.one_of(tool_turn, tool_turn, refused), min_size=1, max_size=14)


@given(
    steps=_steps(),
    compactions=st.lists(st.booleans(), max_size=8),
    window=st.sampled_from(_WINDOWS),
    cap=st.integers(min_value=1, max_value=4),
    reactive=st.booleans(),
)
def test_compactions_per_user_turn_are_bounded(
    steps: list[dict[str, Any]], compactions: list[bool], window: int, cap: int, reactive: bool
) -> None:
    """However the context overflows, a user turn compacts at most max_compactions_per_turn
    times, never three times without a model response between, and every invariant holds."""
    config = LoopConfig(
        context_window=window, max_compactions_per_turn=cap, reactive_compact=reactive
    )
    core = AgentCore(config=config, tools=tool_specs_for(["Read"]))
    world = World(
        scenario=parse_scenario({"steps": [*steps, {"content": [{"text": "done"}]}]}),
        tools={"Read": ToolScript()},
        compactions=tuple(compactions),
    )
    run = WorldRun(core.feed, world, prompt("hi"))
    run.run()
    taken = [t.name for _, step in run.steps for t in step.transitions]
    assert sum(name in _COMPACTIONS for name in taken) <= cap
    assert check_run(core, run.steps, config, model_steps=len(steps) + 1) == []
