"""The trace writer: line format, flushing, redaction, refusal of non-JSON values."""

from __future__ import annotations

import io
from pathlib import Path

import orjson
import pytest
import structlog
from hypothesis import given
from hypothesis import strategies as st
from test_trace_support import CONFIG, TOOLS, FakeCore, fake_events, lines_of, record_run

from fsm_agent.core import effects as fx
from fsm_agent.core import events as ev
from fsm_agent.core.messages import Usage
from fsm_agent.core.step import Step, TransitionTaken
from fsm_agent.errors import IllegalTransition, UsageError
from fsm_agent.testing.world import prompt
from fsm_agent.trace.reader import read_trace
from fsm_agent.trace.records import SCHEMA_VERSION
from fsm_agent.trace.redact import REDACTED, Redactor, is_sensitive_key, mask
from fsm_agent.trace.writer import TraceWriter, TracingCore

API_KEY = "sk-ant-api03-abcdefghijklmnop"


def make_writer(target: Path | io.BytesIO, **kwargs: object) -> TraceWriter:
    return TraceWriter(target, config=CONFIG, tools=TOOLS, table_digest="d", **kwargs)  # type: ignore[arg-type]


def test_lines_are_sorted_json_one_record_each(tmp_path: Path) -> None:
    """Every line is one JSON object serialized with sorted keys, tagged with its record kind."""
    path = record_run(tmp_path / "t.jsonl")
    raw_lines = path.read_bytes().split(b"\n")
    assert raw_lines[-1] == b""  # the file ends with a newline
    for raw in raw_lines[:-1]:
        data = orjson.loads(raw)
        assert orjson.dumps(data, option=orjson.OPT_SORT_KEYS) == raw
        assert data["record"] in {"header", "event", "end"}


def test_seq_counts_every_record_after_the_header(tmp_path: Path) -> None:
    """The header has no seq; the records after it are numbered 1, 2, 3... without gaps."""
    records = lines_of(record_run(tmp_path / "t.jsonl"))
    assert "seq" not in records[0]
    assert [r["seq"] for r in records[1:]] == list(range(1, len(records)))


def test_header_holds_config_tools_and_digest(tmp_path: Path) -> None:
    """The header records the schema, the config, the tool specs, the digest and meta."""
    with make_writer(tmp_path / "t.jsonl", meta={"started_at": "2026-11-30"}):
        pass
    header = lines_of(tmp_path / "t.jsonl")[0]
    assert header["schema"] == SCHEMA_VERSION == 3
    assert header["table_digest"] == "d"
    assert header["config"]["max_output_tokens"] == CONFIG.max_output_tokens
    assert header["tools"][0]["name"] == "Read"
    assert header["meta"] == {"started_at": "2026-11-30"}


def test_each_record_is_flushed_at_once() -> None:
    """A record is in the file as soon as its write call returns (write-ahead)."""
    buffer = io.BytesIO()
    writer = make_writer(buffer)
    writer.write_event(ev.AbortRequested(reason="user"))
    lines = buffer.getvalue().splitlines()
    assert orjson.loads(lines[-1]) == {
        "record": "event",
        "seq": 1,
        "event": {"type": "AbortRequested", "reason": "user"},
    }


def test_an_event_and_its_step_are_one_line() -> None:
    """An event with its step is one line holding the event, its transitions and its
    effects; it takes a seq for each, and reads back as the event, the transitions and the
    effects, with consecutive seqs."""
    buffer = io.BytesIO()
    writer = make_writer(buffer)
    step = Step(
        transitions=(TransitionTaken(machine="loop", name="a", source="x", dest="y"),),
        effects=(fx.DrainCollapse(effect_id="e1"),),
    )
    writer.write_event(ev.AbortRequested(reason="user"), step)
    writer.write_event(ev.AbortRequested(reason="again"), Step())
    writer.write_end("completed", Usage(input_tokens=3))
    lines = [orjson.loads(line) for line in buffer.getvalue().splitlines()[1:]]
    assert [(r["record"], r["seq"]) for r in lines] == [("event", 1), ("event", 4), ("end", 5)]
    assert "transitions" not in lines[1]
    assert "effects" not in lines[1]
    records = [r.data for r in read_trace(io.BytesIO(buffer.getvalue())).records]
    assert [(r["record"], r["seq"]) for r in records] == [
        ("event", 1),
        ("transition", 2),
        ("effect", 3),
        ("event", 4),
        ("end", 5),
    ]
    assert records[0] == {
        "record": "event",
        "seq": 1,
        "event": {"type": "AbortRequested", "reason": "user"},
    }
    assert records[4]["usage"]["input_tokens"] == 3


def test_an_event_the_core_refuses_is_written_alone_and_the_error_propagates() -> None:
    """When ``feed`` raises, the traced core writes the event alone (the fault's cause is on
    file), writes no step, and the core's error reaches the caller."""

    class Refusing:
        phase, terminal, transcript, usage = "idle", None, (), Usage()

        def feed(self, event: ev.Event) -> Step:
            raise IllegalTransition(phase="idle", event=type(event).__name__, legal=())

    buffer = io.BytesIO()
    traced = TracingCore(Refusing(), make_writer(buffer))
    with pytest.raises(IllegalTransition):
        traced.feed(ev.AbortRequested(reason="user"))
    records = [r.data for r in read_trace(io.BytesIO(buffer.getvalue())).records]
    assert records == [
        {"record": "event", "seq": 1, "event": {"type": "AbortRequested", "reason": "user"}}
    ]
    assert traced.writer.next_seq == 2


def test_an_api_key_never_reaches_the_file(tmp_path: Path) -> None:
    """A configured secret is redacted wherever it appears, and so is anything key-shaped: by
    masks as long as they were."""
    path = record_run(tmp_path / "t.jsonl", text=f"my key is {API_KEY}, really", secrets=(API_KEY,))
    content = path.read_text()
    assert API_KEY not in content
    assert f"my key is {mask(len(API_KEY))}, really" in content
    assert mask(len(API_KEY)) == "[REDACTED]" + "*" * (len(API_KEY) - 10)
    other = "sk-ant-zzzzzzzzzzzzzzzzzzzzz"
    path = record_run(tmp_path / "u.jsonl", text=f"leaked {other}")
    assert other not in path.read_text()


def test_sensitive_keys_are_redacted_but_token_counters_are_not() -> None:
    """Credential-named keys lose their value; usage counters stay."""
    record = {
        "headers": {"Authorization": "Bearer abc", "x-api-key": "k-123", "accept": "json"},
        "api_key": "k-456",
        "password": "hunter2",
        "token": "t-789",
        "usage": {"input_tokens": 12, "output_tokens": 3, "max_output_tokens": 9},
    }
    out = Redactor().value(record)
    assert out["headers"] == {"Authorization": REDACTED, "x-api-key": REDACTED, "accept": "json"}
    assert out["api_key"] == out["password"] == out["token"] == REDACTED
    assert out["usage"] == record["usage"]
    assert record["api_key"] == "k-456"  # the input is not changed in place


def test_a_value_under_a_sensitive_key_is_redacted_whatever_its_type() -> None:
    """A number, and every string and number inside an array or object under a sensitive key,
    at any depth, become ``[REDACTED]`` (a string as long as it was, padded with ``*``, when
    it has more than 10 characters); the container keeps its shape, and true, false, null
    and the empty string stay. A schema naming a ``password`` property is no exception: the
    rule does not tell a schema from a value."""
    record = {
        "pin": 123456,
        "card_pin": 0,
        "password": 12.5,
        "api_keys": ["sk-one-0123", "sk-two-0123", 7],
        "credentials": {"user": "bob", "nested": {"pass": "hunter2", "ok": True, "n": None}},
        "secret": "",
        "has_token": False,
        "private_key": ["-----BEGIN KEY-----"],
        "schema": {"properties": {"password": {"type": "string", "minLength": 8}}},
        "pinned": 3,
        "count": 5,
    }
    out = Redactor().value(record)
    assert out == {
        "pin": REDACTED,
        "card_pin": REDACTED,
        "password": REDACTED,
        "api_keys": [mask(len("sk-one-0123")), mask(len("sk-two-0123")), REDACTED],
        "credentials": {"user": REDACTED, "nested": {"pass": REDACTED, "ok": True, "n": None}},
        "secret": "",
        "has_token": False,
        "private_key": [REDACTED + "*" * 9],
        "schema": {"properties": {"password": {"type": REDACTED, "minLength": REDACTED}}},
        "pinned": 3,
        "count": 5,
    }
    assert Redactor().value(out) == out  # redacted again, the same
    unchanged = {"password": {"ok": True, "none": None, "empty": ""}}
    assert Redactor().value(unchanged) is unchanged


def test_sensitive_key_names() -> None:
    """The key rules catch credential names and spare ``*_tokens`` counters."""
    for key in (
        "api_key",
        "X-Api-Key",
        "authorization",
        "client_secret",
        "password",
        "token",
        "access_token",
    ):
        assert is_sensitive_key(key), key
    for key in ("input_tokens", "max_output_tokens", "token_budget", "tokens", "type"):
        assert not is_sensitive_key(key), key


def test_a_redacted_event_is_written_redacted(tmp_path: Path) -> None:
    """A tool input holding a credential under a sensitive key is redacted in the event line."""
    with make_writer(tmp_path / "t.jsonl") as writer:
        writer.write_event(
            ev.PermissionDecided(
                effect_id="e1",
                behavior=ev.PermissionBehavior.ALLOW,
                source=ev.DecisionSource.USER,
                updated_input={"url": "https://x", "token": "ghp_secret_value"},
            )
        )
    assert "ghp_secret_value" not in (tmp_path / "t.jsonl").read_text()


def test_too_short_secrets_are_refused() -> None:
    """A secret shorter than four characters is refused; an empty one is ignored."""
    with pytest.raises(ValueError, match="at least 4"):
        Redactor(["abc"])
    assert Redactor([""]).text("abc") == "abc"


def test_unknown_objects_are_refused_not_repred() -> None:
    """A value JSON cannot carry raises UsageError and leaves no partial line behind."""
    buffer = io.BytesIO()
    writer = make_writer(buffer)
    before = buffer.getvalue()
    event = ev.ModelStreamEvent(request_id="r1", event={"oops": object()})
    with pytest.raises(UsageError, match="cannot be written"):
        writer.write_event(event)
    assert buffer.getvalue() == before
    writer.write_event(ev.AbortRequested())
    assert orjson.loads(buffer.getvalue().splitlines()[-1])["seq"] == 1  # no seq was burnt


def test_structlog_global_configuration_is_untouched(tmp_path: Path) -> None:
    """Building and using a writer never changes structlog's process-wide configuration."""
    before = structlog.get_config()
    with make_writer(tmp_path / "t.jsonl") as writer:
        writer.write_event(ev.AbortRequested())
    assert structlog.get_config() == before


def test_closed_writer_refuses_records(tmp_path: Path) -> None:
    """Writing after close raises UsageError; closing twice is harmless."""
    writer = make_writer(tmp_path / "t.jsonl")
    writer.close()
    writer.close()
    with pytest.raises(UsageError, match="closed"):
        writer.write_event(ev.AbortRequested())


def test_a_caller_file_is_left_open() -> None:
    """A file object passed in is flushed but not closed by the writer."""
    buffer = io.BytesIO()
    with make_writer(buffer):
        pass
    assert not buffer.closed


def test_tracing_core_writes_event_before_feeding(tmp_path: Path) -> None:
    """TracingCore writes the event first, so the line exists even when the core raises."""
    path = tmp_path / "t.jsonl"
    core = FakeCore(CONFIG, TOOLS)
    with make_writer(path) as writer:
        tracing = TracingCore(core, writer)
        with pytest.raises(UsageError):
            tracing.feed(ev.ToolCallFinished(call_id="nope"))
    assert lines_of(path)[-1]["event"]["type"] == "ToolCallFinished"


def test_tracing_core_writes_the_end_record(tmp_path: Path) -> None:
    """The step that ends the run is followed by an end record with usage totals."""
    path = tmp_path / "t.jsonl"
    core = FakeCore(CONFIG, TOOLS)
    with make_writer(path) as writer:
        tracing = TracingCore(core, writer)
        for event in fake_events():
            tracing.feed(event)
        assert tracing.phase == "completed"  # attribute reads reach the core
    end = lines_of(path)[-1]
    assert end["record"] == "end"
    assert end["terminal"] == "completed"
    assert end["usage"]["output_tokens"] == 7


def test_turn_prompt_round_trips(tmp_path: Path) -> None:
    """An event's dict in the file is exactly the codec's dump of it."""
    event = ev.TurnStarted(messages=prompt("hi"))
    with make_writer(tmp_path / "t.jsonl") as writer:
        writer.write_event(event)
    from fsm_agent.core.codec import dump_event, load_event

    stored = lines_of(tmp_path / "t.jsonl")[1]["event"]
    assert load_event(stored) == event
    assert stored == orjson.loads(orjson.dumps(dump_event(event)))


def test_stream_event_fast_path_matches_the_converter() -> None:
    """The writer's shortcut for stream events builds exactly what the converter builds."""
    from fsm_agent.core.codec import dump_event
    from fsm_agent.core.events import ModelStreamEvent
    from fsm_agent.trace.records import event_fields

    event = ModelStreamEvent(
        request_id="r7",
        event={
            "type": "content_block_delta",
            "index": 2,
            "delta": {"type": "text_delta", "text": "x"},
        },
    )
    assert event_fields(event) == {"record": "event", "event": dump_event(event)}


@given(
    wall_time=st.none() | st.floats(allow_nan=False) | st.integers(),
    last=st.none() | st.floats(allow_nan=False),
)
def test_a_turn_started_record_without_messages_is_what_the_converter_builds(
    wall_time: float | None, last: float | None
) -> None:
    """The writer builds a turn's record with no messages directly: exactly the dict the
    converter makes of the event with ``messages=()`` (a field added to the event fails here)."""
    import attrs

    from fsm_agent.core.codec import dump_event
    from fsm_agent.trace.records import turn_started_fields

    event = ev.TurnStarted(messages=prompt("hi"), wall_time=wall_time, last_response_wall_time=last)
    expected = {"record": "event", "event": dump_event(attrs.evolve(event, messages=()))}
    assert turn_started_fields(event) == expected
    assert list(turn_started_fields(event)["event"]) == list(expected["event"])


def test_a_secret_in_a_tool_call_id_is_redacted_in_its_transition_line() -> None:
    """A transition on an event's line is redacted like any record."""
    buffer = io.BytesIO()
    writer = make_writer(buffer, secrets=("call-secret-1234",))
    rows = (
        TransitionTaken(machine="tool", name="validate", source="queued", dest="validating"),
        TransitionTaken(
            machine="tool",
            name="validate",
            source="queued",
            dest="validating",
            call_id="toolu_call-secret-1234",
        ),
    )
    writer.write_event(ev.AbortRequested(reason="user"), Step(transitions=rows))
    content = buffer.getvalue()
    assert b"call-secret-1234" not in content
    records = [r.data for r in read_trace(io.BytesIO(content)).records][1:]
    assert [r["call_id"] for r in records] == [None, "toolu_" + mask(len("call-secret-1234"))]
    assert [r["seq"] for r in records] == [2, 3]


def test_a_sensitive_key_deep_in_a_list_is_redacted() -> None:
    """A credential under a sensitive key inside a list inside a model event is redacted."""
    buffer = io.BytesIO()
    writer = make_writer(buffer)
    payload = {"type": "x", "items": [{"a": [{"client_secret": "s3cr3t-value"}]}]}
    writer.write_event(ev.ModelStreamEvent(request_id="r1", event=payload))
    assert b"s3cr3t-value" not in buffer.getvalue()
    assert REDACTED.encode() in buffer.getvalue()


def test_a_secret_written_as_a_key_is_redacted() -> None:
    """A model may write a secret as a name (a tool input keyed by an API key or by the
    configured secret): the key is redacted as a string value is, wherever it sits."""
    buffer = io.BytesIO()
    writer = make_writer(buffer, secrets=("configured-key-1234",))
    payload = {
        "type": "x",
        "input": {API_KEY: 1, "my configured-key-1234": {"inner": 2}, "plain": 3},
    }
    writer.write_event(ev.ModelStreamEvent(request_id="r1", event=payload))
    data = buffer.getvalue()
    assert API_KEY.encode() not in data
    assert b"configured-key-1234" not in data
    [record] = [r.data for r in read_trace(io.BytesIO(data)).records]
    written = record["event"]["event"]["input"]
    assert written == {
        mask(len(API_KEY)): 1,
        f"my {mask(len('configured-key-1234'))}": {"inner": 2},
        "plain": 3,
    }


def test_a_continuing_writer_goes_on_where_the_first_stopped() -> None:
    """A writer given next_seq and started writes no header, numbers on, and times from the
    first writer's start: the two outputs joined are the bytes one writer would write."""
    ticks = iter([0.0, 1.0, 2.0, 3.0, 4.0, 5.0])

    def clock() -> float:
        return next(ticks)

    events = [ev.AbortRequested(reason="a"), ev.AbortRequested(reason="b")]
    whole = io.BytesIO()
    one = make_writer(whole, clock=clock)
    for event in events:
        one.write_event(event)
    ticks = iter([0.0, 1.0, 2.0])
    first, second = io.BytesIO(), io.BytesIO()
    early = make_writer(first, clock=clock)
    early.write_event(events[0])
    late = make_writer(second, clock=clock, next_seq=early.next_seq, started=early.started)
    late.write_event(events[1])
    assert first.getvalue() + second.getvalue() == whole.getvalue()
    assert late.header == early.header


def _header_of(buffer: io.BytesIO) -> dict[str, object]:
    header: dict[str, object] = orjson.loads(buffer.getvalue().splitlines()[0])
    return header


def test_writers_sharing_config_and_tools_redact_each_header() -> None:
    """A credential in a tool schema is redacted in the header of every writer given the same
    config and tools, and a writer given other tools writes its own."""
    from fsm_agent.core.tool_spec import ToolSpec

    schema = {"type": "object", "default_auth": {"api_key": "k-123456-very-private"}}
    tools = (ToolSpec(name="Fetch", input_schema=schema),)
    headers = []
    for _ in range(2):
        buffer = io.BytesIO()
        TraceWriter(buffer, config=CONFIG, tools=tools, table_digest="d", meta={"n": 1})
        headers.append(buffer.getvalue())
    assert headers[0] == headers[1]
    assert b"k-123456-very-private" not in headers[0]
    other = io.BytesIO()
    TraceWriter(other, config=CONFIG, tools=TOOLS, table_digest="d", meta={"password": "pw-42"})
    assert [tool["name"] for tool in _header_of(other)["tools"]] == ["Read"]  # type: ignore[attr-defined]
    assert _header_of(other)["meta"] == {"password": REDACTED}


def test_an_event_the_trace_cannot_hold_never_reaches_the_core() -> None:
    """An event holding an object that is not JSON is refused before the core sees it: the
    core is not fed, nothing is written, and the seq is not taken."""
    fed: list[ev.Event] = []

    class Recording:
        phase, terminal, transcript, usage = "idle", None, (), Usage()

        def feed(self, event: ev.Event) -> Step:
            fed.append(event)
            return Step()

    buffer = io.BytesIO()
    traced = TracingCore(Recording(), make_writer(buffer))
    before = buffer.getvalue()
    leak = ev.ToolCallFinished(call_id="c1", content="done", context_update={"h": object()})
    with pytest.raises(UsageError, match="cannot be written"):
        traced.feed(leak)
    assert fed == []
    assert buffer.getvalue() == before
    traced.feed(ev.AbortRequested(reason="user"))
    assert [r.seq for r in read_trace(io.BytesIO(buffer.getvalue())).records] == [1]
