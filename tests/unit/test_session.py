"""Sessions: many user turns, messages queued mid-run, changed files between turns."""

from __future__ import annotations

import asyncio
import gc
import os
import sys
import threading
import weakref
from pathlib import Path
from typing import Any

import orjson
import pytest

from fsm_agent.core import request_history
from fsm_agent.core.config import LoopConfig
from fsm_agent.core.messages import (
    AttachmentKind,
    AttachmentMessage,
    ToolResultBlock,
    UserMessage,
    text_of,
)
from fsm_agent.errors import UsageError
from fsm_agent.runtime import session as session_module
from fsm_agent.runtime.agent import Agent
from fsm_agent.runtime.attachments import MessageQueue
from fsm_agent.runtime.session import Session
from fsm_agent.runtime.tool import tool
from fsm_agent.testing.scenario import ScriptedModel, parse_scenario
from fsm_agent.toolbox import default_tools
from fsm_agent.trace import message_dumps
from fsm_agent.trace.conversation import conversation_turns
from fsm_agent.trace.message_dumps import TranscriptJson
from fsm_agent.trace.reader import read_trace
from fsm_agent.trace.replay import replay


def scripted(*steps: dict[str, Any]) -> ScriptedModel:
    return ScriptedModel(parse_scenario({"steps": list(steps)}))


def calls(name: str, **arguments: Any) -> dict[str, Any]:
    return {"content": [{"tool_use": {"name": name, "input": arguments}}]}


def says(text: str) -> dict[str, Any]:
    return {"content": [{"text": text}]}


def events_of(trace: Path, kind: str) -> list[dict[str, Any]]:
    return [
        record.data["event"]
        for record in read_trace(trace).of_kind("event")
        if record.data["event"]["type"] == kind
    ]


def three_turns(tmp_path: Path) -> tuple[Session, list[Any]]:
    """A conversation: a message queued while a blocking tool works (it lands at the next
    attachment phase), then one that interrupts a cancellable tool and becomes turn 3."""
    holder: list[Session] = []

    @tool(name="Survey", description="A slow survey.", read_only=True)
    async def survey() -> str:
        holder[0].send("also count the tests")
        return "12 modules"

    @tool(name="Watch", description="Watch forever.", read_only=True, interrupt_cancels=True)
    async def watch() -> str:
        holder[0].send("stop watching, summarise instead")
        await asyncio.Event().wait()
        return "never"

    model = scripted(
        calls("Survey"),
        says("12 modules and I will count tests."),
        calls("Watch"),
        says("Summary: 12 modules."),
    )
    agent = Agent(model=model, tools=[survey, watch], cwd=tmp_path, trace=f"{tmp_path}/traces/")
    session = agent.session()
    holder.append(session)

    async def talk() -> list[Any]:
        async with session:
            first = await session.ask("survey the code")
            second = await session.ask("now watch it")
            third = await session.ask()  # the queued message is the prompt
        return [first, second, third]

    return session, asyncio.run(talk())


def test_three_turn_conversation_replays_identically(tmp_path: Path) -> None:
    """Every turn's trace of a conversation with a queued and an interrupting message replays."""
    _, results = three_turns(tmp_path)
    assert [r.terminal for r in results] == ["completed", "aborted_tools", "completed"]
    for result in results:
        assert replay(result.trace_path).terminal == result.terminal


def test_queued_message_lands_after_the_tool_result(tmp_path: Path) -> None:
    """A message sent while a blocking tool runs is drained at the attachment phase (S7)."""
    _, results = three_turns(tmp_path)
    ready = events_of(results[0].trace_path, "AttachmentsReady")
    assert any("also count the tests" in m.get("text", "") for m in ready[0]["messages"])
    transcript = results[0].messages
    queued = next(
        i
        for i, m in enumerate(transcript)
        if isinstance(m, AttachmentMessage) and m.kind is AttachmentKind.QUEUED_COMMAND
    )
    before = transcript[queued - 1]
    assert isinstance(before, UserMessage)
    assert isinstance(before.content[0], ToolResultBlock)


def test_queued_message_interrupts_a_cancellable_tool(tmp_path: Path) -> None:
    """A message sent while a cancellable tool runs aborts it with reason ``interrupt``."""
    _, results = three_turns(tmp_path)
    aborts = events_of(results[1].trace_path, "AbortRequested")
    assert [a["reason"] for a in aborts] == ["interrupt"]
    assert "[Request interrupted" not in " ".join(text_of(m) for m in results[1].messages)
    prompt = [m for m in results[2].messages if isinstance(m, UserMessage)][-1]
    assert text_of(prompt) == "stop watching, summarise instead"


def test_turns_link_to_their_session_and_previous_turn(tmp_path: Path) -> None:
    """Each turn's header names the session, its number and the trace before it."""
    session, results = three_turns(tmp_path)
    metas = [read_trace(r.trace_path).header.meta for r in results]
    assert [m["turn"] for m in metas] == [1, 2, 3]
    assert {m["session"] for m in metas} == {session.id}
    assert metas[0]["previous"] is None
    assert metas[2]["previous"] == results[1].trace_path.name


def test_each_turn_starts_from_the_previous_transcript(tmp_path: Path) -> None:
    """The third turn's transcript holds the first turn's prompt and answer."""
    _, results = three_turns(tmp_path)
    texts = [text_of(m) for m in results[2].messages]
    assert "survey the code" in texts
    assert "12 modules and I will count tests." in texts
    uuids = [m.uuid for m in results[2].messages]
    assert len(uuids) == len(set(uuids))


def test_file_changed_between_turns_is_reported_once_before_the_prompt(tmp_path: Path) -> None:
    """A file read in turn 1 and edited on disk is reported once, right before turn 2's prompt."""
    (tmp_path / "a.txt").write_text("hello\n", encoding="utf-8")
    model = scripted(
        calls("Read", file_path="a.txt"),
        says("It says hello."),
        says("Noted."),
        says("Still noted."),
    )
    agent = Agent(model=model, tools=default_tools(), cwd=tmp_path, trace=False)

    async def talk() -> list[Any]:
        session = agent.session()
        first = await session.ask("read a.txt")
        (tmp_path / "a.txt").write_text("hello\nworld\n", encoding="utf-8")
        return [first, await session.ask("anything new?"), await session.ask("and now?")]

    results = asyncio.run(talk())
    reports = [
        m
        for m in results[2].messages
        if isinstance(m, AttachmentMessage) and m.kind is AttachmentKind.FILE
    ]
    assert len(reports) == 1
    assert "+1 -0 lines" in reports[0].text and "+world" in reports[0].text
    # In the request, the reminder opens the user turn that carries the new prompt.
    request = model.requests[2].messages
    last = request[-1]
    assert last["role"] == "user"
    assert "<system-reminder>" in last["content"][0]["text"]
    assert last["content"][-1]["text"] == "anything new?"


def test_file_changes_are_off_when_asked(tmp_path: Path) -> None:
    """``session(changed_files=False)`` reports nothing about edited files."""
    (tmp_path / "a.txt").write_text("hello\n", encoding="utf-8")
    model = scripted(calls("Read", file_path="a.txt"), says("hello."), says("ok."))
    agent = Agent(model=model, tools=default_tools(), cwd=tmp_path, trace=False)

    async def talk() -> Any:
        session = agent.session(changed_files=False)
        await session.ask("read a.txt")
        (tmp_path / "a.txt").write_text("bye\n", encoding="utf-8")
        return await session.ask("again")

    result = asyncio.run(talk())
    assert not any(isinstance(m, AttachmentMessage) for m in result.messages)


def test_asking_with_nothing_to_ask_is_a_usage_error(tmp_path: Path) -> None:
    """A turn without a prompt and without queued messages is refused clearly."""
    agent = Agent(model=scripted(says("hi")), cwd=tmp_path, trace=False)
    with pytest.raises(UsageError, match="nothing to ask"):
        asyncio.run(agent.session().ask())


def test_an_empty_queued_message_is_refused(tmp_path: Path) -> None:
    """``send("")`` raises and queues nothing."""
    session = Agent(model=scripted(says("hi")), cwd=tmp_path, trace=False).session()
    with pytest.raises(UsageError, match="empty"):
        session.send("   ")
    assert session.pending == 0


def test_resume_carries_a_recorded_conversation_on(tmp_path: Path) -> None:
    """``session(resume=trace)`` starts from that turn's transcript and links to it."""
    folder = f"{tmp_path}/traces/"
    agent = Agent(model=scripted(says("first answer")), cwd=tmp_path, trace=folder)
    first = asyncio.run(agent.session().ask("first question"))
    later = Agent(model=scripted(says("second answer")), cwd=tmp_path, trace=folder)
    session = later.session(resume=first.trace_path)
    second = asyncio.run(session.ask("second question"))
    assert [text_of(m) for m in second.messages if text_of(m)] == [
        "first question",
        "first answer",
        "second question",
        "second answer",
    ]
    meta = read_trace(second.trace_path).header.meta
    assert meta["turn"] == 2
    assert meta["previous"] == first.trace_path.name
    assert meta["session"] == read_trace(first.trace_path).header.meta["session"]


def test_resume_from_a_turn_killed_before_it_began_goes_on_from_the_turn_before(
    tmp_path: Path,
) -> None:
    """Found: a turn killed as it started leaves a file with only its header; ``run
    --continue`` picked it (the latest) and the conversation went on from nothing, its
    history forgotten. It goes on from the turn before, numbered and linked as the lost one
    would have been."""
    folder = f"{tmp_path}/traces/"
    agent = Agent(model=scripted(says("one"), says("two")), cwd=tmp_path, trace=folder)
    session = agent.session(changed_files=False)
    asyncio.run(session.ask("remember banana"))
    second = asyncio.run(session.ask("and cherry"))
    assert second.trace_path is not None
    lost = tmp_path / "traces" / "killed.jsonl"
    header = second.trace_path.read_bytes().splitlines()[0]
    record = orjson.loads(header)
    record["meta"] = {**record["meta"], "turn": 3, "previous": second.trace_path.name}
    lost.write_bytes(orjson.dumps(record, option=orjson.OPT_SORT_KEYS) + b"\n")
    later = Agent(model=scripted(says("three")), cwd=tmp_path, trace=folder)
    resumed = later.session(resume=lost, changed_files=False)
    assert resumed.messages == second.messages
    third = asyncio.run(resumed.ask("which fruits?"))
    texts = [text_of(m) for m in third.messages if text_of(m)]
    assert texts[:2] == ["remember banana", "one"]
    assert third.trace_path is not None
    meta = read_trace(third.trace_path).header.meta
    assert (meta["turn"], meta["previous"]) == (3, second.trace_path.name)


def test_a_message_sent_from_another_thread_lands_in_the_running_turn(tmp_path: Path) -> None:
    """``send`` is thread safe: a message from a thread lands at the turn's attachment phase."""
    started, sent = threading.Event(), threading.Event()
    holder: list[Session] = []

    def user() -> None:
        started.wait(10)
        holder[0].send("a word from another thread")
        sent.set()

    @tool(name="Build", description="Builds.", read_only=True)
    async def build() -> str:
        started.set()
        while not sent.is_set():
            await asyncio.sleep(0.005)
        return "built"

    model = scripted(calls("Build"), says("done"))
    session = Agent(model=model, tools=[build], cwd=tmp_path, trace=False).session()
    holder.append(session)
    thread = threading.Thread(target=user)
    thread.start()
    result = asyncio.run(session.ask("build it"))
    thread.join()
    queued = [m for m in result.messages if isinstance(m, AttachmentMessage)]
    assert [m.kind for m in queued] == [AttachmentKind.QUEUED_COMMAND]
    assert "a word from another thread" in queued[0].text
    assert session.pending == 0


def test_a_message_sent_between_turns_goes_before_the_next_prompt(tmp_path: Path) -> None:
    """Queued while no turn runs, a message opens the next turn, ahead of its prompt."""
    model = scripted(says("one"), says("two"))
    session = Agent(model=model, cwd=tmp_path, trace=False).session()

    async def talk() -> Any:
        await session.ask("first")
        session.send("by the way")
        return await session.ask("second")

    result = asyncio.run(talk())
    said = [text_of(m) for m in result.messages if isinstance(m, UserMessage)]
    assert said == ["first", "by the way", "second"]


def test_turns_traced_to_a_named_file_go_beside_it(tmp_path: Path) -> None:
    """With ``trace=FILE``, later turns are ``FILE.turnN.jsonl``, chained to the first."""
    model = scripted(says("one"), says("two"))
    agent = Agent(model=model, cwd=tmp_path, trace=tmp_path / "talk.jsonl", store=False)

    async def talk() -> list[Any]:
        session = agent.session()
        return [await session.ask("first"), await session.ask("second")]

    first, second = asyncio.run(talk())
    assert first.trace_path == tmp_path / "talk.jsonl"
    assert second.trace_path == tmp_path / "talk.turn2.jsonl"
    assert conversation_turns(second.trace_path) == [first.trace_path, second.trace_path]


def test_a_file_changed_while_the_conversation_was_stored_is_reported(tmp_path: Path) -> None:
    """Resumed from a trace, a session reports the files read then and modified since."""
    for name in ("a.txt", "b.txt"):
        (tmp_path / name).write_text("old\n", encoding="utf-8")
    model = scripted(calls("Read", file_path="a.txt"), calls("Read", file_path="b.txt"), says("ok"))
    agent = Agent(model=model, tools=default_tools(), cwd=tmp_path, trace=f"{tmp_path}/t/")
    first = asyncio.run(agent.session().ask("read both"))
    assert first.trace_path is not None
    later = first.trace_path.stat().st_mtime + 10
    os.utime(tmp_path / "a.txt", (later, later))  # edited after the turn ended
    again = Agent(model=scripted(says("noted")), tools=default_tools(), cwd=tmp_path, trace=False)
    result = asyncio.run(again.session(resume=first.trace_path).ask("what changed?"))
    reports = [m.text for m in result.messages if isinstance(m, AttachmentMessage)]
    assert len(reports) == 1
    assert "a.txt was changed on disk since the conversation last read it" in reports[0]


def test_a_message_sent_as_a_turn_closes_is_kept_for_the_next(tmp_path: Path) -> None:
    """If the running turn's loop is already closed, ``send`` still queues the message."""
    queue = MessageQueue()

    def closed_loop() -> None:
        raise RuntimeError("Event loop is closed")

    queue.wake = closed_loop
    queue.put("late words")
    assert queue.drain() == ["late words"]


def test_interrupt_aborts_the_running_turn_and_the_session_goes_on(tmp_path: Path) -> None:
    """``interrupt()`` while a tool runs ends that turn ``aborted_tools`` (the tool
    cancelled, its trace complete); the next ask starts from the aborted turn's transcript.
    Between turns it does nothing."""
    started = asyncio.Event()

    @tool(name="Slow", description="Waits until cancelled.")
    async def slow() -> str:
        started.set()
        await asyncio.Event().wait()  # only a cancellation ends it
        return "never"

    agent = Agent(
        model=scripted(calls("Slow"), {"content": [{"text": "as you wish"}]}),
        tools=[slow],
        cwd=tmp_path,
        trace=f"{tmp_path}/traces/",
        store=False,
    )

    async def talk() -> tuple[Any, Any]:
        session = agent.session(changed_files=False)
        session.interrupt()  # no turn runs: nothing to stop
        turn = asyncio.create_task(session.ask("wait for it"))
        await started.wait()
        session.interrupt()
        first = await turn
        return first, await session.ask("never mind")

    first, second = asyncio.run(talk())
    assert first.terminal == "aborted_tools"
    assert second.terminal == "completed"
    assert any("Slow" in str(message) for message in second.messages)
    for path in (tmp_path / "traces").iterdir():
        assert replay(path).ended


def _conversation_requests(
    tmp_path: Path, turns: int, *, snip: bool = False
) -> list[list[dict[str, Any]]]:
    """The messages of every request of a session of ``turns`` turns, each with a tool call
    (with ``snip``, the messages carry their id tags)."""
    steps = [s for n in range(turns) for s in (calls("Glob", pattern="*.py"), says(f"done {n}"))]
    model = scripted(*steps)
    agent = Agent(
        model=model,
        tools=default_tools(),
        cwd=tmp_path,
        trace=False,
        store=False,
        config=LoopConfig(snip=snip),
    )
    session = agent.session(changed_files=False)
    sent: list[list[dict[str, Any]]] = []

    async def talk() -> None:
        for n in range(turns):
            await session.ask(f"question {n}")
            sent.extend(request.messages for request in model.requests[-2:])

    asyncio.run(talk())
    return sent


@pytest.mark.parametrize("snip", [False, True])
def test_a_session_turn_normalizes_only_what_it_added(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, snip: bool
) -> None:
    """Later user turns normalize a bounded number of messages, not the whole conversation,
    also when the renamed ids are sent (snip's id tags)."""
    normalized: list[int] = []
    segment = request_history.normalize_segment

    def counting(messages: Any, *args: Any, **kwargs: Any) -> Any:
        normalized.append(len(messages))
        return segment(messages, *args, **kwargs)

    monkeypatch.setattr(request_history, "normalize_segment", counting)
    _conversation_requests(tmp_path, 3, snip=snip)
    three = sum(normalized)
    normalized.clear()
    _conversation_requests(tmp_path, 12, snip=snip)
    # nine more turns, each a prompt, a call, its result and an answer, settled once each
    assert sum(normalized) - three <= 9 * 4 * 3


def test_a_session_sends_what_a_fresh_normalization_sends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Keeping the normalized history over turns changes no request of the conversation."""
    kept = [_conversation_requests(tmp_path, 6, snip=snip) for snip in (False, True)]
    monkeypatch.setattr(
        request_history.RequestHistory, "carry_over", lambda self, before, after, **_: self._reset()
    )
    assert [_conversation_requests(tmp_path, 6, snip=snip) for snip in (False, True)] == kept


def _turn_started_lines(
    tmp_path: Path, turns: int, *, full_every: int | None = None
) -> tuple[list[bytes], int]:
    """The TurnStarted line of every turn of a session of ``turns`` turns (each with a tool
    call, a secret in one prompt), and the messages serialized for them in all."""
    serialized = 0
    message_json = message_dumps.message_json

    def counting(message: Any) -> Any:
        nonlocal serialized
        serialized += 1
        return message_json(message)

    steps = [s for n in range(turns) for s in (calls("Glob", pattern="*.py"), says(f"done {n}"))]
    folder = tmp_path / f"traces{turns}"
    agent = Agent(
        model=scripted(*steps),
        tools=default_tools(),
        cwd=tmp_path,
        trace=f"{folder}/",
        store=False,
        secrets=["hunter-two-secret"],
        clock=lambda: 0.0,
    )
    session = agent.session(changed_files=False, full_transcript_every=full_every)

    async def talk() -> Path:
        path = None
        for n in range(turns):
            path = (await session.ask(f"question {n}, hunter-two-secret")).trace_path
        assert path is not None
        return path

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(message_dumps, "message_json", counting)
        last = asyncio.run(talk())
    lines = []
    for path in conversation_turns(last):
        lines.extend(line for line in path.read_bytes().splitlines() if b"TurnStarted" in line)
    return lines, serialized


def test_a_session_turn_serializes_only_what_it_added(tmp_path: Path) -> None:
    """Later user turns serialize a bounded number of messages for their trace's starting
    transcript, not the whole conversation."""
    _, three = _turn_started_lines(tmp_path, 3)
    lines, twelve = _turn_started_lines(tmp_path, 12)
    assert len(lines) == 12
    # nine more turns, each a prompt, a call, its result and an answer, serialized once each
    assert twelve - three <= 9 * 4


def test_a_session_writes_what_a_cold_writer_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Keeping the serialized transcript over turns changes no byte of any turn's trace that
    holds its whole transcript, and the secret never reaches one."""
    (tmp_path / "kept").mkdir()
    (tmp_path / "cold").mkdir()
    kept, _ = _turn_started_lines(tmp_path / "kept", 5, full_every=1)
    parts = TranscriptJson.parts
    monkeypatch.setattr(
        TranscriptJson,
        "parts",
        lambda self, *args, **kwargs: parts(TranscriptJson(), *args, **kwargs),
    )
    cold, _ = _turn_started_lines(tmp_path / "cold", 5, full_every=1)
    assert kept == cold
    assert all(b"hunter-two-secret" not in line for line in kept)


def _calls_per_turn(tmp_path: Path, turns: tuple[int, ...], *, snip: bool) -> list[int]:
    """The Python and C function calls made by the given user turns of one session (each
    turn a tool call, its result and an answer), counted by a profile hook."""
    steps = [
        s for n in range(turns[-1]) for s in (calls("Glob", pattern="*.py"), says(f"done {n}"))
    ]
    agent = Agent(
        model=scripted(*steps),
        tools=default_tools(),
        cwd=tmp_path,
        trace=f"{tmp_path}/traces/",
        store=False,
        config=LoopConfig(snip=snip),
    )
    session = agent.session(changed_files=False)
    counted: list[int] = []

    async def talk() -> None:
        for number in range(1, turns[-1] + 1):
            if number not in turns:
                await session.ask(f"question {number}")
                continue
            count = 0

            def profile(_frame: object, event: str, _arg: object) -> None:
                nonlocal count
                count += event in ("call", "c_call")

            gc.disable()  # the collector's callbacks would be counted too
            sys.setprofile(profile)
            try:
                await session.ask(f"question {number}")
            finally:
                sys.setprofile(None)
                gc.enable()
            counted.append(count)

    asyncio.run(talk())
    return counted


@pytest.mark.parametrize("snip", [False, True])
def test_a_late_user_turn_makes_no_more_calls_than_an_early_one(tmp_path: Path, snip: bool) -> None:
    """A user turn late in a conversation makes as many function calls as an early one: no
    per-turn work walks the history in Python (DESIGN §7)."""
    early, late = _calls_per_turn(tmp_path, (4, 40), snip=snip)
    assert late <= early


def test_a_long_conversation_keeps_its_latest_results_only(tmp_path: Path) -> None:
    """Each turn's result holds the transcript of its turn; a session that kept every one grew
    as the square of its turns (found: 3,000 turns kept 3,000 transcripts). It keeps the
    latest ``RESULTS_KEPT``; the rest are released (and in their traces)."""
    turns = session_module.RESULTS_KEPT + 4
    agent = Agent(
        model=scripted(*(says(f"answer {n}") for n in range(turns))),
        cwd=tmp_path,
        trace=tmp_path / "traces",
        store=False,
    )
    session = agent.session(changed_files=False)

    async def talk() -> list[weakref.ref[Any]]:
        kept = []
        for n in range(turns):
            kept.append(weakref.ref(await session.ask(f"question {n}")))
        return kept

    first, *_, last = asyncio.run(talk())
    assert len(session.results) == session_module.RESULTS_KEPT
    assert session.results[-1] is last()
    assert session.results[-1].messages == session.messages
    gc.collect()
    assert first() is None  # released: only its trace holds it now
