"""Stream assembly from raw Messages-API events (SPEC §3)."""

from __future__ import annotations

import itertools
from typing import Any

import attrs
import pytest

from fsm_agent.core import texts
from fsm_agent.core.messages import (
    ApiErrorKind,
    ApiErrorMessage,
    AssistantMessage,
    Message,
    RedactedThinkingBlock,
    SystemMessage,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
    Usage,
)
from fsm_agent.core.stream import NOTICE_SUBTYPE, StreamAssembler
from fsm_agent.errors import ModelProtocolError


def _assembler(max_output_tokens: int = 0) -> StreamAssembler:
    counter = itertools.count()
    return StreamAssembler(
        request_id="req-1",
        model="requested-model",
        new_uuid=lambda: f"uuid-{next(counter)}",
        max_output_tokens=max_output_tokens,
    )


def _start(message_id: str = "msg_1", **usage: Any) -> dict[str, Any]:
    return {
        "type": "message_start",
        "message": {
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "model": "served-model",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 1, **usage},
        },
    }


def _block_start(index: int, block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": block}


def _delta(index: int, delta: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": delta}


def _stop(index: int) -> dict[str, Any]:
    return {"type": "content_block_stop", "index": index}


def _message_delta(stop_reason: str | None, **usage: Any) -> dict[str, Any]:
    return {
        "type": "message_delta",
        "delta": {"stop_reason": stop_reason, "stop_sequence": None},
        "usage": usage,
    }


_TEXT = {"type": "text", "text": ""}
_TOOL = {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {}}
_THINK = {"type": "thinking", "thinking": "", "signature": ""}
_MESSAGE_STOP = {"type": "message_stop"}


def _feed_all(assembler: StreamAssembler, events: list[dict[str, Any]]) -> list[Message]:
    out: list[Message] = []
    for event in events:
        out.extend(assembler.feed(event))
    return out


def _only_block(message: Message) -> object:
    assert isinstance(message, AssistantMessage)
    (block,) = message.content
    return block


def test_text_block_is_joined_from_deltas() -> None:
    """Text deltas are concatenated and the block's message appears at content_block_stop."""
    a = _assembler()
    assert (
        _feed_all(
            a, [_start(), _block_start(0, _TEXT), _delta(0, {"type": "text_delta", "text": "Hel"})]
        )
        == []
    )
    (message,) = _feed_all(a, [_delta(0, {"type": "text_delta", "text": "lo"}), _stop(0)])
    assert isinstance(message, AssistantMessage)
    assert message.content == (TextBlock(text="Hello"),)
    assert message.message_id == "msg_1"
    assert message.uuid == "uuid-0"
    assert message.model == "served-model"
    assert a.blocks_completed == 1


def test_initial_text_in_block_start_is_kept() -> None:
    """Text already present in content_block_start is the first piece of the block."""
    a = _assembler()
    events = [
        _start(),
        _block_start(0, {"type": "text", "text": "Hi"}),
        _delta(0, {"type": "text_delta", "text": "!"}),
        _stop(0),
    ]
    (message,) = _feed_all(a, events)
    assert _only_block(message) == TextBlock(text="Hi!")


def test_thinking_and_signature_are_assembled() -> None:
    """thinking_delta builds the thinking; a later signature_delta replaces the signature."""
    a = _assembler()
    events = [
        _start(),
        _block_start(0, _THINK),
        _delta(0, {"type": "thinking_delta", "thinking": "Let me "}),
        _delta(0, {"type": "thinking_delta", "thinking": "think."}),
        _delta(0, {"type": "signature_delta", "signature": "sig-a"}),
        _delta(0, {"type": "signature_delta", "signature": "sig-b"}),
        _stop(0),
    ]
    (message,) = _feed_all(a, events)
    assert _only_block(message) == ThinkingBlock(thinking="Let me think.", signature="sig-b")


def test_redacted_thinking_is_passed_through() -> None:
    """A redacted_thinking block keeps its data and completes at its stop."""
    a = _assembler()
    events = [_start(), _block_start(0, {"type": "redacted_thinking", "data": "ENC"}), _stop(0)]
    (message,) = _feed_all(a, events)
    assert _only_block(message) == RedactedThinkingBlock(data="ENC")


def test_tool_use_input_is_parsed_from_chunked_json() -> None:
    """input_json_delta chunks are concatenated and parsed once, at content_block_stop."""
    a = _assembler()
    events = [
        _start(),
        _block_start(0, _TOOL),
        _delta(0, {"type": "input_json_delta", "partial_json": '{"path": "/t'}),
        _delta(0, {"type": "input_json_delta", "partial_json": 'mp/x", "n": [1,'}),
        _delta(0, {"type": "input_json_delta", "partial_json": " 2]}"}),
        _stop(0),
    ]
    (message,) = _feed_all(a, events)
    assert _only_block(message) == ToolUseBlock(
        id="toolu_1", name="Read", input={"path": "/tmp/x", "n": [1, 2]}
    )
    assert a.tool_input_errors == {}


def test_tool_use_without_input_deltas_gets_empty_input() -> None:
    """An empty partial_json (or none at all) means the input is {}."""
    a = _assembler()
    events = [
        _start(),
        _block_start(0, _TOOL),
        _delta(0, {"type": "input_json_delta", "partial_json": ""}),
        _stop(0),
    ]
    (message,) = _feed_all(a, events)
    assert _only_block(message) == ToolUseBlock(id="toolu_1", name="Read", input={})


@pytest.mark.parametrize("raw", ['{"path": ', "[1, 2]", '"text"', "nul"])
def test_bad_tool_input_becomes_error_text_not_exception(raw: str) -> None:
    """Invalid JSON or a non-object gives input {} and an InputValidationError text."""
    a = _assembler()
    events = [
        _start(),
        _block_start(0, _TOOL),
        _delta(0, {"type": "input_json_delta", "partial_json": raw}),
        _stop(0),
    ]
    (message,) = _feed_all(a, events)
    assert _only_block(message) == ToolUseBlock(id="toolu_1", name="Read", input={})
    assert "InputValidationError" in a.tool_input_errors["toolu_1"]
    assert "Read" in a.tool_input_errors["toolu_1"]


def test_blocks_of_one_response_share_the_message_id() -> None:
    """Each completed block is its own message; all carry message_start's id, fresh uuids."""
    a = _assembler()
    events = [
        _start("msg_shared"),
        _block_start(0, _TEXT),
        _delta(0, {"type": "text_delta", "text": "Reading."}),
        _stop(0),
        _block_start(1, _TOOL),
        _stop(1),
        _block_start(2, {**_TOOL, "id": "toolu_2"}),
        _stop(2),
    ]
    out = _feed_all(a, events)
    assert [m.message_id for m in out if isinstance(m, AssistantMessage)] == ["msg_shared"] * 3
    assert len({m.uuid for m in out}) == 3
    assert a.blocks_completed == 3


def test_citations_delta_is_kept_on_the_text_block() -> None:
    """A citations_delta on a text block adds its citation to the block, in order."""
    a = _assembler()
    events = [
        _start(),
        _block_start(0, _TEXT),
        _delta(0, {"type": "citations_delta", "citation": {"type": "char_location"}}),
        _delta(0, {"type": "text_delta", "text": "cited"}),
        _stop(0),
    ]
    (message,) = _feed_all(a, events)
    assert _only_block(message) == TextBlock(text="cited", citations=({"type": "char_location"},))


def test_ping_and_unknown_keys_are_ignored() -> None:
    """ping events produce nothing and extra keys on events are ignored."""
    a = _assembler()
    events = [
        {"type": "ping"},
        {**_start(), "extra": 1},
        {"type": "ping"},
        {**_block_start(0, {**_TEXT, "citations": None}), "more": "x"},
        {**_delta(0, {"type": "text_delta", "text": "ok", "junk": True}), "junk": 2},
        _stop(0),
    ]
    (message,) = _feed_all(a, events)
    assert _only_block(message) == TextBlock(text="ok")


def test_usage_from_message_delta_replaces_not_adds() -> None:
    """message_delta usage is cumulative: fields present replace, absent or null fields stay."""
    a = _assembler()
    _feed_all(a, [_start(cache_read_input_tokens=5, cache_creation_input_tokens=None)])
    assert a.usage == Usage(input_tokens=10, output_tokens=1, cache_read_input_tokens=5)
    _feed_all(a, [_message_delta(None, output_tokens=40)])
    _feed_all(a, [_message_delta("end_turn", output_tokens=55, input_tokens=None)])
    assert a.usage == Usage(input_tokens=10, output_tokens=55, cache_read_input_tokens=5)
    assert a.stop_reason == "end_turn"


def test_usage_with_every_field_is_taken_whole() -> None:
    """A report naming every count, both tables, the tier and a field we do not model: each
    replaces what was known, tables are copied, and the unknown field is kept as received."""
    a = _assembler()
    cache = {"ephemeral_5m_input_tokens": 3}
    _feed_all(a, [_start(inference_geo="eu", cache_creation=cache, service_tier="standard")])
    _feed_all(
        a,
        [
            _message_delta(
                None,
                input_tokens=11,
                output_tokens=7,
                cache_creation_input_tokens=3,
                cache_read_input_tokens=2,
                server_tool_use={"web_search_requests": 1},
            )
        ],
    )
    assert a.usage == Usage(
        input_tokens=11,
        output_tokens=7,
        cache_creation_input_tokens=3,
        cache_read_input_tokens=2,
        cache_creation=cache,
        server_tool_use={"web_search_requests": 1},
        service_tier="standard",
        extra={"inference_geo": "eu"},
    )
    assert a.usage.cache_creation is not cache


def test_usage_fields_we_do_not_model_keep_their_order() -> None:
    """Fields the model does not name are kept in the order received, nulls left out, and a
    later report's value wins in place."""
    a = _assembler()
    _feed_all(a, [_start(zeta=1, alpha=None, mid="m", inference_geo="eu")])
    assert list(a.usage.extra.items()) == [("zeta", 1), ("mid", "m"), ("inference_geo", "eu")]
    _feed_all(a, [_message_delta(None, output_tokens=2, beta=True, zeta=2)])
    assert list(a.usage.extra.items()) == [
        ("zeta", 2),
        ("mid", "m"),
        ("inference_geo", "eu"),
        ("beta", True),
    ]


def test_block_messages_carry_usage_known_so_far() -> None:
    """A block's message carries the usage known when it completed; finalized() the last."""
    a = _assembler()
    (message,) = _feed_all(a, [_start(), _block_start(0, _TEXT), _stop(0)])
    assert isinstance(message, AssistantMessage)
    assert message.usage.output_tokens == 1
    _feed_all(a, [_message_delta("end_turn", output_tokens=9), _MESSAGE_STOP])
    final = a.finalized(message)
    assert final.usage.output_tokens == 9
    assert final.stop_reason == "end_turn"
    assert final.content == message.content


def test_finalized_is_evolve_of_the_stop_fields() -> None:
    """finalized() builds its copy field by field: it equals attrs.evolve of the three stop
    fields, so a field added to AssistantMessage cannot be dropped unnoticed."""
    a = _assembler()
    _feed_all(a, [_start(), _message_delta("refusal", output_tokens=3, inference_geo="eu")])
    a.stop_details = {"category": "cyber"}
    message = AssistantMessage(
        uuid="m1",
        message_id="msg_1",
        content=(TextBlock(text="hi"),),
        model="served-model",
        stop_reason="other",
        usage=Usage(input_tokens=99),
        stop_details={"old": True},
    )
    # every field set to something other than its default, so a dropped one shows
    for field in attrs.fields(AssistantMessage):
        if field.default is not attrs.NOTHING and not isinstance(field.default, attrs.Factory):
            assert getattr(message, field.name) != field.default, field.name
    final = a.finalized(message)
    expected = attrs.evolve(
        message, stop_reason=a.stop_reason, usage=a.usage, stop_details=a.stop_details
    )
    assert final == expected
    assert attrs.asdict(final, recurse=False) == attrs.asdict(expected, recurse=False)


def test_max_tokens_gives_withheld_api_error() -> None:
    """stop_reason max_tokens yields a withheld MAX_OUTPUT_TOKENS error naming the cap."""
    a = _assembler(max_output_tokens=8000)
    _feed_all(a, [_start(), _block_start(0, _TEXT), _stop(0)])
    (error,) = a.feed(_message_delta("max_tokens", output_tokens=8000))
    assert isinstance(error, ApiErrorMessage)
    assert error.kind is ApiErrorKind.MAX_OUTPUT_TOKENS
    assert error.withheld
    assert error.text == texts.max_output_tokens_reached(8000)
    assert "8000" in error.text
    assert a.feed(_MESSAGE_STOP) == ()


def test_context_window_stop_gives_withheld_api_error() -> None:
    """stop_reason model_context_window_exceeded yields the context-window error, withheld."""
    a = _assembler()
    _feed_all(a, [_start(), _block_start(0, _TEXT), _stop(0)])
    (error,) = a.feed(_message_delta("model_context_window_exceeded", output_tokens=3))
    assert isinstance(error, ApiErrorMessage)
    assert error.kind is ApiErrorKind.MAX_OUTPUT_TOKENS
    assert error.withheld
    assert error.text == texts.CONTEXT_WINDOW_EXCEEDED


def test_truncation_error_is_reported_once() -> None:
    """A repeated max_tokens message_delta does not add a second error message."""
    a = _assembler()
    _feed_all(a, [_start(), _block_start(0, _TEXT), _stop(0)])
    assert len(a.feed(_message_delta("max_tokens", output_tokens=1))) == 1
    assert a.feed(_message_delta("max_tokens", output_tokens=2)) == ()


def test_other_stop_reasons_add_nothing() -> None:
    """end_turn / tool_use / stop_sequence stops complete without extra messages."""
    for reason in ("end_turn", "tool_use", "stop_sequence", "refusal", "pause_turn"):
        a = _assembler()
        _feed_all(a, [_start(), _block_start(0, _TEXT), _stop(0)])
        assert a.feed(_message_delta(reason, output_tokens=1)) == ()


# --- protocol errors -------------------------------------------------------------------------

_OPENED = [_start(), _block_start(0, _TEXT)]
_FINISHED = [_start(), _block_start(0, _TEXT), _stop(0), _message_delta("end_turn"), _MESSAGE_STOP]

_PROTOCOL_CASES: dict[str, tuple[list[dict[str, Any]], dict[str, Any], str]] = {
    "delta for a block never started": (
        [_start()],
        _delta(3, {"type": "text_delta", "text": "x"}),
        "index 3",
    ),
    "delta after its block stopped": (
        [*_OPENED, _stop(0)],
        _delta(0, {"type": "text_delta", "text": "x"}),
        "index 0",
    ),
    "block index reused": ([*_OPENED, _stop(0)], _block_start(0, _TEXT), "already used"),
    "block index reused while open": (_OPENED, _block_start(0, _TEXT), "already used"),
    "block start before message_start": ([], _block_start(0, _TEXT), "before message_start"),
    "block stop before message_start": ([], _stop(0), "before message_start"),
    "message_delta before message_start": ([], _message_delta("end_turn"), "message_delta"),
    "message_stop before message_start": ([], _MESSAGE_STOP, "before message_start"),
    "second message_start": ([_start()], _start(), "second message_start"),
    "error event": ([_start()], {"type": "error", "error": {"type": "x"}}, "error"),
    "event after message_stop": (_FINISHED, _block_start(1, _TEXT), "after message_stop"),
    "delta after message_stop": (
        _FINISHED,
        _delta(0, {"type": "text_delta", "text": "x"}),
        "after message_stop",
    ),
    "second message_stop": (_FINISHED, _MESSAGE_STOP, "after message_stop"),
    "stop of a block never started": ([_start()], _stop(4), "never started"),
    "stop of a block already stopped": ([*_OPENED, _stop(0)], _stop(0), "already stopped"),
    "delta text not a string": (_OPENED, _delta(0, {"type": "text_delta", "text": 5}), "string"),
    "delta missing its payload": (_OPENED, _delta(0, {"type": "text_delta"}), "malformed"),
    "block start without content_block": (
        [_start()],
        {"type": "content_block_start", "index": 0},
        "malformed",
    ),
    "negative block index": ([_start()], _block_start(-1, _TEXT), "index"),
    "message_start without id": (
        [],
        {"type": "message_start", "message": {"model": "m"}},
        "malformed",
    ),
    "tool_use with an empty id": ([_start()], _block_start(0, {**_TOOL, "id": ""}), "empty"),
    "usage that is not a number": (
        [_start()],
        _message_delta("end_turn", output_tokens="12"),
        "usage.output_tokens",
    ),
    "usage count that is a bool among whole counts": (
        [_start()],
        _message_delta(
            "end_turn",
            input_tokens=1,
            output_tokens=2,
            cache_creation_input_tokens=True,
            cache_read_input_tokens=4,
        ),
        "usage.cache_creation_input_tokens",
    ),
    "usage table with a count that is not a number": (
        [_start()],
        _message_delta("end_turn", output_tokens=2, cache_creation={"ephemeral_5m": "1"}),
        "usage.cache_creation",
    ),
    "usage server_tool_use that is not a table": (
        [_start()],
        _message_delta("end_turn", output_tokens=2, server_tool_use=[1]),
        "usage.server_tool_use",
    ),
    "usage service_tier that is not a string": (
        [_start()],
        _message_delta("end_turn", output_tokens=2, service_tier=3),
        "service_tier",
    ),
}


_SKIPPED_CASES: dict[str, tuple[list[dict[str, Any]], dict[str, Any], str]] = {
    "unknown event type": ([_start()], {"type": "content_block_wiggle"}, "content_block_wiggle"),
    "text delta on a tool_use block": (
        [_start(), _block_start(0, _TOOL)],
        _delta(0, {"type": "text_delta", "text": "x"}),
        "text_delta",
    ),
    "json delta on a text block": (
        _OPENED,
        _delta(0, {"type": "input_json_delta", "partial_json": "{}"}),
        "input_json_delta",
    ),
    "signature delta on a text block": (
        _OPENED,
        _delta(0, {"type": "signature_delta", "signature": "s"}),
        "signature_delta",
    ),
    "citations delta on a thinking block": (
        [_start(), _block_start(0, _THINK)],
        _delta(0, {"type": "citations_delta", "citation": {}}),
        "citations_delta",
    ),
    "unknown delta type": (_OPENED, _delta(0, {"type": "sparkle_delta"}), "sparkle_delta"),
}


@pytest.mark.parametrize("case", sorted(_SKIPPED_CASES))
def test_events_that_cannot_apply_are_skipped_with_a_notice(case: str) -> None:
    """An unknown event, or a delta its block cannot take, is skipped and noted, not fatal."""
    before, odd, fragment = _SKIPPED_CASES[case]
    a = _assembler()
    _feed_all(a, before)
    (notice,) = a.feed(odd)
    assert isinstance(notice, SystemMessage)
    assert notice.subtype == NOTICE_SUBTYPE
    assert fragment in notice.text
    assert a.notices == [notice.text]
    assert a.truncated_reason() is not None  # the stream itself goes on


@pytest.mark.parametrize("case", sorted(_PROTOCOL_CASES))
def test_protocol_violations_raise(case: str) -> None:
    """Every out-of-order or malformed event raises ModelProtocolError naming the problem."""
    before, bad, fragment = _PROTOCOL_CASES[case]
    a = _assembler()
    _feed_all(a, before)
    with pytest.raises(ModelProtocolError, match="stream event") as caught:
        a.feed(bad)
    assert fragment in str(caught.value)


def test_non_mapping_event_raises_protocol_error() -> None:
    """An event that is not a dict at all is a protocol error, not a TypeError."""
    a = _assembler()
    with pytest.raises(ModelProtocolError):
        a.feed(["message_start"])  # type: ignore[arg-type]


def test_assembler_is_poisoned_after_an_error() -> None:
    """After a protocol error every later event is refused, even a valid one."""
    a = _assembler()
    with pytest.raises(ModelProtocolError):
        a.feed(_block_start(0, _TEXT))
    with pytest.raises(ModelProtocolError, match="already failed"):
        a.feed(_start())


# --- truncated_reason --------------------------------------------------------------------------


def test_truncated_reason_none_for_complete_stream() -> None:
    """A stream that reached message_stop with a block and a stop reason is complete."""
    a = _assembler()
    _feed_all(a, _FINISHED)
    assert a.finished
    assert a.truncated_reason() is None


def test_truncated_reason_without_message_start() -> None:
    """No message_start at all is reported as such."""
    a = _assembler()
    a.feed({"type": "ping"})
    assert a.truncated_reason() == texts.STREAM_NO_MESSAGE_START


def test_truncated_reason_open_block() -> None:
    """A block started but never stopped is reported with its index."""
    a = _assembler()
    _feed_all(a, [_start(), _block_start(0, _TEXT), _stop(0), _block_start(1, _TEXT)])
    assert a.truncated_reason() == texts.stream_block_left_open(1)


def test_truncated_reason_missing_message_stop() -> None:
    """Completed blocks but no message_stop: the body ended early."""
    a = _assembler()
    _feed_all(a, [_start(), _block_start(0, _TEXT), _stop(0), _message_delta("end_turn")])
    assert a.truncated_reason() == texts.STREAM_NO_MESSAGE_STOP


def test_truncated_reason_empty_stream() -> None:
    """message_start then nothing usable (even with message_stop) is an empty stream."""
    a = _assembler()
    _feed_all(a, [_start(), _MESSAGE_STOP])
    assert a.truncated_reason() == texts.STREAM_EMPTY
    b = _assembler()
    b.feed(_start())
    assert b.truncated_reason() == texts.STREAM_EMPTY


def test_stop_reason_without_blocks_is_not_empty() -> None:
    """A response with a stop reason but no blocks finished properly (not an empty stream)."""
    a = _assembler()
    _feed_all(a, [_start(), _message_delta("end_turn", output_tokens=0), _MESSAGE_STOP])
    assert a.truncated_reason() is None


def test_requested_model_used_when_message_start_names_none() -> None:
    """Without message.model the requested model goes on the block messages."""
    a = _assembler()
    start = _start()
    del start["message"]["model"]
    (message,) = _feed_all(a, [start, _block_start(0, _TEXT), _stop(0)])
    assert isinstance(message, AssistantMessage)
    assert message.model == "requested-model"
