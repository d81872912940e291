"""Grep: search file contents with a Python regular expression (no external ``rg`` needed)."""

from __future__ import annotations

import asyncio
import fnmatch
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

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
from fsm_agent.toolbox.walk import walk_files

MAX_FILES = 100
MAX_LINES = 250
MAX_LINE_CHARS = 500
BINARY_SNIFF_BYTES = 8_192


@attrs.frozen(kw_only=True)
class GrepInput:
    """Parameters of Grep."""

    pattern: str = attrs.field(
        metadata={"description": "A Python regular expression searched for in each line."}
    )
    path: str | None = attrs.field(
        default=None,
        metadata={"description": "File or directory to search (default: the working directory)."},
    )
    glob: str | None = attrs.field(
        default=None,
        metadata={"description": "Only search files whose name or path matches, e.g. '*.py'."},
    )
    output_mode: Literal["files_with_matches", "content"] = attrs.field(
        default="files_with_matches",
        metadata={"description": "List matching files, or show matching lines with numbers."},
    )
    ignore_case: bool = attrs.field(
        default=False, metadata={"description": "Match without regard to case."}
    )


class Grep(Tool[GrepInput]):
    """Searches text files for lines matching a regular expression."""

    name = "Grep"
    description = (
        "Search file contents with a Python regular expression. output_mode "
        "'files_with_matches' (default) lists matching files sorted by path; 'content' shows "
        "matching lines as path:line:text. Binary files, version-control directories and "
        "what .gitignore ignores are skipped. Filter files with glob, e.g. '*.py'."
    )
    input_type = GrepInput
    path_field = "path"

    def is_concurrency_safe(self, data: GrepInput) -> bool:
        """Searching never conflicts with other reads."""
        return True

    def is_read_only(self, data: GrepInput) -> bool:
        """Searching changes nothing."""
        return True

    async def validate_input(self, data: GrepInput, ctx: ToolContext) -> str | None:
        """The pattern must compile; the path must exist (outside the cwd asks first)."""
        try:
            re.compile(data.pattern)
        except re.error as exc:
            return f"Invalid regular expression {data.pattern!r}: {exc}"
        target = resolve_path(data.path or ".", ctx)
        if not is_readable_without_asking(target, ctx):
            return None  # asked about first; what exists out there is not told before
        if not target.exists():
            return f"Path does not exist: {data.path}"
        return None

    def check_permissions(self, data: GrepInput, ctx: ToolContext) -> PermissionCheck:
        """Searching inside the working folder is allowed; elsewhere it asks."""
        return read_permission(data.path or ".", ctx)

    async def call(
        self, data: GrepInput, ctx: ToolContext, progress: ProgressCallback
    ) -> ToolOutput:
        """Return matching files, or matching lines, sorted by path."""
        target = resolve_in_cwd(data.path or ".", ctx)
        regex = re.compile(data.pattern, re.IGNORECASE if data.ignore_case else 0)
        return await asyncio.to_thread(_search, target, regex, data, ctx)


def _search(target: Path, regex: re.Pattern[str], data: GrepInput, ctx: ToolContext) -> ToolOutput:
    files: list[str] = []
    lines: list[str] = []
    for path in _candidates(target, data.glob, ctx):
        hits = list(_matching_lines(path, regex))
        if not hits:
            continue
        shown = display_path(path, ctx)
        files.append(shown)
        lines.extend(f"{shown}:{number}:{text}" for number, text in hits)
    if not files:
        return ToolOutput(content="No matches found")
    if data.output_mode == "content":
        return ToolOutput(content=_capped(lines, MAX_LINES, "matching lines"))
    return ToolOutput(content=_capped(files, MAX_FILES, "matching files"))


def _capped(items: list[str], cap: int, what: str) -> str:
    shown = items[:cap]
    if len(items) > cap:
        shown.append(f"(showing the first {cap} of {len(items)} {what}; narrow the search)")
    return "\n".join(shown)


def _candidates(target: Path, glob: str | None, ctx: ToolContext) -> Iterator[Path]:
    """Files under ``target`` in path order, filtered by ``glob``; the walk honours
    ``.gitignore``, skips the run's hidden folders and never leaves the cwd."""
    if target.is_file():
        yield target
        return
    for path in walk_files(target, ctx):
        relative = path.relative_to(target).as_posix()
        if glob and not (fnmatch.fnmatch(path.name, glob) or fnmatch.fnmatch(relative, glob)):
            continue
        yield path


def _matching_lines(path: Path, regex: re.Pattern[str]) -> Iterator[tuple[int, str]]:
    try:
        with path.open("rb") as handle:
            if b"\0" in handle.read(BINARY_SNIFF_BYTES):
                return
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return
    for number, line in enumerate(text.splitlines(), start=1):
        if regex.search(line):
            yield number, line[:MAX_LINE_CHARS]
