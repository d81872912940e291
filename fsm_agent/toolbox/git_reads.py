"""Whether the git installed here and the repository keep a read-only git command read-only.

The read-only list (``core/read_only_commands``) judges git's words. Two things it cannot see
decide whether such a command changes nothing and stays on this machine:

* **git's version.** The Bash tool runs git with ``safe.bareRepository=explicit``, so a folder
  of plain files the agent wrote (``HEAD``, ``config``, ``refs/``) is not taken for a bare
  repository whose ``config`` runs programs (``core.fsmonitor``, ``diff.external``, hooks).
  git before 2.38 ignores that setting. With such a git, or one whose version cannot be read,
  git commands are not allowed as read-only: they ask.
* **partial clones.** In a repository cloned with a filter (``extensions.partialClone``, a
  ``remote.<name>.promisor``), reading an object that was left out fetches it from the remote,
  over the network. The Bash tool runs a read-only command with ``GIT_NO_LAZY_FETCH=1``, which
  git honours from 2.44; with an older git, git commands in a partial clone ask.

The version is read once per search path (``git --version``) and kept.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from collections.abc import Iterable
from pathlib import Path

from fsm_agent.toolbox.paths import is_folder

SAFE_BARE_REPOSITORY = (2, 38)
"""The first git that honours ``safe.bareRepository``."""

NO_LAZY_FETCH = (2, 44)
"""The first git that honours ``GIT_NO_LAZY_FETCH``."""

_VERSION = re.compile(r"git version (\d+)\.(\d+)")
_PARTIAL_CLONE = re.compile(r"^\s*(?:partialclone|promisor)\s*=", re.IGNORECASE | re.MULTILINE)
_INCLUDE = re.compile(r"^\s*\[\s*include", re.IGNORECASE | re.MULTILINE)


def git_read_refusal(folders: Iterable[Path], search_path: str) -> str | None:
    """Why a git command the read-only list allows must still ask here, or None.

    Args:
        folders: where the command runs git (the working folder and the folders it enters).
        search_path: the ``PATH`` the command runs with (the git it finds is the one asked).
    """
    version = installed_git_version(search_path)
    if version is None:
        return "the installed git's version is unknown, so it may ignore safe.bareRepository"
    shown = ".".join(map(str, version))
    if version < SAFE_BARE_REPOSITORY:
        return f"git {shown} ignores safe.bareRepository (2.38 and later honour it)"
    if version < NO_LAZY_FETCH:
        for folder in folders:
            why = _partial_clone(folder)
            if why is not None:
                return f"{why}; git {shown} may fetch missing objects over the network"
    return None


@functools.cache
def installed_git_version(search_path: str) -> tuple[int, int] | None:
    """The (major, minor) version of the git found on ``search_path``, or None."""
    git = shutil.which("git", path=search_path)
    if git is None:
        return None
    try:
        result = subprocess.run(
            [git, "--version"],
            capture_output=True,
            text=True,
            timeout=10,
            stdin=subprocess.DEVNULL,
            cwd=os.sep,  # outside any repository: nothing of one is read
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    found = _VERSION.match(result.stdout)
    return (int(found.group(1)), int(found.group(2))) if found else None


def _partial_clone(folder: Path) -> str | None:
    """Why the repository holding ``folder`` may be a partial clone, or None when it is not."""
    git_dir = _git_dir(folder)
    if git_dir is None:
        return None
    configs = [git_dir / "config"]
    common = git_dir / "commondir"
    if common.is_file():  # a linked worktree: the repository's config is in the common folder
        configs.append((git_dir / common.read_text().strip()).resolve() / "config")
    for config in configs:
        try:
            text = config.read_text(errors="replace")
        except OSError:
            continue
        if _PARTIAL_CLONE.search(text):
            return f"{config} marks a partial clone"
        if _INCLUDE.search(text):
            return f"{config} includes other files, which may mark a partial clone"
    return None


def _git_dir(folder: Path) -> Path | None:
    """The ``.git`` folder of the repository holding ``folder`` (following a ``.git`` file's
    ``gitdir:`` line), or None outside any repository."""
    for place in (folder, *folder.parents):
        dot_git = place / ".git"
        if is_folder(dot_git):
            return dot_git
        if os.path.isfile(dot_git):  # noqa: PTH113 - False, not a raise, for a name too long
            line = dot_git.read_text(errors="replace").strip()
            if line.startswith("gitdir:"):
                return (place / line.removeprefix("gitdir:").strip()).resolve()
            return None
    return None
