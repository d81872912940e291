"""A running command's output, reported as progress while it comes.

Bash reads the command's output in chunks; :class:`CommandProgress` turns them into progress
texts for the person watching (``ToolProgressReported``, never sent to the model), each the
output new since the previous one:

* decoded as UTF-8 by an incremental decoder, so a character split across two reads is
  reported whole, in the later text (bytes that are not UTF-8 read as U+FFFD, as in the
  result);
* coalesced: a text is reported at once when nothing was reported for :data:`PROGRESS_INTERVAL_S`
  seconds, otherwise when that much time has passed since the last report, or as soon as
  :data:`REPORT_CHARS` characters wait, whichever comes first;
* bounded: one text holds at most :data:`REPORT_CHARS` characters of output; of a longer burst
  it holds the end, from a line's start where one is near, after a line saying how many
  characters were left out (:func:`left_out_line`);
* bounded per call: after :data:`PROGRESS_CHARS` characters reported, one last text
  (:data:`NO_MORE_PROGRESS`) says that further output is not shown as progress.

The result of the call is not affected: it is built from the output as before. Nothing is
reported once :meth:`CommandProgress.close` has been called (the call is over).
"""

from __future__ import annotations

import asyncio
import codecs
import math
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from fsm_agent.runtime.tool import ProgressCallback

PROGRESS_INTERVAL_S: Final = 0.5
"""The default least time in seconds between two progress reports of a command
(``Bash(progress_interval=...)``)."""

REPORT_CHARS: Final = 4_000
"""At most this many characters of output in one progress report (and this many waiting
report one at once)."""

PROGRESS_CHARS: Final = 100_000
"""At most this many characters are reported as progress for one command (the lines saying
what was left out count too), then :data:`NO_MORE_PROGRESS`."""

NO_MORE_PROGRESS: Final = "[further output is not shown as progress]\n"
"""The last progress report of a command whose output went past :data:`PROGRESS_CHARS`."""

_LINE_START_WITHIN: Final = 200
"""The end of a burst begins after its first line feed when one is this close to its start."""


def left_out_line(count: int) -> str:
    """The line a report begins with when ``count`` characters of output before its text were
    not reported."""
    return f"[… {count:,} characters not shown …]\n"


class CommandProgress:
    """Reports a command's output as progress texts (see the module's description).

    Args:
        report: called with each progress text.
        interval: the least time between two reports in seconds; 0 reports every chunk read.
    """

    def __init__(self, report: ProgressCallback, *, interval: float) -> None:
        self._report = report
        self._interval = interval
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._waiting = ""  # decoded output not reported yet, at most REPORT_CHARS of it
        self._left_out = 0  # characters dropped from before ``_waiting``
        self._reported = 0  # characters reported so far, the notes of what was left out too
        self._last = -math.inf  # the loop's time of the last report
        self._timer: asyncio.TimerHandle | None = None
        self._open = True

    def add(self, chunk: bytes) -> None:
        """Take a chunk of output just read; report it now or when it is due."""
        if not self._open:
            return
        text = self._decoder.decode(chunk)
        if not text:
            return  # a character's first bytes: it is reported with the rest of it
        waiting = self._waiting + text
        if len(waiting) > REPORT_CHARS:
            tail = waiting[-REPORT_CHARS:]
            newline = tail.find("\n", 0, _LINE_START_WITHIN)
            if newline >= 0:
                tail = tail[newline + 1 :]
            self._left_out += len(waiting) - len(tail)
            waiting = tail
        self._waiting = waiting
        loop = asyncio.get_running_loop()
        due = self._last + self._interval
        if self._left_out or len(waiting) >= REPORT_CHARS or loop.time() >= due:
            self._flush()
        elif self._timer is None:
            self._timer = loop.call_at(due, self._flush)

    def close(self) -> None:
        """Report nothing more: the call is over (what still waits is not reported)."""
        self._open = False
        self._waiting = ""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _flush(self) -> None:
        """Report what waits, within the call's bound."""
        if self._timer is not None:  # the size trigger came first: the interval starts anew
            self._timer.cancel()
            self._timer = None
        if not self._open or not self._waiting:
            return
        text = self._waiting
        if self._left_out:
            text = left_out_line(self._left_out) + text
        self._waiting, self._left_out = "", 0
        room = PROGRESS_CHARS - self._reported  # above 0: the bound closes the reporting
        self._reported += len(text)
        self._last = asyncio.get_running_loop().time()
        self._report(text[:room])
        if self._reported >= PROGRESS_CHARS:
            self._report(NO_MORE_PROGRESS)
            self.close()
