"""Write: create a file or replace its whole content (parent directories are created)."""

from __future__ import annotations

import asyncio

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
    resolve_in_cwd,
    write_file,
    write_permission,
)


@attrs.frozen(kw_only=True)
class WriteInput:
    """Parameters of Write."""

    file_path: str = attrs.field(
        metadata={"description": "The file to write, absolute or relative to the working dir."}
    )
    content: str = attrs.field(metadata={"description": "The complete new content of the file."})


class Write(Tool[WriteInput]):
    """Writes a whole file, creating it and its parent directories if needed."""

    name = "Write"
    description = (
        "Write a file in the working directory, replacing it entirely if it exists and creating "
        "missing parent directories. Prefer Edit for changing part of an existing file."
    )
    input_type = WriteInput
    path_field = "file_path"

    async def validate_input(self, data: WriteInput, ctx: ToolContext) -> str | None:
        """The path must lie inside the working directory and not be a directory."""
        try:
            path = resolve_in_cwd(data.file_path, ctx)
        except PathOutsideWorkingDirectory as exc:
            return str(exc)
        if path.is_dir():
            return f"{data.file_path} is a directory"
        return None

    def check_permissions(self, data: WriteInput, ctx: ToolContext) -> PermissionCheck:
        """Protected paths ask (safety check); others are left to the permission chain."""
        return write_permission(data.file_path, ctx)

    async def call(
        self, data: WriteInput, ctx: ToolContext, progress: ProgressCallback
    ) -> ToolOutput:
        """Write the content and say whether the file was created or replaced."""
        path = ctx.checked_path or resolve_in_cwd(data.file_path, ctx)
        existed = path.exists()
        await asyncio.to_thread(write_file, path, data.content, ctx)
        verb = "Replaced" if existed else "Created"
        lines = len(data.content.splitlines())
        return ToolOutput(content=f"{verb} {display_path(path, ctx)} ({lines} lines).")
