"""Bash reports a running command's output as progress (``command_progress``), in a tmp_path.

Timing is never asserted: a command that must be seen while it runs waits for a file the
progress callback creates, so it ends only if its output was reported while it ran.
"""

from __future__ import annotations

import asyncio
import io
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from fsm_agent.core.events import ToolCallFinished
from fsm_agent.core.messages import (
    AssistantMessage,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)
from fsm_agent.runtime.agent import MessageUpdate, ToolProgress
from fsm_agent.runtime.tool import ToolContext, run_call
from fsm_agent.terminal_view import LiveView
from fsm_agent.toolbox import Bash
from fsm_agent.toolbox.command_progress import (
    NO_MORE_PROGRESS,
    PROGRESS_CHARS,
    PROGRESS_INTERVAL_S,
    REPORT_CHARS,
    left_out_line,
)

_LEFT_OUT = re.compile(r"\[… ([\d,]+) characters not shown …\]\n")

WAIT_FOR_GO = "while [ ! -e go ]; do sleep 0.01; done"
"""A command part that ends once the test has seen progress (it creates ``go``)."""


def bash(
    command: str,
    cwd: Path,
    *,
    interval: float = 0.0,
    timeout_ms: int | None = None,
    on_report: Callable[[list[str]], None] = lambda reports: None,
) -> tuple[ToolCallFinished, list[str]]:
    """Run ``command`` as the driver would; its result and the progress texts reported
    (``on_report`` is given them so far after each)."""
    reports: list[str] = []

    def report(text: str) -> None:
        reports.append(text)
        on_report(reports)

    raw: dict[str, Any] = {"command": command}
    if timeout_ms is not None:
        raw["timeout_ms"] = timeout_ms
    result = asyncio.run(
        run_call(Bash(progress_interval=interval), raw, ToolContext(cwd=cwd), report, call_id="b")
    )
    return result, reports


def assert_prefix_of(reports: list[str], output: str) -> None:
    """The reports, in order, are pieces of ``output`` from its start, with what a report
    says it left out skipped (the bound's last line, if any, last)."""
    if reports and reports[-1] == NO_MORE_PROGRESS:
        reports = reports[:-1]
    place = 0
    for report in reports:
        note = _LEFT_OUT.match(report)
        text = report
        if note is not None:
            place += int(note.group(1).replace(",", ""))
            text = report[note.end() :]
        assert output[place : place + len(text)] == text
        place += len(text)


def test_output_is_reported_while_the_command_runs(tmp_path: Path) -> None:
    """The command waits until its first line has been reported (with no line feed after it,
    and at the default interval), then prints more: the reports come in order, before the
    end, and are the output's start; the result is the output as before."""

    def on_report(reports: list[str]) -> None:
        if "started" in "".join(reports):
            (tmp_path / "go").touch()

    command = f"printf 'started, '; {WAIT_FOR_GO}; printf 'went on\\n'; echo last"
    result, reports = bash(
        command, tmp_path, interval=PROGRESS_INTERVAL_S, timeout_ms=60_000, on_report=on_report
    )
    assert not result.is_error, result.content
    assert result.content == "started, went on\nlast"
    assert reports[0] == "started, "
    assert_prefix_of(reports, "started, went on\nlast\n")


def test_a_failing_command_still_reports_its_output(tmp_path: Path) -> None:
    result, reports = bash("echo trying; exit 3", tmp_path)
    assert result.is_error
    assert result.content == "Exit code 3\ntrying"
    assert "".join(reports) == "trying\n"


def test_utf8_split_across_reads_is_never_a_replacement_character(tmp_path: Path) -> None:
    """The bytes of each character printed apart (the pauses only make separate reads
    likely; what is asserted holds however the reads fall)."""
    pieces = [r"\xc3", r"\xa9\xe2\x82", r"\xac\xf0\x9f", r"\x99\x82\n"]
    command = "; sleep 0.1; ".join(f"printf '{piece}'" for piece in pieces)
    result, reports = bash(command, tmp_path)
    assert result.content == "é€🙂"
    assert "\ufffd" not in "".join(reports)
    assert_prefix_of(reports, "é€🙂\n")


def test_a_flood_stays_within_the_bounds(tmp_path: Path) -> None:
    """50 MB of output at the default interval: few reports, each bounded, the call's
    progress bounded and said so once; the result is cut as before."""
    started = time.monotonic()
    result, reports = bash("yes 0123456789abcdef | head -c 50000000", tmp_path)
    elapsed = time.monotonic() - started
    assert "about 50,000,000 bytes" in str(result.content)
    note = len(left_out_line(50_000_000))
    # the size trigger at most a bound's worth of times, the interval at most once a period
    assert len(reports) <= PROGRESS_CHARS // REPORT_CHARS + 2 + elapsed / PROGRESS_INTERVAL_S
    assert all(len(text) <= REPORT_CHARS + note for text in reports)
    assert sum(map(len, reports)) <= PROGRESS_CHARS + len(NO_MORE_PROGRESS)
    assert reports[-1] == NO_MORE_PROGRESS
    assert_prefix_of(reports, "0123456789abcdef\n" * (50_000_000 // 17 + 1))


def test_binary_output_is_reported_as_text(tmp_path: Path) -> None:
    """Random bytes (5 MB): replacement characters where bytes are not UTF-8, no error, and
    the same bounds."""
    result, reports = bash("head -c 5000000 /dev/urandom", tmp_path)
    assert not result.is_error
    assert reports
    assert sum(map(len, reports)) <= PROGRESS_CHARS + len(NO_MORE_PROGRESS)
    for text in reports:
        text.encode("utf-8")  # no lone surrogate: every text can be written out


def _stopped_early(tmp_path: Path, stop: str) -> tuple[list[str], list[str]]:
    """A command printing for ever, ended by a timeout or a cancellation once it has been
    seen; the reports when the call ended, and all of them a while later."""
    command = "while true; do echo tick; sleep 0.01; done"
    reports: list[str] = []
    ended: list[str] = []

    async def go() -> None:
        ctx = ToolContext(cwd=tmp_path)
        bash = Bash(progress_interval=0)
        timeout = 500 if stop == "timeout" else 60_000
        raw = {"command": command, "timeout_ms": timeout}
        task = asyncio.create_task(run_call(bash, raw, ctx, reports.append, call_id="b"))
        if stop == "cancel":
            while not reports:
                await asyncio.sleep(0.01)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        else:
            result = await task
            assert "timed out after 500 ms" in str(result.content)
        ended.extend(reports)
        await asyncio.sleep(0.3)  # the command printed every 10 ms: none of it may come now

    asyncio.run(go())
    return ended, reports


@pytest.mark.parametrize("stop", ["timeout", "cancel"])
def test_no_progress_after_the_call_ends(tmp_path: Path, stop: str) -> None:
    ended, reports = _stopped_early(tmp_path, stop)
    assert ended
    assert reports == ended
    assert set("".join(reports).split()) == {"tick"}


def test_terminal_control_sequences_are_reported_and_shown_spelled_out(tmp_path: Path) -> None:
    """Escape sequences, carriage returns, backspaces and bidirectional controls a command
    prints are in its progress as they are; the terminal view spells them out, but for a
    carriage return, which starts the line again as it does in a terminal (a progress bar
    shows its last state)."""
    command = (
        r"printf '\033]0;owned\007\033[2J\033[1A safe\bX \xe2\x80\xae txt.exe\n'; "
        r"printf 'progress 10%%\rprogress 90%%\r'"
    )
    result, reports = bash(command, tmp_path)
    joined = "".join(reports)
    assert "\x1b]0;owned\x07" in joined
    assert "\u202e" in joined
    out = io.StringIO()
    view = LiveView(console=Console(file=out, width=300, force_terminal=False, color_system=None))
    use = ToolUseBlock(id="b", name="Bash", input={"command": command})
    view.show(MessageUpdate(message=AssistantMessage(uuid="a", message_id="m", content=(use,))))
    for text in reports:
        view.show(ToolProgress(call_id="b", text=text))
    block = ToolResultBlock(tool_use_id="b", content=result.content)
    view.show(MessageUpdate(message=UserMessage(uuid="u", content=(block,))))
    printed = out.getvalue()
    for hidden in ("\x1b", "\x07", "\r", "\x08", "\u202e"):
        assert hidden not in printed
    assert r"… Bash: \x1b]0;owned\x07\x1b[2J\x1b[1A safe\x08X \u202e txt.exe" in printed
    assert "… Bash: progress 90%\n" in printed
    assert "progress 10%" not in printed


@pytest.mark.parametrize("interval", [-1.0, float("inf"), float("nan")])
def test_the_interval_must_be_a_number_of_seconds(interval: float) -> None:
    with pytest.raises(ValueError, match="progress_interval"):
        Bash(progress_interval=interval)
