"""A session's turns between whole transcripts begin in the trace before them
(``transcript_from``): read, replayed and refused as a user would meet them."""

from __future__ import annotations

import asyncio
import io
import os
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest

from fsm_agent.errors import TraceFormatError, TranscriptBaseError, UsageError
from fsm_agent.runtime.agent import Agent
from fsm_agent.testing.scenario import ScriptedModel, parse_scenario
from fsm_agent.trace.conversation import conversation_turns
from fsm_agent.trace.reader import read_trace
from fsm_agent.trace.records import TRANSCRIPT_FROM
from fsm_agent.trace.replay import fork, replay

SECRET = "hunter-two-secret"


def talk(folder: Path, turns: int, *, full_every: int | None) -> list[Path]:
    """A conversation of ``turns`` short turns traced to ``folder``; its traces, in order."""
    steps = [{"content": [{"text": f"answer {n}"}]} for n in range(turns)]
    agent = Agent(
        model=ScriptedModel(parse_scenario({"steps": steps})),
        cwd=folder,
        trace=f"{folder}/",
        store=False,
        secrets=[SECRET],
        clock=lambda: 0.0,
    )
    session = agent.session(changed_files=False, full_transcript_every=full_every)

    async def ask_all() -> Path:
        path = None
        for n in range(turns):
            path = (await session.ask(f"question {n} ({SECRET})")).trace_path
        assert path is not None
        return path

    return conversation_turns(asyncio.run(ask_all()))


def turn_record(path: Path) -> dict[str, Any]:
    """The raw record of a trace's TurnStarted event (line 2)."""
    record: dict[str, Any] = orjson.loads(path.read_bytes().splitlines()[1])
    return record


def started(path: Path) -> list[Any]:
    """The messages a turn's trace starts from, as read."""
    first = read_trace(path).of_kind("event")[0].data["event"]
    assert first["type"] == "TurnStarted"
    messages: list[Any] = first["messages"]
    return messages


@pytest.fixture
def linked(tmp_path: Path) -> list[Path]:
    folder = tmp_path / "linked"
    folder.mkdir()
    return talk(folder, 7, full_every=3)


def test_turns_between_whole_transcripts_hold_what_they_add(linked: list[Path]) -> None:
    """Turns 1, 4 and 7 hold their whole transcript; each other turn names the trace before
    it and holds only the answer and the prompt its turn added."""
    for number, path in enumerate(linked, start=1):
        record = turn_record(path)
        base = record.get(TRANSCRIPT_FROM)
        if number % 3 == 1:
            assert base is None
            assert len(record["event"]["messages"]) == 2 * number - 1
        else:
            assert base is not None
            assert base["trace"] == linked[number - 2].name
            assert base["messages"] == 2 * number - 3
            assert len(record["event"]["messages"]) == 2
        assert SECRET.encode() not in path.read_bytes()


def test_a_linked_turn_reads_and_replays_as_a_whole_one(linked: list[Path], tmp_path: Path) -> None:
    """Read, each turn gives the records the same conversation written whole gives; and each
    replays."""
    folder = tmp_path / "whole"
    folder.mkdir()
    whole = talk(folder, 7, full_every=1)
    assert all(TRANSCRIPT_FROM not in turn_record(path) for path in whole)
    for mine, theirs in zip(linked, whole, strict=True):
        assert [r.data for r in read_trace(mine).records] == [
            r.data for r in read_trace(theirs).records
        ]
        assert replay(mine).terminal == "completed"
    assert len(started(linked[-1])) == 13


def test_a_missing_turn_is_named(linked: list[Path]) -> None:
    """Reading a turn whose base was deleted names both files and says how to keep them; the
    turns that hold their transcript whole still read."""
    linked[4].unlink()
    with pytest.raises(TranscriptBaseError) as caught:
        read_trace(linked[5])
    assert caught.value.base == linked[4].name
    assert caught.value.path == str(linked[5])
    assert "is not in the folder" in str(caught.value)
    assert "full_transcript_every=1" in str(caught.value)
    with pytest.raises(TranscriptBaseError):
        replay(linked[5])
    assert len(started(linked[6])) == 13  # turn 7 is whole


def test_a_turn_copied_alone_says_where_its_transcript_is(
    linked: list[Path], tmp_path: Path
) -> None:
    """A turn copied away from its conversation, or read from a stream, is refused with the
    trace it needs named."""
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(linked[2], alone)
    with pytest.raises(TranscriptBaseError, match="is not in the folder"):
        read_trace(alone / linked[2].name)
    with pytest.raises(TranscriptBaseError, match="read this trace from its file"):
        read_trace(io.BytesIO(linked[2].read_bytes()))


def test_an_edited_base_is_caught_by_its_digest(linked: list[Path]) -> None:
    """A base whose messages were changed (same length, still valid) no longer matches the
    digest the later turn recorded; so does every turn that goes through it."""
    base = linked[1]
    data = base.read_bytes()
    assert b"answer 0" in data
    base.write_bytes(data.replace(b"answer 0", b"answer X"))
    with pytest.raises(TranscriptBaseError, match="digest differs"):
        read_trace(linked[2])


def test_a_base_with_fewer_messages_is_refused(linked: list[Path]) -> None:
    """A base replaced by another conversation's turn (a valid trace, other length)."""
    shutil.copy(linked[0], linked[1])
    with pytest.raises(
        TranscriptBaseError, match="holds 1 message, and this turn was written after 3"
    ):
        read_trace(linked[2])


@pytest.mark.parametrize(
    ("reference", "path"),
    [
        ({"messages": 1, "sha256": "0" * 64, "trace": "../outside.jsonl"}, ".trace"),
        ({"messages": 1, "sha256": "0" * 64, "trace": "/etc/passwd"}, ".trace"),
        ({"messages": 1, "sha256": "0" * 64, "trace": ".."}, ".trace"),
        ({"messages": -1, "sha256": "0" * 64, "trace": "a.jsonl"}, ".messages"),
        ({"messages": True, "sha256": "0" * 64, "trace": "a.jsonl"}, ".messages"),
        ({"messages": 1, "sha256": "ZZ", "trace": "a.jsonl"}, ".sha256"),
        ({"messages": 1, "trace": "a.jsonl"}, ""),
        ("a.jsonl", ""),
    ],
)
def test_a_hand_made_reference_is_a_format_error(
    linked: list[Path], reference: Any, path: str
) -> None:
    """A reference that is not a file name in the same folder (a trace never sends its reader
    out of its folder), or not well formed, names the line and field."""
    target = linked[1]
    lines = target.read_bytes().splitlines()
    record = orjson.loads(lines[1])
    record[TRANSCRIPT_FROM] = reference
    lines[1] = orjson.dumps(record, option=orjson.OPT_SORT_KEYS)
    target.write_bytes(b"\n".join(lines) + b"\n")
    with pytest.raises(TraceFormatError) as caught:
        read_trace(target)
    assert caught.value.line == 2
    assert caught.value.path == f"$.{TRANSCRIPT_FROM}{path}"


def test_a_reference_on_another_event_is_a_format_error(linked: list[Path]) -> None:
    target = linked[1]
    lines = target.read_bytes().splitlines()
    record = orjson.loads(lines[2])
    record[TRANSCRIPT_FROM] = turn_record(target)[TRANSCRIPT_FROM]
    lines[2] = orjson.dumps(record, option=orjson.OPT_SORT_KEYS)
    target.write_bytes(b"\n".join(lines) + b"\n")
    with pytest.raises(TraceFormatError, match="only a TurnStarted"):
        read_trace(target)


def test_references_in_a_loop_are_refused(linked: list[Path]) -> None:
    """Two turns made to name each other end in an error, not a hang."""
    first, second = linked[1], linked[2]
    lines = first.read_bytes().splitlines()
    record = orjson.loads(lines[1])
    record[TRANSCRIPT_FROM] = {**record[TRANSCRIPT_FROM], "trace": second.name}
    lines[1] = orjson.dumps(record, option=orjson.OPT_SORT_KEYS)
    first.write_bytes(b"\n".join(lines) + b"\n")
    with pytest.raises(TranscriptBaseError, match="leads back to itself"):
        read_trace(second)


def test_a_base_that_is_not_a_trace_is_named(linked: list[Path]) -> None:
    linked[1].write_text("notes\nmore notes\n")
    with pytest.raises(TranscriptBaseError, match="is not a trace that can be read"):
        read_trace(linked[2])
    linked[1].write_text("")
    with pytest.raises(TranscriptBaseError, match="holds no record of a turn's start"):
        read_trace(linked[2])


def test_a_session_refuses_a_nonsense_interval(tmp_path: Path) -> None:
    agent = Agent(model=ScriptedModel(parse_scenario({"steps": []})), cwd=tmp_path, trace=False)
    for wrong in (0, -3, 2.5, True):
        with pytest.raises(UsageError, match="full_transcript_every"):
            agent.session(full_transcript_every=wrong)  # type: ignore[arg-type]


def test_resume_from_a_linked_turn_goes_on(linked: list[Path], tmp_path: Path) -> None:
    """A conversation resumed from a turn that begins in another trace starts from the whole
    transcript, and its first new turn is written whole."""
    agent = Agent(
        model=ScriptedModel(parse_scenario({"steps": [{"content": [{"text": "again"}]}]})),
        cwd=tmp_path,
        trace=f"{linked[0].parent}/",
        store=False,
    )
    session = agent.session(resume=linked[5], changed_files=False)
    assert len(session.messages) == 12
    path = asyncio.run(session.ask("one more")).trace_path
    assert path is not None
    assert TRANSCRIPT_FROM not in turn_record(path)
    assert len(started(path)) == 13


def test_a_fork_of_a_linked_turn_reads_alone(linked: list[Path], tmp_path: Path) -> None:
    """The prefix a fork copies holds the whole transcript: the new trace needs no other."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    point = fork(linked[3], 1)
    point.writer_for(elsewhere / "fork.jsonl").close()
    assert TRANSCRIPT_FROM not in turn_record(elsewhere / "fork.jsonl")
    assert started(elsewhere / "fork.jsonl") == started(linked[3])
    assert len(started(linked[3])) == 7


def test_a_base_that_is_a_pipe_is_refused_not_waited_for(linked: list[Path]) -> None:
    """A folder handed over with a named pipe where a turn's base should be: reading the later
    turn fails at once (opening the pipe would wait for a writer forever)."""
    linked[1].unlink()
    os.mkfifo(linked[1])
    with pytest.raises(TranscriptBaseError, match="is not a regular file"):
        read_trace(linked[2])


def test_a_turn_after_its_base_was_deleted_writes_its_whole_transcript(tmp_path: Path) -> None:
    """A trace folder emptied between turns (to free space, say): the next turn does not
    begin in a trace that is gone."""
    steps = [{"content": [{"text": f"answer {n}"}]} for n in range(3)]
    agent = Agent(
        model=ScriptedModel(parse_scenario({"steps": steps})),
        cwd=tmp_path,
        trace=f"{tmp_path}/t/",
        store=False,
    )
    session = agent.session(changed_files=False, full_transcript_every=8)

    async def ask(text: str) -> Path:
        path = (await session.ask(text)).trace_path
        assert path is not None
        return path

    first = asyncio.run(ask("one"))
    first.unlink()
    second = asyncio.run(ask("two"))
    assert TRANSCRIPT_FROM not in turn_record(second)
    assert len(started(second)) == 3
    third = asyncio.run(ask("three"))
    assert turn_record(third)[TRANSCRIPT_FROM]["trace"] == second.name
