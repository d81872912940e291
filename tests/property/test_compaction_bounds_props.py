"""Compaction under any overflow pattern: bounded per user turn, never a loop, pairing kept."""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from fsm_agent.core import effects as fx
from fsm_agent.core.agent_core import AgentCore
from fsm_agent.core.config import LoopConfig
from fsm_agent.core.normalize import api_invariant_violations
from fsm_agent.runtime.response_clock import ResponseClock
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


# What the API's exact count may say (None: the count fails and the estimate decides).
_COUNTS = st.lists(st.sampled_from([None, 100, 12_000, 40_000, 250_000]), max_size=10)


@given(
    steps=_steps(),
    compactions=st.lists(st.booleans(), max_size=8),
    window=st.sampled_from(_WINDOWS),
    cap=st.integers(min_value=1, max_value=4),
    reactive=st.booleans(),
    counts=st.one_of(st.none(), _COUNTS),
)
def test_compactions_per_user_turn_are_bounded(
    *,
    steps: list[dict[str, Any]],
    compactions: list[bool],
    window: int,
    cap: int,
    reactive: bool,
    counts: list[int | None] | None,
) -> None:
    """However the context overflows (reported usage, refusals, or exact counts that say it
    is over), a user turn compacts at most max_compactions_per_turn times, never three times
    without a model response between, and every invariant holds."""
    config = LoopConfig(
        context_window=window,
        max_compactions_per_turn=cap,
        reactive_compact=reactive,
        count_tokens=counts is not None,
    )
    core = AgentCore(config=config, tools=tool_specs_for(["Read"]))
    world = World(
        scenario=parse_scenario({"steps": [*steps, {"content": [{"text": "done"}]}]}),
        tools={"Read": ToolScript()},
        compactions=tuple(compactions),
        token_counts=tuple(counts or ()),
    )
    run = WorldRun(core.feed, world, prompt("hi"))
    run.run()
    taken = [t.name for _, step in run.steps for t in step.transitions]
    assert sum(name in _COMPACTIONS for name in taken) <= cap
    assert check_run(core, run.steps, config, model_steps=len(steps) + 1) == []


# What a snip request may name: calls of the run, tagged messages, and ids that name nothing.
_SNIP_IDS = st.sampled_from(
    ["toolu_001", "toolu_002", "toolu_003", "toolu_005", "toolu_008", "prompt", "m4", "m9", "?"]
)


@given(
    steps=_steps(),
    size=st.sampled_from([10, 400, 900]),
    calls=st.integers(min_value=1, max_value=3),
    collapse=st.booleans(),
    hours=st.sampled_from([0.0, 3_600.0]),
    cap=st.integers(min_value=1, max_value=3),
    snips=st.lists(st.tuples(st.integers(0, 14), st.lists(_SNIP_IDS, max_size=4)), max_size=2),
)
def test_every_context_mechanism_keeps_tool_pairing(
    *,
    steps: list[dict[str, Any]],
    size: int,
    calls: int,
    collapse: bool,
    hours: float,
    cap: int,
    snips: list[tuple[int, list[str]]],
) -> None:
    """Budget, snip, time-based microcompact, staged collapse and compaction together, under
    any overflow pattern: every request is valid API input (each tool_use answered once, in
    the next message), compactions stay bounded, and every invariant holds."""
    config = LoopConfig(
        context_window=_WINDOWS[1],
        max_compactions_per_turn=cap,
        context_collapse=collapse,
        tool_result_budget_chars=1_000,
        time_based_microcompact=True,
        microcompact_keep_recent=1,
        snip=True,
    )
    core = AgentCore(config=config, tools=tool_specs_for(["Read", "Snip"]))
    # each tool turn asks for ``calls`` reads at once: their results share one message
    turns = [{**step, "content": step["content"] * calls} if "content" in step else step
             for step in steps]  # fmt: skip
    # the model asks for snips at generated points (the scripted Snip hands on what it names)
    for at, _ids in snips:
        turns.insert(min(at, len(turns)), {"content": [{"tool_use": {"name": "Snip"}}]})
    named = [name for _, ids in snips for name in ids]
    world = World(
        scenario=parse_scenario({"steps": [*turns, {"content": [{"text": "done"}]}]}),
        tools={
            "Read": ToolScript(content="r" * size),
            "Snip": ToolScript(safe=False, context_update={"snip": named}),
        },
    )
    ticks = itertools.count(start=0.0, step=hours)
    clock = ResponseClock(lambda: next(ticks))
    invalid: list[str] = []

    def feed(event: Any) -> Any:
        step = core.feed(clock.stamp(event))
        if any(isinstance(e, fx.CallModel) for e in step.effects):
            invalid.extend(api_invariant_violations(core.api_messages()))
        return step

    run = WorldRun(feed, world, prompt("hi"))
    run.run()
    assert invalid == []
    taken = [t.name for _, step in run.steps for t in step.transitions]
    assert sum(name in _COMPACTIONS for name in taken) <= cap
    tool_uses = calls * sum("usage" in step for step in steps) + len(snips)
    found = check_run(core, run.steps, config, model_steps=len(turns) + 1, tool_calls=tool_uses)
    assert found == []
