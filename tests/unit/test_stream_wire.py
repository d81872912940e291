"""Stream assembly keeps everything the API sends (SPEC §3; the real wire's block types)."""

from __future__ import annotations

import itertools
from typing import Any

from fsm_agent.core.messages import (
    AssistantMessage,
    Message,
    OpaqueBlock,
    ServerToolUseBlock,
    SystemMessage,
    ToolUseBlock,
    Usage,
)
from fsm_agent.core.stream import NOTICE_SUBTYPE, StreamAssembler


def _assembler() -> StreamAssembler:
    counter = itertools.count()
    return StreamAssembler(request_id="r1", model="m", new_uuid=lambda: f"u{next(counter)}")


def _start(**usage: Any) -> dict[str, Any]:
    return {
        "type": "message_start",
        "message": {"id": "msg_1", "model": "m", "usage": {"input_tokens": 5, **usage}},
    }


def _block(index: int, block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": block}


def _delta(index: int, delta: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": delta}


def _stop(index: int) -> dict[str, Any]:
    return {"type": "content_block_stop", "index": index}


def _feed(assembler: StreamAssembler, events: list[dict[str, Any]]) -> list[Message]:
    return [message for event in events for message in assembler.feed(event)]


def _blocks(messages: list[Message]) -> list[object]:
    return [b for m in messages if isinstance(m, AssistantMessage) for b in m.content]


def test_unknown_block_type_is_kept_as_received() -> None:
    """A block type the library does not model becomes an OpaqueBlock with its JSON, in order."""
    raw = {"type": "fallback", "from": {"model": "a"}, "to": {"model": "b"}, "trigger": None}
    blocks = _blocks(_feed(_assembler(), [_start(), _block(0, raw), _stop(0)]))
    assert blocks == [OpaqueBlock(data=raw)]
    assert isinstance(blocks[0], OpaqueBlock)
    assert list(blocks[0].data) == ["type", "from", "to", "trigger"]


def test_a_delta_named_for_its_opaque_block_sets_its_fields() -> None:
    """compaction_delta fills a compaction block's content and encrypted_content."""
    events = [
        _start(),
        _block(0, {"type": "compaction", "content": None, "encrypted_content": None}),
        _delta(0, {"type": "compaction_delta", "content": "Summary.", "encrypted_content": "Ep"}),
        _stop(0),
    ]
    (block,) = _blocks(_feed(_assembler(), events))
    assert block == OpaqueBlock(
        data={"type": "compaction", "content": "Summary.", "encrypted_content": "Ep"}
    )


def test_server_tool_use_and_mcp_tool_use_get_their_input() -> None:
    """input_json_delta builds the input of server_tool_use and of an opaque mcp_tool_use."""
    mcp = {
        "type": "mcp_tool_use",
        "id": "mcptoolu_1",
        "name": "echo",
        "server_name": "s",
        "input": {},
    }
    events = [
        _start(),
        _block(0, {"type": "server_tool_use", "id": "srv_1", "name": "web_search", "input": {}}),
        _delta(0, {"type": "input_json_delta", "partial_json": ""}),
        _delta(0, {"type": "input_json_delta", "partial_json": '{"query": "x"}'}),
        _stop(0),
        _block(1, mcp),
        _delta(1, {"type": "input_json_delta", "partial_json": '{"text": "hi"}'}),
        _stop(1),
    ]
    blocks = _blocks(_feed(_assembler(), events))
    assert blocks == [
        ServerToolUseBlock(id="srv_1", name="web_search", input={"query": "x"}),
        OpaqueBlock(data={**mcp, "input": {"text": "hi"}}),
    ]


def test_tool_use_caller_is_kept() -> None:
    """The caller of a tool_use (direct or programmatic) is kept on the block."""
    caller = {"type": "code_execution_20250825", "tool_id": "srvtoolu_9"}
    start = {"type": "tool_use", "id": "t1", "name": "Read", "input": {}, "caller": caller}
    (block,) = _blocks(_feed(_assembler(), [_start(), _block(0, start), _stop(0)]))
    assert block == ToolUseBlock(id="t1", name="Read", input={}, caller=caller)


def test_block_open_at_message_stop_is_closed_with_its_partial_input() -> None:
    """message_stop closes an open tool_use with the complete part of its input, and the
    call gets an input error instead of running on half its arguments."""
    assembler = _assembler()
    events = [
        _start(),
        _block(0, {"type": "tool_use", "id": "t1", "name": "Write", "input": {}}),
        _delta(
            0, {"type": "input_json_delta", "partial_json": '{"path": "a.txt", "lines": ["x", "y'}
        ),
        {
            "type": "message_delta",
            "delta": {"stop_reason": "max_tokens"},
            "usage": {"output_tokens": 9},
        },
        {"type": "message_stop"},
    ]
    out = _feed(assembler, events)
    assert _blocks(out) == [
        ToolUseBlock(id="t1", name="Write", input={"path": "a.txt", "lines": ["x"]})
    ]
    assert "t1" in assembler.tool_input_errors
    assert any(isinstance(m, SystemMessage) and m.subtype == NOTICE_SUBTYPE for m in out)
    assert assembler.truncated_reason() is None


def test_usage_keeps_every_field_and_stop_details_are_kept() -> None:
    """Usage beyond the four counters and message_delta's stop_details survive assembly."""
    assembler = _assembler()
    events = [
        _start(cache_creation={"ephemeral_5m_input_tokens": 3}, service_tier="standard"),
        _block(0, {"type": "text", "text": ""}),
        _stop(0),
        {
            "type": "message_delta",
            "delta": {
                "stop_reason": "refusal",
                "stop_details": {"type": "refusal", "category": "cyber"},
            },
            "usage": {
                "output_tokens": 2,
                "server_tool_use": {"web_search_requests": 1},
                "inference_geo": "eu",
            },
        },
        {"type": "message_stop"},
    ]
    (message,) = _feed(assembler, events)
    assert isinstance(message, AssistantMessage)
    final = assembler.finalized(message)
    assert final.stop_details == {"type": "refusal", "category": "cyber"}
    assert final.usage == Usage(
        input_tokens=5,
        output_tokens=2,
        cache_creation={"ephemeral_5m_input_tokens": 3},
        server_tool_use={"web_search_requests": 1},
        service_tier="standard",
        extra={"inference_geo": "eu"},
    )


def test_usage_sums_keep_the_breakdowns() -> None:
    """Adding two usages adds the counters and the per-kind tables, key by key."""
    one = Usage(input_tokens=1, cache_creation={"a": 1}, server_tool_use={"web_search_requests": 1})
    two = Usage(input_tokens=2, cache_creation={"a": 2, "b": 1}, service_tier="priority")
    total = one + two
    assert total.input_tokens == 3
    assert total.cache_creation == {"a": 3, "b": 1}
    assert total.server_tool_use == {"web_search_requests": 1}
    assert total.service_tier == "priority"
