"""Command hooks: run a shell command with the hook's JSON on stdin, read what it answers.

The output protocol is Claude Code's (SPEC §6.1):

* exit 0 with plain stdout: success. For UserPromptSubmit and SessionStart the text is context
  for the model; for the other events it is not shown to anyone.
* exit 0 with a JSON object on stdout: ``continue: false`` (+ ``stopReason``) stops the loop;
  ``decision: approve/block`` (+ ``reason``) allows or blocks;
  ``hookSpecificOutput.permissionDecision: allow/deny/ask`` (+ ``permissionDecisionReason``)
  overrides ``decision``; ``hookSpecificOutput.updatedInput`` replaces a tool's input;
  ``hookSpecificOutput.additionalContext`` reaches the model; ``systemMessage`` is shown to the
  user; ``suppressOutput`` is accepted (plain output is never shown here anyway).
  Output that starts with ``{`` but does not parse is plain output, as in the reference; a
  JSON object whose fields have the wrong types is plain output too, with a warning naming the
  field.
* exit 2: a blocking error, ``[<command>]: <stderr>``; what it blocks depends on the event.
* any other exit code: a non-blocking error, shown to the user.

A command runs in its own process group; past its time limit the whole group is killed and the
hook reports a non-blocking "timed out" error. Only the first ``OUTPUT_LIMIT`` bytes of stdout
and of stderr are kept (the rest is read and dropped, so a chatty hook cannot block or fill
memory).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
from typing import Any

import orjson

from fsm_agent.core import texts
from fsm_agent.core.effects import HookEvent
from fsm_agent.core.events import HookDecision, HookOutcome

OUTPUT_LIMIT = 64 * 1024
"""Bytes of stdout, and of stderr, kept from one command hook."""

_CHUNK = 64 * 1024
_PLAIN_OUTPUT_IS_CONTEXT = frozenset({HookEvent.USER_PROMPT_SUBMIT, HookEvent.SESSION_START})
_PERMISSION_DECISIONS = {d.value: d for d in HookDecision}


async def run_command_hook(
    command: str,
    hook_payload: dict[str, Any],
    *,
    hook_event: HookEvent,
    cwd: str,
    timeout_s: float,
) -> HookOutcome:
    """Run one command hook to completion (or to its time limit) and interpret its answer."""
    data = orjson.dumps(hook_payload)
    env = dict(os.environ)
    if cwd:
        # Hooks written for Claude Code find the project through this variable.
        env["CLAUDE_PROJECT_DIR"] = cwd
        env["FSM_AGENT_PROJECT_DIR"] = cwd
    label = f"[{command}]"
    try:
        process = await asyncio.create_subprocess_shell(
            command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=cwd or None,
            env=env,
            start_new_session=True,  # its own process group: a timeout kills every child
        )
    except OSError as exc:
        error = f"{type(exc).__name__}: {exc}"
        return HookOutcome(system_messages=(texts.hook_failed(hook_event.value, label, error),))
    try:
        async with asyncio.timeout(timeout_s):
            _, stdout, stderr = await asyncio.gather(
                _write_stdin(process, data), _capture(process.stdout), _capture(process.stderr)
            )
            exit_code = await process.wait()
    except TimeoutError:
        await _kill(process)
        return HookOutcome(
            system_messages=(texts.hook_timed_out(hook_event.value, label, timeout_s),)
        )
    except BaseException:  # cancelled with its tool call, or the run stopped: leave nothing
        await _kill(process)
        raise
    return outcome_from_output(hook_event, command, exit_code, stdout, stderr)


async def _write_stdin(process: asyncio.subprocess.Process, data: bytes) -> None:
    stdin = process.stdin
    assert stdin is not None
    # A hook need not read its input: a closed pipe is not an error.
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        stdin.write(data)
        await stdin.drain()
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        stdin.close()
        await stdin.wait_closed()


async def _capture(stream: asyncio.StreamReader | None) -> str:
    assert stream is not None
    kept = bytearray()
    dropped = 0
    while chunk := await stream.read(_CHUNK):
        room = max(OUTPUT_LIMIT - len(kept), 0)
        kept += chunk[:room]
        dropped += len(chunk) - min(room, len(chunk))
    text = kept.decode("utf-8", errors="replace")
    return text + texts.hook_output_truncated(dropped) if dropped else text


async def _kill(process: asyncio.subprocess.Process) -> None:
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
    await process.wait()


# --- the output protocol (pure) ---------------------------------------------------------------


class _BadOutput(Exception):
    """A JSON answer breaks the protocol; the message names the field."""


def outcome_from_output(
    hook_event: HookEvent, command: str, exit_code: int, stdout: str, stderr: str
) -> HookOutcome:
    """What a finished command hook said, by SPEC §6.1."""
    if exit_code == 2:
        return HookOutcome(blocking_errors=(texts.command_hook_blocking(command, stderr),))
    if exit_code != 0:
        failed = texts.command_hook_failed(hook_event.value, command, exit_code, stderr)
        return HookOutcome(system_messages=(failed,))
    text = stdout.strip()
    if text.startswith("{"):
        try:
            answer = json.loads(text)
        except ValueError:
            answer = None  # not JSON after all: plain output, as the reference treats it
        if isinstance(answer, dict):
            try:
                return _from_json(answer)
            except _BadOutput as problem:
                plain = _plain(hook_event, text)
                warning = texts.command_hook_output_ignored(hook_event.value, command, str(problem))
                return HookOutcome(
                    additional_context=plain.additional_context, system_messages=(warning,)
                )
    return _plain(hook_event, text)


def _plain(hook_event: HookEvent, text: str) -> HookOutcome:
    if text and hook_event in _PLAIN_OUTPUT_IS_CONTEXT:
        return HookOutcome(additional_context=(text,))
    return HookOutcome()


def _field(data: dict[str, Any], key: str, kind: type, where: str = "") -> Any:
    value = data.get(key)
    if value is not None and not isinstance(value, kind):
        raise _BadOutput(f"{where}{key} must be a {kind.__name__}, not {type(value).__name__}")
    return value


def _from_json(data: dict[str, Any]) -> HookOutcome:
    carry_on = _field(data, "continue", bool)
    stop_reason = _field(data, "stopReason", str) or ""
    legacy = _field(data, "decision", str)
    reason = _field(data, "reason", str) or ""
    system_message = _field(data, "systemMessage", str)
    _field(data, "suppressOutput", bool)
    specific = _field(data, "hookSpecificOutput", dict) or {}
    where = "hookSpecificOutput."
    permission = _field(specific, "permissionDecision", str, where)
    permission_reason = _field(specific, "permissionDecisionReason", str, where)
    updated_input = _field(specific, "updatedInput", dict, where)
    context = _field(specific, "additionalContext", str, where)

    decision: HookDecision | None = None
    blocking: tuple[str, ...] = ()
    if legacy is not None:
        if legacy not in ("approve", "block"):
            raise _BadOutput(f"decision must be 'approve' or 'block', not {legacy!r}")
        decision = HookDecision.ALLOW if legacy == "approve" else HookDecision.DENY
        if decision is HookDecision.DENY:
            reason = reason or texts.BLOCKED_BY_HOOK
            blocking = (reason,)
    if permission is not None:
        # SPEC §6.1: the hook-specific decision overrides ``decision``.
        if permission not in _PERMISSION_DECISIONS:
            raise _BadOutput(
                f"{where}permissionDecision must be 'allow', 'deny' or 'ask', not {permission!r}"
            )
        decision = _PERMISSION_DECISIONS[permission]
        reason = permission_reason or reason
        blocking = ()
    return HookOutcome(
        blocking_errors=blocking,
        prevent_continuation=carry_on is False,
        stop_reason=stop_reason,
        decision=decision,
        decision_reason=reason,
        updated_input=updated_input,
        additional_context=(context,) if context else (),
        system_messages=(system_message,) if system_message else (),
    )
