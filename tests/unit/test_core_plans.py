"""The rows as the core fires them: plans resolved once from the tables must say exactly what
the tables say (guard, record, action, final state, slot change), for every row and source."""

from __future__ import annotations

import pytest

from fsm_agent.core import agent_core as core_module
from fsm_agent.core import tool_calls
from fsm_agent.core.agent_core import _AWAITING_PHASES, INTERNAL_EVENTS, AgentCore
from fsm_agent.core.events import (
    AbortRequested,
    CollapseStaged,
    ModelStreamClosed,
    ModelStreamEvent,
    ModelStreamFailed,
)
from fsm_agent.core.tables import (
    EXECUTING_STATES,
    FINAL_STATES,
    LOOP_MACHINE,
    LOOP_ROWS,
    TOOL_MACHINE,
    TOOL_ROWS,
    Row,
    RowEvent,
)
from fsm_agent.core.tool_spec import ToolSpec
from fsm_agent.errors import DefinitionError


def _groups(rows: tuple[Row, ...]) -> dict[tuple[str, type | None], list[Row]]:
    groups: dict[tuple[str, type | None], list[Row]] = {}
    for row in rows:
        for source in row.source:
            groups.setdefault((source, row.on), []).append(row)
    return groups


def _check_firings(source: str, rows: list[Row], firings: tuple[core_module._Firing, ...]) -> None:
    assert len(firings) == len(rows)
    for row, firing in zip(rows, firings, strict=True):
        guard, (taken, trigger, action, final) = firing
        expected_guard = getattr(AgentCore, f"_guard_{row.guard}") if row.guard else None
        assert guard is expected_guard, row.name
        assert (taken.machine, taken.name, taken.source, taken.dest) == (
            "loop",
            row.name,
            source,
            row.dest,
        )
        event = LOOP_MACHINE.events[row.name]
        assert isinstance(event, RowEvent)
        assert trigger == event.move
        assert action is getattr(AgentCore, f"_on_{row.name}", None), row.name
        assert final == (row.dest if row.dest in FINAL_STATES else None), row.name


def test_every_loop_group_has_its_rows_in_table_order() -> None:
    """Each (source, event type) group, and each automatic group, fires its rows in order."""
    groups = _groups(LOOP_ROWS)
    automatic = {source: rows for (source, on), rows in groups.items() if on is None}
    assert set(core_module._AUTOMATIC_ROWS) == set(automatic)
    for source, rows in automatic.items():
        _check_firings(source, rows, core_module._AUTOMATIC_ROWS[source])
    for (source, on), rows in groups.items():
        if on is not None:
            plan = core_module._EVENT_PLANS[source, on]
            assert plan[1] is not None
            _check_firings(source, rows, plan[1])
    streaming = groups["streaming", ModelStreamEvent]
    _check_firings("streaming", streaming, core_module._STREAM_ROWS)


def test_every_legal_event_has_a_plan_and_no_other() -> None:
    """A plan exists exactly where a row or an internal handler takes the event; it checks the
    awaited effect in the waiting phases and the request of the model's answers."""
    keys = {(source, on) for (source, on) in _groups(LOOP_ROWS) if on is not None}
    assert set(core_module._EVENT_PLANS) == keys | INTERNAL_EVENTS
    for (phase, kind), (
        handler,
        rows,
        answers_effect,
        answers_request,
    ) in core_module._EVENT_PLANS.items():
        assert (handler is not None) == ((phase, kind) in INTERNAL_EVENTS)
        assert rows is not None or handler is not None
        assert answers_effect == (
            phase in _AWAITING_PHASES and kind not in (AbortRequested, CollapseStaged)
        )
        assert answers_request == (kind in (ModelStreamClosed, ModelStreamFailed))


def test_every_tool_row_moves_with_its_slot_change() -> None:
    """A tool row from each source fires its own event and action, and takes a slot exactly
    when it enters an executing state (gives one back when it leaves)."""
    pairs = {(row.name, source): row for row in TOOL_ROWS for source in row.source}
    assert set(tool_calls._TOOL_FIRINGS) == set(pairs)
    for (name, source), row in pairs.items():
        trigger, slots, action = tool_calls._TOOL_FIRINGS[name, source]
        tool_event = TOOL_MACHINE.events[name]
        assert isinstance(tool_event, RowEvent)
        assert trigger == tool_event.move
        assert slots == (row.dest in EXECUTING_STATES) - (source in EXECUTING_STATES)
        assert action is getattr(tool_calls.ToolExecutor, f"_on_{name}", None)


def test_cores_given_one_tools_tuple_share_its_tables() -> None:
    """A fresh core per run from one tuple of tools reuses that tuple's tables; another tuple,
    or a list (which may change), gets its own, and a clash of names is refused every time."""

    tools = (ToolSpec(name="Read", unbounded_results=True), ToolSpec(name="Bash", is_shell=True))
    first, second = AgentCore(tools=tools), AgentCore(tools=tools)
    assert first._specs is second._specs
    assert first.tools is tools
    assert first._unbounded_tools == {"Read"} and "Bash" in first._compactable_tools
    listed = AgentCore(tools=list(tools))
    assert listed._specs is not first._specs and listed._specs == first._specs
    assert listed.tools == tools
    other = AgentCore(tools=(ToolSpec(name="Read"),))
    assert other._unbounded_tools == frozenset() and "Bash" not in other._specs
    clash = (ToolSpec(name="Read"), ToolSpec(name="Cat", aliases=("Read",)))
    for _ in range(2):
        with pytest.raises(DefinitionError, match="Read"):
            AgentCore(tools=clash)
