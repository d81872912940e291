"""Grep: search file contents with a Python regular expression (no external ``rg`` needed).

The files are listed here; the regex runs in a child process
(:mod:`fsm_agent.toolbox.regex_search`), because Python's ``re`` holds the GIL while it
matches: a pattern with catastrophic backtracking would freeze every timer and Ctrl-C of the
whole process. The child is killed when :attr:`Grep.timeout_s` passes or the call is
cancelled, so a runaway pattern costs at most that long and never blocks an interrupt.
"""

from __future__ import annotations

import asyncio
import fnmatch
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

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
DEFAULT_TIMEOUT_S = 30.0
"""How long one search may take before its process is killed."""
WORKER = Path(__file__).with_name("regex_search.py")


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
    read_only = True
    path_field = "path"

    def __init__(self, *, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        super().__init__()
        self.timeout_s = timeout_s

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
        files = await asyncio.to_thread(lambda: list(_candidates(target, data.glob, ctx)))
        if not files:
            return ToolOutput(content="No matches found")
        request = {
            "pattern": data.pattern,
            "ignore_case": data.ignore_case,
            "files": [str(path) for path in files],
            "max_hits": MAX_LINES,
            "max_line_chars": MAX_LINE_CHARS,
            "sniff_bytes": BINARY_SNIFF_BYTES,
        }
        found = await _run_worker(request, self.timeout_s)
        if found is None:
            return ToolOutput(
                content=f"Grep stopped after {self.timeout_s:g} s: the pattern {data.pattern!r} "
                "takes too long to match (nested repetition such as (a+)+ backtracks "
                "without end). Simplify the pattern or narrow the path.",
                is_error=True,
            )
        return _report(found, files, data, ctx)


async def _run_worker(request: dict[str, Any], timeout_s: float) -> list[dict[str, Any]] | None:
    """Run the search in a child process; None when it ran past ``timeout_s`` (killed)."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-I",  # isolated: no user site, no PYTHON* variables, the script's folder not on path
        str(WORKER),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        async with asyncio.timeout(timeout_s):
            out, err = await process.communicate(json.dumps(request).encode())
    except TimeoutError:
        return None
    finally:
        # Timed out or cancelled (Ctrl-C): kill the child at once; it holds nothing.
        if process.returncode is None:
            process.kill()
            await process.wait()
    if process.returncode != 0:
        problem = err.decode(errors="replace").strip().splitlines()[-1:] or ["no output"]
        raise RuntimeError(f"the search process failed: {problem[0]}")
    return [json.loads(line) for line in out.splitlines()]


def _report(
    found: list[dict[str, Any]], files: list[Path], data: GrepInput, ctx: ToolContext
) -> ToolOutput:
    if not found:
        return ToolOutput(content="No matches found")
    shown = [display_path(files[item["file"]], ctx) for item in found]
    if data.output_mode == "content":
        lines = [
            f"{name}:{number}:{text}"
            for name, item in zip(shown, found, strict=True)
            for number, text in item["hits"]
        ]
        total = sum(item["count"] for item in found)
        return ToolOutput(content=_capped(lines, total, MAX_LINES, "matching lines"))
    return ToolOutput(content=_capped(shown, len(shown), MAX_FILES, "matching files"))


def _capped(items: list[str], total: int, cap: int, what: str) -> str:
    shown = items[:cap]
    if total > cap:
        shown.append(f"(showing the first {cap} of {total} {what}; narrow the search)")
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
