"""Writes that reach every path under a folder they name (SPEC §9.3 step 1g).

``rm -rf .`` in a repository deletes ``.git``; ``cp -r dotfiles/. ~`` writes ``~/.bashrc``;
``chmod -R +x .`` changes ``.git/hooks``: no word of them names a protected path, yet each
writes one. The Bash safety check asks for such a command when a folder it reaches is or holds
a protected path (``paths.holds_protected``, a bounded walk that does not follow links):

* what ``rm -r`` deletes and ``chmod``/``chown``/``chgrp -R`` change: every operand;
* what ``cp -r``/``-a``, ``rsync -r``/``-a`` and ``mv`` carry along: every operand but the
  last, which is where they write (with ``-t DIR``, every operand); with ``rsync --delete``,
  the last too, where it deletes what the sources do not hold.

A folder too big to search counts as holding one only when it is the working folder, holds
it, or lies outside it: the working folder's own ``.git`` and a home folder's start-up files
are near their tops, while a big folder inside it (``node_modules``, ``target``) is build
output, which ``rm -rf node_modules`` must be able to delete without a question.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Sequence
from pathlib import Path

import attrs

from fsm_agent.toolbox.paths import expand_home, is_protected, protected_within
from fsm_agent.toolbox.startup_places import holds_place


@attrs.frozen
class _TreeWrite:
    """How one program reaches a tree: the letters and long options that make it walk one
    (none: it always does), whether the last operand is where it writes rather than what it
    reaches, and whether ``-t DIR`` names that folder instead."""

    letters: str
    longs: frozenset[str]
    carries: bool = False
    target_option: bool = False
    deletes_at_target: str = ""  # the options (by how they begin) that delete there too


_RECURSIVE = frozenset({"--recursive"})
TREE_WRITES = {
    "rm": _TreeWrite("rR", _RECURSIVE),
    "chmod": _TreeWrite("R", _RECURSIVE),
    "chown": _TreeWrite("R", _RECURSIVE),
    "chgrp": _TreeWrite("R", _RECURSIVE),
    "cp": _TreeWrite("rRa", _RECURSIVE | {"--archive"}, carries=True, target_option=True),
    "mv": _TreeWrite("", frozenset(), carries=True, target_option=True),
    "rsync": _TreeWrite("ra", _RECURSIVE | {"--archive"}, carries=True, deletes_at_target="--del"),
}
"""The programs whose operands may reach a whole tree (see the module's text)."""


def reached_tree(argv: Sequence[str], cwd: Path) -> str | None:
    """The first operand of ``argv`` whose tree it writes and that holds a protected path
    (``cwd``: the resolved working folder), or None. An operand that is one is a word naming
    it, which the safety check sees already."""
    program = argv[0].rsplit("/", 1)[-1] if argv else ""
    table = TREE_WRITES.get(program)
    if table is None:
        return None
    operands, options, target = _operands(argv[1:], target_option=table.target_option)
    walks = not (table.letters or table.longs) or any(
        word in table.longs or (word[1:2] != "-" and set(word[1:]) & set(table.letters))
        for word in options
    )
    if not walks:
        return None
    reached = operands[:-1] if table.carries and target is None else operands
    if table.deletes_at_target and any(o.startswith(table.deletes_at_target) for o in options):
        reached = operands
    for word in reached:
        path = expand_home(word)
        path = path if path.is_absolute() else cwd / path
        found = protected_within(path)
        if found or (found is None and not _inside(path, cwd)):
            return word
    return None


_PLACERS = frozenset({"cp", "mv", "ln", "install"})
"""The programs that put a file (or a link, or a folder) into a destination folder under the
name it has where it comes from."""


def placed_path(
    argv: Sequence[str], cwd: Path, protected: Callable[[Path], bool] = is_protected
) -> str | None:
    """The first path ``cp``, ``mv``, ``ln`` or ``install`` creates inside a destination folder
    (the last operand when it is a folder, or ``-t DIR``) that is protected, or None:
    ``cp hook.pth .venv/lib/python3.12/site-packages/`` writes ``site-packages/hook.pth``,
    though neither word names a protected path. What a folder given as ``DIR/.`` holds lands
    there under its own names; a folder carried into a place that may hold protected files
    (``mv git ~/.config/``) counts too. ``protected`` judges a path written."""
    program = argv[0].rsplit("/", 1)[-1] if argv else ""
    if program not in _PLACERS:
        return None
    operands, _options, target = _operands(argv[1:], target_option=True)
    if target is None:
        if len(operands) < 2:
            return None
        target, operands = operands[-1], operands[:-1]
    folder = expand_home(target)
    folder = folder if folder.is_absolute() else cwd / folder
    where = [part.lower() for part in folder.absolute().parts]
    if not (target.endswith("/") or folder.is_dir() or holds_place(where)):
        return None  # the destination is the file itself: its own word is judged
    for source in operands:
        path = expand_home(source)
        path = path if path.is_absolute() else cwd / path
        names = _placed_names(source, path)
        if names is None:  # what it holds may be any name: asks where some names are protected
            if holds_place(where):
                return f"{target.rstrip('/')}/ (what {source} holds)"
            continue
        for name, is_folder in names:
            if protected(folder / name) or (is_folder and holds_place([*where, name.lower()])):
                return f"{target.rstrip('/')}/{name}"
    return None


_LISTED_LIMIT = 10_000
"""How many names of a folder given as ``DIR/.`` are judged; past them, none is."""


def _placed_names(source: str, path: Path) -> list[tuple[str, bool]] | None:
    """The names ``source`` (at ``path``) takes in a destination folder, each with whether it
    is a folder: its own name, or for ``DIR/.`` the names of what ``DIR`` holds (None when
    it holds too many to judge or cannot be listed)."""
    if source.rstrip("/").endswith("/.") or source.rstrip("/") == ".":
        try:
            with os.scandir(path) as listing:
                entries = list(itertools.islice(listing, _LISTED_LIMIT + 1))
        except OSError:
            return None
        if len(entries) > _LISTED_LIMIT:
            return None
        return [(entry.name, entry.is_dir(follow_symlinks=False)) for entry in entries]
    name = Path(source.rstrip("/")).name
    return [] if name in ("", "..") else [(name, source.endswith("/") or path.is_dir())]


def _operands(
    args: Sequence[str], *, target_option: bool
) -> tuple[list[str], list[str], str | None]:
    """The operands and options of ``args``, and the target folder given by option
    (``-t DIR``, ``-tDIR``, ``--target-directory=DIR``, when ``target_option``; None when there
    is none), whose value is neither."""
    operands: list[str] = []
    options: list[str] = []
    target: str | None = None
    index = 0
    while index < len(args):
        word = args[index]
        index += 1
        if word == "--":
            operands += args[index:]
            break
        if not word.startswith("-") or word == "-":
            operands.append(word)
            continue
        options.append(word)
        if not target_option:
            continue
        if word.startswith("--target-directory"):
            target = word.partition("=")[2] or (args[index] if index < len(args) else "")
            index += "=" not in word
        elif word[1:2] != "-" and "t" in word:
            attached = word.partition("t")[2]
            if attached:
                target = attached
            elif index < len(args):
                target = args[index]
                index += 1  # -t DIR: where it writes
    return operands, options, target


def _inside(path: Path, cwd: Path) -> bool:
    """Whether ``path`` lies inside the working folder ``cwd``, not being it."""
    resolved = path.resolve()
    return resolved != cwd and resolved.is_relative_to(cwd)
