"""Anything the trace writer writes, the reader reads (issue 8): model events holding lone
surrogates, integers of any size, nesting of any depth and non-string keys; and step lines
are the bytes of the general path (issue 10)."""

from __future__ import annotations

import io
from typing import Any

import orjson
from hypothesis import given
from hypothesis import strategies as st

from fsm_agent.core import effects as fx
from fsm_agent.core import events as ev
from fsm_agent.core.config import LoopConfig
from fsm_agent.core.messages import Usage
from fsm_agent.core.step import Step, TransitionTaken
from fsm_agent.core.tool_spec import ToolSpec
from fsm_agent.errors import UsageError
from fsm_agent.trace.json_limits import fit_for_json
from fsm_agent.trace.reader import read_trace
from fsm_agent.trace.records import add_step, dumps, event_fields
from fsm_agent.trace.redact import KEY_RULES_ONLY, Redactor
from fsm_agent.trace.writer import TraceWriter

# Every code point, lone surrogates included (st.text() leaves those out by default).
ANY_TEXT = st.text(alphabet=st.characters(codec=None), max_size=8)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=2**63, max_value=2**80)
    | st.integers(min_value=-(2**80), max_value=-(2**63))
    | st.floats(allow_nan=False, allow_infinity=False)
    | ANY_TEXT
)
KEYS = ANY_TEXT | st.integers() | st.booleans() | st.none()
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3),
    max_leaves=20,
)


def nested(depth: int, leaf: Any) -> Any:
    for _ in range(depth):
        leaf = [leaf]
    return leaf


def written_as(event: dict[str, Any]) -> Any:
    """What a trace holds for ``event``: itself when orjson can write its record, else its
    fitted form, cut where the record (two levels above the payload) passes the depth limit."""
    try:
        orjson.dumps({"record": "event", "event": {"event": event}})
    except orjson.JSONEncodeError:
        return fit_for_json(event, depth=2)
    return event


@given(
    payload=st.dictionaries(ANY_TEXT, VALUES, max_size=4),
    depth=st.integers(0, 400),
    tokens=st.integers(min_value=0, max_value=2**80),
)
def test_what_the_writer_writes_the_reader_reads(
    payload: dict[str, Any], depth: int, tokens: int
) -> None:
    """A written model event reads back as its trace-safe form; a usage total of any size
    reads back as itself."""
    event = {**payload, "deep": nested(depth, "leaf")}
    buffer = io.BytesIO()
    writer = TraceWriter(buffer, config=LoopConfig(), table_digest="d")
    writer.write_event(ev.ModelStreamEvent(request_id="r", event=event))
    writer.write_end("completed", Usage(output_tokens=tokens))
    trace = read_trace(io.BytesIO(buffer.getvalue()))
    read_back = trace.records[0].event
    assert isinstance(read_back, ev.ModelStreamEvent)
    assert read_back.event == written_as(event)
    assert trace.records[1].data["usage"]["output_tokens"] in (tokens, str(tokens))


NAMES = ANY_TEXT | st.sampled_from(("idle", "phase_wxyz", 'x\\y"z'))


# Text that may hold a configured secret, an API-key-shaped string or part of one.
_SECRETISH = (
    st.sampled_from(("", "wxyz", "awxyzb", "sk-ant-aaaaaaaaaaaa", "sk-ant-", "wx")) | ANY_TEXT
)
_PAYLOADS = st.dictionaries(st.sampled_from(("note", "token", "path")), _SECRETISH, max_size=2)


@given(
    reason=_SECRETISH,
    payloads=st.lists(_PAYLOADS, max_size=2),
    call_ids=st.lists(st.none() | _SECRETISH, max_size=2),
    secrets=st.sampled_from(((), ("wxyz",))),
)
def test_a_line_with_effects_and_transitions_is_what_redacting_the_record_gives(
    reason: str,
    payloads: list[dict[str, Any]],
    call_ids: list[str | None],
    secrets: tuple[str, ...],
) -> None:
    """Wherever a secret or a sensitive key sits (the event, an effect, a transition, more
    than one of them), the line is the rendering of the whole record redacted."""
    buffer = io.BytesIO()
    writer = TraceWriter(buffer, config=LoopConfig(), table_digest="d", secrets=secrets)
    rows = tuple(
        TransitionTaken(machine="tool", name="n", source="a", dest="b", call_id=call_id)
        for call_id in call_ids
    )
    effects = tuple(
        fx.RunHooks(effect_id=f"e{i}", hook_event=fx.HookEvent.STOP, payload=payload)
        for i, payload in enumerate(payloads)
    )
    step = Step(transitions=rows, effects=effects)
    event = ev.AbortRequested(reason=reason)
    writer.write_event(event, step)
    fields = add_step({**event_fields(event), "seq": 1}, step)
    expected = dumps(Redactor(secrets).value(fields)) + b"\n"
    assert buffer.getvalue().split(b"\n", 1)[1] == expected


@given(
    machine=NAMES,
    name=NAMES,
    source=NAMES,
    dest=NAMES,
    call_ids=st.lists(st.none() | NAMES | st.just("toolu_sk-ant-aaaaaaaaaaaa"), max_size=3),
)
def test_an_event_line_is_the_record_the_writer_renders_for_any_other_kind(
    machine: str, name: str, source: str, dest: str, call_ids: list[str | None]
) -> None:
    """An event line with its step is byte for byte the general rendering of its record
    (sorted keys, seq in place, redaction applied), and the next record's seq counts the
    event and every transition on the line."""
    buffer = io.BytesIO()
    writer = TraceWriter(buffer, config=LoopConfig(), table_digest="d", secrets=("wxyz",))
    rows = tuple(
        TransitionTaken(machine=machine, name=name, source=source, dest=dest, call_id=call_id)
        for call_id in call_ids
    )
    step = Step(transitions=rows)
    event = ev.AbortRequested(reason="user")
    writer.write_event(event, step)
    redactor = Redactor(("wxyz",))
    fields = add_step({**event_fields(event), "seq": 1}, step)
    expected = dumps(redactor.value(fields)) + b"\n"
    assert buffer.getvalue().split(b"\n", 1)[1] == expected
    assert writer.next_seq == len(rows) + 2


@given(
    meta=st.dictionaries(ANY_TEXT, VALUES, max_size=4),
    depth=st.integers(0, 250),
    digest=ANY_TEXT,
    secret=st.sampled_from(("", "wxyz")),
)
def test_the_header_line_is_the_rendering_of_the_header_record(
    meta: dict[str, Any], depth: int, digest: str, secret: str
) -> None:
    """The header line built from parts made once per config and tools is byte for byte the
    general rendering of the header record (redaction and limits applied), whatever meta."""
    meta = {**meta, "deep": nested(depth, "leaf")}
    config = LoopConfig(model="claude-wxyz")
    tools = (ToolSpec(name="Read", input_schema={"properties": {"token": {"type": "string"}}}),)
    for _ in range(2):  # made, then taken from the memo
        buffer = io.BytesIO()
        try:
            writer = TraceWriter(
                buffer,
                config=config,
                tools=tools,
                meta=meta,
                table_digest=digest,
                secrets=(secret,),
            )
        except UsageError:
            continue  # a meta the trace cannot hold at all is refused, not written
        record = writer.header.to_record()
        expected = dumps(Redactor((secret,)).value(record)) + b"\n"
        assert buffer.getvalue() == expected


@given(
    kind=st.sampled_from(("text_delta", "input_json_delta", "thinking_delta", "signature_delta")),
    text=ANY_TEXT,
    extra=st.dictionaries(ANY_TEXT, VALUES, max_size=2),
    index=st.integers() | st.text(max_size=3) | VALUES,
)
def test_a_delta_line_is_what_scanning_every_key_gives(
    kind: str, text: str, extra: dict[str, Any], index: Any
) -> None:
    """A content_block_delta of any shape (the API's, or one with extra keys or odd values)
    is written exactly as a scan and redaction of the whole record would write it."""
    field = {"text_delta": "text", "input_json_delta": "partial_json"}.get(kind, kind[:-6])
    event = {"type": "content_block_delta", "index": index, "delta": {"type": kind, field: text}}
    event["delta"].update(extra)
    buffer = io.BytesIO()
    writer = TraceWriter(buffer, config=LoopConfig(), table_digest="d")
    start = len(buffer.getvalue())
    stream = ev.ModelStreamEvent(request_id="r", event=event)
    try:
        writer.write_event(stream)
    except UsageError:
        return  # not JSON a trace can hold: refused, never half-written
    expected = dumps(KEY_RULES_ONLY.value({**event_fields(stream), "seq": 1})) + b"\n"
    assert buffer.getvalue()[start:] == expected
