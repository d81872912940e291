"""Blocks the loop does not run itself go back to the API exactly as they came.

A response with a server tool call, its result, a block type no SDK knows, cited text and a
local tool call is served as a raw SSE body; the loop runs the local tool and asks again. The
second request must carry every block of the first response, the opaque ones byte for byte.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from fsm_agent.core.config import LoopConfig
from fsm_agent.runtime.agent import Agent
from fsm_agent.runtime.models import AnthropicModel
from fsm_agent.runtime.tool import tool
from fsm_agent.testing.fake_server import FakeAnthropicServer
from fsm_agent.testing.scenario import parse_scenario

MODEL = "claude-wire"

SEARCH_RESULT = {
    "type": "web_search_tool_result",
    "tool_use_id": "srvtoolu_1",
    "content": [
        {
            "url": "https://example.com/weather",
            "type": "web_search_result",
            "title": "Weather",
            "encrypted_content": "EqQBCioIBxgCIiQ4",
            "page_age": None,
        }
    ],
}
# A block type from the future, its keys in no particular order.
NOVEL_BLOCK = {"zeta": [3, 2, 1], "type": "novel_block", "alpha": {"b": 1, "a": 2}}
CITATION = {
    "type": "web_search_result_location",
    "cited_text": "Sunny, 21 °C.",
    "url": "https://example.com/weather",
    "title": "Weather",
    "encrypted_index": "Eo8BCioIBxgC",
}


def _frame(event: dict[str, Any]) -> str:
    return f"event: {event['type']}\ndata: {json.dumps(event, separators=(',', ':'))}\n\n"


def _body() -> str:
    def start(index: int, block: dict[str, Any]) -> dict[str, Any]:
        return {"type": "content_block_start", "index": index, "content_block": block}

    def delta(index: int, body: dict[str, Any]) -> dict[str, Any]:
        return {"type": "content_block_delta", "index": index, "delta": body}

    def stop(index: int) -> dict[str, Any]:
        return {"type": "content_block_stop", "index": index}

    events: list[dict[str, Any]] = [
        {
            "type": "message_start",
            "message": {
                "id": "msg_wire",
                "type": "message",
                "role": "assistant",
                "model": MODEL,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": 50, "output_tokens": 1},
            },
        },
        start(
            0, {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}
        ),
        delta(0, {"type": "input_json_delta", "partial_json": ""}),
        delta(0, {"type": "input_json_delta", "partial_json": '{"query": "weather"}'}),
        stop(0),
        start(1, SEARCH_RESULT),
        stop(1),
        start(2, NOVEL_BLOCK),
        stop(2),
        start(3, {"citations": [], "type": "text", "text": ""}),
        delta(3, {"type": "citations_delta", "citation": CITATION}),
        delta(3, {"type": "text_delta", "text": "It is sunny."}),
        stop(3),
        start(4, {"type": "tool_use", "id": "toolu_1", "name": "note", "input": {}}),
        delta(4, {"type": "input_json_delta", "partial_json": '{"text": "sunny"}'}),
        stop(4),
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use", "stop_sequence": None},
            "usage": {"output_tokens": 30, "server_tool_use": {"web_search_requests": 1}},
        },
        {"type": "message_stop"},
    ]
    return "".join(_frame(event) for event in events)


@tool(concurrency_safe=True, read_only=True)
async def note(text: str) -> str:
    """Write a note down."""
    return f"noted: {text}"


def test_second_request_carries_server_and_opaque_blocks_back_exactly() -> None:
    """Server-tool blocks, unknown blocks and citations are sent back as received."""
    scenario = parse_scenario({"steps": [{"sse": _body()}, {"content": [{"text": "Done."}]}]})
    with FakeAnthropicServer(scenario) as server:
        agent = Agent(
            model=AnthropicModel(name=MODEL, api_key="sk-test", base_url=server.base_url),
            tools=[note],
            config=LoopConfig(model=MODEL, max_retries=0),
            trace=False,
        )
        result = asyncio.run(asyncio.wait_for(agent.run("What is the weather?"), 20))
        second = server.message_requests[1].body

    assert result.terminal == "completed"
    assistant = second["messages"][1]
    assert assistant["role"] == "assistant"
    assert assistant["content"] == [
        {
            "type": "server_tool_use",
            "id": "srvtoolu_1",
            "name": "web_search",
            "input": {"query": "weather"},
        },
        SEARCH_RESULT,
        NOVEL_BLOCK,
        {"type": "text", "text": "It is sunny.", "citations": [CITATION]},
        {"type": "tool_use", "id": "toolu_1", "name": "note", "input": {"text": "sunny"}},
    ]
    # Byte for byte, key order included, for the blocks kept as received.
    for sent, received in (
        (assistant["content"][1], SEARCH_RESULT),
        (assistant["content"][2], NOVEL_BLOCK),
    ):
        assert json.dumps(sent) == json.dumps(received)
    assert second["messages"][2]["content"][0]["tool_use_id"] == "toolu_1"


def test_pause_turn_sends_the_paused_server_call_back_as_the_last_message() -> None:
    """A paused turn goes back with its unfinished server tool call as the last message, and
    the API's continuation completes the run."""
    paused = {
        "content": [
            {"text": "Let me search."},
            {"server_tool_use": {"id": "srvtoolu_9", "name": "web_search", "input": {"q": "x"}}},
        ],
        "stop_reason": "pause_turn",
    }
    result_block = {**SEARCH_RESULT, "tool_use_id": "srvtoolu_9"}
    resumed = {"content": [{"block": result_block}, {"text": "Found it."}]}
    with FakeAnthropicServer(parse_scenario({"steps": [paused, resumed]})) as server:
        agent = Agent(
            model=AnthropicModel(name=MODEL, api_key="sk-test", base_url=server.base_url),
            config=LoopConfig(model=MODEL, max_retries=0),
            trace=False,
        )
        result = asyncio.run(asyncio.wait_for(agent.run("Search, please."), 20))
        second = server.message_requests[1].body

    assert result.terminal == "completed"
    last = second["messages"][-1]
    assert last["role"] == "assistant"
    assert [block["type"] for block in last["content"]] == ["text", "server_tool_use"]
    assert last["content"][1]["id"] == "srvtoolu_9"
