"""Reading traces: streaming, strict, and with errors that name the line and the JSON path.

:class:`TraceReader` reads the header on construction and then yields one
:class:`~fsm_agent.trace.records.TraceRecord` per record (a ``step`` line gives several)
without holding the file in memory; :func:`read_trace` collects everything into a
:class:`Trace`. Every problem becomes a :class:`~fsm_agent.errors.TraceError`: invalid JSON,
a line that is not an object, an unknown record or event type, a wrong field type (``line 57:
$.event.event: expected an object``), a missing header, a newer schema, a cut-off last line
(:class:`~fsm_agent.errors.TraceTruncated`, or the records before it with
``allow_truncated=True``).

Older schemas are upgraded record by record through functions registered with
:func:`register_upgrade`; each lifts a record from version ``n`` to ``n + 1``. A ``step`` line
(schema 2) and an event line carrying its feed's transitions and effects (schema 3) are
expanded into the records they stand for, each yielded with the line's number, so a caller
sees the records of schema 1 whichever schema wrote the file.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from types import TracebackType
from typing import IO, Any

import attrs
import orjson

from fsm_agent.core.events import Event
from fsm_agent.errors import TraceFormatError, TraceTruncated, TraceVersionError
from fsm_agent.trace import records
from fsm_agent.trace.records import SCHEMA_VERSION, TraceHeader, TraceRecord
from fsm_agent.trace.redact import KEY_RULES_ONLY
from fsm_agent.trace.stream_input_redaction import StreamInputRedaction

Upgrade = Callable[[dict[str, Any]], dict[str, Any]]
TraceSource = str | os.PathLike[str]

_UPGRADES: dict[int, Upgrade] = {}


def register_upgrade(from_version: int) -> Callable[[Upgrade], Upgrade]:
    """Register a function that lifts one record dict from ``from_version`` to the next.

    The function gets every record of an old trace, header included, and returns the
    record in the next schema (it may change it in place). The reader sets the header's
    ``schema`` itself.

    Raises:
        ValueError: if an upgrade from that version is already registered.
    """

    def register(function: Upgrade) -> Upgrade:
        if from_version in _UPGRADES:
            raise ValueError(f"an upgrade from trace schema {from_version} is already registered")
        _UPGRADES[from_version] = function
        return function

    return register


@register_upgrade(0)
def _upgrade_0_to_1(record: dict[str, Any]) -> dict[str, Any]:
    """Schema 0 (pre-release) tagged records with ``kind`` and called the digest ``tables``."""
    if "kind" in record and "record" not in record:
        record["record"] = record.pop("kind")
    if record.get("record") == "header" and "tables" in record:
        record["table_digest"] = record.pop("tables")
    return record


@register_upgrade(1)
def _upgrade_1_to_2(record: dict[str, Any]) -> dict[str, Any]:
    """Schema 2 only adds the ``step`` line; every schema 1 record reads as it is."""
    return record


@register_upgrade(2)
def _upgrade_2_to_3(record: dict[str, Any]) -> dict[str, Any]:
    """Schema 3 only lets an event line carry its feed's records; schema 2 reads as it is."""
    return record


def _upgrade_chain(schema: int, line: int, source: str | None) -> list[Upgrade]:
    if schema > SCHEMA_VERSION:
        raise TraceVersionError(
            f"{source or 'trace'}: written by a newer fsm_agent, schema {schema}; this one "
            f"reads up to {SCHEMA_VERSION} — upgrade fsm_agent"
        )
    chain = []
    for version in range(schema, SCHEMA_VERSION):
        upgrade = _UPGRADES.get(version)
        if upgrade is None:
            raise TraceVersionError(
                f"{source or 'trace'}: line {line}: schema {schema} is older than any this "
                f"fsm_agent can upgrade (no upgrade from {version})"
            )
        chain.append(upgrade)
    return chain


def apply_upgrades(
    chain: list[Upgrade], data: dict[str, Any], number: int, source: str | None
) -> dict[str, Any]:
    """Run a record through the upgrade chain; a failing upgrade becomes a format error."""
    for upgrade in chain:
        try:
            data = upgrade(data)
        except Exception as exc:
            raise TraceFormatError(
                line=number,
                path="$",
                problem=f"upgrade {upgrade.__name__} failed: {type(exc).__name__}: {exc}",
                source=source,
            ) from exc
    return data


def iter_lines(file: IO[bytes]) -> Iterator[tuple[int, bytes, bool]]:
    """``(line number, content without the newline, ended by a newline)`` for each line."""
    for number, raw in enumerate(file, start=1):
        if raw.endswith(b"\n"):
            yield number, raw[:-1], True
        else:
            yield number, raw, False


def parse_line(content: bytes, number: int, complete: bool, source: str | None) -> Any:
    """Parse one line's JSON; a cut-off last line raises :class:`TraceTruncated`."""
    try:
        return orjson.loads(content)
    except orjson.JSONDecodeError as exc:
        if not complete:
            problem = (
                "the last line is cut off (no newline, not valid JSON); the writer stopped "
                "mid-record — read it with allow_truncated=True to get what precedes it"
            )
            if number == 1:  # nothing precedes it: allowing the cut cannot help
                problem = (
                    "the header, the only line, is cut off (no newline, not valid JSON); the "
                    "writer stopped before the run's first record, so there is nothing to read"
                )
            raise TraceTruncated(line=number, path="$", problem=problem, source=source) from None
        problem = "empty line" if not content.strip() else f"invalid JSON ({exc})"
        raise TraceFormatError(line=number, path="$", problem=problem, source=source) from None


def header_from_line(
    number: int, content: bytes, complete: bool, source: str | None
) -> tuple[TraceHeader, list[Upgrade]]:
    """Parse and check line 1; returns the header and the upgrades later lines need."""
    try:
        return _header_from_line(number, content, complete, source)
    except records.UNEXPECTED_ERRORS as exc:
        raise records.unreadable(exc, line=number, source=source) from None


def _header_from_line(
    number: int, content: bytes, complete: bool, source: str | None
) -> tuple[TraceHeader, list[Upgrade]]:
    data = parse_line(content, number, complete, source)
    if not isinstance(data, dict):
        records.record_kind(data, number, source)  # raises: not an object
    schema = data.get("schema")
    tag = data.get("record", data.get("kind"))
    if tag != "header":
        raise TraceFormatError(
            line=number,
            path="$.record",
            problem="missing header: a trace starts with a header record, "
            f"this line is {records.shown(tag)}",
            source=source,
        )
    if not isinstance(schema, int) or isinstance(schema, bool):
        raise TraceFormatError(
            line=number,
            path="$.schema",
            problem="expected an integer schema version",
            source=source,
        )
    chain = _upgrade_chain(schema, number, source)
    data = apply_upgrades(chain, data, number, source)
    data["schema"] = SCHEMA_VERSION
    records.record_kind(data, number, source)
    return records.parse_header(data, number, source), chain


def resolve_transcript(data: dict[str, Any], *, line: int, source: str | None) -> dict[str, Any]:
    """A turn's record that begins with another trace's transcript, read whole
    (:func:`fsm_agent.trace.transcript_base.resolve`; loaded when a trace needs it)."""
    from fsm_agent.trace.transcript_base import resolve  # noqa: PLC0415 - it imports this module

    return resolve(data, line=line, source=source)


def _source_name(source: TraceSource | IO[bytes]) -> str | None:
    if isinstance(source, str | os.PathLike):
        return os.fspath(source)
    name = getattr(source, "name", None)
    return name if isinstance(name, str) else None


class TraceReader:
    """A trace file opened for streaming.

    The header is read (and checked) when the reader is built; iterating yields the records
    after it, each checked and numbered. ``truncated`` turns True when a cut-off last line
    was skipped (only with ``allow_truncated=True``).

    Args:
        source: a path, or a binary file positioned at the start of a trace.
        allow_truncated: skip a cut-off last line instead of raising ``TraceTruncated``.
        deep: also structure effects and usage (catches every wrong field, costs time).

    Raises:
        TraceFormatError: for a bad line (the subclass ``TraceTruncated`` for a cut-off one).
        TraceVersionError: for a schema this library cannot read.
    """

    def __init__(
        self,
        source: TraceSource | IO[bytes],
        *,
        allow_truncated: bool = False,
        deep: bool = True,
    ) -> None:
        self.source = _source_name(source)
        self.allow_truncated = allow_truncated
        self.truncated = False
        self._deep = deep
        self._line = 1
        if isinstance(source, str | os.PathLike):
            self._file: IO[bytes] = Path(source).open("rb")  # noqa: SIM115 - closed in close()
            self._owns_file = True
        else:
            self._file = source
            self._owns_file = False
        try:
            self._lines = iter_lines(self._file)
            first = next(self._lines, None)
            if first is None:
                raise TraceFormatError(
                    line=1, path="$", problem="empty file: missing header", source=self.source
                )
            self.header, self._upgrades = header_from_line(*first, self.source)
        except BaseException:
            self.close()
            raise

    def __iter__(self) -> Iterator[TraceRecord]:
        try:
            yield from self._records()
        except records.UNEXPECTED_ERRORS as exc:
            # Hostile input reaching past our checks (nesting too deep...): still our error.
            raise records.unreadable(exc, line=self._line, source=self.source) from None

    def _records(self) -> Iterator[TraceRecord]:
        source = self.source
        expected_seq = 1
        upgrades = self._upgrades
        for number, content, complete in self._lines:
            self._line = number
            try:
                data = parse_line(content, number, complete, source)
            except TraceTruncated:
                if not self.allow_truncated:
                    raise
                self.truncated = True
                return
            if upgrades and isinstance(data, dict):
                data = apply_upgrades(upgrades, data, number, source)
            if type(data) is dict and records.TRANSCRIPT_FROM in data:
                data = resolve_transcript(data, line=number, source=source)
            kind = records.record_kind(data, number, source)
            event: Event | None
            if kind == "event":
                event, expanded = records.check_event_line(data, number, source, deep=self._deep)
            elif kind == "step":
                expanded = records.check_step(data, number, source, deep=self._deep)
                event = None
            else:
                event = records.check_record(data, kind, number, source, deep=self._deep)
                expanded = [data]
            if data["seq"] != expected_seq:
                raise TraceFormatError(
                    line=number,
                    path="$.seq",
                    problem=f"expected seq {expected_seq}, got {data['seq']}",
                    source=source,
                )
            expected_seq += len(expanded)
            for record in expanded:
                yield TraceRecord(line=number, data=record, event=event)
                event = None  # an event line's transitions and effects carry no event

    def close(self) -> None:
        """Close the file if the reader opened it."""
        if self._owns_file:
            self._file.close()

    def __enter__(self) -> TraceReader:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


@attrs.frozen(kw_only=True)
class Trace:
    """A whole trace in memory.

    Attributes:
        header: the header (config, tools, table digest).
        records: every record after the header, in order.
        truncated: a cut-off last line was skipped.
        source: the file it was read from, if any.
    """

    header: TraceHeader
    records: tuple[TraceRecord, ...]
    truncated: bool = False
    source: str | None = None

    def of_kind(self, kind: str) -> tuple[TraceRecord, ...]:
        """The records of one kind (``event``, ``transition``, ``effect`` or ``end``)."""
        return tuple(r for r in self.records if r.kind == kind)

    def redacted(self) -> Trace:
        """The trace as it may be shown (DESIGN §8): in its records' data and its header's
        meta, a value under a sensitive key name and API-key-shaped text are replaced, and a
        tool input streamed as ``input_json_delta`` pieces is rewritten piece by piece, as the
        trace writer does both. A trace this library wrote is so already; one another program
        wrote, one edited by hand, or one an earlier version wrote under narrower rules may
        hold them in clear. The records' structured events are left as read (replay's
        business, not a view's)."""
        rules, streamed = KEY_RULES_ONLY, StreamInputRedaction()
        records = tuple(
            record
            if (data := _streamed_input(rules.value(record.data), streamed)) is record.data
            else attrs.evolve(record, data=data)
            for record in self.records
        )
        meta = rules.value(self.header.meta)
        header = self.header if meta is self.header.meta else attrs.evolve(self.header, meta=meta)
        return attrs.evolve(self, header=header, records=records)


_STREAM_EVENT = "ModelStreamEvent"


def _streamed_input(data: dict[str, Any], streamed: StreamInputRedaction) -> dict[str, Any]:
    """A record's data with the tool-input text of a model stream event it holds rewritten by
    ``streamed`` (the scanners of the trace read so far); ``data`` itself when unchanged."""
    event = data.get("event")
    if type(event) is not dict or event.get("type") != _STREAM_EVENT:
        return data
    raw, request_id = event.get("event"), event.get("request_id")
    if type(raw) is not dict or type(request_id) is not str:
        return data
    rewritten = streamed.event(request_id, raw)
    if rewritten is raw:
        return data
    return {**data, "event": {**event, "event": rewritten}}


def iter_records(
    source: TraceSource | IO[bytes], *, allow_truncated: bool = False
) -> Iterator[TraceRecord]:
    """Yield the records after the header one at a time (the header is checked first)."""
    with TraceReader(source, allow_truncated=allow_truncated) as reader:
        yield from reader


def read_header(source: TraceSource | IO[bytes]) -> TraceHeader:
    """Read and check only the header of a trace."""
    with TraceReader(source) as reader:
        return reader.header


def read_trace(source: TraceSource | IO[bytes], *, allow_truncated: bool = False) -> Trace:
    """Read a whole trace.

    Args:
        source: a path or a binary file.
        allow_truncated: return the records before a cut-off last line (with
            ``truncated=True``) instead of raising ``TraceTruncated``.

    Raises:
        TraceFormatError: naming the line and JSON path of the first bad field.
        TraceVersionError: for a schema this library cannot read.
    """
    with TraceReader(source, allow_truncated=allow_truncated) as reader:
        found = tuple(reader)
        return Trace(
            header=reader.header, records=found, truncated=reader.truncated, source=reader.source
        )


def trace_files(paths: Iterable[str | os.PathLike[str]]) -> Iterator[Path]:
    """The trace files named by ``paths``: a file as is, a folder's ``*.jsonl`` files (searched
    recursively, sorted)."""
    for given in paths:
        path = Path(given)
        if path.is_dir():
            yield from sorted(path.rglob("*.jsonl"))
        else:
            yield path
