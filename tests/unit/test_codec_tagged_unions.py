"""Events and effects go through per-class codec functions: the same dicts and objects as the
converter's generic union dispatch, and the same detailed errors for a bad dict (issue 10)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import cattrs
import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fsm_agent.core import effects as fx
from fsm_agent.core import events as ev
from fsm_agent.core.codec import converter, dump_effect, dump_event, load_effect, load_event
from fsm_agent.errors import TraceFormatError
from fsm_agent.trace.records import parse_event

ROOT = Path(__file__).resolve().parents[2]


def _golden(kind: str) -> list[dict[str, Any]]:
    """Every non-stream event (``kind="event"``) or effect of the golden traces, as stored."""
    found: list[dict[str, Any]] = []
    for path in sorted((ROOT / "traces").glob("*.jsonl")):
        for raw in path.read_bytes().splitlines()[1:]:
            data = orjson.loads(raw)
            if data["record"] != "event":
                continue
            if kind == "effect":
                found.extend(data.get("effects", ()))  # a line carries its feed's effects
            elif data["event"]["type"] != "ModelStreamEvent":
                found.append(data["event"])
    return found


GOLDEN_EVENTS = _golden("event")
GOLDEN_EFFECTS = _golden("effect")


def test_the_golden_corpus_has_many_kinds_of_events_and_effects() -> None:
    """The corpus the checks below read is not empty (a check over nothing cannot fail)."""
    assert len({e["type"] for e in GOLDEN_EVENTS}) >= 8
    assert len({e["type"] for e in GOLDEN_EFFECTS}) >= 5


def test_events_load_and_dump_as_the_generic_converter_does() -> None:
    """Each stored event structures to the object the union dispatch gives, and dumps back
    to the stored dict."""
    for data in GOLDEN_EVENTS:
        loaded = load_event(data)
        assert loaded == converter().structure(dict(data), ev.Event)  # type: ignore[arg-type]
        assert dump_event(loaded) == data == converter().unstructure(loaded, ev.Event)
        assert "type" in data  # the caller's dict is left as it was


def test_effects_load_and_dump_as_the_generic_converter_does() -> None:
    """Each stored effect structures to the object the union dispatch gives, and dumps back
    to the stored dict."""
    for data in GOLDEN_EFFECTS:
        loaded = load_effect(data)
        assert loaded == converter().structure(dict(data), fx.Effect)  # type: ignore[arg-type]
        assert dump_effect(loaded) == data == converter().unstructure(loaded, fx.Effect)


def outcome(function: Any, data: Any) -> tuple[str, object]:
    """What ``function(data)`` gives: ``("ok", value)``, or the error's type, text and
    (for a cattrs error) the messages it tells (the text of a refusal is part of the API)."""
    try:
        return "ok", function(data)
    except Exception as exc:
        messages = (
            cattrs.transform_error(exc) if isinstance(exc, cattrs.BaseValidationError) else []
        )
        return type(exc).__name__, (str(exc), messages)


_BAD_VALUES: st.SearchStrategy[object] = st.sampled_from(
    [None, True, 7, 2.5, "x", [], {}, {"type": "nope"}]
)


@given(
    index=st.integers(0, 10**6),
    mutation=st.sampled_from(["replace", "drop", "extra"]),
    value=_BAD_VALUES,
)
def test_a_damaged_dict_fails_as_the_generic_converter_fails(
    index: int, mutation: str, value: object
) -> None:
    """A stored event or effect with a field replaced, dropped or added is accepted exactly
    when the generic dispatch accepts it, and refused with the same detailed error."""
    pool = GOLDEN_EVENTS + GOLDEN_EFFECTS
    data = dict(pool[index % len(pool)])
    union: Any = ev.Event if index % len(pool) < len(GOLDEN_EVENTS) else fx.Effect
    keys = sorted(data)
    key = keys[index % len(keys)]
    if mutation == "replace":
        data[key] = value
    elif mutation == "drop":
        del data[key]
    else:
        data["unexpected_field"] = value
    ours = load_event if union is ev.Event else load_effect
    assert outcome(ours, data) == outcome(lambda d: converter().structure(dict(d), union), data)


@pytest.mark.parametrize("bad", [None, [], "ModelStreamClosed", {"request_id": "r"}])
def test_what_is_not_a_tagged_dict_fails_as_before(bad: object) -> None:
    """A value that is not a dict, or has no tag, is refused by the converter's own error."""
    event_union: Any = ev.Event
    generic = outcome(lambda d: converter().structure(d, event_union), bad)
    assert outcome(load_event, bad)[0] == generic[0] != "ok"


def test_a_value_that_is_not_an_event_is_refused_when_dumped() -> None:
    """Dumping an object that is no event fails as the converter fails."""
    with pytest.raises(Exception) as ours:
        dump_event(fx.DrainCollapse(effect_id="e1"))  # type: ignore[arg-type]
    with pytest.raises(Exception) as generic:
        converter().unstructure(fx.DrainCollapse(effect_id="e1"), unstructure_as=ev.Event)
    assert type(ours.value) is type(generic.value)


_PLAIN_OUTCOME: dict[str, Any] = {
    "additional_context": [],
    "blocking_errors": [],
    "decision": None,
    "decision_reason": "",
    "prevent_continuation": False,
    "stop_reason": "",
    "system_messages": [],
    "updated_input": None,
}


def _hooks_finished(**outcome: Any) -> dict[str, Any]:
    return {"type": "HooksFinished", "effect_id": "e1", "outcome": {**_PLAIN_OUTCOME, **outcome}}


def test_an_outcome_of_hooks_that_said_nothing_loads_as_the_default() -> None:
    """The stored form of a default hook outcome structures to a default ``HookOutcome``."""
    loaded = load_event(_hooks_finished())
    assert loaded == ev.HooksFinished(effect_id="e1", outcome=ev.HookOutcome())


@pytest.mark.parametrize(
    ("field", "value", "problem"),
    [
        ("prevent_continuation", 0, "expected boolean, got integer"),
        ("prevent_continuation", 1, "expected boolean, got integer"),
        ("blocking_errors", ["a", 1], "expected string, got integer"),
        ("system_messages", "ab", "expected array, got string"),
        ("additional_context", [None], "expected string, got null"),
    ],
)
def test_a_hook_outcome_is_checked_as_strictly_as_ever(
    field: str, value: Any, problem: str
) -> None:
    """A number where a flag belongs, a non-string in a list of strings, or a string where the
    list belongs, is refused naming the field (a string is never taken as its characters)."""
    data = {"record": "event", "seq": 1, "event": _hooks_finished(**{field: value})}
    with pytest.raises(TraceFormatError) as info:
        parse_event(data, 2, None)
    assert info.value.path.startswith(f"$.event.outcome.{field}")
    assert info.value.problem == problem


@given(st.lists(st.text(max_size=5), max_size=4), st.sampled_from(["a", "b", "c"]))
def test_lists_of_strings_load_as_tuples_of_the_same_strings(items: list[str], which: str) -> None:
    """Any JSON array of strings in a hook outcome loads as the tuple of those strings."""
    field = {"a": "blocking_errors", "b": "additional_context", "c": "system_messages"}[which]
    loaded = load_event(_hooks_finished(**{field: items}))
    assert isinstance(loaded, ev.HooksFinished)
    assert getattr(loaded.outcome, field) == tuple(items)
