"""The trace writer: one JSONL record per line, write-ahead, flushed per event and per step.

The header and ``end`` records (and records copied by :meth:`TraceWriter.write_record`) go
through a structlog logger built locally with ``structlog.wrap_logger`` (never
``structlog.configure``, which is process-global): our processors stamp ``seq`` and redact,
then ``JSONRenderer`` turns the record into one orjson line with sorted keys, and
``BytesLogger`` writes and flushes it. Events, transitions and effects, the records of the hot
path, skip the logger's machinery (it added nothing there but its cost, issue 10): the same
stamping, serializer and redaction, then one write and one flush per event and per step; a
transition line is spliced from its table row's bytes, rendered once per process. All paths
give the same bytes. The serializer's ``default=`` raises, so an object that was not
unstructured fails loudly instead of leaving a ``repr`` (with a memory address) in the trace.
structlog is imported when the first writer is made, so importing the package does not pay
for it.

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

import orjson

import fsm_agent
from fsm_agent.core.config import LoopConfig
from fsm_agent.core.events import Event, ModelStreamEvent
from fsm_agent.core.messages import Message, Usage
from fsm_agent.core.step import Step, TransitionTaken
from fsm_agent.core.tool_spec import ToolSpec
from fsm_agent.errors import UsageError
from fsm_agent.trace import records
from fsm_agent.trace.redact import KEY_RULES_ONLY, Redactor

_CALL_ID: Final = b'{"call_id":'
"""How every transition line starts (keys are sorted; ``call_id`` sorts first)."""
_NO_TEMPLATE: Final[tuple[bytes, bytes]] = (b"", b"")
"""Marks a row whose lines take the general path."""
_TEMPLATE_LIMIT: Final = 4096
"""Rows remembered (the tables have a few hundred; other machines' rows may add more)."""
_TEMPLATES: Final[dict[tuple[str, str, str, str], tuple[bytes, bytes]]] = {}


def _row_template(key: tuple[str, str, str, str]) -> tuple[bytes, bytes]:
    """A transition line of row ``key`` split around its ``seq`` value, without the leading
    ``{"call_id":<value>`` (``seq`` and ``call_id`` are what differ between its records);
    :data:`_NO_TEMPLATE` when the line cannot be split that way."""
    template = _TEMPLATES.get(key)
    if template is not None:
        return template
    machine, name, source, dest = key
    fields = records.transition_fields(
        TransitionTaken(machine=machine, name=name, source=source, dest=dest)
    )
    fields["seq"] = 0
    template = _NO_TEMPLATE
    try:
        data = records.dumps(fields)
    except (orjson.JSONEncodeError, TypeError):
        data = b""  # the general path raises the clear error
    head = _CALL_ID + b"null"
    if data.startswith(head) and not KEY_RULES_ONLY.may_need(fields, data):
        before, seq, after = data[len(head) :].partition(b'"seq":0')
        if seq:
            template = (before + b'"seq":', after + b"\n")
    if len(_TEMPLATES) >= _TEMPLATE_LIMIT:
        _TEMPLATES.clear()
    _TEMPLATES[key] = template
    return template


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
    ) -> None:
        self._clock = clock
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
        self._templates: dict[tuple[str, str, str, str], tuple[bytes, bytes]] = {}
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
        if next_seq is None:
            self._write(self.header.to_record())

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
        return self._render(event_dict, keyed=event_dict)

    def _render(self, fields: Mapping[str, Any], *, keyed: Any) -> bytes:
        """``fields`` serialized and redacted; ``keyed`` is where its keys may need redaction
        (all of it, or the part that is not the writer's own)."""
        data = records.dumps(fields)
        if self._redactor.may_need(keyed, data):
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
        if fields.get("record") != "header":
            self._next_seq += 1

    def write_record(self, fields: Mapping[str, Any]) -> None:
        """Write a record dict as is (``seq`` is stamped); used to copy a replayed prefix."""
        data = dict(fields)
        data.pop("seq", None)
        self._write(data)

    def _line(self, fields: MutableMapping[str, Any], *, keyed: Any = None) -> bytes:
        """One record line for the hot path: ``seq`` stamped, serialized and redacted as the
        logger would, without its machinery (the same bytes). ``keyed``: as for
        :meth:`_render` (None: the whole record)."""
        if self._closed:
            raise UsageError("the trace writer is closed")
        fields["seq"] = self._next_seq
        try:
            data = self._render(fields, keyed=fields if keyed is None else keyed)
        except (orjson.JSONEncodeError, TypeError) as exc:
            cause = exc.__cause__ or exc
            raise UsageError(f"record seq {self._next_seq} cannot be written: {cause}") from exc
        self._next_seq += 1
        return data + b"\n"

    def _transition_line(self, transition: TransitionTaken) -> bytes:
        """A transition record line from its row's template (issue 10).

        A transition record is fixed but for ``seq`` and ``call_id``: the rest is rendered once
        per table row (:func:`_row_template`) and the two values spliced in; a tool-call id is
        rendered and scanned for secrets on its own. A row whose own names would need redaction
        (a configured secret that is also a phase name) keeps the general path.
        """
        call_id = transition.call_id
        key = (transition.machine, transition.name, transition.source, transition.dest)
        template = self._templates.get(key)
        if template is None:
            template = _row_template(key)
            if self._redactor.holds_secret(b"".join(template)):
                template = _NO_TEMPLATE
            self._templates[key] = template
        if call_id is None:
            id_bytes = b"null"
        elif type(call_id) is str and call_id.isascii():
            id_bytes = orjson.dumps(call_id)
        else:
            id_bytes = b""  # escapes or a lone surrogate: the general path renders it
        if (
            template is _NO_TEMPLATE
            or not id_bytes
            or (call_id is not None and self._redactor.holds_secret(id_bytes))
        ):
            return self._line(records.transition_fields(transition))
        if self._closed:
            raise UsageError("the trace writer is closed")
        before, after = template
        seq = self._next_seq
        self._next_seq += 1
        return b"".join((_CALL_ID, id_bytes, before, str(seq).encode(), after))

    def write_event(self, event: Event) -> None:
        """Record an event; call it *before* the core processes the event (write-ahead)."""
        fields = records.event_fields(event)
        if type(event) is ModelStreamEvent:
            # A stream event record's keys are the writer's own but for the model's event.
            line = self._line(fields, keyed=event.event)
        else:
            if self._clock is not None:
                fields[records.ELAPSED] = round((self._clock() - self._started) * 1000, 1)
            line = self._line(fields)
        self._file.write(line)
        self._file.flush()

    def write_step(self, step: Step) -> None:
        """Record what one ``feed`` returned: its transitions, then its effects.

        The step's lines go out in one write and one flush. If one cannot be written, the
        lines before it are still written, then the error is raised.
        """
        if not step.transitions and not step.effects:
            return  # most stream deltas: nothing happened
        lines: list[bytes] = []
        try:
            lines.extend(self._transition_line(t) for t in step.transitions)
            lines.extend(self._line(records.effect_fields(e)) for e in step.effects)
        finally:
            if lines:
                self._file.write(b"".join(lines))
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
