"""One command, options spelled otherwise: ``rm -rf x``, ``rm -r -f x``, ``rm -fr x``,
``rm --recursive --force x`` and ``rm -R --for x`` all do the same, so a deny or ask rule naming
one of them must match every one (SPEC §9.2 rule matching; §9.3: deny rules always win).

A Bash rule is matched against a command's text first (``permission_rules``); this module adds
a second way to match, used only for deny and ask rules, so it can only make such a rule match
more commands, never fewer. (An allow rule is never matched this way: ``Bash(rm -f:*)`` must
not allow ``rm -rf``.)

Both the rule's words and the command's are read as *command words* (the program and, for git,
its subcommand), *options* and *operands*. Options are put in one spelling: short clusters are
split (``-fr`` is ``-f -r``), known long forms and abbreviations become the short letter
(``--recursive``, ``--recur`` and ``-R`` are rm's ``-r``). The command matches a prefix rule
(``rm -rf:*``, ``rm -rf *``) when it has the same command words, every option the rule names
and the rule's operands first; an exact rule (``rm -rf build``) when options and operands are
the same. Programs without a table below have their clusters split and long options kept as
written.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence

import attrs

from fsm_agent.core.command_options import Arity, OptionTable, parse_arguments


@attrs.frozen(kw_only=True)
class _Spellings:
    """A program's options: the table to read them with, and the spelling each one has."""

    table: OptionTable
    same: Mapping[str, tuple[str, ...]]  # an option's name → the names it stands for


def _spellings(
    short: str, long: str, *, same: Mapping[str, str] | None = None, values: str = ""
) -> _Spellings:
    """A table from option letters and long names (``values``: letters and names taking a
    value), with ``same`` mapping a spelling to the spelling(s) it stands for."""
    taking = set(values.split())
    table = OptionTable(
        short={letter: Arity.REQUIRED if letter in taking else Arity.NONE for letter in short},
        long={name: Arity.REQUIRED if name in taking else Arity.NONE for name in long.split()},
    )
    return _Spellings(
        table=table, same={name: tuple(to.split()) for name, to in (same or {}).items()}
    )


_TREE_OPTIONS = {"-R": "-r", "--recursive": "-r", "--force": "-f", "--verbose": "-v",
                 "--interactive": "-i"}  # fmt: skip

_PROGRAMS: Mapping[tuple[str, ...], _Spellings] = {
    ("rm",): _spellings(
        "rRfivdI",
        "recursive force interactive verbose dir one-file-system no-preserve-root "
        "preserve-root help version",
        same={**_TREE_OPTIONS, "--dir": "-d"},
    ),
    ("cp",): _spellings(
        "rRfivnauxlsLPHdpbt",
        "recursive force interactive verbose no-clobber archive update one-file-system link "
        "symbolic-link dereference no-dereference parents backup target-directory "
        "no-target-directory remove-destination strip-trailing-slashes attributes-only "
        "help version",
        same={
            **_TREE_OPTIONS,
            "--no-clobber": "-n",
            "--archive": "-a",
            "--update": "-u",
            "--link": "-l",
            "--symbolic-link": "-s",
            "--target-directory": "-t",
        },
        values="t target-directory",
    ),
    ("mv",): _spellings(
        "finuvbt",
        "force interactive no-clobber update verbose backup target-directory "
        "no-target-directory strip-trailing-slashes help version",
        same={
            "--force": "-f",
            "--interactive": "-i",
            "--no-clobber": "-n",
            "--update": "-u",
            "--verbose": "-v",
            "--target-directory": "-t",
        },
        values="t target-directory",
    ),
    **{
        (program,): _spellings(
            "RcfvHLP",
            "recursive changes silent quiet verbose dereference no-dereference "
            "preserve-root no-preserve-root help version",
            same={
                "--recursive": "-R",
                "--changes": "-c",
                "--silent": "-f",
                "--quiet": "-f",
                "--verbose": "-v",
                "--dereference": "-L",
            },
        )
        for program in ("chmod", "chown", "chgrp")
    },
    ("ln",): _spellings(
        "sfnivrbLPT",
        "symbolic force no-dereference interactive verbose relative backup logical physical "
        "help version",
        same={
            "--symbolic": "-s",
            "--force": "-f",
            "--no-dereference": "-n",
            "--interactive": "-i",
            "--verbose": "-v",
            "--relative": "-r",
        },
    ),
    ("git", "push"): _spellings(
        "fdnquv",
        "force force-with-lease force-if-includes delete dry-run quiet verbose set-upstream "
        "all mirror tags follow-tags no-verify verify atomic prune porcelain",
        same={
            "-f": "--force",
            "-d": "--delete",
            "-n": "--dry-run",
            "-q": "--quiet",
            "-u": "--set-upstream",
            "-v": "--verbose",
        },
    ),
    ("git", "clean"): _spellings(
        "fdxXniq",
        "force dry-run interactive quiet",
        same={"--force": "-f", "--dry-run": "-n", "--interactive": "-i", "--quiet": "-q"},
    ),
    ("git", "checkout"): _spellings(
        "fqmp", "force quiet merge patch", same={"--force": "-f", "--quiet": "-q"}
    ),
    ("git", "branch"): _spellings(
        "dDmMfcCqv",
        "delete force move copy quiet verbose",
        same={
            "-D": "--delete --force",
            "-d": "--delete",
            "-f": "--force",
            "-m": "--move",
            "-M": "--move --force",
            "-c": "--copy",
            "-C": "--copy --force",
        },
    ),
    ("git", "reset"): _spellings("qp", "hard soft mixed merge keep quiet patch"),
    ("git", "stash"): _spellings("qp", "quiet patch keep-index include-untracked all"),
}


@attrs.frozen
class _Read:
    """Words read as command words, options in one spelling, and operands."""

    command: tuple[str, ...]
    options: frozenset[str]
    operands: tuple[str, ...]


def matches_spelled_otherwise(content: str, argv: Sequence[str]) -> bool:
    """Whether a deny or ask rule's Bash content matches ``argv`` once both write their
    options alike (only prefix rules, trailing-`` *`` rules and exact rules; a rule with other
    wildcards, quotes or backslashes is left to the text match)."""
    read = _rule(content)
    if read is None or not argv:
        return False
    prefix, rule = read
    if tuple(argv[: len(rule.command)]) != rule.command:
        return False
    command = _read(argv, len(rule.command))
    if prefix:
        return rule.options <= command.options and (
            command.operands[: len(rule.operands)] == rule.operands
        )
    return rule.options == command.options and rule.operands == command.operands


def may_match_computed(content: str, argv: Sequence[str], computed: Sequence[int]) -> bool:
    """Whether ``argv``, whose words at the indexes ``computed`` the shell computes when it
    runs (``rm $opts x``), may become a command the rule matches: the program is the rule's,
    and a computed word may hold any option or operand."""
    words = content.strip().removesuffix(":*").split()
    return bool(words and argv) and argv[0] == words[0] and any(i > 0 for i in computed)


@functools.lru_cache(maxsize=1024)
def _rule(content: str) -> tuple[bool, _Read] | None:
    """A rule's content read once: whether it is a prefix rule, and its words; None for a
    rule left to the text match."""
    body = content.strip()
    prefix = body.endswith(":*")
    if prefix:
        body = body[:-2]
    elif body.endswith(" *"):
        prefix, body = True, body[:-2]
    if not body or any(char in body for char in "*\\'\""):
        return None
    words = body.split()
    return prefix, _read(words, len(_command_words(words)))


def _command_words(words: Sequence[str]) -> tuple[str, ...]:
    """The program, and the subcommand when the program has tables per subcommand."""
    if len(words) > 1 and (words[0], words[1]) in _PROGRAMS:
        return (words[0], words[1])
    return tuple(words[:1])


def _read(words: Sequence[str], start: int) -> _Read:
    """``words`` after their ``start`` command words, options in one spelling."""
    command = tuple(words[:start])
    args = words[start:]
    spellings = _PROGRAMS.get(command)
    if spellings is None:
        return _read_any(command, args, {})
    parsed = parse_arguments(args, spellings.table)
    if parsed.problem is not None:
        return _read_any(command, args, spellings.same)
    options = frozenset(
        name if option.value is None else f"{name}={option.value}"
        for option in parsed.options
        for name in spellings.same.get(option.name, (option.name,))
    )
    return _Read(command, options, tuple(parsed.operands))


def _read_any(
    command: tuple[str, ...], args: Sequence[str], same: Mapping[str, tuple[str, ...]]
) -> _Read:
    """Options read without a full table (none, or one that does not know a word): clusters
    split, long options as written, every other word an operand; ``same`` still applies."""
    names: list[str] = []
    operands: list[str] = []
    for index, word in enumerate(args):
        if word == "--":
            operands.extend(args[index + 1 :])
            break
        if word.startswith("--"):
            names.append(word)
        elif word.startswith("-") and len(word) > 1:
            names.extend(f"-{letter}" for letter in word[1:])
        else:
            operands.append(word)
    options = frozenset(name for written in names for name in same.get(written, (written,)))
    return _Read(command, options, tuple(operands))
