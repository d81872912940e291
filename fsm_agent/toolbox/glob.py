"""Glob: file paths matching a pattern such as ``**/*.py``, sorted and capped."""

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

MAX_RESULTS = 100
SKIPPED_DIRS = frozenset({".git", ".hg", ".svn"})
"""Version-control internals: never listed (nobody globs for object files)."""


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
        f"file paths sorted by name, at most {MAX_RESULTS}. Use Grep to search file contents."
    )
    input_type = GlobInput
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
    found: set[str] = set()
    for candidate in root.glob(pattern):
        if SKIPPED_DIRS.intersection(candidate.relative_to(root).parts):
            continue
        try:
            # a match reached through `..` or a symlink must still lie inside the cwd
            resolved = resolve_in_cwd(str(candidate), ctx)
        except PathOutsideWorkingDirectory:
            continue
        if resolved.is_file():
            found.add(display_path(Path(os.path.normpath(candidate)), ctx))
    return sorted(found)
