"""Where file tools may reach: resolving paths against the working directory, and protected paths.

Every file tool resolves the model's path against ``ctx.cwd`` and follows symlinks before it
decides anything, so neither ``..`` nor a link pointing elsewhere escapes the working directory.
Writes to configuration that could run code or change the agent's own settings (SPEC §9.3
safety checks) always ask the user, whatever the permission mode.
"""

from __future__ import annotations

import os
from pathlib import Path

from fsm_agent.runtime.tool import SAFETY_CHECK, PermissionCheck, ToolContext

PROTECTED_DIRS = frozenset({".git", ".vscode", ".idea", ".claude"})
"""Directory names whose contents a write tool never changes without asking (SPEC §9.3)."""

PROTECTED_FILES = frozenset(
    {
        ".gitconfig",
        ".gitmodules",
        ".bashrc",
        ".bash_profile",
        ".zshrc",
        ".zprofile",
        ".profile",
        ".ripgreprc",
        ".mcp.json",
        ".claude.json",
    }
)
"""File names a write tool never changes without asking (SPEC §9.3)."""


class PathOutsideWorkingDirectory(ValueError):
    """A path resolves outside the working directory (and the context does not allow that)."""


def resolve_in_cwd(raw: str, ctx: ToolContext) -> Path:
    """The absolute, symlink-resolved path a tool should use for ``raw``.

    Args:
        raw: the path the model gave, absolute or relative to ``ctx.cwd``.
        ctx: the tool context.

    Raises:
        PathOutsideWorkingDirectory: the resolved path is not inside the resolved ``ctx.cwd``
            and ``ctx.allow_outside`` is false.
    """
    root = ctx.cwd.resolve()
    path = Path(raw).expanduser()
    resolved = (path if path.is_absolute() else root / path).resolve()
    if not ctx.allow_outside and not resolved.is_relative_to(root):
        raise PathOutsideWorkingDirectory(
            f"{raw} is outside the working directory {root}; "
            "only paths inside the working directory can be used"
        )
    return resolved


def display_path(path: Path, ctx: ToolContext) -> str:
    """``path`` relative to the working directory when it is inside, else absolute.

    A name that is not UTF-8 shows its odd bytes as ``\\xe9`` escapes (Python decodes it
    with lone surrogates, which neither the API nor a trace line can carry).
    """
    root = ctx.cwd.resolve()
    shown = str(path.relative_to(root)) if path.is_relative_to(root) else str(path)
    return os.fsencode(shown).decode("utf-8", "backslashreplace")


def is_protected(path: Path) -> bool:
    """Whether a write to ``path`` (as given, or after resolving symlinks) needs the user."""
    for candidate in (path.absolute(), path.resolve()):
        parts = [part.lower() for part in candidate.parts]
        if parts and parts[-1] in PROTECTED_FILES:
            return True
        if any(part in PROTECTED_DIRS for part in parts):
            return True
    return False


def write_permission(raw: str, ctx: ToolContext) -> PermissionCheck:
    """The permission opinion of a tool that writes ``raw`` (Edit, Write).

    Protected paths ask with reason :data:`~fsm_agent.runtime.tool.SAFETY_CHECK`; other paths
    inside the working directory are left to the permission chain (``passthrough``: the mode
    and rules decide).
    """
    try:
        path = resolve_in_cwd(raw, ctx)
    except PathOutsideWorkingDirectory as exc:
        return PermissionCheck(behavior="deny", message=str(exc))
    unresolved = Path(raw).expanduser()
    if not unresolved.is_absolute():
        unresolved = ctx.cwd / unresolved
    if is_protected(path) or is_protected(unresolved):
        return PermissionCheck(
            behavior="ask",
            message=f"{raw} is a protected path (version control, editor or shell "
            "configuration); writing to it needs your explicit approval",
            reason=SAFETY_CHECK,
        )
    return PermissionCheck(behavior="passthrough")


def write_file(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` as UTF-8, newlines untouched, creating parent folders."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="") as handle:
        handle.write(text)
