"""Read: a text file's lines, numbered, optionally a window of them.

Read bounds its own output (a line limit, a per-line cut and a character budget), so it opts
out of the generic result truncation and tells the model how to page instead.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

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

DEFAULT_LINE_LIMIT = 2_000
MAX_LINE_CHARS = 2_000
MAX_OUTPUT_CHARS = 50_000


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
        if not is_readable_without_asking(path, ctx):
            return None  # asked about first; what exists out there is not told before
        if not path.exists():
            return f"File does not exist: {data.file_path}"
        if path.is_dir():
            return f"{data.file_path} is a directory; use Glob to list its files"
        return None

    def check_permissions(self, data: ReadInput, ctx: ToolContext) -> PermissionCheck:
        """Reads inside the working folder are allowed; elsewhere they ask."""
        return read_permission(data.file_path, ctx)

    async def call(
        self, data: ReadInput, ctx: ToolContext, progress: ProgressCallback
    ) -> ToolOutput:
        """Return the numbered lines of the requested window."""
        path = resolve_in_cwd(data.file_path, ctx)
        text = await asyncio.to_thread(_read_text, path)
        shown = display_path(path, ctx)
        if not text:
            return ToolOutput(content=f"{shown} exists but is empty.")
        lines = text.splitlines()
        start = (data.offset or 1) - 1
        if start >= len(lines):
            return ToolOutput(
                content=f"{shown} has {len(lines)} lines; offset {start + 1} is past the end."
            )
        stop = min(len(lines), start + (data.limit or DEFAULT_LINE_LIMIT))
        out: list[str] = []
        used = 0
        for number in range(start, stop):
            line = lines[number]
            if len(line) > MAX_LINE_CHARS:
                line = line[:MAX_LINE_CHARS] + " [line cut]"
            entry = f"{number + 1:6}\t{line}"
            if out and used + len(entry) + 1 > MAX_OUTPUT_CHARS:
                break
            out.append(entry)
            used += len(entry) + 1
        last = start + len(out)
        if last < len(lines):
            out.append(
                f"\n(showing lines {start + 1}-{last} of {len(lines)}; "
                f"read on with offset={last + 1})"
            )
        return ToolOutput(content="\n".join(out))


def _read_text(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace")
