"""The paths ``find`` finds, and whether one of them may be protected (SPEC §9.3 step 1g).

``find . -exec sed -i s/a/b/ {} +`` writes every file under ``.``, ``.git``'s too, and
``find . -delete`` deletes them: no word of either names a protected path, yet each writes one.
So the Bash safety check counts a path ``find`` puts in place of ``{}`` (or deletes) as one
that may be protected, as it does a path the shell computes, unless the find cannot reach one:

* every start point is written in the command (not computed, not filled in by ``xargs``), lies
  inside the working folder, is no link, and neither is nor holds a protected path on disk;
* it follows no links (``-L``, ``-H``, ``-follow``), and a link inside a start point leads
  nowhere outside it (the program given the link writes where it points);
* its start points are not read from elsewhere (``-files0-from``, BSD's ``-f``).

So ``find src -name '*.pyc' -delete`` runs in ``bypassPermissions``; ``find . -delete`` in a
repository asks. A word holding ``{}`` with more text around it than an option's name
(``{}.bak``) is a new name, which may be a protected one: it counts as computed.

A start point holding a protected path is still no question when the find's expression keeps
every protected path out of what it finds: an expression that is a conjunction (no ``-o``,
``!``, ``,`` or parentheses) finds only what each of its ``-name``, ``-iname`` and ``-type``
tests lets through (its other tests only find less), so ``find . -name '*.pyc' -delete`` and
``find . -type d -name __pycache__ -exec rm -rf {} +`` run in a repository: the tree is walked,
and no entry it finds may be, hold, or (a link) lead to a protected path.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final

from fsm_agent.core.shell_commands import CommandPart
from fsm_agent.core.shell_wrappers import WRAPPERS
from fsm_agent.toolbox.glob_matches import name_pattern
from fsm_agent.toolbox.paths import (
    MAX_TREE_ENTRIES,
    expand_home,
    holds_protected,
    is_link,
    is_protected,
)

Selects = Callable[[str, os.DirEntry[str] | None], bool]
"""Whether a find's expression may find an entry of this name (the entry, or None for a start
point, whose kind is not looked at)."""

_LEADING_OPTIONS = frozenset({"-H", "-L", "-P", "-D"})
_LINKS_OR_ELSEWHERE = frozenset({"-H", "-L", "-follow", "-files0-from", "-f"})
"""Words after which found paths may lie outside the start points as written: links followed,
start points read from a file (GNU ``-files0-from``) or given after BSD's ``-f``."""
_EXPRESSION_START = ("-", "(", "!", ")", ",")
_NOT_A_CONJUNCTION: Final = frozenset({"-o", "-or", "!", "-not", "(", ")", ","})
_KINDS: Final = frozenset("dfl")
"""The ``-type`` letters a selection tells apart (folder, regular file, link); with any other,
``-type`` is not looked at."""
_RUNNERS = frozenset({"-exec", "-execdir", "-ok", "-okdir"})

FOUND_PATH_WORD = re.compile(r"(?:[\w-]+=)?\{\}")
"""A word that is a found path once filled in: ``{}`` alone, or an option's value
(``--output={}``, ``of={}``)."""


def is_find(part: CommandPart) -> bool:
    """Whether ``part`` runs ``find`` (by name or by path)."""
    return bool(part.argv) and part.argv[0].rsplit("/", 1)[-1] == "find"


def running_find(parts: Sequence[CommandPart], position: int) -> CommandPart | None:
    """The ``find`` part whose ``-exec``/``-execdir``/``-ok``/``-okdir`` runs
    ``parts[position]``, or None.

    A wrapper's part comes right before what it runs, which comes before anything found
    deeper (``CommandAnalysis.parts``): the nearest earlier part with one wrapper fewer.
    """
    part = parts[position]
    if not part.wrappers or not part.wrappers[-1].startswith("find -"):
        return None
    depth = len(part.wrappers) - 1
    for earlier in reversed(parts[:position]):
        if len(earlier.wrappers) == depth:
            return earlier if is_find(earlier) else None
    return None


def writes_unnamed(find: CommandPart) -> bool:
    """Whether ``find`` itself deletes what it finds (``-delete``), or runs a command on it
    that is not analysed as a part (more than one ``-exec``, a command built from names)."""
    args = find.argv[1:]
    return "-delete" in _own_words(args) or isinstance(WRAPPERS["find"](args), str)


def reaches_only_unprotected(find: CommandPart, cwd: Path, folders: Sequence[Path] | None) -> bool:
    """Whether every path ``find`` may find is, for sure, no protected path (see the module's
    text); ``cwd`` is the resolved working folder, ``folders`` those the command's relative
    words may start from (:func:`start_folders`)."""
    args = find.argv[1:]
    if folders is None or find.fed or _LINKS_OR_ELSEWHERE.intersection(_own_words(args)):
        return False
    starts = _start_points(args)
    if starts is None or any(index + 1 in find.expanded for index in starts):
        return False
    words = [args[index] for index in starts] or ["."]
    selects = _selection(find, starts)
    return all(_unprotected_tree(word, base, cwd, selects) for word in words for base in folders)


def start_folders(parts: Sequence[CommandPart], cwd: Path) -> list[Path] | None:
    """The folders a command's relative words may start from: the working folder and each one
    a ``cd`` or ``pushd`` enters (whether it runs before or after a word is not known); None
    when one goes where the command does not say (a computed folder, ``cd -``, ``pushd +1``)."""
    folders = [cwd]
    for part in parts:
        if part.argv[:1] in (("cd",), ("pushd",)):
            target = part.argv[-1] if len(part.argv) > 1 else "~"
            if len(part.argv) - 1 in part.expanded or target.startswith(("-", "+")):
                return None
            folders.append(cwd / expand_home(target))
        elif part.argv[:1] == ("popd",):
            return None
    return folders


def _own_words(args: Sequence[str]) -> list[str]:
    """``find``'s own words: ``args`` without the commands its ``-exec``-like actions run
    (``-exec rm -f {} ;``: ``-f`` is rm's), each ending at ``;`` or at ``+`` after ``{}``."""
    own: list[str] = []
    running = False
    for index, word in enumerate(args):
        if running:
            running = not (word == ";" or (word == "+" and args[index - 1] == "{}"))
        elif word in _RUNNERS:
            running = True
        else:
            own.append(word)
    return own


def _start_points(args: Sequence[str]) -> list[int] | None:
    """The indexes in ``args`` of find's start points (none: GNU find starts at ``.``), or
    None when they cannot be told apart from its expression."""
    index = 0
    while index < len(args) and (args[index] in _LEADING_OPTIONS or args[index][:2] == "-O"):
        index += 2 if args[index] == "-D" else 1  # -D takes a value
    if index < len(args) and args[index] == "--":
        index += 1
        if index < len(args) and args[index].startswith("-"):
            return None  # a start point beginning with "-", or an expression: not told apart
    first = index
    while index < len(args) and not args[index].startswith(_EXPRESSION_START):
        index += 1
    return list(range(first, index))


def _unprotected_tree(word: str, base: Path, cwd: Path, selects: Selects | None) -> bool:
    """Whether the start point ``word``, from ``base``, lies inside ``cwd``, is no link, is no
    protected path, and holds none (a link leading out of it counting as one) or, with
    ``selects``, none the find may find (:func:`_finds_no_protected`)."""
    path = base / expand_home(word)
    if is_link(path) or not path.resolve().is_relative_to(cwd) or is_protected(path):
        return False
    names = {word.rstrip("/").rsplit("/", 1)[-1] or "/", path.resolve().name, "."}
    if selects is None or any(selects(name, None) for name in names):
        return not holds_protected(path, through_links=True)
    return _finds_no_protected(path, selects)


def _selection(find: CommandPart, starts: Sequence[int]) -> Selects | None:
    """What a find whose expression is a conjunction may find, by the name (and kind) of an
    entry; None for any other expression. Tests other than ``-name``, ``-iname`` and
    ``-type`` are taken to let everything through, and so is one whose value the shell
    computes: the selection is never narrower than the find's."""
    args = find.argv[1:]
    own = _own_words(args)
    if _NOT_A_CONJUNCTION.intersection(own):
        return None
    patterns: list[re.Pattern[str]] = []
    kinds: set[str] | None = None
    index = starts[-1] + 1 if starts else 0
    while index < len(args):
        word = args[index]
        if word in _RUNNERS:  # the command it runs, up to ; or + after {}
            index += 1
            while index < len(args) and not (
                args[index] == ";" or (args[index] == "+" and args[index - 1] == "{}")
            ):
                index += 1
        elif word in ("-name", "-iname", "-type") and index + 1 < len(args):
            value, computed = args[index + 1], index + 2 in find.expanded
            if word == "-type":
                letters = set(value.split(","))
                if not computed and letters <= _KINDS:
                    kinds = letters if kinds is None else kinds & letters
            elif not computed:
                # fnmatch's pattern, as find reads it: a star matches a leading dot too.
                pattern = name_pattern(value, ignore_case=word == "-iname")
                if pattern is None:
                    return None
                patterns.append(pattern)
            index += 1
        index += 1

    def selects(name: str, entry: os.DirEntry[str] | None) -> bool:
        if not all(pattern.fullmatch(name) for pattern in patterns):
            return False
        return kinds is None or entry is None or _kind(entry) in kinds

    return selects


def _kind(entry: os.DirEntry[str]) -> str:
    """An entry's ``-type`` letter among folder, link and anything else (``f``)."""
    if entry.is_symlink():
        return "l"
    return "d" if entry.is_dir(follow_symlinks=False) else "f"


def _finds_no_protected(start: Path, selects: Selects) -> bool:
    """Whether no entry under ``start`` that ``selects`` lets through is, holds or (a link)
    leads to a protected path, or leads out of ``start``; False when the tree has more than
    :data:`~fsm_agent.toolbox.paths.MAX_TREE_ENTRIES` entries. A folder let through is not
    looked into further: what it holds is judged with it."""
    root = start.resolve()
    seen = 0
    pending = [str(start)]
    while pending:
        try:
            with os.scandir(pending.pop()) as listing:
                entries = list(listing)
        except OSError:
            continue  # a folder no one may read: find finds nothing in it either
        for entry in entries:
            seen += 1
            if seen > MAX_TREE_ENTRIES:
                return False
            folder = entry.is_dir(follow_symlinks=False)
            if not selects(entry.name, entry):
                if folder:
                    pending.append(entry.path)
                continue
            path = Path(entry.path)
            if entry.is_symlink():
                target = Path(os.path.realpath(entry.path))
                if not target.is_relative_to(root) or is_protected(target):
                    return False
                path = target
                folder = target.is_dir()
            if is_protected(path) or (folder and holds_protected(path, through_links=True)):
                return False
    return True
