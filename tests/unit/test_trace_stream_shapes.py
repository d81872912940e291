"""The Messages API's own stream-event shapes: a recognised event holds no sensitive key name,
whatever is done to it, and every recorded real stream is written exactly as a redaction of
the whole record would write it (DESIGN §8)."""

from __future__ import annotations

import copy
import io
import json
import os
from pathlib import Path
from typing import Any, Final

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_trace_support import CONFIG, TOOLS

from fsm_agent.core import events as ev
from fsm_agent.core.codec import dump_event
from fsm_agent.trace import records
from fsm_agent.trace.redact import KEY_RULES_ONLY, has_sensitive_key, is_sensitive_key
from fsm_agent.trace.stream_shapes import KNOWN_KEYS, known_stream_event
from fsm_agent.trace.writer import TraceWriter

# Beside the checkout (as CI lays it out), or where FSM_AGENT_REAL_STREAMS points.
STREAMS = Path(
    os.environ.get("FSM_AGENT_REAL_STREAMS")
    or Path(__file__).resolve().parents[2].parent / "shared" / "real-streams"
)
RECORDINGS = sorted(STREAMS.glob("*.sse")) if STREAMS.is_dir() else []

SHAPES: Final[list[dict[str, Any]]] = [
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    {
        "type": "content_block_start",
        "index": 0,
        "content_block": {"type": "text", "text": "", "citations": []},
    },
    {
        "type": "content_block_start",
        "index": 1,
        "content_block": {"type": "thinking", "thinking": "", "signature": ""},
    },
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hi"}},
    {
        "type": "content_block_delta",
        "index": 1,
        "delta": {"type": "input_json_delta", "partial_json": "{"},
    },
    {"type": "content_block_stop", "index": 0},
    {"type": "message_stop"},
    {"type": "ping"},
]
"""One event of every shape recognised (every optional key present somewhere)."""


def test_every_shape_is_recognised_and_no_key_it_may_have_is_sensitive() -> None:
    assert all(known_stream_event(copy.deepcopy(shape)) for shape in SHAPES)
    assert not [key for key in KNOWN_KEYS if is_sensitive_key(key)]


_KEYS = st.sampled_from(
    [
        "api_key",
        "x-api-key",
        "Authorization",
        "access_token",
        "password",
        "input_tokens",
        "usage",
        "type",
        "text",
        "citations",
        "note",
    ]
)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=3),
    max_leaves=10,
)


def _containers(value: Any) -> list[Any]:
    """Every dict and list in ``value``, itself included."""
    found: list[Any] = []
    pending = [value]
    while pending:
        current = pending.pop()
        if isinstance(current, dict):
            found.append(current)
            pending.extend(current.values())
        elif isinstance(current, list):
            found.append(current)
            pending.extend(current)
    return found


@st.composite
def _hostile(draw: st.DrawFn) -> dict[str, Any]:
    """A recognised shape with a few changes anywhere in it: a key added, a value replaced by
    any JSON (nested, of the wrong type, holding sensitive keys), an item put in a list."""
    event: dict[str, Any] = copy.deepcopy(draw(st.sampled_from(SHAPES)))
    for _ in range(draw(st.integers(1, 3))):
        target = draw(st.sampled_from(_containers(event)))
        value = draw(_JSON)
        if isinstance(target, list):
            target.append(value)
        elif target and draw(st.booleans()):
            target[draw(st.sampled_from(sorted(target)))] = value
        else:
            target[draw(_KEYS)] = value
    return event


@given(event=_hostile())
def test_a_recognised_event_holds_no_sensitive_key(event: dict[str, Any]) -> None:
    """Whatever is added or replaced, an event recognised has no sensitive key at any depth."""
    if known_stream_event(event):
        assert not has_sensitive_key(event)


@given(event=_hostile())
def test_a_stream_event_line_is_what_redacting_every_field_gives(event: dict[str, Any]) -> None:
    buffer = io.BytesIO()
    writer = TraceWriter(buffer, config=CONFIG, tools=TOOLS, table_digest="d")
    start = len(buffer.getvalue())
    stream_event = ev.ModelStreamEvent(request_id="r1", event=event)
    writer.write_event(stream_event)
    fields = {"record": "event", "event": dump_event(stream_event), "seq": 1}
    assert buffer.getvalue()[start:] == records.dumps(KEY_RULES_ONLY.value(fields)) + b"\n"


_HIDING: Final[list[Any]] = [{"api_key": "k"}, [{"password": "k"}]]
"""Values that hide a sensitive key."""


def _variants(shape: dict[str, Any]) -> list[dict[str, Any]]:
    """``shape`` with a sensitive key added to each object in it, a hiding value added to each
    list, and each value of each object in turn replaced by a hiding value."""
    variants = []
    for at, original in enumerate(_containers(shape)):
        changes: list[tuple[Any, Any]] = (
            [(None, value) for value in _HIDING]
            if isinstance(original, list)
            else [("x-api-key", "k"), *((key, v) for key in original for v in _HIDING)]
        )
        for key, value in changes:
            event = copy.deepcopy(shape)
            target = _containers(event)[at]
            if key is None:
                target.append(value)
            else:
                target[key] = value
            variants.append(event)
    return variants


@pytest.mark.parametrize("shape", SHAPES, ids=lambda shape: str(shape["type"]))
def test_a_sensitive_key_anywhere_in_a_shape_is_never_recognised(shape: dict[str, Any]) -> None:
    for event in _variants(shape):
        assert has_sensitive_key(event)
        assert not known_stream_event(event), event


def _recorded_events(path: Path) -> list[dict[str, Any]]:
    return [
        json.loads(line[len("data:") :])
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.startswith("data:")
    ]


@pytest.mark.skipif(not RECORDINGS, reason=f"the recorded real streams are not at {STREAMS}")
@pytest.mark.parametrize("recording", RECORDINGS, ids=lambda path: path.stem)
def test_a_recorded_stream_is_written_as_redacting_every_field_gives(recording: Path) -> None:
    buffer = io.BytesIO()
    writer = TraceWriter(buffer, config=CONFIG, tools=TOOLS, table_digest="d")
    expected = [buffer.getvalue()]
    for seq, event in enumerate(_recorded_events(recording), start=1):
        assert not known_stream_event(event) or not has_sensitive_key(event)
        stream_event = ev.ModelStreamEvent(request_id="r1", event=event)
        writer.write_event(stream_event)
        fields = {"record": "event", "event": dump_event(stream_event), "seq": seq}
        expected.append(records.dumps(KEY_RULES_ONLY.value(fields)) + b"\n")
    assert buffer.getvalue() == b"".join(expected)


@pytest.mark.skipif(not RECORDINGS, reason=f"the recorded real streams are not at {STREAMS}")
def test_most_recorded_events_are_recognised() -> None:
    """The shapes are the wire's own: every block stop, message stop and ping recorded is
    recognised, and nearly every delta (a shape the API changed would be scanned, and caught
    here)."""
    events = [event for path in RECORDINGS for event in _recorded_events(path)]
    for kind in ("content_block_stop", "message_stop", "ping"):
        assert all(known_stream_event(e) for e in events if e["type"] == kind), kind
    deltas = [e for e in events if e["type"] == "content_block_delta"]
    assert sum(map(known_stream_event, deltas)) >= 0.9 * len(deltas)
