"""Programs that write the user's shell start-up files themselves when run.

``conda init`` adds a block to ``~/.bashrc`` (and ``.zshrc``, fish's ``config.fish``...),
``pipx ensurepath`` and ``uv tool update-shell`` a ``PATH`` line to the shell's start-up files,
``rustup-init`` to ``~/.profile`` and ``~/.bashrc`` unless told not to: a write of a protected
path no word of the command names, and one that runs code in every later shell. The Bash
safety check asks for them as for ``echo … >> ~/.bashrc`` (SPEC §9.3 step 1g). What only
prints the lines for the user to add (``pyenv init``, ``conda shell.bash hook``, ``starship
init``) runs. The subcommand counts after the program's own options too (``uv -q tool
update-shell``), and a program run as a module (``python3 -m conda init``) as the program.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

_WRITERS: Final[dict[tuple[str, ...], frozenset[str]]] = {
    ("conda", "init"): frozenset({"--dry-run", "-d", "--reverse"}),
    ("mamba", "init"): frozenset({"--dry-run", "-d", "--reverse"}),
    ("micromamba", "shell", "init"): frozenset({"--dry-run"}),
    ("pipx", "ensurepath"): frozenset(),
    ("uv", "tool", "update-shell"): frozenset(),
    ("rustup-init",): frozenset({"--no-modify-path"}),
    ("volta", "setup"): frozenset(),
    ("pnpm", "setup"): frozenset(),
    ("opam", "init"): frozenset({"--no-setup", "-n"}),
}
"""Each program (with its subcommand) that writes start-up files, and the options that make
it write none (``--dry-run``, ``--no-modify-path``)."""


def startup_writer(argv: Sequence[str]) -> str | None:
    """The program and subcommand of ``argv`` when it writes the user's start-up files (as
    shown), or None."""
    words = [argv[0].rsplit("/", 1)[-1], *argv[1:]] if argv else []
    if len(words) > 2 and words[1] == "-m" and words[0].rstrip("0123456789.") in _PYTHONS:
        words = words[2:]  # python3 -m conda init
    for key, spared in _WRITERS.items():
        after = _after(key, words)
        if after is not None and not spared & set(after):
            return " ".join(key)
    return None


_PYTHONS: Final = ("python", "python3")


def _after(key: tuple[str, ...], words: Sequence[str]) -> list[str] | None:
    """The words after the program and subcommand ``key`` in ``words``, or None when
    ``words`` does not run it. The subcommand may follow the program's own options (``uv -q
    tool update-shell``, ``micromamba -r DIR shell init``): it is looked for anywhere after
    the name, which errs on the side that asks."""
    if not words or words[0] != key[0]:
        return None
    size = len(key) - 1
    for start in range(1, len(words) - size + 1):
        if tuple(words[start : start + size]) == key[1:]:
            return list(words[start + size :])
    return None
