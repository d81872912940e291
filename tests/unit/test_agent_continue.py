"""Carrying a recorded run on live from a fork or resume point (Agent.continue_from)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from fsm_agent.core.messages import ToolResultBlock, UserMessage
from fsm_agent.runtime.agent import Agent, MessageUpdate, RunFinished, RunResult, Update
from fsm_agent.testing.scenario import ScriptedModel, parse_scenario
from fsm_agent.toolbox import default_tools
from fsm_agent.trace.reader import read_trace
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
