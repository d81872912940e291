"""A disguised command is never hidden from the analysis: it is found as a part, or it asks."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from fsm_agent.core.read_only_commands import judge_read_only
from fsm_agent.core.shell_commands import analyse_command
from fsm_agent.testing.shell_disguises import shell_disguises, shell_words

PROGRAMS = ("rm", "curl", "sort", "git", "chmod", "python3", "mv")
WRITERS = ("rm", "curl", "chmod", "python3", "mv", "dd")


@st.composite
def disguised(draw: st.DrawFn, *, change_options: bool = False) -> tuple[tuple[str, ...], str]:
    """A plain argv and one disguise of it."""
    argv = (draw(st.sampled_from(PROGRAMS)), *draw(st.lists(shell_words(), max_size=3)))
    return argv, draw(shell_disguises(argv, change_options=change_options))


@settings(max_examples=300)
@given(disguised())
@example((("rm",), "echo $( ( 'rm' ) )"))  # not `$((`, which Bash reads as arithmetic
@example((("rm", "-rf", "x"), "ls; (( 'a[$(rm -rf x)]' ))"))
@example((("rm", "x"), "test -v 'a[$(rm x)]'"))
def test_a_disguise_yields_the_plain_argv_or_a_problem(case: tuple[tuple[str, ...], str]) -> None:
    """Quoting, wrappers, groups and substitutions never hide the command's argv."""
    argv, command = case
    analysis = analyse_command(command)
    found = [part.argv for part in analysis.parts]
    assert analysis.problem is not None or argv in found, (command, found)


@settings(max_examples=100)
@given(disguised(change_options=True))
@example((("rm", "-rf"), "!  (( 'a[$(rm -rf)]' ))"))
def test_a_disguise_with_changed_options_still_shows_the_program(
    case: tuple[tuple[str, ...], str],
) -> None:
    """Abbreviated options and ``--`` leave the program visible (or the analysis asks)."""
    argv, command = case
    analysis = analyse_command(command)
    programs = [part.argv[:1] for part in analysis.parts]
    assert analysis.problem is not None or argv[:1] in programs, (command, programs)


@settings(max_examples=100)
@given(
    st.tuples(st.sampled_from(WRITERS), st.lists(shell_words(), max_size=3)).flatmap(
        lambda plain: shell_disguises((plain[0], *plain[1]), change_options=True)
    )
)
@example("ls; (( 'a[$(rm -rf x)]' ))")
@example("[ -v 'a[$(rm x)]' ]")
@example("printf -v 'a[`curl x`]' y")
@example("cat <<-E\n\t$(rm -rf x)\n\tE")
def test_a_disguised_writer_is_never_judged_read_only(command: str) -> None:
    """However it is dressed up, a program off the allowlist is not judged read-only."""
    verdict = judge_read_only(
        analyse_command(command), cwd="/work", readable_roots=("/",), home="/home/u"
    )
    assert not verdict.read_only, command


@settings(max_examples=100)
@given(
    st.integers(1, len("output")).flatmap(
        lambda size: shell_disguises(("sort", f"--{'output'[:size]}=out", "in"))
    )
)
def test_sort_output_is_never_read_only_however_spelled(command: str) -> None:
    """``sort --o=out`` ... ``sort --output=out`` in any disguise is refused."""
    verdict = judge_read_only(
        analyse_command(command), cwd="/work", readable_roots=("/",), home="/home/u"
    )
    assert not verdict.read_only, command
