"""Files the user's start-up files pull in: what ``.bashrc`` sources, what ``.gitconfig`` includes.

A ``.bashrc`` that ends with ``source ~/dotfiles/aliases.sh``, or a ``~/.gitconfig`` with
``[include] path = ~/dotfiles/git.inc``, makes those files start-up code as much as the file
naming them: ``echo 'curl … | sh' >> ~/dotfiles/aliases.sh`` runs in every later shell, and a
``core.fsmonitor`` added to ``git.inc`` in every later ``git``. They are protected as the
start-up files are (:func:`~fsm_agent.toolbox.paths.is_protected`).

The files are read again at most once a second (:mod:`~fsm_agent.toolbox.home_readings`).
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import Final

from fsm_agent.toolbox.home_readings import read_once_a_second

_SHELL_FILES: Final = (
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".profile",
    ".bash_aliases",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".config/fish/config.fish",
)
_GIT_FILES: Final = (".gitconfig", ".config/git/config")
_SOURCED: Final = re.compile(
    r"(?:^|[;&|{(]|\bthen\b|\bdo\b)\s*(?:source|\.)\s+([\"']?)([^\s;&|)\"']+)\1", re.M
)
"""``source FILE`` or ``. FILE`` where a command may stand (``[ -f F ] && . F`` too)."""
_INCLUDED: Final = re.compile(r"^\s*path\s*=\s*\"?([^\"\n]+?)\"?\s*$", re.M)
"""A ``path = FILE`` line of git's settings (``[include]``, ``[includeIf …]``)."""
_HOME_WORD: Final = re.compile(r"^(?:~|\$HOME|\$\{HOME\})(?=/|$)")
_MOST_BYTES: Final = 1 << 20
"""A start-up file read up to this size."""
_MOST_FILES: Final = 64
"""Files read in all (a ``.bashrc`` may source a great many)."""


def sourced_by_startup() -> frozenset[str]:
    """The resolved paths of the files the user's shell and git start-up files source or
    include, two levels deep; empty without a home folder."""
    return read_once_a_second(("sourced", os.environ.get("HOME")), _read_home)


def _read_home() -> frozenset[str]:
    try:
        home = Path.home()
    except (RuntimeError, KeyError):
        return frozenset()
    return _read(home)


def _read(home: Path) -> frozenset[str]:
    found: set[str] = set()
    pending = [(home / name, _SOURCED, 2) for name in _SHELL_FILES]
    pending += [(home / name, _INCLUDED, 2) for name in _GIT_FILES]
    read = 0
    while pending and read < _MOST_FILES:
        path, pattern, depth = pending.pop()
        text = _text(path)
        if text is None:
            continue
        read += 1
        for match in pattern.finditer(text):
            named = _path(match.group(match.lastindex or 1), home, path.parent)
            if named is None or named in found:
                continue
            found.add(named)
            if depth > 1:
                pending.append((Path(named), pattern, depth - 1))
    return frozenset(found)


def _text(path: Path) -> str | None:
    """The start of a regular file's text; None for anything else: a missing file, a folder,
    and a named pipe or device (``source /dev/stdin``), which reading would wait on."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as file:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return file.read(_MOST_BYTES).decode("utf-8", errors="replace")


def _path(word: str, home: Path, folder: Path) -> str | None:
    """A sourced or included word as a resolved path: ``~`` and ``$HOME`` are the home
    folder, a relative path starts from the file's folder; None for anything else the
    shell computes."""
    word = _HOME_WORD.sub(str(home).replace("\\", "\\\\"), word.strip())
    if not word or "$" in word or "`" in word:
        return None
    return os.path.realpath(folder / word)
