"""Hypothesis strategies that hide a shell command inside other shell text.

``shell_disguises(argv)`` draws command lines that, run by Bash, run ``argv`` (among harmless
neighbours): words quoted in every style (single, double, ``$'\\x..'``, backslashes, split
halves such as ``'r'm``), odd blanks, ``VAR=x`` prefixes, wrappers (``env``, ``sudo``,
``timeout 5``, ``nice``, ``xargs``, ``bash -c '...'``, ``eval '...'``, ...), brace groups,
subshells, ``$(...)``, backquotes, process substitution, ``if``, array subscripts
(``test -v 'a[$(...)]'``, ``(( ... ))``), and ``;``/``&&``/``||``/pipes.
With ``change_options=True`` long options are also abbreviated (``--outp`` for ``--output``)
and ``--`` may end the options: the command still means the same to a GNU program, but its
argv differs.

Use them to check that a permission rule or a read-only judgement cannot be walked around::

    @given(shell_disguises(("rm", "-rf", "build")))
    def test_rm_is_always_seen(command):
        analysis = analyse_command(command)
        assert analysis.problem or any(p.argv == ("rm", "-rf", "build") for p in analysis.parts)
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from hypothesis import strategies as st

__all__ = ["shell_disguises", "shell_words"]

_PLAIN = re.compile(r"[A-Za-z0-9_./:,+@%-]+")
_BLANKS = (" ", "  ", "\t", " \t ", " \\\n ")
_NEIGHBOURS = ("ls", "true", ":", "echo hi", "pwd")


def shell_words() -> st.SearchStrategy[str]:
    """Words worth hiding: options, paths, and text with quotes, blanks and ``$``."""
    return st.one_of(
        st.sampled_from(["-rf", "-f", "--force", "--output=x", "-o", "x", "a b", "build/", "~/x"]),
        st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\0"), max_size=6),
    )


def shell_disguises(argv: Sequence[str], *, change_options: bool = False) -> st.SearchStrategy[str]:
    """Command lines that run ``argv`` somewhere inside them.

    Args:
        argv: the command to hide; ``argv[0]`` is a program name (no ``=`` in it).
        change_options: also abbreviate long options and insert ``--`` (the argv then differs
            from ``argv`` while meaning the same to a GNU program).
    """
    if not argv:
        raise ValueError("argv must name a program")
    return _disguised(tuple(argv), change_options)


@st.composite
def _disguised(draw: st.DrawFn, argv: tuple[str, ...], change_options: bool) -> str:
    words = list(argv)
    if change_options:
        words = draw(_options_changed(words))
    text = words_as_shell(draw, words)
    simple, bare = True, True  # a simple command; one that starts with its program name
    for _ in range(draw(st.integers(0, 3))):
        layer = draw(st.sampled_from(_LAYERS))
        if layer.needs_simple and not simple:
            continue
        if layer.needs_bare and not bare:
            continue
        text = layer.apply(draw, text)
        simple, bare = layer.simple_after, layer.bare_after
    return text


def words_as_shell(draw: st.DrawFn, words: Sequence[str]) -> str:
    """``words`` as shell text, each quoted in a drawn style, joined by drawn blanks."""
    quoted = [_quote(draw, word, first=index == 0) for index, word in enumerate(words)]
    text = quoted[0]
    for word in quoted[1:]:
        text += draw(st.sampled_from(_BLANKS)) + word
    return draw(st.sampled_from(("", " ", "\t"))) + text


def _quote(draw: st.DrawFn, word: str, *, first: bool = False, split: bool = True) -> str:
    styles: list[Callable[[str], str]] = [_single, _double, _ansi_c]
    if word and "\n" not in word:
        styles.append(_backslashed)
    if _PLAIN.fullmatch(word) and not (first and "=" in word):
        styles.append(str)
    if split and len(word) > 1:
        cut = draw(st.integers(1, len(word) - 1))
        left = _quote(draw, word[:cut], split=False)
        right = _quote(draw, word[cut:], split=False)
        if not (first and "=" in left and left == word[:cut]):
            styles.append(lambda _: left + right)
    return draw(st.sampled_from(styles))(word)


def _single(word: str) -> str:
    return "'" + word.replace("'", "'\\''") + "'"


def _double(word: str) -> str:
    return '"' + re.sub(r'([$`"\\])', r"\\\1", word) + '"'


def _ansi_c(word: str) -> str:
    return "$'" + "".join(f"\\x{ord(c):02x}" if ord(c) < 128 else c for c in word) + "'"


def _backslashed(word: str) -> str:
    return "".join("\\" + c for c in word)


@st.composite
def _options_changed(draw: st.DrawFn, words: list[str]) -> list[str]:
    changed = [words[0]]
    for word in words[1:]:
        if word.startswith("--") and len(word) > 3:
            name, equals, value = word[2:].partition("=")
            changed.append(f"--{name[: draw(st.integers(1, len(name)))]}{equals}{value}")
        else:
            changed.append(word)
    if len(changed) > 1 and draw(st.booleans()):
        changed.insert(draw(st.integers(1, len(changed))), "--")
    return changed


class _Layer:
    """One way of wrapping a command's text."""

    def __init__(
        self,
        apply: Callable[[st.DrawFn, str], str],
        *,
        needs_simple: bool = False,
        needs_bare: bool = False,
        simple_after: bool = False,
        bare_after: bool = False,
    ) -> None:
        self.apply = apply
        self.needs_simple = needs_simple
        self.needs_bare = needs_bare
        self.simple_after = simple_after
        self.bare_after = bare_after

    def __repr__(self) -> str:
        return f"_Layer({self.apply.__name__})"


def _wrapper(*spellings: str, needs_bare: bool = True) -> _Layer:
    """A wrapper written before the command, in one of ``spellings``."""

    def apply(draw: st.DrawFn, text: str) -> str:
        return f"{draw(st.sampled_from(spellings))} {text}"

    apply.__name__ = f"wrapper_{spellings[0].split()[0]}"
    return _Layer(
        apply, needs_simple=True, needs_bare=needs_bare, simple_after=True, bare_after=True
    )


def _around(*shapes: str) -> _Layer:
    """The command placed inside a compound command (``{}`` marks where)."""

    def apply(draw: st.DrawFn, text: str) -> str:
        if text.startswith("("):
            text = " " + text  # `$((` would open arithmetic, not a substitution of a subshell
        return draw(st.sampled_from(shapes)).replace("{}", text)

    apply.__name__ = f"around_{shapes[0]}"
    return _Layer(apply)


def _assignment(draw: st.DrawFn, text: str) -> str:
    return f"{draw(st.sampled_from(('A=1', 'LC_ALL=C', 'X=')))} {text}"


def _shell_c(draw: st.DrawFn, text: str) -> str:
    shell = draw(st.sampled_from(("bash -c", "sh -c", "bash -ec", "zsh -c", "dash -c", "eval")))
    quote = draw(st.sampled_from((_single, _double)))
    return f"{shell} {quote(text)}"


def _neighbour(draw: st.DrawFn, text: str) -> str:
    other = draw(st.sampled_from(_NEIGHBOURS))
    shape = draw(st.sampled_from(("{o}; {t}", "{t}; {o}", "{o} && {t}", "false || {t}",
                                  "{o} | {t}", "{t} | cat", "{t} &", "{o} & {t}")))  # fmt: skip
    return shape.replace("{o}", other).replace("{t}", text)


def _redirected(draw: st.DrawFn, text: str) -> str:
    return f"{text} {draw(st.sampled_from(('2>/dev/null', '2>&1', '</dev/null')))}"


def _subscripted(draw: st.DrawFn, text: str) -> str:
    # Builtins that compute the subscript of NAME[...] run a $(...) in it, quoted or not.
    shape = draw(st.sampled_from(("test -v {}", "[ -v {} ]", "(( {} ))", "let {}",
                                  "printf -v {} x", "[[ {} -eq 1 ]]")))  # fmt: skip
    return shape.replace("{}", _single(f"a[$({text})]"))


def _backquoted(draw: st.DrawFn, text: str) -> str:
    # Inside `...` Bash removes one level of backslashes before $, ` and \.
    return "echo `" + re.sub(r"([\\`$])", r"\\\1", text) + "`"


_LAYERS = (
    _Layer(_assignment, needs_simple=True, simple_after=True, bare_after=False),
    _wrapper("env", "env -i", "env A=1", "env --", "/usr/bin/env -u HOME", needs_bare=False),
    _wrapper("sudo", "sudo -u root", "sudo -n --", needs_bare=False),
    _wrapper("command", "builtin", "exec", "nohup", "time", "doas", "doas -u root"),
    _wrapper("nice", "nice -n 5", "nice --", "timeout 5", "timeout -s KILL 10", "stdbuf -oL"),
    _wrapper("xargs", "xargs -0", "xargs -n 1", "xargs -I{}"),
    _Layer(_shell_c, simple_after=True, bare_after=True),
    _Layer(_neighbour),
    _Layer(_redirected, needs_simple=True, simple_after=False),
    _Layer(_backquoted),
    _Layer(_subscripted),
    _around(
        "{ {}; }",
        "( {} )",
        "echo $({})",
        "cat <({})",
        "x=$({})",
        "! {}",
        "if true; then {}; fi",
        "while false; do :; done; {}",
        "f() { {}; }; f",
    ),
)
