"""Prompt-cache breakpoints keep what the previous request cached byte-identical (issue 10)."""

from __future__ import annotations

import itertools
from typing import Any

import orjson
from hypothesis import given

from fsm_agent.core import effects as fx
from fsm_agent.core import events as ev
from fsm_agent.core.agent_core import AgentCore
from fsm_agent.core.config import LoopConfig
from fsm_agent.core.prompt_cache import (
    CACHE_LOOKBACK_BLOCKS,
    MAX_BREAKPOINTS,
    cache_breakpoints,
    count_breakpoints,
)
from fsm_agent.core.step import Step
from fsm_agent.testing.strategies import DEFAULT_TOOLS, loop_configs, tool_specs_for, worlds
from fsm_agent.testing.world import World, WorldRun, prompt

_TOOLS = [{"name": name, "description": name, "input_schema": {}} for name in DEFAULT_TOOLS]
_HISTORY_REPLACED = frozenset(
    {"autocompact_done", "reactive_compact_retry", "collapse_drain_retry"}
)

Request = tuple[Any, list[dict[str, Any]], list[dict[str, Any]]]


def _units(request: Request) -> tuple[list[bytes], list[int]]:
    """The request as the sequence the cache prefix runs over (tools, system, message blocks),
    each serialized without its mark, and the positions that carry a mark."""
    system, tools, messages = request
    parts: list[Any] = [*tools, *(system if isinstance(system, list) else [])]
    parts += [(m["role"], block) for m in messages for block in m["content"]]
    units: list[bytes] = []
    marks: list[int] = []
    for position, part in enumerate(parts):
        block = part[1] if isinstance(part, tuple) else part
        if "cache_control" in block:
            marks.append(position)
        unmarked = {k: v for k, v in block.items() if k != "cache_control"}
        role = part[0] if isinstance(part, tuple) else ""
        units.append(orjson.dumps([role, unmarked], option=orjson.OPT_SORT_KEYS))
    return units, marks


def _requests(config: LoopConfig, world: World) -> list[tuple[Request, bool]]:
    """Every request of a scripted run, and whether the history was replaced before it."""
    core = AgentCore(config=config, tools=tool_specs_for(DEFAULT_TOOLS))
    requests: list[tuple[Request, bool]] = []
    replaced = False

    def feed(event: ev.Event) -> Step:
        nonlocal replaced
        step = core.feed(event)
        replaced = replaced or any(t.name in _HISTORY_REPLACED for t in step.transitions)
        if any(isinstance(effect, fx.CallModel) for effect in step.effects):
            marked = cache_breakpoints(
                system="You help.", tools=_TOOLS, messages=core.api_messages()
            )
            requests.append((marked, replaced))
            replaced = False
        return step

    WorldRun(feed, world, prompt("go")).run()
    return requests


@given(config=loop_configs(), world=worlds())
def test_the_cached_prefix_is_byte_identical_in_the_next_request(
    config: LoopConfig, world: World
) -> None:
    """Without a compaction between them, a request starts with the bytes the previous one
    marked for caching and carries a mark where the API reads them: at the block where they
    end, or within the API's look-back after it (the previous end sits inside a merged last
    message when the reply in between was dropped)."""
    requests = _requests(config, world)
    for (previous, _), (current, replaced) in itertools.pairwise(requests):
        assert count_breakpoints(list(current)) <= MAX_BREAKPOINTS
        if replaced:
            continue
        before, before_marks = _units(previous)
        after, after_marks = _units(current)
        written = before_marks[-1]
        assert after[: written + 1] == before[: written + 1]
        assert any(0 <= mark - written <= CACHE_LOOKBACK_BLOCKS for mark in after_marks)
