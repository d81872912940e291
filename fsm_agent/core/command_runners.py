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
from fsm_agent.core.wrapper_reading import Unwrap, UnwrapOne, Unwrapped, options_then_command

_FROM_INPUT = "a shell reading commands from its input is not analysed"


def _shifted(
    outcome: Unwrapped | tuple[Unwrapped, ...] | str | None, by: int
) -> Unwrapped | tuple[Unwrapped, ...] | str | None:
    """A reader's outcome for ``args[by:]``, as indexes in ``args``."""
    if isinstance(outcome, Unwrapped):
        return attrs.evolve(
            outcome,
            start=outcome.start + by,
            end=None if outcome.end is None else outcome.end + by,
            script_indexes=tuple(index + by for index in outcome.script_indexes),
        )
    if isinstance(outcome, tuple):
        return tuple(attrs.evolve(one, script_indexes=tuple(i + by for i in one.script_indexes),
                                  start=one.start + by) for one in outcome)  # fmt: skip
    return outcome


def _subcommands(globals_table: OptionTable, readers: Mapping[str, Unwrap]) -> Unwrap:
    """``PROGRAM [global options] SUBCOMMAND ...``: the subcommands of ``readers`` run a
    command (``uv run``, ``npm exec``); the others run none we follow (``uv sync``)."""

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
        return _shifted(reader(args[index + 1 :]), index + 1)

    return unwrap


def _then_command(
    short: str = "",
    long: str = "",
    *,
    short_values: str = "",
    long_values: str = "",
    label: str,
    script_options: tuple[str, ...] = (),
) -> Unwrap:
    """``[options] COMMAND ARGS...``; an option of ``script_options`` gives instead a command
    line to run (``npx -c 'CMD'``)."""
    table = _table(short, long, short_values=short_values, long_values=long_values)
    command = options_then_command(table, label=label)

    def unwrap(args: Sequence[str]) -> Unwrapped | tuple[Unwrapped, ...] | str | None:
        parsed = parse_arguments(args, table)
        scripts = [o.value or "" for o in parsed.options if o.name in script_options]
        if parsed.problem is None and scripts:
            if parsed.rest_index < len(args) or len(scripts) > 1:
                return f"{label} given a command line and a command is not analysed"
            at = tuple(i for i, arg in enumerate(args) if scripts[0] in arg)
            return Unwrapped(script=scripts[0], script_indexes=at, label=f"{label} -c")
        return command(args)

    return unwrap


_NPX = _then_command(
    "yqsdw",
    "yes no quiet silent workspaces include-workspace-root ignore-existing verbose",
    short_values="pcw",
    long_values="package call workspace prefix registry cache userconfig loglevel",
    label="npx",
    script_options=("-c", "--call"),
)
_PNPM_DLX = _then_command(
    "sc", "silent shell-mode", short_values="p", long_values="package", label="pnpm dlx"
)
_PNPM_EXEC = _then_command(
    "rc",
    "recursive shell-mode parallel no-bail resume-from report-summary",
    short_values="F",
    long_values="filter workspace-concurrency",
    label="pnpm exec",
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
_uv_command = options_then_command(_UV_RUN_TABLE, label="uv run")


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
    "qvn", "quiet verbose no-ansi no-interaction no-plugins no-cache", short_values="CP",
    long_values="directory project",
)  # fmt: skip
_CONDA_RUN = _then_command(
    "v",
    "no-capture-output live-stream verbose",
    short_values="np",
    long_values="name prefix cwd",
    label="conda run",
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
            return (
                Unwrapped(start=index + 1, label="gnome-terminal")
                if index + 1 < len(args)
                else None
            )
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


RUNNERS: dict[str, Unwrap] = {
    "npx": _NPX,
    "npm": _subcommands(_table("qsdy", "quiet silent yes"), {"exec": _NPX, "x": _NPX}),
    "pnpm": _subcommands(
        _table("s", "silent recursive", short_values="FC", long_values="filter dir"),
        {"dlx": _PNPM_DLX, "exec": _PNPM_EXEC},
    ),
    "yarn": _subcommands(
        _table("s", "silent", long_values="cwd"), {"dlx": _YARN_DLX, "exec": _plain("yarn exec")}
    ),
    "bunx": _BUNX,
    "bun": _subcommands(_table(long="silent"), {"x": _BUNX}),
    "uvx": _UV_TOOL_RUN,
    "uv": _subcommands(
        _table("qvn", "quiet verbose offline no-cache", long_values="directory project"),
        {"run": _uv_run, "tool": _subcommands(_table(), {"run": _UV_TOOL_RUN})},
    ),
    "pipx": _subcommands(_table("qv", "quiet verbose"), {"run": _PIPX_RUN}),
    "poetry": _subcommands(_POETRY_GLOBALS, {"run": _plain("poetry run")}),
    "pipenv": _subcommands(_table(), {"run": _plain("yarn exec")}),
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
}
"""Programs that run a command they are given for development, by name."""
