"""Carrying a recorded run on live from a fork or resume point (Agent.continue_from)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from fsm_agent.core.messages import ToolResultBlock, UserMessage
from fsm_agent.errors import UsageError
from fsm_agent.runtime.agent import Agent, MessageUpdate, RunFinished, RunResult, Update
from fsm_agent.runtime.tool import Tool, tool
from fsm_agent.testing.scenario import ScriptedModel, parse_scenario
from fsm_agent.toolbox import default_tools
from fsm_agent.trace.reader import read_trace
from fsm_agent.trace.redact import mask
from fsm_agent.trace.replay import fork, replay, resume

READ_THEN_ANSWER = {
    "steps": [
        {"content": [{"tool_use": {"name": "Read", "input": {"file_path": "a.txt"}}}]},
        {"content": [{"text": "The file says hello."}], "chunk": 4},
    ]
}


def scripted(steps: dict[str, Any]) -> ScriptedModel:
    return ScriptedModel(parse_scenario(steps))


def record(tmp_path: Path) -> Path:
    (tmp_path / "a.txt").write_text("hello\n", encoding="utf-8")
    trace = tmp_path / "original.jsonl"
    agent = Agent(
        model=scripted(READ_THEN_ANSWER), tools=default_tools(), cwd=tmp_path, trace=trace
    )
    assert agent.run_sync("read a.txt").terminal == "completed"
    return trace


def seq_of(trace: Path, predicate: Any) -> int:
    for record_ in read_trace(trace).records:
        if predicate(record_.data):
            return record_.seq
    raise AssertionError("no such record")


def drain(agent: Agent, point: Any, **options: Any) -> tuple[RunResult, list[Update]]:
    async def go() -> tuple[RunResult, list[Update]]:
        updates = [u async for u in agent.continue_from(point, **options)]
        finished = updates[-1]
        assert isinstance(finished, RunFinished)
        return finished.result, updates

    return asyncio.run(go())


def tool_results_in(updates: list[Update]) -> list[ToolResultBlock]:
    return [
        block
        for u in updates
        if isinstance(u, MessageUpdate) and isinstance(u.message, UserMessage)
        for block in u.message.content
        if isinstance(block, ToolResultBlock)
    ]


def test_fork_mid_stream_continues_with_another_model(tmp_path: Path) -> None:
    """Forked mid-answer, the half response is re-requested from the new model; the new
    trace repeats the prefix and replays identically."""
    original = record(tmp_path)
    delta = seq_of(original, lambda r: r.get("record") == "event" and "text_delta" in str(r))
    point = fork(original, delta)
    other = scripted({"steps": [{"content": [{"text": "A different ending."}]}]})
    forked = tmp_path / "forked.jsonl"
    agent = Agent(model=other, tools=default_tools(), cwd=tmp_path, trace=forked)
    result, _ = drain(agent, point)
    assert result.terminal == "completed"
    assert result.text == "A different ending."
    names = [r.data.get("name") for r in read_trace(forked).of_kind("transition")]
    assert "request_retried" in names
    assert replay(forked).terminal == "completed"


def test_a_tool_call_in_flight_is_not_rerun_unless_asked(tmp_path: Path) -> None:
    """A call whose RunToolStep(call) was recorded but never finished is answered with an
    error result instead of being run again; with rerun=..., it runs."""
    original = record(tmp_path)
    call = seq_of(
        original,
        lambda r: (
            r.get("record") == "effect"
            and r["effect"]["type"] == "RunToolStep"
            and r["effect"]["step"] == "call"
        ),
    )
    answer = {"steps": [{"content": [{"text": "ok"}]}]}

    point = fork(original, call - 1)  # the step that asked for the call is in the prefix
    assert any(i.maybe_side_effects for i in point.outstanding_effects)
    agent = Agent(model=scripted(answer), tools=default_tools(), cwd=tmp_path, trace=False)
    result, updates = drain(agent, point)
    assert result.terminal == "completed"
    (refused,) = tool_results_in(updates)
    assert refused.is_error
    assert "not run again" in str(refused.content)

    point = fork(original, call - 1)
    agent = Agent(model=scripted(answer), tools=default_tools(), cwd=tmp_path, trace=False)
    result, updates = drain(agent, point, rerun=lambda _item: True)
    (ran,) = tool_results_in(updates)
    assert not ran.is_error
    assert "hello" in str(ran.content)


def test_resume_a_crashed_run(tmp_path: Path) -> None:
    """A trace cut short (a crash) resumes: its state is rebuilt and the run finishes."""
    original = record(tmp_path)
    lines = original.read_bytes().splitlines(keepends=True)
    delta = next(
        index
        for index, line in enumerate(lines)
        if line.startswith(b'{"event":') and b'"text_delta"' in line
    )
    crashed = tmp_path / "crashed.jsonl"
    crashed.write_bytes(b"".join(lines[: delta + 1]) + lines[delta + 1][:10])  # cut mid-line
    point = resume(crashed)
    assert point.truncated
    agent = Agent(
        model=scripted({"steps": [{"content": [{"text": "Resumed."}]}]}),
        tools=default_tools(),
        cwd=tmp_path,
        trace=tmp_path / "resumed.jsonl",
    )
    result, _ = drain(agent, point)
    assert result.terminal == "completed"
    assert replay(tmp_path / "resumed.jsonl").terminal == "completed"


def login_steps(password: str) -> dict[str, Any]:
    """A model that logs in with ``password``, then says so."""
    call = {"tool_use": {"name": "Login", "input": {"user": "ann", "password": password}}}
    return {"steps": [{"content": [call]}, {"content": [{"text": "logged in"}]}]}


LOGIN = login_steps("hunter2-pw")


def login_tool(log: list[str]) -> Tool[Any]:
    @tool(name="Login", description="Log in.")
    async def login(*, user: str, password: str) -> str:
        log.append(password)
        return f"{user} logged in"

    return login


def killed_during_login(tmp_path: Path, password: str = "hunter2-pw") -> Path:
    """The trace of a run killed while its Login call ran: cut after the line that holds the
    call's ``RunToolStep(call)``, as a kill -9 then leaves it."""
    original = tmp_path / "original.jsonl"
    steps = login_steps(password)
    agent = Agent(model=scripted(steps), tools=[login_tool([])], cwd=tmp_path, trace=original)
    assert agent.run_sync("log in").terminal == "completed"
    lines = original.read_bytes().splitlines(keepends=True)
    call = next(i for i, line in enumerate(lines) if b'"step":"call"' in line)
    assert password.encode() not in original.read_bytes()
    killed = tmp_path / "killed.jsonl"
    killed.write_bytes(b"".join(lines[: call + 1]))
    return killed


def test_rerun_refuses_a_call_whose_input_the_trace_holds_redacted(tmp_path: Path) -> None:
    """Run again from the trace, the call would get ``[REDACTED]`` for its password: the
    continuation is refused before anything runs, naming the call and why."""
    killed = killed_during_login(tmp_path)
    point = resume(killed)
    (in_flight,) = point.unsafe_to_rerun
    log: list[str] = []
    asked: list[object] = []
    agent = Agent(
        model=scripted(LOGIN), tools=[login_tool(log)], cwd=tmp_path, trace=tmp_path / "new.jsonl"
    )
    with pytest.raises(UsageError) as refused:
        drain(agent, point, rerun=lambda item: asked.append(item) or True)
    message = str(refused.value)
    assert "Login" in message
    assert in_flight.effect.call_id in message  # type: ignore[attr-defined]
    assert "redacted" in message
    assert "nothing was run" in message
    assert log == []
    assert asked == [in_flight]
    assert not (tmp_path / "new.jsonl").exists()

    # Not re-run, the call is answered with an error result and the run goes on.
    answer = scripted({"steps": [{"content": [{"text": "ok"}]}]})
    agent = Agent(model=answer, tools=[login_tool(log)], cwd=tmp_path, trace=False)
    result, updates = drain(agent, resume(killed))
    assert result.terminal == "completed"
    (refusal,) = tool_results_in(updates)
    assert refusal.is_error
    assert "not run again" in str(refusal.content)
    assert log == []


def test_rerun_refuses_a_call_whose_input_holds_a_mask_padded_to_its_length(
    tmp_path: Path,
) -> None:
    """A long password reads ``[REDACTED]`` padded with ``*`` to its length in the trace: that
    is redacted text all the same, and the call is not run with it."""
    password = "hunter2-a-much-longer-password"
    killed = killed_during_login(tmp_path, password)
    assert f'"password":"{mask(len(password))}"'.encode() in killed.read_bytes()
    log: list[str] = []
    agent = Agent(
        model=scripted(login_steps(password)), tools=[login_tool(log)], cwd=tmp_path, trace=False
    )
    with pytest.raises(UsageError, match="redacted"):
        drain(agent, resume(killed), rerun=lambda _item: True)
    assert log == []


def test_rerun_runs_a_call_whose_input_holds_nothing_redacted(tmp_path: Path) -> None:
    """The refusal is for redacted inputs only: the same call with no credential re-runs."""
    original = tmp_path / "original.jsonl"
    clean = {"steps": [{"content": [{"tool_use": {"name": "Touch", "input": {"key": "k"}}}]}]}
    log: list[str] = []

    @tool(name="Touch", description="Change something.")
    async def touch(*, key: str) -> str:
        log.append(key)
        return "touched"

    steps = {"steps": [*clean["steps"], {"content": [{"text": "done"}]}]}
    agent = Agent(model=scripted(steps), tools=[touch], cwd=tmp_path, trace=original)
    assert agent.run_sync("touch").terminal == "completed"
    lines = original.read_bytes().splitlines(keepends=True)
    call = next(i for i, line in enumerate(lines) if b'"step":"call"' in line)
    killed = tmp_path / "killed.jsonl"
    killed.write_bytes(b"".join(lines[: call + 1]))
    answer = scripted({"steps": [{"content": [{"text": "ok"}]}]})
    agent = Agent(model=answer, tools=[touch], cwd=tmp_path, trace=False)
    result, _ = drain(agent, resume(killed), rerun=lambda _item: True)
    assert result.terminal == "completed"
    assert log == ["k", "k"]


def test_a_request_the_recording_left_unsent_counts_as_a_turn(tmp_path: Path) -> None:
    """Forked just after a request was sent, the continuation sends it to its own model and
    counts it in ``turns`` (its ``request_sent`` is in the replayed part, so the continuation
    reported ``turns: 0`` though it had asked the model)."""
    trace = record(tmp_path)
    second_request = [
        record_.seq
        for record_ in read_trace(trace).records
        if record_.data.get("effect", {}).get("type") == "CallModel"
    ][1]
    answer = {"steps": [{"content": [{"text": "Forked answer."}]}]}
    agent = Agent(model=scripted(answer), tools=default_tools(), cwd=tmp_path, trace=False)
    result, _ = drain(agent, fork(trace, second_request))
    assert result.text == "Forked answer."
    assert result.turns == 1
