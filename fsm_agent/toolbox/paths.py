"""Where file tools may reach: resolving paths against the working directory, and protected paths.

Every file tool resolves the model's path against ``ctx.cwd`` and follows symlinks before it
decides anything, so neither ``..`` nor a link pointing elsewhere escapes the working directory.
Reads outside the working directory (and ``ctx.additional_directories``) ask the user; writes
there are refused. Writes to configuration that could run code or change the agent's own
settings (SPEC §9.3 safety checks) always ask the user, whatever the permission mode.

Writes open the file the permission chain checked and nothing else: :func:`write_file` walks
from the working directory one component at a time with ``O_NOFOLLOW``, so a folder swapped for
a symbolic link after the check cannot send the write elsewhere.
"""

from __future__ import annotations

import functools
import os
import posixpath
import re
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final

from fsm_agent.runtime.tool import (
    OUTSIDE_WORKING_FOLDER,
    SAFETY_CHECK,
    PermissionCheck,
    ToolContext,
)
from fsm_agent.toolbox.home_readings import read_once_a_second
from fsm_agent.toolbox.sourced_files import sourced_by_startup
from fsm_agent.toolbox.startup_places import (
    STARTUP_DIRS,
    STARTUP_FILES,
    WITHIN_ANCHORS,
    reached_place,
    startup_place,
    watched_folder,
)

if TYPE_CHECKING:
    from fsm_agent.core.shell_commands import CommandAnalysis

PROTECTED_DIRS = frozenset({".git", ".vscode", ".idea", ".claude"})
"""Directory names whose contents a write tool never changes without asking (SPEC §9.3)."""

SHELL_STARTUP_FILES = frozenset(
    {
        ".bashrc",
        ".bash_aliases",  # sourced by the .bashrc many distributions install
        ".bash_profile",
        ".bash_login",
        ".bash_logout",
        ".profile",
        ".zshrc",
        ".zshenv",
        ".zprofile",
        ".zlogin",
        ".zlogout",
        ".kshrc",
        ".cshrc",
        ".tcshrc",
    }
)
"""Files a shell runs when it starts or ends: writing one is a way to run code later."""

PROTECTED_FILES = SHELL_STARTUP_FILES | frozenset(
    {".gitconfig", ".gitmodules", ".ripgreprc", ".mcp.json", ".claude.json"}
)
"""File names a write tool never changes without asking (SPEC §9.3)."""

_PROTECTED_FOLDERS = PROTECTED_DIRS | STARTUP_DIRS
_PROTECTED_LEAVES = PROTECTED_FILES | STARTUP_FILES


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
    resolved = resolve_path(raw, ctx)
    if not ctx.allow_outside and not is_readable_without_asking(resolved, ctx):
        root = ctx.cwd.resolve()
        raise PathOutsideWorkingDirectory(
            f"{raw} is outside the working directory {root}; "
            "only paths inside the working directory can be used"
        )
    return resolved


def expand_home(raw: str) -> Path:
    """``raw`` as a path with a leading ``~`` or ``~user`` expanded. The home folder of a user
    that does not exist (``~nobody0``) leaves the word as written, as the shell leaves it:
    a name given by the model never makes a check raise.

    ``~+`` is the folder the shell is in, ``~-`` the one it was in before (the command's
    shell inherits no ``OLDPWD``) and ``~N``, ``~+N``, ``~-N`` a folder ``pushd`` kept: each
    is a folder the command is in or entered, so the rest is given as a path relative to it
    (``~-/.config`` is ``.config`` from each folder the command may be in)."""
    stacked = _STACKED.match(raw)
    if stacked is not None:
        return Path(raw[stacked.end() :].lstrip("/") or ".")
    path = Path(raw)
    try:
        return path.expanduser()
    except RuntimeError:  # no such user, or no home folder to be found
        return path


_STACKED = re.compile(r"~(?:[+-]\d*|\d+)(?=/|$)")
"""A tilde prefix naming a folder of the shell's own: ``~+``, ``~-``, ``~2``, ``~+1``, ``~-0``."""


def resolved_under(base: str, relative: str) -> str:
    """``os.path.realpath(base + "/" + relative)`` for a ``base`` already resolved: only the
    names of ``relative`` are looked up, not every folder of ``base`` again (a long command's
    words, each taken from several folders, made that most of a permission check)."""
    current = base.rstrip("/")  # "" stands for the root
    names = relative.split("/")
    for index, name in enumerate(names):
        if name in ("", "."):
            continue
        if name == "..":
            current = current.rpartition("/")[0]  # ``current`` is resolved: this is its ``..``
            continue
        joined = f"{current}/{name}"
        try:
            link = stat.S_ISLNK(os.lstat(joined).st_mode)
        except OSError:  # missing, or under a file: taken as written, as realpath takes it
            link = False
        if link:
            return os.path.realpath("/".join((joined, *filter(None, names[index + 1 :]))))
        current = joined
    return current or "/"


def resolve_path(raw: str, ctx: ToolContext) -> Path:
    """``raw`` made absolute against ``ctx.cwd``, with ``~``, ``..`` and symlinks resolved."""
    root = ctx.cwd.resolve()
    path = expand_home(raw)
    return (path if path.is_absolute() else root / path).resolve()


def is_readable_without_asking(resolved: Path, ctx: ToolContext) -> bool:
    """Whether a resolved path lies in the working folder or an additional directory."""
    roots = (ctx.cwd.resolve(), *ctx.additional_directories)
    return any(resolved.is_relative_to(root) for root in roots)


def read_permission(raw: str, ctx: ToolContext) -> PermissionCheck:
    """The permission opinion of a tool that reads ``raw`` (Read, Glob, Grep).

    Inside the working folder or an additional directory: allow. Elsewhere (a home folder's
    keys, ``/etc``): ask, whatever the tool, with reason :data:`OUTSIDE_WORKING_FOLDER`.
    """
    resolved = resolve_path(raw, ctx)
    if ctx.allow_outside or is_readable_without_asking(resolved, ctx):
        return PermissionCheck(behavior="allow", message="a read inside the working folder")
    return PermissionCheck(
        behavior="ask",
        message=f"{raw} resolves to {resolved}, outside the working folder",
        reason=OUTSIDE_WORKING_FOLDER,
    )


def display_path(path: Path, ctx: ToolContext) -> str:
    """``path`` relative to the working directory when it is inside, else absolute.

    A name that is not UTF-8 shows its odd bytes as ``\\xe9`` escapes (Python decodes it
    with lone surrogates, which neither the API nor a trace line can carry).
    """
    root = ctx.cwd.resolve()
    shown = str(path.relative_to(root)) if path.is_relative_to(root) else str(path)
    return os.fsencode(shown).decode("utf-8", "backslashreplace")


def is_folder(path: Path) -> bool:
    """Whether ``path`` is a folder; False for a path the file system refuses to look up (a
    name longer than it allows raises in ``Path.is_dir``): a word given by the model never
    makes a check raise."""
    try:
        return path.is_dir()
    except OSError:
        return False


def is_link(path: Path) -> bool:
    """Whether ``path`` is a symbolic link; False as :func:`is_folder` is."""
    try:
        return path.is_symlink()
    except OSError:
        return False


def is_protected(path: Path) -> bool:
    """Whether a write to ``path`` (as given, or after resolving symlinks) needs the user; also
    when a link of the home folder leads to it, the file the link's own path names
    (``~/.gitconfig`` linked to a dotfiles repository's ``gitconfig``, ``~/.config`` to its
    ``config``): the program reading that place reads it; and a file the user's shell or git
    start-up files source or include (``source ~/dotfiles/aliases.sh`` in ``.bashrc``:
    :mod:`~fsm_agent.toolbox.sourced_files`)."""
    resolved = path.resolve()
    return (
        names_protected(path.absolute())
        or names_protected(resolved)
        or any(names_protected(alias) for alias in _home_aliases(resolved))
        or str(resolved) in sourced_by_startup()
    )


def _home_aliases(resolved: Path) -> list[Path]:
    """The paths through a link in the home folder, or in its ``.config``, that name the
    resolved path ``resolved``, and the places a program reads instead when the environment
    names a file or folder elsewhere (``GIT_CONFIG_GLOBAL``, ``XDG_CONFIG_HOME``...)."""
    key = ("aliases", os.environ.get("HOME"), *map(os.environ.get, _PLACES_NAMED_BY))
    places = read_once_a_second(key, lambda: (*_home_links(), *_named_places()))
    return [
        link / resolved.relative_to(target)
        for link, target in places
        if resolved.is_relative_to(target)
    ]


_PLACES_NAMED_BY = {
    "XDG_CONFIG_HOME": "~/.config",
    "GIT_CONFIG_GLOBAL": "~/.gitconfig",
    "GIT_CONFIG_SYSTEM": "/etc/gitconfig",
    "RIPGREP_CONFIG_PATH": "~/.ripgreprc",
}
"""Variables of the environment commands run with that move a protected place elsewhere, and
the place: git and ripgrep read their settings there, and most programs ``~/.config``."""


def _named_places() -> list[tuple[Path, Path]]:
    places = []
    for name, place in _PLACES_NAMED_BY.items():
        value = Path(os.environ.get(name, ""))
        if not value.is_absolute():  # a relative one is not read as a place
            continue
        target = Path(os.path.realpath(value))
        if target.parent != Path("/") and not target.is_relative_to("/dev"):
            places.append((expand_home(place), target))  # not /dev/null, nor a system folder
    return places


def _home_links() -> tuple[tuple[Path, Path], ...]:
    """Each link in the home folder and in its ``.config``, with where it leads; read again
    when either folder changes (a link made or removed changes its folder's time)."""
    try:
        home = Path.home()
    except (RuntimeError, KeyError):  # no home folder to be found
        return ()
    folders = (home, home / ".config")
    return _links_in(tuple((str(folder), _changed_at(folder)) for folder in folders))


def _changed_at(folder: Path) -> int | None:
    try:
        return folder.stat().st_mtime_ns
    except OSError:
        return None


@functools.lru_cache(maxsize=16)
def _links_in(folders: tuple[tuple[str, int | None], ...]) -> tuple[tuple[Path, Path], ...]:
    links: list[tuple[Path, Path]] = []
    for folder, changed in folders:
        if changed is None:
            continue
        try:
            with os.scandir(folder) as listing:
                entries = [entry for entry in listing if entry.is_symlink()]
        except OSError:
            continue
        for entry in entries[:MAX_TREE_ENTRIES]:
            links.append((Path(entry.path), Path(os.path.realpath(entry.path))))
    return tuple(links)


def names_protected(path: Path) -> bool:
    """Whether ``path``, as it is written, is a protected path (no link is followed)."""
    return parts_protected([part.lower() for part in path.parts])


def parts_protected(parts: Sequence[str]) -> bool:
    """Whether a path of the lower-case components ``parts`` is a protected path: a protected
    file's name, one of its folders a protected folder's, or a place outside the project
    whose files run code later (:mod:`~fsm_agent.toolbox.startup_places`)."""
    return bool(parts) and (
        parts[-1] in _PROTECTED_LEAVES
        or not _PROTECTED_FOLDERS.isdisjoint(parts)
        or startup_place(parts)
    )


MAX_TREE_ENTRIES = 10_000
"""A folder with more entries than this is not searched for protected paths: it counts as
holding one."""

_PROTECTED_NAMES = _PROTECTED_FOLDERS | _PROTECTED_LEAVES


def holds_protected(folder: Path, *, through_links: bool = False) -> bool:
    """Whether ``folder`` (not itself a link) holds a protected path, a folder too big to
    search counting as one (:func:`protected_within`)."""
    return protected_within(folder, through_links=through_links) is not False


def protected_within(folder: Path, *, through_links: bool = False) -> bool | None:
    """Whether ``folder`` (not itself a link) holds a protected path (a protected name, or a
    start-up place other than a virtual environment's own: ``startup_places.reached_place``),
    or None when it has more than :data:`MAX_TREE_ENTRIES` entries and none was found among
    the first.

    Links inside are listed, not followed: ``rm -r`` and ``cp -r`` act on a link, not on what it
    points to. With ``through_links``, a program is given each path found (``find -exec``),
    and most write where a link points: then a link leading out of ``folder`` counts too.
    """
    if is_link(folder) or not is_folder(folder):
        return False
    root = folder.resolve()
    seen = 0
    # Each folder with its lower-case components, to find the start-up places it holds.
    pending = [(str(folder), tuple(part.lower() for part in root.parts))]
    while pending:
        path, parts = pending.pop()
        try:
            with os.scandir(path) as listing:
                entries = list(listing)
        except OSError:
            continue  # a folder no one may read: nothing in it is found either
        watched = watched_folder(parts)
        for entry in entries:
            name = entry.name.lower()
            if name in _PROTECTED_NAMES:
                return True
            if (watched or name in WITHIN_ANCHORS) and reached_place((*parts, name)):
                return True
            seen += 1
            if seen > MAX_TREE_ENTRIES:
                return None
            if entry.is_symlink():
                if through_links and not Path(os.path.realpath(entry.path)).is_relative_to(root):
                    return True
            elif entry.is_dir():
                pending.append((entry.path, (*parts, name)))
    return False


_CLUSTER_LETTERS = 4
"""How many option letters a short-option word may hold before a value joined to it
(``-xzfC.git`` is rare; ``-o.git/hooks/x`` and ``-rt.git/hooks`` are not)."""


def word_path(word: str, cwd: Path) -> Path:
    """The path a shell word names when the shell is in ``cwd`` (``~`` expanded). From the
    folder ``mktemp -d`` makes (:func:`fresh_folder`), a real folder not there yet, ``..`` is
    taken as the command's shell will take it, to the folder it is made in."""
    path = expand_home(word)
    if path.is_absolute():
        return path
    if cwd.name == _FRESH_NAME and ".." in path.parts:
        return Path(posixpath.normpath(cwd / path))
    return cwd / path


def path_candidates(word: str) -> tuple[str, ...]:
    """The paths a shell word may name: ``word`` itself, the value of an ``--option=value``
    or ``of=value`` word, a value joined to a short option (``-o.git/hooks/pre-commit``,
    ``-C.git``, ``-rt.git/hooks``): what follows each of its first few letters, and a file
    given by ``@`` (``curl -d @.env``, ``curl -F f=@.env;type=text/plain``, a compiler's
    ``@args``), which the program reads (or writes: ``-o @x`` is rare)."""
    _, equals, value = word.partition("=")
    candidates: tuple[str, ...] = (word, value) if equals and value else (word,)
    if len(word) > 2 and word[0] == "-" and word[1] != "-":
        last = min(len(word), 2 + _CLUSTER_LETTERS)
        candidates += tuple(word[start:] for start in range(2, last))
    for candidate in candidates[: 2 if equals else 1]:
        if candidate[:1] == "@" and len(candidate) > 1:
            file = candidate[1:]
            candidates += (file, file.partition(";")[0]) if ";" in file else (file,)
    return candidates


MAX_ENTERED_FOLDERS = 32
"""``cd`` after ``cd`` doubles the folders a relative word may start from; past this many a
command is not followed (:func:`entered_folders` gives None)."""


def entered_folders(analysis: CommandAnalysis, cwd: Path) -> list[Path] | None:
    """The folders a command's relative words may start from: ``cwd``, and each folder a
    ``cd`` or ``pushd`` of the command enters, from each folder before it (``cd a && cd b``
    may be in ``a/b``, or in ``b`` when ``cd a`` failed or ran in a subshell). ``~`` is the
    home folder, and so is ``cd`` alone; ``cd -`` and ``pushd +1`` return to one of them. A
    ``CDPATH`` the command sets (the tool's shell has none) gives a name not starting with
    ``.`` more folders to start from: ``CDPATH=~/.config cd git`` enters ``~/.config/git``. A
    folder a wrapper runs its command in (``env -C ~ rm -rf .config``, ``sudo -D DIR``, ``uv
    --directory DIR run``, ``sudo -i``'s home) counts as one ``cd`` enters, where the wrapper
    stands.

    None when they cannot be followed (:func:`word_bases` says why): past
    :data:`MAX_ENTERED_FOLDERS` folders (keeping only some would leave out the last ``cd``:
    ``cd a; cd b; …; cd ~; rm -rf .config``), or a folder the shell computes other than by
    reading ``$HOME``, ``$PWD`` or ``$OLDPWD`` (``cd ${PWD%/*}``, ``cd $(dirname x)``). A
    caller must then take a relative word as one that may name any path."""
    followed = _followed_folders(analysis, cwd)
    return None if isinstance(followed, str) else followed


def _followed_folders(analysis: CommandAnalysis, cwd: Path) -> list[Path] | str:
    """:func:`entered_folders`, or why they cannot be followed."""
    folders: list[Path] | str = [cwd]
    searched = _cd_path(analysis)
    if isinstance(searched, str):
        return searched
    given = list(analysis.folders)
    reads = dict(analysis.reads)
    fresh = not sets_tmpdir(analysis.command)
    settings = {n: v for n, v in analysis.settings if n not in os.environ}
    for index, part in enumerate(analysis.parts):
        while not isinstance(folders, str) and given and given[0][0] <= index:
            word = given.pop(0)[1]
            folders = _entering(folders, word, computed=bool(_COMPUTING.search(word)))
        if isinstance(folders, str):
            return folders
        if part.argv[:1] not in (("cd",), ("pushd",)):
            continue
        words = _cd_operands(part.argv[1:])
        if not words:
            folders = _entering(folders, "~", computed=False)
            continue
        if words[0] == "-" or _ROTATION.fullmatch(words[0]) or _STACKED.fullmatch(words[0]):
            continue  # ``cd -``, ``pushd +1``: a folder already among them (``expand_home``)
        word, computed = words[0], bool(part.expanded)
        name, rest = reads.get(word, ("", ""))
        value = settings.get(name)
        if value is not None:  # `d=$(mktemp -d); cd "$d/x"`: the value the command sets
            word, computed = value + rest, bool(_COMPUTING.search(value))
        starts = folders
        if searched and not _BESIDE_CDPATH.match(word):
            starts = [*folders, *(folder / entry for folder in folders for entry in searched)]
        folders = _entering(folders, word, computed=computed, starts=starts, fresh=fresh)
    for _index, word in given:  # a wrapper that runs no part (``env -C DIR`` alone)
        if isinstance(folders, str):
            break
        folders = _entering(folders, word, computed=bool(_COMPUTING.search(word)))
    return folders


def _cd_operands(words: Sequence[str]) -> list[str]:
    """The words of ``cd``/``pushd`` after their options (``-L``, ``-P``, ``-e``, ``-@``,
    ``-n``, ``--``): a word of ``-`` and letters is an option, ``-`` alone and ``-N`` are not."""
    index = 0
    while index < len(words) and _CD_OPTION.fullmatch(words[index]):
        index += 1
        if words[index - 1] == "--":
            break
    return list(words[index:])


_CD_OPTION = re.compile(r"--|-[A-Za-z@]+")


def word_bases(analysis: CommandAnalysis, cwd: Path) -> list[Path] | str:
    """The folders a command's relative words start from (:func:`entered_folders`), or why
    they cannot be known: the command may be in more folders than are followed, or it sets a
    variable that decides where ``~``, ``cd`` or ``cd -`` lead (``HOME=/; rm -rf
    ~/home/me/.config``, ``read HOME``, ``for HOME in``, ``((HOME=0))``, ``OLDPWD=…; cd -``,
    ``DIRSTACK[1]=…``; any word naming one but a plain read, ``$HOME``, counts, in the text
    or once the shell has removed its quotes: ``read H""OME``, ``declare "HO"ME=…``) where
    the command then uses ``~`` or ``cd``; or it may turn on ``cdable_vars``, with which ``cd
    NAME`` enters the folder the variable ``NAME`` holds when no folder has that name (``h=~;
    cd h``), or define an alias a later line may run for ``cd``."""
    # Each word as the shell passes it, quotes removed, so that no text search is beaten
    # by ``H""OME``; the text too, for the words no part holds (``${HOME:=/}``).
    words = (word for part in analysis.parts for word in (*part.assignments, *part.argv))
    follows = _follows_places(analysis)
    for text in (analysis.command, *words):
        moved = _MOVES_PLACES.search(text) if follows else None
        if moved is not None:
            name = moved["name"] or moved["name2"] or "CDPATH"
            return f"it may set {name}, which decides where ~ and cd lead"
        other = _OTHER_CD.search(text)
        if other is not None:
            return f"it names {other[0]}, with which cd may be spelled otherwise"
    if any(part.argv[:1] == ("alias",) for part in analysis.parts):
        return "it defines an alias, which a later line may run for cd"
    return _followed_folders(analysis, cwd)


_OTHER_CD = re.compile(r"cdable_vars|expand_aliases|BASHOPTS|BASH_ALIASES")
"""What lets a command enter a folder no ``cd`` word names: the shell option that makes ``cd
NAME`` enter ``$NAME`` (``shopt -s cdable_vars``, ``bash -O cdable_vars``, or the variable a
child shell takes its options from, ``BASHOPTS``), and an alias, which a later line may use
for ``cd`` (``alias go=cd``, ``BASH_ALIASES[go]=cd``, with ``expand_aliases`` or in an
interactive ``bash -i``)."""


def places_set(analysis: CommandAnalysis) -> bool:
    """Whether the command may set a variable deciding where ``~`` and ``cd`` lead (``HOME``,
    ``PWD``, ``OLDPWD``, ``DIRSTACK``, ``CDPATH``), other than by a plain read of it."""
    return _MOVES_PLACES.search(analysis.command) is not None


def _follows_places(analysis: CommandAnalysis) -> bool:
    """Whether the command goes where those variables lead: a ``~`` anywhere in it (its own
    words, a script it gives a shell), or a ``cd``, ``pushd`` or ``popd``. One that does not
    (``echo "PWD: $PWD" > log``) is judged the same whatever they hold."""
    return "~" in analysis.command or any(part.argv[:1] in FOLDER_MOVES for part in analysis.parts)


FOLDER_MOVES: Final = frozenset({("cd",), ("pushd",), ("popd",)})
"""The programs of a part that changes the shell's folder (as ``argv[:1]``)."""

_ROTATION = re.compile(r"[+-]\d+")
"""``pushd +1``, ``popd -0``: a turn of the folders ``pushd`` kept."""
_MOVES_PLACES = re.compile(
    r"(?<![\w$/.-])(?<!\$\{)(?P<name>HOME|PWD|OLDPWD|DIRSTACK)\b"
    r"|\$\{(?P<name2>HOME|PWD|OLDPWD|DIRSTACK|CDPATH):?="
    r"|(?<![\w$/.-])(?<!\$\{)CDPATH\b(?!=)"
)
"""A word naming a variable that decides where ``~``, ``~+``, ``~-``, ``~N``, ``cd`` or
``cd -`` lead, but for a plain read (``$HOME``, ``${HOME}``, ``${HOME%/}``); ``${HOME:=x}``
sets it. ``CDPATH=DIR`` is followed (:func:`_cd_path`); ``read CDPATH``, ``CDPATH+=DIR`` and
``for CDPATH in`` are not."""


def _entering(
    folders: list[Path],
    word: str,
    *,
    computed: bool,
    starts: list[Path] | None = None,
    fresh: bool = True,
) -> list[Path] | str:
    """``folders`` and those a command entering ``word`` may be in, from each of ``starts``
    (``folders`` unless given; ``fresh``: whether the folder ``mktemp -d`` makes is known,
    the command setting no ``TMPDIR``), or why they cannot be followed: the shell computes ``word``
    (``computed``) otherwise than by reading ``$HOME``, ``$PWD`` or ``$OLDPWD``, or there
    would be more than :data:`MAX_ENTERED_FOLDERS`."""
    tops: list[Path] = []
    if computed:
        word = _PLAIN_READ.sub(lambda read: _READ_AS[read["name"] or read["braced"]], word)
        top = _TOP.match(word)
        if top is not None:  # the repository's top, or nothing (`cd ""`, `cd /..`) outside one
            word = word[top.end() :].lstrip("/") or "."
            tops = [repository_top(folder) or Path("/") for folder in starts or folders]
        word = _DIRNAME.sub(lambda named: posixpath.dirname(named["path"]) or ".", word)
        if fresh:
            word = _FRESH_FOLDER.sub(lambda _made: fresh_folder(), word)
        if _COMPUTING.search(word) or _GLOBBING.search(word):
            return f"it enters a folder the shell computes, {word!r}"
    target = expand_home(word)  # an absolute one: itself
    entered = [folder / target for folder in tops or starts or folders]
    every = list(dict.fromkeys([*folders, *entered]))
    if len(every) > MAX_ENTERED_FOLDERS:
        return f"it may run in more than {MAX_ENTERED_FOLDERS} folders, more than are followed"
    return every


_PLAIN_READ = re.compile(r"\$(?:(?P<name>HOME|PWD|OLDPWD)\b|\{(?P<braced>HOME|PWD|OLDPWD)\})")
"""A plain read of a variable naming a folder, which the shell gives as ``~``, ``~+``, ``~-``
give it (``cd "$HOME/.config"``, ``cd $PWD/..``)."""
_READ_AS = {"HOME": "~", "PWD": "~+", "OLDPWD": "~-"}
_TOP = re.compile(r"\$\(git rev-parse --show-toplevel\)|`git rev-parse --show-toplevel`")
"""The top of the repository a folder is in, as a command often enters it."""
_DIRNAME = re.compile(r"\$\(dirname (?P<path>[^\s$`()'\"\\;&|<>*?\[{]+)\)")
"""The folder of a path written out, as a command often enters it (``cd "$(dirname x/y)"``)."""


_FRESH_FOLDER = re.compile(r"\$\(mktemp -d\)|`mktemp -d`")
"""A new, empty folder ``mktemp`` makes where the command's shell keeps temporary files
(``cd "$(mktemp -d)" && git clone URL``)."""


_TMPDIR_SET: Final = re.compile(r"(?<![\w$])(?<!\$\{)TMPDIR\b|\$\{TMPDIR:?=")
"""A word naming ``TMPDIR`` but for a plain read: the command may set where ``mktemp`` makes
its folder (``export TMPDIR=~/.config``, ``read TMPDIR``, ``${TMPDIR:=…}``)."""


def sets_tmpdir(command: str) -> bool:
    """Whether ``command`` may set ``TMPDIR``: then the folder ``mktemp -d`` makes is not
    known (:func:`fresh_folder` names it from the environment the tool's shell inherits)."""
    return _TMPDIR_SET.search(command) is not None


def fresh_folder() -> str:
    """A name for the folder ``mktemp -d`` makes: in ``TMPDIR`` (the tool's shell inherits
    it) or ``/tmp``, under a name no path has yet; a ``$`` (a folder not followed) where
    ``TMPDIR`` is not an absolute path."""
    temporary = os.environ.get("TMPDIR") or "/tmp"
    if not Path(temporary).is_absolute():
        return "$TMPDIR"
    return posixpath.join(temporary, _FRESH_NAME)


_FRESH_NAME: Final = "tmp.XXXXXXXXXX"
"""The name :func:`fresh_folder` gives the folder ``mktemp -d`` makes (its template's)."""


def repository_top(folder: Path) -> Path | None:
    """The top of the git repository holding ``folder``, or None outside one."""
    for each in (folder, *folder.parents):
        if (each / ".git").exists():
            return each
    return None


_COMPUTING = re.compile(r"[$`]")
"""What makes a wrapper's folder one the shell computes (its text as the analysis keeps it)."""
_GLOBBING = re.compile(r"[*?\[{]")

_DECLARING = frozenset({"export", "declare", "typeset", "local", "readonly"})


_BESIDE_CDPATH = re.compile(r"[/~]|\.\.?(?:/|$)")
"""A ``cd`` operand ``CDPATH`` is not searched for: an absolute path, ``~``, ``.``, ``..``,
``./x``, ``../x`` (a name merely beginning with a dot, ``.config``, is searched for)."""


def _cd_path(analysis: CommandAnalysis) -> list[Path] | str:
    """The folders of every ``CDPATH`` the command sets (``CDPATH=DIR cd x``, ``export
    CDPATH=DIR``), ``~`` expanded; or why they cannot be known (a value the shell
    computes)."""
    values = [
        word.partition("=")[2]
        for part in analysis.parts
        for word in (
            *part.assignments,
            *(part.argv[1:] if part.argv[:1] and part.argv[0] in _DECLARING else ()),
        )
        if word.startswith("CDPATH=")
    ]
    computed = next((value for value in values if _COMPUTING.search(value)), None)
    if computed is not None:
        return f"it sets CDPATH to a value the shell computes, {computed!r}"
    return [expand_home(entry) for value in values for entry in value.split(":") if entry]


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
    unresolved = expand_home(raw)
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


class PathChanged(OSError):
    """A folder on the way to a file was replaced (by a symbolic link) after it was checked."""


def write_file(path: Path, text: str, ctx: ToolContext) -> None:
    """Write ``text`` to the resolved ``path`` as UTF-8, creating parent folders.

    The file is opened relative to the working folder one component at a time, never
    following a symbolic link (``O_NOFOLLOW``): the file written is the file that was checked.

    Raises:
        PathChanged: a component is now a symbolic link (or not a folder); nothing is written.
    """
    root = ctx.cwd.resolve()
    if not path.is_relative_to(root):
        root = Path(path.anchor)
    parts = path.relative_to(root).parts
    data = text.encode("utf-8")
    directory = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in parts[:-1]:
            inner = _enter(directory, part, path)
            os.close(directory)
            directory = inner
        try:
            handle = os.open(
                parts[-1],
                os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW,
                0o666,
                dir_fd=directory,
            )
        except OSError as exc:
            raise PathChanged(f"{path} cannot be opened without following a link: {exc}") from exc
    finally:
        os.close(directory)
    with os.fdopen(handle, "wb") as stream:
        stream.write(data)


def _enter(directory: int, part: str, path: Path) -> int:
    """The folder ``part`` inside ``directory`` (created if missing), never through a link."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    try:
        inner = os.open(part, flags, dir_fd=directory)
    except FileNotFoundError:
        os.mkdir(part, dir_fd=directory)
        inner = os.open(part, flags, dir_fd=directory)
    except OSError as exc:
        raise PathChanged(
            f"{part!r} on the way to {path} is no longer a plain folder (a symbolic link was "
            f"put in its place?); nothing was written: {exc}"
        ) from exc
    return inner
