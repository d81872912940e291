"""The folder git writes checked-out files into (SPEC §9.3 step 1g, with
:mod:`~fsm_agent.toolbox.placed_files`).

Files git checks out take the names the repository gives them, which no word of the command
spells: ``git clone URL ~/.config/git`` writes ``~/.config/git/config`` when the repository
holds a ``config``. So do ``git worktree add DIR``, ``git submodule add URL DIR`` and every
command that writes a work tree (``checkout``, ``switch``, ``restore``, ``reset``, ``pull``,
``merge``, ``stash``...) in the work tree ``--work-tree DIR`` or ``GIT_WORK_TREE=DIR`` gives,
or else in the folder ``git -C DIR`` (or a ``cd``) runs it in. The caller asks when that
folder may hold a place whose files run code later (``~/.config/git``, ``site-packages``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Final

import attrs

from fsm_agent.core.command_options import ParsedArguments, loose_table, parse_arguments
from fsm_agent.toolbox.paths import repository_top, word_path

_GLOBALS: Final = attrs.evolve(
    loose_table("Cc", long_values="git-dir work-tree namespace exec-path config-env"),
    stops_at_operand=True,
)
"""git's options before its command (the loose table reads any other as a flag)."""
_CLONE: Final = loose_table(
    "obucj",
    long_values="origin branch upload-pack reference reference-if-able separate-git-dir depth "
    "config template jobs filter shallow-since shallow-exclude server-option bundle-uri revision",
)
_WORKTREE_ADD: Final = loose_table("bB", long_values="reason")
_SUBMODULE_ADD: Final = loose_table("b", long_values="branch name reference depth")

WORK_TREE_WRITERS: Final = frozenset(
    {
        "checkout",
        "switch",
        "restore",
        "reset",
        "pull",
        "merge",
        "rebase",
        "cherry-pick",
        "revert",
        "stash",
        "read-tree",
        "checkout-index",
        "am",
        "sparse-checkout",
        "bisect",
    }
)
"""git's commands that write files of the repository's naming into the work tree."""


def checkout_folder(
    args: Sequence[str], cwd: Path, assignments: Sequence[str] = ()
) -> tuple[str, Path] | None:
    """For ``git`` given ``args`` (run in ``cwd``, after the ``VAR=value`` prefixes
    ``assignments``), the folder it writes checked-out files into, as the command names it and
    as a path; None when it writes none (or we do not know it to)."""
    read = _command(args, cwd)
    if read is None:
        return None
    parsed, command, rest, cwd = read
    if command == "clone":
        clone = parse_arguments(rest, _CLONE).operands
        if not clone:
            return None
        url = clone[0].rstrip("/")
        target = clone[1] if len(clone) > 1 else url.rsplit("/", 1)[-1].rsplit(":", 1)[-1]
        target = target.removesuffix(".git") if len(clone) == 1 else target
        return target, word_path(target, cwd)
    if command == "worktree" and rest and rest[0] == "add":
        added = parse_arguments(rest[1:], _WORKTREE_ADD).operands
        return (added[0], word_path(added[0], cwd)) if added else None
    tree = _work_tree(parsed, assignments)
    work = word_path(tree, cwd) if tree is not None else cwd
    if command == "submodule" and "add" in rest:
        added = parse_arguments(rest[rest.index("add") + 1 :], _SUBMODULE_ADD).operands
        if not added:
            return None
        path = added[1] if len(added) > 1 else added[0].rstrip("/").rsplit("/", 1)[-1]
        return path, word_path(path, work)
    if command in WORK_TREE_WRITERS:
        return (tree if tree is not None else str(work)), work
    return None


def _command(
    args: Sequence[str], cwd: Path
) -> tuple[ParsedArguments, str, Sequence[str], Path] | None:
    """git's own options read, its command, that command's words, and the folder it runs
    in (``git -C DIR``, each from the one before); None when no command is given."""
    parsed = parse_arguments(args, _GLOBALS)
    if not parsed.operands:
        return None
    for folder in parsed.values("-C"):
        cwd = word_path(folder, cwd)
    return parsed, parsed.operands[0], args[parsed.rest_index + 1 :], cwd


def _work_tree(parsed: ParsedArguments, assignments: Sequence[str]) -> str | None:
    """The work tree ``--work-tree`` or ``GIT_WORK_TREE=`` gives (the option wins)."""
    given = parsed.values("--work-tree")
    if given:
        return given[-1]
    found = [a.partition("=")[2] for a in assignments if a.startswith("GIT_WORK_TREE=")]
    return found[-1] if found else None


def git_tree_writes(args: Sequence[str], cwd: Path) -> tuple[Path, ...]:
    """The paths under which ``git`` given ``args`` (run in ``cwd``) deletes, moves or writes
    files: what ``git rm`` removes (``--cached`` leaves the files), what ``git mv`` moves and
    where, what ``git clean`` may delete (its paths, else the folder it runs in; ``-n`` only
    lists), the work tree ``git submodule update`` checks submodules out in (where each goes
    is in ``.gitmodules``), and the folder ``git format-patch -o DIR`` writes its patches
    in."""
    read = _command(args, cwd)
    if read is None:
        return ()
    _parsed, command, rest, cwd = read
    words = [word for word in rest if not word.startswith("-")]
    options = {word for word in rest if word.startswith("-")}
    if command == "rm" and "--cached" not in options:
        return tuple(word_path(word, cwd) for word in words)
    if command == "mv":
        return tuple(word_path(word, cwd) for word in words)
    if (
        command == "clean"
        and not options & {"-n", "--dry-run"}
        and not any(option[1:2] != "-" and "n" in option[1:] for option in options)
    ):
        return tuple(word_path(word, cwd) for word in words) or (cwd,)
    if command == "submodule" and "update" in words:
        return (repository_top(cwd) or cwd,)
    if command == "format-patch":
        return tuple(word_path(folder, cwd) for folder in _output_directory(rest))
    return ()


def _output_directory(args: Sequence[str]) -> list[str]:
    """The folders ``git format-patch`` is told to write in (``-o DIR``, ``-oDIR``,
    ``--output-directory[=]DIR``)."""
    found: list[str] = []
    for index, word in enumerate(args):
        following = args[index + 1] if index + 1 < len(args) else ""
        if word in ("-o", "--output-directory") and following:
            found.append(following)
        elif word.startswith("--output-directory="):
            found.append(word.partition("=")[2])
        elif word.startswith("-o") and len(word) > 2 and word[1] != "-":
            found.append(word[2:])
    return found
