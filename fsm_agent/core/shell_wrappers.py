"""Wrappers: programs that run another command, and how each one's arguments say which.

``shell_commands`` sees through them (SPEC §9.3: each part of a compound command is checked, a
deny rule must see the command a wrapper runs): ``env``, ``sudo``, ``timeout 5``, ``xargs``,
``bash -c '...'``, ``flock f rm x``... Each wrapper has a reader that takes the wrapper's
arguments and says what runs: a slice of them (``Unwrapped.start:end``), a script to read as a
command line of its own (``Unwrapped.script``), nothing (``None``), or a problem (a ``str``:
an option we do not know, a command built from input), which makes the command ask.

A wrapper is followed only where its grammar is known; a program that runs commands in a way
we do not read (``parallel``, ``systemd-run`` with a unit file...) is a problem, never a
program that runs nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import attrs

from fsm_agent.core.command_options import Arity, OptionTable, parse_arguments


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


_Unwrap = Callable[[Sequence[str]], "Unwrapped | str | None"]
"""A wrapper's reader: given its arguments, what it runs (None: nothing; str: a problem)."""

_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def _options_then_command(
    table: OptionTable,
    *,
    operands_before: int = 0,
    refused: frozenset[str] = frozenset(),
    lone_dash_is_option: bool = False,
    default: tuple[str, ...] = (),
) -> _Unwrap:
    """A wrapper read as ``wrapper [options] [NAME=value...] [N operands] command...``."""

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
        while index < len(args) and _ASSIGNMENT.match(args[index]):
            assignments.append(args[index])
            index += 1
        index += operands_before
        if index >= len(args) and not default:
            return None
        return Unwrapped(start=index, assignments=tuple(assignments), default=default)

    return unwrap


def _table(short: str = "", long: str = "", *, short_values: str = "", long_values: str = "",
           long_optional: str = "", short_optional: str = "") -> OptionTable:  # fmt: skip
    """A wrapper's option table: option letters, and long names separated by spaces."""
    shorts = (
        dict.fromkeys(short, Arity.NONE)
        | dict.fromkeys(short_values, Arity.REQUIRED)
        | dict.fromkeys(short_optional, Arity.OPTIONAL)
    )
    longs = (
        dict.fromkeys(long.split(), Arity.NONE)
        | dict.fromkeys(long_values.split(), Arity.REQUIRED)
        | dict.fromkeys(long_optional.split(), Arity.OPTIONAL)
    )
    return OptionTable(short=shorts, long=longs, stops_at_operand=True)


def _shell(args: Sequence[str]) -> Unwrapped | str | None:
    """``bash -c 'script'``: the script is read as a command line of its own."""
    if any(arg.startswith("+") for arg in args):
        return "options given with + are not analysed"
    parsed = parse_arguments(args, _SHELL_OPTIONS)
    if parsed.problem is not None:
        return parsed.problem
    index = parsed.rest_index
    if not any(option.name == "-c" for option in parsed.options):
        if index >= len(args) or any(option.name == "-s" for option in parsed.options):
            return "a shell reading commands from its input is not analysed"
        return None  # runs a script file: only the shell itself is a part
    if index >= len(args):
        return "-c without a command"
    return Unwrapped(script=args[index], script_indexes=(index,), label="")


_SHELL_OPTIONS = _table(
    "abcefhiklmnprstuvxBCEHPT",
    "login norc noprofile posix restricted verbose debugger dump-strings dump-po-strings "
    "help version noediting pretty-print",
    short_values="oO",
    long_values="rcfile init-file",
)


def _eval(args: Sequence[str]) -> Unwrapped | str | None:
    if not args:
        return None
    return Unwrapped(script=" ".join(args), script_indexes=tuple(range(len(args))))


def _watch(args: Sequence[str]) -> Unwrapped | str | None:
    """``watch [options] command...``: the words are joined and run by ``sh -c``."""
    parsed = parse_arguments(args, _WATCH_OPTIONS)
    if parsed.problem is not None:
        return parsed.problem
    rest = args[parsed.rest_index :]
    if any(option.name in ("-x", "--exec") for option in parsed.options):
        return Unwrapped(start=parsed.rest_index) if rest else None
    if not rest:
        return None
    indexes = tuple(range(parsed.rest_index, len(args)))
    return Unwrapped(script=" ".join(rest), script_indexes=indexes, label="watch")


_WATCH_OPTIONS = _table(
    "bcegptwx",
    "beep color no-color errexit chgexit exec no-title no-wrap precise help version",
    short_values="n",
    short_optional="d",
    long_values="interval",
    long_optional="differences",
)


_FIND_RUNNERS = ("-exec", "-execdir", "-ok", "-okdir")


def _find(args: Sequence[str]) -> Unwrapped | str | None:
    """``find ... -exec cmd {} ;``: the command find runs."""
    runners = [index for index, arg in enumerate(args) if arg in _FIND_RUNNERS]
    if not runners:
        return None
    if len(runners) > 1:
        return "more than one command run by find is not analysed"
    index = runners[0]
    end = next((i for i in range(index + 1, len(args)) if args[i] in (";", "+")), len(args))
    if end == index + 1:
        return f"{args[index]} without a command"
    if _built_from_input(args[index + 1 : end], "{}"):
        return f"{args[index]} runs a command built from the names it finds"
    return Unwrapped(start=index + 1, end=end, label=f"find {args[index]}")


_XARGS_OPTIONS = _table(
    "0oprtx",
    "null open-tty interactive no-run-if-empty show-limits verbose exit help version",
    short_values="adEILnPs",
    short_optional="eil",
    long_values="arg-file delimiter max-args max-procs max-chars process-slot-var",
    long_optional="eof replace max-lines",
)
_xargs_command = _options_then_command(_XARGS_OPTIONS, default=("echo",))


def _xargs(args: Sequence[str]) -> Unwrapped | str | None:
    """``xargs [options] command...``: the command, which gets its input as arguments.

    With ``-I R`` (``-i``, ``--replace``) the input replaces ``R``: in the program's name, or
    in the words of a program that runs another command (``sh -c 'R'``), it is the input that
    decides what runs.
    """
    outcome = _xargs_command(args)
    if not isinstance(outcome, Unwrapped):
        return outcome
    replaced = [
        option.value or "{}"
        for option in parse_arguments(args, _XARGS_OPTIONS).options
        if option.name in ("-I", "-i", "--replace")
    ]
    inner = args[outcome.start :]
    if any(_built_from_input(inner, text) for text in replaced):
        return "runs a command built from its input"
    return outcome


def _built_from_input(argv: Sequence[str], placeholder: str) -> bool:
    """Whether filling ``placeholder`` in ``argv`` can change which program runs."""
    if not argv or not placeholder:
        return False
    if placeholder in argv[0]:
        return True
    runs_others = argv[0].rsplit("/", 1)[-1] in WRAPPERS
    return runs_others and any(placeholder in word for word in argv[1:])


def _trap(args: Sequence[str]) -> Unwrapped | str | None:
    """``trap [-lpP] [ACTION SIGNAL...]``: ACTION is a command line run when a signal comes."""
    parsed = parse_arguments(args, _TRAP_OPTIONS)
    if parsed.problem is not None:
        return parsed.problem
    operands = args[parsed.rest_index :]
    if len(operands) < 2 or operands[0] in ("", "-"):
        return None  # prints, or resets to the default action
    return Unwrapped(script=operands[0], script_indexes=(parsed.rest_index,), label="trap")


_TRAP_OPTIONS = _table("lpP")


SHELLS = ("bash", "sh", "zsh", "dash", "ksh")
"""Shells whose ``-c`` script is read as a command line."""

WRAPPERS: dict[str, _Unwrap] = {
    "env": _options_then_command(
        _table(
            "i0v",
            "ignore-environment null debug list-signal-handling help version",
            short_values="uCS",
            long_values="unset chdir split-string",
            long_optional="block-signal default-signal ignore-signal",
        ),
        refused=frozenset({"-S", "--split-string"}),
        lone_dash_is_option=True,
    ),
    "sudo": _options_then_command(
        _table(
            "AbEeHiKklnPSsVv",
            "askpass background edit set-home help login remove-timestamp reset-timestamp "
            "list non-interactive preserve-groups stdin shell version validate",
            short_values="CDghpRrtTUu",
            long_values="close-from chdir group host prompt chroot role type command-timeout "
            "other-user user",
            long_optional="preserve-env",
        )
    ),
    "doas": _options_then_command(_table("nsL", short_values="uC")),
    "nohup": _options_then_command(_table(long="help version")),
    "nice": _options_then_command(
        _table("0123456789", "help version", short_values="n", long_values="adjustment")
    ),
    "timeout": _options_then_command(
        _table(
            "v",
            "preserve-status foreground verbose help version",
            short_values="ks",
            long_values="kill-after signal",
        ),
        operands_before=1,
    ),
    "time": _options_then_command(
        _table(
            "apqvV",
            "append portability quiet verbose help version",
            short_values="of",
            long_values="output format",
        )
    ),
    "stdbuf": _options_then_command(
        _table(long="help version", short_values="ioe", long_values="input output error")
    ),
    "command": _options_then_command(_table("pvV")),
    "builtin": _options_then_command(_table()),
    "coproc": _options_then_command(_table()),
    "exec": _options_then_command(_table("cl", short_values="a")),
    "xargs": _xargs,
    "trap": _trap,
    "eval": _eval,
    "watch": _watch,
    "setsid": _options_then_command(_table("cfw", "ctty fork wait help version")),
    **dict.fromkeys(("busybox", "toybox"), _options_then_command(_table(long="help list"))),
    "ionice": _options_then_command(
        _table("t", "ignore help version", short_values="cn", long_values="class classdata")
    ),
    "taskset": _options_then_command(
        _table("ac", "all-tasks cpu-list help version"), operands_before=1
    ),
    "find": _find,
    **dict.fromkeys(SHELLS, _shell),
}
"""Programs that run another command, by name (a path such as ``/usr/bin/env`` counts too)."""
