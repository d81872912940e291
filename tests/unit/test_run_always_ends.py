"""Inputs that used to kill a run: each now ends it with its ``end`` record and every tool_use
answered, and the trace it leaves replays (issue 8, "A run always ends with its end record")."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from test_agent_scripted import results_of

from fsm_agent.core.config import LoopConfig
from fsm_agent.errors import UsageError
from fsm_agent.runtime.agent import Agent, RunResult
from fsm_agent.runtime.models import ModelRequest
from fsm_agent.runtime.tool import Tool, ToolOutput, tool
from fsm_agent.toolbox import Glob, Grep
from fsm_agent.trace.json_limits import TOO_DEEP
from fsm_agent.trace.reader import read_trace
from fsm_agent.trace.replay import replay

CONFIG = LoopConfig(retry_base_ms=1, retry_cap_ms=2)


def start(message_id: str) -> dict[str, Any]:
    return {
        "type": "message_start",
        "message": {
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "model": "m",
            "content": [],
            "usage": {"input_tokens": 1, "output_tokens": 1},
        },
    }


def tool_call(name: str, input_json: str, *, output_tokens: int = 5) -> list[Any]:
    """One response asking for one tool, its input streamed as ``input_json``."""
    block = {"type": "tool_use", "id": "toolu_1", "name": name, "input": {}}
    return [
        start("msg_1"),
        {"type": "content_block_start", "index": 0, "content_block": block},
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": input_json},
        },
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use"},
            "usage": {"output_tokens": output_tokens},
        },
        {"type": "message_stop"},
    ]


FINAL = [
    start("msg_2"),
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "ok"}},
    {"type": "content_block_stop", "index": 0},
    {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}},
    {"type": "message_stop"},
]


class RawModel:
    """Plays raw event objects as given (the scripted model only produces valid ones)."""

    name = "raw-model"

    def __init__(self, *responses: list[Any]) -> None:
        self.responses = [*responses, FINAL]

    async def stream(self, request: ModelRequest) -> AsyncIterator[dict[str, Any]]:
        for raw in self.responses.pop(0):
            yield raw


def run(tmp_path: Path, model: RawModel, tools: list[Tool[Any]]) -> RunResult:
    agent = Agent(model=model, tools=tools, trace=tmp_path / "t.jsonl", cwd=tmp_path, config=CONFIG)
    return asyncio.run(agent.run("go"))


def assert_ends_and_replays(result: RunResult) -> None:
    assert result.trace_path is not None
    trace = read_trace(result.trace_path)
    assert trace.records[-1].kind == "end"
    assert replay(result.trace_path).terminal == result.terminal


@tool(name="Echo", description="Returns a text with a lone surrogate.")
async def surrogate_text(*, x: Any = None) -> str:
    return "caf\udce9"


def test_a_tool_returning_a_lone_surrogate_ends_the_run(tmp_path: Path) -> None:
    """A tool result holding a lone surrogate reaches the model escaped; the run completes."""
    result = run(tmp_path, RawModel(tool_call("Echo", '{"x": 1}')), [surrogate_text])
    assert result.terminal == "completed"
    assert results_of(result)["toolu_1"].content == "caf\\udce9"
    assert_ends_and_replays(result)


@pytest.mark.parametrize(
    ("tool_name", "tool_input"),
    [("Glob", '{"pattern": "**/*.txt"}'), ("Grep", '{"pattern": "hello"}')],
)
def test_a_file_name_that_is_not_utf8_is_listed_escaped(
    tmp_path: Path, tool_name: str, tool_input: str
) -> None:
    """Glob and Grep list ``caf\\xe9.txt`` with its odd byte escaped; the run completes."""
    (tmp_path / "g").mkdir()
    descriptor = os.open(os.fsencode(tmp_path / "g") + b"/caf\xe9.txt", os.O_WRONLY | os.O_CREAT)
    os.write(descriptor, b"hello\n")
    os.close(descriptor)
    result = run(tmp_path, RawModel(tool_call(tool_name, tool_input)), [Glob(), Grep()])
    assert result.terminal == "completed"
    content = results_of(result)["toolu_1"].content
    assert isinstance(content, str)
    assert "caf\\xe9.txt" in content
    assert_ends_and_replays(result)


@tool(name="Take", description="Takes anything.")
async def take_anything(*, x: Any = None) -> str:
    return "taken"


def test_a_tool_input_nested_too_deep_ends_the_run(tmp_path: Path) -> None:
    """A tool input nested 600 deep runs; the trace cuts it with a marker and still replays."""
    deep = '{"x": ' + "[" * 600 + "]" * 600 + "}"
    result = run(tmp_path, RawModel(tool_call("Take", deep)), [take_anything])
    assert result.terminal == "completed"
    assert results_of(result)["toolu_1"].content == "taken"
    assert result.trace_path is not None
    assert TOO_DEEP.encode() in result.trace_path.read_bytes()
    assert_ends_and_replays(result)


def test_usage_past_64_bits_is_a_model_error_not_a_crash(tmp_path: Path) -> None:
    """A usage counter past 64 bits is a named model error; the trace ends and replays."""
    response = tool_call("Take", '{"x": 1}', output_tokens=2**70)
    result = run(tmp_path, RawModel(response), [take_anything])
    assert result.terminal == "model_error"
    results_of(result)
    assert_ends_and_replays(result)


def test_a_model_event_that_is_not_an_object_is_a_model_error(tmp_path: Path) -> None:
    """A model yielding a list instead of an event object ends in model_error, traced."""
    result = run(tmp_path, RawModel([["not", "an", "event"]]), [take_anything])
    assert result.terminal == "model_error"
    assert_ends_and_replays(result)


@tool(name="Leak", description="Returns a context update the trace cannot hold.")
async def leaky(*, x: Any = None) -> ToolOutput:
    return ToolOutput(content="done", context_update={"handle": object()})


def test_a_driver_fault_still_writes_the_end_record(tmp_path: Path) -> None:
    """A fault in the driver aborts through the core and ends the trace naming the fault."""
    agent = Agent(
        model=RawModel(tool_call("Leak", '{"x": 1}')),
        tools=[leaky],
        trace=tmp_path / "t.jsonl",
        cwd=tmp_path,
        config=CONFIG,
    )
    with pytest.raises(UsageError, match="cannot be written"):
        asyncio.run(agent.run("go"))
    trace = read_trace(tmp_path / "t.jsonl")
    end = trace.records[-1]
    assert end.kind == "end"
    assert end.data["terminal"] == "aborted_tools"
    assert end.data["fault"].startswith("UsageError: ")
    assert replay(tmp_path / "t.jsonl").terminal == "aborted_tools"
