"""Reader fuzz: whatever bytes a trace file holds, reading it raises only TraceError subclasses.

Record → replay and mutation properties over generated core runs belong here too, once the
core's run strategies exist (see the trace module's hand-off notes).
"""

from __future__ import annotations

import contextlib
import io
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st
from json_paths import json_paths

from fsm_agent.core.config import LoopConfig
from fsm_agent.core.tool_spec import ToolSpec
from fsm_agent.errors import TraceError
from fsm_agent.trace.reader import read_trace
from fsm_agent.trace.writer import TraceWriter

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
KEYS = (
    "record",
    "seq",
    "event",
    "effect",
    "type",
    "machine",
    "name",
    "source",
    "dest",
    "call_id",
    "terminal",
    "usage",
    "messages",
    "request_id",
    "schema",
    "config",
    "tools",
)
TAGS = (
    "header",
    "event",
    "transition",
    "effect",
    "end",
    "TurnStarted",
    "ModelStreamEvent",
    "AbortRequested",
    "CallModel",
    "RunToolStep",
    "user",
    "text",
)
record_like = st.dictionaries(
    st.sampled_from(KEYS) | st.text(max_size=6),
    json_values | st.sampled_from(TAGS) | st.integers(0, 5),
    max_size=6,
)


def _header() -> bytes:
    buffer = io.BytesIO()
    TraceWriter(buffer, config=LoopConfig(), tools=(ToolSpec(name="Read"),), table_digest="d")
    return buffer.getvalue()


HEADER = _header()


def _read(content: bytes) -> None:
    with contextlib.suppress(TraceError):
        read_trace(io.BytesIO(content))
    with contextlib.suppress(TraceError):
        read_trace(io.BytesIO(content), allow_truncated=True)


@settings(max_examples=300)
@given(st.binary(max_size=300))
def test_arbitrary_bytes_raise_only_trace_errors(content: bytes) -> None:
    """Arbitrary bytes, alone or after a valid header, give a Trace or a TraceError."""
    _read(content)
    _read(HEADER + content)


@settings(max_examples=300)
@given(st.lists(json_values | record_like, max_size=5), st.booleans())
def test_arbitrary_json_lines_raise_only_trace_errors(lines: list[Any], cut: bool) -> None:
    """Arbitrary JSON lines (record-shaped or not) after a header never escape as other errors."""
    content = HEADER + b"".join(orjson.dumps(line) + b"\n" for line in lines)
    if cut and lines:
        content = content[:-3]
    _read(content)


@settings(max_examples=200)
@given(st.dictionaries(st.sampled_from(KEYS), json_values | st.sampled_from(TAGS), max_size=8))
def test_arbitrary_headers_raise_only_trace_errors(header: dict[str, Any]) -> None:
    """A first line of any shape gives a clean TraceError."""
    _read(orjson.dumps(header) + b"\n")
    _read(orjson.dumps({**header, "record": "header", "schema": 1}) + b"\n")


def _recorded_lines() -> list[dict[str, Any]]:
    from fsm_agent.core.agent_core import AgentCore
    from fsm_agent.testing.scenario import load_shipped_scenario
    from fsm_agent.testing.world import World, WorldRun, prompt
    from fsm_agent.trace.writer import TracingCore

    buffer = io.BytesIO()
    config, tools = LoopConfig(), (ToolSpec(name="Read"),)
    writer = TraceWriter(buffer, config=config, tools=tools)
    core = TracingCore(AgentCore(config=config, tools=tools), writer)
    scenario = load_shipped_scenario("tool_then_reply")
    WorldRun(core.feed, World(scenario=scenario), prompt("hi")).run()
    return [orjson.loads(line) for line in buffer.getvalue().splitlines()]


RECORDED = _recorded_lines()


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_mutated_real_traces_raise_only_trace_errors(data: st.DataObject) -> None:
    """Any one field of a real trace replaced by any JSON value: read and replay fail cleanly."""
    from fsm_agent.trace.replay import replay

    records = [orjson.loads(orjson.dumps(r)) for r in RECORDED]
    line = data.draw(st.integers(0, len(records) - 1))
    paths = json_paths(records[line])
    path = data.draw(st.sampled_from(paths[1:]))  # not the whole line
    value = data.draw(json_values | st.sampled_from(TAGS))
    target = records[line]
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    content = b"".join(orjson.dumps(r) + b"\n" for r in records)
    _read(content)
    with contextlib.suppress(TraceError):
        replay(read_trace(io.BytesIO(content)))
