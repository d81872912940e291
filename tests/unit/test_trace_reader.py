"""The trace reader: every kind of bad file gets a clear error naming its line and JSON path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from test_trace_support import lines_of, record_run
from trace_layouts import write_schema1, write_schema2

from fsm_agent.core.events import ModelStreamEvent, TurnStarted
from fsm_agent.errors import TraceError, TraceFormatError, TraceTruncated, TraceVersionError
from fsm_agent.trace.reader import iter_records, read_header, read_trace, register_upgrade
from fsm_agent.trace.records import SCHEMA_VERSION


@pytest.fixture
def recorded(tmp_path: Path) -> list[dict[str, Any]]:
    """The parsed lines of a real recorded run."""
    return lines_of(record_run(tmp_path / "good.jsonl"))


def first_of(records: list[dict[str, Any]], event_type: str) -> int:
    """Index of the first event record of a type."""
    return next(
        i
        for i, r in enumerate(records)
        if r["record"] == "event" and r["event"]["type"] == event_type
    )


def broken(tmp_path: Path, records: list[dict[str, Any]]) -> TraceFormatError:
    """Write records and return the format error reading them raises."""
    path = write_schema1(tmp_path / "bad.jsonl", records)
    with pytest.raises(TraceFormatError) as info:
        read_trace(path)
    return info.value


def test_a_recorded_trace_reads_back(tmp_path: Path) -> None:
    """A recorded run reads back with a structured header and structured events."""
    path = record_run(tmp_path / "t.jsonl")
    trace = read_trace(path)
    assert trace.header.tools[0].name == "Read"
    assert not trace.truncated
    assert trace.records[0].line == 2
    assert isinstance(trace.records[0].event, TurnStarted)
    assert any(isinstance(r.event, ModelStreamEvent) for r in trace.records)
    assert trace.of_kind("end")[0].data["terminal"] == "completed"
    assert read_header(path) == trace.header


def test_wrong_field_type_names_line_and_path(
    tmp_path: Path, recorded: list[dict[str, Any]]
) -> None:
    """A nested field of the wrong type is reported as ``line N: $.event.<path>: expected ...``."""
    index = first_of(recorded, "TurnStarted")
    recorded[index]["event"]["messages"][0]["content"][0]["text"] = 5
    error = broken(tmp_path, recorded)
    assert error.line == index + 1
    assert error.path == "$.event.messages[0].content[0].text"
    assert "expected string" in str(error)
    assert str(error).startswith(f"{tmp_path / 'bad.jsonl'}: line {index + 1}: $.event.")


def test_wrong_stream_payload_type(tmp_path: Path, recorded: list[dict[str, Any]]) -> None:
    """A stream event whose request id is a number names ``$.event.request_id``."""
    index = first_of(recorded, "ModelStreamEvent")
    recorded[index]["event"]["request_id"] = 7
    error = broken(tmp_path, recorded)
    assert (error.line, error.path) == (index + 1, "$.event.request_id")
    assert "expected string" in error.problem


def test_unknown_event_type_is_named(tmp_path: Path, recorded: list[dict[str, Any]]) -> None:
    """An unknown event tag says so (not "required field missing")."""
    recorded[1]["event"]["type"] = "TurnExploded"
    error = broken(tmp_path, recorded)
    assert error.path == "$.event.type"
    assert "unknown event type 'TurnExploded'" in error.problem


def test_unknown_nested_tag_is_named(tmp_path: Path, recorded: list[dict[str, Any]]) -> None:
    """An unknown message tag inside an event points at its ``type`` field."""
    recorded[1]["event"]["messages"][0]["type"] = "robot"
    error = broken(tmp_path, recorded)
    assert error.path == "$.event.messages[0].type"
    assert "'robot'" in error.problem


def test_unknown_enum_value_lists_the_choices(tmp_path: Path) -> None:
    """A bad enum value lists what is allowed."""
    records = lines_of(record_run(tmp_path / "t.jsonl", "overloaded_then_reply"))
    index = first_of(records, "ModelStreamFailed")
    records[index]["event"]["kind"] = "gremlins"
    error = broken(tmp_path, records)
    assert error.path == "$.event.kind"
    assert "'overloaded'" in error.problem


def test_unknown_record_type(tmp_path: Path, recorded: list[dict[str, Any]]) -> None:
    """An unknown ``record`` tag is named with the known ones."""
    recorded[3]["record"] = "banana"
    error = broken(tmp_path, recorded)
    assert (error.line, error.path) == (4, "$.record")
    assert "unknown record type 'banana'" in error.problem


def test_unexpected_and_missing_fields(tmp_path: Path, recorded: list[dict[str, Any]]) -> None:
    """An extra top-level field, or a missing one, is named by its path."""
    recorded[2]["colour"] = "blue"
    assert broken(tmp_path, recorded).path == "$.colour"
    del recorded[2]["colour"]
    del recorded[2]["name"]
    assert broken(tmp_path, recorded).path == "$.name"


def test_transition_field_types(tmp_path: Path, recorded: list[dict[str, Any]]) -> None:
    """A transition's strings are checked (``$.dest: expected string, got number``)."""
    recorded[2]["dest"] = 3
    error = broken(tmp_path, recorded)
    assert error.path == "$.dest"
    assert error.problem == "expected string, got number"


def test_effect_fields_are_checked(tmp_path: Path, recorded: list[dict[str, Any]]) -> None:
    """An effect field of the wrong type is named inside ``$.effect``."""
    index = next(i for i, r in enumerate(recorded) if r["record"] == "effect")
    recorded[index]["effect"]["effect_id"] = ["e1"]
    error = broken(tmp_path, recorded)
    assert error.path == "$.effect.effect_id"


def test_seq_must_count_up(tmp_path: Path, recorded: list[dict[str, Any]]) -> None:
    """A seq out of order is reported with the expected value."""
    recorded[5]["seq"] = 99
    error = broken(tmp_path, recorded)
    assert (error.line, error.path) == (6, "$.seq")
    assert "expected seq 5, got 99" in error.problem


def test_invalid_json_line(tmp_path: Path, recorded: list[dict[str, Any]]) -> None:
    """A complete line that is not JSON is a format error (not a truncation)."""
    path = write_schema1(tmp_path / "t.jsonl", recorded)
    lines = path.read_bytes().splitlines(keepends=True)
    lines[3] = b"{not json\n"
    path.write_bytes(b"".join(lines))
    with pytest.raises(TraceFormatError) as info:
        read_trace(path)
    assert not isinstance(info.value, TraceTruncated)
    assert (info.value.line, info.value.path) == (4, "$")
    assert "invalid JSON" in info.value.problem


def test_non_object_line(tmp_path: Path, recorded: list[dict[str, Any]]) -> None:
    """A line holding a JSON array is refused as not an object."""
    path = write_schema1(tmp_path / "t.jsonl", recorded)
    lines = path.read_bytes().splitlines(keepends=True)
    lines[2] = b"[1, 2]\n"
    path.write_bytes(b"".join(lines))
    with pytest.raises(TraceFormatError, match=r"line 3: \$: expected a JSON object, got array"):
        read_trace(path)


def test_blank_line(tmp_path: Path, recorded: list[dict[str, Any]]) -> None:
    """An empty line is named as such."""
    path = write_schema1(tmp_path / "t.jsonl", recorded)
    lines = path.read_bytes().splitlines(keepends=True)
    lines.insert(2, b"\n")
    path.write_bytes(b"".join(lines))
    with pytest.raises(TraceFormatError, match=r"line 3: .*empty line"):
        read_trace(path)


def test_missing_header(tmp_path: Path, recorded: list[dict[str, Any]]) -> None:
    """A trace whose first line is not a header says the header is missing."""
    error = broken(tmp_path, recorded[1:])
    assert (error.line, error.path) == (1, "$.record")
    assert "missing header" in error.problem


def test_empty_file(tmp_path: Path) -> None:
    """An empty file is a format error on line 1."""
    path = tmp_path / "empty.jsonl"
    path.write_bytes(b"")
    with pytest.raises(TraceFormatError, match="empty file"):
        read_trace(path)


def test_second_header(tmp_path: Path, recorded: list[dict[str, Any]]) -> None:
    """A header record after line 1 is refused."""
    recorded.insert(3, {**recorded[0]})
    error = broken(tmp_path, recorded)
    assert error.line == 4
    assert "second header" in error.problem


def test_bad_header_config(tmp_path: Path, recorded: list[dict[str, Any]]) -> None:
    """A config field of the wrong type is named inside ``$.config``; so is a range error."""
    recorded[0]["config"]["max_turns"] = "many"
    assert broken(tmp_path, recorded).path == "$.config.max_turns"
    recorded[0]["config"]["max_turns"] = 0
    error = broken(tmp_path, recorded)
    assert error.line == 1
    assert "max_turns" in str(error)


def test_headers_read_one_after_another_keep_their_own_config(
    tmp_path: Path, recorded: list[dict[str, Any]]
) -> None:
    """Traces whose headers differ in one config value or one tool schema each read back
    their own, and a broken header is refused even after an equal good one was read."""
    path = write_schema1(tmp_path / "a.jsonl", recorded)
    first = read_header(path)
    recorded[0]["config"]["max_turns"] = 7
    recorded[0]["tools"][0]["input_schema"] = {"type": "object", "required": ["path"]}
    second = read_header(write_schema1(tmp_path / "b.jsonl", recorded))
    assert second.config.max_turns == 7 != first.config.max_turns
    assert second.tools[0].input_schema["required"] == ["path"]
    assert read_header(path) == first
    recorded[0]["config"]["max_turns"] = "many"
    assert broken(tmp_path, recorded).path == "$.config.max_turns"


def test_truncated_last_line(tmp_path: Path, recorded: list[dict[str, Any]]) -> None:
    """A cut-off last line raises TraceTruncated; allow_truncated returns what precedes it."""
    path = write_schema1(tmp_path / "t.jsonl", recorded)
    content = path.read_bytes()
    path.write_bytes(content[: len(content) - 20])
    with pytest.raises(TraceTruncated) as info:
        read_trace(path)
    assert info.value.line == len(recorded)
    trace = read_trace(path, allow_truncated=True)
    assert trace.truncated
    assert len(trace.records) == len(recorded) - 2


def test_last_line_without_newline_but_complete(
    tmp_path: Path, recorded: list[dict[str, Any]]
) -> None:
    """A complete last record without its newline is read normally."""
    path = write_schema1(tmp_path / "t.jsonl", recorded)
    path.write_bytes(path.read_bytes().rstrip(b"\n"))
    trace = read_trace(path)
    assert not trace.truncated
    assert len(trace.records) == len(recorded) - 1


def test_newer_schema_is_refused_clearly(tmp_path: Path, recorded: list[dict[str, Any]]) -> None:
    """A newer schema says which versions are involved and what to do."""
    recorded[0]["schema"] = SCHEMA_VERSION + 1
    path = write_schema1(tmp_path / "t.jsonl", recorded)
    with pytest.raises(TraceVersionError) as info:
        read_trace(path)
    message = str(info.value)
    assert f"schema {SCHEMA_VERSION + 1}" in message
    assert f"reads up to {SCHEMA_VERSION}" in message
    assert "upgrade fsm_agent" in message


def test_schema_zero_is_upgraded(tmp_path: Path, recorded: list[dict[str, Any]]) -> None:
    """A schema-0 trace (``kind`` tags, ``tables`` digest) reads as the current schema."""
    old = []
    for record in recorded:
        renamed = dict(record)
        renamed["kind"] = renamed.pop("record")
        old.append(renamed)
    old[0]["schema"] = 0
    old[0]["tables"] = old[0].pop("table_digest")
    path = write_schema1(tmp_path / "old.jsonl", old)
    new = read_trace(path)
    current = read_trace(write_schema1(tmp_path / "new.jsonl", recorded))
    assert new.header == current.header
    assert [r.data for r in new.records] == [r.data for r in current.records]


def test_unknown_old_schema(tmp_path: Path, recorded: list[dict[str, Any]]) -> None:
    """A schema older than any registered upgrade is a version error."""
    recorded[0]["schema"] = -3
    with pytest.raises(TraceVersionError, match="older than any"):
        read_trace(write_schema1(tmp_path / "t.jsonl", recorded))


def test_upgrades_register_once() -> None:
    """Registering a second upgrade from the same version is refused."""
    with pytest.raises(ValueError, match="already registered"):
        register_upgrade(0)(lambda record: record)


def test_iter_records_streams(tmp_path: Path, recorded: list[dict[str, Any]]) -> None:
    """iter_records yields the good records before it reaches a bad line."""
    recorded[6]["record"] = "banana"
    path = write_schema1(tmp_path / "t.jsonl", recorded)
    seen = []
    with pytest.raises(TraceFormatError):
        for record in iter_records(path):
            seen.append(record.seq)
    assert seen == [1, 2, 3, 4, 5]


def test_errors_are_trace_errors(tmp_path: Path) -> None:
    """Every reader failure is a TraceError (one except clause catches them all)."""
    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"record": "header", "schema": "one"}\n')
    with pytest.raises(TraceError, match=r"\$.schema"):
        read_trace(path)


LAYOUTS = ("event", "step")
"""Where a feed's transitions and effects are written: on the event's line (schema 3) or on
a ``step`` line of their own (schema 2)."""


def recorded_in(tmp_path: Path, layout: str) -> Path:
    """A real recorded run, laid out as schema 3 (``event``) or schema 2 (``step``)."""
    path = record_run(tmp_path / "t.jsonl")
    return path if layout == "event" else write_schema2(tmp_path / "v2.jsonl", lines_of(path))


def carrying_line_of(path: Path, layout: str, kind: str) -> tuple[int, dict[str, Any]]:
    """The line number and dict of the first line of ``layout`` carrying a record of
    ``kind``."""
    for number, line in enumerate(path.read_bytes().splitlines(), start=1):
        data = orjson.loads(line)
        if data.get("record") == layout and data.get(f"{kind}s"):
            return number, data
    raise AssertionError(f"no {layout} line with a {kind}")


def rewrite_line(path: Path, number: int, data: dict[str, Any]) -> None:
    """Replace line ``number`` of a trace file with ``data``."""
    lines = path.read_bytes().splitlines()
    lines[number - 1] = orjson.dumps(data, option=orjson.OPT_SORT_KEYS)
    path.write_bytes(b"\n".join(lines) + b"\n")


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_line_carrying_a_feed_reads_as_its_records(tmp_path: Path, layout: str) -> None:
    """An event line carrying its feed (schema 3) reads back as the event, then the
    transitions, then the effects, and a ``step`` line (schema 2) as its transitions then
    effects; numbered on from the line's seq, each with the line's number. The records are
    those of schema 1."""
    path = recorded_in(tmp_path, layout)
    number, line = carrying_line_of(path, layout, "effect")
    trace = read_trace(path)
    held = [r for r in trace.records if r.line == number]
    kinds = ["transition"] * len(line["transitions"]) + ["effect"] * len(line["effects"])
    if layout == "event":
        kinds.insert(0, "event")
        assert held[0].event is not None
        assert "transitions" not in held[0].data
        assert "effects" not in held[0].data
    assert [r.kind for r in held] == kinds
    assert [r.seq for r in held] == list(range(line["seq"], line["seq"] + len(kinds)))
    assert all(r.event is None for r in held[1:])
    assert held[-1].data["effect"] == line["effects"][-1]
    as_schema1 = read_trace(write_schema1(tmp_path / "v1.jsonl", lines_of(path)))
    assert [r.data for r in as_schema1.records] == [r.data for r in trace.records]


def test_schema_2_and_schema_3_read_as_the_same_records(tmp_path: Path) -> None:
    """A run laid out as schema 2 reads back as exactly the records of its schema 3 file."""
    current = read_trace(recorded_in(tmp_path, "event"))
    older = read_trace(recorded_in(tmp_path, "step"))
    assert [r.data for r in older.records] == [r.data for r in current.records]
    assert older.header == current.header


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize(
    ("kind", "change", "path", "problem"),
    [
        ("transition", {"dest": 3}, "$.transitions[0].dest", "expected string, got number"),
        ("transition", {"colour": "blue"}, "$.transitions[0].colour", "unexpected field"),
        ("transition", {"seq": 4}, "$.transitions[0].seq", "unexpected field"),
        ("effect", {"effect_id": ["e1"]}, "$.effects[0].effect_id", "expected"),
        ("effect", {"type": "Explode"}, "$.effects[0].type", "unknown effect type"),
    ],
)
def test_a_bad_record_carried_on_a_line_is_named_by_its_path(
    tmp_path: Path, *, layout: str, kind: str, change: dict[str, Any], path: str, problem: str
) -> None:
    """A wrong field of a transition or effect on an event or step line names the line and
    the path inside it (``$.effects[0].effect_id``)."""
    trace = recorded_in(tmp_path, layout)
    number, line = carrying_line_of(trace, layout, kind)
    line[f"{kind}s"][0].update(change)
    rewrite_line(trace, number, line)
    with pytest.raises(TraceFormatError) as info:
        read_trace(trace)
    assert (info.value.line, info.value.path) == (number, path)
    assert problem in info.value.problem


@pytest.mark.parametrize(
    ("layout", "change", "path"),
    [
        ("step", {"transitions": [], "effects": []}, "$"),
        ("step", {"effects": {"type": "Emit"}}, "$.effects"),
        ("step", {"transitions": ["run_started"]}, "$.transitions[0]"),
        ("step", {"colour": "blue"}, "$.colour"),
        ("step", {"seq": "3"}, "$.seq"),
        ("event", {"transitions": []}, "$.transitions"),
        ("event", {"effects": []}, "$.effects"),
        ("event", {"effects": {"type": "Emit"}}, "$.effects"),
        ("event", {"transitions": "run_started"}, "$.transitions"),
        ("event", {"transitions": ["run_started"]}, "$.transitions[0]"),
        ("event", {"colour": "blue"}, "$.colour"),
        ("event", {"seq": "3"}, "$.seq"),
    ],
)
def test_a_malformed_line_carrying_a_feed_is_named(
    tmp_path: Path, layout: str, change: dict[str, Any], path: str
) -> None:
    """On a step line or an event line carrying its feed: an empty step or list, lists of
    the wrong shape, an extra field or a bad seq each get a format error naming the path."""
    trace = recorded_in(tmp_path, layout)
    number, line = carrying_line_of(trace, layout, "transition")
    rewrite_line(trace, number, {**line, **change})
    with pytest.raises(TraceFormatError) as info:
        read_trace(trace)
    assert (info.value.line, info.value.path) == (number, path)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_the_seq_after_a_line_counts_its_records(tmp_path: Path, layout: str) -> None:
    """The line after an event or step line must carry its seq plus the records it holds."""
    trace = recorded_in(tmp_path, layout)
    number, line = carrying_line_of(trace, layout, "transition")
    line["transitions"].append(dict(line["transitions"][0]))
    rewrite_line(trace, number, line)
    with pytest.raises(TraceFormatError) as info:
        read_trace(trace)
    assert (info.value.line, info.value.path) == (number + 1, "$.seq")
