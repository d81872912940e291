"""Programs that read a ``.env`` file of the folder they run in without being told to.

``Read(./.env)`` denied, ``cat .env`` is denied by its words, but ``python3 -m dotenv list``,
``docker compose config``, ``bun -e 'console.log(process.env)'`` and ``pipenv run env`` print
the same secrets and name no file: each loads ``.env`` (and ``.env.local`` and their kind)
from where it runs, or from the project it finds there. For the Read rules
(``permission_content``) such a part reads files under the folder it runs in, as ``grep -r
KEY .`` does, and asks where a rule may cover one. A script that starts such a program
(``npm run dev`` running ``next dev``) is not seen, as no script's code is. A subcommand
counts after the program's own options too (``docker --context x compose config``).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from fsm_agent.toolbox.paths import MAX_TREE_ENTRIES
from fsm_agent.toolbox.program_words import program_words, words_after

_LOADERS: Final = frozenset(
    {
        ("dotenv",),  # python-dotenv's command: list, get, run
        ("dotenvx",),
        ("bun",),  # loads .env, .env.local, .env.<NODE_ENV> for every run
        ("bunx",),
        ("docker", "compose"),  # .env for interpolation: `config` prints the values
        ("docker-compose",),
        ("podman-compose",),
        ("pipenv", "run"),
        ("pipenv", "shell"),
        ("foreman", "start"),
        ("heroku", "local"),
        ("next",),
        ("vite",),
        ("nuxt",),
        ("nuxi",),
        ("astro",),
        ("remix",),
        ("flask",),  # loads .env and .flaskenv when python-dotenv is installed
    }
)
"""Each program (with the subcommand that loads, where only one does)."""


def loads_env_files(argv: Sequence[str]) -> bool:
    """Whether a part run as ``argv`` loads the ``.env`` files where it runs."""
    words = program_words(argv)
    return any(words_after(loader, words) is not None for loader in _LOADERS)


_NAMES: Final = (
    ".env",
    ".env.local",
    ".flaskenv",
    ".env.keys",  # dotenvx: the keys that decrypt the others
    *(
        f".env.{mode}{local}"
        for mode in ("development", "production", "test")
        for local in ("", ".local")
    ),
)
"""The names a program loading ``.env`` files reads, beside any ``.env*`` found there."""


def env_files(folder: Path) -> list[Path]:
    """The files such a program may load in ``folder``: the usual names, and every file there
    whose name begins with ``.env``."""
    found = [folder / name for name in _NAMES]
    try:
        with os.scandir(folder) as listing:
            entries = itertools.islice(listing, MAX_TREE_ENTRIES)  # a huge folder: its start
            found += [folder / entry.name for entry in entries if entry.name.startswith(".env")]
    except OSError:
        pass  # a folder not there yet, or not readable: the usual names stand
    return list(dict.fromkeys(found))
