"""A part's words as the program it runs reads them, and what follows a subcommand.

Several checks know programs by name and subcommand (``ruff format``, ``docker compose``,
``conda init``): a formatter rewriting files, a program loading ``.env``, one writing the
shell's start-up files. They read a part alike: the program by its name whatever path runs
it (``/usr/bin/ruff``), a Python module run with ``-m`` as the program it is (``python3 -m
black``), and the subcommand wherever it stands after the program's own options (``ruff
--config x.toml format``, ``cargo +nightly fmt``, ``docker --context x compose``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

_PYTHONS: Final = ("python", "python3")


def program_words(argv: Sequence[str]) -> list[str]:
    """``argv`` with its program by name (``/usr/bin/ruff`` is ``ruff``), and ``python3 -m
    black …`` as ``black …``."""
    words = [argv[0].rsplit("/", 1)[-1], *argv[1:]] if argv else []
    if len(words) > 2 and words[1] == "-m" and words[0].rstrip("0123456789.") in _PYTHONS:
        return words[2:]
    return words


def words_after(command: Sequence[str], words: Sequence[str]) -> list[str] | None:
    """The words after ``command`` (a program's name and its subcommand, if any) in
    ``words`` (:func:`program_words`), or None when ``words`` does not run it. The
    subcommand is looked for anywhere after the name, past the program's own options, so a
    word merely spelled so counts too: that errs on the side that asks."""
    if not words or words[0] != command[0]:
        return None
    size = len(command) - 1
    for start in range(1, len(words) - size + 1):
        if tuple(words[start : start + size]) == tuple(command[1:]):
            return list(words[start + size :])
    return None
