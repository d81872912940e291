"""Properties of normalization (DESIGN §6 invariant 8) and stream assembly (SPEC §3)."""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from fsm_agent.core.messages import AssistantMessage, ContentBlock, Message
from fsm_agent.core.normalize import (
    api_invariant_violations,
    ensure_tool_result_pairing,
    normalize_for_api,
)
from fsm_agent.core.stream import StreamAssembler
from fsm_agent.errors import ModelProtocolError
from fsm_agent.testing.transcripts import (
    loop_transcripts,
    messages_from_api,
    streamed_responses,
    transcripts,
)


@given(transcripts(), st.booleans())
def test_normalized_output_is_always_valid(transcript: list[Message], tag_ids: bool) -> None:
    """Whatever the transcript, normalize_for_api output satisfies every API invariant, with
    or without the snip tags."""
    assert api_invariant_violations(normalize_for_api(transcript, tag_ids=tag_ids)) == []


@given(transcripts())
def test_normalization_is_idempotent(transcript: list[Message]) -> None:
    """Normalizing a transcript rebuilt from normalized output gives the same output."""
    once = normalize_for_api(transcript)
    assert normalize_for_api(messages_from_api(once)) == once


@given(transcripts())
def test_pairing_repair_leaves_valid_output_alone(transcript: list[Message]) -> None:
    """ensure_tool_result_pairing is the identity on already-valid messages."""
    once = normalize_for_api(transcript)
    assert ensure_tool_result_pairing(once, strict=True) == once


@given(transcripts())
def test_strict_mode_raises_or_agrees(transcript: list[Message]) -> None:
    """Strict normalization either raises ModelProtocolError or matches the repaired output."""
    try:
        strict = normalize_for_api(transcript, strict=True)
    except ModelProtocolError:
        return
    assert strict == normalize_for_api(transcript)


@given(loop_transcripts())
def test_loop_transcripts_need_no_pairing_repair(transcript: list[Message]) -> None:
    """Transcripts shaped like the loop writes them normalize in strict mode, validly."""
    api = normalize_for_api(transcript, strict=True)
    assert api_invariant_violations(api) == []
    uses = [b["id"] for m in api for b in m["content"] if b["type"] == "tool_use"]
    results = [b["tool_use_id"] for m in api for b in m["content"] if b["type"] == "tool_result"]
    assert sorted(uses) == sorted(results)
    assert not any(b.get("is_error") for m in api for b in m["content"])


@given(transcripts(), st.integers(0, 5))
def test_media_cap_is_respected(transcript: list[Message], limit: int) -> None:
    """No more media items than the cap survive normalization."""
    api = normalize_for_api(transcript, max_media=limit)
    count = 0
    for message in api:
        for block in message["content"]:
            if block["type"] in ("image", "document"):
                count += 1
            elif block["type"] == "tool_result" and isinstance(block["content"], list):
                count += sum(p["type"] in ("image", "document") for p in block["content"])
    assert count <= limit


@given(streamed_responses())
def test_stream_assembly_round_trips_blocks(
    response: tuple[list[ContentBlock], list[dict[str, Any]]],
) -> None:
    """Assembling a well-formed event sequence gives back exactly the streamed blocks."""
    blocks, events = response
    counter = itertools.count()
    assembler = StreamAssembler(
        request_id="r", model="test-model", new_uuid=lambda: f"u{next(counter)}"
    )
    out: list[Message] = []
    for event in events:
        out.extend(assembler.feed(event))
    assert all(isinstance(m, AssistantMessage) for m in out)
    assert [b for m in out if isinstance(m, AssistantMessage) for b in m.content] == blocks
    assert {m.message_id for m in out if isinstance(m, AssistantMessage)} == {"msg_stream"}
    assert len({m.uuid for m in out}) == len(out)
    assert assembler.truncated_reason() is None
    assert assembler.tool_input_errors == {}
    assert assembler.usage.output_tokens == 7


@given(streamed_responses(), st.data())
def test_stream_cut_short_is_reported_truncated(
    response: tuple[list[ContentBlock], list[dict[str, Any]]], data: st.DataObject
) -> None:
    """Any proper prefix of a stream is incomplete, and feeding it never raises."""
    _, events = response
    cut = data.draw(st.integers(0, len(events) - 1), label="cut")
    assembler = StreamAssembler(request_id="r", model="m", new_uuid=lambda: "u")
    for event in events[:cut]:
        assembler.feed(event)
    assert assembler.truncated_reason() is not None
