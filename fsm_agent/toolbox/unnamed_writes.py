"""The folders under which a command may write files that no word of it names, for the
``Edit(...)`` rules (SPEC §9.3 step 1d/1f: a deny rule on a path is meant for every tool).

``Edit(./src/**)`` denied, ``echo x > src/a.py`` is denied by its words, but ``cp evil.py
src/``, ``tar -xf a.tar``, ``patch -p1 < x.patch``, ``rm -rf src``, ``git reset --hard`` and
``find . -exec sed -i s/a/b/ {} +`` write there too, under names no word spells whole. For
each part that is not read-only this module gives the folders (as written, relative to where
the part runs) such writes land under, and the caller asks when a rule may cover a path under
one of them, as it does for reads (``grep -r KEY .``):

* a tree written whole (``rm -r``, ``chmod -R``, ``chown -R``, what ``mv`` moves away:
  ``tree_writes``);
* the files ``cp``, ``mv``, ``ln``, ``install``, ``rsync`` or ``scp`` put into a folder, under
  their own names (``placed_files``): exactly, or anything under one that is a folder, or
  under the folder when the names cannot be known; and what ``ln`` links to (a later word
  writes through it);
* where an archive is extracted or a patch applied: the folder it is told to write in
  (``tar -C DIR``, ``unzip -d DIR``, ``patch -d DIR``), else the one it runs in;
* the work tree git writes (``git checkout``, ``reset``, ``pull``, ``stash``... under
  ``--work-tree``, ``GIT_WORK_TREE`` or ``git -C``), and what ``git rm``, ``git mv`` and ``git
  clean`` delete or move (``git_checkouts``);
* where ``find -delete`` starts (``.`` when it names none), a folder a copy from
  another place writes whole (``aws s3 sync s3://b .``: ``tree_transfers``), and the trees a
  formatter or fixer rewrites in place (``black src``, ``prettier --write .``, ``cargo fmt``:
  ``in_place_writers``), and a folder a long option names for output (``pip install
  --target src``, ``tsc --outDir src``, ``--prefix``, ``--root``);
* anywhere (``/``) for words a wrapper fills in (``xargs``, ``find -exec``);
* the folder a word the shell computes may name a file under (``> "$f"``, ``src/*.py``);
  only a redirection's for a program that writes nothing but its output (``echo "$x"``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Final

import attrs

from fsm_agent.core.read_only_commands import OUTPUT_ONLY
from fsm_agent.core.shell_commands import CommandPart
from fsm_agent.core.tree_transfers import received_trees
from fsm_agent.toolbox.archive_members import extracts_archive
from fsm_agent.toolbox.git_checkouts import checkout_folder, git_tree_writes
from fsm_agent.toolbox.in_place_writers import rewritten_trees
from fsm_agent.toolbox.patch_targets import applies_patch
from fsm_agent.toolbox.placed_files import placed_sources
from fsm_agent.toolbox.tree_writes import written_trees

_COPYING: Final = frozenset({"cp", "rsync"})
_BECOMING: Final = frozenset({"cp", "mv", "ln", "rsync", "scp"})
_EXPRESSION_START: Final = ("-", "(", "!", ")", ",")


@attrs.frozen
class UnnamedWrites:
    """Where a part may write files no word of it names, as written (relative to where it
    runs): ``files`` it may write exactly (a source copied into a folder, under its own name),
    and ``folders`` under which it may write anything (``/`` for anywhere)."""

    files: tuple[str, ...] = ()
    folders: tuple[str, ...] = ()


def unnamed_writes(part: CommandPart, cwd: Path) -> UnnamedWrites:
    """Where ``part``, run in ``cwd``, may write a file no word of it names (see the
    module's text). ``part`` is taken to write: the caller leaves read-only parts out."""
    argv = part.argv
    if not argv:
        return UnnamedWrites()
    program = argv[0].rsplit("/", 1)[-1]
    files: list[str] = []
    # A copy reads its sources; what it writes is where they land, below.
    folders = [] if program in _COPYING else written_trees(argv)
    placed = placed_sources(argv, cwd)
    if placed is not None:
        target, names = placed
        if names is None:
            folders.append(target)
        for name, may_be_folder in names or ():
            (folders if may_be_folder else files).append(f"{target.rstrip('/')}/{name}")
    elif program in _BECOMING:
        # One source taking the destination's name: when it may be a folder (`cp -r y src`
        # where there is no src), what it holds lands under that name.
        operands = [word for word in argv[1:] if not word.startswith("-")]
        if len(operands) > 1 and (program in ("mv", "ln") or _recursive(argv[1:])):
            folders.append(operands[-1])
    if program == "ln":  # a link through which a later word writes where it leads
        folders += [word for word in argv[1:] if not word.startswith("-")]
    if extracts_archive(part) or applies_patch(part):
        folders += _destinations(argv[1:]) or ["."]
    if program == "git":
        checkout = checkout_folder(argv[1:], cwd, part.assignments)
        if checkout is not None:
            folders.append(str(checkout[1]))
        folders += [str(path) for path in git_tree_writes(argv[1:], cwd)]
    folders += received_trees(argv)
    if program == "find" and "-delete" in argv:
        folders += _find_starts(argv[1:])
    folders += rewritten_trees(argv)
    folders += _output_folders(argv[1:])
    if program not in OUTPUT_ONLY:  # echo "$x" writes nothing but its output
        if part.fed:
            folders.append("/")
        folders += [computed_folder(argv[i]) for i in part.expanded if 0 < i < len(argv)]
    folders += [computed_folder(r.target) for r in part.redirects if r.expanded]
    return UnnamedWrites(tuple(dict.fromkeys(files)), tuple(dict.fromkeys(folders)))


def _recursive(args: Sequence[str]) -> bool:
    """Whether a copy is told to copy folders whole (``-r``, ``-R``, ``-a``, ``--recursive``,
    ``--archive``)."""
    return any(
        word in ("--recursive", "--archive")
        or (word[:1] == "-" and word[1:2] != "-" and not set(word[1:]).isdisjoint("rRa"))
        for word in args
    )


def _destinations(args: Sequence[str]) -> list[str]:
    """The folders an extraction or a patch is told to write in: ``-C DIR`` (``tar``, ``git
    apply``'s ``--directory``), ``-d DIR`` (``unzip``, ``patch``), ``-oDIR`` (``7z``), or the
    folder after ``python3 -m zipfile -e ARCHIVE``; none when it writes where it runs."""
    found: list[str] = []
    for index, word in enumerate(args):
        following = args[index + 1] if index + 1 < len(args) else None
        if word in ("-C", "-d", "--directory") and following is not None:
            found.append(following)
        elif word.startswith("--directory="):
            found.append(word.partition("=")[2])
        elif word[:2] in ("-C", "-d", "-o") and len(word) > 2 and word[1:2] != "-":
            found.append(word[2:])
        elif word in ("-e", "--extract") and index + 2 < len(args) and "zipfile" in args:
            found.append(args[index + 2])
    return found


def _output_folders(args: Sequence[str]) -> list[str]:
    """The values of long options that name a folder a program writes into: ``--target src``
    (``pip install``), ``--prefix``, ``--root``, ``--outDir`` (``tsc``), ``--out-dir``,
    ``--output-directory``, ``--target-dir`` (``cargo``), ``--destdir``... as ``--NAME=VALUE``
    or ``--NAME VALUE`` (a next word that is not an option is taken as its value)."""
    found: list[str] = []
    for index, word in enumerate(args):
        name, equals, value = word.partition("=")
        if not _OUTPUT_OPTION.fullmatch(name):
            continue
        if equals:
            found.append(value)
        elif index + 1 < len(args) and not args[index + 1].startswith("-"):
            found.append(args[index + 1])
    return [value for value in found if value]


_OUTPUT_OPTION: Final = re.compile(
    r"--(?:prefix|root|target|dest|destination|out|output"
    r"|[\w-]*(?:out|dest|target|install|build|cache|dist|root)[\w-]*(?:dir|directory|path))",
    re.IGNORECASE,
)
"""A long option naming a folder a program writes into."""


def _find_starts(args: Sequence[str]) -> list[str]:
    """The start points of ``find`` (``.`` when it names none)."""
    starts: list[str] = []
    for word in args:
        if word.startswith(_EXPRESSION_START):
            break
        starts.append(word)
    return starts or ["."]


_GLOB_START: Final = re.compile(r"[*?\[{]")
_DOT_GLOB: Final = re.compile(r"(?:^|/)\.[*?\[{]")


def computed_folder(word: str) -> str:
    """The folder a word the shell computes may name a file under: the literal folder before
    its first glob (``src/*.py`` is in ``src``); ``/`` (anything) for a variable or a
    substitution, which may hold ``..`` or an absolute path, and for globs that match ``..``."""
    if "$" in word or "`" in word or ".." in word or _DOT_GLOB.search(word):
        return "/"
    found = _GLOB_START.search(word)
    literal = word[: found.start()] if found is not None else word
    folder = literal[: literal.rfind("/") + 1]
    return folder or "."
