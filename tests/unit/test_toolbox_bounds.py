"""Bounded tools (issue 8): Grep's regex cannot freeze the process, Read streams with caps and
refuses FIFOs, devices and sockets without blocking."""

from __future__ import annotations

import asyncio
import os
import socket
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from test_toolbox import call, validate

from fsm_agent.runtime.tool import ToolContext, run_call
from fsm_agent.toolbox import Grep, Read
from fsm_agent.toolbox import grep as grep_module
from fsm_agent.toolbox.read import MAX_LINE_CHARS

CATASTROPHIC = {"pattern": "(a+)+$", "path": "a.txt"}


def write_catastrophic_line(tmp_path: Path) -> None:
    """A line on which ``(a+)+$`` backtracks 2^60 times before failing."""
    (tmp_path / "a.txt").write_text("a" * 60 + "b\n", encoding="utf-8")


def test_grep_stops_a_catastrophic_pattern_at_its_timeout(tmp_path: Path) -> None:
    """``(a+)+$`` on a long line of a's plus b ends with an error naming the timeout."""
    write_catastrophic_line(tmp_path)
    result = call(Grep(timeout_s=0.5), CATASTROPHIC, tmp_path)
    assert result.is_error
    assert "Grep stopped after 0.5 s" in str(result.content)


def test_grep_cancellation_kills_the_search_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cancelling a Grep call (Ctrl-C) kills the process running the regex at once."""
    write_catastrophic_line(tmp_path)
    started: list[asyncio.subprocess.Process] = []
    spawn = asyncio.create_subprocess_exec

    async def recording_spawn(*args: Any, **kwargs: Any) -> asyncio.subprocess.Process:
        process = await spawn(*args, **kwargs)
        started.append(process)
        return process

    monkeypatch.setattr(grep_module.asyncio, "create_subprocess_exec", recording_spawn)

    async def scenario() -> None:
        ctx = ToolContext(cwd=tmp_path)
        task = asyncio.create_task(
            run_call(Grep(timeout_s=3_600), CATASTROPHIC, ctx, lambda _: None, call_id="g")
        )
        while not started:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.1)  # the child is matching now
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(scenario())
    assert started[0].returncode is not None  # killed and reaped, not left running


def test_grep_still_finds_lines(tmp_path: Path) -> None:
    """The search in a child process reports matching lines with numbers, in path order."""
    (tmp_path / "b.txt").write_text("x\nneedle one\n", encoding="utf-8")
    (tmp_path / "a.txt").write_text("needle two\n", encoding="utf-8")
    result = call(Grep(), {"pattern": "needle", "output_mode": "content"}, tmp_path)
    assert result.content == "a.txt:1:needle two\nb.txt:2:needle one"


def test_read_refuses_a_fifo_without_blocking(tmp_path: Path) -> None:
    """A FIFO is refused by validation, and by the call itself (opened non-blocking)."""
    os.mkfifo(tmp_path / "pipe")
    checked = validate(Read(), {"file_path": "pipe"}, tmp_path)
    assert not checked.ok
    assert "is a FIFO (named pipe), not a regular file" in checked.error
    ctx = ToolContext(cwd=tmp_path)
    result = asyncio.run(run_call(Read(), {"file_path": "pipe"}, ctx, lambda _: None, call_id="r"))
    assert result.is_error
    assert "FIFO" in str(result.content)


def test_read_refuses_devices_and_sockets(tmp_path: Path) -> None:
    """A character device and a socket are refused with what they are."""
    checked = validate(Read(), {"file_path": "/dev/null"}, Path("/dev"))
    assert "is a character device" in checked.error
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(tmp_path / "s"))
        checked = validate(Read(), {"file_path": "s"}, tmp_path)
    assert "is a socket" in checked.error


def peak_bytes_of_read(tmp_path: Path, raw: dict[str, Any]) -> tuple[int, str]:
    ctx = ToolContext(cwd=tmp_path)
    tracemalloc.start()
    try:
        result = asyncio.run(run_call(Read(), raw, ctx, lambda _: None, call_id="r"))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak, str(result.content)


def test_read_of_a_large_file_is_bounded_in_memory(tmp_path: Path) -> None:
    """Reading a window of a 32 MB file allocates a small fraction of it, and pages on."""
    line = "x" * 99 + "\n"
    with (tmp_path / "big.txt").open("w", encoding="utf-8") as handle:
        for _ in range(320):
            handle.write(line * 1_000)
    peak, content = peak_bytes_of_read(tmp_path, {"file_path": "big.txt", "limit": 10})
    assert peak < 2_000_000
    assert content.endswith("(showing lines 1-10 of 320000; read on with offset=11)")


def test_read_of_one_huge_line_is_bounded_in_memory(tmp_path: Path) -> None:
    """A 16 MB file without a newline is read in bounded pieces and its line is cut."""
    (tmp_path / "line.txt").write_bytes(b"y" * 16_000_000)
    peak, content = peak_bytes_of_read(tmp_path, {"file_path": "line.txt"})
    assert peak < 2_000_000
    assert content == f"     1\t{'y' * MAX_LINE_CHARS} [line cut]"
