"""Stream assembly: raw Messages-API stream events in, transcript messages out (SPEC §3).

This module owns the fold from the events the ``anthropic`` SDK yields for a streamed request
(as ``model_dump()`` dicts) to :class:`~fsm_agent.core.messages.AssistantMessage` values, one
per completed content block, all sharing the response's ``message.id``. It is pure: the uuids
of the messages it builds come from the ``new_uuid`` callable the core passes in.

Theory of operation:

* ``message_start`` opens the response; ``content_block_start`` opens block *i*; deltas append
  string pieces to a list (O(delta), nothing is re-joined per delta); ``content_block_stop``
  joins the pieces, parses tool input, and returns the block's message.
* ``message_delta`` carries the stop reason and **cumulative** usage (replaced, not added). A
  ``max_tokens`` or ``model_context_window_exceeded`` stop adds a withheld
  :class:`~fsm_agent.core.messages.ApiErrorMessage` (SPEC §2.3, §3).
* Nothing the API sends is lost. Block types we model are typed (text with its citations,
  thinking, redacted thinking, tool_use with its ``caller``, server_tool_use); every other type
  (server-tool results, MCP blocks, ``compaction``, ``fallback``, types added later) becomes an
  :class:`~fsm_agent.core.messages.OpaqueBlock` holding the block's JSON as received. A delta
  the block cannot take, and an event type we do not know, is skipped and reported as a
  ``stream_notice`` system message: only a stream the API marks as failed (an ``error``
  event) fails. A ``signature_delta`` replaces the signature, as the SDK does.
* A block still open at ``message_stop`` is closed there (the SDK tolerates it too); a tool
  input cut off mid-JSON is read as far as it goes, and the call is answered with an error
  instead of running on half its arguments.
* Anything out of order or malformed raises :class:`~fsm_agent.errors.ModelProtocolError`
  naming the event and the index; after that the assembler is poisoned and refuses every
  further event (h11's rule: never continue half-changed).
* Bad tool input JSON is *data*: the block gets ``{}`` as input and
  :attr:`StreamAssembler.tool_input_errors` gets the error text for the tool result.

Frozen messages cannot be patched in place as the reference does with the last yielded message
(SPEC §3 SSE assembly): the stop reason and final usage stay on the assembler, and
:meth:`StreamAssembler.finalized` returns a copy of a message carrying them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

import attrs
import jiter
import orjson

from fsm_agent.core import texts
from fsm_agent.core.messages import (
    ApiErrorKind,
    ApiErrorMessage,
    AssistantMessage,
    ContentBlock,
    Message,
    OpaqueBlock,
    RedactedThinkingBlock,
    ServerToolUseBlock,
    SystemMessage,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
    Usage,
)
from fsm_agent.core.record_builder import record_builder
from fsm_agent.errors import ModelProtocolError

_NOTHING: Final[tuple[Message, ...]] = ()

# Block kinds as the API names them in content_block_start.
_TEXT: Final = "text"
_THINKING: Final = "thinking"
_REDACTED: Final = "redacted_thinking"
_TOOL_USE: Final = "tool_use"
_SERVER_TOOL_USE: Final = "server_tool_use"
_OPAQUE: Final = "opaque"  # our kind for every block type kept as received

# delta type -> (block kind it may extend, key holding the string); the hot path
_DELTAS: Final[dict[str, tuple[str, str]]] = {
    "text_delta": (_TEXT, "text"),
    "input_json_delta": (_TOOL_USE, "partial_json"),
    "thinking_delta": (_THINKING, "thinking"),
}
_INPUT_JSON_DELTA: Final = "input_json_delta"
_SIGNATURE_DELTA: Final = "signature_delta"
_CITATIONS_DELTA: Final = "citations_delta"
NOTICE_SUBTYPE: Final = "stream_notice"
"""``SystemMessage.subtype`` of a note about a stream event that was skipped."""

# SPEC §3 max_tokens row: both stop reasons mean the output was cut short.
_TRUNCATING_STOPS: Final = frozenset({"max_tokens", "model_context_window_exceeded"})

_USAGE_FIELDS: Final = (
    "input_tokens",
    "output_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
)
_USAGE_KEYS: Final = frozenset(
    {*_USAGE_FIELDS, "cache_creation", "server_tool_use", "service_tier"}
)
_ONLY_INT: Final = frozenset({int})  # a count table's values are all exactly ints
_NO_USAGE: Final = Usage()  # shared (a frozen value): what a response used before it reports
# Built for every usage report and content block (record_builder says why).
_new_usage = record_builder(Usage)
_new_assistant_message = record_builder(AssistantMessage)
_new_text_block = record_builder(TextBlock)


@attrs.define(slots=True)
class _OpenBlock:
    """A content block between its start and stop events (mutable, private)."""

    kind: str
    pieces: list[str]
    signature: str = ""
    tool_id: str = ""
    tool_name: str = ""
    start_input: dict[str, Any] = attrs.field(factory=dict)
    data: str = ""
    citations: list[dict[str, Any]] = attrs.field(factory=list)
    caller: dict[str, Any] | None = None
    raw: dict[str, Any] = attrs.field(factory=dict)  # an opaque block's JSON, updated in place


def _protocol_error(event_type: str, index: object, problem: str) -> ModelProtocolError:
    where = f" (index {index})" if index is not None else ""
    return ModelProtocolError(f"stream event {event_type}{where}: {problem}")


def _string(value: object, event_type: str, index: object, field: str) -> str:
    if not isinstance(value, str):
        raise _protocol_error(
            event_type, index, f"{field} must be a string, got {type(value).__name__}"
        )
    return value


def _usage_from(raw: object, previous: Usage, event_type: str) -> Usage:
    """Usage from an event's ``usage`` dict; absent or null fields keep the previous value."""
    if raw is None:
        return previous
    if type(raw) is not dict and not isinstance(raw, Mapping):
        raise _protocol_error(event_type, None, "usage must be an object")
    get = raw.get
    input_tokens = get("input_tokens")
    output_tokens = get("output_tokens")
    cache_creation_tokens = get("cache_creation_input_tokens")
    cache_read_tokens = get("cache_read_input_tokens")
    # Every event of a response names all four counts; read one by one only when one is
    # missing (it keeps the previous value) or wrong (a protocol error).
    if not (
        type(input_tokens) is int
        and type(output_tokens) is int
        and type(cache_creation_tokens) is int
        and type(cache_read_tokens) is int
    ):
        input_tokens, output_tokens, cache_creation_tokens, cache_read_tokens = _counts(
            raw, previous, event_type
        )
    cache_creation = get("cache_creation")
    cache_creation = (
        previous.cache_creation
        if cache_creation is None
        else _count_table(cache_creation, "cache_creation", event_type)
    )
    server_tool_use = get("server_tool_use")
    server_tool_use = (
        previous.server_tool_use
        if server_tool_use is None
        else _count_table(server_tool_use, "server_tool_use", event_type)
    )
    tier = get("service_tier")
    # Fields this model does not name are kept as received, the newest value winning.
    extra = dict(previous.extra) if previous.extra else {}
    unknown = raw.keys() - _USAGE_KEYS
    if unknown:
        # In the order received: a set has none (one such field is the usual case).
        for key in unknown if len(unknown) == 1 else raw:
            value = raw[key]
            if value is not None and key in unknown:
                extra[key] = value
    return _new_usage(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cache_creation_input_tokens=cache_creation_tokens,
        cache_read_input_tokens=cache_read_tokens,
        cache_creation=cache_creation,
        server_tool_use=server_tool_use,
        service_tier=(
            previous.service_tier
            if tier is None
            else _string(tier, event_type, None, "service_tier")
        ),
        extra=extra,
    )


def _counts(raw: Mapping[str, Any], previous: Usage, event_type: str) -> list[int]:
    """The four counts of a usage dict, in ``_USAGE_FIELDS`` order, absent ones kept."""
    counts: list[int] = []
    for name in _USAGE_FIELDS:
        value = raw.get(name)
        if value is None:
            value = getattr(previous, name)
        elif type(value) is not int:
            raise _protocol_error(event_type, None, f"usage.{name} must be an integer")
        counts.append(value)
    return counts


def _count_table(table: object, name: str, event_type: str) -> dict[str, int]:
    """A copy of a usage table of counts by name (``cache_creation``, ``server_tool_use``)."""
    if (type(table) is dict or isinstance(table, Mapping)) and _ONLY_INT.issuperset(
        map(type, table.values())
    ):
        return dict(table)
    raise _protocol_error(event_type, None, f"usage.{name} must map names to integers")


@attrs.define(slots=True)
class StreamAssembler:
    """Accumulates one streamed model response (mutable: one per request, SPEC §3).

    Attributes:
        request_id: The id of the ``CallModel`` effect this stream answers.
        model: The model the request asked for; used when ``message_start`` names none.
        new_uuid: Supplies transcript uuids (the core's counter, never random).
        max_output_tokens: The output cap the request was sent with (for the max_tokens text).
        message_id: ``message.id`` from ``message_start``, shared by every block's message.
        response_model: ``message.model`` from ``message_start`` (falls back to ``model``).
        stop_reason: From ``message_delta``; None until it arrives.
        usage: Cumulative usage as known so far.
        started: ``message_start`` seen.
        finished: ``message_stop`` seen.
        blocks_completed: Content blocks stopped so far.
        tool_input_errors: tool_use id → error text, for tool input that was not a JSON object.
        notices: What was skipped or repaired, in order (each also returned as a
            ``stream_notice`` system message).
    """

    request_id: str = attrs.field(kw_only=True)
    model: str = attrs.field(kw_only=True)
    new_uuid: Callable[[], str] = attrs.field(kw_only=True)
    max_output_tokens: int = attrs.field(default=0, kw_only=True)

    message_id: str | None = attrs.field(default=None, init=False)
    response_model: str = attrs.field(default="", init=False)
    stop_reason: str | None = attrs.field(default=None, init=False)
    stop_sequence: str | None = attrs.field(default=None, init=False)
    stop_details: dict[str, Any] | None = attrs.field(default=None, init=False)
    usage: Usage = attrs.field(default=_NO_USAGE, init=False)
    started: bool = attrs.field(default=False, init=False)
    finished: bool = attrs.field(default=False, init=False)
    blocks_completed: int = attrs.field(default=0, init=False)
    tool_input_errors: dict[str, str] = attrs.field(factory=dict, init=False)
    notices: list[str] = attrs.field(factory=list, init=False)

    _open: dict[int, _OpenBlock] = attrs.field(factory=dict, init=False)
    _used_indices: set[int] = attrs.field(factory=set, init=False)
    run_tool_ids: set[str] = attrs.field(factory=set, kw_only=True)
    """Every tool_use id seen so far in the run; the assembler adds this response's ids."""
    _truncation_reported: bool = attrs.field(default=False, init=False)
    _poisoned: str | None = attrs.field(default=None, init=False)

    # --- public ---------------------------------------------------------------------------

    def feed(self, event: Mapping[str, Any]) -> tuple[Message, ...]:
        """Fold one raw stream event into the response.

        Args:
            event: The event as the SDK's ``model_dump()`` gives it; unknown keys are ignored.

        Returns:
            The messages this event completed: one ``AssistantMessage`` per stopped content
            block, or a withheld ``ApiErrorMessage`` when the output was cut short.

        Raises:
            ModelProtocolError: The event is malformed or out of order; the assembler then
                refuses every later event.
        """
        if self._poisoned is not None:
            raise ModelProtocolError(
                f"stream assembler for request {self.request_id} already failed "
                f"({self._poisoned}); start a new one for the next attempt"
            )
        try:
            # The delta branch comes first and stays short: it runs once per chunk.
            kind = event.get("type")
            if kind == "content_block_delta":
                return self._on_delta(event)
            handler = _EVENT_HANDLERS.get(kind) if isinstance(kind, str) else None
            if handler is None:
                return self._notice(texts.stream_event_skipped(str(kind)))
            return handler(self, event)
        except ModelProtocolError as error:
            self._poisoned = str(error)
            raise
        except (KeyError, TypeError, AttributeError) as error:
            # A missing key or a wrong container type deep in the event.
            problem = f"malformed event ({type(error).__name__}: {error})"
            kind = event.get("type") if isinstance(event, Mapping) else type(event).__name__
            wrapped = _protocol_error(str(kind), _event_index(event), problem)
            self._poisoned = str(wrapped)
            raise wrapped from error

    def truncated_reason(self) -> str | None:
        """Why the stream is incomplete, or None if it finished properly (SPEC §3 empty stream).

        Returns:
            None after a ``message_stop`` that closed a response with at least one block or a
            stop reason; otherwise a short text for the fallback decision and the trace.
        """
        if not self.started:
            return texts.STREAM_NO_MESSAGE_START
        if self._open:
            return texts.stream_block_left_open(min(self._open))
        if self.blocks_completed == 0 and self.stop_reason is None:
            return texts.STREAM_EMPTY
        if not self.finished:
            return texts.STREAM_NO_MESSAGE_STOP
        return None

    def finalized(self, message: AssistantMessage) -> AssistantMessage:
        """A copy of ``message`` carrying the final stop reason and usage.

        The reference patches these onto the last yielded message in place (SPEC §3); our
        messages are frozen, so the loop swaps in this copy when it wants them on the message.
        """
        # Built directly, not with attrs.evolve (once per response; test_stream checks that
        # every other field is carried over).
        return _new_assistant_message(
            uuid=message.uuid,
            message_id=message.message_id,
            content=message.content,
            model=message.model,
            stop_reason=self.stop_reason,
            usage=self.usage,
            stop_details=self.stop_details,
        )

    # --- per event ----------------------------------------------------------------------

    def _on_delta(self, event: Mapping[str, Any]) -> tuple[Message, ...]:
        index = event["index"]
        block = self._open.get(index)
        if block is None:
            if self.finished:
                raise _protocol_error("content_block_delta", index, "arrived after message_stop")
            raise _protocol_error("content_block_delta", index, "no open block at this index")
        delta = event["delta"]
        delta_type = delta["type"]
        rule = _DELTAS.get(delta_type)
        if rule is None or block.kind != rule[0]:
            return self._on_other_delta(block, index, delta, delta_type)
        piece = delta[rule[1]]
        if piece.__class__ is not str:
            _string(piece, "content_block_delta", index, f"delta.{rule[1]}")
        block.pieces.append(piece)
        return _NOTHING

    def _on_other_delta(
        self, block: _OpenBlock, index: int, delta: Mapping[str, Any], delta_type: object
    ) -> tuple[Message, ...]:
        """Deltas off the hot path: signatures, citations, input of server tools, and the
        rest, applied when the block can take them and otherwise skipped with a notice."""
        if delta_type == _SIGNATURE_DELTA and block.kind == _THINKING:
            # The SDK replaces the signature; a second signature_delta is a new signature.
            block.signature = _string(
                delta["signature"], "content_block_delta", index, "delta.signature"
            )
            return _NOTHING
        if delta_type == _CITATIONS_DELTA and block.kind == _TEXT:
            citation = delta["citation"]
            if not isinstance(citation, Mapping):
                raise _protocol_error("content_block_delta", index, "citation must be an object")
            block.citations.append(dict(citation))
            return _NOTHING
        takes_input = block.kind == _SERVER_TOOL_USE or (
            block.kind == _OPAQUE and "input" in block.raw
        )
        if delta_type == _INPUT_JSON_DELTA and takes_input:
            block.pieces.append(
                _string(delta["partial_json"], "content_block_delta", index, "delta.partial_json")
            )
            return _NOTHING
        if block.kind == _OPAQUE and delta_type == f"{block.raw.get('type')}_delta":
            # A delta named for its block (compaction_delta on compaction) sets its fields.
            block.raw.update((key, value) for key, value in delta.items() if key != "type")
            return _NOTHING
        return self._notice(
            texts.stream_delta_skipped(str(delta_type), block.raw.get("type", block.kind), index)
        )

    def _notice(self, text: str) -> tuple[Message, ...]:
        self.notices.append(text)
        return (SystemMessage(uuid=self.new_uuid(), subtype=NOTICE_SUBTYPE, text=text),)

    def _on_ping(self, event: Mapping[str, Any]) -> tuple[Message, ...]:
        return _NOTHING

    def _on_message_stop(self, event: Mapping[str, Any]) -> tuple[Message, ...]:
        self._require_open_message("message_stop", None)
        closed: list[Message] = []
        for index in sorted(self._open):
            # Tolerated as the SDK does: the block ends with the message.
            closed.extend(self._notice(texts.stream_block_closed_by_message_stop(index)))
            closed.extend(self._close_block(self._open.pop(index), cut_short=True))
        self.finished = True
        return tuple(closed)

    def _on_error(self, event: Mapping[str, Any]) -> tuple[Message, ...]:
        raise _protocol_error("error", None, f"the stream reported an error: {event!r}")

    def _require_open_message(self, event_type: str, index: object) -> None:
        """Between ``message_start`` and ``message_stop``, or a protocol error."""
        if not self.started:
            raise _protocol_error(event_type, index, "arrived before message_start")
        if self.finished:
            raise _protocol_error(event_type, index, "arrived after message_stop")

    def _on_message_start(self, event: Mapping[str, Any]) -> tuple[Message, ...]:
        if self.started:
            raise _protocol_error("message_start", None, "a second message_start in one stream")
        message = event["message"]
        if type(message) is not dict and not isinstance(message, Mapping):
            raise _protocol_error("message_start", None, "message must be an object")
        self.message_id = _string(message["id"], "message_start", None, "message.id")
        model = message.get("model")
        self.response_model = model if isinstance(model, str) and model else self.model
        self.usage = _usage_from(message.get("usage"), self.usage, "message_start")
        self.started = True
        return _NOTHING

    def _on_block_start(self, event: Mapping[str, Any]) -> tuple[Message, ...]:
        if not self.started or self.finished:
            self._require_open_message("content_block_start", event.get("index"))
        index = event["index"]
        if type(index) is not int or index < 0:
            raise _protocol_error("content_block_start", index, "index must be an integer ≥ 0")
        if index in self._used_indices:
            raise _protocol_error("content_block_start", index, "index already used")
        raw = event["content_block"]
        if type(raw) is not dict and not isinstance(raw, Mapping):
            raise _protocol_error("content_block_start", index, "content_block must be an object")
        kind = raw["type"]
        if kind == _TEXT:
            text = _string(raw.get("text", ""), "content_block_start", index, "text")
            citations = raw.get("citations") or []
            if not isinstance(citations, list):
                raise _protocol_error("content_block_start", index, "citations must be a list")
            block = _OpenBlock(
                kind=kind,
                pieces=[text] if text else [],
                citations=[dict(c) for c in citations] if citations else [],
            )
        elif kind == _THINKING:
            thinking = _string(raw.get("thinking", ""), "content_block_start", index, "thinking")
            signature = raw.get("signature") or ""
            signature = _string(signature, "content_block_start", index, "signature")
            block = _OpenBlock(
                kind=kind, pieces=[thinking] if thinking else [], signature=signature
            )
        elif kind == _REDACTED:
            data = _string(raw["data"], "content_block_start", index, "data")
            block = _OpenBlock(kind=kind, pieces=[], data=data)
        elif kind in (_TOOL_USE, _SERVER_TOOL_USE):
            tool_id = _string(raw["id"], "content_block_start", index, "id")
            name = _string(raw["name"], "content_block_start", index, "name")
            if not tool_id:
                raise _protocol_error("content_block_start", index, f"{kind} id is empty")
            if tool_id in self.run_tool_ids:
                # Two calls under one id could not each get their one tool_result, and the
                # driver could not tell a late report of a withdrawn call from the new one's.
                raise _protocol_error(
                    "content_block_start",
                    index,
                    f"duplicate {kind} id {tool_id!r} (already used in this run)",
                )
            self.run_tool_ids.add(tool_id)
            start_input = raw.get("input") or {}
            if not isinstance(start_input, dict):
                raise _protocol_error("content_block_start", index, "input must be an object")
            caller = raw.get("caller")
            if caller is not None and not isinstance(caller, dict):
                raise _protocol_error("content_block_start", index, "caller must be an object")
            block = _OpenBlock(
                kind=kind,
                pieces=[],
                tool_id=tool_id,
                tool_name=name,
                start_input=start_input,
                caller=caller,
            )
        elif isinstance(kind, str) and kind:
            # Kept as received, key order included, and sent back unchanged.
            block = _OpenBlock(kind=_OPAQUE, pieces=[], raw=dict(raw))
        else:
            raise _protocol_error("content_block_start", index, "content_block.type is missing")
        self._used_indices.add(index)
        self._open[index] = block
        return _NOTHING

    def _on_block_stop(self, event: Mapping[str, Any]) -> tuple[Message, ...]:
        if not self.started or self.finished:
            self._require_open_message("content_block_stop", event.get("index"))
        index = event["index"]
        block = self._open.pop(index, None)
        if block is None:
            problem = "block already stopped" if index in self._used_indices else "never started"
            raise _protocol_error("content_block_stop", index, problem)
        return self._close_block(block, cut_short=False)

    def _close_block(self, block: _OpenBlock, *, cut_short: bool) -> tuple[Message]:
        """The message of a finished block; ``cut_short`` when ``message_stop`` ended it."""
        content: ContentBlock
        if block.kind == _TEXT:
            content = _new_text_block(text="".join(block.pieces), citations=tuple(block.citations))
        elif block.kind == _THINKING:
            content = ThinkingBlock(thinking="".join(block.pieces), signature=block.signature)
        elif block.kind == _REDACTED:
            content = RedactedThinkingBlock(data=block.data)
        elif block.kind in (_TOOL_USE, _SERVER_TOOL_USE):
            call = ToolUseBlock if block.kind == _TOOL_USE else ServerToolUseBlock
            content = call(
                id=block.tool_id,
                name=block.tool_name,
                input=self._tool_input(block, cut_short=cut_short),
                caller=block.caller,
            )
        else:
            if block.pieces:
                block.raw["input"] = self._tool_input(block, cut_short=cut_short)
            content = OpaqueBlock(data=block.raw)
        self.blocks_completed += 1
        assert self.message_id is not None  # set by message_start, checked before this
        return (
            _new_assistant_message(
                uuid=self.new_uuid(),
                message_id=self.message_id,
                content=(content,),
                model=self.response_model,
                usage=self.usage,
            ),
        )

    def _tool_input(self, block: _OpenBlock, *, cut_short: bool) -> dict[str, Any]:
        """Parse the streamed input JSON; a bad one becomes ``{}`` plus an error text.

        Input cut off by ``message_stop`` is read as far as it is complete (as the SDK reads
        it), and the call gets an error text all the same: it must not run on half its input.
        """
        raw = "".join(block.pieces)
        if not raw.strip():
            return dict(block.start_input)  # SPEC §3: no input deltas means the start's input ({})
        if cut_short:
            self.tool_input_errors[block.tool_id] = texts.invalid_tool_input(
                block.tool_name, "the response ended before the input was complete"
            )
            try:
                partial = jiter.from_json(raw.encode(), partial_mode=True)
            except ValueError:
                return {}
            return partial if isinstance(partial, dict) else {}
        try:
            parsed = orjson.loads(raw)
        except orjson.JSONDecodeError as error:
            self.tool_input_errors[block.tool_id] = texts.invalid_tool_input(
                block.tool_name, f"not valid JSON: {error}"
            )
            return {}
        if not isinstance(parsed, dict):
            self.tool_input_errors[block.tool_id] = texts.invalid_tool_input(
                block.tool_name, f"expected a JSON object, got {type(parsed).__name__}"
            )
            return {}
        return parsed

    def _on_message_delta(self, event: Mapping[str, Any]) -> tuple[Message, ...]:
        if not self.started or self.finished:
            self._require_open_message("message_delta", None)
        delta = event.get("delta") or {}
        if type(delta) is not dict and not isinstance(delta, Mapping):
            raise _protocol_error("message_delta", None, "delta must be an object")
        stop_reason = delta.get("stop_reason")
        if stop_reason is not None:
            self.stop_reason = _string(stop_reason, "message_delta", None, "stop_reason")
        stop_sequence = delta.get("stop_sequence")
        if stop_sequence is not None:
            self.stop_sequence = _string(stop_sequence, "message_delta", None, "stop_sequence")
        stop_details = delta.get("stop_details")
        if stop_details is not None:
            if not isinstance(stop_details, Mapping):
                raise _protocol_error("message_delta", None, "stop_details must be an object")
            self.stop_details = dict(stop_details)
        # NOTES: message_delta usage is cumulative, so it replaces what we had.
        self.usage = _usage_from(event.get("usage"), self.usage, "message_delta")
        if self.stop_reason in _TRUNCATING_STOPS and not self._truncation_reported:
            # SPEC §3 max_tokens row, SPEC §2.3: withheld until recovery has failed.
            self._truncation_reported = True
            text = (
                texts.max_output_tokens_reached(self.max_output_tokens)
                if self.stop_reason == "max_tokens"
                else texts.CONTEXT_WINDOW_EXCEEDED
            )
            return (
                ApiErrorMessage(
                    uuid=self.new_uuid(),
                    kind=ApiErrorKind.MAX_OUTPUT_TOKENS,
                    text=text,
                    withheld=True,
                ),
            )
        return _NOTHING


# Stream events other than deltas, by ``type``; any other type is skipped with a notice.
_EventHandler = Callable[[StreamAssembler, Mapping[str, Any]], tuple[Message, ...]]
_EVENT_HANDLERS: Final[dict[str, _EventHandler]] = {
    "ping": StreamAssembler._on_ping,
    "content_block_start": StreamAssembler._on_block_start,
    "content_block_stop": StreamAssembler._on_block_stop,
    "message_delta": StreamAssembler._on_message_delta,
    "message_start": StreamAssembler._on_message_start,
    "message_stop": StreamAssembler._on_message_stop,
    "error": StreamAssembler._on_error,
}


def _event_index(event: object) -> object:
    """The ``index`` of a raw event when it has one (for error messages), else None."""
    if isinstance(event, Mapping):
        return event.get("index")
    return None
