"""Wrappers: programs that run another command, and how each one's arguments say which.

``shell_commands`` sees through them (SPEC §9.3: each part of a compound command is checked, a
deny rule must see the command a wrapper runs): ``env``, ``sudo``, ``timeout 5``, ``xargs``,
``bash -c '...'``, ``flock f rm x``... Each wrapper has a reader that takes the wrapper's
arguments and says what runs: a slice of them (``Unwrapped.start:end``), a script to read as a
command line of its own (``Unwrapped.script``), nothing (``None``), or a problem (a ``str``:
an option we do not know, a command built from input), which makes the command ask.

A program that runs a shell command given as an option's value is followed the same way, each
such command a script of its own (a tuple of them; an empty tuple when it runs none): git
(``-c core.pager=...``, ``rebase --exec``...: ``git_commands``), ``tar --to-command`` and
``-I``, ``rsync -e``, ``ssh -o ProxyCommand=...``, ``man -P``, ``zip -TT``, ``rg --pre``,
``sort --compress-program``; and the values ``make`` and ``cmake`` put into the commands of a
build (``build_variables``).

Programs run for development (``npx``, ``uv run``, ``nix develop -c``, ``xterm -e``,
``entr``...) have their readers in ``command_runners``.

A wrapper is followed only where its grammar is known; a program that runs commands in a way
we do not read (``parallel``, ``systemd-run`` with a unit file...) is a problem, never a
program that runs nothing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import attrs

from fsm_agent.core.build_variables import (
    cmake_runs,
    configure_runs,
    environment_values,
    make_runs,
)
from fsm_agent.core.command_options import abbreviates_any, parse_arguments
from fsm_agent.core.command_options import option_table as _table
from fsm_agent.core.command_runners import RUNNERS
from fsm_agent.core.git_commands import git_runs
from fsm_agent.core.wrapper_reading import (
    Unwrap,
    UnwrapMany,
    Unwrapped,
    not_followed,
    options_then_command,
)


def _shell(args: Sequence[str]) -> Unwrapped | str | None:
    """``bash -c 'script'``: the script is read as a command line of its own."""
    if any(arg.startswith("+") for arg in args):
        return "options given with + are not analysed"
    parsed = parse_arguments(args, SHELL_OPTIONS)
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


SHELL_OPTIONS = _table(
    "abcefhiklmnprstuvxBCEHPT",
    "login norc noprofile posix restricted verbose debugger dump-strings dump-po-strings "
    "help version noediting pretty-print",
    short_values="oO",
    long_values="rcfile init-file",
)
"""A shell's options (``bash``, ``sh``...): its first operand is the ``-c`` script, or the
script file; the words after it are the script's arguments."""


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
    end = next((i for i in range(index + 1, len(args)) if _ends_command(args, i)), len(args))
    if "+" in args[index + 1 : end]:
        return f"{args[index]} is given a + that does not follow {{}}, read as find reads it"
    if end == index + 1:
        return f"{args[index]} without a command"
    if _built_from_input(args[index + 1 : end], "{}"):
        return f"{args[index]} runs a command built from the names it finds"
    return Unwrapped(
        start=index + 1,
        end=end,
        label=f"find {args[index]}",
        placeholder="{}",
        fills_paths=_fills_paths(args[:index], args[index]),
    )


def _ends_command(args: Sequence[str], index: int) -> bool:
    """Whether ``args[index]`` ends the command of ``-exec``: ``;``, or ``+`` right after a whole
    ``{}`` (any other ``+`` is one of the command's words for GNU find, and older versions and
    other finds did not all agree: ``-exec sed -n p + -e CMD {} ;`` gives sed ``-e``)."""
    return args[index] == ";" or (args[index] == "+" and args[index - 1] == "{}")


def _fills_paths(before: Sequence[str], runner: str) -> bool:
    """Whether ``find``'s ``{}`` becomes the path of a name it finds, beginning with a start
    point written in the command (GNU find reads none that begins with ``-``). Not so for
    ``-execdir``/``-okdir`` (BSD find gives the bare name), start points read from a file
    (``-files0-from``) or BSD's ``-f PATH``, which may begin with ``-``."""
    return runner in ("-exec", "-ok") and not any(w in ("-f", "-files0-from") for w in before)


_XARGS_OPTIONS = _table(
    "0oprtx",
    "null open-tty interactive no-run-if-empty show-limits verbose exit help version",
    short_values="adEILnPs",
    short_optional="eil",
    long_values="arg-file delimiter max-args max-procs max-chars process-slot-var",
    long_optional="eof replace max-lines",
)
_xargs_command = options_then_command(_XARGS_OPTIONS, default=("echo",))


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
    if replaced:
        return attrs.evolve(outcome, placeholder=replaced[-1])  # the last -I counts
    return attrs.evolve(outcome, appends_input=True)


def _built_from_input(argv: Sequence[str], placeholder: str) -> bool:
    """Whether filling ``placeholder`` in ``argv`` can change which program runs."""
    if not argv or not placeholder:
        return False
    if placeholder in argv[0]:
        return True
    unwrap = WRAPPERS.get(argv[0].rsplit("/", 1)[-1])
    runs_others = unwrap is not None and unwrap(argv[1:]) != ()  # `git add {}` runs nothing else
    return runs_others and any(placeholder in word for word in argv[1:])


def _indexes_holding(args: Sequence[str], text: str) -> tuple[int, ...]:
    """The arguments a script given as an option value may have come from (``-c 'x'`` or
    ``--command=x``): every one that holds its text."""
    return tuple(index for index, arg in enumerate(args) if text in arg)


def _spelled_at(args: Sequence[str]) -> dict[str, tuple[int, ...]]:
    """For each way an argument spells an option's value (``x``, ``-cx``, ``--command=x``:
    the word, what follows its letter, what follows ``=``), the arguments that spell it, found
    in one pass: a line of a thousand ``-c`` scripts is not searched once per script."""
    found: dict[str, list[int]] = {}
    for index, arg in enumerate(args):
        spellings = {arg, arg[2:] if arg[:1] == "-" else arg, arg.partition("=")[2]}
        for spelling in spellings:
            found.setdefault(spelling, []).append(index)
    return {spelling: tuple(indexes) for spelling, indexes in found.items()}


def _flock(args: Sequence[str]) -> Unwrapped | str | None:
    """``flock [options] FILE COMMAND...``, ``flock [options] FILE -c SCRIPT``, ``flock FD``."""
    parsed = parse_arguments(args, _FLOCK_OPTIONS)
    if parsed.problem is not None:
        return parsed.problem
    index = parsed.rest_index + 1  # past the lock file (or descriptor)
    if index >= len(args):
        return None  # flock FD locks a descriptor and runs nothing
    if args[index] in ("-c", "--command"):
        if index + 1 >= len(args):
            return f"{args[index]} without a command"
        return Unwrapped(script=args[index + 1], script_indexes=(index + 1,), label="flock -c")
    return Unwrapped(start=index)


_FLOCK_OPTIONS = _table(
    "sexnoFuhV",
    "shared exclusive unlock nonblock nb close no-fork verbose help version",
    short_values="wE",
    long_values="timeout wait conflict-exit-code",
)


def _chrt(args: Sequence[str]) -> Unwrapped | str | None:
    """``chrt [options] PRIORITY COMMAND...``; with ``-p`` or ``-m`` it runs nothing."""
    parsed = parse_arguments(args, _CHRT_OPTIONS)
    if parsed.problem is not None:
        return parsed.problem
    if any(option.name in ("-p", "--pid", "-m", "--max") for option in parsed.options):
        return None
    index = parsed.rest_index + 1  # past the priority
    return Unwrapped(start=index) if index < len(args) else None


_CHRT_OPTIONS = _table(
    "abdfiorRpmvhV",
    "all-tasks batch deadline fifo idle other rr reset-on-fork pid max verbose help version",
    short_values="TPD",
    long_values="sched-runtime sched-period sched-deadline",
)


def _switch_user(args: Sequence[str]) -> Unwrapped | str | None:
    """``su [options] [-] [USER]`` with ``-c SCRIPT``, and ``runuser`` (``runuser -u USER
    COMMAND...`` too): the script runs as a command line; other words go to the user's shell,
    which we do not read."""
    direct = parse_arguments(args, _RUNUSER_DIRECT)
    if direct.problem is None and any(o.name in ("-u", "--user") for o in direct.options):
        index = direct.rest_index
        if index < len(args) and args[index] == "--":
            index += 1
        return Unwrapped(start=index, label="runuser -u") if index < len(args) else None
    parsed = parse_arguments(args, _SU_OPTIONS)
    if parsed.problem is not None:
        return parsed.problem
    if any(o.name in ("-u", "--user") for o in parsed.options):
        return "-u after other words is not analysed"
    scripts = [
        o.value or "" for o in parsed.options if o.name in ("-c", "--command", "--session-command")
    ]
    if [word for word in parsed.operands if word != "-"][1:]:
        return "words for the user's shell are not analysed"
    if not scripts:
        return None  # a login shell, reading commands from its input: nothing else runs
    if len(scripts) > 1 or any(o.name in ("-s", "--shell") for o in parsed.options):
        return "a script for a shell chosen with -s is not analysed"
    users = [word for word in parsed.operands if word != "-"]
    login = "-" in parsed.operands or any(o.name in ("-l", "--login") for o in parsed.options)
    return Unwrapped(
        script=scripts[0],
        script_indexes=_indexes_holding(args, scripts[0]),
        # A login shell starts in the user's home folder.
        folders=("~" + (users[0] if users else "root"),) if login else (),
    )


_SU_OPTIONS = attrs.evolve(
    _table(
        "flmpPhVu",
        "fast login preserve-environment pty help version",
        short_values="cgGswu",
        long_values="command session-command group supp-group shell whitelist-environment user",
    ),
    stops_at_operand=False,  # su reads options after the user name too
)
_RUNUSER_DIRECT = _table(
    "flmpPhV",
    "fast login preserve-environment pty help version",
    short_values="gGswu",
    long_values="group supp-group shell whitelist-environment user",
)


def _sg(args: Sequence[str]) -> Unwrapped | str | None:
    """``sg [-] GROUP [-c] COMMAND``: the command words are joined and run by ``/bin/sh -c``."""
    index = 1 if args and args[0] == "-" else 0
    if index < len(args) and args[index].startswith("-"):
        return f"{args[index]} is not an option we know"
    index += 1  # past the group
    if index < len(args) and args[index] == "-c":
        index += 1
    if index >= len(args):
        return None
    indexes = tuple(range(index, len(args)))
    return Unwrapped(script=" ".join(args[index:]), script_indexes=indexes, label="sg")


def _script(args: Sequence[str]) -> Unwrapped | str | None:
    """``script [options] [FILE]``: ``-c SCRIPT`` runs a command line; without it, a shell
    reading its input."""
    parsed = parse_arguments(args, _SCRIPT_OPTIONS)
    if parsed.problem is not None:
        return parsed.problem
    scripts = [o.value or "" for o in parsed.options if o.name in ("-c", "--command")]
    if not scripts:
        return None
    if len(scripts) > 1:
        return "more than one -c is not analysed"
    return Unwrapped(
        script=scripts[0], script_indexes=_indexes_holding(args, scripts[0]), label="script -c"
    )


_SCRIPT_OPTIONS = attrs.evolve(
    _table(
        "aefqhV",
        "append return flush force quiet help version",
        short_values="cEBIOTm",
        long_values="command echo log-io log-in log-out log-timing logging-format",
        short_optional="t",
        long_optional="timing",
    ),
    stops_at_operand=False,  # script reads its options wherever they stand
)


def _systemd_run(args: Sequence[str]) -> Unwrapped | str | None:
    """``systemd-run [options] COMMAND...``: properties (``-p ExecStartPre=...``) can run
    other programs, so they are not analysed."""
    parsed = parse_arguments(args, _SYSTEMD_RUN_OPTIONS)
    if parsed.problem is not None:
        return parsed.problem
    for option in parsed.options:
        if option.name in ("-p", "--property") or option.name.endswith("-property"):
            return f"{option.written} may name other programs to run"
        if option.name in ("-S", "--shell"):
            return "--shell runs an interactive shell"
    index = parsed.rest_index
    return Unwrapped(start=index, label="systemd-run") if index < len(args) else None


_SYSTEMD_RUN_OPTIONS = _table(
    "dtPqGrSh",
    "scope user system pty pipe quiet collect wait shell no-block no-ask-password "
    "remain-after-exit same-dir send-sighup slice-inherit help version",
    short_values="pEMHu",
    long_values="property setenv machine host unit description slice uid gid nice "
    "working-directory service-type path-property socket-property timer-property on-active "
    "on-boot on-startup on-unit-active on-unit-inactive on-calendar on-clock-change "
    "on-timezone-change",
)


def _setarch(args: Sequence[str]) -> Unwrapped | str | None:
    """``setarch ARCH [options] [COMMAND...]``: the architecture comes before the options."""
    if not args:
        return None
    if args[0].startswith("-"):
        return _arch_options(args)  # setarch --list
    return _arch_options(args[1:], offset=1)


def _arch_options(args: Sequence[str], offset: int = 0) -> Unwrapped | str | None:
    """``linux32``/``linux64``/what follows setarch's ARCH: ``[options] [COMMAND...]``."""
    parsed = parse_arguments(args, _SETARCH_OPTIONS)
    if parsed.problem is not None:
        return parsed.problem
    index = parsed.rest_index
    return Unwrapped(start=index + offset) if index < len(args) else None


_SETARCH_OPTIONS = _table(
    "vRFZLXBIST3h",
    "verbose addr-no-randomize fdpic-funcptrs mmap-page-zero addr-compat-layout "
    "read-implies-exec 32bit short-inode whole-seconds sticky-timeouts 3gb 4gb uname-2.6 list "
    "help version",
)


def _runcon(args: Sequence[str]) -> Unwrapped | str | None:
    """``runcon CONTEXT COMMAND...`` or ``runcon [-c] [-u U] [-r R] [-t T] [-l L] COMMAND...``."""
    parsed = parse_arguments(args, _RUNCON_OPTIONS)
    if parsed.problem is not None:
        return parsed.problem
    index = parsed.rest_index + (0 if parsed.options else 1)
    return Unwrapped(start=index) if index < len(args) else None


_RUNCON_OPTIONS = _table(
    "c", "compute help version", short_values="urtl", long_values="user role type range"
)


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


# -- programs that run a shell command given as an option's value ------------------------------


def _git(args: Sequence[str]) -> tuple[Unwrapped, ...]:
    """git's ``-c KEY=COMMAND``, ``rebase --exec``, ``bisect run``... (``git_commands``)."""
    runs = git_runs(args)
    scripts = tuple(
        Unwrapped(script=script, script_indexes=indexes, label=label)
        for script, indexes, label in runs.scripts
    )
    return scripts + tuple(Unwrapped(start=start, label=label) for start, label in runs.commands)


@attrs.frozen(kw_only=True)
class _CommandOptions:
    """A program's options whose value is a command line it runs.

    Attributes:
        long: long names (a start of one counts too: getopt takes it, and an ambiguous start
            is refused by the program, so counting it only asks more).
        letters: option letters whose value is a command line.
        values: the program's other letters that take a value (the rest of the cluster or
            the next word), so a cluster is read as the program reads it.
        ssh_options: letters whose value is an ssh option (``-o ProxyCommand=...``).
        old_style: a first word without a dash is a cluster whose letters take their values
            from the words after it, in order (``tar xIf CMD a.tar``).
        prefixes: long options whose value runs only after a prefix (``exec=``).
        optional: long names whose value is optional, so given only inline
            (``man --html=CMD``); alone they take no word.
        optional_letters: likewise, letters (``man -HCMD``).
    """

    long: tuple[str, ...] = ()
    letters: str = ""
    values: str = ""
    ssh_options: str = ""
    old_style: bool = False
    prefixes: tuple[tuple[str, str], ...] = ()
    optional: tuple[str, ...] = ()
    optional_letters: str = ""


_SSH_COMMAND_KEYS = frozenset({"proxycommand", "localcommand", "knownhostscommand"})
"""ssh options whose value is a command line ssh runs here (``RemoteCommand`` runs there)."""
_SSH_OPTION = re.compile(r"\s*([A-Za-z]+)\s*(?:=\s*|\s+)(.*)", re.DOTALL)


def _command_options(spec: _CommandOptions, label: str) -> UnwrapMany:
    """The reader of a program that runs the command lines its options name."""

    def unwrap(args: Sequence[str]) -> tuple[Unwrapped, ...]:
        found: list[Unwrapped] = []
        index = 0
        if spec.old_style and args and not args[0].startswith("-"):
            index = _old_style(args, spec, label, found)
        while index < len(args):
            word = args[index]
            index += 1
            if word == "--":
                break
            if word.startswith("--"):
                index = _long_value(args, index, spec, label, found)
            elif word.startswith("-") and len(word) > 1:
                index = _cluster_values(args, index, spec, label, found)
        return tuple(found)

    return unwrap


def _take(
    found: list[Unwrapped], value: str, *, at: int, letter: str, label: str, spec: _CommandOptions
) -> None:
    """Add what the value of one option (in the argument at ``at``) runs."""
    if letter in spec.ssh_options:
        read = _SSH_OPTION.match(value)
        if read is None or read.group(1).lower() not in _SSH_COMMAND_KEYS:
            return
        value = read.group(2)
        if value.strip().lower() == "none":
            return
    if value:
        found.append(Unwrapped(script=value, script_indexes=(at,), label=f"{label} -{letter}"))


def _cluster_values(
    args: Sequence[str], index: int, spec: _CommandOptions, label: str, found: list[Unwrapped]
) -> int:
    """Read the cluster ``args[index - 1]``; returns the index of the next word to read."""
    word = args[index - 1]
    for position in range(1, len(word)):
        letter = word[position]
        if letter not in (spec.letters + spec.values + spec.ssh_options):
            continue
        rest = word[position + 1 :]
        if rest or letter in spec.optional_letters:
            value, at = rest, index - 1
        elif index < len(args):
            value, at = args[index], index
            index += 1
        else:
            return index
        if letter in spec.letters or letter in spec.ssh_options:
            _take(found, value, at=at, letter=letter, label=label, spec=spec)
        return index
    return index


def _long_value(
    args: Sequence[str], index: int, spec: _CommandOptions, label: str, found: list[Unwrapped]
) -> int:
    """Read the long option ``args[index - 1]``; returns the index of the next word to read."""
    name, has_value, value = args[index - 1][2:].partition("=")
    prefixed = [prefix for long, prefix in spec.prefixes if abbreviates_any(name, (long,))]
    if not (prefixed or abbreviates_any(name, spec.long)):
        return index
    at = index - 1
    if not has_value and index < len(args) and not abbreviates_any(name, spec.optional):
        value, at = args[index], index
        index += 1
    if prefixed:
        prefix = prefixed[0]
        value = value[len(prefix) :] if value.startswith(prefix) else ""
    if value:
        found.append(Unwrapped(script=value, script_indexes=(at,), label=f"{label} --{name}"))
    return index


def _old_style(
    args: Sequence[str], spec: _CommandOptions, label: str, found: list[Unwrapped]
) -> int:
    """``tar xIf CMD a.tar``: each letter taking a value takes the next word; returns the index
    of the first word after those values."""
    index = 1
    for letter in args[0]:
        if letter in spec.letters or letter in spec.values:
            if index >= len(args):
                break
            if letter in spec.letters:
                _take(found, args[index], at=index, letter=letter, label=label, spec=spec)
            index += 1
    return index


def _zip(args: Sequence[str]) -> tuple[Unwrapped, ...]:
    """``zip -T -TT CMD`` (``--unzip-command CMD``): CMD tests the archive."""
    found = list(_zip_long(args))
    for index, word in enumerate(args):
        if word == "--":
            break
        if word.startswith("-") and not word.startswith("--") and "TT" in word:
            value = word.split("TT", 1)[1].removeprefix("=")
            at = index
            if not value and index + 1 < len(args):
                value, at = args[index + 1], index + 1
            if value:
                found.append(Unwrapped(script=value, script_indexes=(at,), label="zip -TT"))
    return tuple(found)


def _runs_program(spec: _CommandOptions, label: str) -> UnwrapMany:
    """The reader of a program whose options name a program it runs, no shell between, with
    words of its own (``rg --pre PROG`` runs ``PROG FILE``, ``sort --compress-program PROG``
    runs ``PROG -d``): each such value is that program alone (``Unwrapped.continued``)."""
    read = _command_options(spec, label)

    def unwrap(args: Sequence[str]) -> tuple[Unwrapped, ...]:
        return tuple(attrs.evolve(each, continued=True) for each in read(args))

    return unwrap


_zip_long = _command_options(_CommandOptions(long=("unzip-command",)), "zip")


def _fish(args: Sequence[str]) -> Unwrapped | tuple[Unwrapped, ...] | str | None:
    """``fish -c SCRIPT`` and ``-C SCRIPT`` (``--init-command``): each a command line."""
    parsed = parse_arguments(args, _FISH_OPTIONS)
    if parsed.problem is not None:
        return parsed.problem
    scripts = [
        o.value or ""
        for o in parsed.options
        if o.name in ("-c", "--command", "-C", "--init-command")
    ]
    if not scripts:
        if parsed.rest_index >= len(args):
            return "a shell reading commands from its input is not analysed"
        return ()  # runs a script file
    holders = _spelled_at(args)
    scripts = list(dict.fromkeys(scripts))  # one script given twice runs the same commands
    return tuple(
        Unwrapped(
            script=script,
            script_indexes=holders.get(script) or _indexes_holding(args, script),
            label="fish -c",
        )
        for script in scripts
    )


_FISH_OPTIONS = _table(
    "ilnNPvh",
    "interactive login no-execute no-config private print-rusage-self print-debug-categories "
    "version help",
    short_values="cCpdfo",
    long_values="command init-command profile profile-startup debug debug-output features",
)

_SSH_VALUES = "BbcDEeFIiJLlmOoPpQRSWw"
_SSH = _CommandOptions(ssh_options="o", values=_SSH_VALUES)
_SCP = _CommandOptions(ssh_options="o", letters="S", values="cDFiJloPSX")
_SFTP = _CommandOptions(ssh_options="o", letters="S", values="BbcDFiJloPRSs")

COMMAND_OPTIONS: dict[str, Unwrap] = {
    "git": _git,
    "tar": _command_options(
        _CommandOptions(
            long=(
                "to-command",
                "use-compress-program",
                "rsh-command",
                "rmt-command",
                "info-script",
                "new-volume-script",
            ),
            letters="IF",
            values="bCfgHKLNTVX",
            old_style=True,
            prefixes=(("checkpoint-action", "exec="),),
        ),
        "tar",
    ),
    "rsync": _command_options(
        _CommandOptions(long=("rsh", "rsync-path"), letters="e", values="BfMT"), "rsync"
    ),
    "ssh": _command_options(_SSH, "ssh"),
    "scp": _command_options(_SCP, "scp"),
    "sftp": _command_options(_SFTP, "sftp"),
    "man": _command_options(
        _CommandOptions(
            long=("pager", "html"),
            letters="PH",
            values="CELmMSeprR",
            optional=("html",),
            optional_letters="H",
        ),
        "man",
    ),
    "zip": _zip,
    "fish": _fish,
    "rg": _runs_program(_CommandOptions(long=("pre",), values="efgtTABCmdjMrE"), "rg"),
    "sort": _runs_program(_CommandOptions(long=("compress-program",), values="ktSTo"), "sort"),
    **dict.fromkeys(("make", "gmake"), make_runs),
    "cmake": cmake_runs,
    "configure": configure_runs,
}
"""Programs that run a shell command given as an option's value, by name."""
COMMAND_OPTIONS["gtar"] = COMMAND_OPTIONS["tar"]  # GNU tar, by the name BSD systems give it
COMMAND_OPTIONS["bsdtar"] = COMMAND_OPTIONS["tar"]  # libarchive's: fewer such options, none other

ENVIRONMENT_READERS = {
    name: environment_values(name) for name in ("make", "gmake", "cmake", "configure")
}
"""Programs that read the variables of their environment as command lines (``CC=x make``),
by name: given the assignments a command puts before them, what those run."""


SHELLS = ("bash", "sh", "zsh", "dash", "ksh")
"""Shells whose ``-c`` script is read as a command line."""

_ENV_TABLE = _table(
    "i0v",
    "ignore-environment null debug list-signal-handling help version",
    short_values="uCS",
    long_values="unset chdir split-string",
    long_optional="block-signal default-signal ignore-signal",
)
_ENV = options_then_command(
    _ENV_TABLE,
    refused=frozenset({"-S", "--split-string"}),
    lone_dash_is_option=True,
    folder_options=frozenset({"-C", "--chdir"}),
)


_SUDO_TABLE = _table(
    "AbEeHiKklnPSsVv",
    "askpass background edit set-home help login remove-timestamp reset-timestamp "
    "list non-interactive preserve-groups stdin shell version validate",
    short_values="CDghpRrtTUu",
    long_values="close-from chdir group host prompt chroot role type command-timeout "
    "other-user user",
    long_optional="preserve-env",
)
_SUDO = options_then_command(_SUDO_TABLE, folder_options=frozenset({"-D", "--chdir"}))


def _sudo(args: Sequence[str]) -> Unwrapped | str | None:
    """``sudo [options] command...``, in the folder ``-D DIR`` names, or with ``-i`` in the
    home folder of the user it runs as (a login shell starts there)."""
    unwrapped = _SUDO(args)
    if not isinstance(unwrapped, Unwrapped):
        return unwrapped
    options = parse_arguments(args, _SUDO_TABLE).options
    if any(option.name in ("-i", "--login") for option in options):
        users = [o.value for o in options if o.name in ("-u", "--user") and o.value]
        home = "~" + (users[-1] if users else "root")
        return attrs.evolve(unwrapped, folders=(home, *unwrapped.folders))
    return unwrapped


_CHROOT = options_then_command(
    _table(long="skip-chdir help version", long_values="userspec groups"), operands_before=1
)


def _chroot(args: Sequence[str]) -> Unwrapped | str | None:
    """``chroot [options] NEWROOT [command...]``: the command runs in ``NEWROOT``, which is
    its ``/`` and, unless ``--skip-chdir``, its working folder."""
    unwrapped = _CHROOT(args)
    if not isinstance(unwrapped, Unwrapped) or unwrapped.start < 1:
        return unwrapped
    return attrs.evolve(unwrapped, folders=(args[unwrapped.start - 1],))


def _env(args: Sequence[str]) -> Unwrapped | str | None:
    """``env [options] [NAME=value...] command...``. Emptying the environment (``-i``, ``-``)
    or taking git's settings out of it (``-u GIT_CONFIG_COUNT``) drops the
    ``safe.bareRepository=explicit`` the Bash tool gives git there, so that a folder of plain
    files the agent wrote becomes a repository whose settings run programs: with a word that
    may run git after it (``git``, ``sh -c 'git status'``), not analysed."""
    unwrapped = _ENV(args)
    if not isinstance(unwrapped, Unwrapped):
        return unwrapped
    before, after = args[: unwrapped.start], args[unwrapped.start :]
    parsed = parse_arguments(before, _ENV_TABLE)
    emptied = "-" in before or any(
        option.name in ("-i", "--ignore-environment")
        or (option.name in ("-u", "--unset") and (option.value or "").startswith("GIT_"))
        for option in parsed.options
    )
    if emptied and any("git" in word for word in after):
        return "env without the settings the Bash tool gives git is not analysed"
    return unwrapped


WRAPPERS: dict[str, Unwrap] = {
    "env": _env,
    "sudo": _sudo,
    "doas": options_then_command(_table("nsL", short_values="uC")),
    "nohup": options_then_command(_table(long="help version")),
    "nice": options_then_command(
        _table("0123456789", "help version", short_values="n", long_values="adjustment")
    ),
    "timeout": options_then_command(
        _table(
            "v",
            "preserve-status foreground verbose help version",
            short_values="ks",
            long_values="kill-after signal",
        ),
        operands_before=1,
    ),
    "time": options_then_command(
        _table(
            "apqvV",
            "append portability quiet verbose help version",
            short_values="of",
            long_values="output format",
        )
    ),
    "stdbuf": options_then_command(
        _table(long="help version", short_values="ioe", long_values="input output error")
    ),
    "command": options_then_command(_table("pvV")),
    "builtin": options_then_command(_table()),
    "coproc": options_then_command(_table()),
    "exec": options_then_command(_table("cl", short_values="a")),
    "xargs": _xargs,
    "trap": _trap,
    "eval": _eval,
    "watch": _watch,
    "setsid": options_then_command(_table("cfw", "ctty fork wait help version")),
    **dict.fromkeys(("busybox", "toybox"), options_then_command(_table(long="help list"))),
    "ionice": options_then_command(
        _table("t", "ignore help version", short_values="cn", long_values="class classdata")
    ),
    "taskset": options_then_command(
        _table("ac", "all-tasks cpu-list help version"), operands_before=1
    ),
    "find": _find,
    **dict.fromkeys(SHELLS, _shell),
    **COMMAND_OPTIONS,
    "chronic": options_then_command(_table("ev")),
    # run the command as another user, or in another root or namespace
    "pkexec": options_then_command(
        _table(long="disable-internal-agent keep-cwd help version", long_values="user")
    ),
    **dict.fromkeys(("su", "runuser"), _switch_user),
    "sg": _sg,
    "chroot": _chroot,
    "unshare": options_then_command(
        _table(
            "fhVmuinpCTUrc",
            "fork help version map-root-user map-current-user map-auto",
            short_values="lRwSG",
            long_values="propagation setgroups root wd setuid setgid monotonic boottime "
            "load-interp map-user map-group map-users map-groups",
            long_optional="mount uts ipc net pid user cgroup time kill-child mount-proc "
            "mount-binfmt",
        ),
        folder_options=frozenset({"-w", "--wd", "-R", "--root"}),
    ),
    "nsenter": options_then_command(
        _table(
            "FZhVe",
            "preserve-credentials no-fork follow-context all env help version",
            short_values="tSG",
            short_optional="muinpUCTrw",
            long_values="target setuid setgid",
            long_optional="mount uts ipc net pid user cgroup time root wd",
        ),
        folder_options=frozenset({"-w", "--wd", "-r", "--root"}),
    ),
    "setpriv": options_then_command(
        _table(
            "dhV",
            "clear-groups keep-groups init-groups nnp no-new-privs reset-env dump help version",
            long_values="reuid regid ruid rgid euid egid groups inh-caps ambient-caps "
            "bounding-set securebits pdeathsig selinux-label apparmor-profile",
        )
    ),
    "runcon": _runcon,
    "systemd-run": _systemd_run,
    # run the command under a lock, a scheduling class, a limit, a recorder or a tracer
    "flock": _flock,
    "chrt": _chrt,
    "numactl": options_then_command(
        _table(
            "aslHhV",
            "all show hardware localalloc help version",
            short_values="imNCpPw",
            long_values="interleave membind cpunodebind physcpubind preferred preferred-many",
        )
    ),
    "prlimit": options_then_command(
        _table(
            "hV",
            "noheadings raw verbose help version",
            short_values="po",
            short_optional="ctdfxlqenumryisv",
            long_values="pid output",
            long_optional="core cpu data fsize locks memlock msgqueue nice nofile nproc rss "
            "rtprio rttime sigpending stack as",
        )
    ),
    "script": _script,
    "strace": options_then_command(_table("cCdDfFhiqrtTvVwxyzZk", short_values="abeEIoOpPsSuUX")),
    "ltrace": options_then_command(_table("bcCfhiLrStTV", short_values="aAeFlnopsuwxD")),
    "fakeroot": options_then_command(
        _table(
            "uhv",
            "unknown-is-real help version",
            short_values="lisb",
            long_values="lib faked fd-base",
        )
    ),
    "faketime": options_then_command(
        _table("fm", "exclude-monotonic help version", short_values="p", long_values="date-prog"),
        operands_before=1,
    ),
    "xvfb-run": options_then_command(
        _table(
            "alh",
            "auto-servernum listen-tcp help",
            short_values="efnpsw",
            long_values="error-file auth-file server-num xauth-protocol server-args wait",
        )
    ),
    "dbus-run-session": options_then_command(
        _table(long="help version", long_values="config-file dbus-daemon")
    ),
    "systemd-inhibit": options_then_command(
        _table(
            long="list no-pager no-legend no-ask-password help version",
            long_values="what who why mode",
        )
    ),
    "setarch": _setarch,
    **dict.fromkeys(("linux32", "linux64"), _arch_options),
    "cgexec": options_then_command(_table("h", "sticky", short_values="g")),
    # run the command with an agent holding keys, or a password typed for it
    "ssh-agent": options_then_command(_table("cDdks", short_values="aEOPt")),
    "sshpass": options_then_command(_table("ehvV", short_values="fdpP")),
    "unbuffer": options_then_command(_table("p")),
    **dict.fromkeys(
        (
            "eatmydata",
            "nocache",
            "catchsegv",
            "valgrind",
            "rlwrap",
            "firejail",
            "torsocks",
            "proxychains",
            "proxychains4",
            "chpst",
        ),
        options_then_command(_table(long="help version")),
    ),
    # run commands in ways we do not read: they ask
    **dict.fromkeys(
        ("parallel", "sem"),
        not_followed("runs command lines it builds from its arguments and input"),
    ),
    **dict.fromkeys(("at", "batch"), not_followed("runs commands read from its input later")),
    "gdb": not_followed("runs the programs and commands its options name"),
    **dict.fromkeys(
        ("tmux", "screen"),
        not_followed("runs commands in the windows it opens, and types keys into them"),
    ),
    "hyperfine": not_followed("runs each of its arguments as a command line"),
    **RUNNERS,
    "bwrap": not_followed("its options are not analysed"),
}
"""Programs that run another command, by name (a path such as ``/usr/bin/env`` counts too)."""
