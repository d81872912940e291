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

from fsm_agent.toolbox.program_words import program_words, words_after

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
    words = program_words(argv)
    for key, spared in _WRITERS.items():
        after = words_after(key, words)
        if after is not None and not spared & set(after):
            return " ".join(key)
    return None
