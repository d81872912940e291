"""Which shell commands are provably read-only (so Bash may run them concurrently, SPEC §4).

The test is deliberately one-sided: ``True`` means "we could prove it changes nothing"; anything
we cannot reason about — command substitution, redirections, variables, subshells, background
jobs, unknown programs, flags that make a listed program write or run something — is ``False``.
A command is split at unquoted ``&&``, ``||``, ``;`` and ``|``, and every part must start with
a program of the allowlist and pass that program's argument check.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence

MAX_PARTS = 50
"""More parts than this are not analysed (SPEC §9.3: compound commands over 50 parts ask)."""

REFUSED_ANYWHERE = ("$(", "`", ">", "<(", "\n", "\r")
"""Substrings that end the analysis even inside quotes (conservative on purpose)."""

READ_ONLY_PROGRAMS = frozenset(
    {
        "ls", "cat", "head", "tail", "wc", "grep", "rg", "find", "echo", "pwd", "which",
        "file", "stat", "du", "df", "tree", "sort", "uniq", "diff", "git", "date", "whoami",
        "env", "printenv", "true", "false", "test",
    }
)  # fmt: skip

GIT_READ_ONLY_SUBCOMMANDS = frozenset({"status", "log", "diff", "show", "branch"})
FIND_ACTIONS_THAT_WRITE = frozenset(
    {"-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls"}
)
GIT_BRANCH_LISTING_FLAGS = frozenset(
    {"-a", "--all", "-r", "--remotes", "-v", "-vv", "--verbose", "--show-current", "--no-color",
     "-l", "--list"}
)  # fmt: skip


def is_read_only_command(command: str) -> bool:
    """Whether ``command`` can be proven to change nothing (``False`` when unsure)."""
    if not command.strip() or any(text in command for text in REFUSED_ANYWHERE):
        return False
    parts = split_command(command)
    if parts is None or len(parts) > MAX_PARTS:
        return False
    return all(_part_is_read_only(part) for part in parts)


def split_command(command: str) -> list[str] | None:
    """Split at unquoted ``&& || ; |``; ``None`` if the text holds constructs we do not analyse.

    Refused outside single quotes: ``$`` (expansion could inject arguments); refused outside any
    quotes: a lone ``&`` (a background job), ``(`` and ``)`` (subshells).
    """
    parts: list[str] = []
    current: list[str] = []
    quote: str | None = None
    index = 0
    while index < len(command):
        char = command[index]
        pair = command[index : index + 2]
        step = 1
        if quote == "'":
            quote = None if char == "'" else quote
            current.append(char)
        elif char == "\\":
            current.append(pair)
            step = 2
        elif char == "$":
            return None
        elif quote == '"':
            quote = None if char == '"' else quote
            current.append(char)
        elif char in "'\"":
            quote = char
            current.append(char)
        elif char in "()":
            return None
        elif pair in ("&&", "||"):
            parts.append("".join(current))
            current = []
            step = 2
        elif char == "&":
            return None
        elif char in ";|":
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
        index += step
    if quote is not None:
        return None
    parts.append("".join(current))
    return parts


def _part_is_read_only(part: str) -> bool:
    try:
        words = shlex.split(part)
    except ValueError:
        return False
    if not words or words[0] not in READ_ONLY_PROGRAMS:
        return False
    check = _ARGUMENT_CHECKS.get(words[0])
    return check is None or check(words[1:])


def _short_cluster_has(args: Sequence[str], letter: str) -> bool:
    """Whether a short-option cluster such as ``-rno`` contains ``letter``."""
    return any(a.startswith("-") and not a.startswith("--") and letter in a[1:] for a in args)


def _has_prefix(args: Sequence[str], *prefixes: str) -> bool:
    return any(a.startswith(prefixes) for a in args)


def _find_ok(args: Sequence[str]) -> bool:
    return not FIND_ACTIONS_THAT_WRITE.intersection(args)


def _git_ok(args: Sequence[str]) -> bool:
    if not args or args[0] not in GIT_READ_ONLY_SUBCOMMANDS or _has_prefix(args, "--output"):
        return False
    if args[0] != "branch":
        return True
    rest = args[1:]
    listing = any(a in ("-l", "--list") for a in rest)
    # without --list, a positional argument creates a branch; other flags may delete or move
    return all(a in GIT_BRANCH_LISTING_FLAGS or (listing and not a.startswith("-")) for a in rest)


def _sort_ok(args: Sequence[str]) -> bool:
    return not (_short_cluster_has(args, "o") or _has_prefix(args, "--output", "--compress"))


def _uniq_ok(args: Sequence[str]) -> bool:
    # a second operand is an output file
    return len([a for a in args if not a.startswith("-")]) <= 1


_ARGUMENT_CHECKS: dict[str, Callable[[Sequence[str]], bool]] = {
    "find": _find_ok,
    "git": _git_ok,
    "sort": _sort_ok,
    "uniq": _uniq_ok,
    "tree": lambda args: not (_short_cluster_has(args, "o") or _short_cluster_has(args, "R")),
    "env": lambda args: not args,  # with arguments, env runs a program
    "date": lambda args: not (_short_cluster_has(args, "s") or _has_prefix(args, "--set")),
    "file": lambda args: not (_short_cluster_has(args, "C") or _has_prefix(args, "--compile")),
    "rg": lambda args: not _has_prefix(args, "--pre"),
}
