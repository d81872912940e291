"""The trace writer: JSONL, write-ahead, flushed per event and per step.

The header and ``end`` records (and records copied by :meth:`TraceWriter.write_record`) go
through a structlog logger built locally with ``structlog.wrap_logger`` (never
``structlog.configure``, which is process-global): our processors stamp ``seq`` and redact,
then ``JSONRenderer`` turns the record into one orjson line with sorted keys, and
``BytesLogger`` writes and flushes it. Events and steps, the lines of the hot path, skip the
logger's machinery (it added nothing there but its cost, issue 10): the same stamping,
serializer and redaction, then one write and one flush per event and per step. A step's
transitions and effects go out as one ``step`` line (schema 2), not a line each. The
serializer's ``default=`` raises, so an object that was not unstructured fails loudly instead
of leaving a ``repr`` (with a memory address) in the trace. structlog is imported when the
first writer is made, so importing the package does not pay for it.

Order of use (DESIGN §5): :meth:`TraceWriter.write_event` *before* the core sees the event,
:meth:`TraceWriter.write_step` with what ``feed`` returned, :meth:`TraceWriter.write_end` once
the run has ended. :class:`TracingCore` does exactly that around a core.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, MutableMapping
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Final, Protocol

import attrs
import orjson

import fsm_agent
from fsm_agent.core.codec import dump_message
from fsm_agent.core.config import LoopConfig
from fsm_agent.core.events import Event, ModelStreamEvent, TurnStarted
from fsm_agent.core.messages import Message, Usage
from fsm_agent.core.step import Step
from fsm_agent.core.tool_spec import ToolSpec
from fsm_agent.errors import UsageError
from fsm_agent.trace import records
from fsm_agent.trace.closed_fields import sensitive_key_in
from fsm_agent.trace.message_dumps import TranscriptJson
from fsm_agent.trace.redact import Redactor, has_sensitive_key

_MESSAGES_GAP: Final = b'"messages":[]'
"""Where a ``TurnStarted`` record written without its messages takes them."""


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


def current_table_digest() -> str:
    """The digest of this library's machine tables (imported lazily: tables are heavy)."""
    from fsm_agent.core.tables import table_digest  # noqa: PLC0415 - lazy on purpose

    digest: str = table_digest()
    return digest


@attrs.frozen
class _Setup:
    """A header's config and tools unstructured (shared, never changed once made) and
    whether a sensitive key name occurs in them."""

    source: tuple[LoopConfig, tuple[ToolSpec, ...]]
    config: dict[str, Any]
    tools: list[Any]
    keys_hit: bool


_LAST_SETUP: list[_Setup] = []


def _unstructured_setup(config: LoopConfig, tools: tuple[ToolSpec, ...]) -> _Setup:
    """The :class:`_Setup` of ``config`` and ``tools``, made again only when they are not the
    very objects the last writer was given (issue 10: most runs of a process share both)."""
    if _LAST_SETUP:
        last = _LAST_SETUP[0]
        last_config, last_tools = last.source
        if (
            last_config is config
            and len(last_tools) == len(tools)
            and all(old is new for old, new in zip(last_tools, tools, strict=True))
        ):
            return last
    from fsm_agent.core.codec import converter  # noqa: PLC0415 - built on first use

    config_dict = converter().unstructure(config)
    tools_list = [converter().unstructure(tool) for tool in tools]
    keys_hit = has_sensitive_key(config_dict) or has_sensitive_key(tools_list)
    setup = _Setup((config, tools), config_dict, tools_list, keys_hit)
    _LAST_SETUP[:] = [setup]
    return setup


class TraceWriter:
    """Writes one run's trace.

    Args:
        target: a path (the file is created or truncated) or a binary file opened for
            writing (left open by :meth:`close`; it is flushed after every record).
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

    Raises:
        UsageError: from a ``write_*`` call whose record holds something that is not JSON.
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
    ) -> None:
        self._clock = clock
        self._transcript = transcript if transcript is not None else TranscriptJson()
        if started is not None:
            self._started = started
        else:
            self._started = clock() if clock is not None else 0.0
        if isinstance(target, str | os.PathLike):
            self._file: IO[bytes] = Path(target).open("wb")  # noqa: SIM115 - closed in close()
            self._owns_file = True
        else:
            self._file = target
            self._owns_file = False
        self._redactor = Redactor(secrets)
        self._next_seq = 1 if next_seq is None else next_seq
        self._closed = False
        self.ended = False
        """Whether the ``end`` record has been written."""
        import structlog  # noqa: PLC0415 - lazy: the import costs more than a run's first records

        self._logger = structlog.wrap_logger(
            structlog.BytesLogger(self._file),  # type: ignore[arg-type]  # any binary file works
            processors=[
                self._stamp_seq,
                # Redaction happens inside the serializer: the rendered bytes are scanned, and
                # only a record that may hold a secret is walked and rendered again.
                structlog.processors.JSONRenderer(serializer=self._serialize),
            ],
            # Explicit, so an application's global structlog configuration changes nothing.
            wrapper_class=structlog.BoundLogger,
            context_class=dict,
            cache_logger_on_first_use=True,  # bind once, not on every record
        )
        self.header = records.TraceHeader(
            schema=records.SCHEMA_VERSION,
            library_version=fsm_agent.__version__,
            table_digest=current_table_digest() if table_digest is None else table_digest,
            config=config,
            tools=tuple(tools),
            meta=dict(meta or {}),
        )
        self._setup = _unstructured_setup(config, self.header.tools)
        if next_seq is None:
            self._write(self.header.record_with(config=self._setup.config, tools=self._setup.tools))

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
        setup = self._setup
        if event_dict.get("config") is setup.config and event_dict.get("tools") is setup.tools:
            # This writer's own header: its other keys are fixed, its config and tools were
            # scanned when they were unstructured; only meta is new.
            keys_hit = setup.keys_hit or has_sensitive_key(event_dict.get("meta"))
        else:
            keys_hit = has_sensitive_key(event_dict)
        return self._render(event_dict, keys_hit=keys_hit)

    def _render(self, fields: Mapping[str, Any], *, keys_hit: bool) -> bytes:
        """``fields`` serialized and redacted; ``keys_hit``: whether a sensitive key name
        occurs in it (the caller knows which parts are the writer's own)."""
        data = records.dumps(fields)
        if keys_hit or self._redactor.holds_secret(data):
            data = records.dumps(self._redactor.value(fields))
        return data

    # --- writing -------------------------------------------------------------------------

    @property
    def next_seq(self) -> int:
        """The ``seq`` the next record will get."""
        return self._next_seq

    def _write(self, fields: Mapping[str, Any]) -> None:
        if self._closed:
            raise UsageError("the trace writer is closed")
        try:
            self._logger.msg(**fields)
        except (orjson.JSONEncodeError, TypeError) as exc:
            cause = exc.__cause__ or exc
            raise UsageError(f"record seq {self._next_seq} cannot be written: {cause}") from exc
        kind = fields.get("record")
        if kind == "step":
            self._next_seq += len(fields["transitions"]) + len(fields["effects"])
        elif kind != "header":
            self._next_seq += 1

    def write_record(self, fields: Mapping[str, Any]) -> None:
        """Write a record dict as is (``seq`` is stamped; a ``step`` record takes one per
        record it holds); used to copy a replayed prefix."""
        data = dict(fields)
        data.pop("seq", None)
        self._write(data)

    def _line(self, fields: MutableMapping[str, Any], *, keys_hit: bool) -> bytes:
        """One record line for the hot path: ``seq`` stamped, serialized and redacted as the
        logger would, without its machinery (the same bytes). ``keys_hit``: as for
        :meth:`_render`."""
        if self._closed:
            raise UsageError("the trace writer is closed")
        fields["seq"] = self._next_seq
        try:
            data = self._render(fields, keys_hit=keys_hit)
        except (orjson.JSONEncodeError, TypeError) as exc:
            cause = exc.__cause__ or exc
            raise UsageError(f"record seq {self._next_seq} cannot be written: {cause}") from exc
        self._next_seq += 1
        return data + b"\n"

    def write_event(self, event: Event) -> None:
        """Record an event; call it *before* the core processes the event (write-ahead)."""
        if type(event) is TurnStarted:
            self._write_turn_started(event)
            return
        fields = records.event_fields(event)
        # A record's keys are the writer's own but for the event's: a stream event's model
        # event is scanned whole, any other event's free-form fields only (DESIGN §8).
        if type(event) is ModelStreamEvent:
            keys_hit = has_sensitive_key(event.event)
        else:
            keys_hit = sensitive_key_in(fields["event"])
            if self._clock is not None:
                fields[records.ELAPSED] = round((self._clock() - self._started) * 1000, 1)
        line = self._line(fields, keys_hit=keys_hit)
        self._file.write(line)
        self._file.flush()

    def _write_turn_started(self, event: TurnStarted) -> None:
        """``write_event`` for the transcript a turn starts from: the same bytes, with only
        the messages added since the conversation's last turn serialized and scanned."""
        fields = records.event_fields(attrs.evolve(event, messages=()))
        keys_hit = sensitive_key_in(fields["event"])
        if self._clock is not None:
            fields[records.ELAPSED] = round((self._clock() - self._started) * 1000, 1)
        array = self._transcript.array(event.messages, self._redactor)
        line = None
        if array is not None:
            seq = self._next_seq
            head, gap, tail = self._line(fields, keys_hit=keys_hit).partition(_MESSAGES_GAP)
            if gap and _MESSAGES_GAP not in tail:
                line = b"".join([head, b'"messages":', *array, tail])
            else:  # no single place for them (not with TurnStarted's fields): start again
                self._next_seq = seq
        if line is None:  # the generic path: the record serialized whole
            messages = [dump_message(message) for message in event.messages]
            fields["event"]["messages"] = messages
            line = self._line(fields, keys_hit=keys_hit or has_sensitive_key(messages))
        self._file.write(line)
        self._file.flush()

    def write_step(self, step: Step) -> None:
        """Record what one ``feed`` returned, its transitions and effects, as one ``step``
        line (schema 2, issue 10: one serialization, one key scan, one write and one flush
        for the whole step). The line takes one ``seq`` per record it stands for."""
        count = len(step.transitions) + len(step.effects)
        if not count:
            return  # most stream deltas: nothing happened
        fields = records.step_record(step)
        # The transitions' keys are the writer's own; an effect's free-form fields may hold
        # keys from outside (DESIGN §8).
        keys_hit = False
        for effect in fields["effects"]:
            if sensitive_key_in(effect):
                keys_hit = True
                break
        line = self._line(fields, keys_hit=keys_hit)
        self._next_seq += count - 1
        self._file.write(line)
        self._file.flush()

    def write_end(self, terminal: str | None, usage: Usage, *, fault: str | None = None) -> None:
        """Record the end of the run: the terminal reason, the usage totals, and the fault
        that ended it early, if one did (replay takes the fault as recorded)."""
        self._write(records.end_fields(terminal, usage, fault=fault))
        self.ended = True

    def close(self) -> None:
        """Flush, and close the file if the writer opened it. Closing twice is fine."""
        if self._closed:
            return
        self._closed = True
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


class TracingCore:
    """A core whose every ``feed`` is written to a trace (write-ahead, then the step).

    When a step ends the run, the ``end`` record is written too (naming :attr:`fault` when the
    driver set one). Attribute reads other than
    ``feed`` go to the wrapped core.

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
        """Write the event, feed it, write the step (and the end record); return the step."""
        self.writer.write_event(event)
        step = self.core.feed(event)
        self.writer.write_step(step)
        if step.terminal is not None:
            self.writer.write_end(step.terminal, self.core.usage, fault=self.fault)
        return step

    def __getattr__(self, name: str) -> Any:
        return getattr(self.core, name)
