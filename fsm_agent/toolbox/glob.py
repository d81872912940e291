"""Glob: file paths matching a pattern such as ``**/*.py``, sorted and capped.

The files visited are those of :func:`~fsm_agent.toolbox.walk.walk_files`: ``.gitignore``
rules and the run's hidden folders apply.
"""

from __future__ import annotations

import asyncio
import os
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
    PathOutsideWorkingDirectory,
    display_path,
    is_readable_without_asking,
    read_permission,
    resolve_in_cwd,
    resolve_path,
)
from fsm_agent.toolbox.walk import glob_regex, walk_files

MAX_RESULTS = 100
_WILDCARDS = frozenset("*?[")


@attrs.frozen(kw_only=True)
class GlobInput:
    """Parameters of Glob."""

    pattern: str = attrs.field(
        metadata={"description": "A glob pattern relative to path, e.g. '**/*.py' or 'src/*.ts'."}
    )
    path: str | None = attrs.field(
        default=None,
        metadata={"description": "The directory to search in (default: the working directory)."},
    )


class Glob(Tool[GlobInput]):
    """Lists files whose path matches a glob pattern."""

    name = "Glob"
    description = (
        "Find files by name pattern ('**' matches any number of directories). Returns matching "
        f"file paths sorted by name, at most {MAX_RESULTS}; what .gitignore ignores is left "
        "out. Use Grep to search file contents."
    )
    input_type = GlobInput
    read_only = True
    path_field = "path"

    def is_concurrency_safe(self, data: GlobInput) -> bool:
        """Listing never conflicts with other reads."""
        return True

    def is_read_only(self, data: GlobInput) -> bool:
        """Listing changes nothing."""
        return True

    async def validate_input(self, data: GlobInput, ctx: ToolContext) -> str | None:
        """The pattern must be relative; the directory must exist (outside the cwd asks first)."""
        if not data.pattern or Path(data.pattern).is_absolute():
            return "pattern must be a non-empty relative pattern; put the directory in path"
        root = resolve_path(data.path or ".", ctx)
        if not is_readable_without_asking(root, ctx):
            return None  # asked about first; what exists out there is not told before
        if not root.is_dir():
            return f"Not a directory: {data.path}"
        return None

    def check_permissions(self, data: GlobInput, ctx: ToolContext) -> PermissionCheck:
        """Listing inside the working folder is allowed; elsewhere it asks."""
        return read_permission(data.path or ".", ctx)

    async def call(
        self, data: GlobInput, ctx: ToolContext, progress: ProgressCallback
    ) -> ToolOutput:
        """Return the sorted matches, one per line."""
        root = resolve_in_cwd(data.path or ".", ctx)
        matches = await asyncio.to_thread(_matches, root, data.pattern, ctx)
        if not matches:
            return ToolOutput(content="No files found")
        lines = matches[:MAX_RESULTS]
        if len(matches) > MAX_RESULTS:
            lines.append(
                f"(showing the first {MAX_RESULTS} of {len(matches)} files; "
                "use a more specific pattern or path)"
            )
        return ToolOutput(content="\n".join(lines))


def _matches(root: Path, pattern: str, ctx: ToolContext) -> list[str]:
    # The literal leading segments name the folder to walk; the rest is matched below it.
    segments = [part for part in pattern.split("/") if part not in {"", "."}]
    base = root
    while len(segments) > 1 and not _WILDCARDS.intersection(segments[0]):
        base = base / segments.pop(0)
    try:
        base = resolve_in_cwd(str(base), ctx)
    except PathOutsideWorkingDirectory:
        return []
    if not base.is_dir():
        return []
    rest = "/".join(segments)
    regex = glob_regex(rest)
    depth = None if "**" in segments else len(segments) - 1
    found = {
        display_path(Path(os.path.normpath(path)), ctx)
        for path in walk_files(base, ctx, max_depth=depth)
        if regex.match(path.relative_to(base).as_posix())
    }
    return sorted(found)
