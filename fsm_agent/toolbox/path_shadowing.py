"""A program written where the shell finds it before the one it stands in for.

``curl -o ~/.local/bin/git URL`` writes no protected path, yet when ``~/.local/bin`` comes
before ``/usr/bin`` in ``PATH`` every later ``git`` (the user's, the agent's own) runs what
was downloaded: a write that runs code later, as a write to ``.bashrc`` is. The Bash safety
check asks for a write of a file named like a program the ``PATH`` already finds further on.
A new name (``~/.local/bin/jq`` where there is no other ``jq``) runs as before: installing a
tool is no takeover.
"""

from __future__ import annotations

import os
from pathlib import Path


class SearchPath:
    """The folders of a ``PATH``, resolved once (a command names many paths)."""

    def __init__(self, value: str | None) -> None:
        folders = [folder for folder in (value or "").split(os.pathsep) if folder]
        self._folders = [os.path.realpath(folder) for folder in folders]

    def shadowed(self, path: Path) -> str | None:
        """The program that a file written at ``path`` would stand in for (the path the
        ``PATH`` finds now, in a folder after ``path``'s), or None."""
        name = path.name
        if not name or not self._folders:
            return None
        folder = os.path.realpath(path.parent)
        if folder not in self._folders:
            return None
        later = self._folders[self._folders.index(folder) + 1 :]
        for other in later:
            if other == folder:
                continue
            found = os.path.join(other, name)  # noqa: PTH118 - strings, as PATH is searched
            if os.path.isfile(found) and os.access(found, os.X_OK):  # noqa: PTH113
                return found
        return None
