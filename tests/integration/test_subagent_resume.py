"""Killing a process mid-subagent and resuming it: the child is picked up from its own trace,
and a side-effecting call it already made is not made again (issue 14).

The first run is a real process (this file's ``PROGRAM``) killed with SIGKILL while the child's
side-effecting tool hangs after writing its line; the resume runs here, in-process.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType

from fsm_agent.core.messages import ToolResultBlock, UserMessage
from fsm_agent.runtime.agent import RunFinished, RunResult
from fsm_agent.trace.reader import read_trace
from fsm_agent.trace.replay import replay, resume

PROGRAM = '''
import asyncio
import sys
from pathlib import Path

from fsm_agent import Agent
from fsm_agent.runtime.subagents import SubagentDefinition
from fsm_agent.runtime.tool import tool
from fsm_agent.testing.scenario import ScriptedModel, parse_scenario
from fsm_agent.toolbox.task import Task

HANG = False
WORK = Path(".")


@tool()
async def append(line: str) -> str:
    """Append a line to side.txt (the side effect the test counts)."""
    with (WORK / "side.txt").open("a", encoding="utf-8") as file:
        file.write(line + "\\n")
    if HANG:
        await asyncio.Event().wait()  # the first run is killed here
    return "appended"


def scripted(*steps):
    return ScriptedModel(parse_scenario({"steps": list(steps)}))


def build(parent_steps, child_steps, trace):
    child = SubagentDefinition(
        description="appends a line", tools=[append], model=scripted(*child_steps)
    )
    return Agent(
        model=scripted(*parent_steps),
        tools=[Task({"appender": child})],
        cwd=WORK,
        trace=trace,
        store=False,
    )


if __name__ == "__main__":
    HANG = True
    WORK = Path(sys.argv[1])
    agent = build(
        [
            {"content": [{"tool_use": {"name": "Task", "input": {
                "description": "append", "prompt": "append one line", "subagent_type": "appender"
            }}}]},
            {"content": [{"text": "never reached"}]},
        ],
        [
            {"content": [{"tool_use": {"name": "append", "input": {"line": "once"}}}]},
            {"content": [{"text": "never reached"}]},
        ],
        WORK / "parent.jsonl",
    )
    agent.run_sync("append a line through a subagent")
'''


def load_program(path: Path, work: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location("subagent_program", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.WORK = work
    return module


def kill_mid_child(work: Path, program: Path) -> None:
    """Run the program until the child's side effect is on disk, then SIGKILL it."""
    process = subprocess.Popen(
        [sys.executable, str(program), str(work)],
        cwd=work,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        side = work / "side.txt"
        # The line is whole once the tool has closed the file (it then hangs).
        while not (side.exists() and side.read_text(encoding="utf-8").endswith("\n")):
            assert process.poll() is None, process.stderr.read() if process.stderr else ""
            assert time.monotonic() < deadline, "the child never made its call"
            time.sleep(0.02)
    finally:
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
        if process.stderr is not None:
            process.stderr.close()


def test_resume_after_sigkill_mid_child_does_not_repeat_its_side_effect(tmp_path: Path) -> None:
    """After SIGKILL mid-child, continue_from(resume(parent trace)) resumes the child from its
    trace: the side-effecting call is answered 'not run again' (side.txt keeps one line), the
    parent gets the child's answer, and the new parent and child traces both replay."""
    program = tmp_path / "program.py"
    program.write_text(PROGRAM, encoding="utf-8")
    kill_mid_child(tmp_path, program)
    assert (tmp_path / "side.txt").read_text(encoding="utf-8") == "once\n"
    crashed_child = tmp_path / "parent.subagents"
    assert [p.name for p in crashed_child.iterdir()] != []

    module = load_program(program, tmp_path)
    agent = module.build(
        [{"content": [{"text": "the subagent appended"}]}],
        [{"content": [{"text": "appended once"}]}],
        tmp_path / "resumed.jsonl",
    )

    async def go() -> RunResult:
        result: RunResult | None = None
        async for update in agent.continue_from(resume(tmp_path / "parent.jsonl")):
            if isinstance(update, RunFinished):
                result = update.result
        assert result is not None
        return result

    result = asyncio.run(go())
    assert result.terminal == "completed"
    assert (tmp_path / "side.txt").read_text(encoding="utf-8") == "once\n"
    task_results = [
        block
        for message in result.messages
        if isinstance(message, UserMessage)
        for block in message.content
        if isinstance(block, ToolResultBlock)
    ]
    assert [block.content for block in task_results] == ["appended once"]

    (resumed_child,) = (tmp_path / "resumed.subagents").iterdir()
    child_trace = read_trace(resumed_child)
    assert child_trace.header.meta["parent"]["kind"] == "resume"
    parent_id = read_trace(tmp_path / "resumed.jsonl").header.meta["run_id"]
    assert child_trace.header.meta["subagent_of"]["run_id"] == parent_id
    not_rerun = [
        r.data["event"]
        for r in child_trace.of_kind("event")
        if r.data["event"]["type"] == "ToolCallFinished"
    ]
    assert not_rerun[0]["is_error"] and "not run again" in not_rerun[0]["content"]
    assert replay(tmp_path / "resumed.jsonl").terminal == "completed"
    assert replay(resumed_child).terminal == "completed"
