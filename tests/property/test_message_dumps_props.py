"""A turn's starting transcript written from kept bytes equals the generic record (issue 10)."""

from __future__ import annotations

import io
import tempfile
from pathlib import Path

import attrs
from hypothesis import given
from hypothesis import strategies as st

from fsm_agent.core import effects as fx
from fsm_agent.core import events as ev
from fsm_agent.core.config import LoopConfig
from fsm_agent.core.messages import Message, TextBlock, ToolUseBlock, UserMessage
from fsm_agent.core.step import Step, TransitionTaken
from fsm_agent.testing.transcripts import loop_transcripts, transcripts
from fsm_agent.trace import records
from fsm_agent.trace.message_dumps import TranscriptJson
from fsm_agent.trace.reader import read_trace
from fsm_agent.trace.writer import TraceWriter

SECRET = "hunter-two-secret"

_STEPS = st.sampled_from(
    [
        None,
        Step(),
        Step(
            transitions=(
                TransitionTaken(
                    machine="loop", name="run_started", source="idle", dest="session_start"
                ),
            )
        ),
        Step(
            transitions=(
                TransitionTaken(
                    machine="loop", name="run_started", source="idle", dest="session_start"
                ),
            ),
            effects=(
                fx.RunHooks(
                    effect_id="e1", hook_event=fx.HookEvent.SESSION_START, payload={"token": SECRET}
                ),
            ),
        ),
    ]
)

_ODD = st.sampled_from(
    [
        UserMessage(uuid="x:leak", content=(TextBlock(text=f"the key is {SECRET}"),)),
        UserMessage(uuid="x:shaped", content=(TextBlock(text="sk-ant-api03-abcdefghijkl"),)),
        UserMessage(uuid="x:surrogate", content=(TextBlock(text="caf\udce9"),)),
        UserMessage(
            uuid="x:keyed",
            content=(ToolUseBlock(id="toolu_x", name="Login", input={"token": "t0p"}),),
        ),
    ]
)


@st.composite
def _turns(draw: st.DrawFn) -> list[tuple[Message, ...]]:
    """The transcripts a conversation's turns start from: mostly the last one plus what the
    turn added (the same objects), sometimes equal copies, an edit or an odd message."""
    messages: list[Message] = draw(st.one_of(transcripts(max_size=12), loop_transcripts()))
    turns: list[tuple[Message, ...]] = []
    start = 0
    for _ in range(draw(st.integers(1, 5))):
        start = draw(st.integers(start, len(messages)))
        turn = list(messages[:start])
        change = draw(st.sampled_from(["grow", "grow", "copy", "edit", "odd"]))
        if change == "copy" and turn:
            turn = [attrs.evolve(message) for message in turn]  # equal, not the same
        elif change == "edit" and turn:
            turn[draw(st.integers(0, len(turn) - 1))] = draw(_ODD)
        elif change == "odd":
            turn.append(draw(_ODD))
        turns.append(tuple(turn))
    return turns


def _writer(target: io.BytesIO | Path, transcript: TranscriptJson | None = None) -> TraceWriter:
    return TraceWriter(
        target,
        config=LoopConfig(),
        table_digest="d",
        secrets=[SECRET],
        transcript=transcript,
    )


@given(_turns(), st.booleans(), _STEPS)
def test_kept_transcript_bytes_equal_the_generic_record(
    turns: list[tuple[Message, ...]], same_writer: bool, step: Step | None
) -> None:
    """Every TurnStarted line of a generated conversation (with what the core made of it, or
    alone), written from the bytes kept over its turns, is byte for byte the record the
    generic path writes."""
    kept, cached, generic = TranscriptJson(), io.BytesIO(), io.BytesIO()
    shared_fast, shared_slow = _writer(cached, kept), _writer(generic)
    for messages in turns:
        event = ev.TurnStarted(messages=messages, wall_time=1.5)
        fields = records.event_fields(event)
        if step is not None:
            records.add_step(fields, step)
        if same_writer:
            shared_fast.write_event(event, step)
            shared_slow.write_record(fields)
            continue
        with _writer(cached, kept) as fast:
            fast.write_event(event, step)
        with _writer(generic) as slow:
            slow.write_record(fields)
    assert [line for line in cached.getvalue().splitlines() if b'"event"' in line] == [
        line for line in generic.getvalue().splitlines() if b'"event"' in line
    ]
    assert SECRET.encode() not in cached.getvalue()


@given(_turns(), st.integers(1, 4), _STEPS)
def test_a_turn_that_begins_in_another_trace_reads_as_the_whole_record(
    turns: list[tuple[Message, ...]], full_every: int, step: Step | None
) -> None:
    """A generated conversation's turns written with a transcript kept over them, whole only
    every ``full_every`` turns (the others begin in the trace before), read back record for
    record as the same turns written whole, and no secret reaches a file."""
    kept = TranscriptJson(full_every=full_every)
    with tempfile.TemporaryDirectory() as folder:
        linked, whole = Path(folder, "linked"), Path(folder, "whole")
        linked.mkdir()
        whole.mkdir()
        for number, messages in enumerate(turns):
            event = ev.TurnStarted(messages=messages, wall_time=1.5)
            for path, transcript in ((linked, kept), (whole, None)):
                with _writer(path / f"turn-{number}.jsonl", transcript) as writer:
                    writer.write_event(event, step)
        for number in range(len(turns)):
            name = f"turn-{number}.jsonl"
            assert _records(linked / name) == _records(whole / name)
            assert SECRET.encode() not in (linked / name).read_bytes()


def _records(path: Path) -> list[dict[str, object]]:
    return [record.data for record in read_trace(path).records]
