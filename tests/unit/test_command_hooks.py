"""Command hooks run as real subprocesses: exit codes, JSON answers, time limits, output bounds.

Each hook is a tiny Python script the test writes into ``tmp_path`` and runs through the shell,
exactly as a settings file's ``command`` would be run (SPEC §6.1).
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fsm_agent.core.effects import HookEvent
from fsm_agent.core.events import HookDecision, HookOutcome
from fsm_agent.runtime.command_hooks import OUTPUT_LIMIT, outcome_from_output
from fsm_agent.runtime.hooks import CommandHook, HookInput, HookMatcher, Hooks

HookScript = Callable[[str, str], str]  # the ``hook_script`` fixture (conftest.py)

PRE = HookInput(
    hook_event=HookEvent.PRE_TOOL_USE,
    tool_name="Write",
    tool_input={"file_path": "x.txt", "content": "hi"},
    session_id="s1",
)


def run_command(
    command: str, hook_input: HookInput = PRE, *, timeout: float | None = None
) -> HookOutcome:
    hooks = Hooks(
        pre_tool_use=[HookMatcher(hooks=[CommandHook(command=command, timeout=timeout)])],
        user_prompt_submit=[HookMatcher(hooks=[CommandHook(command=command, timeout=timeout)])],
    )
    return asyncio.run(hooks.run(hook_input))


def answering(script: HookScript, answer: dict[str, Any]) -> str:
    """A hook that prints ``answer`` as JSON and exits 0."""
    return script("answer", f"print(json.dumps({answer!r}))\n")


# --- exit codes -------------------------------------------------------------------------------


def test_exit_2_is_a_blocking_error_carrying_stderr(hook_script: HookScript) -> None:
    """Exit 2 → one blocking error ``[command]: stderr`` (SPEC §6.1)."""
    command = hook_script("block", "sys.stderr.write('no writes today'); sys.exit(2)\n")
    outcome = run_command(command)
    assert outcome.blocking_errors == (f"[{command}]: no writes today",)
    assert outcome.decision is None


def test_exit_2_without_stderr_says_so(hook_script: HookScript) -> None:
    """Exit 2 with an empty stderr still blocks, with the 'No stderr output' text."""
    outcome = run_command(hook_script("mute", "sys.exit(2)\n"))
    assert outcome.blocking_errors[0].endswith("]: No stderr output")


def test_other_exit_codes_are_non_blocking_errors_for_the_user(hook_script: HookScript) -> None:
    """Exit 1 → a system message with the exit code and stderr; nothing is blocked."""
    outcome = run_command(hook_script("fail", "sys.stderr.write('oops'); sys.exit(1)\n"))
    assert outcome.blocking_errors == ()
    assert outcome.decision is None
    [message] = outcome.system_messages
    assert "exit code 1" in message
    assert "oops" in message


def test_the_payload_arrives_on_stdin_as_json(tmp_path: Path, hook_script: HookScript) -> None:
    """The hook reads session_id, cwd, hook_event_name, tool_name and tool_input on stdin."""
    seen = tmp_path / "seen.json"
    command = hook_script("echo", f"open({str(seen)!r}, 'w').write(sys.stdin.read())\n")
    hook_input = HookInput(
        hook_event=HookEvent.POST_TOOL_USE,
        tool_name="Read",
        tool_input={"file_path": "a.txt"},
        payload={"tool_response": "alpha"},
        session_id="s9",
        cwd=str(tmp_path),
    )
    hooks = Hooks(post_tool_use=[HookMatcher(hooks=[CommandHook(command=command)])])
    assert asyncio.run(hooks.run(hook_input)) == HookOutcome()
    assert json.loads(seen.read_text()) == {
        "session_id": "s9",
        "cwd": str(tmp_path),
        "hook_event_name": "PostToolUse",
        "tool_name": "Read",
        "tool_input": {"file_path": "a.txt"},
        "tool_response": "alpha",
    }


def test_a_hook_that_never_reads_stdin_is_fine(hook_script: HookScript) -> None:
    """A hook that ignores its input and exits at once is not an error (no broken pipe)."""
    assert run_command(hook_script("ignore", "pass\n")) == HookOutcome()


# --- JSON answers -----------------------------------------------------------------------------


@pytest.mark.parametrize("decision", list(HookDecision))
def test_permission_decisions_in_json(decision: HookDecision, hook_script: HookScript) -> None:
    """hookSpecificOutput.permissionDecision allow/deny/ask becomes the hook's decision."""
    answer = {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": decision.value,
            "permissionDecisionReason": f"because {decision.value}",
        }
    }
    outcome = run_command(answering(hook_script, answer))
    assert outcome.decision is decision
    assert outcome.decision_reason == f"because {decision.value}"
    assert outcome.blocking_errors == ()


def test_legacy_block_decision_denies_with_a_blocking_error(hook_script: HookScript) -> None:
    """decision: block without a reason → deny, and the blocking error 'Blocked by hook'."""
    outcome = run_command(answering(hook_script, {"decision": "block"}))
    assert outcome.decision is HookDecision.DENY
    assert outcome.blocking_errors == ("Blocked by hook",)


def test_permission_decision_overrides_the_legacy_decision(hook_script: HookScript) -> None:
    """permissionDecision wins over decision (SPEC §6.1), and the reason falls back to reason."""
    answer = {
        "decision": "block",
        "reason": "legacy",
        "hookSpecificOutput": {"permissionDecision": "allow"},
    }
    outcome = run_command(answering(hook_script, answer))
    assert outcome.decision is HookDecision.ALLOW
    assert outcome.decision_reason == "legacy"
    assert outcome.blocking_errors == ()


def test_json_fields_reach_the_outcome(hook_script: HookScript) -> None:
    """continue:false, stopReason, systemMessage, updatedInput and additionalContext are read."""
    answer = {
        "continue": False,
        "stopReason": "enough for today",
        "systemMessage": "shown to the user",
        "suppressOutput": True,
        "hookSpecificOutput": {
            "permissionDecision": "allow",
            "updatedInput": {"file_path": "y.txt", "content": "changed"},
            "additionalContext": "the repo is frozen on Fridays",
        },
    }
    outcome = run_command(answering(hook_script, answer))
    assert outcome.prevent_continuation
    assert outcome.stop_reason == "enough for today"
    assert outcome.system_messages == ("shown to the user",)
    assert outcome.updated_input == {"file_path": "y.txt", "content": "changed"}
    assert outcome.additional_context == ("the repo is frozen on Fridays",)


def test_malformed_json_is_plain_output(hook_script: HookScript) -> None:
    """Output starting with '{' that does not parse is plain output, not a decision."""
    command = hook_script("broken", 'print(\'{"decision": "block"\')\n')
    assert run_command(command) == HookOutcome()
    prompt = HookInput(hook_event=HookEvent.USER_PROMPT_SUBMIT, payload={"prompt": "hi"})
    outcome = run_command(command, prompt)
    assert outcome.additional_context == ('{"decision": "block"',)
    assert outcome.blocking_errors == ()


def test_json_with_a_wrongly_typed_field_is_ignored_with_a_warning(hook_script: HookScript) -> None:
    """A JSON answer whose field has the wrong type decides nothing; a warning names the field."""
    outcome = run_command(answering(hook_script, {"decision": "block", "continue": "no"}))
    assert outcome.decision is None
    assert not outcome.prevent_continuation
    [warning] = outcome.system_messages
    assert "continue must be a bool" in warning


def test_an_unknown_permission_decision_is_named() -> None:
    """permissionDecision outside allow/deny/ask is refused with the value named."""
    answer = json.dumps({"hookSpecificOutput": {"permissionDecision": "maybe"}})
    outcome = outcome_from_output(HookEvent.PRE_TOOL_USE, "cmd", 0, answer, "")
    assert outcome.decision is None
    assert "'maybe'" in outcome.system_messages[0]


def test_plain_stdout_is_context_only_for_prompt_and_session_start() -> None:
    """Plain stdout is context for UserPromptSubmit and SessionStart, and nothing elsewhere."""
    for event in (HookEvent.USER_PROMPT_SUBMIT, HookEvent.SESSION_START):
        assert outcome_from_output(event, "c", 0, "note\n", "").additional_context == ("note",)
    assert outcome_from_output(HookEvent.PRE_TOOL_USE, "c", 0, "note", "") == HookOutcome()


# --- bounds -----------------------------------------------------------------------------------


def test_a_timed_out_hook_is_killed_with_its_children(
    tmp_path: Path, hook_script: HookScript
) -> None:
    """Past its timeout the hook's process group is killed; a named non-blocking error says so."""
    pid_file = tmp_path / "child.pid"
    body = (
        "import subprocess\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        f"open({str(pid_file)!r}, 'w').write(str(child.pid))\n"
        "time.sleep(60)\n"
    )
    outcome = run_command(hook_script("slow", body), timeout=1.0)
    assert outcome.blocking_errors == ()
    [message] = outcome.system_messages
    assert "timed out after 1 s" in message
    child = int(pid_file.read_text())
    for _ in range(100):  # the child was killed; init reaps it shortly after
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        time.sleep(0.02)
    else:
        pytest.fail(f"the hook's child process {child} survived the timeout")


def test_megabytes_of_output_are_bounded(hook_script: HookScript) -> None:
    """A hook printing 5 MB finishes; only OUTPUT_LIMIT bytes are kept, with a truncation note."""
    command = hook_script("chatty", "sys.stdout.write('x' * 5_000_000)\n")
    prompt = HookInput(hook_event=HookEvent.USER_PROMPT_SUBMIT, payload={"prompt": "hi"})
    [context] = run_command(command, prompt).additional_context
    assert context.startswith("x" * 1000)
    assert len(context) < OUTPUT_LIMIT + 200
    assert "truncated" in context


def test_parallel_hooks_run_at_once_and_aggregate_deny_over_ask_over_allow(
    tmp_path: Path, hook_script: HookScript
) -> None:
    """Three hooks that each wait to see the others started all finish; deny wins (SPEC §6.1)."""
    commands = []
    for name, decision in (("h_allow", "allow"), ("h_deny", "deny"), ("h_ask", "ask")):
        body = (
            f"open({str(tmp_path / name)!r} + '.started', 'w').close()\n"
            "names = ('h_allow', 'h_deny', 'h_ask')\n"
            "deadline = time.time() + 10\n"
            f"while not all(os.path.exists(os.path.join({str(tmp_path)!r}, n + '.started'))"
            " for n in names):\n"
            "    if time.time() > deadline: sys.exit(1)\n"
            "    time.sleep(0.01)\n"
            "print(json.dumps({'hookSpecificOutput': {'permissionDecision': "
            f"{decision!r}, 'permissionDecisionReason': {decision!r}}}}}))\n"
        )
        commands.append(CommandHook(command=hook_script(name, body)))
    outcome = asyncio.run(Hooks(pre_tool_use=[HookMatcher(hooks=commands)]).run(PRE))
    assert outcome.system_messages == ()  # none gave up waiting for the others
    assert outcome.decision is HookDecision.DENY
    assert outcome.decision_reason == "deny"


def test_a_command_selected_twice_runs_once(hook_script: HookScript) -> None:
    """The same command in two matching groups runs once (its blocking error appears once)."""
    command = hook_script("twice", "sys.stderr.write('x'); sys.exit(2)\n")
    group = HookMatcher(matcher="Write", hooks=[CommandHook(command=command)])
    hooks = Hooks(pre_tool_use=[group, HookMatcher(hooks=[CommandHook(command=command)])])
    assert len(asyncio.run(hooks.run(PRE)).blocking_errors) == 1
