"""A core restored from a checkpoint goes on exactly as the core it was taken from."""

from __future__ import annotations

import io

import orjson
from hypothesis import given
from hypothesis import strategies as st

from fsm_agent.core import codec
from fsm_agent.core.agent_core import AgentCore
from fsm_agent.core.checkpoint import CoreCheckpoint
from fsm_agent.core.config import LoopConfig
from fsm_agent.core.events import Event
from fsm_agent.core.step import Step
from fsm_agent.testing.strategies import loop_configs, tool_specs_for, worlds
from fsm_agent.testing.world import World, WorldRun, prompt
from fsm_agent.trace.writer import TraceWriter, TracingCore

SPECS = tool_specs_for()


class _Continuing:
    """Feeds a traced core, and at every request boundary swaps it for one restored from a
    checkpoint that went through JSON (as a continued Temporal run gets it)."""

    def __init__(self, config: LoopConfig, writer: TraceWriter) -> None:
        self.config = config
        self.writer = writer
        self.core = AgentCore(config=config, tools=SPECS)
        self.restores = 0

    def feed(self, event: Event) -> Step:
        step = TracingCore(self.core, self.writer).feed(event)
        if self.core.at_request_boundary:
            sent = orjson.dumps(codec.converter().unstructure(self.core.checkpoint()))
            checkpoint = codec.converter().structure(orjson.loads(sent), CoreCheckpoint)
            self.core = AgentCore.restore(checkpoint, config=self.config, tools=SPECS)
            self.restores += 1
        return step


def _run(config: LoopConfig, world: World, choices: list[int], *, restoring: bool) -> bytes:
    buffer = io.BytesIO()
    writer = TraceWriter(buffer, config=config, tools=SPECS)
    if restoring:
        feed = _Continuing(config, writer).feed
    else:
        feed = TracingCore(AgentCore(config=config, tools=SPECS), writer).feed
    picks = iter(choices)
    WorldRun(feed, world, prompt("go")).run(lambda: next(picks, 0), limit=5_000)
    return buffer.getvalue()


@given(config=loop_configs(), world=worlds(), choices=st.lists(st.integers(0, 7), max_size=60))
def test_restoring_at_every_request_gives_the_same_trace(
    config: LoopConfig, world: World, choices: list[int]
) -> None:
    """Swapping the core for its restored checkpoint at every model request changes no byte
    of the trace: the same transitions, effects, ids, usage and terminal."""
    assert _run(config, world, choices, restoring=True) == _run(
        config, world, choices, restoring=False
    )
