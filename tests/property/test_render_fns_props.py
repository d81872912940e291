"""The writer's renderers (issue 10) render every event, effect and message to the bytes of the
codec's dict, and judge its keys as the key scan judges the codec's dict: for values of the
declared types and for values of any other type a field may be handed."""

from __future__ import annotations

import enum
import functools
import types
import typing
from pathlib import Path
from typing import Any

import attrs
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fsm_agent.core import messages
from fsm_agent.core.codec import dump_effect, dump_event, dump_message, load_effect
from fsm_agent.core.effects import EFFECT_TYPES
from fsm_agent.core.events import EVENT_TYPES
from fsm_agent.trace import records
from fsm_agent.trace.closed_fields import sensitive_key_in
from fsm_agent.trace.reader import read_trace
from fsm_agent.trace.redact import has_sensitive_key
from fsm_agent.trace.render_fns import render_effect, render_event, render_message

_TEXT = st.text(max_size=4) | st.sampled_from(
    ["api_key", "token", "input_tokens", "sk-ant-api03-abcdefghijkl", "caf\udce9"]
)
_KEYS = st.sampled_from(["api_key", "X-Api-Key", "token", "path", "type", "ſecret"]) | _TEXT
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | _TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=3),
    max_leaves=8,
)
_ODD = st.one_of(
    st.dictionaries(_KEYS, _TEXT, max_size=2),
    st.lists(_TEXT, max_size=2),
    st.lists(_TEXT, max_size=2).map(tuple),
    _TEXT,
    st.integers(min_value=-(2**70), max_value=2**70),
    st.none(),
)
"""Values of any type, for any field: attrs does not check types, so a field may hold one."""


@functools.cache
def _of(kind: Any) -> st.SearchStrategy[Any]:
    """Values of ``kind``, now and then of another type."""
    return _typed(kind) | _ODD if kind is not type(None) else st.none()


@functools.cache
def _typed(kind: Any) -> st.SearchStrategy[Any]:
    if kind is str:
        return _TEXT
    if kind is bool:
        return st.booleans()
    if kind is int:
        return st.integers() | st.just(2**70)
    if kind is float:
        return st.floats()
    if kind is type(None):
        return st.none()
    if kind is Any:
        return _JSON
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        return st.sampled_from(list(kind))
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin in (typing.Union, types.UnionType):
        return st.one_of([_typed(arg) for arg in args])
    if origin is tuple:
        return st.lists(_typed(args[0]), max_size=2).map(tuple)
    if origin is dict:
        return st.dictionaries(_KEYS, _typed(args[1]), max_size=3)
    if isinstance(kind, type) and attrs.has(kind):
        return _instances(kind)
    raise AssertionError(f"no strategy for {kind!r}")


def _instances(cls: type) -> st.SearchStrategy[Any]:
    hints = typing.get_type_hints(cls)
    fields = {field.alias: _deferred(hints[field.name]) for field in attrs.fields(cls)}
    return st.builds(cls, **fields)


def _deferred(kind: Any) -> st.SearchStrategy[Any]:
    """:func:`_of` ``kind``, made when first drawn (a class may hold itself)."""
    return st.deferred(lambda: _of(kind))


def _outcome(render: Any) -> Any:
    """What rendering gives as a line does: its bytes, or the type of what it raised."""
    try:
        return records.dumps({"effects": [render()]})
    except Exception as exc:  # the kind of failure is compared
        return type(exc)


def _judged(render: Any) -> Any:
    try:
        return render()
    except Exception as exc:  # as above
        return type(exc)


_SETTINGS = settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])


_TOP_LEVEL = [
    *((cls, render_event, dump_event) for cls in EVENT_TYPES),
    *((cls, render_effect, dump_effect) for cls in EFFECT_TYPES),
]
"""Every event and effect class, with the renderer and the codec dump of its union."""


@pytest.mark.parametrize(("cls", "render", "dump"), _TOP_LEVEL, ids=lambda v: v.__name__)
@_SETTINGS
@given(data=st.data())
def test_an_event_or_effect_renders_as_the_codec_dumps_it(
    cls: type, render: Any, dump: Any, data: st.DataObject
) -> None:
    """Rendered where an event or effect sits, the bytes are the codec's (or both fail
    alike), and the key judgement is the key scan's on the codec's dict."""
    value = data.draw(_instances(cls))
    rendered = _outcome(lambda: render(value)[0])
    assert rendered == _outcome(lambda: dump(value))
    if isinstance(rendered, bytes):
        assert render(value)[1] == _judged(lambda: sensitive_key_in(dump(value)))


@pytest.mark.parametrize("cls", messages.MESSAGE_TYPES, ids=lambda cls: cls.__name__)
@_SETTINGS
@given(data=st.data())
def test_a_message_renders_as_the_codec_dumps_it(cls: type, data: st.DataObject) -> None:
    """A message (and what it holds) is judged whole, as the key scan walks the codec's dict."""
    message = data.draw(_instances(cls))
    rendered = _outcome(lambda: render_message(message)[0])
    assert rendered == _outcome(lambda: dump_message(message))
    if isinstance(rendered, bytes):
        assert render_message(message)[1] == has_sensitive_key(dump_message(message))


def test_a_subclass_is_dumped_by_the_codec() -> None:
    """An object whose class is not exactly an event class is the codec's business."""
    base = EVENT_TYPES[0]
    sub = attrs.frozen(kw_only=True)(type("Odd", (base,), {}))
    event = sub(
        **{field.alias: () if "messages" in field.name else None for field in attrs.fields(base)}
    )
    assert _outcome(lambda: render_event(event)[0]) == _outcome(lambda: dump_event(event))


_TRACES = sorted((Path(__file__).parents[2] / "traces").glob("*.jsonl"))


@pytest.mark.parametrize("path", _TRACES, ids=lambda path: path.stem)
def test_every_recorded_event_and_effect_renders_as_recorded(path: Path) -> None:
    """Each event and effect of the golden traces renders to the codec's bytes, judged alike."""
    for record in read_trace(path).records:
        if record.event is not None:
            event = record.event
            assert orjson.dumps([render_event(event)[0]], option=records.JSON_OPTIONS) == (
                orjson.dumps([dump_event(event)], option=records.JSON_OPTIONS)
            )
            assert render_event(event)[1] == sensitive_key_in(dump_event(event))
        if record.kind == "effect":
            effect = load_effect(dict(record.data["effect"]))
            assert orjson.dumps([render_effect(effect)[0]], option=records.JSON_OPTIONS) == (
                orjson.dumps([dump_effect(effect)], option=records.JSON_OPTIONS)
            )
            assert render_effect(effect)[1] == sensitive_key_in(dump_effect(effect))
