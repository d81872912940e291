"""Commands that leave code to run later: a crontab, an ``at`` job, an enabled service.

A protected path (``.bashrc``, ``.git/hooks``) is asked about in every mode because a write
there runs code later, outside the permission chain (SPEC §9.3). Some programs do the same with
no path in sight: ``crontab -`` installs what it reads for cron to run every minute, ``at now +
1 hour`` keeps a command for later, ``systemctl enable`` starts a unit at every boot. The Bash
safety check asks for them as for a protected path (in bypassPermissions too). Listing,
removing and testing (``crontab -l``, ``atq``, ``systemctl status``) run as before.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final

from fsm_agent.core.command_options import loose_table, parse_arguments
from fsm_agent.core.shell_commands import CommandPart


def _letters(args: Sequence[str], values: str) -> set[str]:
    """The option letters of ``args``, read as getopt reads them: a value joined to a letter
    that takes one (``values``) is no letter (``crontab -ulp FILE`` installs ``lp``'s
    crontab; ``at -qd`` keeps a job in queue ``d``)."""
    parsed = parse_arguments(args, loose_table(short_values=values))
    return {option.name[1:] for option in parsed.options if option.name[1:2] != "-"}


def _crontab(args: Sequence[str]) -> bool:
    """A crontab is installed from a file or standard input, or by ``-e``; ``-l`` lists,
    ``-r`` removes, ``-T`` only checks a file (``-u USER`` names whose)."""
    letters = _letters(args, "u")
    return "e" in letters or not letters & {"l", "r", "T"}


def _at(args: Sequence[str]) -> bool:
    """``at``/``batch`` keep a job unless asked to list (``-l``), remove (``-r``, ``-d``),
    print one (``-c``) or their version (``-V``) (``-q``, ``-f``, ``-t`` take a value)."""
    letters = _letters(args, "qft")
    return not letters & {"l", "r", "d", "c", "V"}


_ENABLING: Final = frozenset(
    {"enable", "reenable", "link", "preset", "preset-all", "add-wants", "add-requires", "edit"}
    | {"set-environment", "import-environment"}
)
"""The ``systemctl`` verbs that make a unit start later (at boot, with another unit), or give
every unit started later a variable (``LD_PRELOAD``)."""


def _systemctl(args: Sequence[str]) -> bool:
    return any(word in _ENABLING for word in args if not word.startswith("-"))


def _systemd_run(args: Sequence[str]) -> bool:
    """``systemd-run`` with a timer option keeps the command for later."""
    return any(word.startswith("--on-") for word in args)


_LOADING: Final = frozenset({"load", "bootstrap", "enable", "submit", "setenv"})
"""The ``launchctl`` verbs that make a job start later, or give every job started later a
variable (``DYLD_INSERT_LIBRARIES``)."""


def _launchctl(args: Sequence[str]) -> bool:
    """A loading verb, also in the ``launchctl`` that ``asuser UID`` or ``bsexec PID`` run."""
    while args and args[0] in ("asuser", "bsexec"):
        args = args[2:]
        if args and args[0].rsplit("/", 1)[-1] == "launchctl":
            args = args[1:]
    return bool(args) and args[0] in _LOADING


_SCHEDULERS: Final[dict[str, Callable[[Sequence[str]], bool]]] = {
    "crontab": _crontab,
    "at": _at,
    "batch": _at,
    "systemctl": _systemctl,
    "systemd-run": _systemd_run,
    "launchctl": _launchctl,
}


def scheduled_by(part: CommandPart) -> str | None:
    """The program of ``part`` when it leaves code to run later (see the module's text), or
    None."""
    if not part.argv:
        return None
    program = part.argv[0].rsplit("/", 1)[-1]
    keeps = _SCHEDULERS.get(program)
    return program if keeps is not None and keeps(part.argv[1:]) else None
