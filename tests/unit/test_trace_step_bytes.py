"""A produced step's line built from pieces is byte for byte the line the writer serializes
(replay accepts a recorded step line by comparing those bytes, issue 10)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fsm_agent.core import effects as fx
from fsm_agent.core.agent_core import AgentCore
from fsm_agent.core.step import Step, TransitionTaken
from fsm_agent.trace import records
from fsm_agent.trace.reader import read_trace
from fsm_agent.trace.step_bytes import step_line

ROOT = Path(__file__).resolve().parents[2]


def _canonical(step: Step, seq: int) -> bytes:
    return records.dumps({**records.step_record(step), "seq": seq})


def _golden_steps() -> list[Step]:
    """Every non-empty step the golden traces' events make a fresh core produce."""
    steps: list[Step] = []
    for path in sorted((ROOT / "traces").glob("*.jsonl")):
        trace = read_trace(path, allow_truncated=True)
        core = AgentCore(config=trace.header.config, tools=trace.header.tools)
        for record in trace.records:
            if record.event is None:
                continue
            try:
                step = core.feed(record.event)
            except Exception:  # a trace that records a core failure stops there
                break
            if step.transitions or step.effects:
                steps.append(step)
    return steps


def test_golden_steps_serialize_as_the_writer_does() -> None:
    """Every step of the golden corpus, loop and tool transitions alike, twice over (the
    second time from what was kept of the first), gives the writer's bytes."""
    steps = _golden_steps()
    assert len(steps) > 300
    for _ in range(2):
        for seq, step in enumerate(steps, start=1):
            assert step_line(step, seq) == _canonical(step, seq)


texts = st.text(max_size=6) | st.sampled_from(["\ud800", "a\udfffb"])  # lone surrogates
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)  # past 64 bits: written as strings
    | st.floats(allow_nan=False, allow_infinity=False)
    | texts,  # lone surrogates: rewritten
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
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
    payload=st.dictionaries(texts, json_values, max_size=3),
)


@given(
    taken=st.lists(transitions, max_size=4),
    emitted=st.lists(effects, max_size=3),
    seq=st.integers(1, 2**40),
)
def test_any_step_serializes_as_the_writer_does(
    taken: list[TransitionTaken], emitted: list[fx.Effect], seq: int
) -> None:
    """Hostile strings and numbers in transitions and effects: the same bytes as the writer's
    serialization, rewritten values included."""
    step = Step(transitions=tuple(taken), effects=tuple(emitted))
    assert step_line(step, seq) == _canonical(step, seq)


def test_a_value_that_is_not_json_is_refused_alike() -> None:
    """An object that was never unstructured fails as the writer's serialization fails."""
    step = Step(
        effects=(
            fx.RunHooks(effect_id="e1", hook_event=fx.HookEvent.STOP, payload={"x": object()}),
        )
    )
    with pytest.raises(orjson.JSONEncodeError) as ours:
        step_line(step, 1)
    with pytest.raises(orjson.JSONEncodeError) as writers:
        _canonical(step, 1)
    assert str(ours.value) == str(writers.value)
