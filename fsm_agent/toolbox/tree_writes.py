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

from collections.abc import Sequence
from pathlib import Path

import attrs

from fsm_agent.core.tree_transfers import received_trees
from fsm_agent.toolbox.paths import is_protected, protected_within, word_path
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
    for word in written_trees(argv):
        path = word_path(word, cwd)
        found = protected_within(path)
        if found or (found is None and not _inside(path, cwd)):
            return word
    return None


def received_tree(argv: Sequence[str], cwd: Path) -> str | None:
    """The folder a copy from another place writes whole (``aws s3 sync s3://b DIR``,
    ``rclone copy remote:x DIR``: :mod:`~fsm_agent.core.tree_transfers`) when it is, holds or
    may hold a protected path (``~/.config/git``, ``site-packages``, a repository's ``.git``):
    the names come from elsewhere. ``cwd``: the folder relative words start from."""
    for word in received_trees(argv):
        path = word_path(word, cwd)
        parts = [part.lower() for part in path.absolute().parts]
        if is_protected(path) or holds_place(parts) or protected_within(path) is not False:
            return word
    return None


def written_trees(argv: Sequence[str]) -> list[str]:
    """The operands of ``argv`` whose whole tree it writes (see the module's text), as
    written."""
    program = argv[0].rsplit("/", 1)[-1] if argv else ""
    table = TREE_WRITES.get(program)
    if table is None:
        return []
    operands, options, target = _operands(argv[1:], target_option=table.target_option)
    walks = not (table.letters or table.longs) or any(
        word in table.longs or (word[1:2] != "-" and set(word[1:]) & set(table.letters))
        for word in options
    )
    if not walks:
        return []
    reached = operands[:-1] if table.carries and target is None else operands
    if table.deletes_at_target and any(o.startswith(table.deletes_at_target) for o in options):
        reached = operands
    return reached


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
