"""Resuming a run killed mid-subagent, wherever the child's trace was cut: the child is picked
up from its own trace, its side-effecting call happens exactly once, and the new traces replay
(issue 14; the kill itself is tested with SIGKILL in tests/integration)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson

from fsm_agent.core.messages import ToolResultBlock, tool_results
from fsm_agent.runtime.agent import Agent, RunFinished, RunResult
from fsm_agent.runtime.models import ModelRequest
from fsm_agent.runtime.subagent_spending import spent_before
from fsm_agent.runtime.subagents import SubagentDefinition, SubagentLimits
from fsm_agent.runtime.tool import ToolContext, tool
from fsm_agent.testing.scenario import ScriptedModel, parse_scenario
from fsm_agent.toolbox.task import Task
from fsm_agent.trace.replay import replay, resume

TASK = {"description": "append", "prompt": "append one line", "subagent_type": "appender"}


class ByHistory:
    """A scripted model that answers the step matching how many answers the history holds,
    so a resumed run gets the answer its state calls for, wherever it was cut. Like the API,
    it never gives two responses or two tool calls the same id (a retried request included)."""

    def __init__(self, *steps: dict[str, Any]) -> None:
        self.scripted = ScriptedModel(parse_scenario({"steps": list(steps)}))
        self.name = self.scripted.name

    async def stream(self, request: ModelRequest) -> AsyncIterator[dict[str, Any]]:
        answered = sum(1 for message in request.messages if message.get("role") == "assistant")
        self.scripted.seek(answered)
        async for raw in self.scripted.stream(request):
            event = dict(raw)
            if event.get("type") == "message_start":
                event["message"] = {**event["message"], "id": _fresh("msg")}
            elif event.get("type") == "content_block_start" and "id" in event["content_block"]:
                event["content_block"] = {**event["content_block"], "id": _fresh("toolu")}
            yield event


def _fresh(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:16]}"


@tool()
async def append(line: str, ctx: ToolContext) -> str:
    """Append a line to side.txt (the side effect counted)."""
    with (ctx.cwd / "side.txt").open("a", encoding="utf-8") as file:
        file.write(line + "\n")
    return "appended"


def build(work: Path, trace: Path) -> Agent:
    child = SubagentDefinition(
        description="appends a line",
        tools=[append],
        model=ByHistory(
            {"content": [{"tool_use": {"name": "append", "input": {"line": "once"}}}]},
            {"content": [{"text": "appended once"}]},
        ),
    )
    return Agent(
        model=ByHistory(
            {"content": [{"tool_use": {"name": "Task", "input": TASK}}]},
            {"content": [{"text": "done"}]},
        ),
        tools=[Task({"appender": child})],
        cwd=work,
        trace=trace,
        store=False,
        sleep=_no_wait,
    )


async def _no_wait(_seconds: float) -> None:
    """Retry backoff that does not wait (a cut mid-response is retried)."""


def carry_on(agent: Agent, trace: Path) -> RunResult:
    async def go() -> RunResult:
        result: RunResult | None = None
        async for update in agent.continue_from(resume(trace)):
            if isinstance(update, RunFinished):
                result = update.result
        assert result is not None
        return result

    return asyncio.run(go())


def test_a_child_cut_at_any_line_resumes_without_repeating_its_side_effect(
    tmp_path: Path,
) -> None:
    """For every cut of the child's trace (the parent's cut after it started the child), the
    resumed run completes with the child's answer, side.txt holds one line (the line exists
    before the resume exactly when the call's effect was on file), and the new parent and
    child traces replay."""
    original = tmp_path / "original"
    original.mkdir()
    assert build(original, original / "parent.jsonl").run_sync("go").terminal == "completed"
    parent_lines = (original / "parent.jsonl").read_bytes().splitlines(keepends=True)
    started = next(
        number for number, line in enumerate(parent_lines) if b'"SubagentStarted"' in line
    )
    (child_trace,) = (original / "parent.subagents").iterdir()
    child_lines = child_trace.read_bytes().splitlines(keepends=True)

    for cut in range(1, len(child_lines) + 1):
        work = tmp_path / f"cut{cut}"
        (work / "parent.subagents").mkdir(parents=True)
        prefix = b"".join(parent_lines[: started + 1])
        (work / "parent.jsonl").write_bytes(prefix.replace(bytes(original), bytes(work)))
        kept = child_lines[:cut]
        (work / "parent.subagents" / child_trace.name).write_bytes(b"".join(kept))
        if any(_is_append_call(line) for line in kept[1:]):
            (work / "side.txt").write_text("once\n", encoding="utf-8")  # it may have run

        result = carry_on(build(work, work / "resumed.jsonl"), work / "parent.jsonl")

        assert result.terminal == "completed", cut
        assert (work / "side.txt").read_text(encoding="utf-8") == "once\n", cut
        assert replay(work / "resumed.jsonl").terminal == "completed", cut
        (resumed_child,) = (work / "resumed.subagents").iterdir()
        assert replay(resumed_child).terminal == "completed", cut


def _is_append_call(line: bytes) -> bool:
    """Whether a trace line holds the effect that runs ``append`` (a step line's effects)."""
    record = orjson.loads(line)
    return any(
        effect.get("type") == "RunToolStep"
        and effect.get("tool_name") == "append"
        and effect.get("step") == "call"
        for effect in record.get("effects", ())
    )


def test_a_resumed_run_keeps_the_token_budget_its_children_spent(tmp_path: Path) -> None:
    """Killed after its first child spent the tree's token budget, a resumed run reads the
    spending back from the traces: the second Task call is refused (SubagentLimits.max_tokens)
    as it was in the run that was not killed, wherever the parent's trace was cut."""
    child = SubagentDefinition(
        description="answers", model=ByHistory({"content": [{"text": "answered"}]})
    )

    def agent(work: Path, trace: Path) -> Agent:
        task = {"name": "Task", "input": TASK | {"subagent_type": "answerer"}}
        return Agent(
            model=ByHistory(
                {"content": [{"tool_use": task}]},
                {"content": [{"tool_use": task}]},
                {"content": [{"text": "done"}]},
            ),
            tools=[Task({"answerer": child}, limits=SubagentLimits(max_tokens=5))],
            cwd=work,
            trace=trace,
            store=False,
            sleep=_no_wait,
        )

    original = tmp_path / "original"
    original.mkdir()
    whole = agent(original, original / "parent.jsonl").run_sync("go")
    assert ["max_tokens" in str(b.content) for b in task_results(whole)] == [False, True]
    lines = (original / "parent.jsonl").read_bytes().splitlines(keepends=True)
    started = next(n for n, line in enumerate(lines) if b'"SubagentStarted"' in line)
    asked = [n for n, line in enumerate(lines) if b'"content_block_start"' in line]
    second_task = asked[1]  # the parent's second response starts with its Task call
    for cut in range(started + 1, second_task):
        work = tmp_path / f"cut{cut}"
        work.mkdir()
        (work / "parent.jsonl").write_bytes(b"".join(lines[:cut]))
        result = carry_on(agent(work, work / "resumed.jsonl"), work / "parent.jsonl")
        assert result.terminal == "completed", cut
        refused = ["SubagentLimits.max_tokens" in str(b.content) for b in task_results(result)]
        assert refused == [False, True], cut


def task_results(result: RunResult) -> list[ToolResultBlock]:
    """The tool_result blocks of a run's transcript, in order."""
    return [b for m in result.messages for b in tool_results(m)]


def test_spending_read_back_survives_missing_and_unreadable_child_traces(tmp_path: Path) -> None:
    """A child trace that is gone, or is not a trace, counts as a run with no tokens: reading
    the spending back never fails."""
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_bytes(b'{"record": "event"')
    started = {"type": "SubagentStarted", "call_id": "c1", "agent": "a", "run_id": "r.c1"}
    records = [
        {"record": "event", "seq": 1, "event": started | {"trace": str(tmp_path / "gone.jsonl")}},
        {"record": "event", "seq": 2, "event": started | {"call_id": "c2", "trace": str(garbage)}},
    ]
    budget = spent_before(records)
    assert (budget.runs, budget.tokens) == (2, 0)
