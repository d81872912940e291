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


def _indexes_holding(args: Sequence[str], text: str) -> tuple[int, ...]:
    """The arguments a script given as an option value may have come from (``-c 'x'`` or
    ``--command=x``): every one that holds its text."""
    return tuple(index for index, arg in enumerate(args) if text in arg)


def _not_followed(why: str) -> _Unwrap:
    """A program that runs commands in a way we do not read: always a problem (it asks)."""

    def unwrap(args: Sequence[str]) -> Unwrapped | str | None:
        return why

    return unwrap


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
    return Unwrapped(script=scripts[0], script_indexes=_indexes_holding(args, scripts[0]))


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
    # run the command as another user, or in another root or namespace
    "pkexec": _options_then_command(
        _table(long="disable-internal-agent keep-cwd help version", long_values="user")
    ),
    **dict.fromkeys(("su", "runuser"), _switch_user),
    "sg": _sg,
    "chroot": _options_then_command(
        _table(long="skip-chdir help version", long_values="userspec groups"), operands_before=1
    ),
    "unshare": _options_then_command(
        _table(
            "fhVmuinpCTUrc",
            "fork help version map-root-user map-current-user map-auto",
            short_values="lRwSG",
            long_values="propagation setgroups root wd setuid setgid monotonic boottime "
            "load-interp map-user map-group map-users map-groups",
            long_optional="mount uts ipc net pid user cgroup time kill-child mount-proc "
            "mount-binfmt",
        )
    ),
    "nsenter": _options_then_command(
        _table(
            "FZhVe",
            "preserve-credentials no-fork follow-context all env help version",
            short_values="tSG",
            short_optional="muinpUCTrw",
            long_values="target setuid setgid",
            long_optional="mount uts ipc net pid user cgroup time root wd",
        )
    ),
    "setpriv": _options_then_command(
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
    "numactl": _options_then_command(
        _table(
            "aslHhV",
            "all show hardware localalloc help version",
            short_values="imNCpPw",
            long_values="interleave membind cpunodebind physcpubind preferred preferred-many",
        )
    ),
    "prlimit": _options_then_command(
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
    "strace": _options_then_command(_table("cCdDfFhiqrtTvVwxyzZk", short_values="abeEIoOpPsSuUX")),
    "ltrace": _options_then_command(_table("bcCfhiLrStTV", short_values="aAeFlnopsuwxD")),
    "fakeroot": _options_then_command(
        _table(
            "uhv",
            "unknown-is-real help version",
            short_values="lisb",
            long_values="lib faked fd-base",
        )
    ),
    "faketime": _options_then_command(
        _table("fm", "exclude-monotonic help version", short_values="p", long_values="date-prog"),
        operands_before=1,
    ),
    "xvfb-run": _options_then_command(
        _table(
            "alh",
            "auto-servernum listen-tcp help",
            short_values="efnpsw",
            long_values="error-file auth-file server-num xauth-protocol server-args wait",
        )
    ),
    "dbus-run-session": _options_then_command(
        _table(long="help version", long_values="config-file dbus-daemon")
    ),
    "systemd-inhibit": _options_then_command(
        _table(
            long="list no-pager no-legend no-ask-password help version",
            long_values="what who why mode",
        )
    ),
    "setarch": _setarch,
    **dict.fromkeys(("linux32", "linux64"), _arch_options),
    "cgexec": _options_then_command(_table("h", "sticky", short_values="g")),
    "unbuffer": _options_then_command(_table("p")),
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
        _options_then_command(_table(long="help version")),
    ),
    # run commands in ways we do not read: they ask
    **dict.fromkeys(
        ("parallel", "sem"),
        _not_followed("runs command lines it builds from its arguments and input"),
    ),
    **dict.fromkeys(("at", "batch"), _not_followed("runs commands read from its input later")),
    "gdb": _not_followed("runs the programs and commands its options name"),
    "bwrap": _not_followed("its options are not analysed"),
}
"""Programs that run another command, by name (a path such as ``/usr/bin/env`` counts too)."""
