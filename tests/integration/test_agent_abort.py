"""Aborting a run (cancelling its task) mid-stream and mid-tool, over the real SDK and fake server.

The driver turns a cancelled ``stream()`` into ``AbortRequested``, then re-raises
``CancelledError`` (DESIGN §8: abort at any moment → synthetic tool_results, a valid transcript,
a complete trace). The result is therefore read back from the trace and from the updates
collected before the cancellation.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fsm_agent.core.config import LoopConfig
from fsm_agent.core.messages import Message, text_of, tool_results, tool_uses
from fsm_agent.core.texts import INTERRUPTED, INTERRUPTED_FOR_TOOL_USE
from fsm_agent.runtime.agent import Agent, MessageUpdate, TextDelta, Update
from fsm_agent.runtime.models import AnthropicModel
from fsm_agent.runtime.permissions import PermissionPolicy
from fsm_agent.testing.fake_server import FakeAnthropicServer
from fsm_agent.toolbox import default_tools
from fsm_agent.trace.reader import Trace, read_trace
from fsm_agent.trace.replay import replay

ServeFn = Callable[[Any], FakeAnthropicServer]  # the ``serve`` fixture (conftest.py)
API_KEY = "sk-test-secret"
MODEL = "claude-primary"


async def run_until_cancelled(
    agent: Agent, cancel_when: Callable[[list[Update]], Any]
) -> list[Update]:
    """Stream a run in a task; cancel the task once ``cancel_when`` (awaited) returns.

    Returns every update received, including those the abort produced.
    """
    updates: list[Update] = []

    async def consume() -> None:
        async for update in agent.stream("Look at the project."):
            updates.append(update)

    task = asyncio.create_task(consume())
    try:
        await asyncio.wait_for(cancel_when(updates), timeout=10)
    finally:
        task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    return updates


def abort_run(
    server: FakeAnthropicServer,
    *,
    work: Path,
    trace_path: Path,
    cancel_when: Callable[[list[Update]], Any],
    permissions: PermissionPolicy | None = None,
) -> list[Update]:
    """Run the built-in agent against ``server`` and cancel it once ``cancel_when`` returns."""

    async def go() -> list[Update]:
        async with AnthropicModel(
            name=MODEL, api_key=API_KEY, base_url=server.base_url, timeout=5
        ) as model:
            agent = Agent(
                model=model,
                tools=default_tools(),
                config=LoopConfig(model=MODEL, retry_base_ms=1, retry_cap_ms=5),
                permissions=permissions,
                trace=trace_path,
                cwd=work,
            )
            return await run_until_cancelled(agent, cancel_when)

    return asyncio.run(go())


def transcript_of(updates: list[Update]) -> list[Message]:
    """The messages the run emitted, in order."""
    return [u.message for u in updates if isinstance(u, MessageUpdate)]


def assert_paired(messages: list[Message]) -> None:
    """Every tool_use has exactly one tool_result, and no result is orphan."""
    used = [block.id for message in messages for block in tool_uses(message)]
    answered = [block.tool_use_id for message in messages for block in tool_results(message)]
    assert used
    assert sorted(used) == sorted(answered)
    assert len(set(answered)) == len(answered)


def loop_names(trace: Trace) -> list[str]:
    return [r.data["name"] for r in trace.of_kind("transition") if r.data["machine"] == "loop"]


def assert_trace_ends(trace_path: Path, terminal: str) -> Trace:
    """The trace is complete: it ends with an ``end`` record naming ``terminal``, and replays."""
    trace = read_trace(trace_path)
    assert trace.records[-1].kind == "end"
    assert trace.records[-1].data["terminal"] == terminal
    events = [r.data["event"]["type"] for r in trace.of_kind("event")]
    assert "AbortRequested" in events
    assert loop_names(trace)[-1] == terminal
    replayed = replay(trace_path)
    assert replayed.terminal == terminal
    assert replayed.ended
    return trace


def test_abort_while_streaming(serve: ServeFn, tmp_path: Path) -> None:
    """Cancelling after the first text delta → aborted_streaming, tool_use answered, trace ends."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "README.md").write_text("# Demo\n", encoding="utf-8")
    server = serve(
        {
            "steps": [
                {
                    "content": [
                        {"tool_use": {"name": "Read", "input": {"file_path": "README.md"}}},
                        {"text": "Reading it now, and this sentence streams very slowly."},
                    ],
                    "chunk": 8,
                    "delay_ms": 40,
                }
            ]
        }
    )
    trace_path = tmp_path / "trace.jsonl"

    async def first_text(updates: list[Update]) -> None:
        while not any(isinstance(u, TextDelta) for u in updates):
            await asyncio.sleep(0.005)

    updates = abort_run(server, work=work, trace_path=trace_path, cancel_when=first_text)
    messages = transcript_of(updates)
    assert_paired(messages)
    assert text_of(messages[-1]) == INTERRUPTED
    trace = assert_trace_ends(trace_path, "aborted_streaming")
    assert "stream_ended" not in loop_names(trace)
    # The slow stream was cut short, not waited out.
    streamed = [r.data["event"].get("event", {}).get("type") for r in trace.of_kind("event")]
    assert "message_stop" not in streamed
    assert sum(isinstance(u, TextDelta) for u in updates) < 7
    assert len(server.message_requests) == 1


def test_abort_while_a_tool_runs(serve: ServeFn, tmp_path: Path) -> None:
    """Cancelling during a long Bash call → aborted_tools, the call answered, its process gone."""
    work = tmp_path / "work"
    work.mkdir()
    pid_file = work / "pid"
    server = serve(
        {
            "steps": [
                {
                    "content": [
                        {"text": "Running the long job."},
                        {
                            "tool_use": {
                                "name": "Bash",
                                "input": {"command": "echo $$ > pid; exec sleep 30"},
                            }
                        },
                    ]
                },
                {"content": [{"text": "never requested"}]},
            ]
        }
    )
    trace_path = tmp_path / "trace.jsonl"

    async def tool_running(_updates: list[Update]) -> None:
        while not (pid_file.exists() and pid_file.read_text().strip()):
            await asyncio.sleep(0.01)

    started = time.monotonic()
    updates = abort_run(
        server,
        work=work,
        trace_path=trace_path,
        cancel_when=tool_running,
        permissions=PermissionPolicy(allow={"Bash"}),
    )
    assert time.monotonic() - started < 5
    pid = int(pid_file.read_text().strip())
    assert process_gone(pid, within_s=2.0), f"sleep (pid {pid}) still running after the abort"

    messages = transcript_of(updates)
    assert_paired(messages)
    [result] = [block for message in messages for block in tool_results(message)]
    assert result.is_error
    assert text_of(messages[-1]) == INTERRUPTED_FOR_TOOL_USE
    trace = assert_trace_ends(trace_path, "aborted_tools")
    assert "tools_requested" in loop_names(trace)
    assert len(server.message_requests) == 1


def process_gone(pid: int, *, within_s: float) -> bool:
    """Whether ``pid`` no longer runs (gone, or a zombie) within ``within_s`` seconds."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        with contextlib.suppress(OSError):
            stat = Path(f"/proc/{pid}/stat").read_text()
            if stat.rsplit(")", 1)[1].split()[0] == "Z":
                return True
        time.sleep(0.02)
    return False
