"""What the patch and archive readers share: judging the paths a command's data names.

A patch (:mod:`~fsm_agent.toolbox.patch_targets`) and an archive
(:mod:`~fsm_agent.toolbox.archive_members`) name the files they write inside themselves. Both
readers judge those names the same way (:func:`first_protected`), and both give up when another
part of the same command may write the file they would read (:func:`named_by_another`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path, PurePosixPath
from typing import Final

from fsm_agent.core.shell_commands import CommandAnalysis, CommandPart
from fsm_agent.toolbox.paths import (
    expand_home,
    is_folder,
    names_protected,
    parts_protected,
    path_candidates,
)
from fsm_agent.toolbox.startup_places import holds_place

UNTOLD: Final = "\x00"
"""Where the data comes from cannot be told (an option we do not know): never a file's name."""


def first_protected(names: Iterable[str], cwd: Path) -> str | None:
    """The first of the paths ``names`` the data holds that is protected, or None; each judged
    at every depth a strip may cut it to (``b/cfg/x`` is ``cfg/x`` with ``-p1`` or
    ``--strip-components=1``, and ``cfg`` may be a link to ``.claude``), as
    :func:`~fsm_agent.toolbox.paths.is_protected` judges a path. An archive holds thousands of
    names in a few folders: each folder is resolved once, each name costs an ``lstat`` a depth
    (a name of which a shorter one is a part is protected whenever that one is, so the names
    are read as written once)."""
    root = os.fspath(cwd)
    folders: dict[str, str] = {}
    for name in dict.fromkeys(names):
        parts = PurePosixPath(name.strip('"')).parts
        if names_protected(cwd.joinpath(*parts)):
            return name
        for strip in range(len(parts)):
            path = os.path.join(root, *parts[strip:])  # noqa: PTH118 - strings: a loop over thousands
            if parts_protected(_resolved(path, folders).lower().split(os.sep)):  # noqa: PTH206
                return name
    return None


def first_protected_where(
    names: Sequence[str], part: CommandPart, cwd: Path, entered: Sequence[Path]
) -> str | None:
    """:func:`first_protected` in each folder the data of ``part`` may land in: ``cwd``, the
    folders ``entered`` (where a ``cd`` of the command enters), and every folder a word of
    ``part`` names (``tar -C DIR``, ``unzip -d DIR``, ``patch -d DIR``, ``git -C DIR``,
    ``--directory=DIR``) that exists or may hold a place whose files run code later
    (``site-packages``, ``~/.config``: a folder ``mkdir -p`` makes first)."""
    paths = [expand_home(c) for word in part.argv[1:] for c in path_candidates(word)]
    named = [path if path.is_absolute() else cwd / path for path in paths]
    holders = [f for f in named if holds_place([p.lower() for p in f.parts]) or is_folder(f)]
    for folder in dict.fromkeys([cwd, *entered, *holders]):
        found = first_protected(names, folder)
        if found is not None:
            return found
    return None


def _resolved(path: str, folders: dict[str, str]) -> str:
    """``os.path.realpath(path)``, its folder's resolved once per folder (``folders``)."""
    if os.path.islink(path):  # noqa: PTH114 - strings, as above
        return os.path.realpath(path)
    folder, leaf = os.path.split(path)
    real = folders.get(folder)
    if real is None:
        real = folders[folder] = os.path.realpath(folder)
    return os.path.join(real, leaf)  # noqa: PTH118


def named_by_another(name: str, part: CommandPart, analysis: CommandAnalysis) -> bool:
    """Whether a part of ``analysis`` other than ``part`` names ``name`` (it may write the file
    before ``part`` reads it: ``printf ... > x.diff && git apply x.diff``). A wrapper holding
    ``part`` whole (``xargs tar -xf x.tar``, ``sh -c 'git apply x.diff'``) does not count."""
    text = " ".join(part.argv)
    for other in analysis.parts:
        if other is part or text in " ".join(other.argv):
            continue
        words = (*other.argv[1:], *(redirect.target for redirect in other.redirects))
        if any(name in word for word in words):
            return True
    return False
