"""The rules a recording's "allow always" answers added, when a fork or resume carries it on.

A trace may come from someone else, and its "always" answers may have added ``Bash(*)``. A
run carried on from it honours those rules only when asked to
(``continue_from(carry_session_rules=True)``, the library's default; the command line asks at a
terminal and otherwise does not carry them, `--keep-session-rules` does).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from fsm_agent.cli import main
from fsm_agent.runtime.agent import Agent, RunFinished, RunResult
from fsm_agent.runtime.permissions import PermissionAnswer, PermissionPolicy, PermissionRequest
from fsm_agent.testing.scenario import ScriptedModel, parse_scenario
from fsm_agent.toolbox import Bash
from fsm_agent.trace.reader import read_trace
from fsm_agent.trace.replay import fork

TOUCH = {"content": [{"tool_use": {"name": "Bash", "input": {"command": "touch made.txt"}}}]}
AGAIN = {  # the live model's call, with an id of its own
    "content": [
        {"tool_use": {"name": "Bash", "input": {"command": "touch made.txt"}, "id": "toolu_b"}}
    ]
}
DONE = {"content": [{"text": "done"}]}


def agent(
    work: Path, trace: Path, answer: PermissionAnswer, asked: list[str], *steps: Any
) -> Agent:
    async def ask(request: PermissionRequest) -> PermissionAnswer:
        asked.append(str(request.input.get("command")))
        return answer

    return Agent(
        model=ScriptedModel(parse_scenario({"steps": list(steps)})),
        tools=[Bash()],
        permissions=PermissionPolicy(ask=ask),
        cwd=work,
        trace=trace,
    )


@pytest.fixture
def recorded(tmp_path: Path) -> tuple[Path, int]:
    """A run whose person answered "always" to `touch made.txt`; and the seq where its second
    model request is asked for (a fork there carries the run on before the model answers)."""
    work = tmp_path / "work"
    work.mkdir()
    asked: list[str] = []
    trace = tmp_path / "recorded.jsonl"
    always = PermissionAnswer.allow_always()
    result = agent(work, trace, always, asked, TOUCH, DONE).run_sync("make it")
    assert result.terminal == "completed" and asked == ["touch made.txt"]
    requests = [
        record.data["seq"]
        for record in read_trace(trace).of_kind("effect")
        if record.data["effect"]["type"] == "CallModel"
    ]
    return trace, requests[1]


def carry_on(work: Path, trace: Path, at: int, *, carry: bool) -> tuple[RunResult, list[str]]:
    asked: list[str] = []
    live = agent(work, work / "live.jsonl", PermissionAnswer.deny("no"), asked, AGAIN, DONE)

    async def go() -> RunResult:
        point = fork(trace, at)
        assert point.core.session_permission_rules == ("Bash(touch made.txt)",)
        async for update in live.continue_from(point, carry_session_rules=carry):
            if isinstance(update, RunFinished):
                return update.result
        raise AssertionError("no result")

    return asyncio.run(go()), asked


def test_carried_rules_allow_as_they_did(recorded: tuple[Path, int], tmp_path: Path) -> None:
    result, asked = carry_on(tmp_path / "work", *recorded, carry=True)
    assert result.terminal == "completed" and asked == []


def test_rules_not_carried_ask_again(recorded: tuple[Path, int], tmp_path: Path) -> None:
    result, asked = carry_on(tmp_path / "work", *recorded, carry=False)
    assert result.terminal == "completed"
    assert asked == ["touch made.txt"]  # asked, and denied: the recording's rule did not allow it


def test_the_command_line_does_not_carry_them_without_a_terminal(
    recorded: tuple[Path, int],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`fork` without a terminal: the rule is named as not carried over, and the call it
    allowed is refused (no one to ask); with --keep-session-rules it runs."""
    trace, at = recorded
    scenario = tmp_path / "scenario.json"
    scenario.write_text(json.dumps({"steps": [AGAIN, DONE]}), encoding="utf-8")
    work = tmp_path / "work"
    (work / "made.txt").unlink()
    monkeypatch.chdir(work)
    argv = ["fork", str(trace), "--at", str(at), "--model", f"scripted:{scenario}"]
    assert main([*argv, "--trace", str(tmp_path / "a.jsonl")]) == 0
    err = capsys.readouterr().err
    assert "not carried over, their calls ask again: allow rules Bash(touch made.txt)" in err
    assert not (work / "made.txt").exists()
    assert main([*argv, "--trace", str(tmp_path / "b.jsonl"), "--keep-session-rules"]) == 0
    assert "not carried over" not in capsys.readouterr().err
    assert (work / "made.txt").exists()
