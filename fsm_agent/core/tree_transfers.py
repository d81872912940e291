"""Programs that carry whole folders between this machine and another place: cloud storage
(``aws s3 sync``, ``gsutil rsync``, ``rclone copy``, ``azcopy``), checkouts of version
control systems other than git (``hg clone``, ``svn checkout``), and a folder served over
HTTP (``python3 -m http.server``, ``php -S``, ``serve``, ``http-server``, ``httpd``).

A path rule must see them (SPEC §9.3: deny rules always win): ``aws s3 sync . s3://bucket``
reads every file under ``.``, ``.env`` too, and ``python3 -m http.server`` hands each to
whoever asks; ``aws s3 sync s3://bucket .`` writes under ``.`` files of names no word of it
spells. :func:`sent_trees` gives the local folders read whole, :func:`received_trees` those
written whole; another place's address (``s3://b``, ``remote:path``) is neither.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

_REMOTE: Final = re.compile(r"^(?:[a-z][a-z0-9+.-]*://|[A-Za-z0-9_.-]+:(?!/))")
"""An address of another place: a URL (``s3://b``, ``gs://b``, ``https://...``) or an rclone
remote (``name:path``)."""

_CARRIERS: Final[dict[tuple[str, ...], bool]] = {
    ("aws", "s3", "sync"): False,
    ("aws", "s3", "cp"): True,
    ("aws", "s3", "mv"): True,
    ("gsutil", "rsync"): False,
    ("gsutil", "cp"): True,
    ("gsutil", "mv"): True,
    ("gcloud", "storage", "rsync"): False,
    ("gcloud", "storage", "cp"): True,
    ("rclone", "copy"): False,
    ("rclone", "sync"): False,
    ("rclone", "move"): False,
    ("rclone", "bisync"): False,
    ("azcopy", "copy"): True,
    ("azcopy", "sync"): False,
}
"""Commands that copy between here and another place, by their leading words, and whether
they carry a whole folder only when told to recurse (``--recursive``, ``-r``, ``-R``)."""

_RECURSIVE: Final = frozenset({"--recursive", "-r", "-R"})
_SERVERS: Final = frozenset({"serve", "http-server", "httpd"})
"""Programs serving the files of a folder (their operand, ``-h``/``-d`` DIR, or where they
run): ``npx serve``, ``npx http-server``, busybox's ``httpd -h DIR``."""


def sent_trees(argv: Sequence[str]) -> tuple[str, ...]:
    """The local folders ``argv`` reads whole to carry or serve elsewhere, as written."""
    carried = _carried(argv)
    if carried is not None:
        return tuple(word for word in carried if not _REMOTE.match(word))
    return _served(argv)


def received_trees(argv: Sequence[str]) -> tuple[str, ...]:
    """The local folders ``argv`` writes whole, from elsewhere, as written: the destination
    of a copy whose source is another place (``aws s3 sync s3://b .``), or of a checkout of
    another version control system (``hg clone URL DIR``, ``svn checkout URL DIR``; without
    ``DIR``, the last name of the address)."""
    checkout = _checkout(argv)
    if checkout:
        return checkout
    carried = _carried(argv)
    if not carried or len(carried) < 2 or not _REMOTE.match(carried[0]):
        return ()
    destination = carried[-1]
    return () if _REMOTE.match(destination) else (destination,)


_CHECKOUTS: Final = frozenset(
    {("hg", "clone"), ("svn", "checkout"), ("svn", "co"), ("svn", "export"), ("bzr", "branch")}
    | {("bzr", "checkout"), ("brz", "branch"), ("darcs", "clone"), ("fossil", "clone")}
)
"""Checkouts of other version control systems: ``PROGRAM COMMAND SOURCE [DEST]``."""


def _checkout(argv: Sequence[str]) -> tuple[str, ...]:
    """The folder a checkout of another version control system writes, or nothing."""
    operands = [word for word in argv[1:] if not word.startswith("-")]
    if not argv or (argv[0].rsplit("/", 1)[-1], *operands[:1]) not in _CHECKOUTS:
        return ()
    operands = operands[1:]
    if len(operands) > 1:
        return (operands[1],)
    if operands:
        name = operands[0].rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1]
        return (name,) if name else ()
    return ()


def _carried(argv: Sequence[str]) -> list[str] | None:
    """The operands of a carrying command (source and destination), or None when ``argv``
    is none, or is told to copy one file only."""
    if not argv:
        return None
    # The command's words, global options between them left out (``gsutil -m rsync``).
    named = [(0, argv[0].rsplit("/", 1)[-1])]
    named += [(i, word) for i, word in enumerate(argv) if i and not word.startswith("-")]
    for words, needs_recursion in _CARRIERS.items():
        if tuple(word for _, word in named[: len(words)]) != words:
            continue
        rest = argv[named[len(words) - 1][0] + 1 :]
        if needs_recursion and not _RECURSIVE.intersection(rest):
            return None
        return [word for word in rest if not word.startswith("-")]
    return None


def _served(argv: Sequence[str]) -> tuple[str, ...]:
    """The folder a program serves over HTTP, or nothing."""
    if not argv:
        return ()
    program = argv[0].rsplit("/", 1)[-1]
    args = list(argv[1:])
    if re.fullmatch(r"python[0-9.]*", program) and args[:2] == ["-m", "http.server"]:
        return _option_value(args, ("-d", "--directory")) or (".",)
    if program == "php" and "-S" in args:
        return _option_value(args, ("-t",)) or (".",)
    if program in _SERVERS:
        folder = _option_value(args, ("-h", "-d"))
        operands = tuple(word for word in args if not word.startswith("-"))
        return folder or operands[:1] or (".",)
    return ()


def _option_value(args: Sequence[str], names: tuple[str, ...]) -> tuple[str, ...]:
    """The value given to one of the options ``names`` (``-d DIR``, ``--directory=DIR``)."""
    for index, word in enumerate(args):
        name, equals, value = word.partition("=")
        if name in names:
            if equals:
                return (value,)
            if index + 1 < len(args):
                return (args[index + 1],)
    return ()
