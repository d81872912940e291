"""Bash: run a shell command in the working directory, with a timeout and an output cap.

The command runs as ``bash -c`` in a new session, so it and everything it starts form one
process group: a timeout or a cancellation kills the whole group, not just the shell. Commands
that :func:`~fsm_agent.toolbox.readonly_commands.is_read_only_command` can prove read-only are
concurrency-safe and allowed; every other command is left to the permission chain.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal

import attrs

from fsm_agent.runtime.tool import (
    PermissionCheck,
    ProgressCallback,
    Tool,
    ToolContext,
    ToolOutput,
)
from fsm_agent.toolbox.readonly_commands import is_read_only_command

DEFAULT_TIMEOUT_MS = 120_000
MAX_TIMEOUT_MS = 600_000
MAX_OUTPUT_CHARS = 30_000
_READ_CHUNK = 65_536
_KEEP_BYTES = MAX_OUTPUT_CHARS * 4  # UTF-8 needs at most 4 bytes a character


@attrs.frozen(kw_only=True)
class BashInput:
    """Parameters of Bash."""

    command: str = attrs.field(metadata={"description": "The command to run with bash -c."})
    timeout_ms: int | None = attrs.field(
        default=None,
        metadata={
            "description": f"Kill the command after this many milliseconds (default "
            f"{DEFAULT_TIMEOUT_MS}, at most {MAX_TIMEOUT_MS})."
        },
    )
    description: str | None = attrs.field(
        default=None,
        metadata={"description": "A few words saying what the command does, for the user."},
    )


class Bash(Tool[BashInput]):
    """Runs a bash command and returns its combined stdout and stderr."""

    name = "Bash"
    description = (
        "Run a bash command in the working directory and return its output (stdout and stderr "
        f"together, at most {MAX_OUTPUT_CHARS} characters). A non-zero exit status is reported "
        f"as an error. The command is killed after timeout_ms (default {DEFAULT_TIMEOUT_MS} ms). "
        "Prefer Read, Glob and Grep for looking at files."
    )
    input_type = BashInput
    is_shell = True

    def is_concurrency_safe(self, data: BashInput) -> bool:
        """Only commands proven read-only may run alongside others (SPEC §4)."""
        return is_read_only_command(data.command)

    def is_read_only(self, data: BashInput) -> bool:
        """Whether the command is provably read-only."""
        return is_read_only_command(data.command)

    async def validate_input(self, data: BashInput, ctx: ToolContext) -> str | None:
        """The command must not be blank and the timeout must be in range."""
        if not data.command.strip():
            return "command must not be empty"
        if data.timeout_ms is not None and not 1 <= data.timeout_ms <= MAX_TIMEOUT_MS:
            return f"timeout_ms must be between 1 and {MAX_TIMEOUT_MS}"
        return None

    def check_permissions(self, data: BashInput, ctx: ToolContext) -> PermissionCheck:
        """Read-only commands are allowed; others are left to the permission chain."""
        if is_read_only_command(data.command):
            return PermissionCheck(behavior="allow", message="read-only command")
        return PermissionCheck(behavior="passthrough")

    async def call(
        self, data: BashInput, ctx: ToolContext, progress: ProgressCallback
    ) -> ToolOutput:
        """Run the command; on timeout or cancellation kill its whole process group."""
        timeout_ms = min(data.timeout_ms or DEFAULT_TIMEOUT_MS, MAX_TIMEOUT_MS)
        process = await asyncio.create_subprocess_exec(
            "bash",
            "-c",
            data.command,
            cwd=ctx.cwd,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )
        output = _Output()
        try:
            async with asyncio.timeout(timeout_ms / 1000):
                await output.collect(process)
                code = await process.wait()
        except TimeoutError:
            await _kill_group(process)
            text = output.text() or "(no output)"
            return ToolOutput(
                content=f"Command timed out after {timeout_ms} ms and was killed.\n{text}",
                is_error=True,
            )
        except BaseException:  # cancellation (abort) above all: leave nothing running
            await _kill_group(process)
            raise
        text = output.text()
        if code != 0:
            return ToolOutput(content=f"Exit code {code}\n{text}".rstrip(), is_error=True)
        return ToolOutput(content=text)


class _Output:
    """Combined output, keeping only what will be shown (a command may print gigabytes)."""

    def __init__(self) -> None:
        self.kept = bytearray()
        self.total_bytes = 0

    async def collect(self, process: asyncio.subprocess.Process) -> None:
        if process.stdout is None:  # only when the caller asked for no pipe
            return
        while chunk := await process.stdout.read(_READ_CHUNK):
            self.total_bytes += len(chunk)
            room = _KEEP_BYTES - len(self.kept)
            if room > 0:
                self.kept += chunk[:room]

    def text(self) -> str:
        text = self.kept.decode("utf-8", errors="replace")
        if len(text) <= MAX_OUTPUT_CHARS and self.total_bytes == len(self.kept):
            return text.rstrip("\n")
        shown = text[:MAX_OUTPUT_CHARS]
        return (
            f"{shown}\n\n(output cut: showing the first {len(shown):,} characters of "
            f"about {self.total_bytes:,} bytes)"
        )


async def _kill_group(process: asyncio.subprocess.Process) -> None:
    """Kill the command's process group and reap the shell, even while being cancelled."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    # Shielded: a second cancellation must not stop the reaping (zombie, open pipe).
    await asyncio.shield(_drain(process))


async def _drain(process: asyncio.subprocess.Process) -> None:
    if process.stdout is not None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(process.stdout.read(), timeout=2)
    await process.wait()
