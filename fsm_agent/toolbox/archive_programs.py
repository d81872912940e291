"""Programs that extract an archive, beyond ``tar`` and ``unzip``: which archive each
extracts (SPEC §9.3 safety checks, with :mod:`~fsm_agent.toolbox.archive_members`).

``python3 -m zipfile -e a.zip ~`` and ``jar xf a.jar`` extract a zip, which Python lists, so
their members are judged where they land, as ``unzip``'s are. The others extract formats
Python does not read — ``cpio -i`` (and ``-p``, which copies the files its input names),
``7z x``, ``unrar x``, ``unar``, ``dpkg -x``, ``dpkg-deb -x``/``-R``, ``ar x``, ``pax -r``,
``cabextract``, ``unsquashfs`` — so an extraction by one of them is one that cannot be listed
first, which asks. Listing (``cpio -t``, ``7z l``, ``unsquashfs -l``) writes nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Final

from fsm_agent.toolbox.data_paths import UNTOLD

_PYTHON: Final = re.compile(r"python(?:\d+(?:\.\d+)*)?")
_PYTHON_ARCHIVES: Final = frozenset({"zipfile", "tarfile"})
_PYTHON_VALUES: Final = frozenset({"-W", "-X"})
"""The interpreter's options that take the next word as their value."""


def extracted_archive(program: str, args: Sequence[str]) -> str | None:
    """The archive ``program`` given ``args`` extracts to files (``-`` for its input,
    :data:`~fsm_agent.toolbox.data_paths.UNTOLD` when it cannot be listed first), or None when
    it extracts none (or is not one of these programs)."""
    if _PYTHON.fullmatch(program):
        return _python_module(args)
    if program == "jar":
        return _jar(args)
    extracts = _UNLISTED.get(program)
    return UNTOLD if extracts is not None and extracts(args) else None


def _python_module(args: Sequence[str]) -> str | None:
    """``python3 -m zipfile -e ARCHIVE DIR`` (or ``tarfile``): the archive."""
    for index, word in enumerate(args):
        if index > 0 and args[index - 1] in _PYTHON_VALUES:
            continue  # -W's or -X's value
        module = args[index + 1] if word == "-m" and index + 1 < len(args) else word[2:]
        if word.startswith("-m") and module in _PYTHON_ARCHIVES:
            rest = args[index + 1 + (word == "-m") :]
            for position, option in enumerate(rest):
                if option in ("-e", "--extract"):
                    return rest[position + 1] if position + 1 < len(rest) else UNTOLD
            return None
        if not word.startswith("-"):
            return None  # a script runs, or -m runs another module
    return None


def _jar(args: Sequence[str]) -> str | None:
    """``jar xf ARCHIVE`` / ``jar -xf ARCHIVE`` / ``jar --extract --file=ARCHIVE``: the zip;
    from its input (no ``f``) it cannot be listed first."""
    if not args:
        return None
    first = args[0]
    if first.startswith("--"):
        if "--extract" not in args and "-x" not in args:
            return None
        for index, word in enumerate(args):
            if word.startswith("--file="):
                return word.partition("=")[2]
            if word in ("--file", "-f") and index + 1 < len(args):
                return args[index + 1]
        return "-"
    letters = first.lstrip("-")
    if "x" not in letters:
        return None
    return args[1] if "f" in letters and len(args) > 1 else "-"


def _letters(args: Sequence[str]) -> set[str]:
    """The letters of every short-option word (``-idm`` gives ``i``, ``d``, ``m``)."""
    return {letter for word in args if word[:1] == "-" and word[1:2] != "-" for letter in word[1:]}


def _cpio(args: Sequence[str]) -> bool:
    """``cpio -i`` extracts and ``cpio -p`` copies what its input names; ``-t`` lists."""
    letters = _letters(args)
    if "t" in letters or "--list" in args:
        return False
    return bool(letters & {"i", "p"}) or any(
        word in ("--extract", "--pass-through") for word in args
    )


def _command_word(*commands: str) -> Callable[[Sequence[str]], bool]:
    """A program whose first word that is not an option is its command (``7z x``, ``unrar
    e``): whether that command is one of ``commands``."""
    wanted = frozenset(commands)

    def extracts(args: Sequence[str]) -> bool:
        return next((word for word in args if not word.startswith("-")), "") in wanted

    return extracts


def _ar(args: Sequence[str]) -> bool:
    """``ar x lib.a`` (or ``ar -x``, ``ar xv``): its first word holds the command letter."""
    return bool(args) and "x" in args[0].lstrip("-")


def _options(*extracting: str) -> Callable[[Sequence[str]], bool]:
    """A program that extracts when one of the options ``extracting`` is given."""
    wanted = frozenset(extracting)
    letters = {option[1] for option in extracting if len(option) == 2}

    def extracts(args: Sequence[str]) -> bool:
        return any(word.partition("=")[0] in wanted for word in args) or bool(
            _letters(args) & letters
        )

    return extracts


def _unless(*listing: str) -> Callable[[Sequence[str]], bool]:
    """A program that extracts unless one of the options ``listing`` is given."""

    def extracts(args: Sequence[str]) -> bool:
        return bool(args) and not any(word in listing for word in args)

    return extracts


_UNLISTED: Final[dict[str, Callable[[Sequence[str]], bool]]] = {
    "cpio": _cpio,
    "bsdcpio": _cpio,
    **dict.fromkeys(("7z", "7za", "7zr", "7zz"), _command_word("x", "e")),
    "unrar": _command_word("x", "e"),
    "unar": _unless("-h", "--help", "-v", "--version"),
    "dpkg": _options("-x", "--extract", "-X", "--vextract"),
    "dpkg-deb": _options(
        "-x", "--extract", "-X", "--vextract", "-R", "--raw-extract", "-e", "--control"
    ),
    "ar": _ar,
    "pax": _options("-r"),
    "cabextract": _unless("-l", "--list", "-t", "--test"),
    "unsquashfs": _unless("-l", "-ls", "-lls", "-lc", "-llc", "-s", "-stat", "-h", "-help"),
}
"""Programs extracting formats Python does not list, by name: whether the arguments extract."""
