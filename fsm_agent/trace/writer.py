"""The trace writer: JSONL, one line per feed, flushed per line.

Every line is one orjson rendering with sorted keys, ``seq`` stamped and redacted (DESIGN
§8). The lines of the hot path — an event with what the core made of it, and the ``end``
record — are rendered and written directly: a logger's machinery added nothing there but its
cost (issue 10). An event line is rendered in one go: the event's bytes (rendered before
``feed``) and the step's transitions (:mod:`~fsm_agent.trace.step_bytes`) go in as
``orjson.Fragment``, each effect as its renderer builds it
(:mod:`~fsm_agent.trace.render_fns`, which judges its keys as it builds), and the finished
line is searched for secrets once; a line that holds a sensitive key name or a secret, or a
value orjson refuses, is rendered as it always was, part by part from the codec's dicts and
redacted. The header's bytes around its ``meta`` are made once per (config, tools), the
whole line once when ``meta`` is empty (:mod:`~fsm_agent.trace.header_parts`). A tool input's
``input_json_delta`` pieces are rewritten first, by the writer's scanners
(:mod:`~fsm_agent.trace.stream_input_redaction`); the core is fed the event as it came.

A file the writer opens is written unbuffered (each line is flushed anyway). When the file
refuses a line (a full disk), nothing of that feed's step is performed: the writer cuts the
file back to its last whole line, raises :class:`~fsm_agent.errors.TraceWriteFailed` and takes
no further record, so the file reads as a run that stopped there and can be resumed.

Records copied from another trace (:meth:`TraceWriter.write_record`, a replayed prefix) go
through a structlog logger built locally with ``structlog.wrap_logger`` (never
``structlog.configure``, which is process-global) when the first is copied: our processors
stamp ``seq`` and redact, then ``JSONRenderer`` renders the same bytes and ``BytesLogger``
writes and flushes them. The serializer's ``default=`` raises, so an object that was not
unstructured fails loudly instead of leaving a ``repr`` (with a memory address) in the trace.

Order of use (DESIGN §5, schema 3 in :mod:`fsm_agent.trace.records`):
:meth:`TraceWriter.prepare_event` renders the event's line before the core sees the event (an
event the trace cannot hold is refused there, so no core takes an event its trace lacks);
``feed``; then :meth:`TraceWriter.write_event_line` with the step, before the driver performs
any of its effects (with no step when ``feed`` raised: the event alone).
:meth:`TraceWriter.write_end` once the run has ended. :class:`TracingCore` does exactly that
around a core.
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
from collections.abc import Callable, Iterable, Mapping, MutableMapping
from types import TracebackType
from typing import IO, Any, Final, NamedTuple, Protocol

import orjson

import fsm_agent
from fsm_agent.core.codec import dump_effect, dump_message
from fsm_agent.core.config import LoopConfig
from fsm_agent.core.effects import CancelTool
from fsm_agent.core.events import Event, ModelStreamEvent, ToolProgressReported, TurnStarted
from fsm_agent.core.messages import Message, Usage
from fsm_agent.core.step import Step
from fsm_agent.core.tool_spec import ToolSpec
from fsm_agent.errors import FsmAgentError, TraceWriteFailed, UsageError
from fsm_agent.trace import records
from fsm_agent.trace.closed_fields import sensitive_key_in
from fsm_agent.trace.exclusive_file import open_exclusive
from fsm_agent.trace.header_parts import header_parts
from fsm_agent.trace.message_dumps import TranscriptJson
from fsm_agent.trace.redact import KEY_RULES_ONLY, Redactor, has_sensitive_key
from fsm_agent.trace.render_fns import render_effect, render_event
from fsm_agent.trace.step_bytes import effects_field, transitions_array, transitions_field
from fsm_agent.trace.stream_input_redaction import StreamInputRedaction
from fsm_agent.trace.stream_shapes import known_stream_event
from fsm_agent.trace.stream_text_holdback import (
    BlockKey,
    StreamTextHoldback,
    progress_call,
    progress_key,
    text_key,
)

_MESSAGES_GAP: Final = b'"messages":[]'
"""Where a ``TurnStarted`` record written without its messages takes them."""
_EVENT_VALUE: Final = slice(len(b'{"event":'), -1)
"""Where the event is in ``{"event": ...}`` rendered."""
_OPTIONS: Final = records.JSON_OPTIONS
_LINE_OPTIONS: Final = records.JSON_OPTIONS | orjson.OPT_APPEND_NEWLINE
_NOTHING: Final = Step()
"""The step of a piece of text written on its own: the core only adds it."""
_SEQ_LIMIT: Final = 2**63
"""A ``seq`` below this is written as orjson writes an integer (in decimal)."""


class CoreLike(Protocol):
    """What the trace package needs from a core (``AgentCore`` satisfies it)."""

    def feed(self, event: Event) -> Step:
        """Process one event."""
        ...

    @property
    def phase(self) -> str:
        """The loop machine's current phase."""
        ...

    @property
    def terminal(self) -> str | None:
        """The terminal reason once the run has ended."""
        ...

    @property
    def transcript(self) -> tuple[Message, ...]:
        """The messages so far."""
        ...

    @property
    def usage(self) -> Usage:
        """Token usage totals."""
        ...


@functools.cache
def current_table_digest() -> str:
    """The digest of this library's machine tables (imported lazily: tables are heavy; and
    kept, since every writer records it)."""
    from fsm_agent.core.tables import table_digest  # noqa: PLC0415 - lazy on purpose

    digest: str = table_digest()
    return digest


class EventLine(NamedTuple):
    """An event's line, rendered before the core sees the event
    (:meth:`TraceWriter.prepare_event`).

    Attributes:
        rendered: ``{"event": …}`` rendered, the event where it sits in the line, not yet
            searched for secrets; None when the line is in ``parts``.
        fields: the line's own fields (``record``, ``seq`` stamped, ``elapsed_ms``).
        parts: otherwise, the line's bytes for the event alone (redacted, no newline), in
            parts to be joined: one for most events; a turn's first event joins the kept
            bytes of its transcript on only when the line is written, so that they are
            copied once.
        event: the event as the trace holds it (a stream event whose tool-input text was
            redacted is a copy; the core is fed the event it was given).
    """

    rendered: bytes | None
    fields: dict[str, Any]
    parts: tuple[bytes, ...]
    event: Event


_Prepared = tuple[bytes | None, dict[str, Any], tuple[bytes, ...], Event]
"""An :class:`EventLine` as a plain tuple (the hot path makes one per event)."""


class _Cut(NamedTuple):
    """A piece of text whose end may begin a secret
    (:mod:`~fsm_agent.trace.stream_text_holdback`): a stream delta, or a tool's progress text.
    The event as its line holds it, the key of the text it adds to, the field holding its
    piece (in the delta, or the event's ``text``), the piece, and how many of its last
    characters may begin one."""

    event: ModelStreamEvent | ToolProgressReported
    key: BlockKey
    field: str
    text: str
    size: int

    def with_text(self, text: str) -> ModelStreamEvent | ToolProgressReported:
        """The event with ``text`` for its piece."""
        event = self.event
        if isinstance(event, ToolProgressReported):
            return ToolProgressReported(call_id=event.call_id, text=text)
        delta = {**event.event["delta"], self.field: text}
        return ModelStreamEvent(request_id=event.request_id, event={**event.event, "delta": delta})


class _Held(NamedTuple):
    """A piece's line not written yet, with its step, and the lines of the events that came
    after it and pass over it (a ``ping``, a tool's event whose step performs nothing), not
    written yet either."""

    line: _Prepared
    step: Step
    cut: _Cut
    after: list[tuple[_Prepared, Step]]


def _passes_over(request_id: str, raw: Any, key: BlockKey) -> bool:
    """Whether a stream event of request ``request_id`` leaves block ``key`` going on: a
    ``ping`` of its request (the API sends one to keep a quiet stream open, also between two
    pieces of a block)."""
    return request_id == key[0] and type(raw) is dict and raw.get("type") == "ping"


def _continues(key: BlockKey, request_id: str, raw: Any) -> str | None:
    """The piece of text that a stream event of request ``request_id`` adds to block
    ``key``; None when it adds none to it."""
    shape = text_key(raw)
    if shape is None or request_id != key[0] or shape[0] != key[1] or shape[1] != key[2]:
        return None
    piece: str = raw["delta"][shape[2]]
    return piece


def _ends_text(step: Step | None, key: BlockKey) -> bool:
    """Whether no piece of text ``key`` can come after ``step``, so that what is held of it
    is written where it stands, the text being whole there: a feed that raised; for a
    block, a step of the loop's machine (the stream ended, failed, was aborted or retried);
    for a call's progress, a step that moves or cancels that call, or ends the run (the
    loop's steps between do not: a call goes on running when the stream it started in ends).
    """
    if step is None:
        return True
    call_id = progress_call(key)
    if call_id is None:
        return any(taken.machine == "loop" for taken in step.transitions)
    if step.terminal is not None:
        return True
    return any(taken.call_id == call_id for taken in step.transitions) or any(
        type(effect) is CancelTool and effect.call_id == call_id for effect in step.effects
    )


class TraceWriter:
    """Writes one run's trace.

    Args:
        target: a path (the file is created or truncated, and locked for this writer: see
            :mod:`~fsm_agent.trace.exclusive_file`) or a binary file opened for writing (left
            open by :meth:`close`; it is flushed after every record).
        config: the core's loop configuration (recorded in the header).
        tools: the core's tool specs (recorded in the header).
        secrets: strings that must never reach the file (an API key, say); see
            :mod:`fsm_agent.trace.redact` for the key-name rules applied as well.
        meta: free-form header metadata (wall time, host...); replay and diff ignore it.
        table_digest: the tables digest to record; defaults to this library's tables.
        clock: seconds from a monotonic clock (``time.monotonic``); when given, event
            records other than stream deltas carry :data:`~fsm_agent.trace.records.ELAPSED`,
            the milliseconds since the writer was made. Replay ignores it.
        next_seq: when given, the trace was begun by another writer (a run that goes on in
            another process, e.g. a continued Temporal run): no header is written, and the
            records are numbered on from this ``seq``.
        started: with ``next_seq``, the ``clock`` value the first writer started at, so that
            elapsed times go on counting from the start of the run.
        transcript: the serialized transcript of the conversation's last turn (a session
            keeps one over its turns), so that a ``TurnStarted`` record serializes only the
            messages the turn added.
        overwrite: with a path, whether a file holding an earlier run's trace is emptied
            (True) or refused (False, as a run's writer does: ``TraceFileHoldsRun``).

    Raises:
        TraceFileBusy: another writer is writing the file ``target`` names (nothing of it is
            touched).
        TraceFileHoldsRun: with ``overwrite=False``, the file holds an earlier run's trace
            (nothing of it is touched).
        UsageError: from a ``write_*`` call whose record holds something that is not JSON.
        TraceWriteFailed: from a ``write_*`` call the file refused (a full disk, say): the
            file is cut back to its last whole record where it can be, and every later
            ``write_*`` call raises it again.
    """

    def __init__(
        self,
        target: str | os.PathLike[str] | IO[bytes],
        *,
        config: LoopConfig,
        tools: Iterable[ToolSpec] = (),
        secrets: Iterable[str] = (),
        meta: Mapping[str, Any] | None = None,
        table_digest: str | None = None,
        clock: Callable[[], float] | None = None,
        next_seq: int | None = None,
        started: float | None = None,
        transcript: TranscriptJson | None = None,
        overwrite: bool = True,
    ) -> None:
        self._clock = clock
        self._transcript = transcript if transcript is not None else TranscriptJson()
        if started is not None:
            self._started = started
        else:
            self._started = clock() if clock is not None else 0.0
        self._refused: Callable[[], TraceWriteFailed] | None = None
        """Makes the error a refused record raises again (its file refused one)."""
        if isinstance(target, str | os.PathLike):
            # Unbuffered: every record is flushed anyway, and a failed write leaves no bytes
            # behind in a buffer, so the file can be cut back to its last whole record.
            self._name: str | None = os.fspath(target)
            # One writer at a time: a second run given the same file is refused before it
            # truncates what the first writes (:mod:`~fsm_agent.trace.exclusive_file`).
            self._file: IO[bytes] = open_exclusive(target, overwrite=overwrite)
            self._owns_file = True
            self._cuttable = True
        else:
            self._file = target
            self._owns_file = False
            name = getattr(target, "name", None)
            self._name = name if isinstance(name, str) else None
            # A buffer could hold part of a refused line: only a raw file is cut back.
            self._cuttable = isinstance(target, io.RawIOBase)
        secrets = tuple(secrets)
        # Most writers have no secret string: they share the redactor of the key rules.
        self._redactor = Redactor(secrets) if secrets else KEY_RULES_ONLY
        self._stream_inputs = StreamInputRedaction()
        self._holdback = StreamTextHoldback(self._redactor.spellings)
        self._held: _Held | None = None
        """A piece's line held back until the next event says how to write it."""
        self._pending: dict[BlockKey, _Cut] = {}
        """Pieces written without their held ends, which are kept for the next piece of
        their text (something that could not wait came between them), by that text."""
        self._waiting = False
        """Whether a line is held or an end kept: the one test every event's line makes
        (DESIGN §7: most runs hold nothing, and pay for no more than this)."""
        self._cut: _Cut | None = None
        """For the line :meth:`_prepare` made last: the characters it may hold back."""
        self._next_seq = 1 if next_seq is None else next_seq
        self._closed = False
        self.ended = False
        """Whether the ``end`` record has been written."""
        self._logger: Any = None  # built when a record is first copied (write_record)
        self.header = records.TraceHeader(
            schema=records.SCHEMA_VERSION,
            library_version=fsm_agent.__version__,
            table_digest=current_table_digest() if table_digest is None else table_digest,
            config=config,
            tools=tuple(tools),
            meta=dict(meta or {}),
        )
        self._parts = header_parts(config, self.header.tools)
        if next_seq is None:
            self._write_header()

    @property
    def started(self) -> float:
        """The ``clock`` value elapsed times count from (0.0 without a clock)."""
        return self._started

    # --- processors ----------------------------------------------------------------------

    def _stamp_seq(
        self, _logger: object, _method: str, event_dict: MutableMapping[str, Any]
    ) -> MutableMapping[str, Any]:
        if event_dict.get("record") != "header":
            event_dict["seq"] = self._next_seq
        return event_dict

    def _serialize(self, event_dict: MutableMapping[str, Any], **_options: Any) -> bytes:
        return self._render(event_dict, keys_hit=has_sensitive_key(event_dict))

    def _render(self, fields: Mapping[str, Any], *, keys_hit: bool) -> bytes:
        """``fields`` serialized and redacted; ``keys_hit``: whether a sensitive key name
        occurs in it (the caller knows which parts are the writer's own)."""
        try:  # what records.dumps does first, without its call (every line comes here)
            data = orjson.dumps(fields, default=records.refuse_unknown, option=records.JSON_OPTIONS)
        except orjson.JSONEncodeError:
            data = records.dumps(fields)  # rewrites what orjson refuses, or raises
        if keys_hit or self._redactor.holds_secret(data):
            data = records.dumps(self._redactor.value(fields))
        return data

    # --- writing -------------------------------------------------------------------------

    @property
    def next_seq(self) -> int:
        """The ``seq`` the next record will get."""
        return self._next_seq

    def _write_header(self) -> None:
        """Line 1: its bytes around ``meta`` made once per (config, tools), its config and
        tools scanned for key names once as well (:mod:`~fsm_agent.trace.header_parts`)."""
        parts, header = self._parts, self.header
        try:
            line = parts.line(header)
            if (
                parts.keys_hit
                or has_sensitive_key(header.meta)
                or self._redactor.holds_secret(line)
            ):
                record = header.record_with(config=parts.config, tools=parts.tools)
                line = records.dumps(self._redactor.value(record))
        except (orjson.JSONEncodeError, TypeError) as exc:
            raise UsageError(f"the header cannot be written: {exc.__cause__ or exc}") from exc
        self._put(line + b"\n")

    def _structlog_logger(self) -> Any:
        """The structlog logger that copies records (:meth:`write_record`), built on first use:
        our processors stamp ``seq`` and redact, ``JSONRenderer`` renders with our serializer,
        ``BytesLogger`` writes and flushes."""
        if self._logger is None:
            import structlog  # noqa: PLC0415 - lazy: most writers never copy a record

            self._logger = structlog.wrap_logger(
                structlog.BytesLogger(_Sink(self._put)),  # type: ignore[arg-type]  # write, flush
                processors=[
                    self._stamp_seq,
                    # Redaction happens inside the serializer: the rendered bytes are scanned,
                    # and only a record that may hold a secret is walked and rendered again.
                    structlog.processors.JSONRenderer(serializer=self._serialize),
                ],
                # Explicit, so an application's global structlog configuration changes nothing.
                wrapper_class=structlog.BoundLogger,
                context_class=dict,
                cache_logger_on_first_use=True,  # bind once, not on every record
            )
        return self._logger

    def _write(self, fields: Mapping[str, Any]) -> None:
        if self._closed:
            raise self._refusal()
        self._write_whole()
        try:
            self._structlog_logger().msg(**fields)
        except (orjson.JSONEncodeError, TypeError) as exc:
            cause = exc.__cause__ or exc
            raise UsageError(f"record seq {self._next_seq} cannot be written: {cause}") from exc
        self._next_seq += records.seqs_taken(fields)

    def _put(self, data: bytes) -> None:
        """Write and flush ``data`` (whole records); a file that refuses it ends the writing:
        :meth:`_write_failed`."""
        try:
            written = self._file.write(data)
            if written != len(data):  # a raw file may take part of it
                self._write_rest(data, written or 0)
            self._file.flush()
        except OSError as exc:
            raise self._write_failed(exc, taken=0) from exc

    def _write_rest(self, data: bytes, taken: int) -> None:
        """Write what a raw file did not take at once (``taken`` bytes of ``data``)."""
        try:
            while taken < len(data):
                taken += self._file.write(memoryview(data)[taken:]) or 0
        except OSError as exc:
            raise self._write_failed(exc, taken=taken) from exc

    def _write_failed(self, exc: OSError, *, taken: int) -> TraceWriteFailed:
        """The error for a file that refused a record after taking ``taken`` bytes of its
        line. The writer takes no further record, and the file is cut back to its last whole
        record where nothing of the refused one can linger in a buffer (a file the writer
        opened, or a raw file)."""
        cut_back = False
        if self._cuttable:
            try:
                start = self._file.tell() - taken
                os.ftruncate(self._file.fileno(), start)
                self._file.seek(start)
                cut_back = True
            except (OSError, ValueError):
                pass  # the error names the file as possibly cut off
        if self._owns_file:  # nothing more goes to it: close() has nothing left to do
            with contextlib.suppress(OSError):
                self._file.close()
        # The file may lack the transcript this turn started from: no later turn begins in it.
        self._transcript.forget()
        self._refused = functools.partial(
            TraceWriteFailed,
            path=self._name,
            seq=self._next_seq,
            cut_back=cut_back,
            problem=exc.strerror or str(exc),
        )
        self._closed = True
        return self._refused()

    def _refusal(self) -> FsmAgentError:
        """Why the writer takes no record: its file refused one, or it was closed."""
        if self._refused is not None:
            return self._refused()
        return UsageError("the trace writer is closed")

    def write_record(self, fields: Mapping[str, Any]) -> None:
        """Write a record dict as is (``seq`` is stamped; an event line carrying its feed's
        records, or a ``step`` record, takes one per record it stands for); used to copy a
        replayed prefix."""
        data = dict(fields)
        data.pop("seq", None)
        event = data.get("event")
        if data.get("record") == "event" and type(event) is dict:
            data["event"] = self._copied_event(event)
        self._write(data)

    def _copied_event(self, event: dict[str, Any]) -> dict[str, Any]:
        """A copied record's event; a stream event goes through the same scanners as a live
        one (a run that goes on from a copied prefix may be in the middle of a tool input)."""
        raw, request_id = event.get("event"), event.get("request_id")
        if event.get("type") != "ModelStreamEvent" or type(raw) is not dict:
            return event
        if type(request_id) is not str:
            return event
        traced = self._stream_inputs.event(request_id, raw)
        return event if traced is raw else {**event, "event": traced}

    def _line(self, fields: MutableMapping[str, Any], *, keys_hit: bool) -> bytes:
        """One record line for the hot path: ``seq`` stamped, serialized and redacted as the
        logger would, without its machinery (the same bytes). ``keys_hit``: as for
        :meth:`_render`."""
        if self._closed:
            raise self._refusal()
        fields["seq"] = self._next_seq
        try:
            data = self._render(fields, keys_hit=keys_hit)
        except (orjson.JSONEncodeError, TypeError) as exc:
            cause = exc.__cause__ or exc
            raise UsageError(f"record seq {self._next_seq} cannot be written: {cause}") from exc
        return data + b"\n"

    def prepare_event(self, event: Event) -> EventLine:
        """Render ``event``'s line, before the core sees the event: an event the trace cannot
        hold is refused here (``UsageError``), so a core never takes an event its trace
        lacks. Hand the result to :meth:`write_event_line` with what ``feed`` returned
        (nothing may be written in between: the line's ``seq`` is stamped)."""
        return EventLine._make(self._prepare(event))

    def _prepare(self, event: Event) -> _Prepared:
        """:meth:`prepare_event`, as a plain tuple."""
        if self._closed:
            raise self._refusal()
        self._cut = None
        # A record's keys are the writer's own but for the event's and the effects': a stream
        # event's model event is scanned whole (unless it is one of the API's own shapes), any
        # other event's free-form fields only (DESIGN §8).
        if type(event) is ModelStreamEvent:
            raw = event.event
            if type(raw) is not dict:
                records.event_fields(event)  # refuses it
            # A tool input's text: the key rules applied to the JSON it spells (DESIGN §8).
            traced = self._stream_inputs.event(event.request_id, raw)
            if self._waiting:
                self._before_stream_event(event.request_id, traced)
            # A secret may arrive split over pieces: the end of one that may begin a secret
            # is held for the next (:mod:`~fsm_agent.trace.stream_text_holdback`).
            traced, cut = self._holdback.delta(event.request_id, traced)
            if traced is not raw:
                event = ModelStreamEvent(request_id=event.request_id, event=traced)
            if cut:
                shape = text_key(traced)
                if shape is not None:  # always: only a piece of text has a cut
                    index, kind, field = shape
                    if self._held is not None:  # one line is held at a time
                        self._set_held_aside()
                    key = (event.request_id, index, kind)
                    self._cut = _Cut(event, key, field, traced["delta"][field], cut)
            return self._stream_line({"record": "event", "seq": self._next_seq}, event)
        if type(event) is ToolProgressReported:
            event = self._progress(event)
        fields: dict[str, Any] = {"record": "event", "seq": self._next_seq}
        if self._clock is not None:
            fields[records.ELAPSED] = round((self._clock() - self._started) * 1000, 1)
        if type(event) is TurnStarted:  # its transcript's bytes are kept: joined on
            return None, fields, self._event_parts(event, fields), event
        value, keys_hit = render_event(event)
        return self._rendered_line(fields, event, value, keys_hit=keys_hit)

    def _before_stream_event(self, request_id: str, raw: Any) -> None:
        """Write what a stream event of request ``request_id`` (its model event ``raw`` as
        the trace is to hold it) decides: a held delta's line, without its held end when a
        secret may run on into this event's piece of the block, whole when the event is not
        one (its block ended); an end kept for a block that this event ends, as a piece of
        its own. A ``ping`` of the request decides nothing."""
        held = self._held
        if held is not None and type(held.cut.event) is ModelStreamEvent:
            cut = held.cut
            if not _passes_over(request_id, raw, cut.key):
                piece = _continues(cut.key, request_id, raw)
                goes_on = piece is not None and self._holdback.goes_on(cut.text[-cut.size :], piece)
                self._release(keep_end=goes_on)
        if not self._pending:
            return
        for key, kept in list(self._pending.items()):
            if type(kept.event) is not ModelStreamEvent:
                continue  # a call's progress: a stream event does not end it
            if _continues(key, request_id, raw) is not None:
                del self._pending[key]  # the piece is given the end in front
                self._note_waiting()
            elif not _passes_over(request_id, raw, key):
                self._write_pending(key)

    def _progress(self, event: ToolProgressReported) -> ToolProgressReported:
        """A tool's progress text as the trace is to hold it: a call's texts are pieces of
        one text (a command's output in chunks), held back as a block's pieces are."""
        key = progress_key(event.call_id)
        held = self._held
        if held is not None and held.cut.key == key:
            cut = held.cut
            self._release(keep_end=self._holdback.goes_on(cut.text[-cut.size :], event.text))
        elif self._pending:
            self._pending.pop(key, None)  # the text is given the end in front
            self._note_waiting()
        text, size = self._holdback.piece(key, event.text)
        if text is not event.text:
            event = ToolProgressReported(call_id=event.call_id, text=text)
        if size:
            if self._held is not None:  # one line is held at a time
                self._set_held_aside()
            self._cut = _Cut(event, key, "text", text, size)
        return event

    def _set_held_aside(self) -> None:
        """Write the held line before a line that cannot wait behind it (an event's whose
        step performs something, another piece to be held), without its held end, which is
        kept for the next piece of its text (:attr:`_pending`): that piece may yet come."""
        held = self._held
        assert held is not None
        self._release(keep_end=True)
        self._pending[held.cut.key] = held.cut
        self._waiting = True

    def _stream_line(self, fields: dict[str, Any], event: ModelStreamEvent) -> _Prepared:
        """The prepared line of a stream event as the trace is to hold it (its tool-input
        text rewritten, its text held back as it is to be)."""
        raw = event.event
        value: dict[str, Any] = {
            "type": "ModelStreamEvent",
            "request_id": event.request_id,
            "event": raw,
        }
        keys_hit = not known_stream_event(raw) and has_sensitive_key(raw)
        return self._rendered_line(fields, event, value, keys_hit=keys_hit)

    def _rendered_line(
        self, fields: dict[str, Any], event: Event, value: Any, *, keys_hit: bool
    ) -> _Prepared:
        """The prepared line of ``event`` rendered as ``value`` (``keys_hit``: whether a
        sensitive key name occurs in it)."""
        if not keys_hit:
            try:  # rendered where it sits in the line, so that it fails where the line would
                return orjson.dumps({"event": value}, option=_OPTIONS), fields, (), event
            except orjson.JSONEncodeError:
                pass  # the line is rendered as a whole below (and rewritten, or refused)
        return None, fields, self._event_parts(event, fields), event

    def _release(self, *, keep_end: bool) -> None:
        """Write the held line, now that the next event says how: without its held end when
        ``keep_end`` (a secret may run on from it into the next piece of its text, which is
        then given it in front), as it was otherwise; then the lines that passed over it.
        The lines keep the ``seq``s they were given."""
        held, self._held = self._held, None
        if held is None:
            return
        self._waiting = bool(self._pending)
        line, step, cut, after = held
        if keep_end:
            text = cut.text
            self._holdback.hold(cut.key, text[-cut.size :])
            line = self._text_line(line[1], cut.with_text(text[: -cut.size]))
        later = self._next_seq
        try:
            for each, its_step in ((line, step), *after):
                self._next_seq = each[1]["seq"]  # a refused line names its own seq
                self._emit(each, its_step)
        finally:
            self._next_seq = later

    def _note_waiting(self) -> None:
        """Set :attr:`_waiting` after a held line or a kept end went."""
        self._waiting = self._held is not None or bool(self._pending)

    def _write_whole(self) -> None:
        """Write what is held, its texts being whole (the run ends, or goes on from here in
        another way): the held line as it is, each end kept for a next piece as a piece of
        its own."""
        if self._held is not None:
            self._release(keep_end=False)
        for key in list(self._pending):
            self._write_pending(key)

    def _text_line(self, fields: dict[str, Any], event: Event) -> _Prepared:
        """The prepared line of a piece of text with its ``fields``."""
        if type(event) is ModelStreamEvent:
            return self._stream_line(fields, event)
        value, keys_hit = render_event(event)
        return self._rendered_line(fields, event, value, keys_hit=keys_hit)

    def _write_pending(self, key: BlockKey) -> None:
        """Write the end kept for the next piece of text ``key`` as a piece of its own, with
        the next ``seq``: the text ended without one (it is whole, and the end is redacted as
        it stands). Replay feeds it as the piece it is: the core adds a delta's text to its
        block, and takes a progress text as the fact it is."""
        kept = self._pending.pop(key)
        self._note_waiting()
        end = self._holdback.take(key)
        line = self._text_line({"record": "event", "seq": self._next_seq}, kept.with_text(end))
        if self._held is not None:  # it performs nothing: it waits behind the held line
            self._held.after.append((line, _NOTHING))
        else:
            self._emit(line, None)
        self._next_seq += 1

    def _before_step(self, line: _Prepared, step: Step | None) -> _Prepared:
        """Write what is held before the line of an event whose ``step`` takes a transition
        or has effects (it cannot wait: its effects are performed once it is written); the
        line as it is then to be written. A held line is set aside (its end kept for the next
        piece of its text) or, when ``step`` ends its text, written whole; an end kept for a
        text that ``step`` ends is written as a piece of its own, before the line, which
        takes the seq after (the core was given that text whole before this event)."""
        held = self._held
        if held is not None:
            if _ends_text(step, held.cut.key):
                self._release(keep_end=False)
            else:
                self._set_held_aside()
        ended = [key for key in self._pending if _ends_text(step, key)]
        if ended:
            line = self._restamped(line, self._next_seq + len(ended))
            for key in ended:
                self._write_pending(key)
        return line

    def _restamped(self, line: _Prepared, seq: int) -> _Prepared:
        """A prepared line given ``seq`` for the one it was prepared with (a piece of text
        goes before it)."""
        rendered, fields, _parts, event = line
        fields["seq"] = seq
        if rendered is not None:
            return line
        return None, fields, self._event_parts(event, fields), event  # its parts hold the seq

    def _event_parts(self, event: Event, fields: dict[str, Any]) -> tuple[bytes, ...]:
        """The parts of ``event``'s line (:attr:`EventLine.parts`), from the codec's dict of
        the event; ``fields``: the line's other fields."""
        fields = dict(fields)
        if type(event) is ModelStreamEvent:
            fields.update(records.event_fields(event))
            raw = event.event
            keys_hit = not known_stream_event(raw) and has_sensitive_key(raw)
        else:
            if type(event) is TurnStarted:  # its messages are joined on below
                fields.update(records.turn_started_fields(event))
            else:
                fields.update(records.event_fields(event))
            keys_hit = sensitive_key_in(fields["event"])
        try:
            if type(event) is TurnStarted:
                return self._turn_started_line(event, fields, keys_hit=keys_hit)
            return (self._render(fields, keys_hit=keys_hit),)
        except (orjson.JSONEncodeError, TypeError) as exc:
            cause = exc.__cause__ or exc
            raise UsageError(f"record seq {self._next_seq} cannot be written: {cause}") from exc

    def _turn_started_line(
        self, event: TurnStarted, fields: dict[str, Any], *, keys_hit: bool
    ) -> tuple[bytes, ...]:
        """The parts of the line of the transcript a turn starts from: the same bytes as the
        generic path, with only the messages added since the conversation's last turn
        serialized and scanned (``fields``: the record with no messages)."""
        transcript = self._transcript.parts(event.messages, self._redactor, file=self._name)
        if transcript is not None:
            if transcript.base is not None:  # the record's own key (sorted after "event")
                fields[records.TRANSCRIPT_FROM] = transcript.base
            head, gap, tail = self._render(fields, keys_hit=keys_hit).partition(_MESSAGES_GAP)
            if gap and _MESSAGES_GAP not in tail:
                return (head, b'"messages":', *transcript.array, tail)
            fields.pop(records.TRANSCRIPT_FROM, None)
        # The generic path (no single place for them): the record serialized whole.
        messages = [dump_message(message) for message in event.messages]
        fields["event"]["messages"] = messages
        return (self._render(fields, keys_hit=keys_hit or has_sensitive_key(messages)),)

    def write_event_line(self, line: EventLine, step: Step | None) -> None:
        """Write a prepared event line with what ``feed`` made of the event (schema 3),
        after ``feed`` returned and before any effect of ``step`` is performed; with
        ``step=None`` (``feed`` raised) the event alone. The line takes one ``seq`` for the
        event and one per transition and effect."""
        self._write_line(line, step)

    def _write_line(self, line: _Prepared, step: Step | None) -> None:
        """:meth:`write_event_line` for a line as :meth:`_prepare` gives it."""
        if self._closed:
            raise self._refusal()
        if self._waiting:
            held = self._held
            if step is not None and not step.transitions and not step.effects:
                if held is not None:  # this event passes over a held piece: its line waits
                    held.after.append((line, step))
                    self._next_seq += 1
                    return
            else:
                line = self._before_step(line, step)
        cut = self._cut
        if cut is not None:
            self._cut = None
            # A piece's step does nothing but add its text: its line waits for the next
            # event, which says whether its end goes on in the next piece.
            if step is not None and not step.effects:
                self._held = _Held(line, step, cut, [])
                self._waiting = True
                self._next_seq += 1 + len(step.transitions)
                return
        self._emit(line, step)  # before the seqs are taken: a refused line names its own
        if step is not None:
            self._next_seq += 1 + len(step.transitions) + len(step.effects)
        else:
            self._next_seq += 1

    def _emit(self, line: _Prepared, step: Step | None) -> None:
        """Write an event's line with ``step`` (the ``seq``s are the caller's to take)."""
        rendered, fields, parts, event = line
        if rendered is not None:
            data = self._whole_line(rendered, fields, step)
            if data is not None:
                self._put(data)
                return
            # A key or a secret to redact, or a value to rewrite or refuse: as it always was.
            parts = self._event_parts(event, fields)
        self._write_parts(parts, step)

    def _whole_line(
        self, rendered: bytes, fields: dict[str, Any], step: Step | None
    ) -> bytes | None:
        """The line (newline included) of a prepared event with ``step``: the event's bytes
        and the step's transitions go in as they were rendered, each effect as its renderer
        builds it (:mod:`~fsm_agent.trace.render_fns`), in one orjson call (``rendered`` and
        the transitions as ``orjson.Fragment``), or, for a line with no effects and only
        the writer's ``record`` and ``seq``, in one bytes formatting (the same bytes: sorted
        keys put the event first and the transitions last). None when the line is not
        written as it is: an effect holds a sensitive key name, the line holds a secret,
        orjson refuses a value (or a hook raises): :meth:`_write_parts` then writes it as it
        always did."""
        effects: list[dict[str, Any]] | None = None
        transitions: bytes | None = None
        if step is not None:
            try:
                if step.effects:
                    effects = []
                    for effect in step.effects:
                        value, keys_hit = render_effect(effect)
                        if keys_hit:
                            return None
                        effects.append(value)
                if step.transitions:
                    transitions = transitions_array(step)
            except Exception:  # the codec's path raises it again, as it does
                return None
        seq = fields["seq"]
        if effects is None and len(fields) == 2 and type(seq) is int and 0 <= seq < _SEQ_LIMIT:
            if transitions is None:
                data = b'%b,"record":"event","seq":%d}\n' % (rendered[:-1], seq)
            else:
                data = b'%b,"record":"event","seq":%d,"transitions":%b}\n' % (
                    rendered[:-1],
                    seq,
                    transitions,
                )
        else:
            line = dict(fields)
            line["event"] = orjson.Fragment(rendered[_EVENT_VALUE])
            if effects is not None:
                line["effects"] = effects
            if transitions is not None:
                line["transitions"] = orjson.Fragment(transitions)
            try:
                data = orjson.dumps(line, option=_LINE_OPTIONS)
            except orjson.JSONEncodeError:
                return None
        # The one search for secrets: the event, the effects and the transitions at once.
        return None if self._redactor.holds_secret(data) else data

    def _write_parts(self, alone: tuple[bytes, ...], step: Step | None) -> None:
        """:meth:`write_event_line` for the parts of a prepared line."""
        if self._closed:
            raise self._refusal()
        if step is not None and (step.transitions or step.effects):
            try:
                data = b"".join(self._with_step(alone, step))
            except (orjson.JSONEncodeError, TypeError) as exc:
                cause = exc.__cause__ or exc
                raise UsageError(f"record seq {self._next_seq} cannot be written: {cause}") from exc
            self._put(data)
        else:
            self._put(alone[0] + b"\n" if len(alone) == 1 else b"".join((*alone, b"\n")))

    def _with_step(self, alone: tuple[bytes, ...], step: Step) -> list[bytes | memoryview]:
        """The parts of the line (newline included) of an event carrying its step, from the
        parts of the event's own line. Sorted keys put ``effects`` before every key of the
        event's line and ``transitions`` after them, so each list is rendered once, at the
        depth it has in the line, redacted on its own (redaction works value by value: the
        bytes are those of redacting the whole line), and joined on. The event's line is not
        copied here: a turn's first line holds the whole transcript (issue 10)."""
        redactor = self._redactor
        effects: list[dict[str, Any]] = []
        head = tail = b""
        if step.effects:
            # Rendered by the renderers, judged for keys as they build (an effect's free-form
            # fields may hold keys from outside, DESIGN §8); the codec's dicts are what is
            # redacted, or rewritten when orjson refuses a value.
            rendered = [render_effect(effect) for effect in step.effects]
            try:
                head = orjson.dumps({"effects": [value for value, _ in rendered]}, option=_OPTIONS)
                head = head[1:-1]
            except orjson.JSONEncodeError:
                effects = list(map(dump_effect, step.effects))
                head = effects_field(effects)
            if any(keys_hit for _, keys_hit in rendered):
                effects = effects or list(map(dump_effect, step.effects))
                head = records.dumps({"effects": redactor.value(effects)})[1:-1]
        if step.transitions:
            tail = transitions_field(step)  # the same bytes replay compares with
        # Both lists searched for secrets at once; each is redacted on its own when they hold
        # one (a secret across the seam between them only costs this second look).
        if redactor.holds_secret(head + tail):
            if step.effects and redactor.holds_secret(head):
                effects = effects or list(map(dump_effect, step.effects))
                head = records.dumps({"effects": redactor.value(effects)})[1:-1]
            if tail and redactor.holds_secret(tail):  # their keys are the writer's own
                transitions = [records.step_transition(t) for t in step.transitions]
                tail = records.dumps({"transitions": redactor.value(transitions)})[1:-1]
        parts: list[bytes | memoryview] = [b"{", head, b","] if head else [b"{"]
        # The event's line without its braces.
        if len(alone) == 1:
            parts.append(memoryview(alone[0])[1:-1])
        else:
            parts += (memoryview(alone[0])[1:], *alone[1:-1], memoryview(alone[-1])[:-1])
        if tail:
            parts += (b",", tail)
        parts.append(b"}\n")
        return parts

    def write_event(self, event: Event, step: Step | None = None) -> None:
        """Record an event and what ``feed`` made of it as one line: :meth:`prepare_event`
        and :meth:`write_event_line` in one call (``step=None``: the event alone)."""
        self.write_event_line(self.prepare_event(event), step)

    def write_end(self, terminal: str | None, usage: Usage, *, fault: str | None = None) -> None:
        """Record the end of the run: the terminal reason, the usage totals, and the fault
        that ended it early, if one did (replay takes the fault as recorded)."""
        self._write_whole()
        # Its keys are the writer's own (usage counters included): only strings are searched.
        self._put(self._line(records.end_fields(terminal, usage, fault=fault), keys_hit=False))
        self._next_seq += 1
        self.ended = True

    def close(self) -> None:
        """Flush, and close the file if the writer opened it. Closing twice is fine."""
        if self._closed:
            return
        if self._waiting:
            # The text is complete: the piece is written whole. A file that refuses it is cut
            # back to its last whole record, as if the run had stopped before this delta.
            with contextlib.suppress(TraceWriteFailed):
                self._write_whole()
            if self._closed:
                return
        self._closed = True
        if self._refused is None:
            self._file.flush()
        if self._owns_file:
            self._file.close()

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class _Sink:
    """What the copying logger writes to (``structlog.BytesLogger`` writes, then flushes):
    the writer's own :meth:`TraceWriter._put`."""

    def __init__(self, put: Callable[[bytes], None]) -> None:
        self.write = put

    def flush(self) -> None:
        """Nothing left to flush: :meth:`TraceWriter._put` flushed."""


class TracingCore:
    """A core whose every ``feed`` is written to a trace: one line per feed (schema 3).

    The line (the event, the transitions and the effects) is written and flushed after the
    core answers and before the step is handed back, so a driver never performs an effect
    that is not on file. When ``feed`` raises, the event is written alone and the error
    propagates. When a step ends the run, the ``end`` record is written too (naming
    :attr:`fault` when the driver set one). Attribute reads other than ``feed`` go to the
    wrapped core.

    Args:
        core: the core to drive (an ``AgentCore``).
        writer: the trace writer for this run.
    """

    def __init__(self, core: CoreLike, writer: TraceWriter) -> None:
        self.core = core
        self.writer = writer
        self.fault: str | None = None
        """Set by a driver that failed: the ``end`` record names it."""

    def feed(self, event: Event) -> Step:
        """Render the event's line, feed the event, write the line with the step (and the
        end record); return the step."""
        writer = self.writer
        line = writer._prepare(event)  # an event the trace cannot hold never reaches the core
        try:
            step = self.core.feed(event)
        except BaseException:
            # The fault's cause goes on file (DESIGN §5); the core's error propagates.
            writer._write_line(line, None)
            raise
        writer._write_line(line, step)
        if step.terminal is not None:
            writer.write_end(step.terminal, self.core.usage, fault=self.fault)
        return step

    def __getattr__(self, name: str) -> Any:
        return getattr(self.core, name)
