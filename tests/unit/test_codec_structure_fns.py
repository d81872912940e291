"""Structure functions generated per class read the common shape themselves and hand anything
else to cattrs' function, so they make the objects it makes and refuse what it refuses
(issue 10)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_codec_tagged_unions import outcome

from fsm_agent.core import effects as fx
from fsm_agent.core import events as ev
from fsm_agent.core.codec import converter, load_effect, load_event
from fsm_agent.core.structure_fns import make_structure_fn

ROOT = Path(__file__).resolve().parents[2]


def _golden() -> list[dict[str, Any]]:
    """Every non-stream event and every effect of the golden traces, as stored."""
    found: list[dict[str, Any]] = []
    for path in sorted((ROOT / "traces").glob("*.jsonl")):
        for raw in path.read_bytes().splitlines()[1:]:
            data = orjson.loads(raw)
            if data["record"] == "event":
                found.extend(data.get("effects", ()))
                if data["event"]["type"] != "ModelStreamEvent":
                    found.append(data["event"])
    return found


GOLDEN = _golden()
_CLASSES = {cls.__name__: cls for cls in (*ev.EVENT_TYPES, *fx.EFFECT_TYPES)}


def _refuse(data: dict[str, Any]) -> Any:
    raise AssertionError(f"handed to cattrs: {data}")


def test_every_stored_event_and_effect_is_read_without_cattrs_function() -> None:
    """The common shape (every field, the tag) never reaches cattrs' function: the speed of
    replay rests on it."""
    assert len({data["type"] for data in GOLDEN}) >= 15
    for data in GOLDEN:
        cls = _CLASSES[data["type"]]
        structure = make_structure_fn(cls, converter(), _refuse, tag=data["type"])
        union: Any = ev.Event if cls in ev.EVENT_TYPES else fx.Effect
        assert structure(data) == converter().structure(dict(data), union)


# JSON values that Python's == confuses (1, 1.0, True), numbers past 64 bits written as
# strings, and values of the wrong kind.
_LOOK_ALIKES: st.SearchStrategy[object] = st.sampled_from(
    [0, 1, 1.0, -0.0, True, False, 2**70, str(2**70), "1", "", None, [], ["a"], {}, {"a": 1}]
)


@given(index=st.integers(0, 10**6), value=_LOOK_ALIKES)
def test_a_look_alike_value_loads_or_fails_as_the_generic_converter_does(
    index: int, value: object
) -> None:
    """Any field of a stored event or effect replaced by a value of a look-alike type is
    accepted exactly when the generic dispatch accepts it, into an object of the same field
    types, and refused with the same detailed error; the dict is left as it was."""
    data = dict(GOLDEN[index % len(GOLDEN)])
    keys = sorted(key for key in data if key != "type")
    if not keys:
        return
    data[keys[index % len(keys)]] = value
    before = copy.deepcopy(data)
    cls = _CLASSES[data["type"]]
    union: Any = ev.Event if cls in ev.EVENT_TYPES else fx.Effect
    ours = outcome(load_event if union is ev.Event else load_effect, data)
    generic = outcome(lambda d: converter().structure(dict(d), union), data)
    assert ours == generic
    if ours[0] == "ok":
        for name in (field.name for field in cls.__attrs_attrs__):  # type: ignore[attr-defined]
            assert type(getattr(ours[1], name)) is type(getattr(generic[1], name))
    assert data == before


@pytest.mark.parametrize(
    ("data", "handed"),
    [
        ({"type": "ModelStreamClosed", "wall_time": None}, True),  # a required field missing
        ({"type": "ModelStreamClosed", "request_id": "r1", "unexpected": 1}, True),
        ({"type": "ModelStreamClosed", "request_id": "r1"}, False),  # its default, as cattrs
    ],
)
def test_only_the_common_shape_is_read_without_cattrs(data: dict[str, Any], handed: bool) -> None:
    """A missing required field or a key that is no field is cattrs' to judge; a field left
    out takes its default, as cattrs' function gives it."""
    structure = make_structure_fn(
        ev.ModelStreamClosed, converter(), lambda _: "cattrs", tag="ModelStreamClosed"
    )
    if handed:
        assert structure(data) == "cattrs"
    else:
        assert structure(data) == converter().structure(dict(data), ev.Event)  # type: ignore[arg-type]
