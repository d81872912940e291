"""Replay accepts an event line when the transitions and effects it carries are, byte for
byte, those the writer writes for the step the core produced (issue 10): the check agrees
with the writer, and any difference in the step is seen."""

from __future__ import annotations

import io
from pathlib import Path

import attrs
import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fsm_agent.core import effects as fx
from fsm_agent.core import events as ev
from fsm_agent.core.agent_core import AgentCore
from fsm_agent.core.config import LoopConfig
from fsm_agent.core.step import Step, TransitionTaken
from fsm_agent.core.tool_spec import ToolSpec
from fsm_agent.trace import records, step_bytes
from fsm_agent.trace.reader import read_trace
from fsm_agent.trace.step_bytes import carries
from fsm_agent.trace.writer import TraceWriter

ROOT = Path(__file__).resolve().parents[2]


def _written(event: ev.Event, step: Step) -> bytes:
    """The line the writer writes for ``event`` and what the core made of it."""
    buffer = io.BytesIO()
    writer = TraceWriter(buffer, config=LoopConfig(), tools=(ToolSpec(name="Read"),))
    start = len(buffer.getvalue())
    writer.write_event(event, step)
    return buffer.getvalue()[start:-1]


def _carried(line: bytes, step: Step) -> bool:
    return carries(line, orjson.loads(line), step)


def test_golden_lines_carry_what_a_fresh_core_makes_of_their_events() -> None:
    """Every event line of the golden corpus carries what a fresh core makes of its event,
    twice over (the second time from the renderings kept of the first)."""
    checked = 0
    for _ in range(2):
        for path in sorted((ROOT / "traces").glob("*.jsonl")):
            trace = read_trace(path, allow_truncated=True)
            core = AgentCore(config=trace.header.config, tools=trace.header.tools)
            lines = path.read_bytes().splitlines()
            for record in trace.records:
                if record.event is None:
                    continue
                try:
                    step = core.feed(record.event)
                except Exception:  # a trace that records a core failure stops there
                    break
                assert _carried(lines[record.line - 1], step)
                checked += step.transitions != () or step.effects != ()
    assert checked > 600


texts = st.text(max_size=6) | st.sampled_from(["\ud800", "a\udfffb"])  # lone surrogates
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)  # past 64 bits: written as strings
    | st.floats(allow_nan=False, allow_infinity=False)
    | texts,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["a", "b", "\ud800"]), inner, max_size=3)
    ),
    max_leaves=10,
)
transitions = st.builds(
    TransitionTaken,
    machine=st.sampled_from(["loop", "tool"]),
    name=texts,
    source=texts,
    dest=texts,
    call_id=st.none() | texts,
)
effects = st.builds(
    fx.RunHooks,
    effect_id=texts,
    hook_event=st.sampled_from(fx.HookEvent),
    payload=st.dictionaries(st.sampled_from(["x", "y", "\udc00"]), json_values, max_size=3),
)
steps = st.builds(
    Step,
    transitions=st.lists(transitions, max_size=4).map(tuple),
    effects=st.lists(effects, max_size=3).map(tuple),
)


@given(step=steps, reason=texts)
def test_the_line_the_writer_writes_carries_the_step(step: Step, reason: str) -> None:
    """Hostile strings and numbers (rewritten by the writer) in transitions and effects: the
    writer's line is seen to carry exactly the step."""
    assert _carried(_written(ev.AbortRequested(reason=reason), step), step)


@given(step=steps, other=steps)
def test_a_line_carrying_another_step_is_seen(step: Step, other: Step) -> None:
    """A line written for one step is not taken to carry another (unless they write alike)."""
    line = _written(ev.AbortRequested(reason="user"), step)
    alike = _written(ev.AbortRequested(reason="user"), other) == line
    assert _carried(line, other) == alike


@given(step=steps.filter(lambda s: bool(s.transitions)), name=texts)
def test_one_renamed_transition_is_seen(step: Step, name: str) -> None:
    """A step differing from the written one in one transition's name is not carried."""
    last = step.transitions[-1]
    renamed = attrs.evolve(
        step, transitions=(*step.transitions[:-1], attrs.evolve(last, name=last.name + name + "x"))
    )
    assert not _carried(_written(ev.AbortRequested(reason="user"), step), renamed)


def test_transitions_render_alike_whether_kept_or_not(monkeypatch: pytest.MonkeyPatch) -> None:
    """A loop row is rendered once and then found by identity; a tool call's row is never
    kept; a memo that fills up is emptied; every rendering is the record's own bytes."""
    monkeypatch.setattr(step_bytes, "_MEMO_LIMIT", 3)
    step_bytes._rendered.clear()
    step_bytes._kept.clear()
    step_bytes._arrays.clear()
    rows = [TransitionTaken(machine="loop", name=f"n{i}", source="a", dest="b") for i in range(5)]
    call = TransitionTaken(machine="tool", name="n", source="a", dest="b", call_id="toolu_1")
    for _ in range(2):
        for taken in (*rows, call):
            step = Step(transitions=(taken,))
            expected = records.dumps({"transitions": [records.step_transition(taken)]})[1:-1]
            assert step_bytes.transitions_field(step) == expected
        both = Step(transitions=(rows[0], call))
        fields = [records.step_transition(t) for t in both.transitions]
        assert step_bytes.transitions_field(both) == records.dumps({"transitions": fields})[1:-1]
        run = Step(transitions=(rows[3], rows[4], rows[3]))
        fields = [records.step_transition(t) for t in run.transitions]
        assert step_bytes.transitions_field(run) == records.dumps({"transitions": fields})[1:-1]
    # A run of rows is kept only while each of its rows is (so no id is another object's).
    kept = {id(taken) for taken in step_bytes._kept}
    assert all(set(key) <= kept for key in step_bytes._arrays)
    assert len(step_bytes._kept) <= 3
    assert call not in step_bytes._kept
    assert len(step_bytes._rendered) == len(step_bytes._kept)
