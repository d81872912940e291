"""Normalization of a transcript into the message list the Messages API accepts (SPEC §8.1, §8.2).

This module owns three things:

* :func:`normalize_for_api` — the transcript (every message type of ``messages.py``) to
  API-shaped dicts: the SPEC §8.1 steps that apply to our message model, then the pairing
  repair, then the media cap.
* :func:`ensure_tool_result_pairing` — the SPEC §8.2 repair over API-shaped dicts. It also
  enforces the shape invariants SPEC §8.2 lists (user first, alternation, tool_results first,
  no trailing thinking, no empty assistant, text-only error results), so its output is valid
  whatever it is given.
* :func:`api_invariant_violations` — the checker for DESIGN §6 invariant 8, used by property
  tests and the loop tests.

Every pass is a single sweep over the messages with dicts and sets of ids, so nothing here is
quadratic. The passes run over a *segment* of the transcript (:func:`normalize_segment`), with a
:class:`Carry` describing what came before it: the whole transcript is one segment, and
``core/request_history.py`` normalizes only the messages a request added (DESIGN §7).

Deviations from the reference, on purpose:

* Merged user messages keep their text blocks separate instead of joining them with ``\\n``
  (SPEC §8.1 step 5): adjacent text blocks are one turn to the API, and keeping them apart keeps
  the bytes of earlier blocks stable for the prompt cache.
* A thinking-only assistant message is dropped whenever merging by ``message_id`` left it alone
  (SPEC §8.1 step 7): a sibling that could not be merged is cut off from it by a user turn, so
  the thinking belongs to no reply the model could continue. This also makes normalization
  idempotent.
* Whitespace-only text blocks are removed from both roles (the API refuses them).

The output dicts share nested values (tool inputs, media sources) with the messages: treat them
as read-only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import attrs

from fsm_agent.core import texts
from fsm_agent.core.messages import (
    ApiErrorKind,
    ApiErrorMessage,
    AssistantMessage,
    AttachmentMessage,
    ContentBlock,
    DocumentBlock,
    ImageBlock,
    Message,
    OpaqueBlock,
    RedactedThinkingBlock,
    ServerToolUseBlock,
    TextBlock,
    ThinkingBlock,
    TombstoneMessage,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)
from fsm_agent.errors import ModelProtocolError, UsageError

MAX_MEDIA_ITEMS: Final = 100
"""Images and documents one request may carry (SPEC §10, media items per request)."""

USER: Final = "user"
ASSISTANT: Final = "assistant"

_THINKING_TYPES: Final = frozenset({"thinking", "redacted_thinking"})
_MEDIA_TYPES: Final = frozenset({"image", "document"})
_USER_BLOCK_TYPES: Final = frozenset({"text", "image", "document", "tool_result"})
_USER_ONLY_TYPES: Final = frozenset({"tool_result", "image", "document"})
# Calls the API runs itself; each must have its result block in the same message (SPEC §8.2).
_SERVER_CALL_TYPES: Final = frozenset({"server_tool_use", "mcp_tool_use"})

ApiBlock = dict[str, Any]
ApiMessage = dict[str, Any]


# --- blocks to API shape ----------------------------------------------------------------------


def _text(text: str) -> ApiBlock:
    return {"type": "text", "text": text}


def _part_dict(part: TextBlock | ImageBlock | DocumentBlock) -> ApiBlock:
    if isinstance(part, TextBlock):
        return _text(part.text)
    if isinstance(part, ImageBlock):
        return {"type": "image", "source": part.source}
    return {"type": "document", "source": part.source}


def _tool_result_dict(block: ToolResultBlock) -> ApiBlock:
    content = block.content
    if block.is_error:
        # SPEC §8.1 step 12: an error result carries text only.
        if not isinstance(content, str):
            content = "\n".join(part.text for part in content if isinstance(part, TextBlock))
        return {
            "type": "tool_result",
            "tool_use_id": block.tool_use_id,
            "content": content,
            "is_error": True,
        }
    api_content: str | list[ApiBlock] = (
        content if isinstance(content, str) else [_part_dict(part) for part in content]
    )
    return {"type": "tool_result", "tool_use_id": block.tool_use_id, "content": api_content}


def _user_block(block: ContentBlock) -> ApiBlock | None:
    """A user-side block in API shape; assistant-only blocks are dropped (None)."""
    if isinstance(block, ToolResultBlock):
        return _tool_result_dict(block)
    if isinstance(block, TextBlock | ImageBlock | DocumentBlock):
        return _part_dict(block)
    return None


def assistant_block_to_api(block: ContentBlock) -> ApiBlock | None:
    """An assistant-side block in API shape; user-only blocks are dropped (None).

    Everything the model sent goes back as the API requires it: text with its citations,
    tool calls with their ``caller``, server-tool calls, and opaque blocks unchanged.
    """
    if isinstance(block, TextBlock):
        if block.citations:
            return {"type": "text", "text": block.text, "citations": list(block.citations)}
        return _text(block.text)
    if isinstance(block, ToolUseBlock | ServerToolUseBlock):
        kind = "tool_use" if isinstance(block, ToolUseBlock) else "server_tool_use"
        api: ApiBlock = {"type": kind, "id": block.id, "name": block.name, "input": block.input}
        if block.caller is not None:
            api["caller"] = block.caller
        return api
    if isinstance(block, ThinkingBlock):
        return {"type": "thinking", "thinking": block.thinking, "signature": block.signature}
    if isinstance(block, RedactedThinkingBlock):
        return {"type": "redacted_thinking", "data": block.data}
    if isinstance(block, OpaqueBlock):
        return block.data
    return None


# --- transcript to merged turns (SPEC §8.1) ---------------------------------------------------


class SegmentNotSeparable(Exception):
    """A segment depends on an earlier segment in a way only a full pass handles."""


@attrs.define(slots=True)
class Carry:
    """What the normalized start of a transcript hands on to the messages after it.

    Normalization runs over *segments*: the whole transcript is one segment, and
    :class:`~fsm_agent.core.request_history.RequestHistory` normalizes only the messages after
    a settled start. A segment reads the carry and never changes it; what it adds comes back
    as a :class:`Segment` that is folded in (:meth:`absorb`) once that segment is settled.

    Attributes:
        fresh: Nothing comes before (the first segment of a transcript).
        withdrawn: uuids withdrawn by tombstones so far.
        has_meta: Some meta user message came before.
        open_ids: ``message_id`` of assistant turns after the last user turn with more than
            tool_results: a later part of such a response would merge back into them.
        seen_ids: tool_use ids used so far.
        expected: tool_use ids of the last assistant message, which the next user message
            must answer.
        media: Images and documents so far.
    """

    fresh: bool = True
    withdrawn: set[str] = attrs.field(factory=set)
    has_meta: bool = False
    open_ids: set[str] = attrs.field(factory=set)
    seen_ids: set[str] = attrs.field(factory=set)
    expected: list[str] = attrs.field(factory=list)
    media: int = 0

    def copy(self) -> Carry:
        """A copy that later absorbs do not change."""
        return attrs.evolve(
            self,
            withdrawn=set(self.withdrawn),
            open_ids=set(self.open_ids),
            seen_ids=set(self.seen_ids),
            expected=list(self.expected),
        )

    def absorb(self, segment: Segment) -> None:
        """Fold a settled segment in: what follows it now comes after it."""
        self.fresh = False
        self.withdrawn |= segment.withdrawn
        self.has_meta = self.has_meta or segment.has_meta
        if segment.barrier_seen:
            self.open_ids = set(segment.open_ids)
        else:
            self.open_ids |= segment.open_ids
        self.seen_ids |= segment.seen_ids
        self.expected = segment.expected
        self.media += segment.media


@attrs.define(slots=True)
class Segment:
    """One normalized segment and what it adds to the carry (see :class:`Carry`).

    Attributes:
        api: The segment's API messages.
        withdrawn, has_meta, seen_ids, expected, media: As in :class:`Carry`, for this segment.
        open_ids: Mergeable ``message_id`` values this segment leaves open.
        barrier_seen: The segment holds a user turn with more than tool_results, so nothing
            before it stays open.
        ends_with_assistant: The last API message is an assistant message (a segment that
            ends otherwise cannot be settled: the next user message would merge into it).
    """

    api: list[ApiMessage] = attrs.field(factory=list)
    withdrawn: set[str] = attrs.field(factory=set)
    has_meta: bool = False
    open_ids: set[str] = attrs.field(factory=set)
    barrier_seen: bool = False
    seen_ids: set[str] = attrs.field(factory=set)
    expected: list[str] = attrs.field(factory=list)
    media: int = 0
    ends_with_assistant: bool = False


@attrs.define(slots=True)
class _Turn:
    """One API message being assembled (mutable, private to one normalization)."""

    role: str
    blocks: list[ApiBlock]
    message_id: str = ""


def _live_messages(messages: Sequence[Message], carry: Carry, segment: Segment) -> list[Message]:
    """The segment without tombstones and the messages they withdraw (SPEC §3 fallback).

    A withdrawn tool_use still got its tool_result in the transcript (SPEC §5.2: every
    tool_use handed to the caller is answered, and the result is shown before the tombstone);
    that result goes with it. A call that ran is never withdrawn in the first place (the core
    keeps it, SPEC §5.2 "Ours").
    """
    withdrawn = segment.withdrawn
    for message in messages:
        if isinstance(message, TombstoneMessage):
            withdrawn.add(message.target_uuid)
    # A tombstone may withdraw a message of an earlier segment: only a full pass can say.
    if withdrawn and not carry.fresh and not withdrawn <= {m.uuid for m in messages}:
        raise SegmentNotSeparable
    gone = carry.withdrawn
    withdrawn_calls = {
        block.id
        for m in messages
        if withdrawn and isinstance(m, AssistantMessage) and m.uuid in withdrawn
        for block in m.content
        if isinstance(block, ToolUseBlock)
    }
    live: list[Message] = []
    for m in messages:
        if (
            isinstance(m, TombstoneMessage)
            or (withdrawn and m.uuid in withdrawn)
            or (gone and m.uuid in gone)
        ):
            continue
        if withdrawn_calls and isinstance(m, UserMessage):
            content = tuple(
                b
                for b in m.content
                if not (isinstance(b, ToolResultBlock) and b.tool_use_id in withdrawn_calls)
            )
            if not content:
                continue
            if len(content) != len(m.content):
                live.append(attrs.evolve(m, content=content))
                continue
        live.append(m)
    return live


def _media_strip_targets(live: Sequence[Message], carry: Carry, segment: Segment) -> set[int]:
    """Positions of meta user messages whose media must go (SPEC §8.1 step 3)."""
    targets: set[int] = set()
    last_meta = -1
    for position, message in enumerate(live):
        if isinstance(message, UserMessage) and message.is_meta:
            last_meta = position
            segment.has_meta = True
        elif isinstance(message, ApiErrorMessage) and message.kind is ApiErrorKind.MEDIA_TOO_LARGE:
            if last_meta >= 0:
                targets.add(last_meta)
            elif carry.has_meta:
                raise SegmentNotSeparable  # the message to strip is in an earlier segment
    return targets


def _starts_with_tool_result(message: Message) -> bool:
    return (
        isinstance(message, UserMessage)
        and bool(message.content)
        and isinstance(message.content[0], ToolResultBlock)
    )


def _reorder_attachments(live: Sequence[Message]) -> list[int]:
    """Positions in API order, attachments moved up, transcript-only messages gone.

    SPEC §8.1 step 1: walking bottom-up, attachments bubble up until an assistant message or a
    user message starting with a tool_result and land right after it; leftovers go to the top.
    SPEC §8.1 step 4: progress, system and API-error messages are dropped in the same sweep.
    """
    reversed_order: list[int] = []
    pending: list[int] = []  # attachments seen so far, bottom-up
    for position in range(len(live) - 1, -1, -1):
        message = live[position]
        if isinstance(message, AttachmentMessage):
            pending.append(position)
        elif isinstance(message, AssistantMessage | UserMessage):
            if pending and (
                isinstance(message, AssistantMessage) or _starts_with_tool_result(message)
            ):
                reversed_order.extend(pending)
                pending.clear()
            reversed_order.append(position)
    reversed_order.extend(pending)
    reversed_order.reverse()
    return reversed_order


def _merge_turns(
    live: Sequence[Message],
    order: Sequence[int],
    strip: set[int],
    carry: Carry,
    segment: Segment,
    *,
    tag_ids: bool,
) -> list[_Turn]:
    """Convert and merge messages into turns (SPEC §8.1 step 5); with ``tag_ids`` a user
    message that does not begin with a tool_result ends with its ``[id:…]`` tag (step 13)."""
    turns: list[_Turn] = []
    # message_id -> index of the latest turn holding a part of that response
    by_message_id: dict[str, int] = {}
    # index of the last user turn holding anything but tool_results: merging by message_id may
    # walk back over tool_result users and other responses only, never across such a turn.
    barrier = -1
    for position in order:
        message = live[position]
        if isinstance(message, AssistantMessage):
            blocks = [b for b in map(assistant_block_to_api, message.content) if b is not None]
            message_id = message.message_id
            target = by_message_id.get(message_id) if message_id else None
            if target is not None and target > barrier:
                turns[target].blocks.extend(blocks)
                continue
            if message_id and barrier < 0 and message_id in carry.open_ids:
                raise SegmentNotSeparable  # a later part of a response of an earlier segment
            turns.append(_Turn(role=ASSISTANT, blocks=blocks, message_id=message_id))
            if message_id:
                by_message_id[message_id] = len(turns) - 1
            continue
        if isinstance(message, AttachmentMessage):
            if not message.text.strip():
                continue
            blocks = [_text(texts.system_reminder(message.text))]
        else:
            assert isinstance(message, UserMessage)
            content: Sequence[ContentBlock] = message.content
            if position in strip:
                content = [b for b in content if not isinstance(b, ImageBlock | DocumentBlock)]
            blocks = [b for b in map(_user_block, content) if b is not None]
            if not blocks:
                continue
            if tag_ids and not _starts_with_tool_result(message):
                blocks.append(_text(texts.snip_tag(message.uuid)))  # SPEC §8.1 step 13
        if turns and turns[-1].role == USER:
            turns[-1].blocks.extend(blocks)
        else:
            turns.append(_Turn(role=USER, blocks=blocks))
        if any(block["type"] != "tool_result" for block in blocks):
            barrier = len(turns) - 1
    segment.barrier_seen = barrier >= 0
    segment.open_ids = {
        turn.message_id
        for turn in turns[barrier + 1 :]
        if turn.role == ASSISTANT and turn.message_id
    }
    return turns


def _is_thinking_only(blocks: Sequence[ApiBlock]) -> bool:
    return bool(blocks) and all(block["type"] in _THINKING_TYPES for block in blocks)


def _is_blank_text_only(blocks: Sequence[ApiBlock]) -> bool:
    return bool(blocks) and all(
        block["type"] == "text" and not block["text"].strip() for block in blocks
    )


def _tidy_assistants(turns: list[_Turn], *, final: bool) -> list[_Turn]:
    """SPEC §8.1 steps 7, 9, 10 and 8, in the order that lets step 8 see the final turn.

    With ``final`` false more messages follow the segment, so its last turn is not final.
    """
    kept = [
        turn
        for turn in turns
        if turn.role == USER
        or not (_is_thinking_only(turn.blocks) or _is_blank_text_only(turn.blocks))
    ]
    # SPEC §8.1 step 10: an empty assistant gets a placeholder unless it is last (then dropped).
    while final and kept and kept[-1].role == ASSISTANT and not kept[-1].blocks:
        kept.pop()
    for turn in kept:
        if turn.role == ASSISTANT and not turn.blocks:
            turn.blocks.append(_text(texts.EMPTY_ASSISTANT_PLACEHOLDER))
    # SPEC §8.1 step 8: the final assistant must not end with thinking.
    if final and kept and kept[-1].role == ASSISTANT:
        _strip_trailing_thinking(kept[-1].blocks)
    return kept


def _strip_trailing_thinking(blocks: list[ApiBlock]) -> None:
    had_blocks = bool(blocks)
    while blocks and blocks[-1]["type"] in _THINKING_TYPES:
        blocks.pop()
    if had_blocks and not blocks:
        blocks.append(_text(texts.EMPTY_ASSISTANT_PLACEHOLDER))


def normalize_segment(
    messages: Sequence[Message],
    carry: Carry,
    *,
    final: bool,
    strict: bool = False,
    tag_ids: bool = False,
) -> Segment:
    """Normalize the messages that follow what ``carry`` describes (SPEC §8.1, §8.2).

    The segment's API messages, put after those of the earlier segments, are what a full
    normalization of the whole transcript gives, except for the media cap, which the caller
    applies to the whole. ``carry`` is read, never changed.

    Args:
        messages: The segment, in order.
        carry: What the earlier segments hand on (a fresh ``Carry`` for a whole transcript).
        final: Nothing follows the segment (its end is the end of the request).
        strict: Raise instead of repairing pairing defects.
        tag_ids: Tag user messages with their ids, for snip (SPEC §7.2, §8.1 step 13).

    Raises:
        SegmentNotSeparable: The segment reaches back into an earlier one; normalize it whole.
    """
    segment = Segment()
    live = _live_messages(messages, carry, segment)
    strip = _media_strip_targets(live, carry, segment)
    turns = _tidy_assistants(
        _merge_turns(live, _reorder_attachments(live), strip, carry, segment, tag_ids=tag_ids),
        final=final,
    )
    api = [{"role": turn.role, "content": turn.blocks} for turn in turns]
    if not carry.fresh and (not api or api[0]["role"] != USER):
        raise SegmentNotSeparable  # it would merge into, or follow, the earlier segment's last turn
    segment.api = _repair_pairing(api, carry, segment, strict=strict, final=final)
    segment.ends_with_assistant = bool(segment.api) and segment.api[-1]["role"] == ASSISTANT
    segment.media = _count_media(segment.api)
    return segment


def normalize_for_api(
    messages: Sequence[Message],
    *,
    strict: bool = False,
    max_media: int = MAX_MEDIA_ITEMS,
    tag_ids: bool = False,
) -> list[ApiMessage]:
    """Turn a transcript into the ``messages`` list of a Messages API request (SPEC §8.1).

    Args:
        messages: The transcript, any message types, in order.
        strict: Raise instead of repairing tool_use/tool_result pairing defects (SPEC §8.2).
        max_media: How many images and documents to keep; the oldest go first (SPEC §10).
        tag_ids: End each user message that is not a tool_result with its ``[id:…]`` tag
            (snip, SPEC §8.1 step 13).

    Returns:
        ``{"role", "content"}`` dicts with API-shaped blocks, satisfying every check of
        :func:`api_invariant_violations`.

    Raises:
        ModelProtocolError: Only with ``strict=True``, on the first pairing defect.
    """
    segment = normalize_segment(messages, Carry(), final=True, strict=strict, tag_ids=tag_ids)
    return cap_media(segment.api, limit=max_media)


# --- pairing repair (SPEC §8.2) ---------------------------------------------------------------


def _content_list(content: object, index: int) -> list[ApiBlock]:
    if isinstance(content, str):
        return [_text(content)] if content else []
    if isinstance(content, list | tuple):
        return list(content)
    raise UsageError(f"message {index}: content must be a string or a list of blocks")


def _merged_roles(api_messages: Sequence[Mapping[str, Any]]) -> list[ApiMessage]:
    """Fresh dicts with consecutive same-role messages merged (SPEC §8.1 step 9 re-merge)."""
    merged: list[ApiMessage] = []
    for index, message in enumerate(api_messages):
        role = message.get("role")
        if role not in (USER, ASSISTANT):
            raise UsageError(f"message {index}: role {role!r} is neither 'user' nor 'assistant'")
        content = _content_list(message.get("content"), index)
        if merged and merged[-1]["role"] == role:
            merged[-1]["content"].extend(content)
        else:
            merged.append({"role": role, "content": content})
    return merged


def _defect(strict: bool, index: int, problem: str) -> None:
    if strict:
        raise ModelProtocolError(f"message {index}: {problem} (strict pairing, SPEC §8.2)")


def _missing_result(tool_use_id: str) -> ApiBlock:
    return {
        "type": "tool_result",
        "tool_use_id": tool_use_id,
        "content": texts.MISSING_TOOL_RESULT,
        "is_error": True,
    }


def _text_only_error(block: ApiBlock) -> ApiBlock:
    """SPEC §8.1 step 12 on API dicts; also drops an ``is_error`` that is not true."""
    if block.get("is_error") is True:
        content = block.get("content", "")
        if isinstance(content, str):
            return block
        joined = "\n".join(
            part.get("text", "")
            for part in content
            if isinstance(part, Mapping) and part.get("type") == "text"
        )
        return {**block, "content": joined}
    if "is_error" in block:
        return {key: value for key, value in block.items() if key != "is_error"}
    return block


def _repair_assistant(
    content: list[ApiBlock],
    index: int,
    earlier_ids: set[str],
    seen_ids: set[str],
    *,
    strict: bool,
    final: bool,
) -> tuple[list[ApiBlock], list[str]]:
    # SPEC §8.2: a server-side call without its result in the same message is removed, except
    # in the final message: a pause_turn response is sent back as it is, to be carried on.
    answered = {block.get("tool_use_id") for block in content}
    kept: list[ApiBlock] = []
    tool_ids: list[str] = []
    visible = False
    for block in content:
        kind = block.get("type")
        if kind == "tool_use":
            tool_id = block.get("id")
            if not isinstance(tool_id, str) or tool_id in seen_ids or tool_id in earlier_ids:
                _defect(strict, index, f"tool_use id {tool_id!r} is used twice")
                continue  # SPEC §8.2: the later duplicate goes
            seen_ids.add(tool_id)
            tool_ids.append(tool_id)
            visible = True
        elif kind == "text":
            if not str(block.get("text", "")).strip():
                continue
            visible = True
        elif kind in _SERVER_CALL_TYPES:
            if not final and block.get("id") not in answered:
                continue
            visible = True
        elif kind in _USER_ONLY_TYPES or not isinstance(kind, str):
            continue  # not an assistant block: the API would refuse it
        elif kind not in _THINKING_TYPES:
            visible = True  # a server-tool result or another block the API sent
        kept.append(block)
    if not visible:
        # SPEC §8.2: assistant content is never empty or thinking-only in the middle.
        kept.append(_text(texts.EMPTY_ASSISTANT_PLACEHOLDER))
    return kept, tool_ids


def _repair_user(
    content: list[ApiBlock], index: int, expected: list[str], strict: bool, first: bool
) -> list[ApiBlock]:
    expected_ids = set(expected)
    answered: set[str] = set()
    results: list[ApiBlock] = []
    others: list[ApiBlock] = []
    dropped_orphan = False
    for block in content:
        kind = block.get("type")
        if kind == "tool_result":
            tool_id = block.get("tool_use_id")
            if tool_id in expected_ids and tool_id not in answered:
                assert isinstance(tool_id, str)
                answered.add(tool_id)
                results.append(_text_only_error(block))
                continue
            problem = "answers it a second time" if tool_id in answered else "has no tool_use"
            _defect(
                strict,
                index,
                f"tool_result for {tool_id!r} {problem} in the preceding assistant message",
            )
            dropped_orphan = True
        elif kind == "text":
            if str(block.get("text", "")).strip():
                others.append(block)
        elif kind in _MEDIA_TYPES:
            others.append(block)
    missing = [tool_id for tool_id in expected if tool_id not in answered]
    if missing:
        _defect(strict, index, f"tool_use ids {missing} got no tool_result")
    # SPEC §8.2: synthetic error results are prepended; every tool_result comes first.
    repaired = [_missing_result(tool_id) for tool_id in missing] + results + others
    if not repaired:
        placeholder = (
            texts.ORPHANED_TOOL_RESULT_REMOVED
            if first and dropped_orphan
            else texts.EMPTY_USER_PLACEHOLDER
        )
        repaired.append(_text(placeholder))
    return repaired


def _repair_pairing(
    api_messages: Sequence[Mapping[str, Any]],
    carry: Carry,
    segment: Segment,
    *,
    strict: bool,
    final: bool,
) -> list[ApiMessage]:
    """SPEC §8.2 over one segment; records its tool_use ids and open tool_uses in ``segment``."""
    merged = _merged_roles(api_messages)
    repaired: list[ApiMessage] = []
    if carry.fresh and (not merged or merged[0]["role"] != USER):
        repaired.append({"role": USER, "content": [_text(texts.CONVERSATION_START_PLACEHOLDER)]})
    seen_ids = segment.seen_ids
    expected = carry.expected  # tool_use ids of the previous assistant message
    for index, message in enumerate(merged):
        if message["role"] == ASSISTANT:
            is_last = final and index == len(merged) - 1
            content, expected = _repair_assistant(
                message["content"], index, carry.seen_ids, seen_ids, strict=strict, final=is_last
            )
        else:
            first = carry.fresh and not repaired
            content = _repair_user(message["content"], index, expected, strict, first)
            expected = []
        repaired.append({"role": message["role"], "content": content})
    segment.expected = expected
    if not final:
        return repaired
    if expected:
        # The transcript ends on unanswered tool_uses: answer them in a user message of their own.
        _defect(strict, len(merged) - 1, f"tool_use ids {expected} got no tool_result")
        repaired.append({"role": USER, "content": [_missing_result(i) for i in expected]})
        segment.expected = []
    last = repaired[-1]
    if last["role"] == ASSISTANT:
        _strip_trailing_thinking(last["content"])  # SPEC §8.1 step 8
    return repaired


def ensure_tool_result_pairing(
    api_messages: Sequence[Mapping[str, Any]], *, strict: bool = False
) -> list[ApiMessage]:
    """Repair tool_use/tool_result pairing and the message shape (SPEC §8.2).

    After this, every tool_use is answered exactly once by a tool_result at the start of the
    very next user message, tool_use ids are unique, the first message is a user message and
    roles alternate, no assistant content is empty, whitespace-only or (when final) ends in
    thinking, and error results are text-only. The input is not modified.

    Args:
        api_messages: ``{"role", "content"}`` dicts with API-shaped blocks.
        strict: Raise on the first pairing defect instead of repairing it.

    Returns:
        New message dicts (blocks that needed no change are shared with the input).

    Raises:
        ModelProtocolError: With ``strict=True``, on an orphan or duplicate tool_result, a
            duplicate tool_use id, or an unanswered tool_use.
        UsageError: A message has a role other than user/assistant or unusable content.
    """
    return _repair_pairing(api_messages, Carry(), Segment(), strict=strict, final=True)


# --- media cap (SPEC §8.1 tail, §10) ------------------------------------------------------------


def _count_media(api_messages: Sequence[Mapping[str, Any]]) -> int:
    count = 0
    for message in api_messages:
        for block in message["content"]:
            kind = block.get("type")
            if kind in _MEDIA_TYPES:
                count += 1
            elif kind == "tool_result" and isinstance(block.get("content"), list):
                count += sum(1 for part in block["content"] if part.get("type") in _MEDIA_TYPES)
    return count


def cap_media(api_messages: list[ApiMessage], *, limit: int = MAX_MEDIA_ITEMS) -> list[ApiMessage]:
    """Keep at most ``limit`` images and documents, replacing the oldest with a short note.

    Args:
        api_messages: Output of :func:`ensure_tool_result_pairing`.
        limit: The most media items one request may carry (SPEC §10: 100).

    Returns:
        The same list when nothing had to go, otherwise new message dicts.
    """
    excess = _count_media(api_messages) - limit
    if excess <= 0:
        return api_messages

    def replace(block: ApiBlock) -> ApiBlock:
        nonlocal excess
        if excess > 0 and block.get("type") in _MEDIA_TYPES:
            excess -= 1
            return _text(texts.media_omitted(str(block["type"])))
        return block

    capped: list[ApiMessage] = []
    for message in api_messages:
        if excess <= 0 or message["role"] != USER:
            capped.append(message)
            continue
        content: list[ApiBlock] = []
        for block in message["content"]:
            if block.get("type") == "tool_result" and isinstance(block.get("content"), list):
                content.append({**block, "content": [replace(part) for part in block["content"]]})
            else:
                content.append(replace(block))
        capped.append({"role": USER, "content": content})
    return capped


# --- the checker (DESIGN §6 invariant 8) --------------------------------------------------------


def api_invariant_violations(api_messages: Sequence[Mapping[str, Any]]) -> list[str]:
    """Every way ``api_messages`` breaks DESIGN §6 invariant 8, as readable sentences.

    Checks: at least one message; the first is a user message; roles alternate; blocks belong
    to their role; each tool_use is answered exactly once by a tool_result at the start of the
    very next user message; no orphan tool_result; unique tool_use ids; no trailing thinking in
    a final assistant message; no empty or whitespace-only assistant content; no whitespace-only
    text block; error results carry text only; at most 100 media items.

    Args:
        api_messages: ``{"role", "content"}`` dicts, as :func:`normalize_for_api` returns them.

    Returns:
        An empty list when the messages are valid.
    """
    problems: list[str] = []
    if not api_messages:
        return ["there are no messages"]
    seen_ids: set[str] = set()
    expected: list[str] = []
    previous_role: str | None = None
    for index, message in enumerate(api_messages):
        role = message.get("role")
        where = f"message {index} ({role})"
        if index == 0 and role != USER:
            problems.append(f"{where}: the first message must be a user message")
        if role not in (USER, ASSISTANT):
            problems.append(f"{where}: unknown role")
            continue
        if role == previous_role:
            problems.append(f"{where}: follows another {role} message (roles must alternate)")
        content = message.get("content")
        if isinstance(content, str):
            content = [_text(content)]
        if not isinstance(content, list) or not content:
            problems.append(f"{where}: content is empty")
            content = []
        for block in content:
            kind = block.get("type")
            if kind not in _USER_BLOCK_TYPES if role == USER else kind in _USER_ONLY_TYPES:
                problems.append(f"{where}: a {kind!r} block does not belong in a {role} message")
            if kind == "text" and not str(block.get("text", "")).strip():
                problems.append(f"{where}: a text block is empty or whitespace-only")
        if role == ASSISTANT:
            _check_assistant(where, content, seen_ids, problems)
            if expected:
                problems.append(f"{where}: tool_use ids {expected} are not answered before it")
            expected = [b["id"] for b in content if b.get("type") == "tool_use"]
            if index == len(api_messages) - 1 and content:
                if content[-1].get("type") in _THINKING_TYPES:
                    problems.append(f"{where}: the final assistant message ends with thinking")
                if expected:
                    problems.append(f"{where}: tool_use ids {expected} are never answered")
        else:
            _check_user(where, content, expected, problems)
            expected = []
        previous_role = role
    media = _count_media([m for m in api_messages if isinstance(m.get("content"), list)])
    if media > MAX_MEDIA_ITEMS:
        problems.append(f"{media} media items exceed the limit of {MAX_MEDIA_ITEMS}")
    return problems


def _check_assistant(
    where: str, content: list[ApiBlock], seen_ids: set[str], problems: list[str]
) -> None:
    if content and all(
        block.get("type") == "text" and not str(block.get("text", "")).strip() for block in content
    ):
        problems.append(f"{where}: content is only whitespace")
    for block in content:
        if block.get("type") == "tool_use":
            tool_id = block.get("id")
            if tool_id in seen_ids:
                problems.append(f"{where}: tool_use id {tool_id!r} is not unique")
            seen_ids.add(str(tool_id))


def _check_user(
    where: str, content: list[ApiBlock], expected: list[str], problems: list[str]
) -> None:
    expected_ids = set(expected)
    answered: set[str] = set()
    results_done = False
    for block in content:
        if block.get("type") != "tool_result":
            results_done = True
            continue
        tool_id = block.get("tool_use_id")
        if results_done:
            problems.append(f"{where}: tool_result for {tool_id!r} comes after other content")
        if tool_id not in expected_ids:
            problems.append(
                f"{where}: tool_result for {tool_id!r} answers no tool_use of the previous message"
            )
        elif tool_id in answered:
            problems.append(f"{where}: tool_use {tool_id!r} is answered more than once")
        else:
            answered.add(str(tool_id))
        if block.get("is_error") and not _is_text_only(block.get("content")):
            problems.append(f"{where}: error tool_result for {tool_id!r} carries non-text content")
    missing = [tool_id for tool_id in expected if tool_id not in answered]
    if missing:
        problems.append(f"{where}: tool_use ids {missing} are not answered here")


def _is_text_only(content: object) -> bool:
    if content is None or isinstance(content, str):
        return True
    return isinstance(content, list) and all(
        isinstance(part, Mapping) and part.get("type") == "text" for part in content
    )


__all__ = [
    "MAX_MEDIA_ITEMS",
    "api_invariant_violations",
    "assistant_block_to_api",
    "cap_media",
    "ensure_tool_result_pairing",
    "normalize_for_api",
]
