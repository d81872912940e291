"""``record_builder``: a built record is the one the class would build, and classes whose
construction does more than store fields are refused when the builder is made."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from fsm_agent.core import effects as fx
from fsm_agent.core import messages as msg
from fsm_agent.core.loop_state import AutoCompactTracking, LoopState, evolved
from fsm_agent.core.record_builder import record_builder
from fsm_agent.core.step import Step, TransitionTaken
from fsm_agent.errors import DefinitionError

# Every class the core builds through a builder, with arguments leaving defaults out.
_BUILT: list[tuple[type, dict[str, Any]]] = [
    (Step, {"transitions": (), "effects": ()}),
    (TransitionTaken, {"machine": "tool", "name": "started", "source": "a", "dest": "b"}),
    (fx.Emit, {"message": msg.SystemMessage(uuid="m1", subtype="note")}),
    (fx.RunHooks, {"effect_id": "e1", "hook_event": fx.HookEvent.STOP}),
    (fx.CallModel, {"effect_id": "e2", "request_id": "r1", "model": "m", "max_output_tokens": 9}),
    (
        fx.RunToolStep,
        {"effect_id": "e3", "call_id": "c", "step": fx.ToolStep.CALL, "tool_name": "t"},
    ),
    (msg.Usage, {"output_tokens": 3, "extra": {"geo": "x"}}),
    (msg.AssistantMessage, {"uuid": "m2", "message_id": "msg", "content": ()}),
    (msg.TextBlock, {"text": "hi"}),
    (msg.ToolResultBlock, {"tool_use_id": "t1", "content": "done"}),
    (msg.UserMessage, {"uuid": "m3", "content": (msg.TextBlock(text="hi"),)}),
    (fx.AskPermission, {"effect_id": "e4", "call_id": "c", "tool_name": "t"}),
    (LoopState, {"turn_count": 2}),
]


@pytest.mark.parametrize(("cls", "arguments"), _BUILT, ids=lambda v: getattr(v, "__name__", ""))
def test_built_record_equals_the_constructed_one(cls: type, arguments: dict[str, Any]) -> None:
    """Same class, equal, frozen, and every field set (defaults included)."""
    built: Any = record_builder(cls)(**arguments)
    constructed: Any = cls(**arguments)
    assert attrs.asdict(built, recurse=False) == attrs.asdict(constructed, recurse=False)
    assert built == constructed
    assert type(built) is cls
    field = attrs.fields(cls)[0].name
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        setattr(built, field, None)


def test_factory_defaults_are_fresh_per_record() -> None:
    """A field whose default is a factory gets a new value per record, as ``__init__`` gives."""
    build = record_builder(fx.RunHooks)
    first = build(effect_id="e1", hook_event=fx.HookEvent.STOP)
    second = build(effect_id="e2", hook_event=fx.HookEvent.STOP)
    assert first.payload == {} and first.payload is not second.payload


def test_arguments_are_taken_by_the_init_names_only() -> None:
    """The builder takes keywords, as the class does, and misses no required one."""
    build = record_builder(TransitionTaken)
    with pytest.raises(TypeError):
        build("tool", "started", "a", "b")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        build(machine="tool", name="started", source="a")  # type: ignore[call-arg]


@attrs.frozen
class _Validated:
    value: int = attrs.field(validator=attrs.validators.instance_of(int))


@attrs.frozen
class _Converted:
    value: int = attrs.field(converter=int)


@attrs.frozen
class _PostInit:
    value: int

    def __attrs_post_init__(self) -> None:
        pass


@attrs.define
class _Mutable:
    value: int


@attrs.frozen(cache_hash=True)
class _CachedHash:
    value: int


@attrs.frozen(slots=False)
class _Unslotted:
    value: int


@attrs.frozen
class _SelfFactory:
    value: int
    double: int = attrs.field(default=attrs.Factory(lambda self: self.value * 2, takes_self=True))


@pytest.mark.parametrize(
    "cls",
    [_Validated, _Converted, _PostInit, _Mutable, _CachedHash, _Unslotted, _SelfFactory, dict],
)
def test_classes_that_do_more_than_store_are_refused(cls: type) -> None:
    """Validators, converters, init hooks, cached hashes, mutable or unslotted classes, a
    factory reading the record, and non-attrs classes: refused when the builder is made."""
    with pytest.raises(DefinitionError):
        record_builder(cls)


def test_evolved_state_is_what_attrs_evolve_gives() -> None:
    """``evolved`` keeps every field not changed and refuses a field the state has not."""
    state = LoopState(
        messages=(msg.SystemMessage(uuid="m1", subtype="note"),),
        auto_compact=AutoCompactTracking(compacted=True),
        turn_count=3,
        stop_hook_active=True,
    )
    changes: dict[str, Any] = {"transition": "next_turn", "turn_count": 4, "pause_turns": 1}
    assert evolved(state, **changes) == attrs.evolve(state, **changes)
    assert evolved(state) == state
    with pytest.raises(TypeError):
        evolved(state, turns=4)
