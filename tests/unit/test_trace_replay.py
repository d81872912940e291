"""Replay, fork, resume and diff of recorded traces (real core, and a fake one)."""

from __future__ import annotations

import io
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import orjson
import pytest
from test_trace_support import (
    FAKE_DIGEST,
    FakeCore,
    lines_of,
    record_fake,
    record_run,
    write_lines,
)
from trace_layouts import write_schema1, write_schema2

from fsm_agent.core import effects as fx
from fsm_agent.errors import (
    TableDigestMismatch,
    TraceDivergence,
    TraceFormatError,
    TraceTruncated,
    UsageError,
)
from fsm_agent.trace import replay as replay_module
from fsm_agent.trace.reader import read_trace
from fsm_agent.trace.records import as_lines
from fsm_agent.trace.redact import mask
from fsm_agent.trace.replay import diff_traces, fork, replay, resume
from fsm_agent.trace.writer import TracingCore

SCENARIOS = (
    "tool_then_reply",
    "text_reply",
    "overloaded_then_reply",
    "max_tokens_then_reply",
    "prompt_too_long_then_reply",
    "dropped_connection_then_reply",
)


@pytest.fixture
def good(tmp_path: Path) -> Path:
    """A recorded run of the real core: one tool call, then an answer."""
    return record_run(tmp_path / "good.jsonl")


def index_of(records: list[dict[str, Any]], predicate: Any) -> int:
    """Index of the first record matching a predicate."""
    return next(i for i, r in enumerate(records) if predicate(r))


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_recorded_runs_replay(tmp_path: Path, scenario: str) -> None:
    """Every shipped scenario recorded with the real core replays without divergence."""
    path = record_run(tmp_path / "t.jsonl", scenario)
    result = replay(path)
    records = lines_of(path)
    assert result.terminal == records[-1]["terminal"]
    assert result.records == len(records) - 1
    assert result.events == sum(r["record"] == "event" for r in records)
    assert result.transitions == sum(r["record"] == "transition" for r in records)
    assert result.ended


def test_replay_accepts_a_trace_object(good: Path) -> None:
    """Replay works on a Trace already read, as on a path."""
    assert replay(read_trace(good)) == replay(good)


def test_a_changed_transition_diverges(tmp_path: Path, good: Path) -> None:
    """A mutated transition raises TraceDivergence with seq, recorded, replayed and context."""
    records = lines_of(good)
    index = index_of(records, lambda r: r["record"] == "transition" and r["name"] == "next_turn")
    records[index]["dest"] = "somewhere_else"
    path = write_lines(tmp_path / "bad.jsonl", records)
    with pytest.raises(TraceDivergence) as info:
        replay(path, context=2)
    error = info.value
    assert error.seq == index
    assert error.expected == records[index]
    assert error.actual is not None
    assert error.actual["dest"] == "iter_init"
    assert [r["seq"] for r in error.context] == [index - 2, index - 1, index, index + 1, index + 2]
    assert f"replay diverged at seq {index}" in str(error)


def test_a_changed_effect_diverges(tmp_path: Path, good: Path) -> None:
    """A mutated effect field diverges at that effect."""
    records = lines_of(good)
    index = index_of(
        records, lambda r: r["record"] == "effect" and r["effect"]["type"] == "CallModel"
    )
    records[index]["effect"]["max_output_tokens"] = 1
    with pytest.raises(TraceDivergence) as info:
        replay(write_lines(tmp_path / "bad.jsonl", records))
    assert info.value.seq == index


def test_a_missing_record_diverges(tmp_path: Path, good: Path) -> None:
    """A transition deleted from the trace shows up as a divergence, not a crash."""
    records = lines_of(good)
    index = index_of(records, lambda r: r["record"] == "transition")
    del records[index]
    for seq, record in enumerate(records[1:], start=1):
        record["seq"] = seq
    with pytest.raises(TraceDivergence) as info:
        replay(write_lines(tmp_path / "bad.jsonl", records))
    assert info.value.seq == index


def test_an_extra_record_diverges(tmp_path: Path, good: Path) -> None:
    """A transition the core does not take, inserted before the end, diverges."""
    records = lines_of(good)
    extra = {**records[2], "seq": len(records) - 1}
    records.insert(len(records) - 1, extra)
    records[-1]["seq"] = len(records) - 1
    with pytest.raises(TraceDivergence) as info:
        replay(write_lines(tmp_path / "bad.jsonl", records))
    assert info.value.seq == len(records) - 2
    assert info.value.actual is None  # the core's step was over: it had nothing to add


def test_a_trace_that_stops_early_diverges(tmp_path: Path, good: Path) -> None:
    """A trace cut at a line boundary mid-step diverges: the core still had records to give."""
    records = lines_of(good)
    index = index_of(records, lambda r: r["record"] == "transition")
    with pytest.raises(TraceDivergence) as info:
        replay(write_lines(tmp_path / "cut.jsonl", records[:index]))
    assert info.value.expected is None
    assert info.value.actual is not None


def test_a_different_end_record_diverges(tmp_path: Path, good: Path) -> None:
    """The end record's usage totals are checked too."""
    records = lines_of(good)
    records[-1]["usage"]["output_tokens"] += 1
    with pytest.raises(TraceDivergence) as info:
        replay(write_lines(tmp_path / "bad.jsonl", records))
    assert info.value.seq == len(records) - 1


def test_core_error_on_a_recorded_event_is_a_divergence(tmp_path: Path, good: Path) -> None:
    """An event the core refuses (after the end, here) diverges with an error record."""
    records = lines_of(good)
    records.append(
        {"record": "event", "seq": len(records), "event": {"type": "AbortRequested", "reason": "u"}}
    )
    with pytest.raises(TraceDivergence) as info:
        replay(write_lines(tmp_path / "bad.jsonl", records))
    assert info.value.actual is not None
    assert info.value.actual["record"] == "error"
    assert info.value.__cause__ is not None


def test_truncated_trace_does_not_replay(tmp_path: Path, good: Path) -> None:
    """Replay refuses a cut-off trace with TraceTruncated (resume is for those)."""
    content = good.read_bytes()
    path = tmp_path / "cut.jsonl"
    path.write_bytes(content[:-10])
    with pytest.raises(TraceTruncated):
        replay(path)


def test_table_digest_mismatch_names_the_rerecord_command(tmp_path: Path, good: Path) -> None:
    """A trace recorded against other tables is refused before anything is fed, naming the
    version that recorded it and what still reads it (a user's trace from another version
    was told only to run this project's re-recording script)."""
    records = lines_of(good)
    records[0]["table_digest"] = "0000000000000000"
    records[0]["library_version"] = "0.0.9"
    with pytest.raises(TableDigestMismatch) as refused:
        replay(write_lines(tmp_path / "old.jsonl", records))
    message = str(refused.value)
    assert "recorded by fsm_agent 0.0.9 against machine tables 0000000000000000" in message
    assert "cannot replay, fork or resume the run" in message
    assert "`fsm-agent show` reads it" in message
    assert "python tools/record_traces.py" in message


def test_redacted_secret_still_replays(tmp_path: Path) -> None:
    """A trace whose prompt was redacted replays: the replayed core sees the redacted text."""
    secret = "sk-ant-api03-0123456789abcdef"
    path = record_run(tmp_path / "t.jsonl", text=f"use {secret}", secrets=(secret,))
    assert replay(path).terminal == "completed"


def test_a_tool_input_holding_a_credential_records_and_replays_clean(tmp_path: Path) -> None:
    """A password in a tool call's input, streamed in pieces, is in no line of the trace
    (the deltas and the effects alike), and the trace replays: the replayed core assembles
    the redacted input from the recorded deltas, as the writer redacted the effects."""
    secret = "hunter2-secret"
    call = {"tool_use": {"name": "Read", "input": {"password": secret, "path": "a"}}}
    scenario = {"steps": [{"content": [call], "chunk": 3}, {"content": [{"text": "done"}]}]}
    path = record_run(tmp_path / "t.jsonl", scenario)
    text = path.read_text()
    assert secret not in text
    deltas = "".join(  # the input as the deltas spell it
        line["event"]["event"]["delta"]["partial_json"]
        for line in map(orjson.loads, text.splitlines()[1:])
        if line.get("record") == "event"
        and line["event"].get("type") == "ModelStreamEvent"
        and line["event"]["event"].get("delta", {}).get("type") == "input_json_delta"
    )
    assert orjson.loads(deltas) == {"password": mask(len(secret)), "path": "a"}
    assert text.count("input_json_delta") > 5
    assert replay(path).terminal == "completed"


def _tool_call_body(pieces: list[str]) -> str:
    """A recorded SSE body: one Read call whose input streams in ``pieces``, as given."""
    events: list[dict[str, Any]] = [
        {
            "type": "message_start",
            "message": {"id": "msg_1", "model": "m", "usage": {"input_tokens": 1}},
        },
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {}},
        },
        *(
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": piece},
            }
            for piece in pieces
        ),
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {}},
        {"type": "message_stop"},
    ]
    return "".join(f"event: {e['type']}\ndata: {orjson.dumps(e).decode()}\n\n" for e in events)


@pytest.mark.parametrize(
    "pieces",
    [
        ['{"path": "a",', " oops}"],
        ['{"path": "a", "password": "hunter2-secret"', "}"],
        ['{"path": "a" "b", "password": "hunter2-secret"}'],
    ],
    ids=["broken, naming nothing", "valid", "broken before a credential"],
)
def test_a_tool_input_the_core_answers_with_an_error_replays(
    tmp_path: Path, pieces: list[str]
) -> None:
    """Tool input the core cannot run (not JSON) replays when the text broke before any
    value was redacted: what names nothing is written as it came, and what is dropped from
    the break on changes neither where the core's error points nor what it says."""
    steps = [{"sse": _tool_call_body(pieces)}, {"content": [{"text": "done"}]}]
    path = record_run(tmp_path / "t.jsonl", {"steps": steps})
    text = path.read_text()
    assert "hunter2-secret" not in text
    assert ("not valid JSON" in text) == ("oops" in pieces[-1] or '"b"' in pieces[0])
    assert replay(path).terminal == "completed"


def test_fake_core_replays(tmp_path: Path) -> None:
    """Replay takes a core factory and a digest, so any core honouring the contract replays."""
    path = record_fake(tmp_path / "fake.jsonl")
    result = replay(path, core_factory=FakeCore, table_digest=FAKE_DIGEST)
    assert result.terminal == "completed"
    with pytest.raises(TableDigestMismatch):
        replay(path, core_factory=FakeCore)


# --- diff ------------------------------------------------------------------------------------


def test_diff_of_identical_runs_is_none(tmp_path: Path) -> None:
    """Two recordings of the same run do not differ; header meta is ignored."""
    first = record_run(tmp_path / "a.jsonl")
    second = lines_of(record_run(tmp_path / "b.jsonl"))
    second[0]["meta"] = {"started_at": "another day"}
    assert diff_traces(first, write_lines(tmp_path / "b.jsonl", second)) is None


def test_diff_finds_the_first_difference(tmp_path: Path) -> None:
    """Different scenarios differ at the first record that is not the same."""
    first = record_run(tmp_path / "a.jsonl", "tool_then_reply")
    second = record_run(tmp_path / "b.jsonl", "text_reply")
    found = diff_traces(first, second)
    assert found is not None
    a, b = lines_of(first), lines_of(second)
    assert a[found.seq] != b[found.seq]
    assert a[1 : found.seq] == b[1 : found.seq]
    assert isinstance(found.to_error(), TraceDivergence)


def test_diff_names_the_line_of_the_first_difference(tmp_path: Path, good: Path) -> None:
    """A difference inside a step line is reported with that line's number, in the error too."""
    records = lines_of(good)
    index = index_of(records, lambda r: r["record"] == "effect")
    records[index]["effect"]["effect_id"] = "e999"
    changed = write_lines(tmp_path / "changed.jsonl", records)
    found = diff_traces(changed, good)
    assert found is not None
    number = next(r.line for r in read_trace(changed).records if r.seq == index)
    assert (found.seq, found.line, found.to_error().line) == (index, number, number)


def test_diff_of_headers_is_seq_zero(tmp_path: Path) -> None:
    """A config difference is reported at seq 0."""
    first = record_run(tmp_path / "a.jsonl")
    records = lines_of(first)
    records[0]["config"]["max_turns"] = 3
    found = diff_traces(first, write_lines(tmp_path / "b.jsonl", records))
    assert found is not None
    assert found.seq == 0


def test_diff_of_a_shorter_trace(tmp_path: Path, good: Path) -> None:
    """When one trace is a prefix of the other, the difference is where the shorter one ends."""
    records = lines_of(good)
    found = diff_traces(good, write_lines(tmp_path / "short.jsonl", records[:-1]))
    assert found is not None
    assert found.seq == len(records) - 1
    assert found.actual is None


# --- fork ----------------------------------------------------------------------------------


def test_fork_then_continue_reproduces_the_trace(tmp_path: Path, good: Path) -> None:
    """Fork at every event, feed the recorded rest through a traced core: same trace again."""
    original = read_trace(good)
    events = [r for r in original.records if r.kind == "event"]
    for at in events[:: max(len(events) // 6, 1)]:
        point = fork(good, at.seq)
        out = tmp_path / f"fork{at.seq}.jsonl"
        with point.writer_for(out) as writer:
            traced = TracingCore(point.core, writer)
            for record in events:
                if record.seq > at.seq:
                    assert record.event is not None
                    traced.feed(record.event)
        assert diff_traces(good, out) is None, at.seq
        assert replay(out).terminal == "completed"


def test_fork_keeps_a_whole_step(good: Path) -> None:
    """Forking at a transition keeps the rest of that event's step in the prefix."""
    records = lines_of(good)
    index = index_of(records, lambda r: r["record"] == "transition")
    point = fork(good, index)
    assert point.records[-1]["record"] != "event"
    assert len(point.records) >= index
    following = records[len(point.records) + 1]
    assert following["record"] == "event"


def test_fork_lists_outstanding_effects(good: Path) -> None:
    """Right after the tool call starts, the fork lists it as outstanding."""
    records = lines_of(good)
    index = index_of(
        records,
        lambda r: (
            r["record"] == "effect"
            and r["effect"]["type"] == "RunToolStep"
            and r["effect"]["step"] == "call"
        ),
    )
    point = fork(good, index)
    calls = [
        item
        for item in point.outstanding_effects
        if isinstance(item.effect, fx.RunToolStep) and item.effect.step is fx.ToolStep.CALL
    ]
    assert len(calls) == 1
    assert calls[0].seq == index
    assert point.core.phase == "tool_exec"


def test_fork_past_the_end_is_refused(good: Path) -> None:
    """A fork seq beyond the trace (or below 1) is a usage error."""
    with pytest.raises(UsageError, match="only"):
        fork(good, 10_000)
    with pytest.raises(UsageError):
        fork(good, 0)


def test_fork_tracing_core_to_a_file_object(good: Path) -> None:
    """tracing_core writes the prefix into any binary file and continues from there."""
    buffer = io.BytesIO()
    point = fork(good, 1)
    traced = point.tracing_core(buffer)
    assert traced.core is point.core
    written = read_trace(io.BytesIO(buffer.getvalue()))
    assert [r.data for r in written.records] == list(point.records)


# --- resume ----------------------------------------------------------------------------------


def test_resume_flags_a_tool_call_that_may_have_run(tmp_path: Path, good: Path) -> None:
    """A crash after a tool call started lists it as in flight and unsafe to re-run."""
    records = lines_of(good)
    index = index_of(
        records,
        lambda r: (
            r["record"] == "effect"
            and r["effect"]["type"] == "RunToolStep"
            and r["effect"]["step"] == "call"
        ),
    )
    path = write_lines(tmp_path / "crash.jsonl", records[: index + 1])
    partial = orjson.dumps(records[index + 1], option=orjson.OPT_SORT_KEYS)[:15]
    path.write_bytes(path.read_bytes() + partial)
    point = resume(path)
    assert point.truncated
    assert point.unwritten == 0
    assert point.core.phase == "tool_exec"
    assert [item.effect.call_id for item in point.unsafe_to_rerun] == ["toolu_001"]  # type: ignore[union-attr]
    assert all(item.seq is not None for item in point.in_flight)


def test_resume_after_a_crash_between_event_and_step(tmp_path: Path, good: Path) -> None:
    """In a schema 2 trace, an event whose step line never reached the file is fed; its
    effects are new and safe."""
    records = lines_of(good)
    index = index_of(
        records,
        lambda r: r["record"] == "event" and r["event"]["type"] == "TurnStarted",
    )
    path = write_schema2(tmp_path / "crash.jsonl", records[: index + 1])
    point = resume(path)
    assert not point.truncated
    assert point.unwritten > 0
    assert point.records[index:] == tuple(records[index + 1 :][: point.unwritten])
    assert point.in_flight
    assert all(item.seq is None and not item.maybe_side_effects for item in point.in_flight)
    assert point.unsafe_to_rerun == ()
    out = tmp_path / "resumed.jsonl"
    with point.writer_for(out):
        pass
    assert lines_of(out)[1:] == records[1 : index + 1 + point.unwritten]


def test_resume_of_a_finished_run(good: Path) -> None:
    """Resuming a complete trace gives the terminal core and nothing unsafe."""
    point = resume(good)
    assert point.core.terminal == "completed"
    assert point.unsafe_to_rerun == ()


def test_resume_still_checks_consistency(tmp_path: Path, good: Path) -> None:
    """A crashed trace that disagrees with the core is refused, not silently resumed."""
    records = lines_of(good)[:20]
    records[index_of(records, lambda r: r["record"] == "transition")]["name"] = "teleported"
    with pytest.raises(TraceDivergence):
        resume(write_lines(tmp_path / "bad.jsonl", records))


# --- schema 1 and step lines ------------------------------------------------------------------


def test_a_crash_before_an_event_line_is_written_loses_only_that_event(
    tmp_path: Path, good: Path
) -> None:
    """In a schema 3 trace, an event line cut off mid-way is dropped whole: the core is
    rebuilt as before that event, nothing of it counts as performed, and the tool call it
    answered stays unsafe to re-run."""
    records = lines_of(good)
    finished = index_of(
        records,
        lambda r: r["record"] == "event" and r["event"]["type"] == "ToolCallFinished",
    )
    path = write_lines(tmp_path / "crash.jsonl", records[:finished])
    line = orjson.dumps(next(as_lines(records[finished:])), option=orjson.OPT_SORT_KEYS)
    path.write_bytes(path.read_bytes() + line[: len(line) // 2])
    point = resume(path)
    assert point.truncated
    assert point.unwritten == 0
    assert point.records == tuple(records[1:finished])
    assert [item.effect.call_id for item in point.unsafe_to_rerun] == ["toolu_001"]  # type: ignore[union-attr]


def test_a_schema_1_trace_replays(tmp_path: Path, good: Path) -> None:
    """A trace written one record per line (schema 1) replays, and checks as much."""
    old = write_schema1(tmp_path / "old.jsonl", lines_of(good))
    assert replay(old) == attrs.evolve(replay(good), source=str(old))
    records = lines_of(good)
    index = index_of(records, lambda r: r["record"] == "effect")
    records[index]["effect"]["effect_id"] = "e999"
    with pytest.raises(TraceDivergence) as info:
        replay(write_schema1(tmp_path / "bad.jsonl", records))
    assert (info.value.seq, info.value.line) == (index, index + 1)
    assert info.value.expected == records[index]


@pytest.mark.parametrize("write", [write_lines, write_schema2], ids=["schema3", "schema2"])
def test_an_effect_missing_from_a_line_is_named(
    tmp_path: Path, good: Path, write: Callable[[Path, list[dict[str, Any]]], Path]
) -> None:
    """An event line (or a step line) that lacks its last effect diverges at that effect:
    the replayed record is the effect, the recorded one the first record of the next line,
    and its line."""
    records = lines_of(good)
    index = index_of(
        records,
        lambda r: r["record"] == "effect" and records[r["seq"] + 1].get("record") == "event",
    )
    missing = records.pop(index)
    for seq, record in enumerate(records[1:], start=1):
        record["seq"] = seq
    path = write(tmp_path / "bad.jsonl", records)
    with pytest.raises(TraceDivergence) as info:
        replay(path, context=1)
    error = info.value
    assert error.seq == index
    assert error.actual is not None
    assert error.actual["effect"] == missing["effect"]
    assert error.expected == records[index]  # the event that now follows
    number = next(r.line for r in read_trace(path).records if r.seq == index)
    assert error.line == number


@pytest.mark.parametrize("write", [write_lines, write_schema2], ids=["schema3", "schema2"])
def test_a_line_is_checked_record_by_record(
    tmp_path: Path, good: Path, write: Callable[[Path, list[dict[str, Any]]], Path]
) -> None:
    """The second transition of an event line (or a step line), changed, diverges at its
    own seq with the line's first transition before it in the context."""
    records = lines_of(good)
    index = index_of(
        records,
        lambda r: r["record"] == "transition" and records[r["seq"] - 1]["record"] == "transition",
    )
    records[index]["name"] = "elsewhere"
    with pytest.raises(TraceDivergence) as info:
        replay(write(tmp_path / "bad.jsonl", records), context=1)
    assert info.value.seq == index
    assert [r["seq"] for r in info.value.context] == [index - 1, index, index + 1]


def test_a_schema_2_trace_replays_forks_and_resumes(tmp_path: Path, good: Path) -> None:
    """A trace laid out as schema 2 (events alone, step lines) replays to the same result,
    forks to the same prefix and resumes to the same point as its schema 3 file."""
    old = write_schema2(tmp_path / "old.jsonl", lines_of(good))
    assert replay(old) == attrs.evolve(replay(good), source=str(old))
    seq = index_of(lines_of(good), lambda r: r["record"] == "effect")
    assert fork(old, seq).records == fork(good, seq).records
    assert resume(old).records == resume(good).records


def test_a_line_carrying_a_record_the_core_did_not_make_diverges(
    tmp_path: Path, good: Path
) -> None:
    """An event line carrying a transition the core does not take after that event diverges
    at the transition's seq, with nothing produced there."""
    records = lines_of(good)
    index = index_of(
        records,
        lambda r: (
            r["record"] == "event"
            and r["event"]["type"] == "ModelStreamEvent"
            and records[r["seq"] + 1]["record"] == "event"
        ),
    )
    extra = {"record": "transition", "machine": "loop", "name": "teleported", "source": "a"}
    records.insert(index + 1, {**extra, "dest": "b", "call_id": None, "seq": index + 1})
    for seq, record in enumerate(records[1:], start=1):
        record["seq"] = seq
    with pytest.raises(TraceDivergence) as info:
        replay(write_lines(tmp_path / "bad.jsonl", records))
    assert info.value.seq == index + 1
    assert info.value.actual is None
    assert info.value.expected == records[index + 1]


def test_a_bad_record_carried_on_an_event_line_is_a_format_error(
    tmp_path: Path, good: Path
) -> None:
    """Replay names the line and the path of a malformed effect an event line carries (it
    is checked in full once it does not match what the core made)."""
    lines = good.read_bytes().splitlines()
    number = next(n for n, raw in enumerate(lines, 1) if raw.startswith(b'{"effects":'))
    data = orjson.loads(lines[number - 1])
    data["effects"][0]["type"] = "Explode"
    lines[number - 1] = orjson.dumps(data, option=orjson.OPT_SORT_KEYS)
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b"\n".join(lines) + b"\n")
    with pytest.raises(TraceFormatError) as info:
        replay(bad)
    assert (info.value.line, info.value.path) == (number, "$.effects[0].type")


def test_a_number_changed_to_an_equal_boolean_diverges(tmp_path: Path) -> None:
    """A value Python deems equal but JSON does not (``1`` recorded as ``true``) diverges."""
    scenario = {
        "steps": [
            {"content": [{"tool_use": {"name": "Read", "input": {"file_path": "a", "limit": 1}}}]},
            {"content": [{"text": "done"}]},
        ]
    }
    records = lines_of(record_run(tmp_path / "t.jsonl", scenario))
    index = index_of(records, lambda r: r["record"] == "effect" and b'"limit":1' in orjson.dumps(r))
    records[index] = orjson.loads(
        orjson.dumps(records[index]).replace(b'"limit":1', b'"limit":true')
    )
    with pytest.raises(TraceDivergence) as info:
        replay(write_lines(tmp_path / "bad.jsonl", records))
    assert info.value.seq == index


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_a_file_read_line_by_line_replays_as_one_read_whole(
    tmp_path: Path, scenario: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file past the size read in one go is streamed: the same result, the same divergence
    report, the same acceptance of a cut-off last line."""
    path = record_run(tmp_path / "t.jsonl", scenario)
    records = lines_of(path)
    index = index_of(records, lambda r: r["record"] == "transition")
    records[index]["name"] = "renamed"
    bad = write_lines(tmp_path / "bad.jsonl", records)
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(path.read_bytes()[:-5])

    def outcomes() -> tuple[object, ...]:
        with pytest.raises(TraceDivergence) as info:
            replay(bad)
        with pytest.raises(TraceTruncated) as truncated:
            replay(cut)
        error = info.value
        return (
            replay(path),
            (error.seq, error.expected, error.actual, error.context, error.line),
            str(truncated.value),
            replay(cut, allow_truncated=True),
        )

    whole = outcomes()
    monkeypatch.setattr(replay_module, "WHOLE_FILE_LIMIT", 0)
    assert outcomes() == whole


def test_a_trace_read_from_a_named_pipe_replays(tmp_path: Path, good: Path) -> None:
    """A trace coming through a named pipe (no size known beforehand) replays as its file."""
    fifo = tmp_path / "trace.fifo"
    os.mkfifo(fifo)

    def write() -> None:
        with fifo.open("wb") as out:
            out.write(good.read_bytes())

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    try:
        result = replay(fifo)
    finally:
        writer.join(timeout=10)
    assert result == attrs.evolve(replay(good), source=str(fifo))


def _rewritten(path: Path, target: Path, change: Callable[[int, dict[str, Any]], None]) -> Path:
    """The trace at ``path`` with ``change(line number, parsed line)`` applied to each line
    after the header, written back with sorted keys."""
    lines = path.read_bytes().splitlines()
    out = [lines[0]]
    for number, raw in enumerate(lines[1:], start=2):
        data = orjson.loads(raw)
        change(number, data)
        out.append(orjson.dumps(data, option=orjson.OPT_SORT_KEYS))
    target.write_bytes(b"\n".join(out) + b"\n")
    return target


def test_every_line_of_the_golden_corpus_takes_the_hot_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No line of a trace as the writer writes it needs the careful path (issue 10: replay's
    speed rests on it)."""
    calls: list[int] = []
    careful = replay_module._Replayer.careful

    def counted(self: Any, line: Any, *args: Any, **kwargs: Any) -> str:
        calls.append(line.number)
        return careful(self, line, *args, **kwargs)

    monkeypatch.setattr(replay_module._Replayer, "careful", counted)
    corpus = sorted((Path(__file__).resolve().parents[2] / "traces").glob("*.jsonl"))
    assert corpus
    for path in corpus:
        replay(path)
    assert calls == []


def test_an_event_line_with_its_elapsed_time_replays(tmp_path: Path, good: Path) -> None:
    """Event lines timed by the writer (``elapsed_ms``) replay as untimed ones."""

    def timed(_number: int, data: dict[str, Any]) -> None:
        if data["record"] == "event":
            data["elapsed_ms"] = 1.5

    assert replay(_rewritten(good, tmp_path / "timed.jsonl", timed)) == attrs.evolve(
        replay(good), source=os.fspath(tmp_path / "timed.jsonl")
    )


@pytest.mark.parametrize(
    ("key", "value", "problem"),
    [
        ("elapsed_ms", -1, "expected a number of milliseconds >= 0"),
        ("elapsed_ms", "1", "expected a number of milliseconds >= 0"),
        ("flag", 1, "unexpected field in a event record"),  # between the carried lists
        ("effects", [], "an empty array (the writer leaves out a list with nothing in it)"),
    ],
)
def test_a_bad_key_on_an_event_line_is_named(
    tmp_path: Path, good: Path, key: str, value: object, problem: str
) -> None:
    """An event line whose event replay has fed is still checked for its other keys: a bad
    one is a format error naming the line and the key."""
    target = 3

    def damage(number: int, data: dict[str, Any]) -> None:
        if number == target:
            data[key] = value

    with pytest.raises(TraceFormatError) as info:
        replay(_rewritten(good, tmp_path / "bad.jsonl", damage))
    assert (info.value.line, info.value.path, info.value.problem) == (
        target,
        f"$.{key}",
        problem,
    )


def test_an_end_line_equal_as_json_but_not_as_bytes_replays(tmp_path: Path, good: Path) -> None:
    """The end record is accepted by its bytes when it is what the writer writes, and
    checked as JSON otherwise: other spacing still replays; another count diverges."""
    lines = good.read_bytes().splitlines()
    end = orjson.loads(lines[-1])
    spaced = tmp_path / "spaced.jsonl"
    spaced.write_bytes(
        b"\n".join([*lines[:-1], orjson.dumps(end, option=orjson.OPT_INDENT_2).replace(b"\n", b"")])
        + b"\n"
    )
    assert replay(spaced).ended
    end["usage"]["output_tokens"] += 1
    changed = tmp_path / "changed.jsonl"
    changed.write_bytes(b"\n".join([*lines[:-1], orjson.dumps(end)]) + b"\n")
    with pytest.raises(TraceDivergence) as info:
        replay(changed)
    assert (info.value.seq, info.value.line) == (end["seq"], len(lines))
