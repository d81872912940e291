"""Trace records: what one JSONL line holds, and how record dicts are built and checked.

A trace is one JSON object per line, keys sorted, every object tagged ``"record": <kind>``:

* ``header`` (line 1): ``schema``, ``library_version``, ``table_digest``, ``config`` (a
  :class:`~fsm_agent.core.config.LoopConfig` unstructured), ``tools`` (the
  :class:`~fsm_agent.core.tool_spec.ToolSpec` list) and ``meta`` (free-form: wall time, host,
  anything replay must ignore).
* ``event`` (``seq``, ``event``: the event with its ``type`` tag), ``transition`` (``seq``,
  ``machine``, ``name``, ``source``, ``dest``, ``call_id``), ``effect`` (``seq``, ``effect``),
  ``end`` (``seq``, ``terminal``, ``usage``, and ``fault`` when the driver failed: what
  failed, as ``Type: message``; replay takes it as recorded).

Schema 2 added ``step`` (``seq``, ``transitions``, ``effects``): what one ``feed`` produced,
on one line instead of one line per record. ``transitions`` holds transition records and
``effects`` effect records, each without ``record`` and ``seq``; a step line stands for those
records, the transitions first, numbered from its ``seq`` on.

Schema 3 writes **one line per feed** (issue 10: a line costs as much to write as a transition
costs to take). The ``event`` record carries what the core made of the event, ``transitions``
and ``effects`` shaped as in a step line (each only when not empty); the event takes the
line's ``seq``, its transitions and effects the ones after it, as if each had its own line.
The line is written after ``feed`` returns and before the driver is handed the step. That
keeps every guarantee write-ahead gave (DESIGN §5): the core is pure, and the world changes
only when the driver performs an effect, which happens after the line that names the effect
is written and flushed; so no effect is ever performed unrecorded, and a crash between
receiving an event and writing its line loses exactly what a crash a few µs earlier (before
the event's own line, under schema 2) lost. When ``feed`` raises, the event is written alone,
so the fault's cause is on file. An event line without ``transitions`` and ``effects`` is the
event alone (most stream deltas change nothing).

Readers expand a schema 3 event line (:func:`check_event_line`) and a step line
(:func:`expand_step`), so everything past the reader sees the same records a schema 1 trace
gives, whichever schema wrote the file; schema 1 and 2 traces read, replay and resume as
they always did.

``seq`` is one counter over every record after the header, starting at 1 (a step line takes
as many as it holds). Nothing compared by replay depends on the wall clock.

The builders here (:func:`event_fields`, :func:`transition_fields`, ...) are shared by the
writer and by replay, so a replayed record is built exactly the way the recorded one was.
Records stay plain dicts: replay compares dicts (or their serialized bytes), and only events
are structured back into objects.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Final

import attrs
import orjson

from fsm_agent.core.codec import (
    converter,
    dump_effect,
    dump_event,
    load_effect,
    load_event,
)
from fsm_agent.core.config import LoopConfig
from fsm_agent.core.effects import EFFECT_TYPES, Effect
from fsm_agent.core.events import EVENT_TYPES, Event, ModelStreamEvent, TurnStarted
from fsm_agent.core.json_values import json_type_name
from fsm_agent.core.messages import Usage
from fsm_agent.core.step import Step, TransitionTaken
from fsm_agent.core.tool_spec import ToolSpec
from fsm_agent.errors import ConfigError, TraceFormatError, UsageError
from fsm_agent.trace.json_limits import fit_for_json

SCHEMA_VERSION: Final = 3
"""The schema this library writes, and the newest it reads (1 and 2 are read as well)."""

STEP_KEYS: Final = ("transitions", "effects")
"""The fields of a step line, which a schema 3 event line carries as well."""

RECORD_KINDS: Final = ("header", "event", "transition", "effect", "end", "step")

ELAPSED: Final = "elapsed_ms"
"""Metadata on an event record: milliseconds from the run's start (the header's
``meta.started``, a wall-clock time) to the event's arrival. Replay and diff ignore it; stream
deltas do not carry it (they are most of a trace, and their timing is that of their response)."""

JSON_OPTIONS: Final = orjson.OPT_SORT_KEYS
"""orjson options of every trace line; replay serializes with the same ones to compare bytes."""

TRANSCRIPT_FROM: Final = "transcript_from"
"""The field of a ``TurnStarted`` event's record whose transcript begins with the one another
trace of its conversation holds (:mod:`~fsm_agent.trace.transcript_base`)."""

EVENT_TAGS: Final = frozenset(cls.__name__ for cls in EVENT_TYPES)
"""The ``type`` tags an ``event`` record's event may carry."""
_EFFECT_TAGS: Final = frozenset(cls.__name__ for cls in EFFECT_TYPES)

_FIELDS: Final[dict[str, frozenset[str]]] = {
    "header": frozenset(
        {"record", "schema", "library_version", "table_digest", "config", "tools", "meta"}
    ),
    "event": frozenset({"record", "seq", "event", "elapsed_ms", "transitions", "effects"}),
    "transition": frozenset({"record", "seq", "machine", "name", "source", "dest", "call_id"}),
    "effect": frozenset({"record", "seq", "effect"}),
    "end": frozenset({"record", "seq", "terminal", "usage", "fault"}),
    "step": frozenset({"record", "seq", "transitions", "effects"}),
}
_OPTIONAL: Final[dict[str, frozenset[str]]] = {
    "header": frozenset({"meta"}),
    "event": frozenset({"elapsed_ms", "transitions", "effects"}),
    "transition": frozenset({"call_id"}),
    "end": frozenset({"fault"}),
}


def refuse_unknown(value: object) -> Any:
    """orjson ``default=``: a trace holds JSON values only, never a ``repr`` of an object.

    Raises:
        TypeError: always; the message names the type that should have been unstructured.
    """
    raise TypeError(
        f"a trace record may hold only JSON values; got {type(value).__qualname__} "
        "(unstructure it with fsm_agent.core.codec first)"
    )


def dumps(record: Mapping[str, Any]) -> bytes:
    """Serialize one record exactly as the writer does (without the newline).

    A value orjson cannot write (a lone surrogate, an integer past 64 bits, nesting too deep)
    is rewritten by :func:`~fsm_agent.trace.json_limits.fit_for_json` and the record written
    again; replay serializes through here too, so both sides rewrite alike.

    Raises:
        orjson.JSONEncodeError: the record holds an object that is not a JSON value.
    """
    try:
        return orjson.dumps(record, default=refuse_unknown, option=JSON_OPTIONS)
    except orjson.JSONEncodeError as exc:
        if exc.__cause__ is not None:
            raise  # refuse_unknown spoke: an object that was never unstructured
    return orjson.dumps(fit_for_json(record), default=refuse_unknown, option=JSON_OPTIONS)


# --- the header ------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class TraceHeader:
    """The first record of a trace: enough to rebuild the core that wrote it.

    Attributes:
        schema: the record schema version (after upgrades, always :data:`SCHEMA_VERSION`).
        library_version: the fsm_agent version that wrote the trace (informational).
        table_digest: the digest of both machine tables at recording time.
        config: the loop configuration of the recorded core.
        tools: the tool specs of the recorded core.
        meta: free-form metadata (wall time and such); replay and diff ignore it.
    """

    schema: int
    library_version: str
    table_digest: str
    config: LoopConfig
    tools: tuple[ToolSpec, ...]
    meta: dict[str, Any] = attrs.field(factory=dict)

    def to_record(self) -> dict[str, Any]:
        """The header as a record dict (what line 1 of a trace holds)."""
        return self.record_with(
            config=converter().unstructure(self.config),
            tools=[converter().unstructure(tool) for tool in self.tools],
        )

    def record_with(self, *, config: dict[str, Any], tools: list[Any]) -> dict[str, Any]:
        """The header as a record dict, its config and tools given already unstructured."""
        return {
            "record": "header",
            "schema": self.schema,
            "library_version": self.library_version,
            "table_digest": self.table_digest,
            "config": config,
            "tools": tools,
            "meta": dict(self.meta),
        }


@attrs.frozen(kw_only=True)
class TraceRecord:
    """One record after the header, as read from a file.

    Attributes:
        line: the 1-based line number it was read from (0 when it was not read from a file).
        data: the record dict exactly as stored (``record``, ``seq`` and its fields).
        event: for ``event`` records, the structured event; otherwise None.
    """

    line: int
    data: dict[str, Any]
    event: Event | None = None

    @property
    def kind(self) -> str:
        """The record kind: ``event``, ``transition``, ``effect`` or ``end``."""
        kind: str = self.data["record"]
        return kind

    @property
    def seq(self) -> int:
        """The record's sequence number."""
        seq: int = self.data["seq"]
        return seq


# --- builders shared by the writer and replay ------------------------------------------------


def event_fields(event: Event) -> dict[str, Any]:
    """The fields of an ``event`` record (without ``seq``)."""
    if type(event) is ModelStreamEvent:
        if type(event.event) is not dict:
            # The reader would refuse it: a model event is a JSON object (SPEC §3).
            raise UsageError(
                f"a model stream event must be a dict, got {type(event.event).__name__}; "
                "a Model must yield the Messages API's event objects"
            )
        # Most records are stream deltas: build the dict the converter would build, directly.
        dumped = {"type": "ModelStreamEvent", "request_id": event.request_id, "event": event.event}
        return {"record": "event", "event": dumped}
    return {"record": "event", "event": dump_event(event)}


def turn_started_fields(event: TurnStarted) -> dict[str, Any]:
    """The fields of ``event``'s record with no messages (the writer joins their bytes on):
    the dict the converter makes of the event with ``messages=()``, built directly."""
    dumped: dict[str, Any] = {
        "messages": [],
        "wall_time": event.wall_time,
        "last_response_wall_time": event.last_response_wall_time,
        "type": "TurnStarted",
    }
    return {"record": "event", "event": dumped}


def transition_fields(transition: TransitionTaken) -> dict[str, Any]:
    """The fields of a ``transition`` record (without ``seq``)."""
    return {
        "record": "transition",
        "machine": transition.machine,
        "name": transition.name,
        "source": transition.source,
        "dest": transition.dest,
        "call_id": transition.call_id,
    }


def effect_fields(effect: Effect) -> dict[str, Any]:
    """The fields of an ``effect`` record (without ``seq``)."""
    return {"record": "effect", "effect": dump_effect(effect)}


def end_fields(terminal: str | None, usage: Usage, *, fault: str | None = None) -> dict[str, Any]:
    """The fields of an ``end`` record (without ``seq``); ``fault`` only when there was one."""
    fields = {"record": "end", "terminal": terminal, "usage": converter().unstructure(usage)}
    if fault is not None:
        fields["fault"] = fault
    return fields


def step_fields(step: Step) -> list[dict[str, Any]]:
    """The records one ``feed`` produces: its transitions, then its effects."""
    out = [transition_fields(t) for t in step.transitions]
    out.extend(effect_fields(e) for e in step.effects)
    return out


def step_record(step: Step) -> dict[str, Any]:
    """The fields of the ``step`` line standing for a ``feed``'s records (without ``seq``)."""
    return {
        "record": "step",
        "transitions": [step_transition(t) for t in step.transitions],
        "effects": [dump_effect(e) for e in step.effects],
    }


def add_step(fields: dict[str, Any], step: Step) -> dict[str, Any]:
    """An ``event`` record's ``fields`` with what ``feed`` made of the event (schema 3): its
    ``transitions`` and ``effects``, each only when there are any. Returns ``fields``."""
    if step.transitions:
        fields["transitions"] = [step_transition(t) for t in step.transitions]
    if step.effects:
        fields["effects"] = [dump_effect(e) for e in step.effects]
    return fields


def step_transition(transition: TransitionTaken) -> dict[str, Any]:
    """A transition as a ``step`` line (or a schema 3 event line) holds it: a transition
    record without ``record`` and ``seq``."""
    return {
        "machine": transition.machine,
        "name": transition.name,
        "source": transition.source,
        "dest": transition.dest,
        "call_id": transition.call_id,
    }


def seqs_taken(data: Mapping[str, Any]) -> int:
    """How many ``seq`` numbers a line takes: one per record it stands for."""
    kind = data.get("record")
    if kind == "header":
        return 0
    if kind == "step":
        return len(data["transitions"]) + len(data["effects"])
    if kind == "event":
        return 1 + len(data.get("transitions", ())) + len(data.get("effects", ()))
    return 1


def carried_step(data: dict[str, Any]) -> dict[str, Any] | None:
    """The ``step`` record a schema 3 event line carries (its ``transitions`` and
    ``effects``, numbered on from the event's ``seq``), or None for an event alone. The
    values are not checked: :func:`check_event_line` does that."""
    if "transitions" not in data and "effects" not in data:
        return None
    transitions, effects = data.get("transitions", []), data.get("effects", [])
    seq = data.get("seq")
    return {
        "record": "step",
        "seq": seq + 1 if type(seq) is int else seq,
        "transitions": transitions,
        "effects": effects,
    }


def event_alone(data: dict[str, Any]) -> dict[str, Any]:
    """An event line without what the core made of the event: the schema 1 ``event`` record
    (``data`` itself when it carries nothing)."""
    if "transitions" not in data and "effects" not in data:
        return data
    return {key: value for key, value in data.items() if key not in STEP_KEYS}


def check_carried(data: dict[str, Any], line: int, source: str | None) -> dict[str, Any] | None:
    """The ``step`` record a schema 3 event line carries (:func:`carried_step`), or None for
    an event alone; its lists are checked (present means a non-empty array), their items are
    not: :func:`check_step` does that.

    Raises:
        TraceFormatError: naming the list that is not a non-empty array.
    """
    if "transitions" not in data and "effects" not in data:
        return None
    for key in STEP_KEYS:
        if key in data and not _require(data, key, (list,), "array", line=line, source=source):
            problem = "an empty array (the writer leaves out a list with nothing in it)"
            raise _fail(line, f"$.{key}", problem, source)
    return carried_step(data)


def check_event_line(
    data: dict[str, Any], line: int, source: str | None, *, deep: bool = True
) -> tuple[Event, list[dict[str, Any]]]:
    """Check an ``event`` line of any schema; returns its event and the records it stands
    for: the event record, then (schema 3) each transition and effect it carries. An error
    names the field inside the line (``$.effects[1].type``).

    Raises:
        TraceFormatError: naming the line and the JSON path of the first bad field.
    """
    event = check_record(data, "event", line, source, deep=deep)
    assert event is not None  # an event record always structures its event
    step = check_carried(data, line, source)
    if step is None:
        return event, [data]
    return event, [event_alone(data), *check_step(step, line, source, deep=deep)]


def expand_step(data: dict[str, Any], line: int, source: str | None) -> list[dict[str, Any]]:
    """The records a ``step`` line stands for, each with its ``record`` tag and ``seq``.

    Raises:
        TraceFormatError: naming the JSON path of the first bad field of the line.
    """
    check_fields(data, "step", line, source)
    seq = data["seq"]
    if type(seq) is not int:
        _require(data, "seq", (int,), "integer", line=line, source=source)
    out: list[dict[str, Any]] = []
    transitions = _require(data, "transitions", (list,), "array", line=line, source=source)
    effects = _require(data, "effects", (list,), "array", line=line, source=source)
    for key, items in (("transitions", transitions), ("effects", effects)):
        for index, item in enumerate(items):
            if type(item) is not dict:
                problem = f"expected an object, got {json_type_name(item)}"
                raise _fail(line, f"$.{key}[{index}]", problem, source)
    for item in transitions:
        for field in ("record", "seq"):
            if field in item:
                index = len(out)
                problem = "unexpected field in a step's transition"
                raise _fail(line, f"$.transitions[{index}].{field}", problem, source)
        out.append({"record": "transition", "seq": seq + len(out), **item})
    first = seq + len(out)
    out.extend(
        {"record": "effect", "seq": first + offset, "effect": item}
        for offset, item in enumerate(effects)
    )
    if not out:
        raise _fail(line, "$", "a step record holds no transition and no effect", source)
    return out


def as_lines(records: Iterable[Mapping[str, Any]]) -> Iterator[dict[str, Any]]:
    """Records laid out as the writer lays them out (schema 3): the transitions and effects
    one ``feed`` produced (a run of them after an event, transitions first) on the event's
    line; every other record as it is. A run of transitions and effects that follows no event
    becomes a ``step`` line. ``seq`` is left as given (the writer stamps it)."""
    event: dict[str, Any] | None = None
    group: list[Mapping[str, Any]] = []
    for record in records:
        kind = record.get("record")
        if kind in ("transition", "effect"):
            if kind == "transition" and group and group[-1]["record"] == "effect":
                # Another feed's records, with no event of their own.
                yield from _feed_lines(event, group)
                event, group = None, []
            group.append(record)
            continue
        yield from _feed_lines(event, group)
        event, group = None, []
        if kind == "event":
            event = dict(record)
        else:
            yield dict(record)
    yield from _feed_lines(event, group)


def _feed_lines(
    event: dict[str, Any] | None, group: list[Mapping[str, Any]]
) -> Iterator[dict[str, Any]]:
    """The line (or lines) for an event and the records its ``feed`` produced."""
    if not group:
        if event is not None:
            yield event
        return
    step = _step_of(group)
    if event is None:
        yield step
        return
    for key in STEP_KEYS:
        if step[key]:
            event[key] = step[key]
    yield event


def _step_of(group: list[Mapping[str, Any]]) -> dict[str, Any]:
    return {
        "record": "step",
        "seq": group[0].get("seq"),
        "transitions": [
            {key: value for key, value in record.items() if key not in ("record", "seq")}
            for record in group
            if record["record"] == "transition"
        ],
        "effects": [record["effect"] for record in group if record["record"] == "effect"],
    }


def check_step(
    data: dict[str, Any], line: int, source: str | None, *, deep: bool = True
) -> list[dict[str, Any]]:
    """Expand a ``step`` line (:func:`expand_step`) and check each record it stands for; an
    error names the field inside the line (``$.effects[1].effect.type``)."""
    expanded = expand_step(data, line, source)
    transitions = len(data["transitions"])
    for index, record in enumerate(expanded):
        try:
            check_record(record, record["record"], line, source, deep=deep)
        except TraceFormatError as exc:
            where = (
                f"$.transitions[{index}]"
                if index < transitions
                else f"$.effects[{index - transitions}]"
            )
            # The record's own path starts "$.": for an effect, "$.effect" names the item.
            inner = exc.path[1:].removeprefix(".effect") if index >= transitions else exc.path[1:]
            raise _fail(line, where + inner, exc.problem, source) from None
    return expanded


# --- validation --------------------------------------------------------------------------------

UNEXPECTED_ERRORS: Final = (
    RecursionError,
    TypeError,
    KeyError,
    ValueError,
    AttributeError,
    IndexError,
)
"""What a check of a hostile line could still raise from deep inside a library; the reader
and replay turn these into :class:`TraceFormatError` naming the line."""


def shown(value: object) -> str:
    """A value for an error message: a short scalar as itself, anything else by its JSON type
    (a ``repr`` of a tag nested a thousand deep would itself fail)."""
    if isinstance(value, str | int | float | bool) or value is None:
        text = repr(value)
        return text if len(text) <= 80 else text[:77] + "..."
    return f"(an {json_type_name(value)})"


def unreadable(exc: BaseException, *, line: int, source: str | None) -> TraceFormatError:
    """A :class:`TraceFormatError` for an unexpected failure while checking a line."""
    message = str(exc).splitlines()[0][:200] if str(exc) else ""
    problem = f"the record cannot be read ({type(exc).__name__}{': ' if message else ''}{message})"
    return _fail(line, "$", problem, source)


def _fail(line: int, path: str, problem: str, source: str | None) -> TraceFormatError:
    return TraceFormatError(line=line, path=path, problem=problem, source=source)


def _format_cattrs(exc: BaseException, kind: object) -> str:
    """Message for one leaf error of a structuring failure (passed to ``transform_error``)."""
    if isinstance(exc, KeyError) and _is_union(kind):
        tag = exc.args[0] if exc.args else None
        return f"unknown or missing type tag {shown(tag)}"
    if isinstance(exc, AttributeError | TypeError) and _is_union(kind):
        return "expected an object with a type tag"
    if isinstance(exc, TypeError) and str(exc).startswith("expected "):
        # Our strict scalar hooks speak Python; a trace reader speaks JSON.
        return _PYTHON_TO_JSON.sub(lambda m: _JSON_NAMES[m.group(0)], str(exc))
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        values = ", ".join(repr(member.value) for member in kind)
        return f"expected one of {values}"
    if isinstance(exc, ConfigError):
        return str(exc)
    from cattrs.v import format_exception  # noqa: PLC0415 (only a broken trace needs it)

    return format_exception(exc, kind)  # type: ignore[arg-type]


_JSON_NAMES: Final = {
    "str": "string",
    "int": "integer",
    "float": "number",
    "bool": "boolean",
    "NoneType": "null",
    "dict": "object",
    "list": "array",
}
_PYTHON_TO_JSON: Final = re.compile(r"\b(?:str|int|float|bool|NoneType|dict|list)\b")


def _is_union(kind: object) -> bool:
    return type(kind).__name__ in {"UnionType", "_UnionGenericAlias"}


def structure_error(
    exc: BaseException, *, line: int, prefix: str, source: str | None
) -> TraceFormatError:
    """Turn a cattrs failure into a :class:`TraceFormatError` naming the first bad field."""
    import cattrs  # noqa: PLC0415 (only a broken trace needs it)

    try:
        messages = cattrs.transform_error(exc, path=prefix, format_exception=_format_cattrs)
    except Exception:
        messages = [f"{type(exc).__name__}: {exc} @ {prefix}"]
    first = messages[0] if messages else f"invalid value @ {prefix}"
    problem, _, path = first.rpartition(" @ ")
    if not problem:
        problem, path = first, prefix
    if problem.startswith("unknown or missing type tag"):
        path += ".type"
    return _fail(line, path, problem, source)


def _require(
    data: dict[str, Any],
    key: str,
    types: tuple[type, ...],
    expected: str,
    *,
    line: int,
    source: str | None,
) -> Any:
    if key not in data:
        raise _fail(line, f"$.{key}", "required field missing", source)
    value = data[key]
    if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
        raise _fail(line, f"$.{key}", f"expected {expected}, got {json_type_name(value)}", source)
    return value


def check_fields(data: dict[str, Any], kind: str, line: int, source: str | None) -> None:
    """Refuse unknown and missing top-level fields of a record of ``kind``."""
    allowed = _FIELDS[kind]
    if data.keys() == allowed:
        return  # the common case: every field present, nothing else
    for key in data:
        if key not in allowed:
            raise _fail(line, f"$.{key}", f"unexpected field in a {kind} record", source)
    for key in allowed - _OPTIONAL.get(kind, frozenset()):
        if key not in data:
            raise _fail(line, f"$.{key}", "required field missing", source)


def record_kind(data: Any, line: int, source: str | None) -> str:
    """The ``record`` tag of a parsed line, or a clear error."""
    if not isinstance(data, dict):
        raise _fail(line, "$", f"expected a JSON object, got {json_type_name(data)}", source)
    kind = data.get("record")
    if kind is None:
        raise _fail(line, "$.record", "required field missing (every line is tagged)", source)
    if not isinstance(kind, str) or kind not in _FIELDS:
        known = ", ".join(RECORD_KINDS)
        raise _fail(line, "$.record", f"unknown record type {shown(kind)} (known: {known})", source)
    return kind


def parse_header(data: dict[str, Any], line: int, source: str | None) -> TraceHeader:
    """Validate and structure a (current-schema) header record."""
    check_fields(data, "header", line, source)
    schema = _require(data, "schema", (int,), "integer", line=line, source=source)
    version = _require(data, "library_version", (str,), "string", line=line, source=source)
    digest = _require(data, "table_digest", (str,), "string", line=line, source=source)
    raw_config = _require(data, "config", (dict,), "object", line=line, source=source)
    raw_tools = _require(data, "tools", (list,), "array", line=line, source=source)
    meta = data.get("meta", {})
    if not isinstance(meta, dict):
        raise _fail(line, "$.meta", f"expected object, got {json_type_name(meta)}", source)
    config, tools = _header_objects(raw_config, raw_tools, line, source)
    return TraceHeader(
        schema=schema,
        library_version=version,
        table_digest=digest,
        config=config,
        tools=tools,
        meta=meta,
    )


_HEADER_MEMO_LIMIT: Final = 32
_HEADER_MEMO: Final[dict[bytes, tuple[LoopConfig, tuple[ToolSpec, ...]]]] = {}
"""Config and tools structured from a header's JSON, by its bytes: a corpus of traces repeats
a few headers (issue 10). Both are frozen, so sharing them between traces is safe."""


def _header_objects(
    raw_config: dict[str, Any], raw_tools: list[Any], line: int, source: str | None
) -> tuple[LoopConfig, tuple[ToolSpec, ...]]:
    try:
        key = orjson.dumps([raw_config, raw_tools], option=JSON_OPTIONS)
    except orjson.JSONEncodeError:
        key = b""  # not JSON the writer could have written: structured (and refused) below
    known = _HEADER_MEMO.get(key) if key else None
    if known is not None:
        return known
    try:
        config = converter().structure(raw_config, LoopConfig)
    except Exception as exc:
        raise structure_error(exc, line=line, prefix="$.config", source=source) from None
    try:
        tools = converter().structure(raw_tools, tuple[ToolSpec, ...])
    except Exception as exc:
        raise structure_error(exc, line=line, prefix="$.tools", source=source) from None
    if key:
        if len(_HEADER_MEMO) >= _HEADER_MEMO_LIMIT:
            _HEADER_MEMO.clear()
        _HEADER_MEMO[key] = (config, tools)
    return config, tools


def parse_event(data: dict[str, Any], line: int, source: str | None) -> Event:
    """Validate an ``event`` record's payload and structure the event."""
    raw = data.get("event")
    if type(raw) is not dict:
        raw = _require(data, "event", (dict,), "object", line=line, source=source)
    tag = raw.get("type")
    if tag is None:
        raise _fail(line, "$.event.type", "required field missing (the event's type tag)", source)
    if type(tag) is not str or tag not in EVENT_TAGS:
        raise _fail(line, "$.event.type", f"unknown event type {shown(tag)}", source)
    if tag == "ModelStreamEvent" and len(raw) == 3:
        # The hot path of replay: most lines of a trace are stream deltas. Same checks as the
        # converter (strict str, a dict payload kept as is), without its generic machinery.
        request_id = raw.get("request_id")
        payload = raw.get("event")
        if type(request_id) is str and type(payload) is dict:
            return ModelStreamEvent(request_id=request_id, event=payload)
    try:
        # The converter copies before popping the tag; the shallow copy here keeps that
        # promise even if a future cattrs pops in place (the raw dict stays in the record).
        return load_event(dict(raw))
    except Exception as exc:
        raise structure_error(exc, line=line, prefix="$.event", source=source) from None


def check_effect(data: dict[str, Any], line: int, source: str | None) -> Effect:
    """Validate an ``effect`` record's payload by structuring it."""
    raw = _require(data, "effect", (dict,), "object", line=line, source=source)
    tag = raw.get("type")
    if tag is None:
        raise _fail(line, "$.effect.type", "required field missing (the effect's type tag)", source)
    if type(tag) is not str or tag not in _EFFECT_TAGS:
        raise _fail(line, "$.effect.type", f"unknown effect type {shown(tag)}", source)
    try:
        return load_effect(dict(raw))
    except Exception as exc:
        raise structure_error(exc, line=line, prefix="$.effect", source=source) from None


def check_record(
    data: dict[str, Any], kind: str, line: int, source: str | None, *, deep: bool = True
) -> Event | None:
    """Validate a record after the header; returns the structured event of event records.

    Args:
        data: the parsed line.
        kind: its ``record`` tag (from :func:`record_kind`).
        line: the line number, for errors.
        source: the file name, for errors.
        deep: also structure effects and usage (replay skips this on lines it matched).

    Raises:
        TraceFormatError: naming the line and the JSON path of the first bad field.
    """
    if kind == "header":
        raise _fail(line, "$.record", "a second header record (the header is line 1 only)", source)
    check_fields(data, kind, line, source)
    if type(data["seq"]) is not int:
        _require(data, "seq", (int,), "integer", line=line, source=source)
    if kind == "event":
        elapsed = data.get(ELAPSED)
        if elapsed is not None and (type(elapsed) not in (int, float) or elapsed < 0):
            raise _fail(line, f"$.{ELAPSED}", "expected a number of milliseconds >= 0", source)
        return parse_event(data, line, source)
    if kind == "transition":
        for key in ("machine", "name", "source", "dest"):
            _require(data, key, (str,), "string", line=line, source=source)
        call_id = data.get("call_id")
        if call_id is not None and not isinstance(call_id, str):
            raise _fail(
                line, "$.call_id", f"expected string or null, got {json_type_name(call_id)}", source
            )
    elif kind == "effect":
        if deep:
            check_effect(data, line, source)
        else:
            _require(data, "effect", (dict,), "object", line=line, source=source)
    else:  # end
        terminal = data["terminal"]
        if terminal is not None and not isinstance(terminal, str):
            raise _fail(
                line,
                "$.terminal",
                f"expected string or null, got {json_type_name(terminal)}",
                source,
            )
        fault = data.get("fault")
        if fault is not None and not isinstance(fault, str):
            raise _fail(line, "$.fault", f"expected string, got {json_type_name(fault)}", source)
        usage = _require(data, "usage", (dict,), "object", line=line, source=source)
        if deep:
            try:
                converter().structure(usage, Usage)
            except Exception as exc:
                raise structure_error(exc, line=line, prefix="$.usage", source=source) from None
    return None
