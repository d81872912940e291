"""Options read the way GNU getopt_long reads them: abbreviations, clusters, values, ``--``."""

from __future__ import annotations

from fsm_agent.core.command_options import (
    Arity,
    Option,
    OptionTable,
    loose_table,
    parse_arguments,
    resolve_long,
)

SORT = OptionTable(
    short={"r": Arity.NONE, "n": Arity.NONE, "o": Arity.REQUIRED, "k": Arity.REQUIRED},
    long={
        "reverse": Arity.NONE,
        "output": Arity.REQUIRED,
        "numeric-sort": Arity.NONE,
        "key": Arity.REQUIRED,
        "color": Arity.OPTIONAL,
        "colour": Arity.OPTIONAL,
    },
)


def names(args: list[str], table: OptionTable = SORT) -> list[tuple[str, str | None]]:
    """(canonical name, value) of each option read from ``args``."""
    parsed = parse_arguments(args, table)
    assert parsed.problem is None, parsed.problem
    return [(option.name, option.value) for option in parsed.options]


def test_an_unambiguous_prefix_is_the_long_option() -> None:
    """``--outp=f`` and ``--o f`` are ``--output``."""
    assert names(["--outp=f"]) == [("--output", "f")]
    assert names(["--o", "f"]) == [("--output", "f")]


def test_an_ambiguous_prefix_is_refused_naming_the_candidates() -> None:
    """``--col`` could be --color or --colour: getopt refuses it, and so do we."""
    problem = parse_arguments(["--col"], SORT).problem
    assert problem == "--col is ambiguous (--color, --colour)"


def test_an_exact_name_wins_over_a_longer_one_it_prefixes() -> None:
    """``--color`` is --color, although it is also a prefix of --colour."""
    assert resolve_long("color", SORT) == ("color", "")


def test_an_unknown_long_option_is_named() -> None:
    """A long option the table does not know is a problem."""
    assert parse_arguments(["--frobnicate"], SORT).problem == (
        "--frobnicate is not an option we know"
    )


def test_short_options_cluster() -> None:
    """``-rn`` is -r and -n."""
    assert names(["-rn", "x"]) == [("-r", None), ("-n", None)]


def test_a_letter_taking_a_value_consumes_the_rest_of_the_cluster() -> None:
    """``-rofile`` is -r and -o with the value ``file``."""
    assert names(["-rofile"]) == [("-r", None), ("-o", "file")]


def test_a_letter_taking_a_value_at_the_end_consumes_the_next_word() -> None:
    """``-ro file`` is -r and -o with the value ``file``; ``file`` is not an operand."""
    parsed = parse_arguments(["-ro", "file", "in"], SORT)
    assert parsed.options[-1] == Option(name="-o", written="-o", value="file")
    assert parsed.operands == ("in",)


def test_a_required_value_missing_is_a_problem() -> None:
    """``-o`` at the end has no value."""
    assert parse_arguments(["-o"], SORT).problem == "-o needs a value"
    assert parse_arguments(["--output"], SORT).problem == "--output needs a value"


def test_an_optional_value_is_only_taken_inline() -> None:
    """``--color x`` leaves x as an operand; ``--color=always`` has a value."""
    parsed = parse_arguments(["--color", "x"], SORT)
    assert parsed.options == (Option(name="--color", written="--color"),)
    assert parsed.operands == ("x",)
    assert names(["--color=always"]) == [("--color", "always")]


def test_a_value_given_to_an_option_without_one_is_a_problem() -> None:
    """``--reverse=yes`` is refused, as getopt does."""
    assert parse_arguments(["--reverse=yes"], SORT).problem == "--reverse takes no value"


def test_double_dash_ends_the_options() -> None:
    """After ``--`` every word is an operand, however it looks."""
    parsed = parse_arguments(["-r", "--", "-o", "--output=x"], SORT)
    assert [o.name for o in parsed.options] == ["-r"]
    assert parsed.operands == ("-o", "--output=x")


def test_options_after_operands_are_still_options() -> None:
    """GNU permutes: ``sort in -o out`` writes out."""
    assert names(["in", "-o", "out"]) == [("-o", "out")]


def test_a_table_that_stops_at_its_first_operand_leaves_the_rest() -> None:
    """For a wrapper, the first operand starts the command it runs."""
    table = OptionTable(short={"i": Arity.NONE}, stops_at_operand=True)
    parsed = parse_arguments(["-i", "rm", "-rf", "x"], table)
    assert parsed.rest_index == 1
    assert parsed.operands == ("rm", "-rf", "x")


def test_a_lone_dash_is_an_operand() -> None:
    """``-`` means standard input, not an option."""
    assert parse_arguments(["-"], SORT).operands == ("-",)


def test_a_loose_table_takes_options_it_does_not_know_as_written() -> None:
    """Unknown letters take no value, unknown long options only an inline one; the letters it
    knows take theirs; operands may stand anywhere."""
    parsed = parse_arguments(["-xc", "SQL", "db", "--frob", "--set=a", "-v1"], loose_table("cv"))
    assert parsed.problem is None
    written = [(option.name, option.value) for option in parsed.options]
    assert written == [("-x", None), ("-c", "SQL"), ("--frob", None), ("--set", "a"), ("-v", "1")]
    assert parsed.operands == ("db",)


def test_a_loose_table_reads_a_missing_value_as_none() -> None:
    """``psql -c`` at the end: the option is there, without a value, and no problem."""
    parsed = parse_arguments(["x", "-c"], loose_table("c"))
    assert parsed.problem is None
    assert [(option.name, option.value) for option in parsed.options] == [("-c", None)]


def test_a_loose_table_takes_an_optional_value_only_inline() -> None:
    """``m4 -d -Dx=y``: ``-d`` takes no word after it, so ``-D`` is read."""
    parsed = parse_arguments(["-d", "-Dx=y", "-dq"], loose_table("D", "d"))
    written = [(option.name, option.value) for option in parsed.options]
    assert written == [("-d", None), ("-D", "x=y"), ("-d", "q")]
