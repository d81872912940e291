"""The message model: transcript messages and their content blocks.

Everything here is a frozen, slotted, keyword-only attrs class, so a transcript is a value that
can be compared, hashed into a trace and replayed. Message ids (``uuid``) are assigned by the
core from a counter, never drawn at random, so the same events always give the same ids.

Content blocks mirror the Messages API shapes (SPEC §3, §8). Transcript-only messages (progress,
system, attachments, tombstones, synthetic API errors) never reach the API as such:
``normalize_for_api`` converts or drops them (SPEC §8.1).
"""

from __future__ import annotations

import enum
from typing import Any, TypeAlias

import attrs

from fsm_agent.core import kinds
from fsm_agent.core.record_builder import record_builder

# --- content blocks ------------------------------------------------------------------------

# Defined in :mod:`fsm_agent.core.kinds` (loaded without the classes here); named here too,
# where they were first defined.
AttachmentKind = kinds.AttachmentKind


@attrs.frozen(kw_only=True)
class TextBlock:
    """Text, with the citations the API attached to it (``citations_delta``, SPEC §3).

    ``citations`` holds the API's citation objects as received; they go back to the API with
    the text (a web-search answer must keep its citations when it is echoed).
    """

    text: str
    citations: tuple[dict[str, Any], ...] = ()


@attrs.frozen(kw_only=True)
class ThinkingBlock:
    """Extended thinking with its signature."""

    thinking: str
    signature: str = ""


@attrs.frozen(kw_only=True)
class RedactedThinkingBlock:
    """Thinking the API returned encrypted."""

    data: str


@attrs.frozen(kw_only=True)
class ToolUseBlock:
    """A request from the model to call a tool.

    ``caller`` is the API's record of who made the call (direct, or code execution calling
    the tool programmatically); it is kept and echoed back as received.
    """

    id: str
    name: str
    input: dict[str, Any] = attrs.field(factory=dict)
    caller: dict[str, Any] | None = None


@attrs.frozen(kw_only=True)
class ServerToolUseBlock:
    """A call of a tool the API runs itself (web search, web fetch, code execution).

    Nothing local answers it: its result arrives as a block of the same response, and both
    stay in the assistant message when it is sent back.
    """

    id: str
    name: str
    input: dict[str, Any] = attrs.field(factory=dict)
    caller: dict[str, Any] | None = None


@attrs.frozen(kw_only=True)
class OpaqueBlock:
    """A content block kept exactly as the API sent it, for the types we do not model.

    Server-tool results (``web_search_tool_result``, ``code_execution_tool_result``, ...),
    ``mcp_tool_use``/``mcp_tool_result``, ``compaction``, ``fallback`` and any type the API adds
    later. ``data`` is the block's JSON object, ``type`` included, in the order received; it is
    sent back unchanged.
    """

    data: dict[str, Any]

    @property
    def block_type(self) -> str:
        """The API's ``type`` of the block."""
        return str(self.data.get("type", ""))


@attrs.frozen(kw_only=True)
class ImageBlock:
    """An image; ``source`` is the API's source object (base64 or url)."""

    source: dict[str, Any] = attrs.field(factory=dict)


@attrs.frozen(kw_only=True)
class DocumentBlock:
    """A document (PDF or text); ``source`` is the API's source object."""

    source: dict[str, Any] = attrs.field(factory=dict)


ResultPart: TypeAlias = TextBlock | ImageBlock | DocumentBlock
ToolResultContent: TypeAlias = str | tuple[ResultPart, ...]


@attrs.frozen(kw_only=True)
class ToolResultBlock:
    """The answer to one ``tool_use``; content is a string or text/image blocks."""

    tool_use_id: str
    content: ToolResultContent = ""
    is_error: bool = False


ContentBlock: TypeAlias = (
    TextBlock
    | ThinkingBlock
    | RedactedThinkingBlock
    | ToolUseBlock
    | ServerToolUseBlock
    | OpaqueBlock
    | ToolResultBlock
    | ImageBlock
    | DocumentBlock
)

CONTENT_BLOCK_TYPES: tuple[type, ...] = (
    TextBlock,
    ThinkingBlock,
    RedactedThinkingBlock,
    ToolUseBlock,
    ServerToolUseBlock,
    OpaqueBlock,
    ToolResultBlock,
    ImageBlock,
    DocumentBlock,
)


# --- usage ---------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class Usage:
    """Token usage of one API response (``message_delta`` usage is cumulative).

    Besides the four counters: ``cache_creation`` (the cache writes by lifetime),
    ``server_tool_use`` (requests made by server tools), ``service_tier``, and ``extra`` for any
    other field the API sends, kept as received.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation: dict[str, int] | None = None
    server_tool_use: dict[str, int] | None = None
    service_tier: str | None = None
    extra: dict[str, Any] = attrs.field(factory=dict)

    def __add__(self, other: Usage) -> Usage:
        return _new_usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_creation_input_tokens=self.cache_creation_input_tokens
            + other.cache_creation_input_tokens,
            cache_read_input_tokens=self.cache_read_input_tokens + other.cache_read_input_tokens,
            cache_creation=_add_counts(self.cache_creation, other.cache_creation),
            server_tool_use=_add_counts(self.server_tool_use, other.server_tool_use),
            service_tier=other.service_tier or self.service_tier,
            extra={**self.extra, **other.extra},
        )

    @property
    def context_tokens(self) -> int:
        """Tokens the request occupied in the context window (input side plus output)."""
        return (
            self.input_tokens
            + self.cache_creation_input_tokens
            + self.cache_read_input_tokens
            + self.output_tokens
        )


_new_usage = record_builder(Usage)  # one per response (record_builder says why)


def _add_counts(left: dict[str, int] | None, right: dict[str, int] | None) -> dict[str, int] | None:
    """Two per-kind count tables added key by key (None when both are absent)."""
    if left is None or right is None:
        return left if right is None else right
    total = dict(left)  # left's keys first, then those only right has
    for key, count in right.items():
        total[key] = total.get(key, 0) + count
    return total


# --- messages ------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class UserMessage:
    """A user turn: prompt text, tool results, or a meta message written by the loop.

    ``is_meta`` marks messages the loop wrote (recovery nudges, stop-hook feedback): they go
    to the API but are not shown as the user's words.
    """

    uuid: str
    content: tuple[ContentBlock, ...]
    is_meta: bool = False


@attrs.frozen(kw_only=True)
class AssistantMessage:
    """One completed content block of a model response (SPEC §3: one message per block).

    All messages of one response share ``message_id``; ``normalize_for_api`` merges them back.
    ``stop_details`` is the API's explanation of the stop (a refusal's category), as received.
    """

    uuid: str
    message_id: str
    content: tuple[ContentBlock, ...]
    model: str = ""
    stop_reason: str | None = None
    usage: Usage = attrs.field(factory=Usage)
    stop_details: dict[str, Any] | None = None


class ApiErrorKind(enum.Enum):
    """What a synthetic API-error message is about (decides which recovery may apply)."""

    PROMPT_TOO_LONG = "prompt_too_long"
    MEDIA_TOO_LARGE = "media_too_large"
    MAX_OUTPUT_TOKENS = "max_output_tokens"
    OTHER = "other"


@attrs.frozen(kw_only=True)
class ApiErrorMessage:
    """A synthetic assistant message standing for an API error.

    ``withheld`` errors are kept in the iteration's assistant messages but not shown to
    consumers until recovery has failed (SPEC §2.3, last paragraph).
    """

    uuid: str
    kind: ApiErrorKind
    text: str
    withheld: bool = False


@attrs.frozen(kw_only=True)
class AttachmentMessage:
    """Context attached to the next user turn; sent as ``<system-reminder>`` text."""

    uuid: str
    kind: AttachmentKind
    text: str = ""


@attrs.frozen(kw_only=True)
class ProgressMessage:
    """Progress reported by a running tool; never sent to the API."""

    uuid: str
    tool_use_id: str
    text: str


@attrs.frozen(kw_only=True)
class SystemMessage:
    """A notice for the user (warnings, fallback notes, compact boundaries); not sent."""

    uuid: str
    subtype: str
    text: str = ""


@attrs.frozen(kw_only=True)
class TombstoneMessage:
    """Marks an earlier message as withdrawn (a discarded streaming attempt, SPEC §3)."""

    uuid: str
    target_uuid: str


Message: TypeAlias = (
    UserMessage
    | AssistantMessage
    | ApiErrorMessage
    | AttachmentMessage
    | ProgressMessage
    | SystemMessage
    | TombstoneMessage
)

MESSAGE_TYPES: tuple[type, ...] = (
    UserMessage,
    AssistantMessage,
    ApiErrorMessage,
    AttachmentMessage,
    ProgressMessage,
    SystemMessage,
    TombstoneMessage,
)

COMPACT_BOUNDARY = "compact_boundary"
"""``SystemMessage.subtype`` that marks where a compaction cut the history (SPEC §7.5)."""


def tool_uses(message: Message) -> tuple[ToolUseBlock, ...]:
    """The tool_use blocks of an assistant message (empty for any other message)."""
    if not isinstance(message, AssistantMessage):
        return ()
    return tuple(block for block in message.content if isinstance(block, ToolUseBlock))


def tool_results(message: Message) -> tuple[ToolResultBlock, ...]:
    """The tool_result blocks of a user message (empty for any other message)."""
    if not isinstance(message, UserMessage):
        return ()
    return tuple(block for block in message.content if isinstance(block, ToolResultBlock))


def text_of(message: Message) -> str:
    """The text blocks of a message joined by newlines (for hooks, token estimates, display)."""
    if isinstance(message, UserMessage | AssistantMessage):
        texts = []
        for block in message.content:
            if isinstance(block, TextBlock):
                texts.append(block.text)
        return "\n".join(texts)
    if isinstance(message, ApiErrorMessage | AttachmentMessage | SystemMessage):
        return message.text
    return ""
