"""Edit: replace an exact string in a file (once, where it is unique, or everywhere)."""

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
class EditInput:
    """Parameters of Edit."""

    file_path: str = attrs.field(
        metadata={"description": "The file to change, absolute or relative to the working dir."}
    )
    old_string: str = attrs.field(
        metadata={"description": "The exact text to replace (whitespace included)."}
    )
    new_string: str = attrs.field(metadata={"description": "The text to put in its place."})
    replace_all: bool = attrs.field(
        default=False,
        metadata={"description": "Replace every occurrence instead of exactly one."},
    )


class Edit(Tool[EditInput]):
    """Replaces an exact string in an existing file."""

    name = "Edit"
    description = (
        "Replace exact text in an existing file. old_string must occur in the file, and exactly "
        "once unless replace_all is true: include enough surrounding lines to make it unique."
    )
    input_type = EditInput
    path_field = "file_path"

    async def validate_input(self, data: EditInput, ctx: ToolContext) -> str | None:
        """The file must exist inside the working directory and hold old_string as required."""
        if data.old_string == data.new_string:
            return "old_string and new_string are identical; there is nothing to change"
        if not data.old_string:
            return "old_string must not be empty; use Write to create or overwrite a file"
        try:
            path = resolve_in_cwd(data.file_path, ctx)
        except PathOutsideWorkingDirectory as exc:
            return str(exc)
        if not path.is_file():
            return f"File does not exist: {data.file_path}"
        text = await asyncio.to_thread(path.read_text, encoding="utf-8")
        return _occurrence_problem(text, data)

    def check_permissions(self, data: EditInput, ctx: ToolContext) -> PermissionCheck:
        """Protected paths ask (safety check); others are left to the permission chain."""
        return write_permission(data.file_path, ctx)

    async def call(
        self, data: EditInput, ctx: ToolContext, progress: ProgressCallback
    ) -> ToolOutput:
        """Apply the replacement, checking again in case the file changed since validation."""
        path = ctx.checked_path or resolve_in_cwd(data.file_path, ctx)
        text = await asyncio.to_thread(path.read_text, encoding="utf-8")
        problem = _occurrence_problem(text, data)
        if problem is not None:
            return ToolOutput(content=problem, is_error=True)
        count = text.count(data.old_string) if data.replace_all else 1
        updated = text.replace(data.old_string, data.new_string, -1 if data.replace_all else 1)
        await asyncio.to_thread(write_file, path, updated, ctx)
        noun = "occurrence" if count == 1 else "occurrences"
        return ToolOutput(content=f"Updated {display_path(path, ctx)}: replaced {count} {noun}.")


def _occurrence_problem(text: str, data: EditInput) -> str | None:
    count = text.count(data.old_string)
    if count == 0:
        return f"old_string was not found in {data.file_path}"
    if count > 1 and not data.replace_all:
        return (
            f"old_string occurs {count} times in {data.file_path}; add surrounding context to "
            "make it unique, or set replace_all to change every occurrence"
        )
    return None
