"""Hypothesis strategies for transcripts and model streams.

This module owns the generators the property tests (ours and our users') draw transcripts
from:

* :func:`transcripts` — *arbitrary* transcripts: every message type of
  :mod:`fsm_agent.core.messages`, with orphan tool_results, duplicate tool_use ids, unanswered
  tool_uses, thinking-only and whitespace-only assistants, attachments, progress and system
  notices, tombstones (hitting real and missing targets) and synthetic API errors. Ids come from
  small pools so that collisions are common rather than astronomically rare.
* :func:`loop_transcripts` — transcripts shaped like the loop writes them: each response split
  into one message per block sharing ``message_id``, every tool_use answered in the next user
  message. Normalizing these needs no pairing repair.
* :func:`streamed_responses` — a response's content blocks together with a well-formed raw
  event sequence (as the SDK's ``model_dump()`` gives it) that streams exactly those blocks,
  text and tool input cut into random chunks.

It also has :func:`messages_from_api`, the inverse of normalization's output shape, for
idempotence properties. Strategies take keyword-only arguments (Hypothesis API style).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import orjson
from hypothesis import strategies as st

from fsm_agent.core.messages import (
    ApiErrorKind,
    ApiErrorMessage,
    AssistantMessage,
    AttachmentKind,
    AttachmentMessage,
    ContentBlock,
    DocumentBlock,
    ImageBlock,
    Message,
    OpaqueBlock,
    ProgressMessage,
    RedactedThinkingBlock,
    ResultPart,
    ServerToolUseBlock,
    SystemMessage,
    TextBlock,
    ThinkingBlock,
    TombstoneMessage,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
    UserMessage,
)

TOOL_ID_POOL: tuple[str, ...] = tuple(f"toolu_{n}" for n in range(1, 6))
"""tool_use ids arbitrary transcripts draw from (small, so duplicates and orphans happen)."""

MESSAGE_ID_POOL: tuple[str, ...] = tuple(f"msg_{n}" for n in range(1, 5))
"""``message_id`` values arbitrary transcripts draw from (small, so responses interleave)."""

TOOL_NAMES: tuple[str, ...] = ("Read", "Grep", "Bash", "Edit")

# --- content blocks ---------------------------------------------------------------------------


def texts_with_blanks() -> st.SearchStrategy[str]:
    """Short texts, often empty or whitespace-only (the cases the API refuses)."""
    return st.one_of(
        st.sampled_from(["", " ", "\n", " \t\n", "ok", "Done.", "let me look"]),
        st.text(max_size=12),
    )


def _media_sources() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {
            "type": st.just("base64"),
            "media_type": st.sampled_from(["image/png", "application/pdf"]),
            "data": st.text(alphabet="ABCD", max_size=4),
        }
    )


def text_blocks() -> st.SearchStrategy[TextBlock]:
    """Text blocks, blanks included."""
    return st.builds(TextBlock, text=texts_with_blanks())


def image_blocks() -> st.SearchStrategy[ImageBlock]:
    """Image blocks with a tiny base64 source."""
    return st.builds(ImageBlock, source=_media_sources())


def document_blocks() -> st.SearchStrategy[DocumentBlock]:
    """Document blocks with a tiny base64 source."""
    return st.builds(DocumentBlock, source=_media_sources())


def result_parts() -> st.SearchStrategy[ResultPart]:
    """What a tool_result's list content may hold."""
    return st.one_of(text_blocks(), image_blocks(), document_blocks())


def tool_result_blocks(
    *, tool_ids: st.SearchStrategy[str] | None = None
) -> st.SearchStrategy[ToolResultBlock]:
    """tool_result blocks with string or list content, errors included."""
    return st.builds(
        ToolResultBlock,
        tool_use_id=tool_ids if tool_ids is not None else st.sampled_from(TOOL_ID_POOL),
        content=st.one_of(texts_with_blanks(), st.lists(result_parts(), max_size=3).map(tuple)),
        is_error=st.booleans(),
    )


def tool_inputs() -> st.SearchStrategy[dict[str, Any]]:
    """JSON-object tool inputs (no floats: they need not round-trip byte for byte)."""
    scalars = st.one_of(st.none(), st.booleans(), st.integers(-1000, 1000), st.text(max_size=8))
    values = st.recursive(
        scalars,
        lambda inner: st.one_of(
            st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)
        ),
        max_leaves=6,
    )
    return st.dictionaries(st.text(max_size=6), values, max_size=3)


def tool_use_blocks(
    *, tool_ids: st.SearchStrategy[str] | None = None
) -> st.SearchStrategy[ToolUseBlock]:
    """tool_use blocks; ids from the small pool unless ``tool_ids`` is given."""
    return st.builds(
        ToolUseBlock,
        id=tool_ids if tool_ids is not None else st.sampled_from(TOOL_ID_POOL),
        name=st.sampled_from(TOOL_NAMES),
        input=tool_inputs(),
    )


def thinking_blocks() -> st.SearchStrategy[ThinkingBlock]:
    """Thinking blocks with a signature."""
    return st.builds(
        ThinkingBlock,
        thinking=st.text(max_size=12),
        signature=st.text(alphabet="abcdef0123456789", max_size=8),
    )


def citations_() -> st.SearchStrategy[dict[str, Any]]:
    """Citation objects as the API sends them for web search results."""
    return st.fixed_dictionaries(
        {
            "type": st.just("web_search_result_location"),
            "cited_text": st.text(max_size=12),
            "url": st.sampled_from(["https://example.com/a", "https://example.com/b"]),
            "title": st.text(max_size=8),
            "encrypted_index": st.text(alphabet="ABCxyz", max_size=8),
        }
    )


def server_tool_results(tool_use_id: str) -> st.SearchStrategy[OpaqueBlock]:
    """The result block of a server tool call, of a type this library keeps opaque."""
    result = st.fixed_dictionaries(
        {
            "type": st.just("web_search_result"),
            "title": st.text(max_size=8),
            "url": st.just("https://example.com/a"),
            "encrypted_content": st.text(alphabet="ABCxyz", max_size=12),
            "page_age": st.none() | st.just("2 days ago"),
        }
    )
    return st.builds(
        lambda content: OpaqueBlock(
            data={"type": "web_search_tool_result", "tool_use_id": tool_use_id, "content": content}
        ),
        st.lists(result, max_size=2),
    )


def redacted_thinking_blocks() -> st.SearchStrategy[RedactedThinkingBlock]:
    """Redacted thinking blocks."""
    return st.builds(RedactedThinkingBlock, data=st.text(alphabet="xyz=", min_size=1, max_size=8))


def user_content_blocks() -> st.SearchStrategy[ContentBlock]:
    """Blocks a user message may carry."""
    return st.one_of(text_blocks(), tool_result_blocks(), image_blocks(), document_blocks())


def assistant_content_blocks() -> st.SearchStrategy[ContentBlock]:
    """Blocks an assistant message may carry."""
    return st.one_of(
        text_blocks(), tool_use_blocks(), thinking_blocks(), redacted_thinking_blocks()
    )


# --- messages (uuids filled in by ``transcripts``) --------------------------------------------


def _usages() -> st.SearchStrategy[Usage]:
    counts = st.integers(0, 5000)
    return st.builds(Usage, input_tokens=counts, output_tokens=counts)


def _user_messages() -> st.SearchStrategy[Message]:
    return st.builds(
        UserMessage,
        uuid=st.just(""),
        content=st.lists(user_content_blocks(), max_size=4).map(tuple),
        is_meta=st.booleans(),
    )


def _assistant_messages() -> st.SearchStrategy[Message]:
    # Mostly one block per message, as the stream assembler emits them (SPEC §3).
    return st.builds(
        AssistantMessage,
        uuid=st.just(""),
        message_id=st.one_of(st.sampled_from(MESSAGE_ID_POOL), st.just("")),
        content=st.lists(assistant_content_blocks(), max_size=3).map(tuple),
        model=st.just("test-model"),
        usage=_usages(),
    )


def _other_messages() -> st.SearchStrategy[Message]:
    return st.one_of(
        st.builds(
            ApiErrorMessage,
            uuid=st.just(""),
            kind=st.sampled_from(ApiErrorKind),
            text=st.just("API error"),
            withheld=st.booleans(),
        ),
        st.builds(
            AttachmentMessage,
            uuid=st.just(""),
            kind=st.sampled_from(AttachmentKind),
            text=texts_with_blanks(),
        ),
        st.builds(
            ProgressMessage,
            uuid=st.just(""),
            tool_use_id=st.sampled_from(TOOL_ID_POOL),
            text=st.just("working"),
        ),
        st.builds(
            SystemMessage,
            uuid=st.just(""),
            subtype=st.sampled_from(["warning", "compact_boundary", "model_fallback"]),
            text=st.just("notice"),
        ),
        # Target "#k" is resolved by ``transcripts`` to the k-th message (or to nothing).
        st.integers(0, 30).map(lambda k: TombstoneMessage(uuid="", target_uuid=f"#{k}")),
    )


def _with_uuids(messages: Sequence[Message]) -> list[Message]:
    """Give each message the uuid ``u<position>`` and resolve tombstone targets."""
    numbered: list[Message] = []
    for position, message in enumerate(messages):
        if isinstance(message, TombstoneMessage) and message.target_uuid.startswith("#"):
            target = int(message.target_uuid[1:])
            target_uuid = f"u{target}" if target < position else "u-missing"
            message = attrs.evolve(message, target_uuid=target_uuid)  # noqa: PLW2901
        numbered.append(attrs.evolve(message, uuid=f"u{position}"))
    return numbered


def transcripts(*, max_size: int = 24) -> st.SearchStrategy[list[Message]]:
    """Arbitrary transcripts, defects and all (see the module docstring).

    Args:
        max_size: The most messages one transcript has.
    """
    message = st.one_of(_user_messages(), _assistant_messages(), _other_messages())
    return st.lists(message, max_size=max_size).map(_with_uuids)


# --- transcripts as the loop writes them ------------------------------------------------------


def tool_round(number: int, *, tool_name: str = "Read") -> list[Message]:
    """One model turn asking for a tool, then its result, as the loop appends them (ids and
    uuids numbered by ``number``); for building long sessions by hand."""
    tool_id = f"toolu_r{number}"
    return [
        AssistantMessage(
            uuid=f"a{number}",
            message_id=f"msg_{number}",
            content=(ToolUseBlock(id=tool_id, name=tool_name, input={"path": "x"}),),
        ),
        UserMessage(
            uuid=f"r{number}", content=(ToolResultBlock(tool_use_id=tool_id, content="x"),)
        ),
    ]


@st.composite
def loop_transcripts(draw: st.DrawFn, *, max_rounds: int = 4) -> list[Message]:
    """Well-formed transcripts: prompt, then rounds of split responses and tool results.

    Each response is split into one ``AssistantMessage`` per block sharing a ``message_id``;
    its tool_results follow in one user message (sometimes interleaved between the split
    messages, as the streaming executor yields them), attachments after the results.

    Args:
        max_rounds: The most model responses one transcript has.
    """
    counter = iter(range(1_000_000))

    def uuid() -> str:
        return f"u{next(counter)}"

    tool_counter = iter(range(1_000_000))
    messages: list[Message] = [
        UserMessage(uuid=uuid(), content=(TextBlock(text=draw(st.sampled_from(["hi", "go"]))),))
    ]
    rounds = draw(st.integers(1, max_rounds))
    for round_number in range(rounds):
        message_id = f"msg_r{round_number}"
        blocks: list[ContentBlock] = []
        if draw(st.booleans()):
            blocks.append(draw(thinking_blocks()))
        if draw(st.booleans()):
            blocks.append(TextBlock(text=draw(st.sampled_from(["Looking.", "Done.", "Here"]))))
        for _ in range(draw(st.integers(0, 3))):
            tool_id = f"toolu_r{next(tool_counter)}"
            blocks.append(draw(tool_use_blocks(tool_ids=st.just(tool_id))))
        if not any(isinstance(b, TextBlock | ToolUseBlock) for b in blocks):
            blocks.append(TextBlock(text="Done."))
        interleave = draw(st.booleans())
        results: list[ToolResultBlock] = []
        for block in blocks:
            messages.append(
                AssistantMessage(
                    uuid=uuid(), message_id=message_id, content=(block,), model="test-model"
                )
            )
            if isinstance(block, ToolUseBlock):
                result = ToolResultBlock(
                    tool_use_id=block.id, content=f"result of {block.name}", is_error=False
                )
                if interleave:
                    messages.append(UserMessage(uuid=uuid(), content=(result,)))
                else:
                    results.append(result)
        if results:
            messages.append(UserMessage(uuid=uuid(), content=tuple(results)))
        if draw(st.booleans()):
            messages.append(
                AttachmentMessage(
                    uuid=uuid(), kind=AttachmentKind.HOOK_ADDITIONAL_CONTEXT, text="note"
                )
            )
        if draw(st.booleans()):
            messages.append(ProgressMessage(uuid=uuid(), tool_use_id="x", text="working"))
        last_had_tools = any(isinstance(b, ToolUseBlock) for b in blocks)
        if not last_had_tools or round_number == rounds - 1:
            messages.append(UserMessage(uuid=uuid(), content=(TextBlock(text="continue"),)))
    return messages


# --- raw stream events ------------------------------------------------------------------------


def _chunks(text: str, cuts: Sequence[int]) -> list[str]:
    points = sorted({c % (len(text) + 1) for c in cuts} | {0, len(text)})
    return [text[a:b] for a, b in itertools.pairwise(points) if b > a]


def stream_events_for(
    blocks: Sequence[ContentBlock],
    *,
    message_id: str = "msg_stream",
    model: str = "test-model",
    cuts: Sequence[int] = (),
    stop_reason: str = "end_turn",
    output_tokens: int = 7,
) -> list[dict[str, Any]]:
    """A well-formed raw event sequence streaming ``blocks`` (SPEC §3; SDK dict shapes).

    Args:
        blocks: Text, thinking, redacted-thinking and tool_use blocks, in order.
        message_id: ``message.id`` of ``message_start``.
        model: ``message.model`` of ``message_start``.
        cuts: Offsets where string payloads are split into deltas (taken modulo length).
        stop_reason: The ``message_delta`` stop reason.
        output_tokens: The cumulative output tokens in ``message_delta``.
    """
    events: list[dict[str, Any]] = [
        {
            "type": "message_start",
            "message": {
                "id": message_id,
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {
                    "input_tokens": 11,
                    "output_tokens": 1,
                    "cache_creation_input_tokens": None,
                    "cache_read_input_tokens": 0,
                },
            },
        },
        {"type": "ping"},
    ]
    for index, block in enumerate(blocks):
        deltas: list[dict[str, Any]] = []
        if isinstance(block, TextBlock):
            # As the API does: citations before the text they cite, the list empty at start.
            start: dict[str, Any] = {
                "type": "text",
                "text": "",
                "citations": [] if block.citations else None,
            }
            deltas = [{"type": "citations_delta", "citation": c} for c in block.citations]
            deltas += [{"type": "text_delta", "text": p} for p in _chunks(block.text, cuts)]
        elif isinstance(block, ThinkingBlock):
            start = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [
                {"type": "thinking_delta", "thinking": p} for p in _chunks(block.thinking, cuts)
            ]
            # The API sends the whole signature in one delta (a later one replaces it).
            if block.signature:
                deltas.append({"type": "signature_delta", "signature": block.signature})
        elif isinstance(block, RedactedThinkingBlock):
            start = {"type": "redacted_thinking", "data": block.data}
        elif isinstance(block, ToolUseBlock | ServerToolUseBlock):
            kind = "tool_use" if isinstance(block, ToolUseBlock) else "server_tool_use"
            start = {"type": kind, "id": block.id, "name": block.name, "input": {}}
            if block.caller is not None:
                start["caller"] = block.caller
            raw = orjson.dumps(block.input).decode() if block.input else ""
            # Every real tool call begins with an empty partial_json.
            deltas = [{"type": "input_json_delta", "partial_json": ""}]
            deltas += [{"type": "input_json_delta", "partial_json": p} for p in _chunks(raw, cuts)]
        elif isinstance(block, OpaqueBlock):
            start = block.data
        else:
            raise TypeError(f"a model response cannot stream a {type(block).__name__}")
        events.append({"type": "content_block_start", "index": index, "content_block": start})
        events.extend(
            {"type": "content_block_delta", "index": index, "delta": delta} for delta in deltas
        )
        events.append({"type": "content_block_stop", "index": index})
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": None},
            "usage": {"output_tokens": output_tokens},
        }
    )
    events.append({"type": "message_stop"})
    return events


@st.composite
def streamed_responses(
    draw: st.DrawFn, *, max_blocks: int = 5
) -> tuple[list[ContentBlock], list[dict[str, Any]]]:
    """A response's blocks and a well-formed event sequence that streams them.

    Args:
        max_blocks: The most content blocks in the response (at least one is drawn).
    """
    tool_ids = iter(range(1_000_000))
    blocks: list[ContentBlock] = []
    for _ in range(draw(st.integers(1, max_blocks))):
        kind = draw(st.sampled_from(["text", "thinking", "redacted", "tool_use", "server_tool"]))
        if kind == "text":
            citations = draw(st.lists(citations_(), max_size=2))
            blocks.append(TextBlock(text=draw(st.text(max_size=30)), citations=tuple(citations)))
        elif kind == "server_tool":
            server_id = f"srvtoolu_s{next(tool_ids)}"
            query = draw(st.text(max_size=12))
            blocks.append(
                ServerToolUseBlock(id=server_id, name="web_search", input={"query": query})
            )
            blocks.append(draw(server_tool_results(server_id)))
        elif kind == "thinking":
            blocks.append(draw(thinking_blocks()))
        elif kind == "redacted":
            blocks.append(draw(redacted_thinking_blocks()))
        else:
            blocks.append(draw(tool_use_blocks(tool_ids=st.just(f"toolu_s{next(tool_ids)}"))))
    cuts = draw(st.lists(st.integers(0, 200), max_size=6))
    return blocks, stream_events_for(blocks, cuts=cuts)


# --- API shape back to messages ---------------------------------------------------------------


def _block_from_api(block: Mapping[str, Any]) -> ContentBlock:
    kind = block["type"]
    if kind == "text":
        return TextBlock(text=block["text"], citations=tuple(block.get("citations") or ()))
    if kind == "image":
        return ImageBlock(source=block["source"])
    if kind == "document":
        return DocumentBlock(source=block["source"])
    if kind == "thinking":
        return ThinkingBlock(thinking=block["thinking"], signature=block.get("signature", ""))
    if kind == "redacted_thinking":
        return RedactedThinkingBlock(data=block["data"])
    if kind == "tool_use":
        return ToolUseBlock(
            id=block["id"], name=block["name"], input=block["input"], caller=block.get("caller")
        )
    if kind == "server_tool_use":
        return ServerToolUseBlock(
            id=block["id"], name=block["name"], input=block["input"], caller=block.get("caller")
        )
    if kind == "tool_result":
        content = block.get("content", "")
        parts: str | tuple[ResultPart, ...]
        if isinstance(content, str):
            parts = content
        else:
            parts = tuple(_part_from_api(part) for part in content)
        return ToolResultBlock(
            tool_use_id=block["tool_use_id"], content=parts, is_error=bool(block.get("is_error"))
        )
    return OpaqueBlock(data=dict(block))  # server-tool results and the like, kept as they are


def _part_from_api(part: Mapping[str, Any]) -> ResultPart:
    block = _block_from_api(part)
    if not isinstance(block, TextBlock | ImageBlock | DocumentBlock):
        raise ValueError(f"a tool_result cannot hold a {part['type']!r} block")
    return block


def messages_from_api(api_messages: Sequence[Mapping[str, Any]]) -> list[Message]:
    """Transcript messages equivalent to API-shaped dicts (one message per API message).

    Assistant messages get distinct ``message_id`` values, so normalization never merges them.
    """
    messages: list[Message] = []
    for index, api_message in enumerate(api_messages):
        content = tuple(_block_from_api(block) for block in api_message["content"])
        if api_message["role"] == "user":
            messages.append(UserMessage(uuid=f"api-u{index}", content=content))
        else:
            messages.append(
                AssistantMessage(
                    uuid=f"api-a{index}", message_id=f"api-msg{index}", content=content
                )
            )
    return messages
