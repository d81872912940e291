"""Reading a program's options the way GNU ``getopt_long`` reads them.

Used twice: to find the command a wrapper such as ``env`` or ``timeout`` runs, and to check that
every option of a command is on the read-only allowlist. Both must see the options the program
itself would see, so the rules are getopt's:

* ``--`` ends the options; a lone ``-`` is an operand;
* a long option may be written as any unambiguous prefix of its name (``--outp`` is
  ``--output``); an exact name wins over a longer one it prefixes; an ambiguous prefix is an
  error; ``--name=value`` gives a value inline, a required value may also be the next word;
* short options cluster (``-rf`` is ``-r -f``); a letter taking a value consumes the rest of the
  cluster, or the next word when the cluster ends there;
* options may follow operands (GNU permutes), unless the table says the program stops at its
  first operand (``env``, ``xargs``, ``sudo``: what follows belongs to the command they run).

A loose table (:func:`loose_table`) reads a program whose options we do not all list, looking
for a few of them: an option it does not know is taken as written, a letter taking no value,
a long option only an inline one (``--name=value``), and a missing value is no error.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence

import attrs


class Arity(enum.Enum):
    """Whether an option takes a value."""

    NONE = "none"
    REQUIRED = "required"
    OPTIONAL = "optional"  # only inline: ``-xVALUE`` or ``--name=VALUE``


@attrs.frozen(kw_only=True)
class OptionTable:
    """The options a program knows.

    Attributes:
        short: option letters and their arity (``{"n": Arity.REQUIRED}`` for ``-n NUM``).
        long: long option names without the dashes, and their arity.
        stops_at_operand: options end at the first operand (getopt's ``+`` mode).
        loose: options not in the table are read as written instead of refused (see above).
    """

    short: Mapping[str, Arity] = attrs.field(factory=dict)
    long: Mapping[str, Arity] = attrs.field(factory=dict)
    stops_at_operand: bool = False
    loose: bool = False


@attrs.frozen(kw_only=True)
class Option:
    """One option as the program reads it.

    Attributes:
        name: the canonical spelling: ``-r`` or ``--recursive`` (abbreviations resolved).
        written: how the command wrote it (``--recur``, or ``-r`` inside ``-rf``).
        value: the value it consumed, if any.
    """

    name: str
    written: str
    value: str | None = None


@attrs.frozen(kw_only=True)
class ParsedArguments:
    """A command's arguments split into options and operands.

    Attributes:
        options: the options, in order.
        operands: the other words, in order.
        rest_index: for a table that stops at its first operand, the index in the given
            arguments where that operand stands (``len(args)`` when there is none).
        problem: why the arguments could not be read (unknown option, ambiguous prefix, missing
            value); ``None`` when they could.
    """

    options: tuple[Option, ...] = ()
    operands: tuple[str, ...] = ()
    rest_index: int = 0
    problem: str | None = None

    def values(self, *names: str) -> list[str]:
        """The values given to the options ``names`` (canonical spellings), in order."""
        return [o.value for o in self.options if o.name in names and o.value is not None]


def resolve_long(name: str, table: OptionTable) -> tuple[str | None, str]:
    """The long option ``--name`` stands for, as getopt_long decides.

    Returns:
        ``(canonical name, "")`` on success, else ``(None, why)``.
    """
    if name in table.long:
        return name, ""
    matches = sorted(known for known in table.long if known.startswith(name))
    if len(matches) == 1:
        return matches[0], ""
    if matches:
        listed = ", ".join(f"--{m}" for m in matches)
        return None, f"--{name} is ambiguous ({listed})"
    return None, f"--{name} is not an option we know"


def abbreviates_any(name: str, names: Iterable[str]) -> bool:
    """Whether ``--name`` is one of ``names`` or a start of one, as getopt_long takes it when
    the start is unambiguous. Counting an ambiguous start too (which the program refuses)
    only makes a check catch more: for options whose value is a command line."""
    return bool(name) and any(known.startswith(name) for known in names)


def parse_arguments(args: Sequence[str], table: OptionTable) -> ParsedArguments:
    """Split ``args`` (the words after the program name) by ``table``."""
    options: list[Option] = []
    operands: list[str] = []
    index = 0
    while index < len(args):
        word = args[index]
        index += 1
        if word == "--":
            operands.extend(args[index:])
            return ParsedArguments(
                options=tuple(options), operands=tuple(operands), rest_index=index
            )
        if word.startswith("--"):
            name, has_value, value = word[2:].partition("=")
            canonical, why = resolve_long(name, table)
            if canonical is None and table.loose:
                canonical, arity = name, Arity.OPTIONAL
            elif canonical is None:
                return ParsedArguments(problem=why)
            else:
                arity = table.long[canonical]
            if has_value and arity is Arity.NONE:
                return ParsedArguments(problem=f"--{canonical} takes no value")
            if not has_value and arity is Arity.REQUIRED and index < len(args):
                value, has_value = args[index], "="
                index += 1
            elif not has_value and arity is Arity.REQUIRED and not table.loose:
                return ParsedArguments(problem=f"--{canonical} needs a value")
            options.append(
                Option(name=f"--{canonical}", written=word, value=value if has_value else None)
            )
        elif word.startswith("-") and word != "-":
            problem, index = _read_cluster(word, args, index, table, options)
            if problem is not None:
                return ParsedArguments(problem=problem)
        elif table.stops_at_operand:
            return ParsedArguments(
                options=tuple(options), operands=tuple(args[index - 1 :]), rest_index=index - 1
            )
        else:
            operands.append(word)
    return ParsedArguments(options=tuple(options), operands=tuple(operands), rest_index=len(args))


def _read_cluster(
    word: str, args: Sequence[str], index: int, table: OptionTable, options: list[Option]
) -> tuple[str | None, int]:
    """Read the short options of ``word`` (``-rfn5``); returns (problem, next index)."""
    position = 1
    while position < len(word):
        letter = word[position]
        position += 1
        arity = table.short.get(letter, Arity.NONE if table.loose else None)
        if arity is None:
            return f"-{letter} is not an option we know", index
        value: str | None = None
        if arity is not Arity.NONE and position < len(word):
            value, position = word[position:], len(word)
        elif arity is Arity.REQUIRED and index < len(args):
            value = args[index]
            index += 1
        elif arity is Arity.REQUIRED and not table.loose:
            return f"-{letter} needs a value", index
        options.append(Option(name=f"-{letter}", written=f"-{letter}", value=value))
    return None, index


def option_table(short: str = "", long: str = "", *, short_values: str = "", long_values: str = "",
                 long_optional: str = "", short_optional: str = "") -> OptionTable:  # fmt: skip
    """A table from option letters and long names separated by spaces (values: taking a
    value; optional: taking one only inline), stopping at the first operand: the shape of a
    program whose first operand starts what it runs or reads (``env``, ``tar``, ``git``)."""
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


def loose_table(
    short_values: str = "", short_optional: str = "", *, long_values: str = ""
) -> OptionTable:
    """A loose table (options anywhere, any option accepted) knowing only which letters and
    long names (separated by spaces) take a value (or, for ``short_optional``, one only
    inline): enough to find a program's few options that matter among all the others."""
    shorts = dict.fromkeys(short_values, Arity.REQUIRED) | dict.fromkeys(
        short_optional, Arity.OPTIONAL
    )
    longs = dict.fromkeys(long_values.split(), Arity.REQUIRED)
    return OptionTable(short=shorts, long=longs, loose=True)
