"""Replay, fork, resume and diff: recorded traces fed back to a fresh core (DESIGN §5).

Replay rebuilds the core from the header, feeds every recorded event and checks that the core
produces the recorded transitions, effects and end record, in order. The first difference
raises :class:`~fsm_agent.errors.TraceDivergence` with the seq, the recorded record
(``expected``), the produced one (``actual``) and the records around it. A core that raises
on a recorded event diverges too (``actual`` is ``{"record": "error", ...}``): a
well-formed trace never gets any other exception out of replay.

Speed (DESIGN §7, issue 10): a file that fits in memory is read in one go; an event line's
event is fed as soon as its record, seq and event are in a common shape, without intermediate
objects (a stream event is not even made into an object); then the line's other keys are
counted and what the core produced is serialized as the writer serializes it and compared
with the recorded line's bytes (an end line likewise). Only a mismatch is fully checked and
compared as dicts (allowing for redaction, and equal as JSON, not merely as Python values),
and only then is the context of a divergence built.

:func:`fork` replays up to a seq and hands back the live core; :func:`resume` does the same
for a crashed run and lists the effects that were in flight, flagging tool calls that may
already have had side effects. Neither re-runs anything: the caller decides.
"""

from __future__ import annotations

import collections
import contextlib
import io
import itertools
import os
import stat
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import IO, Any, Final

import attrs
import orjson

from fsm_agent.core.codec import load_event
from fsm_agent.core.config import LoopConfig
from fsm_agent.core.effects import (
    AskPermission,
    CallModel,
    CancelTool,
    Compact,
    CountTokens,
    DrainCollapse,
    Effect,
    FetchAttachments,
    PersistToolResults,
    RunHooks,
    RunToolStep,
    StageCollapse,
    ToolStep,
)
from fsm_agent.core.events import (
    AttachmentsReady,
    CollapseDrained,
    CollapseStaged,
    CompactionFinished,
    Event,
    HooksFinished,
    ModelStreamClosed,
    ModelStreamEvent,
    ModelStreamFailed,
    PermissionDecided,
    TokensCounted,
    ToolCallFinished,
    ToolInputValidated,
    ToolResultsPersisted,
)
from fsm_agent.core.step import Step
from fsm_agent.core.tool_spec import ToolSpec
from fsm_agent.errors import (
    DefinitionError,
    TableDigestMismatch,
    TraceDivergence,
    TraceFormatError,
    TraceTruncated,
    UsageError,
)
from fsm_agent.trace import records, short_masks
from fsm_agent.trace.reader import (
    Trace,
    TraceSource,
    Upgrade,
    apply_upgrades,
    header_from_line,
    parse_line,
    read_trace,
    resolve_transcript,
)
from fsm_agent.trace.records import TraceHeader
from fsm_agent.trace.redact import KEY_RULES_ONLY
from fsm_agent.trace.step_bytes import carries
from fsm_agent.trace.writer import CoreLike, TraceWriter, TracingCore, current_table_digest

CoreFactory = Callable[[LoopConfig, tuple[ToolSpec, ...]], CoreLike]
"""Builds a core from a trace header's config and tools."""

RERECORD_COMMAND = "python tools/record_traces.py"


def default_core_factory(config: LoopConfig, tools: tuple[ToolSpec, ...]) -> CoreLike:
    """Build an ``AgentCore`` (imported lazily, so reading traces never builds machines)."""
    from fsm_agent.core.agent_core import AgentCore  # noqa: PLC0415 - lazy on purpose

    core: CoreLike = AgentCore(config=config, tools=tools)
    return core


# --- results -------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class ReplayResult:
    """What a successful replay saw.

    Attributes:
        source: the trace file, if any.
        terminal: the terminal reason the core reached (None if the run had not ended).
        records: records checked (header excluded).
        events: events fed.
        transitions: transition records matched.
        effects: effect records matched.
        ended: the trace had an ``end`` record (and it matched).
        truncated: the trace was cut short and ``allow_truncated=True`` accepted it.
    """

    source: str | None
    terminal: str | None
    records: int
    events: int
    transitions: int
    effects: int
    ended: bool
    truncated: bool = False


@attrs.frozen(kw_only=True)
class Divergence:
    """The first point where two record streams differ (a value; see :func:`diff_traces`).

    Attributes:
        seq: the seq where they differ (0 for the header).
        expected: the record of the first trace there (None: it had ended).
        actual: the record of the second trace there (None: it had ended).
        context: records of the first trace around ``seq``.
        source: the first trace's file, if any.
        line: the line of the first trace holding ``expected`` (None: the header, or the
            first trace had ended).
    """

    seq: int
    expected: dict[str, Any] | None
    actual: dict[str, Any] | None
    context: tuple[dict[str, Any], ...] = ()
    source: str | None = None
    line: int | None = None

    def to_error(self) -> TraceDivergence:
        """The same facts as the exception replay raises."""
        return TraceDivergence(
            seq=self.seq,
            expected=self.expected,
            actual=self.actual,
            context=self.context,
            source=self.source,
            line=self.line,
        )


@attrs.frozen(kw_only=True)
class InFlight:
    """An effect that was emitted and never answered.

    Attributes:
        effect: the effect.
        seq: the seq of its record, or None if the crash came before it was written (the
            driver never saw it, so performing it now is safe).
        maybe_side_effects: a tool call whose ``RunToolStep(step=CALL)`` was recorded but
            never finished: the tool may have run. Never re-run such a call silently.
    """

    effect: Effect
    seq: int | None
    maybe_side_effects: bool


class _Continuable:
    """What fork and resume points share: a new trace that starts with the recorded run."""

    header: TraceHeader
    records: tuple[dict[str, Any], ...]
    source: str | None

    def lineage(self) -> dict[str, Any]:
        """Where the new trace comes from: ``kind`` (fork or resume), the parent ``trace``
        and the ``seq`` it was taken at; written to the new header's ``meta.parent``."""
        raise NotImplementedError

    def _run_id(self) -> dict[str, str]:
        """The recorded run's id, when its header names one (issue 13), for ``lineage``."""
        run_id = self.header.meta.get("run_id")
        return {"run_id": run_id} if isinstance(run_id, str) and run_id else {}

    def writer_for(
        self,
        target: str | os.PathLike[str] | IO[bytes],
        *,
        secrets: Iterable[str] = (),
        meta: Mapping[str, Any] | None = None,
        clock: Callable[[], float] | None = None,
    ) -> TraceWriter:
        """A writer for a new trace that starts with the recorded records (for a resume point,
        the unwritten ones included); keep writing the continuation to it. Its header's
        ``meta.parent`` names the recorded trace and the point (:meth:`lineage`)."""
        combined = {**(self.header.meta if meta is None else meta), "parent": self.lineage()}
        return _writer_with_prefix(
            self.header, self.records, target, secrets=secrets, meta=combined, clock=clock
        )


@attrs.frozen(kw_only=True)
class ForkPoint(_Continuable):
    """A core replayed up to a seq, ready to continue live.

    The continuation uses this core as is (same config and tools). Driving it with another
    model, policy or tool implementation is the driver's business: the core only sees events.

    Attributes:
        header: the recorded header.
        core: the live core; feed it new events to continue.
        at_seq: the seq asked for; the prefix runs to the end of that event's step.
        records: the recorded prefix, as record dicts in seq order.
        outstanding_effects: effects of the prefix that no event has answered yet.
        source: the recorded trace's file, if any.
    """

    header: TraceHeader
    core: CoreLike
    at_seq: int
    records: tuple[dict[str, Any], ...]
    outstanding_effects: tuple[InFlight, ...]
    source: str | None = None

    def lineage(self) -> dict[str, Any]:
        """``{"kind": "fork", "trace": <source>, "seq": <at_seq>, "run_id": <its id>}``."""
        return {"kind": "fork", "trace": self.source, "seq": self.at_seq, **self._run_id()}

    def tracing_core(
        self,
        target: str | os.PathLike[str] | IO[bytes],
        *,
        secrets: Iterable[str] = (),
        meta: Mapping[str, Any] | None = None,
        clock: Callable[[], float] | None = None,
    ) -> TracingCore:
        """The live core wrapped so that the continuation is traced after the prefix."""
        writer = self.writer_for(target, secrets=secrets, meta=meta, clock=clock)
        return TracingCore(self.core, writer)


@attrs.frozen(kw_only=True)
class ResumePoint(_Continuable):
    """A crashed run rebuilt from its trace.

    Attributes:
        header: the recorded header.
        core: the rebuilt core, in the state after the last recorded event.
        records: the run's records as dicts: those on file, then the ones the last ``feed``
            produced but the crash kept from being written (``unwritten`` of them).
        unwritten: how many records at the end of ``records`` were not on file.
        in_flight: emitted, never answered effects, in emission order.
        truncated: the file ended in a cut-off line (which was dropped).
        source: the recorded trace's file, if any.
    """

    header: TraceHeader
    core: CoreLike
    records: tuple[dict[str, Any], ...]
    unwritten: int
    in_flight: tuple[InFlight, ...]
    truncated: bool
    source: str | None = None

    def lineage(self) -> dict[str, Any]:
        """``{"kind": "resume", "trace": <source>, "seq": <last seq on file>, "run_id": ...}``."""
        seq = len(self.records) - self.unwritten
        return {"kind": "resume", "trace": self.source, "seq": seq, **self._run_id()}

    @property
    def unsafe_to_rerun(self) -> tuple[InFlight, ...]:
        """In-flight tool calls that may have had side effects: ask before running them again."""
        return tuple(item for item in self.in_flight if item.maybe_side_effects)


def _writer_with_prefix(
    header: TraceHeader,
    prefix: Iterable[Mapping[str, Any]],
    target: str | os.PathLike[str] | IO[bytes],
    *,
    secrets: Iterable[str],
    meta: Mapping[str, Any],
    clock: Callable[[], float] | None,
) -> TraceWriter:
    writer = TraceWriter(
        target,
        config=header.config,
        tools=header.tools,
        secrets=secrets,
        meta=meta,
        table_digest=header.table_digest,
        clock=clock,
        overwrite=False,  # never the trace it continues, nor any other run's
    )
    for line in records.as_lines(prefix):
        writer.write_record(line)
    return writer


# --- lines -----------------------------------------------------------------------------------


@attrs.define(slots=True)
class _Line:
    """One recorded line: raw bytes from a file, or a dict from a ``Trace`` in memory."""

    number: int
    content: bytes | None
    complete: bool = True
    data: dict[str, Any] | None = None
    event: Event | None = None
    stream: tuple[str, dict[str, Any]] | None = None  # a stream event, not yet an object


@attrs.define(slots=True)
class _Produced:
    """A line the replayed core produced: its dict (with seq), its serialized bytes, and how
    many records it stands for (a ``step`` line: its transitions and effects)."""

    data: dict[str, Any]
    content: bytes | None  # None: an error record, which matches nothing
    count: int = 1

    def records(self) -> list[dict[str, Any]]:
        """The records this line stands for, as they read back from its bytes."""
        if self.content is None:
            return [self.data]
        data = orjson.loads(self.content)
        if data.get("record") == "step":
            return records.expand_step(data, 0, None)
        return [data]


def _file_lines(
    file: IO[bytes], source: str | None
) -> tuple[TraceHeader, list[Upgrade], _FileLines]:
    lines = _FileLines(file)
    first = next(lines, None)
    if first is None:
        raise TraceFormatError(
            line=1, path="$", problem="empty file: missing header", source=source
        )
    assert first.content is not None  # a line read from a file
    header, upgrades = header_from_line(first.number, first.content, first.complete, source)
    return header, upgrades, lines


WHOLE_FILE_LIMIT: Final = 64 * 1024 * 1024
"""Trace files up to this size are read in one go and split into lines (issue 10: a read per
line costs more than the line's parse); bigger ones are streamed line by line."""


class _FileLines:
    """A trace file's lines, as ``_Line`` objects; the replay's hot loop takes the complete
    lines as ``(number, content)`` pairs instead (``complete``), which spares an object per
    line. A cut-off last line (no newline) only ever comes out as a ``_Line``."""

    def __init__(self, file: IO[bytes]) -> None:
        self._tail: _Line | None = None
        self.complete: Iterator[tuple[int, bytes]]
        """The complete lines as ``(number, content)``; ``next`` on this object takes from
        the same iterator, then gives the cut-off last line, if any."""
        if _size(file) <= WHOLE_FILE_LIMIT:
            pieces = file.read().split(b"\n")
            last = pieces.pop()  # empty when the file ends with a newline
            if last:
                self._tail = _Line(len(pieces) + 1, last, complete=False)
            self.complete = enumerate(pieces, start=1)
        else:
            self.complete = self._streamed(file)

    def _streamed(self, file: IO[bytes]) -> Iterator[tuple[int, bytes]]:
        for number, raw in enumerate(file, start=1):
            if raw.endswith(b"\n"):
                yield number, raw[:-1]
            else:
                self._tail = _Line(number, raw, complete=False)

    def __iter__(self) -> _FileLines:
        return self

    def __next__(self) -> _Line:
        item = next(self.complete, None)
        if item is not None:
            return _Line(item[0], item[1])
        tail, self._tail = self._tail, None
        if tail is None:
            raise StopIteration
        return tail


def _size(file: IO[bytes]) -> int:
    """The size of a regular file; past the limit for anything else (a pipe, a device), whose
    size says nothing of what will come out of it."""
    try:
        status = os.fstat(file.fileno())
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        return WHOLE_FILE_LIMIT + 1
    return status.st_size if stat.S_ISREG(status.st_mode) else WHOLE_FILE_LIMIT + 1


def _trace_lines(trace: Trace) -> Iterator[_Line]:
    for record in trace.records:
        yield _Line(record.line, None, True, record.data, record.event)


# --- the replay engine -------------------------------------------------------------------------


_ANSWERED_BY_EFFECT_ID = (
    HooksFinished,
    PermissionDecided,
    CompactionFinished,
    CollapseDrained,
    CollapseStaged,
    ToolResultsPersisted,
    TokensCounted,
    AttachmentsReady,
)
_ASKS_BY_EFFECT_ID = (
    RunHooks,
    AskPermission,
    Compact,
    DrainCollapse,
    StageCollapse,
    PersistToolResults,
    CountTokens,
    FetchAttachments,
)


class _Outstanding:
    """Effects emitted and not yet answered, keyed the way answering events name them."""

    def __init__(self) -> None:
        self.open: dict[tuple[str, ...], tuple[Effect, int | None]] = {}

    def emitted(self, effect: Effect, seq: int | None) -> None:
        if isinstance(effect, CallModel):
            self.open["model", effect.request_id] = (effect, seq)
        elif isinstance(effect, RunToolStep):
            self.open["tool", effect.call_id, effect.step.value] = (effect, seq)
        elif isinstance(effect, _ASKS_BY_EFFECT_ID):
            self.open["effect", effect.effect_id] = (effect, seq)
        elif isinstance(effect, CancelTool):
            # The core has decided the cancelled call's result and awaits nothing more.
            for step in ToolStep:
                self.open.pop(("tool", effect.call_id, step.value), None)

    def answered(self, event: Event) -> None:
        if isinstance(event, ModelStreamClosed | ModelStreamFailed):
            self.open.pop(("model", event.request_id), None)
        elif isinstance(event, ToolInputValidated):
            self.open.pop(("tool", event.call_id, ToolStep.VALIDATE.value), None)
        elif isinstance(event, ToolCallFinished):
            self.open.pop(("tool", event.call_id, ToolStep.CALL.value), None)
        elif isinstance(event, _ANSWERED_BY_EFFECT_ID):
            self.open.pop(("effect", event.effect_id), None)

    def in_flight(self, written_up_to: int) -> tuple[InFlight, ...]:
        out = []
        for effect, seq in self.open.values():
            on_file = seq is not None and seq <= written_up_to
            out.append(
                InFlight(
                    effect=effect,
                    seq=seq if on_file else None,
                    maybe_side_effects=on_file
                    and isinstance(effect, RunToolStep)
                    and effect.step is ToolStep.CALL,
                )
            )
        return tuple(out)


_STREAM_TAG = "ModelStreamEvent"
_GO, _STOP, _END = "go", "stop", "end"  # what checking a line says about the lines after it

_Quick = Event | tuple[str, dict[str, Any]]
"""An event ready to feed: structured, or a stream event's ``(request_id, raw event)``."""


def _quick_event(data: Any, seq: int) -> _Quick | None:
    """The event of a well-formed ``event`` line at ``seq``, ready to feed, or None.

    The same checks as :func:`~fsm_agent.trace.records.check_event_line` makes of the event
    for the common shapes: keys ``event``, ``record``, ``seq``, maybe a valid ``elapsed_ms``
    and (schema 3) lists ``transitions`` and ``effects`` that are not empty, whose items are
    checked by comparing them with what the core makes of the event; a known tag; a payload
    the converter structures. None whenever anything is unusual: the careful path then reads
    the line again and names what is wrong. A stream event (most lines of a trace) is not
    made into an object at all: ``feed_stream`` takes its parts.
    """
    if type(data) is not dict or len(data) != _known_keys(data):
        return None
    return _event_to_feed(data, seq)


def _known_keys(data: dict[str, Any]) -> int:
    """How many keys an event line may have: ``event``, ``record`` and ``seq``; a valid
    ``elapsed_ms``; ``transitions`` and ``effects`` when they are non-empty lists."""
    known = 3
    if len(data) > known:
        elapsed = data.get(records.ELAPSED, -1)
        if type(elapsed) in (int, float) and elapsed >= 0:
            known += 1
        for key in records.STEP_KEYS:
            carried = data.get(key)
            if type(carried) is list and carried:
                known += 1
    return known


def _holds_step(content: bytes, data: dict[str, Any], step: Step) -> bool:
    """Whether the event line ``content`` (parsed: ``data``, whose ``record``, ``seq`` and
    ``event`` :func:`_event_to_feed` took) holds no other key than those, a valid
    ``elapsed_ms``, and the transitions and effects of ``step`` as the writer writes them
    (:func:`~fsm_agent.trace.step_bytes.carries`, which also sees that a list the step lacks
    is absent)."""
    keys = 3 + (len(step.transitions) > 0) + (len(step.effects) > 0)
    if len(data) != keys:
        elapsed = data.get(records.ELAPSED, -1)
        if len(data) != keys + 1 or type(elapsed) not in (int, float) or elapsed < 0:
            return False
    return carries(content, data, step)


def _event_to_feed(data: dict[str, Any], seq: int) -> _Quick | None:
    """The event of an ``event`` line at ``seq`` (its other keys unchecked), ready to feed,
    or None when anything is unusual."""
    try:  # subscripts, not get(): a missing key is rare, and a subscript costs less
        recorded_seq, raw = data["seq"], data["event"]
        if type(recorded_seq) is not int or recorded_seq != seq or data["record"] != "event":
            return None
        tag = raw["type"] if type(raw) is dict else None
        if tag == _STREAM_TAG:
            request_id, payload = raw["request_id"], raw["event"]
            if len(raw) != 3 or type(request_id) is not str or type(payload) is not dict:
                return None
            return request_id, payload
    except KeyError:
        return None
    if type(tag) is not str or tag not in records.EVENT_TAGS:
        return None
    try:
        event: Event = load_event(raw)  # structuring leaves the dict whole
    except Exception:
        return None  # the careful path structures it again and names the bad field
    return event


class _Replayer:
    """Feeds recorded events to a core and checks the records it produces."""

    def __init__(
        self,
        *,
        header: TraceHeader,
        core: CoreLike,
        upgrades: list[Upgrade],
        source: str | None,
        context: int,
        keep: bool,
        track: bool,
    ) -> None:
        self.header = header
        self.core = core
        self.upgrades = upgrades
        self.source = source
        self.context = max(context, 0)
        self.keep: list[dict[str, Any]] | None = [] if keep else None
        self.tracker = _Outstanding() if track else None
        self.pending: collections.deque[_Produced] = collections.deque()
        # Recently accepted lines, for the context of a divergence: a ``(number, content)``
        # pair from the hot loop stands for an event line and everything it carries.
        self.recent: collections.deque[_Line | tuple[int, bytes]] = collections.deque(
            maxlen=self.context or 1
        )
        self.seq = 1
        self.events = self.transitions = self.effects = 0
        self.ended = False
        self.truncated = False
        self.error: Exception | None = None

    # -- parsing a recorded line, lazily ------------------------------------------------

    def data_of(self, line: _Line) -> dict[str, Any]:
        """The line's record dict, parsed and upgraded on first use."""
        if line.data is None:
            assert line.content is not None
            data = parse_line(line.content, line.number, line.complete, self.source)
            if self.upgrades and isinstance(data, dict):
                data = apply_upgrades(self.upgrades, data, line.number, self.source)
            if type(data) is dict and records.TRANSCRIPT_FROM in data:
                data = resolve_transcript(data, line=line.number, source=self.source)
            line.data = data
        return line.data

    def fast_event(self, line: _Line) -> dict[str, Any] | None:
        """A well-formed event line, made ready to feed without the generic checks
        (:func:`_quick_event`); returns its dict.

        Returns None whenever anything is unusual; :meth:`checked` then does the full work
        (reusing the parsed line, so nothing is parsed twice).
        """
        if line.content is None or self.upgrades:
            return None
        if line.data is None:
            try:
                line.data = orjson.loads(line.content)
            except orjson.JSONDecodeError:
                return None
            if type(line.data) is dict and records.TRANSCRIPT_FROM in line.data:
                line.data = resolve_transcript(line.data, line=line.number, source=self.source)
        quick = _quick_event(line.data, self.seq)
        if quick is None:
            return None
        if isinstance(quick, tuple):
            line.stream = quick
        else:
            line.event = quick
        return line.data

    def checked(self, line: _Line) -> tuple[str, dict[str, Any]]:
        """Parse and fully check a line; returns its kind and dict (structures events)."""
        data = self.data_of(line)
        kind = records.record_kind(data, line.number, self.source)
        if kind == "step":
            records.check_step(data, line.number, self.source)
        elif kind == "event":
            # The records the line carries are checked when they do not match the core's.
            event = records.check_record(data, kind, line.number, self.source)
            records.check_carried(data, line.number, self.source)
            if line.event is None:
                line.event = event
        else:
            records.check_record(data, kind, line.number, self.source, deep=True)
        if data["seq"] != self.seq:
            raise TraceFormatError(
                line=line.number,
                path="$.seq",
                problem=f"expected seq {self.seq}, got {data['seq']}",
                source=self.source,
            )
        return kind, data

    # -- the loop ------------------------------------------------------------------------

    def run(self, lines: Iterator[_Line], *, stop_after: int | None, tolerate_tail: bool) -> None:
        """Consume lines; stop before the first event past ``stop_after`` once its step is done.

        Raises:
            TraceDivergence: at the first difference.
            TraceFormatError: for a bad line.
        """
        verdict = _GO
        if (
            isinstance(lines, _FileLines)
            and self.tracker is None
            and self.keep is None
            and not self.upgrades
            and stop_after is None
            and getattr(self.core, "feed_stream", None) is not None
        ):
            verdict = self.run_hot(lines, tolerate_tail=tolerate_tail)
        if verdict == _GO:
            for line in lines:  # all of them, or what the hot loop left: a cut-off last line
                verdict = self.careful(
                    line, lines, stop_after=stop_after, tolerate_tail=tolerate_tail
                )
                if verdict != _GO:
                    break
        if verdict == _STOP:
            return
        if self.pending and (not tolerate_tail or self.error is not None):
            # The trace ends where the core still had records to give (for a crashed run
            # that is fine, unless the core failed on the last event).
            produced = self.pending[0]
            error = self.divergence(self.seq, expected=None, actual=produced.data, after=())
            raise error from self.error

    def run_hot(self, lines: _FileLines, *, tolerate_tail: bool) -> str:
        """The hot loop over a file's complete lines; returns a verdict as :meth:`careful` does.

        An event line is parsed, its event fed as soon as the line's record, seq and event
        are in a common shape (:func:`_event_to_feed`), and the line accepted when it has no
        key but those, the transitions and effects it carries, and maybe ``elapsed_ms``, and
        the transitions and effects are, byte for byte, those the writer would write for what
        the core made of the event (:func:`~fsm_agent.trace.step_bytes.carries`). An end
        record is accepted when it is, byte for byte, the one the writer would write now.
        Anything else is checked as :meth:`careful` checks it, reusing what was parsed, and
        named if wrong.
        """
        core = self.core
        feed, feed_stream = core.feed, core.feed_stream  # type: ignore[attr-defined]
        loads = orjson.loads
        linked = records.TRANSCRIPT_FROM
        recent = self.recent if self.context else None
        pending = self.pending
        for item in lines.complete:
            number, content = item
            data = quick = None
            if not pending:
                try:
                    data = loads(content)
                except orjson.JSONDecodeError:
                    data = None
                else:
                    if type(data) is dict:
                        if linked in data:
                            data = resolve_transcript(data, line=number, source=self.source)
                        quick = _event_to_feed(data, self.seq)
            if quick is None:
                if data is not None and self.end_matches(content, data):
                    if recent is not None:
                        recent.append(item)
                    continue
                verdict = self.careful(
                    _Line(number, content, data=data), lines, tolerate_tail=tolerate_tail
                )
                if verdict != _GO:
                    return verdict
                continue
            assert data is not None  # quick implies it
            self.events += 1
            self.seq += 1
            try:
                step = feed_stream(*quick) if isinstance(quick, tuple) else feed(quick)
            except Exception as exc:
                self._failed(exc)
                step = None
            if step is not None:
                if not step.transitions and not step.effects and len(data) == 3:
                    # Most lines: a stream event the core takes without a record of its own.
                    if recent is not None:
                        recent.append(item)
                    continue
                if _holds_step(content, data, step):
                    transitions, effects = len(step.transitions), len(step.effects)
                    self.transitions += transitions
                    self.effects += effects
                    self.seq += transitions + effects
                    if recent is not None:
                        recent.append(item)
                    continue
            # Not a line of the common shape, or what it carries is not what the core made
            # of the event (or the core failed): check the line in full and compare record
            # by record, as careful does.
            line = _Line(number, content, data=data)
            if recent is not None:
                recent.append(line)
            if step is not None and (step.transitions or step.effects):
                self.produce_step(step)
            records.check_event_line(data, number, self.source)
            carried = records.carried_step(data)
            if carried is not None:
                self.match_carried(line, carried, lines)
        return _GO

    def end_matches(self, content: bytes, data: Any) -> bool:
        """Accept an ``end`` line that is, byte for byte, the end record the writer would
        write for the core as it is (with the line's driver fault, a fact of the recording
        run), when nothing is waiting; False for anything else (:meth:`careful` checks it)."""
        if type(data) is not dict or data.get("record") != "end" or self.pending:
            return False
        fault = data.get("fault")
        fields = records.end_fields(
            self.core.terminal, self.core.usage, fault=fault if type(fault) is str else None
        )
        fields["seq"] = self.seq
        try:
            if records.dumps(fields) != content:
                return False
        except orjson.JSONEncodeError:
            return False
        self.seq += 1
        self.ended = True
        return True

    def careful(
        self,
        line: _Line,
        lines: Iterator[_Line],
        *,
        stop_after: int | None = None,
        tolerate_tail: bool,
    ) -> str:
        """Check one line with every check; returns ``_GO``, ``_STOP`` (``stop_after`` was
        reached: nothing more to check) or ``_END`` (a cut-off last line was accepted)."""
        try:
            if self.pending:
                self.match(line, lines)
                return _GO
            data = self.fast_event(line)
            if data is not None:
                kind = "event"
            else:
                kind, data = self.checked(line)
        except TraceTruncated:
            if not tolerate_tail:
                raise
            self.truncated = True
            return _END
        if kind == "event":
            if stop_after is not None and self.seq > stop_after:
                return _STOP
            self.accept(line, data, kind)
            self.feed(line)
            carried = records.carried_step(data)
            if carried is not None:
                self.match_carried(line, carried, lines)
        elif kind == "end":
            # A driver fault is a fact about the recording run, not a decision of the
            # core: it is taken as recorded.
            fault = data.get("fault")
            produced = self.produce(
                records.end_fields(
                    self.core.terminal,
                    self.core.usage,
                    fault=fault if isinstance(fault, str) else None,
                )
            )
            self.pending.append(produced)
            self.match(line, lines)
            self.ended = True
        else:
            # A transition, effect or step the core did not produce: name its first record.
            first = self.expanded(line, data)[0] if kind == "step" else data
            self.diverge(line, lines, expected=first, actual=None)
        return _GO

    def accept(
        self,
        line: _Line,
        data: dict[str, Any] | None,
        kind: str,
        shape: dict[str, Any] | None = None,
    ) -> None:
        """A recorded line checked out: remember it and advance. For a ``step`` line,
        ``shape`` is a dict with its lists (the line's own, or what the core produced)."""
        if self.context:
            self.recent.append(line)
        if kind == "step":
            shape = shape if shape is not None else data
            assert shape is not None
            transitions, effects = len(shape["transitions"]), len(shape["effects"])
            if self.keep is not None:
                self.keep.extend(self.expanded(line, data))
            self.transitions += transitions
            self.effects += effects
            self.seq += transitions + effects
            return
        if self.keep is not None:
            kept = data if data is not None else self.data_of(line)
            self.keep.append(records.event_alone(kept) if kind == "event" else kept)
        if kind == "transition":
            self.transitions += 1
        elif kind == "effect":
            self.effects += 1
        elif kind == "event":
            self.events += 1
        self.seq += 1

    def expanded(self, line: _Line, data: dict[str, Any] | None) -> list[dict[str, Any]]:
        """The records a recorded ``step`` line stands for."""
        return records.expand_step(
            data if data is not None else self.data_of(line), line.number, self.source
        )

    def waiting(self) -> int:
        """Records produced and not yet matched."""
        return sum(produced.count for produced in self.pending)

    def produce(self, fields: dict[str, Any], count: int = 1) -> _Produced:
        fields["seq"] = self.seq + self.waiting()
        return _Produced(fields, records.dumps(fields), count)

    def produce_step(self, step: Step) -> None:
        """Queue the ``step`` line a ``feed`` result is written as (schema 2)."""
        count = len(step.transitions) + len(step.effects)
        self.pending.append(self.produce(records.step_record(step), count))

    def _failed(self, exc: Exception) -> None:
        """The core raised on a recorded event: that is a divergence (an ``error`` record)."""
        error = {"record": "error", "seq": self.seq, "error": f"{type(exc).__name__}: {exc}"}
        self.pending.append(_Produced(error, None))
        self.error = exc

    def feed(self, line: _Line) -> None:
        stream = line.stream
        feed_stream = getattr(self.core, "feed_stream", None)
        try:
            if stream is not None and self.tracker is None and feed_stream is not None:
                step = feed_stream(stream[0], stream[1])  # the hot path: no event object
            else:
                if line.event is None and stream is not None:
                    line.event = ModelStreamEvent(request_id=stream[0], event=stream[1])
                event = line.event
                assert event is not None
                if self.tracker is not None:
                    self.tracker.answered(event)
                step = self.core.feed(event)
        except Exception as exc:
            self._failed(exc)
            return
        if step.transitions or step.effects:
            self.produce_step(step)
        if self.tracker is not None:
            first = self.seq + len(step.transitions)
            for offset, effect in enumerate(step.effects):
                self.tracker.emitted(effect, first + offset)

    def match_carried(self, line: _Line, carried: dict[str, Any], lines: Iterator[_Line]) -> None:
        """Check what the core made of a schema 3 event line's event against the
        transitions and effects the line carries (``carried``, shaped as a step line)."""
        step_line = _Line(line.number, None, True, carried)
        if not self.pending:
            expected = self.expanded(step_line, carried)
            self.diverge(line, lines, expected=expected[0], actual=None, later=expected[1:])
        produced = self.pending[0]
        if produced.content is not None and produced.content == records.dumps(carried):
            self.pending.popleft()
            self.accept(step_line, carried, "step", produced.data)
            return
        self.match(step_line, lines)

    def match(self, line: _Line, lines: Iterator[_Line]) -> None:
        produced = self.pending[0]
        if (
            line.content is not None
            and produced.content is not None
            and line.content == produced.content
        ):
            self.pending.popleft()
            self.accept(line, None, produced.data["record"], produced.data)
            return
        kind, data = self.checked(line)
        made = produced.data["record"]
        if made == "step" and kind in ("transition", "effect"):
            # A line per record (schema 1, or an in-memory trace): match them one by one.
            self.pending.popleft()
            self.pending.extendleft(
                _Produced(record, records.dumps(record)) for record in reversed(produced.records())
            )
            self.match(line, lines)
            return
        if kind != "step" and made != "step":
            if produced.content is not None and _same(data, produced.content):
                self.pending.popleft()
                self.accept(line, data, kind)
                return
            self.diverge(line, lines, expected=data, actual=produced.data)
        # A step on one side at least: compare record by record, naming the first that differs.
        expected = self.expanded(line, data) if kind == "step" else [data]
        actual = produced.records()
        for offset, (mine, theirs) in enumerate(itertools.zip_longest(expected, actual)):
            if mine is None or theirs is None or not _same_records(mine, theirs):
                self.diverge(
                    line,
                    lines,
                    expected=mine,
                    actual=theirs,
                    seq=self.seq + offset,
                    before=expected[:offset],
                    later=expected[offset + 1 :],
                    next_line=mine is None,
                )
        self.pending.popleft()
        self.accept(line, data, kind)

    def diverge(
        self,
        line: _Line,
        lines: Iterator[_Line],
        *,
        expected: dict[str, Any] | None,
        actual: dict[str, Any] | None,
        seq: int | None = None,
        before: list[dict[str, Any]] | None = None,
        later: list[dict[str, Any]] | None = None,
        next_line: bool = False,
    ) -> None:
        """Raise the divergence at ``seq`` (default: the line's first record) on ``line``;
        ``before`` and ``later``: the line's records around it; ``next_line``: the recorded
        step ended first, so the record expected is the first of the next line."""
        after: list[_Line] = []
        for following in lines:
            if len(after) >= max(self.context, 1 if next_line else 0):
                break
            after.append(following)
        where = line.number
        if next_line:
            expected = None
            if after:
                with contextlib.suppress(TraceFormatError):
                    first = self.data_of(after[0])
                    if isinstance(first, dict):
                        expected = first
                        if first.get("record") == "step":
                            expected = self.expanded(after[0], first)[0]
                        elif first.get("record") == "event":
                            expected = records.event_alone(first)
                        where = after[0].number
            if not self.context:
                after = []
        error = self.divergence(
            self.seq if seq is None else seq,
            expected=expected,
            actual=actual,
            after=after,
            before=before or (),
            later=later or (),
            line=where,
        )
        raise error from self.error

    def divergence(
        self,
        seq: int,
        *,
        expected: dict[str, Any] | None,
        actual: dict[str, Any] | None,
        after: Iterable[_Line],
        before: Iterable[dict[str, Any]] = (),
        later: Iterable[dict[str, Any]] = (),
        line: int | None = None,
    ) -> TraceDivergence:
        """The error, with up to ``context`` recorded records on each side of ``seq``."""
        around: list[dict[str, Any]] = []
        if self.context:
            window: list[dict[str, Any]] = []
            for item in list(self.recent)[-self.context :]:
                # A pair from the hot loop stands for its line and all it carries; the
                # records a checked line carries were accepted as lines of their own.
                if isinstance(item, _Line):
                    window.extend(self.context_records([item], carrying=False))
                else:
                    window.extend(self.context_records([_Line(*item)]))
            around = [*window, *before][-self.context :]
            if expected is not None:
                around.append(expected)
            around.extend([*later, *self.context_records(after)][: self.context])
        return TraceDivergence(
            seq=seq, expected=expected, actual=actual, context=around, source=self.source, line=line
        )

    def context_records(
        self, lines: Iterable[_Line], *, carrying: bool = True
    ) -> list[dict[str, Any]]:
        """The records of recorded lines, a ``step`` line expanded, up to a bad line.
        ``carrying``: expand what a schema 3 event line carries too (lines already accepted
        are not: the records they carry were accepted as lines of their own)."""
        out: list[dict[str, Any]] = []
        for line in lines:
            try:
                data = self.data_of(line)
                if isinstance(data, dict) and data.get("record") == "step":
                    out.extend(self.expanded(line, data))
                elif isinstance(data, dict) and data.get("record") == "event":
                    out.append(records.event_alone(data))
                    carried = records.carried_step(data) if carrying else None
                    if carried is not None:
                        out.extend(self.expanded(line, carried))
                elif isinstance(data, dict):
                    out.append(data)
            except TraceFormatError:
                break
        return out


def _same(recorded: dict[str, Any], produced: bytes) -> bool:
    """Equal as JSON, allowing for the writer's key-based redaction of the recorded side."""
    return _same_records(recorded, orjson.loads(produced))


def _same_records(recorded: dict[str, Any], produced: dict[str, Any]) -> bool:
    """Equal, allowing for the writer's key-based redaction of the recorded side.

    Equal as JSON, not only as Python values: ``1``, ``1.0`` and ``true`` are equal in
    Python, so values that are equal are also compared serialized.
    """
    if recorded == produced:
        return _same_json(recorded, produced)
    redacted = KEY_RULES_ONLY.value(produced)
    return bool(recorded == redacted) and _same_json(recorded, redacted)


def _same_json(recorded: dict[str, Any], produced: Any) -> bool:
    try:
        return records.dumps(recorded) == records.dumps(produced)
    except orjson.JSONEncodeError:
        return False


def _check_digest(header: TraceHeader, expected: str | None, source: str | None) -> None:
    digest = current_table_digest() if expected is None else expected
    if header.table_digest != digest:
        where = source or "trace"
        import fsm_agent  # noqa: PLC0415 - the version, only for the message

        recorded_by = header.library_version
        raise TableDigestMismatch(
            f"{where}: recorded by fsm_agent {recorded_by} against machine tables "
            f"{header.table_digest}; this fsm_agent ({fsm_agent.__version__}) has tables "
            f"{digest}, so it cannot replay, fork or resume the run: the fsm_agent that "
            f"recorded it can (`fsm-agent show` reads it with any). Traces this project "
            f"records itself: re-record them with `{RERECORD_COMMAND}` and review the new "
            "transitions"
        )


def _start(
    source: TraceSource | Trace,
    *,
    context: int,
    keep: bool,
    track: bool,
    core_factory: CoreFactory | None,
    table_digest: str | None,
    file: IO[bytes] | None,
) -> tuple[_Replayer, Iterator[_Line]]:
    upgrades: list[Upgrade] = []
    if isinstance(source, Trace):
        header, lines = source.header, _trace_lines(source)
        name = source.source
    else:
        assert file is not None
        name = os.fspath(source)
        header, upgrades, lines = _file_lines(file, name)
    _check_digest(header, table_digest, name)
    try:
        core = (core_factory or default_core_factory)(header.config, header.tools)
    except DefinitionError as exc:  # e.g. two tools with one name: the header is bad
        raise TraceFormatError(
            line=1, path="$.tools", problem=f"cannot build the core: {exc}", source=name
        ) from exc
    replayer = _Replayer(
        header=header,
        core=core,
        upgrades=upgrades,
        source=name,
        context=context,
        keep=keep,
        track=track,
    )
    return replayer, lines


def _run(
    source: TraceSource | Trace,
    *,
    context: int,
    keep: bool,
    track: bool,
    stop_after: int | None,
    tolerate_tail: bool,
    core_factory: CoreFactory | None,
    table_digest: str | None,
) -> _Replayer:
    def run(file: IO[bytes] | None) -> _Replayer:
        replayer, lines = _start(
            source,
            context=context,
            keep=keep,
            track=track,
            core_factory=core_factory,
            table_digest=table_digest,
            file=file,
        )
        try:
            replayer.run(lines, stop_after=stop_after, tolerate_tail=tolerate_tail)
        except TraceDivergence as exc:
            # Say so when a mask shorter than what it replaced came before (DESIGN §8).
            if isinstance(source, Trace):
                written = short_masks.record_lines(source.records)
            else:
                assert file is not None  # a file source is open
                written = short_masks.file_lines(file)
            raise short_masks.noted(exc, written) from exc.__cause__
        except records.UNEXPECTED_ERRORS as exc:
            # Hostile input reaching past our checks: still a format error, at the line
            # replay had reached (the core's own failures are divergences, not these).
            raise records.unreadable(exc, line=replayer.seq + 1, source=replayer.source) from None
        return replayer

    if isinstance(source, Trace):
        replayer = run(None)
        replayer.truncated = replayer.truncated or source.truncated
        return replayer
    with open(source, "rb") as file:  # noqa: PTH123 - a Path costs more than the open
        return run(file)


# --- public functions ----------------------------------------------------------------------


def replay(
    source: TraceSource | Trace,
    *,
    context: int = 3,
    core_factory: CoreFactory | None = None,
    table_digest: str | None = None,
    allow_truncated: bool = False,
) -> ReplayResult:
    """Replay a trace against a fresh core and check every record.

    A trace whose run ended (the core reached a terminal reason) must close with its ``end``
    record: one that lacks it was cut short, and that is reported as ``TraceTruncated``
    unless ``allow_truncated`` is set.

    Args:
        source: a trace file, or a :class:`~fsm_agent.trace.reader.Trace` already read.
        context: how many recorded records before and after a divergence to report.
        core_factory: builds the core from the header's config and tools (default:
            ``AgentCore``).
        table_digest: the digest the header must carry (default: this library's tables).
        allow_truncated: accept a trace cut short (no ``end`` record after the run ended, a
            cut-off last line, or records the last step produced missing); the result
            then says ``truncated=True``.

    Returns:
        What was checked, and the terminal reason the core reached.

    Raises:
        TableDigestMismatch: the trace was recorded against other machine tables.
        TraceDivergence: at the first record the core does not reproduce.
        TraceFormatError: for a bad line (``TraceTruncated`` for a cut-off trace).
        TraceVersionError: for a schema this library cannot read.
    """
    replayer = _run(
        source,
        context=context,
        keep=False,
        track=False,
        stop_after=None,
        tolerate_tail=allow_truncated,
        core_factory=core_factory,
        table_digest=table_digest,
    )
    terminal = replayer.core.terminal
    cut = bool(replayer.pending) or (terminal is not None and not replayer.ended)
    if cut and not allow_truncated:
        raise TraceTruncated(
            line=replayer.seq + 1,
            path="$",
            problem=f"the run ended ({terminal}) but the trace stops before its end record; "
            "the file was cut short — replay it with allow_truncated=True "
            "(CLI: --allow-truncated) to accept that",
            source=replayer.source,
        )
    return ReplayResult(
        source=replayer.source,
        terminal=terminal,
        records=replayer.seq - 1,
        events=replayer.events,
        transitions=replayer.transitions,
        effects=replayer.effects,
        ended=replayer.ended,
        truncated=cut or replayer.truncated,
    )


def fork(
    source: TraceSource | Trace,
    at_seq: int,
    *,
    context: int = 3,
    core_factory: CoreFactory | None = None,
    table_digest: str | None = None,
) -> ForkPoint:
    """Replay events up to and including seq ``at_seq`` and return the live core.

    The prefix ends after the step of the last event at or before ``at_seq`` (a step is
    never cut in half). The prefix is checked like :func:`replay` checks a whole trace.

    Raises:
        UsageError: if ``at_seq`` is below 1 or past the end of the trace.
        TableDigestMismatch, TraceDivergence, TraceFormatError: as :func:`replay`.
    """
    if at_seq < 1:
        raise UsageError(f"fork at seq {at_seq}: seqs start at 1")
    replayer = _run(
        source,
        context=context,
        keep=True,
        track=True,
        stop_after=at_seq,
        tolerate_tail=False,
        core_factory=core_factory,
        table_digest=table_digest,
    )
    if replayer.seq - 1 < at_seq:
        raise UsageError(f"fork at seq {at_seq}: the trace has only {replayer.seq - 1} records")
    assert replayer.keep is not None
    assert replayer.tracker is not None
    return ForkPoint(
        header=replayer.header,
        core=replayer.core,
        at_seq=at_seq,
        records=tuple(replayer.keep),
        outstanding_effects=replayer.tracker.in_flight(replayer.seq - 1),
        source=replayer.source,
    )


def resume(
    source: TraceSource | Trace,
    *,
    context: int = 3,
    core_factory: CoreFactory | None = None,
    table_digest: str | None = None,
) -> ResumePoint:
    """Rebuild a crashed run from its (possibly cut-off) trace.

    Every recorded event is fed and checked as in :func:`replay`, except that the trace may
    stop anywhere: a cut-off last line is dropped, and records the last ``feed`` produced
    but the crash kept off the file are added to ``records``. Nothing is re-run.

    Raises:
        TableDigestMismatch, TraceDivergence, TraceFormatError: as :func:`replay`.
    """
    replayer = _run(
        source,
        context=context,
        keep=True,
        track=True,
        stop_after=None,
        tolerate_tail=True,
        core_factory=core_factory,
        table_digest=table_digest,
    )
    assert replayer.keep is not None
    assert replayer.tracker is not None
    written = replayer.seq - 1
    unwritten = [
        record for p in replayer.pending if p.content is not None for record in p.records()
    ]
    return ResumePoint(
        header=replayer.header,
        core=replayer.core,
        records=(*replayer.keep, *unwritten),
        unwritten=len(unwritten),
        in_flight=replayer.tracker.in_flight(written),
        truncated=replayer.truncated,
        source=replayer.source,
    )


def diff_traces(
    a: TraceSource | Trace, b: TraceSource | Trace, *, context: int = 3
) -> Divergence | None:
    """The first point where two traces differ, or None when they agree.

    Headers are compared without ``meta`` (and without ``library_version``); a header
    difference is reported at seq 0. Records are compared as dicts, in order, without their
    timing metadata.
    """
    first = a if isinstance(a, Trace) else read_trace(a)
    second = b if isinstance(b, Trace) else read_trace(b)
    left, right = _comparable_header(first.header), _comparable_header(second.header)
    if left != right:
        return Divergence(seq=0, expected=left, actual=right, source=first.source)
    ours, theirs = first.records, second.records
    for index in range(max(len(ours), len(theirs))):
        mine = _untimed(ours[index].data) if index < len(ours) else None
        other = _untimed(theirs[index].data) if index < len(theirs) else None
        try:
            differ = mine != other
        except RecursionError as exc:  # both nested near the reader's depth limit
            raise records.unreadable(exc, line=index + 2, source=first.source) from None
        if differ:
            low, high = max(index - context, 0), index + context + 1
            return Divergence(
                seq=index + 1,
                expected=mine,
                actual=other,
                context=tuple(r.data for r in ours[low:high]),
                source=first.source,
                line=ours[index].line if index < len(ours) else None,
            )
    return None


def shown_divergence(
    divergence: Divergence, first: Trace, second: Trace, *, context: int = 3
) -> Divergence:
    """``divergence``, found by :func:`diff_traces` between ``first`` and ``second`` (with the
    same ``context``), with its records taken from the two traces as a view shows them
    (:meth:`Trace.redacted`): a tool input streamed in pieces is judged with the pieces before
    it, which a record shown alone lacks."""
    if divergence.seq == 0:
        return divergence  # the headers, without their meta: configuration
    ours, theirs = first.redacted().records, second.redacted().records
    index = divergence.seq - 1
    low, high = max(index - context, 0), index + context + 1
    return attrs.evolve(
        divergence,
        expected=_untimed(ours[index].data) if index < len(ours) else None,
        actual=_untimed(theirs[index].data) if index < len(theirs) else None,
        context=tuple(r.data for r in ours[low:high]),
    )


def _untimed(data: dict[str, Any]) -> dict[str, Any]:
    if records.ELAPSED not in data:
        return data
    return {key: value for key, value in data.items() if key != records.ELAPSED}


def _comparable_header(header: TraceHeader) -> dict[str, Any]:
    record = header.to_record()
    del record["meta"], record["library_version"]
    return record
