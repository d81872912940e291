"""The table machines' events (``RowEvent``): a trigger moves the model exactly as ``transitions``
would, and anything the plain move cannot honour takes the general path."""

from __future__ import annotations

from typing import Any

import pytest
from transitions import Machine, MachineError

from fsm_agent.core.tables import LOOP_MACHINE, LOOP_ROWS, TOOL_MACHINE, TOOL_ROWS, Row, RowEvent


class _Model:
    def __init__(self, state: str) -> None:
        self.state = state


class _RowMachine(Machine):
    event_cls = RowEvent


def _sealed(machine: Machine) -> Machine:
    for event in machine.events.values():
        assert isinstance(event, RowEvent)
        event.seal()
    return machine


def _small(**options: Any) -> Machine:
    return _sealed(
        _RowMachine(
            model=None,
            states=["a", "b", "c"],
            transitions=[{"trigger": "go", "source": "a", "dest": "b"}],
            initial="a",
            auto_transitions=False,
            **options,
        )
    )


@pytest.mark.parametrize(
    ("machine", "rows"), [(LOOP_MACHINE, LOOP_ROWS), (TOOL_MACHINE, TOOL_ROWS)]
)
def test_every_row_moves_its_source_to_its_dest(machine: Machine, rows: tuple[Row, ...]) -> None:
    """Triggering a row's event from each of its sources lands in the row's dest."""
    for row in rows:
        for source in row.source:
            model = _Model(source)
            assert machine.events[row.name].trigger(model) is True
            assert model.state == row.dest


@pytest.mark.parametrize(
    ("machine", "rows"), [(LOOP_MACHINE, LOOP_ROWS), (TOOL_MACHINE, TOOL_ROWS)]
)
def test_move_is_a_trigger_without_arguments(machine: Machine, rows: tuple[Row, ...]) -> None:
    """``move`` lands where ``trigger`` lands, from every source of every row."""
    for row in rows:
        event = machine.events[row.name]
        assert isinstance(event, RowEvent)
        for source in row.source:
            moved, triggered = _Model(source), _Model(source)
            assert event.move(moved) is event.trigger(triggered) is True
            assert moved.state == triggered.state == row.dest


def test_move_takes_the_general_path_where_trigger_does() -> None:
    """Without a row from the state, or with callbacks on the machine, ``move`` does what
    ``trigger`` does: refuses, or runs the callbacks."""
    model = _Model("c")
    event = _small().events["go"]
    assert isinstance(event, RowEvent)
    with pytest.raises(MachineError, match="Can't trigger event go from state c"):
        event.move(model)
    seen: list[str] = []
    watched = _small(after_state_change=[lambda: seen.append("after")]).events["go"]
    assert isinstance(watched, RowEvent)
    model = _Model("a")
    assert watched.move(model) is True
    assert (model.state, seen) == ("b", ["after"])


def test_a_trigger_from_a_state_without_a_row_raises_machine_error() -> None:
    """A row fired from a state it does not leave is refused as ``transitions`` refuses it."""
    model = _Model("c")
    with pytest.raises(MachineError, match="Can't trigger event go from state c"):
        _small().events["go"].trigger(model)
    assert model.state == "c"


def test_machine_callbacks_still_run() -> None:
    """A machine with callbacks keeps them: its events take the general path."""
    seen: list[str] = []
    machine = _small(after_state_change=[lambda: seen.append("after")])
    model = _Model("a")
    machine.events["go"].trigger(model)
    assert (model.state, seen) == ("b", ["after"])


def test_conditions_still_hold_back_a_move() -> None:
    """A row given a condition is checked: a failing condition leaves the state alone."""
    machine = _RowMachine(
        model=None,
        states=["a", "b"],
        transitions=[{"trigger": "go", "source": "a", "dest": "b", "conditions": lambda: False}],
        initial="a",
        auto_transitions=False,
    )
    model = _Model("a")
    assert _sealed(machine).events["go"].trigger(model) is False
    assert model.state == "a"


def test_state_callbacks_still_run() -> None:
    """Entering a state with an ``on_enter`` callback runs it, as ``transitions`` does."""
    seen: list[str] = []
    machine = _RowMachine(
        model=None,
        states=["a", {"name": "b", "on_enter": [lambda: seen.append("entered")]}],
        transitions=[{"trigger": "go", "source": "a", "dest": "b"}],
        initial="a",
        auto_transitions=False,
    )
    model = _Model("a")
    _sealed(machine).events["go"].trigger(model)
    assert (model.state, seen) == ("b", ["entered"])


def test_trigger_arguments_reach_callbacks() -> None:
    """Arguments given to a trigger are passed on to callbacks, as ``transitions`` does."""
    seen: list[object] = []
    machine = _RowMachine(
        model=None,
        states=["a", "b"],
        transitions=[{"trigger": "go", "source": "a", "dest": "b", "after": seen.append}],
        initial="a",
        auto_transitions=False,
    )
    model = _Model("a")
    _sealed(machine).events["go"].trigger(model, 42)
    assert (model.state, seen) == ("b", [42])
