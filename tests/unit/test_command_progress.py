"""A command's output as progress texts (``CommandProgress``), fed chunks by hand.

No subprocess and no timing: an interval of 0 reports every chunk, an interval of an hour
reports only the first chunk and what the size trigger or the call's bound sends; the one
test of the timer waits for the report whatever it takes, and asserts only its order.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from fsm_agent.toolbox.command_progress import (
    NO_MORE_PROGRESS,
    PROGRESS_CHARS,
    REPORT_CHARS,
    CommandProgress,
    left_out_line,
)

HOUR = 3600.0


def fed(chunks: list[bytes], *, interval: float = 0.0) -> list[str]:
    """The texts reported for ``chunks``, fed in turn inside a running loop."""
    reports: list[str] = []

    async def go() -> None:
        progress = CommandProgress(reports.append, interval=interval)
        for chunk in chunks:
            progress.add(chunk)
        progress.close()

    asyncio.run(go())
    return reports


def test_each_chunk_is_reported_in_order_with_no_interval() -> None:
    assert fed([b"one\n", b"two", b"\nthree"]) == ["one\n", "two", "\nthree"]


def test_a_character_split_across_reads_is_reported_whole() -> None:
    """A read may end inside a multi-byte character: it is reported with its last byte, never
    as a replacement character, and no report ends inside one."""
    euro, face = "€".encode(), "🙂".encode()
    chunks = [b"a" + euro[:1], euro[1:2], euro[2:] + face[:3], face[3:] + b"z"]
    reports = fed(chunks)
    assert reports == ["a", "€", "🙂z"]
    assert "\ufffd" not in "".join(reports)


def test_bytes_that_are_not_utf8_read_as_replacement_characters() -> None:
    reports = fed([bytes(range(256)), b"\xff\xfe\x00end"])
    joined = "".join(reports)
    assert joined == (bytes(range(256)) + b"\xff\xfe\x00end").decode("utf-8", errors="replace")
    assert joined.endswith("\ufffd\ufffd\x00end")


def test_chunks_within_the_interval_wait_for_the_size_trigger() -> None:
    """The first chunk is reported at once; later ones wait, and are reported together as
    soon as a report's worth has gathered."""
    small = [b"a", b"b", b"c"]
    assert fed(small, interval=HOUR) == ["a"]  # "bc" waits: the call ended first
    filler = b"x" * (REPORT_CHARS - 2)
    assert fed([*small, filler], interval=HOUR) == ["a", "bc" + filler.decode()]


def test_a_burst_reports_its_end_and_how_much_was_left_out() -> None:
    """More than a report's worth at once: the last lines, from a line's start, after a line
    saying how many characters were not shown."""
    lines = [f"line {number:05}\n" for number in range(2000)]
    burst = "".join(lines)
    (report,) = fed([burst.encode()])
    note, tail = report.split("\n", 1)
    assert len(tail) <= REPORT_CHARS
    assert burst.endswith(tail)
    assert tail.startswith("line ")
    left_out = len(burst) - len(tail)
    assert note + "\n" == left_out_line(left_out)
    assert f"{left_out:,} characters not shown" in note


def test_a_calls_progress_is_bounded_then_says_so_once() -> None:
    """Past the bound, one last text says that further output is not shown; nothing after."""
    chunk = ("y" * 99 + "\n").encode()
    reports = fed([chunk] * (2 * PROGRESS_CHARS // len(chunk)))
    assert reports[-1] == NO_MORE_PROGRESS
    assert NO_MORE_PROGRESS not in reports[:-1]
    shown = "".join(reports[:-1])
    assert len(shown) == PROGRESS_CHARS
    assert (chunk.decode() * (PROGRESS_CHARS // len(chunk) + 1)).startswith(shown)


def test_a_flood_makes_few_reports() -> None:
    """Megabytes in large reads within one interval: a report per read until the bound, each
    of at most a report's worth, then the last line."""
    chunk = b"z" * 65_536
    reports = fed([chunk] * 800, interval=HOUR)  # 50 MiB
    note = len(left_out_line(10**9))
    assert len(reports) <= PROGRESS_CHARS // REPORT_CHARS + 2
    assert all(len(text) <= REPORT_CHARS + note for text in reports)
    assert sum(map(len, reports)) <= PROGRESS_CHARS + len(NO_MORE_PROGRESS)
    assert reports[-1] == NO_MORE_PROGRESS


def test_what_waits_is_reported_when_the_interval_has_passed() -> None:
    reports: list[str] = []

    async def go() -> None:
        progress = CommandProgress(reports.append, interval=0.01)
        progress.add(b"first ")
        progress.add(b"second")  # within the interval: it waits for the timer
        async with asyncio.timeout(10):
            while len(reports) < 2:
                await asyncio.sleep(0.005)
        progress.close()

    asyncio.run(go())
    assert reports == ["first ", "second"]


def _closed_then_waited(after_close: Callable[[CommandProgress], None]) -> list[str]:
    reports: list[str] = []

    async def go() -> None:
        progress = CommandProgress(reports.append, interval=0.01)
        progress.add(b"before")
        progress.add(b"waiting")  # a timer is set for it
        progress.close()
        after_close(progress)
        await asyncio.sleep(0.1)  # well past the timer: it must not fire

    asyncio.run(go())
    return reports


def test_nothing_is_reported_once_closed() -> None:
    assert _closed_then_waited(lambda progress: None) == ["before"]
    assert _closed_then_waited(lambda progress: progress.add(b"after" * 2000)) == ["before"]
