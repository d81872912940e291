"""Command hooks from a settings file, through a whole ``Agent`` run on a scripted model.

Each hook is a real subprocess (a tiny script in ``tmp_path``); the checks are on what the
tool did (the file system), what the model was sent next, and how the run ended.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fsm_agent.core.config import LoopConfig
from fsm_agent.core.messages import SystemMessage, ToolResultBlock, tool_results
from fsm_agent.errors import ConfigError
from fsm_agent.runtime.agent import Agent, RunResult
from fsm_agent.runtime.hooks import Hooks
from fsm_agent.runtime.permissions import PermissionPolicy, PermissionRequest
from fsm_agent.testing.scenario import ScriptedModel, parse_scenario
from fsm_agent.toolbox import Read, Write

HookScript = Callable[[str, str], str]  # the ``hook_script`` fixture (conftest.py)
MODEL = "scripted-model"
WRITE_NOTE = {"tool_use": {"name": "Write", "input": {"file_path": "note.txt", "content": "x"}}}
READ_A = {"tool_use": {"name": "Read", "input": {"file_path": "a.txt"}}}
DONE = {"content": [{"text": "Done."}]}


def settings_hooks(event: str, command: str, matcher: str = "Write|Read") -> Hooks:
    """Hooks as a settings file would declare them: one command for one event."""
    group = {"matcher": matcher, "hooks": [{"type": "command", "command": command}]}
    return Hooks.from_settings({event: [group]}, source="settings.json")


def run_agent(
    tmp_path: Path, first: dict[str, Any], hooks: Hooks, **options: Any
) -> tuple[RunResult, ScriptedModel]:
    """Run one prompt: the model makes the ``first`` tool call, then says it is done."""
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    (work / "a.txt").write_text("alpha\n", encoding="utf-8")
    model = ScriptedModel(parse_scenario({"steps": [{"content": [first]}, DONE]}), name=MODEL)
    agent = Agent(
        model=model,
        tools=[Read(), Write()],
        config=LoopConfig(model=MODEL),
        hooks=hooks,
        trace=False,
        cwd=work,
        **options,
    )
    return asyncio.run(agent.run("Go.")), model


def only_result(result: RunResult) -> ToolResultBlock:
    [block] = [b for m in result.messages for b in tool_results(m)]
    return block


def answer(script: HookScript, payload: dict[str, Any]) -> str:
    return script("answer", f"print(json.dumps({payload!r}))\n")


def decision(value: str, reason: str = "", **extra: Any) -> dict[str, Any]:
    specific = {"hookEventName": "PreToolUse", "permissionDecision": value, **extra}
    return {"hookSpecificOutput": {**specific, "permissionDecisionReason": reason}}


def test_exit_2_blocks_the_write_and_feeds_stderr_back(
    tmp_path: Path, hook_script: HookScript
) -> None:
    """A PreToolUse hook exiting 2 denies the call; the model reads the hook's stderr."""
    command = hook_script("guard", "sys.stderr.write('notes are read-only'); sys.exit(2)\n")
    result, _ = run_agent(tmp_path, WRITE_NOTE, settings_hooks("PreToolUse", command))
    block = only_result(result)
    assert block.is_error
    assert "PreToolUse:Write hook error" in str(block.content)
    assert "notes are read-only" in str(block.content)
    assert not (tmp_path / "work" / "note.txt").exists()


def test_json_deny_blocks_with_its_reason(tmp_path: Path, hook_script: HookScript) -> None:
    """permissionDecision deny: the call does not run; its result carries the reason."""
    command = answer(hook_script, decision("deny", "frozen until Monday"))
    result, _ = run_agent(tmp_path, WRITE_NOTE, settings_hooks("PreToolUse", command))
    assert "frozen until Monday" in str(only_result(result).content)
    assert not (tmp_path / "work" / "note.txt").exists()


def test_json_allow_runs_the_call_without_a_prompt(tmp_path: Path, hook_script: HookScript) -> None:
    """permissionDecision allow: Write runs though no one could have been asked."""
    result, _ = run_agent(
        tmp_path, WRITE_NOTE, settings_hooks("PreToolUse", answer(hook_script, decision("allow")))
    )
    assert not only_result(result).is_error
    assert (tmp_path / "work" / "note.txt").read_text() == "x"


def test_json_ask_asks_the_user_even_for_a_read(tmp_path: Path, hook_script: HookScript) -> None:
    """permissionDecision ask: the ask callback is consulted, for a call the tool would allow."""
    asked: list[PermissionRequest] = []

    def ask(request: PermissionRequest) -> bool:
        asked.append(request)
        return False

    command = answer(hook_script, decision("ask", "look first"))
    result, _ = run_agent(
        tmp_path,
        READ_A,
        settings_hooks("PreToolUse", command),
        permissions=PermissionPolicy(ask=ask),
    )
    assert [r.tool_name for r in asked] == ["Read"]
    assert only_result(result).is_error


def test_updated_input_reaches_the_tool(tmp_path: Path, hook_script: HookScript) -> None:
    """updatedInput with allow replaces the input the tool is called with."""
    new_input = {"file_path": "other.txt", "content": "rewritten by the hook"}
    command = answer(hook_script, decision("allow", updatedInput=new_input))
    result, _ = run_agent(tmp_path, WRITE_NOTE, settings_hooks("PreToolUse", command))
    assert not only_result(result).is_error
    assert (tmp_path / "work" / "other.txt").read_text() == "rewritten by the hook"
    assert not (tmp_path / "work" / "note.txt").exists()


def test_additional_context_reaches_the_next_request(
    tmp_path: Path, hook_script: HookScript
) -> None:
    """PostToolUse additionalContext is in the messages of the model's next request."""
    payload = {
        "hookSpecificOutput": {
            "hookEventName": "PostToolUse",
            "additionalContext": "a.txt is generated; do not edit it",
        }
    }
    hooks = settings_hooks("PostToolUse", answer(hook_script, payload))
    result, model = run_agent(tmp_path, READ_A, hooks)
    assert result.terminal == "completed"
    assert "a.txt is generated; do not edit it" in json.dumps(model.requests[1].messages)


def test_continue_false_ends_the_run_hook_stopped(tmp_path: Path, hook_script: HookScript) -> None:
    """PostToolUse continue:false ends the run hook_stopped; the model is not asked again."""
    hooks = settings_hooks(
        "PostToolUse", answer(hook_script, {"continue": False, "stopReason": "quota reached"})
    )
    result, model = run_agent(tmp_path, READ_A, hooks)
    assert result.terminal == "hook_stopped"
    assert len(model.requests) == 1
    assert "quota reached" in json.dumps([str(m) for m in result.messages])


def test_a_hook_whose_matcher_does_not_match_does_not_run(
    tmp_path: Path, hook_script: HookScript
) -> None:
    """A Bash-only blocking hook leaves a Read alone."""
    command = hook_script("guard", "sys.exit(2)\n")
    result, _ = run_agent(tmp_path, READ_A, settings_hooks("PreToolUse", command, matcher="Bash"))
    assert not only_result(result).is_error


def test_hooks_of_a_settings_file_run_in_an_agent(tmp_path: Path, hook_script: HookScript) -> None:
    """Agent(settings=FILE) runs the file's command hooks beside the Python ones."""
    command = hook_script("guard", "sys.stderr.write('not from settings'); sys.exit(2)\n")
    group = {"matcher": "Write", "hooks": [{"type": "command", "command": command}]}
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({"hooks": {"PreToolUse": [group]}}), encoding="utf-8")
    result, _ = run_agent(tmp_path, WRITE_NOTE, Hooks(), settings=settings)
    assert "not from settings" in str(only_result(result).content)
    assert not (tmp_path / "work" / "note.txt").exists()


def test_a_malformed_hooks_key_in_settings_stops_the_agent_early(tmp_path: Path) -> None:
    """A bad hook entry in a settings file is a ConfigError naming the file and the key path."""
    settings = tmp_path / "settings.json"
    bad = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x", "timeout": 0}]}]}}
    settings.write_text(json.dumps(bad), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"settings.json: hooks.Stop\[0\].hooks\[0\].timeout"):
        run_agent(tmp_path, WRITE_NOTE, Hooks(), settings=settings)


def test_session_end_command_hooks_finish_before_the_run_returns(
    tmp_path: Path, hook_script: HookScript
) -> None:
    """A SessionEnd command hook has run, with the terminal as its reason, when run() returns."""
    seen = tmp_path / "ended.json"
    command = hook_script("end", f"open({str(seen)!r}, 'w').write(sys.stdin.read())\n")
    result, _ = run_agent(tmp_path, READ_A, settings_hooks("SessionEnd", command, matcher=""))
    assert result.terminal == "completed"
    payload = json.loads(seen.read_text())
    assert payload["hook_event_name"] == "SessionEnd"
    assert payload["reason"] == "completed"


def test_a_hook_answering_the_wrong_type_warns_and_the_run_goes_on(tmp_path: Path) -> None:
    """A PreToolUse hook returning a dict decides nothing; the user sees a warning naming it."""

    def sloppy(_: Any) -> Any:
        return {"decision": "deny"}

    result, _ = run_agent(tmp_path, READ_A, Hooks(pre_tool_use=[sloppy]))
    assert result.terminal == "completed"
    assert not only_result(result).is_error  # the Read ran: the dict was not a denial
    notices = [m.text for m in result.messages if isinstance(m, SystemMessage)]
    assert any("sloppy" in text and "dict" in text for text in notices)
