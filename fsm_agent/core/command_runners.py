"""Programs that run a command they are given, for development: package runners (``npx``,
``uvx``, ``uv run``...), project environments and shells (``nix-shell --run``, ``nix develop
-c``, ``direnv exec``, ``proot``), terminals (``xterm -e``) and file watchers (``entr``,
``watchexec``).

Each reader says what runs, as the wrappers of ``shell_wrappers`` do (SPEC §9.3: a deny rule
must see the command a wrapper runs): ``npx rm -rf src`` gives the part ``rm -rf src``. Their
options are read from a table of the ones in common use, and one we do not know is a problem
(it may take the next word as its value, which would move where the command starts): the
command asks under a Bash deny or ask rule, even in bypass mode. So does a program that runs
something the command does not name (``nix run nixpkgs#x``), or a shell reading its commands
from its input (``nix-shell`` without ``--run``, ``nix develop`` without ``-c``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs

from fsm_agent.core.command_options import OptionTable, parse_arguments
from fsm_agent.core.command_options import option_table as _table
from fsm_agent.core.wrapper_reading import (
    Unwrap,
    UnwrapOne,
    Unwrapped,
    not_followed,
    options_then_command,
)

_FROM_INPUT = "a shell reading commands from its input is not analysed"
_DASHES = "its options are not analysed, and no -- says where its command starts"


def _shifted(
    outcome: Unwrapped | tuple[Unwrapped, ...] | str | None,
    by: int,
    folders: tuple[str, ...] = (),
) -> Unwrapped | tuple[Unwrapped, ...] | str | None:
    """A reader's outcome for ``args[by:]``, as indexes in ``args``, run in ``folders``
    first (those the words before name)."""
    if isinstance(outcome, Unwrapped):
        return _shifted_one(outcome, by, folders)
    if isinstance(outcome, tuple):
        return tuple(_shifted_one(one, by, folders) for one in outcome)
    return outcome


def _shifted_one(outcome: Unwrapped, by: int, folders: tuple[str, ...]) -> Unwrapped:
    return attrs.evolve(
        outcome,
        start=outcome.start + by,
        end=None if outcome.end is None else outcome.end + by,
        script_indexes=tuple(index + by for index in outcome.script_indexes),
        folders=(*folders, *outcome.folders),
    )


def _subcommands(
    globals_table: OptionTable,
    readers: Mapping[str, Unwrap],
    *,
    folder_options: frozenset[str] = frozenset(),
) -> Unwrap:
    """``PROGRAM [global options] SUBCOMMAND ...``: the subcommands of ``readers`` run a
    command (``uv run``, ``npm exec``); the others run none we follow (``uv sync``). A global
    option of ``folder_options`` names the folder the command runs in (``uv --directory``)."""

    def unwrap(args: Sequence[str]) -> Unwrapped | tuple[Unwrapped, ...] | str | None:
        parsed = parse_arguments(args, globals_table)
        if parsed.problem is not None:
            # An option we do not know before a subcommand that runs something: it may have
            # taken a word as its value, so where the command starts is not known.
            return parsed.problem if any(word in readers for word in args) else None
        index = parsed.rest_index
        reader = readers.get(args[index]) if index < len(args) else None
        if reader is None:
            return None
        folders = tuple(parsed.values(*folder_options))
        return _shifted(reader(args[index + 1 :]), index + 1, folders)

    return unwrap


def _then_command(
    short: str = "",
    long: str = "",
    *,
    short_values: str = "",
    long_values: str = "",
    label: str,
    script_options: tuple[str, ...] = (),
    shell_mode: tuple[str, ...] = (),
    folder_options: frozenset[str] = frozenset(),
) -> Unwrap:
    """``[options] COMMAND ARGS...``; an option of ``script_options`` gives instead a command
    line to run (``npx -c 'CMD'``), one of ``shell_mode`` has the words joined and run by a
    shell (``pnpm exec -c 'a; b'``)."""
    table = _table(short, long, short_values=short_values, long_values=long_values)
    command = options_then_command(table, label=label, folder_options=folder_options)

    def unwrap(args: Sequence[str]) -> Unwrapped | tuple[Unwrapped, ...] | str | None:
        parsed = parse_arguments(args, table)
        if parsed.problem is None and any(o.name in shell_mode for o in parsed.options):
            start = parsed.rest_index
            if start >= len(args):
                return None
            indexes = tuple(range(start, len(args)))
            folders = tuple(parsed.values(*folder_options))
            return Unwrapped(
                script=" ".join(args[start:]), script_indexes=indexes, label=label, folders=folders
            )
        scripts = [o.value or "" for o in parsed.options if o.name in script_options]
        if parsed.problem is None and scripts:
            if parsed.rest_index < len(args) or len(scripts) > 1:
                return f"{label} given a command line and a command is not analysed"
            at = tuple(i for i, arg in enumerate(args) if scripts[0] in arg)
            return Unwrapped(script=scripts[0], script_indexes=at, label=f"{label} -c")
        return command(args)

    return unwrap


_NPX = _then_command(
    "yqsd",
    "yes no quiet silent workspaces include-workspace-root ignore-existing verbose",
    short_values="pcw",
    long_values="package call workspace prefix registry cache userconfig loglevel",
    label="npx",
    script_options=("-c", "--call"),
)
_PNPM_DLX = _then_command(
    "sc",
    "silent shell-mode",
    short_values="p",
    long_values="package",
    label="pnpm dlx",
    shell_mode=("-c", "--shell-mode"),
)
_PNPM_EXEC = _then_command(
    "rc",
    "recursive shell-mode parallel no-bail resume-from report-summary",
    short_values="F",
    long_values="filter workspace-concurrency",
    label="pnpm exec",
    shell_mode=("-c", "--shell-mode"),
)
_YARN_DLX = _then_command("q", "quiet", short_values="p", long_values="package", label="yarn dlx")
_BUNX = _then_command("b", "bun silent verbose", long_values="package", label="bunx")
_UV_TOOL_RUN = _then_command(
    "qvn",
    "quiet verbose offline no-cache isolated refresh",
    short_values="p",
    long_values="from with with-editable with-requirements python index index-url "
    "extra-index-url directory project",
    label="uvx",
    folder_options=frozenset({"--directory"}),
)
_UV_RUN_TABLE = _table(
    "qvsn",
    "quiet verbose offline no-cache no-sync frozen locked all-extras no-dev isolated "
    "no-project active all-packages exact no-editable no-env-file script gui-script refresh "
    "no-default-groups all-groups",
    short_values="pm",
    long_values="with with-editable with-requirements python package extra group only-group "
    "no-group env-file directory project index index-url extra-index-url module",
)
_uv_command = options_then_command(
    _UV_RUN_TABLE, label="uv run", folder_options=frozenset({"--directory"})
)


def _uv_run(args: Sequence[str]) -> Unwrapped | str | None:
    """``uv run [options] [--] COMMAND...``; ``-m MODULE`` runs a module, no command."""
    parsed = parse_arguments(args, _UV_RUN_TABLE)
    if parsed.problem is None and any(o.name in ("-m", "--module") for o in parsed.options):
        return None
    return _uv_command(args)


_PIPX_RUN = _then_command(
    "qve",
    "quiet verbose editable no-cache path",
    long_values="spec python pip-args index-url",
    label="pipx run",
)


def _plain(label: str) -> UnwrapOne:
    """``... COMMAND ARGS...``, no option before the command."""
    return options_then_command(_table(), label=label)


_POETRY_GLOBALS = _table(
    "qvn",
    "quiet verbose no-ansi no-interaction no-plugins no-cache",
    short_values="CP",
    long_values="directory project",
)
_CONDA_RUN = _then_command(
    "v",
    "no-capture-output live-stream verbose",
    short_values="np",
    long_values="name prefix cwd",
    label="conda run",
    folder_options=frozenset({"--cwd"}),
)
_PIXI_RUN = _then_command(
    "v",
    "frozen locked verbose clean-env",
    short_values="e",
    long_values="environment manifest-path",
    label="pixi run",
)


def _direnv_exec(args: Sequence[str]) -> Unwrapped | str | None:
    """``direnv exec DIR COMMAND...``: the folder's ``.envrc`` (a file) and the command."""
    return Unwrapped(start=1, label="direnv exec") if len(args) > 1 else None


_PROOT = options_then_command(
    _table(
        "0lhV",
        "root-id link2symlink kill-on-exit help version",
        short_values="rbmqwvkRSi",
        long_values="rootfs bind mount qemu pwd cwd verbose kernel-release change-id",
    ),
    label="proot",
    folder_options=frozenset({"-w", "--pwd", "--cwd"}),
)
_DBUS_LAUNCH = options_then_command(
    _table(
        long="sh-syntax csh-syntax auto-syntax binary-syntax close-stderr exit-with-session "
        "exit-with-x11 version help",
        long_values="autolaunch config-file",
    ),
    label="dbus-launch",
)


# -- nix ---------------------------------------------------------------------------------------


def _spellings(text: str) -> frozenset[str]:
    """Option spellings separated by blanks."""
    return frozenset(text.split())


_NIX_FLAGS = _spellings(
    "--impure --pure --offline --refresh --no-write-lock-file --recreate-lock-file "
    "--show-trace -L --print-build-logs -v --verbose --quiet --accept-flake-config "
    "-i --ignore-environment --debug --no-update-lock-file --build --configure --install "
    "--unpack --check --installcheck"
)
_NIX_ONE_VALUE = _spellings(
    "-I --include -f --file --expr --profile --phase --store --eval-store -j --max-jobs "
    "--cores -k --keep -u --unset --log-format --inputs-from --reference-lock-file "
    "--output-lock-file --update-input --extra-experimental-features --experimental-features "
    "-A --attr"
)
_NIX_TWO_VALUES = _spellings("--arg --argstr --override-input --redirect --option -s --set-env-var")
_NIX_RUNNERS = frozenset({"develop", "shell"})


def _nix(args: Sequence[str]) -> Unwrapped | str | None:
    """``nix develop ... -c COMMAND...`` and ``nix shell ... -c COMMAND...`` (without ``-c``
    they start a shell reading its input); ``nix run`` runs the program of a flake: one the
    project holds (``.#test``) is a file, as a makefile is, any other is a program the command
    does not name. Other subcommands (``nix build``) run nothing we follow."""
    subcommand: str | None = None
    index = 0
    while index < len(args):
        word = args[index]
        index += 1
        if word in ("-c", "--command") and subcommand in _NIX_RUNNERS:
            if index >= len(args) or args[index].startswith("-"):
                return f"nix {subcommand} {word} without a command"
            return Unwrapped(start=index, label=f"nix {subcommand} -c")
        if word in _NIX_TWO_VALUES:
            index += 2
        elif word in _NIX_ONE_VALUE:
            index += 1
        elif word == "--" or (word.startswith("-") and word not in _NIX_FLAGS):
            if subcommand in _NIX_STARTS or (subcommand is None and _NIX_STARTS & set(args)):
                return f"nix {word} is not an option we know"
        elif word.startswith("-"):
            continue
        elif subcommand is None:
            subcommand = word
            if word not in _NIX_STARTS:
                return None
        elif subcommand == "run":
            return None if word.startswith(_LOCAL_FLAKES) else _NIX_RUN
    if subcommand == "run":
        return None  # the flake of the folder it runs in
    return _FROM_INPUT if subcommand in _NIX_RUNNERS else None


_NIX_STARTS = _NIX_RUNNERS | {"run"}
_LOCAL_FLAKES = (".", "/", "path:")
_NIX_RUN = "nix run runs a program the command does not name"


def _nix_shell(args: Sequence[str]) -> tuple[Unwrapped, ...] | str:
    """``nix-shell ... --run CMD`` (``--command CMD``): CMD runs as a command line. Every word
    after such an option counts, whatever an option before it takes; without one, nix-shell
    starts a shell reading its input."""
    found = tuple(
        Unwrapped(script=args[index + 1], script_indexes=(index + 1,), label=f"nix-shell {word}")
        for index, word in enumerate(args[:-1])
        if word in ("--run", "--command")
    )
    return found or _FROM_INPUT


# -- terminals and watchers --------------------------------------------------------------------


def _after_option(options: tuple[str, ...], label: str) -> UnwrapOne:
    """A terminal whose option ``-e`` (one of ``options``) takes the rest of the words as the
    command. A command beginning with ``-`` means an option before took ``-e`` as its value
    (``xterm -T -e -e rm``): not read."""

    def unwrap(args: Sequence[str]) -> Unwrapped | str | None:
        index = next((i for i, arg in enumerate(args) if arg in options), None)
        if index is None or index + 1 >= len(args):
            return None
        if args[index + 1].startswith("-"):
            return f"{args[index]} {args[index + 1]} is not analysed"
        return Unwrapped(start=index + 1, label=label)

    return unwrap


def _gnome_terminal(args: Sequence[str]) -> Unwrapped | str | None:
    """``gnome-terminal [options] -- COMMAND...`` (``-x``), or ``-e 'COMMAND LINE'``."""
    for index, word in enumerate(args):
        if word in ("--", "-x", "--execute"):
            if index + 1 >= len(args):
                return None
            if args[index + 1].startswith("-"):
                return f"{word} {args[index + 1]} is not analysed"
            return Unwrapped(start=index + 1, label="gnome-terminal")
        if word in ("-e", "--command") and index + 1 < len(args):
            return Unwrapped(
                script=args[index + 1], script_indexes=(index + 1,), label="gnome-terminal -e"
            )
        if word.startswith(("-e", "--command=")):
            return "gnome-terminal -e given inline is not analysed"
    return None


_ENTR_OPTIONS = _table("acdnprsz")


def _entr(args: Sequence[str]) -> Unwrapped | str | None:
    """``entr [options] UTILITY ARGS...``: ``/_`` stands for the file that changed, a name
    read from the input; with ``-s`` UTILITY is a command line run by the shell."""
    parsed = parse_arguments(args, _ENTR_OPTIONS)
    if parsed.problem is not None:
        return parsed.problem
    index = parsed.rest_index
    if index >= len(args):
        return None
    if any(option.name == "-s" for option in parsed.options):
        return Unwrapped(script=args[index], script_indexes=(index,), label="entr -s")
    if "/_" in args[index]:
        return "entr runs a program named by its input"
    return Unwrapped(start=index, label="entr", placeholder="/_")


def _watchexec(args: Sequence[str]) -> Unwrapped | str | None:
    """``watchexec [options] -- COMMAND...``: the words are joined and run by a shell. Its
    many options are not read, so without ``--`` where the command starts is not known."""
    if not args:
        return None
    if "--" not in args:
        return "watchexec without -- before its command is not analysed"
    start = args.index("--") + 1
    if start >= len(args):
        return None
    indexes = tuple(range(start, len(args)))
    return Unwrapped(script=" ".join(args[start:]), script_indexes=indexes, label="watchexec")


def _after_dashes(label: str, *, without: str | None = None) -> UnwrapOne:
    """``PROGRAM [options] -- COMMAND...`` (``op run``, ``dotenvx run``, ``nsjail``): the
    options are not read, so without ``--`` the command asks (``without``), or runs nothing
    (None)."""

    def unwrap(args: Sequence[str]) -> Unwrapped | str | None:
        if "--" not in args:
            return without if args else None
        start = list(args).index("--") + 1
        return Unwrapped(start=start, label=label) if start < len(args) else None

    return unwrap


def _every_value(options: tuple[str, ...], label: str) -> Unwrap:
    """A program whose options ``options`` each give a command line to run (``nodemon --exec
    CMD``, ``repo forall -c CMD``, ``cargo watch -s CMD``): every word after one counts,
    whatever an option before it takes (``--exec=CMD`` too). Without one it runs none."""

    def unwrap(args: Sequence[str]) -> tuple[Unwrapped, ...]:
        found: list[Unwrapped] = []
        for index, word in enumerate(args):
            name, inline, value = word.partition("=")
            if word in options and index + 1 < len(args):
                found.append(
                    Unwrapped(
                        script=args[index + 1], script_indexes=(index + 1,), label=f"{label} {word}"
                    )
                )
            elif inline and name in options and name.startswith("--") and value:
                found.append(
                    Unwrapped(script=value, script_indexes=(index,), label=f"{label} {name}")
                )
        return tuple(found)

    return unwrap


def _every_operand(
    table_letters: str, values: str, longs: str, long_values: str, label: str
) -> Unwrap:
    """``concurrently [options] 'CMD' 'CMD'...``: each operand a command line."""
    table = attrs.evolve(
        _table(table_letters, longs, short_values=values, long_values=long_values),
        stops_at_operand=False,
    )

    def unwrap(args: Sequence[str]) -> tuple[Unwrapped, ...] | str:
        parsed = parse_arguments(args, table)
        if parsed.problem is not None:
            return parsed.problem
        return tuple(
            Unwrapped(script=operand, script_indexes=at, label=label)
            for operand in dict.fromkeys(parsed.operands)
            for at in [tuple(i for i, arg in enumerate(args) if arg == operand)]
        )

    return unwrap


def _joined(table: OptionTable, label: str) -> Unwrap:
    """``[options] COMMAND WORDS...`` joined and run by a shell (``pueue add``)."""

    def unwrap(args: Sequence[str]) -> Unwrapped | str | None:
        parsed = parse_arguments(args, table)
        if parsed.problem is not None:
            return parsed.problem
        start = parsed.rest_index
        if start >= len(args):
            return None
        indexes = tuple(range(start, len(args)))
        return Unwrapped(script=" ".join(args[start:]), script_indexes=indexes, label=label)

    return unwrap


def _fd(args: Sequence[str]) -> Unwrapped | str | None:
    """``fd [options] [PATTERN] [PATH...] -x COMMAND... [;]`` (``-X``, ``--exec``,
    ``--exec-batch``): the command runs for each file found, ``{}`` (``{/}``, ``{.}``...)
    standing for its name; with none of them, the name follows its last word."""
    runners = [i for i, arg in enumerate(args) if arg in ("-x", "--exec", "-X", "--exec-batch")]
    if not runners:
        return None
    if len(runners) > 1:
        return "more than one command run by fd is not analysed"
    start = runners[0] + 1
    end = next((i for i in range(start, len(args)) if args[i] == ";"), len(args))
    if start >= end:
        return f"{args[runners[0]]} without a command"
    if "{" in args[start]:
        return f"{args[runners[0]]} runs a program named by what it finds"
    appended = not any("{" in arg for arg in args[start:end])
    return Unwrapped(
        start=start,
        end=end,
        label=f"fd {args[runners[0]]}",
        placeholder="{",
        appends_input=appended,
    )


_PERF_RUNNERS = frozenset(
    {"record", "stat", "trace", "c2c", "mem", "kmem", "lock", "sched", "kvm", "ftrace"}
)


def _perf(args: Sequence[str]) -> Unwrapped | str | None:
    """``perf record|stat|trace [options] [--] COMMAND...``: its many options are not read, so
    the command is followed after ``--`` and asks without it; ``perf report`` runs none."""
    if not args or args[0] not in _PERF_RUNNERS:
        return None
    return _after_dashes(
        f"perf {args[0]}", without=f"perf {args[0]} without -- before its command"
    )(args)


def _doppler_run(args: Sequence[str]) -> Unwrapped | tuple[Unwrapped, ...] | str | None:
    """``doppler run [options] -- COMMAND...`` or ``doppler run --command 'CMD'``."""
    scripts = _every_value(("--command",), "doppler run")(args)
    if scripts:
        return scripts
    return _after_dashes("doppler run", without=_DASHES)(args)


def _aws_vault_exec(args: Sequence[str]) -> Unwrapped | str | None:
    """``aws-vault exec [options] PROFILE [-- COMMAND...]``; without a command it starts the
    user's shell, reading its input."""
    if "--" in args:
        return _after_dashes("aws-vault exec")(args)
    return _FROM_INPUT if len(args) == 1 else _DASHES


_PYTHON_DOTENV = frozenset({"run", "list", "get", "set", "unset"})
_DOTENV_OPTIONS = _table("p", short_values="efvcq", long_values="file quote export")


def _dotenv(args: Sequence[str]) -> Unwrapped | str | None:
    """``dotenv [options] [--] COMMAND...`` (dotenv-cli) or ``dotenv [options] run COMMAND...``
    (python-dotenv; its other subcommands run nothing)."""
    if "--" in args:
        return _after_dashes("dotenv")(args)
    parsed = parse_arguments(args, _DOTENV_OPTIONS)
    if parsed.problem is not None:
        return parsed.problem
    start = parsed.rest_index
    if start < len(args) and args[start] in _PYTHON_DOTENV:
        if args[start] != "run":
            return None
        start += 1
    return Unwrapped(start=start, label="dotenv") if start < len(args) else None


RUNNERS: dict[str, Unwrap] = {
    "npx": _NPX,
    "npm": _subcommands(_table("qsdy", "quiet silent yes"), {"exec": _NPX, "x": _NPX}),
    "pnpm": _subcommands(
        _table("s", "silent recursive", short_values="FC", long_values="filter dir"),
        {"dlx": _PNPM_DLX, "exec": _PNPM_EXEC},
        folder_options=frozenset({"-C", "--dir"}),
    ),
    "yarn": _subcommands(
        _table("s", "silent", long_values="cwd"),
        {"dlx": _YARN_DLX, "exec": _plain("yarn exec")},
        folder_options=frozenset({"--cwd"}),
    ),
    "bunx": _BUNX,
    "bun": _subcommands(_table(long="silent"), {"x": _BUNX}),
    "uvx": _UV_TOOL_RUN,
    "uv": _subcommands(
        _table("qvn", "quiet verbose offline no-cache", long_values="directory project"),
        {"run": _uv_run, "tool": _subcommands(_table(), {"run": _UV_TOOL_RUN})},
        folder_options=frozenset({"--directory"}),
    ),
    "pipx": _subcommands(_table("qv", "quiet verbose"), {"run": _PIPX_RUN}),
    "poetry": _subcommands(
        _POETRY_GLOBALS,
        {"run": _plain("poetry run")},
        folder_options=frozenset({"-C", "--directory"}),
    ),
    "pipenv": _subcommands(_table(), {"run": _plain("pipenv run")}),
    "hatch": _subcommands(_table("qv", "quiet verbose"), {"run": _plain("hatch run")}),
    "conda": _subcommands(_table(), {"run": _CONDA_RUN}),
    "pixi": _subcommands(_table("qv", "quiet verbose"), {"run": _PIXI_RUN}),
    "nix": _nix,
    "nix-shell": _nix_shell,
    "direnv": _subcommands(_table(), {"exec": _direnv_exec}),
    "proot": _PROOT,
    "dbus-launch": _DBUS_LAUNCH,
    **{
        name: _after_option(("-e",), name)
        for name in ("xterm", "uxterm", "konsole", "urxvt", "rxvt", "st")
    },
    "alacritty": _after_option(("-e", "--command"), "alacritty"),
    "gnome-terminal": _gnome_terminal,
    "entr": _entr,
    "watchexec": _watchexec,
    "nodemon": _every_value(("-x", "--exec"), "nodemon"),
    "cargo": _subcommands(_table(), {"watch": _every_value(("-s", "--shell"), "cargo watch")}),
    "repo": _subcommands(_table(), {"forall": _every_value(("-c", "--command"), "repo forall")}),
    # run a command with the secrets or variables of an environment
    "dotenvx": _subcommands(_table(), {"run": _after_dashes("dotenvx run", without=_DASHES)}),
    "op": _subcommands(_table(), {"run": _after_dashes("op run", without=_DASHES)}),
    "doppler": _subcommands(_table(), {"run": _doppler_run}),
    "aws-vault": _subcommands(_table(), {"exec": _aws_vault_exec}),
    "dotenv": _dotenv,
    "env-cmd": options_then_command(
        _table(
            "rx",
            "silent use-shell expand-envs recursive verbose",
            short_values="fe",
            long_values="file environments",
        ),
        label="env-cmd",
    ),
    "cross-env": options_then_command(_table(), label="cross-env"),
    # run commands side by side, queued, or for every package of a workspace
    "concurrently": _every_operand(
        "krtigh",
        "ncpsl",
        "kill-others kill-others-on-fail raw timings group hide-commands no-color",
        "names prefix-colors prefix success restart-tries max-processes "
        "restart-after handle-input default-input-target",
        "concurrently",
    ),
    "pueue": _subcommands(
        _table(),
        {
            "add": _joined(
                _table(
                    "iepsx",
                    "immediate escape print-task-id stashed follow",
                    short_values="dgawl",
                    long_values="delay group after working-directory label priority",
                ),
                "pueue add",
            )
        },
    ),
    **dict.fromkeys(
        ("tsp", "ts"),
        options_then_command(_table("nfgmEBdlKCVhrisT", short_values="LDNwtpocSUku"), label="tsp"),
    ),
    "lerna": _subcommands(_table(), {"exec": _after_dashes("lerna exec", without=_DASHES)}),
    # run the command under a profiler, a debugger or a helper
    "perf": _perf,
    "lldb": not_followed("runs the programs and commands its options name"),
    "heaptrack": options_then_command(_table(long="help version"), label="heaptrack"),
    "nsjail": _after_dashes("nsjail", without=_DASHES),
    "caffeinate": options_then_command(_table("disum", short_values="tw"), label="caffeinate"),
    "winpty": options_then_command(_table(long="help version"), label="winpty"),
    "mpirun": options_then_command(
        _table(
            long="oversubscribe allow-run-as-root",
            short_values="nNcHx",
            long_values="np host hostfile bind-to map-by rank-by",
        ),
        label="mpirun",
    ),
    "fd": _fd,
}
"""Programs that run a command they are given for development, by name."""
