"""Build tools whose variables hold command lines: ``make`` and ``cmake``.

``make CC='rm -rf src'`` runs ``rm`` wherever the makefile's recipes say ``$(CC)``: a recipe is
a shell command line with each variable's text put in its place. Whether a makefile uses a
variable, and where, is in a file no rule reads; so each value given in the command (an
operand ``NAME=value``, ``NAME:=``, ``NAME!=`` whose value runs at once, or a variable make
takes from the environment the command gives it: ``CC=x make``, ``env CC=x make``) is read as
a command line of its own (SPEC §9.3: a deny rule must see what a program runs), labelled
``make CC=``. ``make CC=clang PREFIX=/usr`` gives the parts ``clang`` and ``/usr``, which run
beside ``Bash(rm:*)``. A value that is one program name is a part whose words are in the
makefile (``CommandPart.continued``): ``make PYTHON=python3`` runs ``python3`` with the
recipe's words, not code from its input.

A value is read so only when it stands the same wherever a recipe puts it: one holding a quote
or a backslash may close the quotes a recipe put around it (``MSG="'; rm -rf src; '"`` in
``echo '$(MSG)'``), and make expands a ``$`` itself (``$(shell ...)``, ``$X`` for a variable
another word set): such a value is a problem, and the command asks (under a Bash deny or ask
rule, even in bypass mode). So are values make reads as its own options (``MAKEFLAGS``) or
special variables (``.SHELLFLAGS``).

An autoconf ``configure`` script takes the same operands and variables (``./configure
CC=...`` runs CC to test it), and so does ``cmake`` its environment's (``CC=x cmake .``).

``cmake -DNAME=value`` caches a value that the build files it writes put into their commands
(``CMAKE_C_COMPILER``, ``CMAKE_C_FLAGS``, launchers): read the same way. ``cmake -E CMD...``
runs its own version of a command (``cmake -E rm -rf src``), and ``cmake --build DIR --
ARGS`` gives ARGS to the build tool: both are followed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from fsm_agent.core.command_options import abbreviates_any
from fsm_agent.core.wrapper_reading import Unwrapped

_MAKE_VALUE_LETTERS = "CfIoWE"
"""make's option letters that take the next word as a value (``-j``, ``-l`` and ``-O`` take
one only inline)."""
_MAKE_VALUE_LONGS = (
    "directory", "file", "makefile", "include-dir", "old-file", "assume-old", "what-if",
    "new-file", "assume-new", "eval",
)  # fmt: skip
_MAKE_OWN_OPTIONS = frozenset({"MAKEFLAGS", "MFLAGS", "GNUMAKEFLAGS"})
_UNREAD_CHARACTERS = frozenset("$'\"\\")
"""Characters that make a value stand otherwise in some place a recipe may put it."""
_PROGRAM_NAME = re.compile(r"[\w./+@%:,-]+")
"""A value that is one word naming a program (``python3``, ``/usr/bin/clang``)."""


def make_runs(args: Sequence[str]) -> tuple[Unwrapped, ...] | str:
    """The values of ``make``'s ``NAME=value`` operands, each a command line (see above)."""
    return _values(args, _make_operands(args), label="make", offset=0)


def configure_runs(args: Sequence[str]) -> tuple[Unwrapped, ...] | str:
    """The values of an autoconf ``configure`` script's ``NAME=value`` operands (``CC=...``),
    each a command line: it runs the compiler it is given to test it."""
    operands = [index for index, word in enumerate(args) if not word.startswith("-")]
    return _values(args, operands, label="configure", offset=0)


def environment_values(label: str) -> Callable[[Sequence[str]], tuple[Unwrapped, ...] | str]:
    """The reader of the variables a command gives a build tool's environment (``CC=x make``,
    ``CC=x cmake .``): each value a command line; they are no arguments, so they point at
    none (``script_indexes``)."""

    def read(assignments: Sequence[str]) -> tuple[Unwrapped, ...] | str:
        found: list[Unwrapped] = []
        for assignment in assignments:
            outcome = _value(assignment, label=label, at=())
            if isinstance(outcome, str):
                return outcome
            if outcome is not None:
                found.append(outcome)
        return tuple(found)

    return read


def cmake_runs(args: Sequence[str]) -> Unwrapped | tuple[Unwrapped, ...] | str | None:
    """``cmake -E CMD...``, ``cmake --build DIR -- ARGS`` and ``cmake -DNAME=value``."""
    if args and args[0] == "-E":
        return _cmake_command(args)
    if "--build" in args and "--" in args:
        end = args.index("--") + 1
        return _values(args[end:], _make_operands(args[end:]), label="make", offset=end)
    found: list[Unwrapped] = []
    index = 0
    while index < len(args):
        word, at = args[index], index
        index += 1
        if word == "-D" and index < len(args):
            word, at = "-D" + args[index], index
            index += 1
        if not word.startswith("-D") or "=" not in word:
            continue
        outcome = _value(word[2:], label="cmake -D", at=(at,))
        if isinstance(outcome, str):
            return outcome
        if outcome is not None:
            found.append(outcome)
    return tuple(found)


def _cmake_command(args: Sequence[str]) -> Unwrapped | str | None:
    """``cmake -E CMD...``: ``chdir DIR CMD...`` runs CMD; any other (``rm``, ``env``,
    ``time``...) is the command, read as the program of that name is."""
    if len(args) < 2:
        return None
    if args[1] == "chdir":
        return Unwrapped(start=3, label="cmake -E chdir") if len(args) > 3 else None
    return Unwrapped(start=1, label="cmake -E")


def _make_operands(args: Sequence[str]) -> list[int]:
    """The indexes of make's operands (targets and ``NAME=value``), options anywhere: GNU make
    reads options after its operands, and variables after ``--`` too."""
    found: list[int] = []
    index = 0
    options = True
    while index < len(args):
        word = args[index]
        index += 1
        if options and word == "--":
            options = False
        elif options and word.startswith("--"):
            name, has_value, _ = word[2:].partition("=")
            if not has_value and abbreviates_any(name, _MAKE_VALUE_LONGS):
                index += 1
        elif options and word.startswith("-") and word != "-":
            for position in range(1, len(word)):
                if word[position] in _MAKE_VALUE_LETTERS:
                    index += position == len(word) - 1  # the value is the next word
                    break
        else:
            found.append(index - 1)
    return found


def _values(
    args: Sequence[str], operands: Sequence[int], *, label: str, offset: int
) -> tuple[Unwrapped, ...] | str:
    """The command lines of the ``NAME=value`` words among ``operands`` (indexes in ``args``,
    which start at ``offset`` in the program's arguments)."""
    found: list[Unwrapped] = []
    for index in operands:
        if "=" not in args[index]:
            continue  # a target
        outcome = _value(args[index], label=label, at=(index + offset,))
        if isinstance(outcome, str):
            return outcome
        if outcome is not None:
            found.append(outcome)
    return tuple(found)


def _value(definition: str, *, label: str, at: tuple[int, ...]) -> Unwrapped | str | None:
    """What the definition ``NAME=value`` (``NAME:=``, ``NAME+=``, ``NAME!=``...; cmake's
    ``NAME:TYPE=value``) runs: its value as a command line, None for an empty value, or why
    it is not read."""
    name, _, value = definition.partition("=")
    name = name.rstrip(":+?!").partition(":")[0].strip()
    if name in _MAKE_OWN_OPTIONS or name.startswith("."):
        return f"{name} gives make options or settings, which are not analysed"
    if _UNREAD_CHARACTERS.intersection(value):
        return f"{name}=... is expanded or quoted where the build puts it, which is not analysed"
    if not value.strip():
        return None
    return Unwrapped(
        script=value,
        script_indexes=at,
        label=f"{label} {name}=",
        continued=_PROGRAM_NAME.fullmatch(value) is not None,
    )
