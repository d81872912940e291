"""Paths through a process's own view of the file system: ``/proc/PID/cwd``, ``/proc/PID/root``
and the folders it holds open, ``/proc/PID/fd/N``.

``/proc/self/cwd`` is a link to the working folder of whichever process reads it. The
permission checks resolve a command's words in this process, whose working folder is not the
command's (an ``Agent`` given a ``cwd``, a worker serving many sessions): ``rm -rf
/proc/self/cwd/../.config`` was judged as a path beside this process's folder and ran beside
the command's. A path through such a link, spelled so or reached through a link made earlier
(``ln -s /proc/self/cwd here``), is one whose target the checks cannot know, as a path the
shell computes is. So is a path leading on through a file the process holds open
(``/proc/self/fd/3/.config``, ``/dev/fd/3/x``, ``/dev/stdin/x``): a folder the command opened
(``exec 3<~``, ``< ~``) is entered so, as ``cd`` would enter it. The open file itself
(``> /dev/stderr``) is no folder to enter and is judged where it was opened.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Final

_VIEW: Final = re.compile(r"/proc/[^/]+(?:/task/[^/]+)?/(?:cwd|root)")
"""A process's working folder or root, as the kernel shows it (``self``, ``thread-self`` or
a process number; a thread's under ``task``)."""

_HELD_OPEN: Final = re.compile(r"/proc/[^/]+(?:/task/[^/]+)?/fd/[^/]+")
"""A file a process holds open, as the kernel shows it: a link to whatever it opened."""

_MOST_LINKS: Final = 40
"""Links followed in one path before it counts as unknowable (Linux gives up at 40)."""


def through_process_view(base: str, relative: str, *, entered: bool = False) -> bool:
    """Whether resolving ``relative`` from the resolved folder ``base`` (``/`` for an
    absolute path) goes through a process's working folder or root under ``/proc``, or on
    through a file it holds open (``/proc/self/fd/3/x``), as written or by a symbolic link on
    the way; too many links count as such a path too,
    since where they lead is not known. With ``entered``, ``relative`` is a folder gone
    into (``cd /dev/fd/3``), so an open file it ends on counts as one gone through."""
    pending = [name for name in relative.split("/") if name not in ("", ".")]
    current = base.rstrip("/")  # "" stands for the root
    links = 0
    while pending:
        name = pending.pop(0)
        if name == "..":
            current = current.rpartition("/")[0]
            continue
        current = f"{current}/{name}"
        onward = bool(pending) or entered
        if _VIEW.fullmatch(current) or (onward and _HELD_OPEN.fullmatch(current)):
            return True
        try:
            target = os.readlink(current)  # noqa: PTH115 - a string path, walked by hand
        except OSError:  # not a link, or missing: taken as written
            continue
        links += 1
        if links > _MOST_LINKS:
            return True
        current = "" if target.startswith("/") else current.rpartition("/")[0]
        pending[:0] = [part for part in target.split("/") if part not in ("", ".")]
    return False


class ProcessViews:
    """Which words of a command lead through a process view, from the folders the command
    may be in: each folder resolved and searched once, then only each word's own names."""

    def __init__(self) -> None:
        self._folders: dict[Path, str | None] = {}

    def through(self, folder: Path, path: Path, *, entered: bool = False) -> bool:
        """Whether ``path`` (absolute, or relative to ``folder``) leads through one; with
        ``entered``, ending on an open file counts (:func:`through_process_view`)."""
        if path.is_absolute():
            return through_process_view("/", path.as_posix(), entered=entered)
        if folder not in self._folders:
            inside = through_process_view("/", folder.as_posix(), entered=True)
            self._folders[folder] = None if inside else os.path.realpath(folder)
        resolved = self._folders[folder]
        return resolved is None or through_process_view(resolved, path.as_posix(), entered=entered)


def makes_links(argv: Sequence[str]) -> bool:
    """Whether a part run as ``argv`` makes links (``ln``), whose targets a later word goes
    through as a folder: ``ln -s /dev/fd/3 x`` makes ``x/.config`` lead into the folder a
    later program holds open as its descriptor 3."""
    return bool(argv) and argv[0].rsplit("/", 1)[-1] == "ln"
