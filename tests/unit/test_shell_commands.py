"""Shell command analysis: every simple command found, wrappers seen through, problems named."""

from __future__ import annotations

import pytest

from fsm_agent.core.shell_commands import (
    MAX_PARTS,
    CommandAnalysis,
    Redirect,
    analyse_command,
)


def argvs(command: str) -> list[tuple[str, ...]]:
    """The argv of every part, in order, for a command that must analyse cleanly."""
    analysis = analyse_command(command)
    assert analysis.problem is None, analysis.problem
    return [part.argv for part in analysis.parts]


def part_running(analysis: CommandAnalysis, program: str) -> tuple[str, ...]:
    """The wrappers of the part whose program is ``program``."""
    return next(part.wrappers for part in analysis.parts if part.argv[:1] == (program,))


@pytest.mark.parametrize(
    "command",
    [
        "rm -rf x",
        "\\rm -rf x",
        "'r'm -rf x",
        '"rm" -rf x',
        "r''m -rf x",
        "rm   -rf\t x",
        "rm -r\\f x",
        "rm '-rf' \"x\"",
        "rm $'-rf' x",
        "rm -rf \\\nx",
    ],
)
def test_quoting_and_escapes_normalise_to_the_same_argv(command: str) -> None:
    """Quotes, backslashes and extra blanks give the argv the program receives."""
    assert argvs(command) == [("rm", "-rf", "x")]


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("ls; rm x", [("ls",), ("rm", "x")]),
        ("ls && rm x || echo no", [("ls",), ("rm", "x"), ("echo", "no")]),
        ("ls | rm x", [("ls",), ("rm", "x")]),
        ("(rm x)", [("rm", "x")]),
        ("{ rm x; }", [("rm", "x")]),
        ("! rm x &", [("rm", "x")]),
        ("if true; then rm x; fi", [("true",), ("rm", "x")]),
        ("while rm x; do :; done", [("rm", "x"), (":",)]),
        ("case a in a) rm x;; esac", [("rm", "x")]),
        ("f() { rm x; }; f", [("rm", "x"), ("f",)]),
    ],
)
def test_lists_pipes_groups_and_control_flow_are_split(
    command: str, expected: list[tuple[str, ...]]
) -> None:
    """Every simple command of a compound command is a part."""
    assert argvs(command) == expected


@pytest.mark.parametrize(
    "command",
    [
        "echo $(rm x)",
        "echo `rm x`",
        'echo "$(rm x)"',
        "cat <(rm x)",
        "tee >(rm x)",
        "echo $((1 + $(rm x)))",
        "y=$(rm x)",
        "ls > $(rm x)",
        "cat <<EOF\n$(rm x)\nEOF",
        "echo `\\r\\m x`",
        "echo `\\\\r\\\\m x`",
        'echo "`\\r\\m x`"',
        "echo `echo \\`rm x\\``",
    ],
)
def test_substitutions_are_parts_wherever_they_stand(command: str) -> None:
    """Command and process substitutions run, so what they run is a part."""
    assert ("rm", "x") in argvs(command)


def test_a_quoted_heredoc_body_is_data() -> None:
    """A heredoc with a quoted delimiter runs nothing of its body."""
    assert argvs("cat <<'EOF'\n$(rm x)\nEOF") == [("cat",)]


@pytest.mark.parametrize(
    ("command", "inner", "wrappers"),
    [
        ("env rm x", ("rm", "x"), ("env",)),
        ("env -i A=1 B=2 rm x", ("rm", "x"), ("env",)),
        ("/usr/bin/env -u HOME rm x", ("rm", "x"), ("env",)),
        ("bash -c 'rm x'", ("rm", "x"), ("bash -c",)),
        ("sh -ec 'cd /; rm x'", ("rm", "x"), ("sh -c",)),
        ("zsh -c 'rm x'", ("rm", "x"), ("zsh -c",)),
        ("dash -c 'rm x'", ("rm", "x"), ("dash -c",)),
        ("eval 'rm  x'", ("rm", "x"), ("eval",)),
        ("eval rm x", ("rm", "x"), ("eval",)),
        ("ls | xargs rm", ("rm",), ("xargs",)),
        ("ls | xargs -0 -n 1 -I{} rm {}", ("rm", "{}"), ("xargs",)),
        ("command rm x", ("rm", "x"), ("command",)),
        ("builtin eval 'rm x'", ("rm", "x"), ("builtin", "eval")),
        ("exec rm x", ("rm", "x"), ("exec",)),
        ("nohup rm x", ("rm", "x"), ("nohup",)),
        ("nice -n 5 rm x", ("rm", "x"), ("nice",)),
        ("timeout -s KILL 5 rm x", ("rm", "x"), ("timeout",)),
        ("time rm x", ("rm", "x"), ("time",)),
        ("stdbuf -oL rm x", ("rm", "x"), ("stdbuf",)),
        ("sudo -u root rm x", ("rm", "x"), ("sudo",)),
        ("doas -u root rm x", ("rm", "x"), ("doas",)),
        ("find . -exec rm {} ;", ("rm", "{}"), ("find -exec",)),
        ("watch -n 1 rm x", ("rm", "x"), ("watch",)),
        ("watch -d 'rm x'", ("rm", "x"), ("watch",)),
        ("watch -x rm x", ("rm", "x"), ("watch",)),
        ("setsid -f rm x", ("rm", "x"), ("setsid",)),
        ("ionice -c 3 rm x", ("rm", "x"), ("ionice",)),
        ("taskset 0x1 rm x", ("rm", "x"), ("taskset",)),
        ("taskset -c 0,1 rm x", ("rm", "x"), ("taskset",)),
        ("sudo env bash -c 'timeout 3 rm x'", ("rm", "x"), ("sudo", "env", "bash -c", "timeout")),
    ],
)
def test_wrappers_are_seen_through(
    command: str, inner: tuple[str, ...], wrappers: tuple[str, ...]
) -> None:
    """The command a wrapper runs is a part, carrying the wrappers around it."""
    analysis = analyse_command(command)
    assert analysis.problem is None, analysis.problem
    found = [part for part in analysis.parts if part.argv == inner]
    assert [part.wrappers for part in found] == [wrappers]


def test_the_wrapper_itself_is_a_part_too() -> None:
    """``sudo rm x`` lists sudo's own invocation before the command it runs."""
    assert argvs("sudo rm x") == [("sudo", "rm", "x"), ("rm", "x")]


def test_env_prefixes_are_assignments() -> None:
    """``VAR=x cmd`` is cmd with the assignment stripped from argv."""
    (part,) = analyse_command("LC_ALL=C A='b c' sort x").parts
    assert part.argv == ("sort", "x")
    assert part.assignments == ("LC_ALL=C", "A='b c'")
    assert part.text == "sort x"


def test_env_assignments_go_with_the_wrapped_command() -> None:
    """``env A=1 cmd`` gives cmd the assignment."""
    inner = analyse_command("env A=1 cmd").parts[-1]
    assert (inner.argv, inner.assignments) == (("cmd",), ("A=1",))


def test_a_bare_assignment_is_a_part_without_argv() -> None:
    """``PATH=.`` changes what later parts run, so it is a part of its own."""
    parts = analyse_command("PATH=.; ls").parts
    assert [(p.argv, p.assignments) for p in parts] == [((), ("PATH=.",)), (("ls",), ())]


def test_redirects_are_read_with_their_descriptors() -> None:
    """Each redirect keeps its operator (with descriptor) and its target."""
    (part,) = analyse_command("cmd 2>&1 >/dev/null <in 2>>log &>all").parts
    assert part.redirects == (
        Redirect(operator="2>&", target="1"),
        Redirect(operator=">", target="/dev/null"),
        Redirect(operator="<", target="in"),
        Redirect(operator="2>>", target="log"),
        Redirect(operator="&>", target="all"),
    )


def test_redirects_of_a_group_apply_to_every_part_inside() -> None:
    """``{ a; b; } > f`` makes both a and b write to f."""
    parts = analyse_command("{ a; b; } > f").parts
    assert [p.redirects for p in parts] == [(Redirect(operator=">", target="f"),)] * 2


def test_a_heredoc_to_a_file_shows_both_redirects() -> None:
    """``cat <<EOF > f`` has the heredoc and the file redirect."""
    (part,) = analyse_command("cat <<EOF > f\nhi\nEOF").parts
    assert part.redirects == (
        Redirect(operator="<<", target="EOF"),
        Redirect(operator=">", target="f"),
    )


def test_computed_words_are_marked() -> None:
    """Variables, substitutions, globs and brace expansion are listed in ``expanded``."""
    (part,) = analyse_command("echo $HOME \"$x/y\" *.py {a,b} '*' plain ~/x").parts
    assert part.argv == ("echo", "$HOME", "$x/y", "*.py", "{a,b}", "*", "plain", "~/x")
    assert part.expanded == (1, 2, 3, 4)


def test_a_computed_redirect_target_is_marked() -> None:
    """``< $HOME/x`` reads a file the shell picks."""
    (part,) = analyse_command("cat < $HOME/x").parts
    assert part.redirects == (Redirect(operator="<", target="$HOME/x", expanded=True),)


@pytest.mark.parametrize(
    ("command", "problem"),
    [
        ("echo 'unterminated", "could not read"),
        ("cat <> f", "could not read"),
        ("$cmd x", "computed by the shell"),
        ("$(echo rm) x", "computed by the shell"),
        ('bash -c "$x"', "computes"),
        ("eval $x", "computes"),
        ("env --i rm x", "ambiguous"),
        ("env -S 'rm x'", "not analysed"),
        ("timeout --bogus 5 rm x", "not an option we know"),
        ("env " * 12 + "rm x", "nested deeper"),
        ("echo rm x | bash", "reading commands from its input"),
        ("bash -s < script", "reading commands from its input"),
        ("test -v 'a[$(rm x)]'", "computes the subscript"),
        ("(( 'a[$(rm x)]' ))", "computes the subscript"),
        ("printf -v 'a[`rm x`]' y", "computes the subscript"),
        ("declare 'a[$(rm x)]=1'", "computes the subscript"),
        ("! (( 'a[$(rm x)]' ))", "misread the arithmetic command"),
        ("cat <<-E\n\t$(rm x)\n\tE", "did not read the heredoc body's expansions"),
        ("; ".join(["ls"] * (MAX_PARTS + 1)), f"more than {MAX_PARTS}"),
    ],
)
def test_what_cannot_be_analysed_sets_a_problem(command: str, problem: str) -> None:
    """Anything the analysis cannot follow is named in ``problem``."""
    found = analyse_command(command).problem
    assert found is not None
    assert problem in found


def test_a_parse_error_still_lists_the_parts_it_could_read() -> None:
    """A deny rule can still match what was readable before the error."""
    analysis = analyse_command("rm x; echo 'oops")
    assert analysis.problem is not None
    assert analysis.parts[0].argv == ("rm", "x")


def test_exactly_the_limit_of_parts_is_fine() -> None:
    """50 parts are analysed; the limit is on more than 50."""
    assert analyse_command("; ".join(["ls"] * MAX_PARTS)).problem is None


@pytest.mark.parametrize("command", ["", "   ", "\x00", "(", "))", "`", "<<", "$((", "\\"])
def test_garbage_never_raises(command: str) -> None:
    """Odd input gives an analysis (with or without a problem), never an exception."""
    assert isinstance(analyse_command(command), CommandAnalysis)


def test_a_shell_without_dash_c_is_not_a_wrapper() -> None:
    """``bash script.sh`` runs a file: only the shell itself is a part."""
    assert argvs("bash script.sh") == [("bash", "script.sh")]


def test_xargs_without_a_command_runs_echo() -> None:
    """``xargs`` alone runs echo, and says so."""
    assert part_running(analyse_command("ls | xargs"), "echo") == ("xargs",)


@pytest.mark.parametrize(
    ("command", "fed"),
    [
        ("xargs tar -xf a.tar", {"tar -xf a.tar": (3,), "xargs tar -xf a.tar": ()}),
        ("xargs", {"echo": (1,)}),
        ("xargs -I% cp % %.bak", {"cp % %.bak": (1, 2)}),
        ("find . -exec grep -n x {} +", {"grep -n x {}": (3,)}),
        ("find . -exec mv {} {}.old \\;", {"mv {} {}.old": (1, 2)}),
        ("xargs sudo -u u tar -x", {"sudo -u u tar -x": (5,), "tar -x": (2,)}),
        ("xargs sh -c 'tar -x'", {"sh -c tar -x": (3,), "tar -x": ()}),
        ("find . -exec git rm {} +", {"git rm {}": (2,)}),
        ("tar -xf a.tar", {"tar -xf a.tar": ()}),
    ],
)
def test_words_a_wrapper_fills_in_are_marked(command: str, fed: dict[str, tuple[int, ...]]) -> None:
    """``fed``: the words xargs or find fill in, ``len(argv)`` for those xargs appends; a
    wrapper in between passes them on to its command (``xargs sudo tar``)."""
    parts = {part.text: part.fed for part in analyse_command(command).parts}
    assert {text: parts[text] for text in fed} == fed


@pytest.mark.parametrize(
    ("command", "writers"),
    [
        ("a && b > f", ["b"]),
        ("a | b > f", ["b"]),
        ("a > f | b", ["a"]),
        ("a || b | c > f", ["c"]),
        ("a && (b; c) > f", ["b", "c"]),
    ],
)
def test_a_trailing_redirect_binds_to_the_last_command_as_in_bash(
    command: str, writers: list[str]
) -> None:
    """``a && b > f`` redirects b only, although the parser hangs it on the whole list."""
    parts = analyse_command(command).parts
    assert [p.argv[0] for p in parts if p.redirects] == writers


def test_an_arithmetic_command_is_a_computed_part() -> None:
    """``(( ... ))`` is a part whose expression the shell computes, so it is never passed over."""
    parts = analyse_command("ls; (( x += 1 ))").parts
    assert parts[1].argv == ("((", "x += 1", "))")
    assert parts[1].expanded == (1,)
