"""The name a file takes in the folder a program puts it in (SPEC §9.3 step 1g).

``cp hook.pth .venv/lib/python3.12/site-packages/`` writes ``site-packages/hook.pth``, though
neither word names a protected path. So do the other programs that put a file into a folder
under a name no word spells whole:

* ``cp``, ``mv``, ``ln``, ``install`` (the last operand when it is a folder, or ``-t DIR``),
  ``rsync`` and ``scp``: each source keeps its own name there; what a folder given as
  ``DIR/.`` holds lands under its own names, and for ``rsync`` so does what ``DIR/`` holds;
  a source on another machine (``HOST:PATH``) keeps the last name of its path;
* a download: ``wget URL`` and ``curl -O URL`` name the file after the URL's last segment, in
  the folder ``wget -P DIR`` or ``curl --output-dir DIR`` gives (where ``curl -o NAME``
  writes too), else where the command runs (``cd site-packages && wget URL``).

A single source given a destination that is not a folder yet (or with ``-T``) becomes it:
``cp -r src ~/.config/git``, ``mv``, ``ln -s DIR ~/.config/git``, ``scp -r``. When that
destination may hold a place and the source is a folder (or a link, whose target may become
one), what the source holds is what the place holds: the command asks.

Where the names cannot be known (a remote folder's contents, ``wget -r`` or ``-i FILE``,
``curl -J``, what git checks out: :mod:`~fsm_agent.toolbox.git_checkouts`), the command asks
when the folder may hold one of the places whose files run code later
(``startup_places.holds_place``: ``site-packages``, ``~/.config``, ``~/.config/git``, ``/etc``
…). So does a link made to such a folder (``ln -s ~/.config/git g``), through which a later
word writes what no word names (``g/config``). Any other writing command naming such a folder,
or one that exists (``aws s3 cp``, ``docker cp``, ``git -C``), is judged as if each of its
other words put a file there under its last name (``docker cp box:/git ~/.local/bin/`` puts a
program ahead of git).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from urllib.parse import unquote, urlsplit

import attrs

from fsm_agent.core.command_options import (
    OptionTable,
    ParsedArguments,
    loose_table,
    parse_arguments,
)
from fsm_agent.toolbox.git_checkouts import checkout_folder
from fsm_agent.toolbox.paths import (
    is_folder,
    is_protected,
    path_candidates,
    protected_within,
    word_path,
)
from fsm_agent.toolbox.startup_places import holds_place

Names = list[tuple[str, bool]] | None
"""The names a file takes in a folder, each with whether it may be a folder; None: any name."""


@attrs.frozen
class _Placer:
    """How a copying program reads its words: its options, whether ``SRC/`` gives what
    ``SRC`` holds, whether ``HOST:PATH`` names another machine's file, and the option that
    makes it link to the sources rather than copy them (empty: it always links)."""

    table: OptionTable
    contents_slash: bool = False
    remote: bool = False
    links: str | None = None
    whole: bool = False  # one source becomes the destination, unless that is a folder


_COPY_TABLE = loose_table("tS", long_values="target-directory suffix")
_PLACERS = {
    "cp": _Placer(_COPY_TABLE, links="-s", whole=True),
    "mv": _Placer(_COPY_TABLE, whole=True),
    "ln": _Placer(_COPY_TABLE, links="", whole=True),
    "install": _Placer(
        loose_table("tSmgo", long_values="target-directory suffix mode group owner")
    ),
    "rsync": _Placer(
        loose_table(
            "efTBM",
            long_values="rsh filter exclude include exclude-from include-from files-from "
            "temp-dir suffix chmod chown compare-dest copy-dest link-dest log-file "
            "password-file port timeout bwlimit rsync-path",
        ),
        contents_slash=True,
        remote=True,
    ),
    "scp": _Placer(loose_table("cFiJloPSDX"), remote=True, whole=True),
}
"""The programs that put a file (or a link, or a folder) into a destination folder under the
name it has where it comes from."""


def placed_path(
    argv: Sequence[str],
    cwd: Path,
    protected: Callable[[Path], bool] = is_protected,
    assignments: Sequence[str] = (),
) -> str | None:
    """The first path that a program of ``argv`` creates inside a folder without a word
    naming it (see the module's text) and that ``protected`` judges one, or None. ``cwd``:
    the folder relative words start from; ``assignments``: the ``VAR=value`` prefixes it runs
    with (``GIT_WORK_TREE=DIR git checkout``)."""
    program = argv[0].rsplit("/", 1)[-1] if argv else ""
    placer = _PLACERS.get(program)
    found: str | None = None
    if placer is not None:
        found = _copied(placer, argv[1:], cwd, protected)
    elif program in _DOWNLOADS:
        found = _DOWNLOADS[program](argv[1:], cwd, protected)
    elif program == "git":
        checkout = checkout_folder(argv[1:], cwd, assignments)
        if checkout is not None:
            shown, folder = checkout
            found = _first_placed(shown, folder, None, protected, "what it checks out")
    return found or _into_named_folder(argv[1:], cwd, protected)


def _links_to_protected(source: str, cwd: Path) -> bool:
    """Whether a link to ``source`` leads to a folder that is, may hold or holds a protected
    path (``~``, ``..``, ``/``, a repository, ``~/.config``): a later command writes through
    it under names that spell no protected path, and what the link leads to may change
    between that command's check and its run (``mkdir h``, then ``rm -rf h/.config`` checked
    while ``h`` is a folder, and a job left running makes ``h`` a link to ``~``)."""
    path = word_path(source, cwd)
    if holds_place(_parts(path)):
        return True
    return protected_within(Path(os.path.realpath(path))) is not False


def _copied(
    placer: _Placer, args: Sequence[str], cwd: Path, protected: Callable[[Path], bool]
) -> str | None:
    parsed = parse_arguments(args, placer.table)
    operands = list(parsed.operands)
    target = _value(parsed, "-t", "--target-directory")
    linking = placer.links is not None and (
        not placer.links or any(o.name == placer.links for o in parsed.options)
    )
    if linking:
        sources = operands if target is not None or len(operands) < 2 else operands[:-1]
        # A symbolic link's relative target starts from the link's folder (`ln -s ../x d/y`).
        named = target if target is not None else operands[-1] if len(operands) > 1 else None
        starts = [cwd]
        if named is not None:
            link = word_path(named, cwd)
            starts.append(link if target is not None or is_folder(link) else link.parent)
        for source in sources:
            if any(_links_to_protected(source, start) for start in starts):
                return f"{source} (a link to it lets a later word write what it holds)"
    if target is None:
        if len(operands) < 2:
            return None
        target, operands = operands[-1], operands[:-1]
    if placer.remote and _is_remote(target):
        return None
    folder = word_path(target, cwd)
    if placer.whole and len(operands) == 1 and holds_place(_parts(folder)):
        # `cp -r src ~/.config/git` where there is none yet, or `cp -rT`: src becomes it,
        # and what src holds (git/config) is what the place holds.
        source = operands[0]
        becomes = not is_folder(folder) or any(o.name in _WHOLE for o in parsed.options)
        if becomes and (linking or _may_be_folder(source, cwd, remote=placer.remote)):
            return f"{target} ({source} becomes it)"
    if not (_names_folder(target) or is_folder(folder) or holds_place(_parts(folder))):
        return None  # the destination is the file itself: its own word is judged
    for source in operands:
        names = _source_names(placer, source, cwd)
        found = _first_placed(target, folder, names, protected, f"what {source} holds")
        if found is not None:
            return found
    return None


def _names_folder(word: str) -> bool:
    """Whether ``word`` names a folder whatever is on disk (``DIR/``, ``.``, ``..``): the
    folder a command is in may be one it made first (``mkdir d && cd d && cp ../x .``)."""
    return word.endswith(("/", "/.", "/..")) or word in (".", "..")


def _source_names(placer: _Placer, source: str, cwd: Path) -> Names:
    """The names ``source`` takes in the destination folder (see :func:`_local_names`)."""
    if placer.remote and _is_remote(source):
        return _remote_names(source, contents_slash=placer.contents_slash)
    return _local_names(source, word_path(source, cwd), placer.contents_slash)


def places_into_last(argv: Sequence[str]) -> bool:
    """Whether the program of ``argv`` may put its other operands into its last one (``cp``,
    ``mv``, ``ln``, ``install``, ``rsync``, ``scp``): which word comes last matters."""
    return bool(argv) and argv[0].rsplit("/", 1)[-1] in _PLACERS


def placed_sources(argv: Sequence[str], cwd: Path) -> tuple[str, Names] | None:
    """For a program that copies, moves or links its sources into a folder (``cp``, ``mv``,
    ``ln``, ``install``, ``rsync``, ``scp``), that folder as written and the names the sources
    take there (each with whether it may be a folder; None when they cannot be known). None
    when it is no such program, or its destination is not a folder: a single source then
    takes the destination's own name, which its word names."""
    program = argv[0].rsplit("/", 1)[-1] if argv else ""
    placer = _PLACERS.get(program)
    if placer is None:
        return None
    parsed = parse_arguments(argv[1:], placer.table)
    operands = list(parsed.operands)
    target = _value(parsed, "-t", "--target-directory")
    if target is None:
        if len(operands) < 2:
            return None
        target, operands = operands[-1], operands[:-1]
        folder = word_path(target, cwd)
        if len(operands) == 1 and not (_names_folder(target) or is_folder(folder)):
            return None
    if placer.remote and _is_remote(target):
        return None
    names: list[tuple[str, bool]] = []
    for source in operands:
        found = _source_names(placer, source, cwd)
        if found is None:
            return target, None
        names += found
    return target, names


_WHOLE = frozenset({"-T", "--no-target-directory"})
"""The option that makes the destination the source's new name, even when it is a folder."""


def _may_be_folder(source: str, cwd: Path, *, remote: bool) -> bool:
    """Whether ``source`` may be a folder: another machine's path, or a local folder."""
    if remote and _is_remote(source):
        return True
    return source.endswith("/") or is_folder(word_path(source, cwd))


def _first_placed(
    shown: str,
    folder: Path,
    names: Names,
    protected: Callable[[Path], bool],
    unknown: str,
) -> str | None:
    """``shown/NAME`` for the first of ``names`` that makes a protected path in ``folder``
    (or that, being a folder, may hold a place); for unknown names (None), ``shown/
    (unknown)`` when the folder may hold a place; else None."""
    where = _parts(folder)
    shown = shown.rstrip("/") or "/"
    if names is None:
        return f"{shown}/ ({unknown})" if holds_place(where) else None
    for name, may_be_folder in names:
        if protected(folder / name) or (may_be_folder and holds_place([*where, name.lower()])):
            return f"{shown}/{name}"
    return None


_LISTED_LIMIT = 10_000
"""How many names of a folder whose contents are copied are judged; past them, none is."""


def _local_names(source: str, path: Path, contents_slash: bool) -> Names:
    """The names ``source`` (at ``path``) takes in a destination folder: its own name, or for
    ``DIR/.`` (and ``DIR/`` when ``contents_slash``) the names of what ``DIR`` holds (None
    when it holds too many to judge or cannot be listed)."""
    bare = source.rstrip("/")
    if bare.endswith("/.") or bare == "." or (contents_slash and source.endswith("/")):
        try:
            with os.scandir(path) as listing:
                entries = list(itertools.islice(listing, _LISTED_LIMIT + 1))
        except OSError:
            return None
        if len(entries) > _LISTED_LIMIT:
            return None
        return [(entry.name, entry.is_dir(follow_symlinks=False)) for entry in entries]
    name = Path(bare).name
    return [] if name in ("", "..") else [(name, source.endswith("/") or is_folder(path))]


def _is_remote(word: str) -> bool:
    """Whether ``rsync``/``scp`` take ``word`` as another machine's path: ``HOST:PATH`` (no
    ``/`` before the colon) or a URL."""
    before, colon, _ = word.partition(":")
    return (bool(colon) and bool(before) and "/" not in before) or "://" in word


def _remote_names(source: str, *, contents_slash: bool) -> Names:
    """The name another machine's ``source`` takes: the last of its path, which may be a
    folder; none known for a folder's contents or a home folder (``HOST:``)."""
    path = source.split("://", 1)[-1].split(":", 1)[-1]
    bare = path.rstrip("/")
    name = bare.rsplit("/", 1)[-1]
    if name in ("", ".", "..", "~") or (contents_slash and path.endswith("/")):
        return None
    return [(name, True)]


def _wget(args: Sequence[str], cwd: Path, protected: Callable[[Path], bool]) -> str | None:
    """``wget URL`` saves the file under the URL's last segment, in ``-P DIR`` (or ``-e
    dir_prefix=DIR``, a start-up file's command); with ``-O`` its own word names the file;
    recursion, ``-i FILE``, ``-x`` and names the server gives make the names unknown."""
    parsed = parse_arguments(args, _WGET_TABLE)
    if _value(parsed, "-O", "--output-document") is not None:
        return None
    commands = {  # wgetrc's names ignore case, "-" and "_"
        key.replace("_", "").replace("-", "").strip().lower(): value.strip()
        for key, _, value in (v.partition("=") for v in parsed.values("-e", "--execute"))
    }
    prefix = _value(parsed, "-P", "--directory-prefix") or commands.get("dirprefix") or "."
    names: Names = [(name, False) for url in parsed.operands for name in _url_names(url)]
    if any(option.name in _WGET_UNKNOWN for option in parsed.options) or any(
        commands.get(key, "off").lower() not in ("off", "0", "no") for key in _WGETRC_UNKNOWN
    ):
        names = None
    return _first_placed(prefix, word_path(prefix, cwd), names, protected, "what it downloads")


_WGET_TABLE = loose_table(
    "oaiBetOTwQPUlARDIXn",
    long_values="output-document input-file directory-prefix output-file append-output "
    "execute header user-agent",
)
_WGET_UNKNOWN = frozenset(
    {
        "-r",
        "--recursive",
        "-m",
        "--mirror",
        "-p",
        "--page-requisites",
        "-i",
        "--input-file",
        "-x",
        "--force-directories",
        "--content-disposition",
        "--trust-server-names",
    }
)
_WGETRC_UNKNOWN = (
    "recursive",
    "mirror",
    "pagerequisites",
    "inputfile",
    "dirstruct",
    "contentdisposition",
    "trustservernames",
)


def _curl(args: Sequence[str], cwd: Path, protected: Callable[[Path], bool]) -> str | None:
    """``curl -O URL`` saves the file under the URL's last segment, in ``--output-dir DIR``,
    where ``-o NAME`` writes too; ``-J`` lets the server name it, and a URL's ``{a,b}`` or
    ``[1-9]`` stand for many (unless ``-g``)."""
    parsed = parse_arguments(args, _CURL_TABLE)
    given = {option.name for option in parsed.options}
    folder = _value(parsed, "--output-dir")
    remote_name = not given.isdisjoint(_CURL_REMOTE_NAME)
    names: Names = []
    if remote_name:
        urls = [*parsed.operands, *parsed.values("--url")]
        names = [(name, False) for url in urls for name in _url_names(url)]
        globbed = given.isdisjoint({"-g", "--globoff"}) and any(
            mark in url for url in urls for mark in "{["
        )
        if globbed or not given.isdisjoint({"-J", "--remote-header-name"}):
            names = None
    if folder is not None and names is not None:
        names += [(name, False) for name in parsed.values("-o", "--output")]
    elif folder is None and not remote_name:
        return None  # `-o NAME` alone: its own word names the file
    where = folder or "."
    return _first_placed(where, word_path(where, cwd), names, protected, "a name the server gives")


_CURL_TABLE = loose_table(
    "AbcCdDeEFhHKmoPQrtTuUwxXyYz",
    long_values="output output-dir data header user-agent user request url",
)
_CURL_REMOTE_NAME = frozenset({"-O", "--remote-name", "--remote-name-all"})

_DOWNLOADS: dict[str, Callable[[Sequence[str], Path, Callable[[Path], bool]], str | None]] = {
    "wget": _wget,
    "curl": _curl,
}


def _into_named_folder(
    args: Sequence[str], cwd: Path, protected: Callable[[Path], bool]
) -> str | None:
    """For a word naming a folder here that exists or may hold a place (any program), the
    first other word whose last name (after a ``/`` or a ``:``) makes a path there that
    ``protected`` judges one: ``aws s3 cp s3://b/x.pth site-packages/``, ``docker cp
    c:/x.pth site-packages/``, ``docker cp c:/git ~/.local/bin/`` (a program ahead of git)."""
    candidates = [candidate for word in args for candidate in path_candidates(word)]
    holders = [
        c
        for c in candidates
        if not _is_remote(c)
        and (holds_place(_parts(word_path(c, cwd))) or is_folder(word_path(c, cwd)))
    ]
    for holder in holders:
        folder = word_path(holder, cwd)
        for candidate in candidates:
            name = candidate.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1]
            if candidate != holder and name not in ("", ".", "..") and protected(folder / name):
                return f"{holder.rstrip('/')}/{name}"
    return None


def _url_names(url: str) -> list[str]:
    """The names a download of ``url`` may take: the last segment of its path, as written and
    with ``%XX`` decoded (``index.html`` for a folder). A URL Python cannot split
    (``http://[x/y``) is taken as a path."""
    try:
        path = urlsplit(url).path
    except ValueError:
        path = url.split("?", 1)[0]
    name = path.rsplit("/", 1)[-1] or "index.html"
    return list(dict.fromkeys([name, unquote(name).rsplit("/", 1)[-1]]))


def _value(parsed: ParsedArguments, *names: str) -> str | None:
    """The value of the last of the options ``names`` given, or None."""
    values = parsed.values(*names)
    return values[-1] if values else None


def _parts(folder: Path) -> list[str]:
    return [part.lower() for part in folder.absolute().parts]
