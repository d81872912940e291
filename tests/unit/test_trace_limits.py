"""What a trace line can hold: values past orjson's limits are written so that the reader
reads them back, and replay is strict about the end of a finished run."""

from __future__ import annotations

import io
from pathlib import Path

import cattrs
import orjson
import pytest
from test_trace_support import CONFIG, TOOLS, lines_of, record_run, write_lines
from trace_layouts import write_schema1

from fsm_agent.cli import main
from fsm_agent.core import events as ev
from fsm_agent.core.codec import CONVERTER
from fsm_agent.core.messages import Usage
from fsm_agent.errors import TraceFormatError, TraceTruncated, UsageError
from fsm_agent.trace.json_limits import MAX_DEPTH, TOO_DEEP, fit_for_json
from fsm_agent.trace.reader import read_trace
from fsm_agent.trace.replay import diff_traces, replay
from fsm_agent.trace.writer import TraceWriter


def make_writer(target: Path | io.BytesIO) -> TraceWriter:
    return TraceWriter(target, config=CONFIG, tools=TOOLS, table_digest="d")


def nested(depth: int) -> list[object]:
    value: list[object] = []
    for _ in range(depth):
        value = [value]
    return value


def test_the_writer_writes_what_orjson_refuses_and_the_reader_reads_it(tmp_path: Path) -> None:
    """A lone surrogate, a 70-bit integer and 400-deep nesting are written; the file reads."""
    path = tmp_path / "t.jsonl"
    payload = {"text": "caf\udce9", "big": 2**70, "deep": nested(400)}
    with make_writer(path) as writer:
        writer.write_event(ev.ModelStreamEvent(request_id="r1", event=payload))
        writer.write_end("completed", Usage(output_tokens=2**70))
    trace = read_trace(path)
    event = trace.records[0].event
    assert isinstance(event, ev.ModelStreamEvent)
    assert event.event["text"] == "caf\\udce9"
    assert event.event["big"] == str(2**70)
    assert TOO_DEEP in orjson.dumps(event.event).decode()
    assert trace.records[1].data["usage"]["output_tokens"] == str(2**70)


def test_a_usage_total_past_64_bits_reads_back_as_the_integer() -> None:
    """The codec reads an integer the writer had to write as a string back as that integer."""
    usage = CONVERTER.structure({"output_tokens": str(2**70)}, Usage)
    assert usage.output_tokens == 2**70


def test_a_small_number_as_a_string_is_still_refused() -> None:
    """Only integers past 64 bits may be strings; ``"5"`` where a count belongs is an error."""
    with pytest.raises(cattrs.ClassValidationError) as info:
        CONVERTER.structure({"output_tokens": "5"}, Usage)
    assert "expected int, got str" in str(info.value.exceptions[0])


def test_fitting_is_idempotent() -> None:
    """A fitted value fits to itself, so replay's rewrite equals the recording's."""
    value = {"a\udce9": ["x\ud800", 2**65, -(2**64), nested(MAX_DEPTH + 5)], 1: True, None: 2}
    once = fit_for_json(value)
    assert fit_for_json(once) == once
    assert orjson.loads(orjson.dumps(once)) == once


def test_a_model_event_that_is_not_a_dict_is_refused_before_writing() -> None:
    """The writer refuses a stream event that is not an object, and writes nothing."""
    buffer = io.BytesIO()
    writer = make_writer(buffer)
    before = buffer.getvalue()
    with pytest.raises(UsageError, match="must be a dict"):
        writer.write_event(ev.ModelStreamEvent(request_id="r1", event=["x"]))  # type: ignore[arg-type]
    assert buffer.getvalue() == before


def test_a_finished_run_without_its_end_record_is_truncated(tmp_path: Path) -> None:
    """Deleting the end record of a finished run is reported; allow_truncated accepts it."""
    records = lines_of(record_run(tmp_path / "good.jsonl"))
    assert records[-1]["record"] == "end"
    cut = write_lines(tmp_path / "cut.jsonl", records[:-1])
    with pytest.raises(TraceTruncated, match="end record"):
        replay(cut)
    result = replay(cut, allow_truncated=True)
    assert result.truncated
    assert not result.ended
    assert result.terminal == "completed"


def test_replay_of_a_whole_trace_is_not_truncated(tmp_path: Path) -> None:
    """A complete trace replays with ``truncated`` False and its end matched."""
    result = replay(record_run(tmp_path / "good.jsonl"))
    assert result.ended
    assert not result.truncated


def test_cli_replay_fails_on_a_missing_end_unless_allowed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``fsm-agent replay`` exits 1 on a trace without its end; ``--allow-truncated`` exits 0."""
    records = lines_of(record_run(tmp_path / "good.jsonl"))
    cut = write_lines(tmp_path / "cut.jsonl", records[:-1])
    assert main(["replay", str(cut)]) == 1
    assert "end record" in capsys.readouterr().out
    assert main(["replay", "--allow-truncated", str(cut)]) == 0
    assert "truncated" in capsys.readouterr().out


def test_a_type_tag_nested_a_thousand_deep_is_a_format_error(tmp_path: Path) -> None:
    """An event whose type tag nests 1,000 levels deep is a TraceFormatError, not recursion."""
    records = lines_of(record_run(tmp_path / "good.jsonl"))
    path = write_lines(tmp_path / "deep.jsonl", records)
    lines = path.read_bytes().split(b"\n")
    depth = 1_000
    lines[1] = b'{"event":' + b'{"type":' * depth + b'"x"' + b"}" * depth
    lines[1] += b',"record":"event","seq":1}'
    path.write_bytes(b"\n".join(lines))
    for action in (read_trace, replay):
        with pytest.raises(TraceFormatError, match="line 2"):
            action(path)


def test_diff_of_traces_nested_a_thousand_deep_is_a_format_error(tmp_path: Path) -> None:
    """Comparing two records nested 1,000 deep raises TraceFormatError, not RecursionError."""
    records = lines_of(record_run(tmp_path / "good.jsonl"))
    depth = 1_000
    paths = []
    for name, leaf in (("a", b"1"), ("b", b"2")):
        # A line per record (schema 1): line 2 holds seq 1 alone.
        path = write_schema1(tmp_path / f"{name}.jsonl", records)
        lines = path.read_bytes().split(b"\n")
        payload = b'{"a":' * depth + leaf + b"}" * depth
        lines[1] = b'{"event":{"event":' + payload + b',"request_id":"r",'
        lines[1] += b'"type":"ModelStreamEvent"},"record":"event","seq":1}'
        path.write_bytes(b"\n".join(lines))
        paths.append(path)
    with pytest.raises(TraceFormatError, match="line 2"):
        diff_traces(*paths)
