"""Closed fields: the key scan skips only fields that cannot hold a key from outside, and the
lines written are exactly those a scan of every field would give (DESIGN §8)."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any, Final

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_trace_support import CONFIG, TOOLS

from fsm_agent.core import effects as fx
from fsm_agent.core import events as ev
from fsm_agent.core.codec import dump_event
from fsm_agent.core.effects import EFFECT_TYPES
from fsm_agent.core.events import EVENT_TYPES
from fsm_agent.core.step import Step
from fsm_agent.trace import records
from fsm_agent.trace.closed_fields import (
    TAG,
    closed_fields,
    closed_fields_by_tag,
    sensitive_key_in,
)
from fsm_agent.trace.redact import KEY_RULES_ONLY, REDACTED
from fsm_agent.trace.writer import TraceWriter


@attrs.frozen
class _Leaf:
    label: str
    size: int | None = None


@attrs.frozen
class _Credentials:
    api_key: str


@attrs.frozen
class _Sample:
    name: str
    count: int
    leaves: tuple[_Leaf, ...]
    payload: dict[str, Any]
    anything: Any
    token: str
    nested: _Credentials
    maybe: dict[str, str] | None = None


def test_free_form_and_sensitive_fields_are_never_closed() -> None:
    """A dict, Any, a sensitive field name, or a nested class with one, is scanned; scalars,
    enums and tuples of plain classes are skipped."""
    assert closed_fields(_Sample) == {"name", "count", "leaves", TAG}


def test_every_free_form_field_of_an_event_or_effect_is_scanned() -> None:
    """No event or effect field whose annotation names a dict, Any, or a message (which can
    carry a tool input) is skipped by the key scan: a new free-form field cannot slip through."""
    for cls in (*EVENT_TYPES, *EFFECT_TYPES):
        closed = closed_fields_by_tag()[cls.__name__]
        for field in attrs.fields(cls):
            annotation = str(field.type)
            if any(word in annotation for word in ("dict", "Any", "Message", "Outcome")):
                assert field.name not in closed, (cls.__name__, field.name)


def _writer(buffer: io.BytesIO) -> TraceWriter:
    return TraceWriter(buffer, config=CONFIG, tools=TOOLS, table_digest="d")


_KEYS = st.sampled_from(
    ["path", "api_key", "x-api-key", "Authorization", "input_tokens", "note", "access_token"]
)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=3),
    max_leaves=12,
)
_PAYLOADS = st.dictionaries(_KEYS, _JSON, max_size=4)

_EVENTS: list[Callable[[dict[str, Any]], ev.Event]] = [
    lambda p: ev.ModelStreamEvent(request_id="r1", event=p),
    lambda p: ev.ToolCallFinished(call_id="c1", content="ok", context_update=p),
    lambda p: ev.PermissionDecided(
        effect_id="e1",
        behavior=ev.PermissionBehavior.ALLOW,
        source=ev.DecisionSource.HOOK,
        updated_input=p,
    ),
    lambda p: ev.HooksFinished(effect_id="e1", outcome=ev.HookOutcome(updated_input=p)),
]
_EFFECTS: list[Callable[[dict[str, Any]], fx.Effect]] = [
    lambda p: fx.RunToolStep(
        effect_id="e1", call_id="c1", step=fx.ToolStep.VALIDATE, tool_name="Read", input=p
    ),
    lambda p: fx.RunHooks(effect_id="e2", hook_event=fx.HookEvent.STOP, payload=p),
    lambda p: fx.AskPermission(effect_id="e3", call_id="c1", tool_name="Bash", input=p),
]


@given(payload=_PAYLOADS, make=st.sampled_from(_EVENTS))
def test_an_event_line_is_what_redacting_every_field_gives(
    payload: dict[str, Any], make: Callable[[dict[str, Any]], ev.Event]
) -> None:
    """An event holding any payload is written exactly as a redaction of the whole record."""
    buffer = io.BytesIO()
    writer = _writer(buffer)
    start = len(buffer.getvalue())
    event = make(payload)
    writer.write_event(event)
    fields = {"record": "event", "event": dump_event(event), "seq": 1}
    expected = records.dumps(KEY_RULES_ONLY.value(fields)) + b"\n"
    assert buffer.getvalue()[start:] == expected


@given(payload=_PAYLOADS, make=st.sampled_from(_EFFECTS))
def test_an_event_line_with_its_step_is_what_redacting_every_field_gives(
    payload: dict[str, Any], make: Callable[[dict[str, Any]], fx.Effect]
) -> None:
    """An event line whose effect holds any payload is written exactly as a redaction of the
    whole record."""
    buffer = io.BytesIO()
    writer = _writer(buffer)
    start = len(buffer.getvalue())
    first = fx.CallModel(effect_id="e0", request_id="r", model="m", max_output_tokens=5)
    step = Step(effects=(first, make(payload)))
    event = ev.AbortRequested(reason="user")
    writer.write_event(event, step)
    fields = records.add_step({**records.event_fields(event), "seq": 1}, step)
    expected = records.dumps(KEY_RULES_ONLY.value(fields)) + b"\n"
    assert buffer.getvalue()[start:] == expected


_CREDENTIAL: Final = {"db": [{"password": "hunter22"}]}


def _assert_redacted(buffer: io.BytesIO) -> None:
    assert b"hunter22" not in buffer.getvalue()
    assert REDACTED.encode() in buffer.getvalue().splitlines()[-1]


@pytest.mark.parametrize("make", _EVENTS)
def test_a_credential_in_any_free_form_event_field_is_redacted(
    make: Callable[[dict[str, Any]], ev.Event],
) -> None:
    """A password nested in any free-form field of an event never reaches its line."""
    buffer = io.BytesIO()
    _writer(buffer).write_event(make(_CREDENTIAL))
    _assert_redacted(buffer)


@pytest.mark.parametrize("make", _EFFECTS)
def test_a_credential_in_any_free_form_effect_field_is_redacted(
    make: Callable[[dict[str, Any]], fx.Effect],
) -> None:
    """A password nested in any free-form field of an effect never reaches its line."""
    buffer = io.BytesIO()
    step = Step(effects=(make(_CREDENTIAL),))
    _writer(buffer).write_event(ev.AbortRequested(reason="user"), step)
    _assert_redacted(buffer)


@pytest.mark.parametrize(
    "dumped",
    [
        {"type": "HooksFinished", "effect_id": "e1", "outcome": {"password": "hunter22"}},
        {"type": "HooksFinished", "effect_id": "e1", "outcome": [{"api_key": "k"}]},
        {"type": "HooksFinished", "effect_id": "e1", "outcome": {}, "extra": {"token": "t"}},
        {"type": "NoSuchEvent", "nested": {"deeper": {"Authorization": "b"}}},
    ],
)
def test_a_record_not_shaped_as_its_class_is_scanned_whole(dumped: dict[str, Any]) -> None:
    """A dict with keys its class does not have, or an unknown tag, is scanned in full: a
    credential in it is found wherever it sits."""
    assert sensitive_key_in(dumped)


def test_a_hook_outcome_is_scanned_only_where_it_is_free_form() -> None:
    """A hook outcome's closed fields are not scanned; its updated input is."""
    outcome = dump_event(ev.HooksFinished(effect_id="e1", outcome=ev.HookOutcome()))
    assert not sensitive_key_in(outcome)
    changed = ev.HookOutcome(updated_input={"nested": {"client_secret": "s"}})
    assert sensitive_key_in(dump_event(ev.HooksFinished(effect_id="e1", outcome=changed)))
