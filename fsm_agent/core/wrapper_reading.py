"""What a wrapper runs, as its reader tells it, and the commonest shape of a reader.

A wrapper (``env``, ``sudo``, ``npx``, ``make``...) has a reader that takes the wrapper's
arguments and says what runs (``shell_wrappers`` lists them by name): a slice of its
arguments, a script read as a command line of its own, nothing, or a problem.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import attrs

from fsm_agent.core.command_options import OptionTable, parse_arguments


@attrs.frozen(kw_only=True)
class Unwrapped:
    """What a wrapper runs: its arguments ``start:end``, or a script read as a command line."""

    start: int = 0
    end: int | None = None
    assignments: tuple[str, ...] = ()
    script: str | None = None
    script_indexes: tuple[int, ...] = ()  # which of its arguments the script text came from
    label: str = ""
    default: tuple[str, ...] = ()  # run when no command is given (xargs runs echo)
    appends_input: bool = False  # words it reads follow the command's own (xargs without -I)
    placeholder: str = ""  # what it replaces by the words it reads (find's {}, xargs -I R)
    fills_paths: bool = False  # a whole placeholder becomes a path it finds (find -exec)
    continued: bool = False  # the script is one program, its words given elsewhere (make CC=x)
    folders: tuple[str, ...] = ()  # where it runs the command, as written (env -C DIR), in turn


Unwrap = Callable[[Sequence[str]], "Unwrapped | tuple[Unwrapped, ...] | str | None"]
"""A wrapper's reader: given its arguments, what it runs (None: no command given; ``()``: a
program that runs none; str: a problem)."""
UnwrapOne = Callable[[Sequence[str]], "Unwrapped | str | None"]
UnwrapMany = Callable[[Sequence[str]], "tuple[Unwrapped, ...]"]

ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
"""A ``NAME=value`` word (``env X=1 cmd``)."""


def options_then_command(
    table: OptionTable,
    *,
    operands_before: int = 0,
    refused: frozenset[str] = frozenset(),
    lone_dash_is_option: bool = False,
    default: tuple[str, ...] = (),
    label: str = "",
    folder_options: frozenset[str] = frozenset(),
) -> UnwrapOne:
    """A wrapper read as ``wrapper [options] [NAME=value...] [N operands] command...``; an
    option of ``folder_options`` names the folder the command runs in (``env -C DIR``)."""

    def unwrap(args: Sequence[str]) -> Unwrapped | str | None:
        parsed = parse_arguments(args, table)
        if parsed.problem is not None:
            return parsed.problem
        for option in parsed.options:
            if option.name in refused:
                return f"{option.written} is not analysed"
        index = parsed.rest_index
        if lone_dash_is_option and index < len(args) and args[index] == "-":
            index += 1
        assignments: list[str] = []
        while index < len(args) and ASSIGNMENT.match(args[index]):
            assignments.append(args[index])
            index += 1
        index += operands_before
        if index >= len(args) and not default:
            return None
        return Unwrapped(
            start=index,
            assignments=tuple(assignments),
            default=default,
            label=label,
            folders=tuple(parsed.values(*folder_options)),
        )

    return unwrap


def not_followed(why: str) -> Unwrap:
    """A program that runs commands in a way we do not read: always a problem (it asks)."""

    def unwrap(args: Sequence[str]) -> Unwrapped | str | None:
        return why

    return unwrap
