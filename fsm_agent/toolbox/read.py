"""Read: a text file's lines, numbered, optionally a window of them.

Read bounds its own output (a line limit, a per-line cut and a character budget), so it opts
out of the generic result truncation and tells the model how to page instead. It also bounds
what it reads: the file is streamed line by line (never held whole in memory), a line is read
at most :data:`MAX_LINE_BYTES` at a time, and no read goes past :data:`MAX_SCAN_BYTES` into a
file. Only regular files are read: a FIFO, a device or a socket is refused with a message
(it is opened with ``O_NONBLOCK`` and checked, so a FIFO never blocks the call).
"""

from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path
from typing import IO

import attrs

from fsm_agent.runtime.tool import (
    PermissionCheck,
    ProgressCallback,
    Tool,
    ToolContext,
    ToolOutput,
)
from fsm_agent.toolbox.paths import (
    display_path,
    is_readable_without_asking,
    read_permission,
    resolve_in_cwd,
    resolve_path,
)
from fsm_agent.toolbox.walk import is_hidden

DEFAULT_LINE_LIMIT = 2_000
MAX_LINE_CHARS = 2_000
MAX_OUTPUT_CHARS = 50_000
MAX_LINE_BYTES = 4 * MAX_LINE_CHARS
"""A line is read this many bytes at a time (enough for its first MAX_LINE_CHARS characters)."""
MAX_SCAN_BYTES = 64 * 1024 * 1024
"""Read never reads further into a file than this (offsets past it are refused)."""


@attrs.frozen(kw_only=True)
class ReadInput:
    """Parameters of Read."""

    file_path: str = attrs.field(
        metadata={"description": "The file to read, absolute or relative to the working dir."}
    )
    offset: int | None = attrs.field(
        default=None,
        metadata={"description": "The line number to start at (1 is the first line)."},
    )
    limit: int | None = attrs.field(
        default=None,
        metadata={"description": f"How many lines to read (default {DEFAULT_LINE_LIMIT})."},
    )


class Read(Tool[ReadInput]):
    """Reads a text file and returns its lines numbered like ``cat -n``."""

    name = "Read"
    description = (
        "Read a text file from the working directory. Lines come back numbered (number, tab, "
        f"text). By default up to {DEFAULT_LINE_LIMIT} lines from the start; use offset and "
        "limit to read a window of a long file. Lines longer than "
        f"{MAX_LINE_CHARS} characters are cut."
    )
    input_type = ReadInput
    read_only = True
    max_result_chars = None
    path_field = "file_path"

    def is_concurrency_safe(self, data: ReadInput) -> bool:
        """Reading never conflicts with other reads."""
        return True

    def is_read_only(self, data: ReadInput) -> bool:
        """Reading changes nothing."""
        return True

    async def validate_input(self, data: ReadInput, ctx: ToolContext) -> str | None:
        """The file must exist; the window must be sane (reads outside the cwd ask first)."""
        if data.offset is not None and data.offset < 1:
            return "offset must be 1 or more (line numbers start at 1)"
        if data.limit is not None and data.limit < 1:
            return "limit must be 1 or more"
        path = resolve_path(data.file_path, ctx)
        if is_hidden(path, ctx):
            return f"{data.file_path} is in this run's own trace folder, which tools do not read"
        if not is_readable_without_asking(path, ctx):
            return None  # asked about first; what exists out there is not told before
        if not path.exists():
            return f"File does not exist: {data.file_path}"
        if path.is_dir():
            return f"{data.file_path} is a directory; use Glob to list its files"
        kind = _special_kind(path.stat().st_mode)
        if kind is not None:
            return _not_regular(data.file_path, kind)
        return None

    def check_permissions(self, data: ReadInput, ctx: ToolContext) -> PermissionCheck:
        """Reads inside the working folder are allowed; elsewhere they ask."""
        return read_permission(data.file_path, ctx)

    async def call(
        self, data: ReadInput, ctx: ToolContext, progress: ProgressCallback
    ) -> ToolOutput:
        """Return the numbered lines of the requested window."""
        path = resolve_in_cwd(data.file_path, ctx)
        start = (data.offset or 1) - 1
        try:
            window = await asyncio.to_thread(
                _read_window, path, start, data.limit or DEFAULT_LINE_LIMIT
            )
        except _NotRegularFile as exc:
            return ToolOutput(content=_not_regular(data.file_path, exc.kind), is_error=True)
        shown = display_path(path, ctx)
        total = f"{window.lines}" if window.complete else f"more than {window.lines}"
        if window.lines == 0 and window.complete:
            return ToolOutput(content=f"{shown} exists but is empty.")
        if not window.entries:
            if not window.complete:
                return ToolOutput(
                    content=f"offset {start + 1} is past the first {MAX_SCAN_BYTES:,} bytes of "
                    f"{shown}, which is as far as Read goes; use Grep to find what you need",
                    is_error=True,
                )
            return ToolOutput(
                content=f"{shown} has {total} lines; offset {start + 1} is past the end."
            )
        out = list(window.entries)
        last = start + len(out)
        if last < window.lines or not window.complete:
            out.append(
                f"\n(showing lines {start + 1}-{last} of {total}; read on with offset={last + 1})"
            )
        return ToolOutput(content="\n".join(out))


class _NotRegularFile(Exception):
    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self.kind = kind


_SPECIAL_KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a directory"),
)


def _special_kind(mode: int) -> str | None:
    """What a file that is not a regular file is, or None for a regular file."""
    for test, kind in _SPECIAL_KINDS:
        if test(mode):
            return kind
    return None if stat.S_ISREG(mode) else "not a regular file"


def _not_regular(raw: str, kind: str) -> str:
    return f"{raw} is {kind}, not a regular file; Read only reads regular files"


@attrs.frozen(kw_only=True)
class _Window:
    """What one pass over a file found: the numbered entries of the window, the lines seen,
    and whether the pass reached the end of the file (False: it stopped at the scan cap)."""

    entries: tuple[str, ...]
    lines: int
    complete: bool


def _read_window(path: Path, start: int, count: int) -> _Window:
    """Stream ``path`` once: keep lines ``start`` to ``start + count`` (0-based), count the
    rest, and never hold more than one bounded line in memory."""
    # O_NONBLOCK: opening a FIFO with no writer must not wait for one (checked just below).
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    with os.fdopen(descriptor, "rb") as handle:
        kind = _special_kind(os.fstat(handle.fileno()).st_mode)
        if kind is not None:
            raise _NotRegularFile(kind)
        entries: list[str] = []
        used = 0
        lines = 0
        scanned = 0
        full = False
        while scanned < MAX_SCAN_BYTES:
            head, size = _next_line(handle)
            if not size:
                return _Window(entries=tuple(entries), lines=lines, complete=True)
            scanned += size
            if start <= lines < start + count and not full:
                entry = f"{lines + 1:6}\t{_line_text(head)}"
                if entries and used + len(entry) + 1 > MAX_OUTPUT_CHARS:
                    full = True
                else:
                    entries.append(entry)
                    used += len(entry) + 1
            lines += 1
        return _Window(entries=tuple(entries), lines=lines, complete=False)


def _next_line(handle: IO[bytes]) -> tuple[bytes, int]:
    """The first MAX_LINE_BYTES of the next line, and the line's whole size in bytes (the rest
    of a long line is read in bounded pieces and dropped)."""
    head = handle.readline(MAX_LINE_BYTES)
    size = len(head)
    piece = head
    while piece and not piece.endswith(b"\n") and size < MAX_SCAN_BYTES:
        piece = handle.readline(MAX_LINE_BYTES)
        size += len(piece)
    return head, size


def _line_text(raw: bytes) -> str:
    cut = not raw.endswith(b"\n") and len(raw) >= MAX_LINE_BYTES
    text = raw.rstrip(b"\n").rstrip(b"\r").decode("utf-8", errors="replace")
    if cut or len(text) > MAX_LINE_CHARS:
        return text[:MAX_LINE_CHARS] + " [line cut]"
    return text
