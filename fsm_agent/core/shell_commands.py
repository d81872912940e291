"""Shell commands taken apart with a real parser: every simple command a command line would run.

``analyse_command`` parses a Bash command line with tree-sitter-bash and lists every simple
command in it, wherever it stands: in lists and pipelines, subshells, brace groups, loops and
functions, command substitution (``$(...)`` and backquotes), process substitution, redirection
targets and unquoted heredoc bodies. Words are given as the program would receive them (quotes
and backslashes removed), so ``\\rm``, ``'r'm`` and ``"rm"`` all read ``rm``.

Wrappers are seen through (SPEC §9.3: compound commands are split and each part checked; how each
wrapper says what it runs is in ``shell_wrappers``): ``env``, ``sudo``, ``timeout 5``, ``xargs``,
``bash -c '...'``, ``eval``, ``trap '...' EXIT``, ``find -exec`` and the like are each a part, and
so is the command they run, which carries the wrapper's name in ``wrappers``. So is a shell
command another program is given to run in its arguments (``git -c core.pager=CMD``,
``git rebase --exec CMD``, ``tar --to-command=CMD``, ``ssh -o ProxyCommand=CMD``): its label
names where it came from (``git -c core.pager``). A bare assignment (``PATH=.``) or a ``for``
loop variable is a part with no argv and the assignment in ``assignments``; a redirection with
no command (``> f``) is a part with no argv and no assignment.

Anything that cannot be fully analysed sets ``problem`` (a parse error, text tree-sitter and Bash
read differently, a program name the shell computes or takes from input, a wrapper option we do
not know, a name made to run another program, more than 50 parts, a command longer than 16 KiB,
which is not parsed at all); callers must then ask. The parts found so far are still listed, so
a deny rule can match them.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Final

import attrs

from fsm_agent.core.shell_misreadings import (
    comment_misread,
    continuation_misread,
    escaped_blank_misread,
    heredoc_delimiter,
    heredoc_ends_as_parsed,
    joins_word_characters,
)
from fsm_agent.core.shell_wrappers import ENVIRONMENT_READERS, SHELLS, WRAPPERS
from fsm_agent.core.wrapper_reading import Unwrapped

if TYPE_CHECKING:
    from tree_sitter import Language, Node

MAX_PARTS = 50
"""More parts than this ask (SPEC §9.3)."""

MAX_NESTING = 8
"""Wrappers inside wrappers (``bash -c "eval 'sh -c ...'"``) deeper than this are not read."""

MAX_COMMAND_BYTES = 16_384
"""A longer command (in UTF-8) is not parsed: it asks. tree-sitter's recovery from syntax errors
takes time growing with the square of their length (16 KiB of ``)`` took 0.8 s to read, 32 KiB
3.5 s, 128 KiB about a minute); a command any longer is most often a heredoc writing a file,
which the Write tool does without a shell. Linux gives ``bash -c`` at most 128 KiB anyway."""

MAX_TREE_DEPTH = 100
"""A parse tree deeper than this (``$($($(...)))`` nested a hundred times) is not walked: the
walk recurses, and no command worth running unasked nests so deep."""


@attrs.frozen(kw_only=True)
class Redirect:
    """One redirection of a part.

    Attributes:
        operator: the operator with its file descriptor as written: ``>``, ``2>``, ``>>``,
            ``2>&``, ``<``, ``<<`` (a heredoc), ``<<<`` (a here-string), ``&>``.
        target: the file, descriptor number or heredoc delimiter, quotes removed.
        expanded: the shell computes the target (a variable, a substitution, a glob).
    """

    operator: str
    target: str
    expanded: bool = False


@attrs.frozen(kw_only=True)
class CommandPart:
    """One simple command.

    Attributes:
        argv: the words after quote removal, ``VAR=x`` prefixes and wrappers removed. A word the
            shell computes (see ``expanded``) holds its text with the literal parts unquoted.
        text: ``" ".join(argv)``: what Bash permission rules are matched against.
        assignments: the ``VAR=value`` prefixes that were stripped, as written.
        redirects: its redirections, and those of every group or wrapper around it.
        wrappers: the wrappers it was found inside, outermost first (``"env"``, ``"bash -c"``,
            ``"xargs"``, ...).
        expanded: the indexes in ``argv`` of the words the shell computes when it runs:
            variables, substitutions, arithmetic, globs, brace expansion.
        fed: the indexes in ``argv`` of the words a wrapper fills in from what it reads when
            it runs (``xargs -I R`` its input, ``find -exec`` the names it finds), and
            ``len(argv)`` when it adds such words after the last (``xargs`` without ``-I``).
        found_paths: the indexes in ``fed`` of the words ``find -exec``/``-ok`` fills in with
            the path of a name it finds (a whole ``{}``): each begins with a start point written
            in the command, which cannot begin with ``-``, so none is an option.
        continued: a program alone, whose words are given elsewhere when it runs: the value of
            a build variable (``make PYTHON=python3``: the makefile's recipe goes on after it),
            the program ``rg --pre`` runs with a file's name. It reads no code from its input,
            and wraps no command we could see.
    """

    argv: tuple[str, ...]
    text: str
    assignments: tuple[str, ...] = ()
    redirects: tuple[Redirect, ...] = ()
    wrappers: tuple[str, ...] = ()
    expanded: tuple[int, ...] = ()
    fed: tuple[int, ...] = ()
    found_paths: tuple[int, ...] = ()
    continued: bool = False


@attrs.frozen(kw_only=True)
class CommandAnalysis:
    """What a command line would run.

    Attributes:
        command: the command line analysed.
        parts: every simple command in it, in source order (a wrapper before what it runs).
        problem: why the command could not be fully analysed; callers must then ask.
        whole: every part was found, when there is a problem: it is only code the parts run
            that no analysis sees (a file ``source`` runs, a variable set to run later), not
            a text the parser could not read or a nesting it gave up on.
        misread: the parser could not read the text as Bash reads it (a parse error, control
            characters, a size or nesting past what is analysed, tokens drawn apart from
            Bash's): a part Bash would run may be missing from ``parts`` or other than found.
            ``problem`` says why. Not set for code the parts run that is not analysed
            (``python3 -c``, ``xargs sh``): those parts were found.
        folders: the folders wrappers run their commands in (``env -C DIR``, ``sudo -D DIR``,
            ``uv --directory DIR``; ``~USER`` for a login shell's home), as written, each
            with the index in ``parts`` of the first part it runs, in source order.
        globs: the words of ``parts`` the shell computes by pathname expansion alone
            (``*.egg-info``, ``src/*.py``), each with its pattern (quoted characters escaped
            with a backslash); a word two patterns spell (``'*'*`` and ``*'*'``) is left out.
        homes: the words of ``parts`` whose only computed piece is ``$HOME`` read at their
            start, or after an option's name (``"$HOME/.cache"``, ``--prefix=$HOME/.local``),
            each with what comes before and after it (``("", "/.cache")``).
        reads: the words of ``parts`` that begin with one variable read whole, in double
            quotes, and go on with plain path characters alone (``"$f"``, ``"$f.bak"``,
            ``"${tmp}/x"``), each with the variable's name and what follows it.
        loops: the variables ``for`` loops set, each with the words it takes in turn (and
            each word's pattern when it is a glob), for a variable nothing else in the command
            may set: its name written nowhere but in its loop and in plain reads (``$f``,
            ``${f}``), and no part that sets variables it is not told (``read``, ``printf
            -v``, ``declare``, ``eval``, ``source``...).
        settings: the variables the command sets in one assignment of its own (not one a
            program is run with, ``X=1 cmd``) and nowhere else, as for ``loops``, to plain
            text or to a new folder ``mktemp -d`` makes (``$(mktemp -d)``), each with that.
    """

    command: str
    parts: tuple[CommandPart, ...]
    problem: str | None = None
    whole: bool = True
    misread: bool = False
    folders: tuple[tuple[int, str], ...] = ()
    globs: tuple[tuple[str, str], ...] = ()
    homes: tuple[tuple[str, tuple[str, str]], ...] = ()
    reads: tuple[tuple[str, tuple[str, str]], ...] = ()
    loops: tuple[tuple[str, tuple[tuple[str, str | None], ...]], ...] = ()
    settings: tuple[tuple[str, str], ...] = ()


@functools.lru_cache(maxsize=16)
def analyse_command(command: str) -> CommandAnalysis:
    """Every simple command ``command`` would run, and whether that list can be trusted.

    Kept for the last few commands (the result is frozen): one Bash call is analysed by its
    own permission check, by the permission chain and by its read-only test.

    Never raises: whatever the parser cannot read is reported in ``problem``.
    """
    reader = _Reader()
    try:
        reader.read_script(command, wrappers=(), redirects=(), depth=0)
    except RecursionError:
        # Each tree is bounded (MAX_TREE_DEPTH), but scripts inside wrappers and backquotes
        # add up; whatever their sum, the answer is to ask.
        reader.problems.insert(0, "the command nests too deeply to be analysed")
        reader.misread = True
    except Exception as error:  # a hostile command must get a question, not a crash
        reader.problems.insert(0, f"the analysis failed ({type(error).__name__}: {error})")
        reader.misread = True
    if reader.exports and reader.environment_readers:
        # What `export`/`set -a` give the environment reaches every later program: values
        # such a program runs as command lines, where no reader of its own sees them.
        program = reader.environment_readers[0]
        reader.problems.append(f"{program} reads the variables the command exports as commands")
        reader.unseen_code += 1
    if _FILLS_VARIABLE.search(command) and _reads_arithmetic(command):
        # Arithmetic runs the command in a subscript of a value (`a[$(rm y)]`), and this
        # command fills a variable from outside it: a file, a command's output.
        reader.problems.append(
            "arithmetic reads a variable the command fills from outside it, whose value may "
            "hold a command in a subscript"
        )
        reader.unseen_code += 1
    whole = len(reader.problems) == reader.unseen_code
    problem = reader.problems[0] if reader.problems else None
    if problem is None and len(reader.parts) > MAX_PARTS:
        problem = f"the command has {len(reader.parts)} parts, more than {MAX_PARTS}"
    return CommandAnalysis(
        command=command,
        parts=tuple(reader.parts),
        problem=problem,
        whole=whole,
        misread=reader.misread,
        folders=tuple(reader.folders),
        globs=tuple(
            (word, glob)
            for word, glob in reader.globs.items()
            if glob is not None and word not in reader.unclear
        ),
        homes=tuple((w, home) for w, home in reader.homes.items() if w not in reader.unclear),
        reads=tuple((w, read) for w, read in reader.reads.items() if w not in reader.unclear),
        loops=tuple(
            (name, words)
            for name, words in reader.loops.items()
            if words is not None
            and not _shell_owned(name)
            and _set_once(name, command, reader.parts)
        ),
        settings=_settings(command, reader.parts, reader.loops),
    )


_SETS_NAMED: Final = frozenset(
    {"read", "printf", "mapfile", "readarray", "declare", "typeset", "local", "export",
     "readonly", "eval", "getopts", "let", "unset", "source", ".", "set", "shift"}
)  # fmt: skip
"""Programs that may set a variable whose name the command does not write (``printf -v "$n"``,
``read``, a script ``source`` runs): a loop's variable may then be set by one of them."""


def _set_once(name: str, command: str, parts: Sequence[CommandPart]) -> bool:
    """Whether the variable ``name`` is set in one place alone (its ``for`` loop, or one
    assignment): its name written once but in plain reads and option letters (``-f``), no
    ``${name:=…}``, no arithmetic (which sets a variable by its bare name: ``f++``), and no
    part of :data:`_SETS_NAMED`."""
    if "((" in command or any(part.argv and part.argv[0] in _SETS_NAMED for part in parts):
        return False
    bare = re.findall(rf"(?<![\w$-])(?<!\$\{{){re.escape(name)}(?!\w)", command)
    return len(bare) == 1 and not re.search(rf"\$\{{{re.escape(name)}:?[=?+-]", command)


MADE_FOLDER: Final = "$(mktemp -d)"
"""The value :attr:`CommandAnalysis.settings` gives a variable set to the new folder ``mktemp
-d`` makes (however its substitution was spelled)."""
_SET_VALUE: Final = re.compile(
    r"(?P<name>[A-Za-z_]\w*)="
    r"(?P<value>[\w./@+,:%-]*|\"[\w./@+,:% -]*\"|'[\w./@+,:% -]*'"
    r"|(?P<fresh>\$\(mktemp -d\)|\"\$\(mktemp -d\)\"|`mktemp -d`|\"`mktemp -d`\"))"
)
"""An assignment whose value is plain text, quoted or not, or a new folder ``mktemp -d``
makes (kept as ``$(mktemp -d)``)."""
_SHELL_SETTINGS: Final = frozenset(
    {"HOME", "PWD", "OLDPWD", "CDPATH", "DIRSTACK", "IFS", "PATH", "GLOBIGNORE", "BASH_ENV",
     "ENV", "SHELLOPTS", "BASHOPTS", "TMPDIR", "_", "REPLY", "RANDOM", "SRANDOM", "SECONDS",
     "EPOCHSECONDS", "EPOCHREALTIME", "LINENO", "PPID", "UID", "EUID", "GROUPS", "FUNCNAME",
     "PIPESTATUS", "OPTARG", "OPTIND", "MAPFILE", "COPROC", "HISTCMD", "COLUMNS", "LINES",
     "SHLVL", "HOSTNAME"}
)  # fmt: skip
"""Variables that change what the shell does, not only what a read of them gives, or whose
read the shell itself gives (``$_`` is the last command's last word, ``$RANDOM`` a number):
no assignment or loop tells them. Every ``BASH_*`` name is one too (``BASH_REMATCH``)."""


def _shell_owned(name: str) -> bool:
    """Whether the shell gives ``name`` a meaning or a value of its own (:data:`_SHELL_SETTINGS`,
    ``BASH_*``, ``COMP_*``)."""
    return name in _SHELL_SETTINGS or name.startswith(("BASH", "COMP_"))


def _settings(
    command: str, parts: Sequence[CommandPart], loops: Mapping[str, object]
) -> tuple[tuple[str, str], ...]:
    """The variables the command sets once, alone (not for a program it runs), to a value
    :data:`_SET_VALUE` reads, and nowhere else (:func:`_set_once`)."""
    found: dict[str, str | None] = {}
    for part in parts:
        if part.argv:
            continue  # `X=1 cmd`: X is cmd's, and the shell's reads give the old value
        for text in part.assignments:
            setting = _SET_VALUE.fullmatch(text)
            if setting is None:
                found[re.split(r"[^\w]", text, maxsplit=1)[0]] = None
                continue
            value = MADE_FOLDER if setting["fresh"] else setting["value"].strip("'\"")
            name = setting["name"]
            found[name] = value if found.get(name, value) == value else None
    return tuple(
        (name, value)
        for name, value in found.items()
        if value is not None
        and not _shell_owned(name)
        and name not in loops
        and _set_once(name, command, parts)
    )


@functools.cache
def _bash_language() -> Language:
    # Imported here: only code that analyses commands pays for loading the grammar.
    import tree_sitter_bash  # noqa: PLC0415
    from tree_sitter import Language  # noqa: PLC0415

    return Language(tree_sitter_bash.language())


def _parse(text: str) -> Node:
    from tree_sitter import Parser  # noqa: PLC0415

    # A parser per call: they are cheap and not safe to share between threads.
    return Parser(_bash_language()).parse(text.encode()).root_node


@attrs.frozen
class _Word:
    value: str
    expanded: bool
    variable: tuple[str, str] | None = None
    """The variable a word begins with, read whole in double quotes (its value unsplit), and
    the plain path characters after it (``"$f"``, ``"${f}"``, ``"$f.bak"``, ``"$d"/x``)."""
    home: tuple[str, str] | None = None
    """What comes before and after ``$HOME`` (or ``${HOME}``), when reading it at the start,
    or after an option's name, is all the shell computes of the word (``"$HOME/.cache"``,
    ``${HOME}/bin``, ``--prefix=$HOME/.local``): the rest of a path, spelled by plain
    characters only."""
    glob: str | None = None
    """The pattern, when pathname expansion is all the shell computes of the word, its
    quoted ``*?[]``, blanks and backslashes escaped with a backslash: ``"a b"*.py`` gives
    ``a\\ b*.py``, and ``'*'*`` a pattern whose first star is escaped (``'*'.py`` is no
    pattern at all)."""


_SUBSTITUTIONS = frozenset({"command_substitution", "process_substitution"})
_BACKQUOTE = re.compile(r"\\([\\`$])")
_BACKQUOTE_IN_STRING = re.compile(r'\\([\\`$"])')
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_BEYOND_PLANE_1 = re.compile("[\U00020000-\U0010ffff]")
"""Characters past Unicode's first supplementary plane (rare CJK, unassigned and private-use
code points): tree-sitter-bash's scanner reads past its tables on some of them (``{`` then
U+AC968 ends the process with a segmentation fault), so no text holding one is parsed; the
command asks. Emoji (plane 1) parse as any character.

The scanner asks the C library's one-byte character classes (is it a digit, a letter) about
the character after ``{``, after ``$`` in a heredoc, after ``-`` in a test and after ``?``,
whatever its code point: glibc looks it up that many entries into a table at the start of the
locale's character data, which held more than U+24000 entries' room in every locale tried
(C, C.UTF-8, en_US and ja_JP in UTF-8, ISO-8859-1 and EUC-JP). Every code point below U+20000
in those places, in each of these locales, parsed without a fault."""

_SURROGATE = re.compile("[\ud800-\udfff]")
"""Surrogate code points: not text, so not UTF-8 the parser could be given. A JSON string may
hold one (``"\\ud800"``), and ``$'\\xff'`` stands for its byte with one (``\\udcff``)."""

_RESERVED_WORDS = frozenset(
    {"!", "{", "}", "[[", "]]", "case", "do", "done", "elif", "else", "esac", "fi", "for",
     "function", "if", "in", "select", "then", "until", "while"}
)  # fmt: skip
_REDIRECTS = frozenset({"file_redirect", "heredoc_redirect", "herestring_redirect"})
_GLOB = re.compile(r"[*?]|\[[^\]]*\]")
_BRACES = re.compile(r"\{[^{}]*(,|\.\.)[^{}]*\}")
_ARITHMETIC_HOLDERS = frozenset({"compound_statement", "c_style_for_statement"})
_SUBSCRIPT_EVALUATORS = frozenset(
    {"((", "[[", "[", "test", "let", "declare", "typeset", "local", "export", "readonly",
     "unset", "printf", "read", "mapfile", "readarray", "getopts", "wait"}
)  # fmt: skip
"""Builtins that read a word as ``NAME[SUBSCRIPT]`` or as arithmetic, computing subscripts."""
_NAME_RUN = re.compile(r"[A-Za-z0-9_]+")


def _command_in_subscript(text: str) -> bool:
    """Whether ``text`` holds ``NAME[`` with a command substitution after it (``a[$(cmd)]``,
    ``a[`cmd`]``): where Bash reads it as an array element, the subscript runs the command.
    One pass over the text (a pattern searched from every letter took 0.4 s on 16 KiB)."""
    for run in _NAME_RUN.finditer(text):
        if text.startswith("[", run.end()) and _NAME_START.search(run.group()):
            rest = text[run.end() :]
            return "$(" in rest or "`" in rest
    return False


_QUOTED = "\0"  # stands for a quoted character when looking for globs and braces
_QUOTED_READ = re.compile(
    r'"\$(?:(?P<name>[A-Za-z_]\w*)|\{(?P<braced>[A-Za-z_]\w*)\})'
    r'(?P<inside>[\w./@+,:% -]*)"(?P<after>[\w./@+,:%-]*)'
)
"""A word that is one variable read whole, in double quotes (``"$f"``, ``"${f}"``)."""
_HOME_WORD = re.compile(
    r"(?P<before>-{0,2}[A-Za-z_][\w-]*=)?\$(?:HOME|\{HOME\})(?P<rest>(?:/[\w.@+,:=%-]*)*)"
)
"""A word that reads ``$HOME`` and adds plain path characters, as written with its double
quotes taken out (a word with any other quoting, expansion or pattern is not one)."""
_GLOB_SPECIAL = re.compile(r"[\\*?\[\]\s]")
"""The quoted characters a glob word's pattern escapes (:attr:`_Word.glob`): what a pattern
reads otherwise, and blanks, which cannot be unquoted in one word of Bash's."""
_ESCAPES_TO_CHECK = (
    (b"\\\n", continuation_misread),
    (b"\\ ", escaped_blank_misread),
    (b"\\\t", escaped_blank_misread),
)
_TOKENS_TO_CHECK = frozenset({"word", "simple_expansion"})
_SIMPLE_EXPANSION = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*|[0-9]|[-*@#?$!_])")


class _Reader:
    """Walks parse trees, collecting parts and problems."""

    def __init__(self) -> None:
        self.parts: list[CommandPart] = []
        self.globs: dict[str, str | None] = {}
        """Each glob word's pattern, by the word (see :attr:`unclear`)."""
        self.kinds: dict[str, tuple[object, ...]] = {}
        """What each computed word's text first stood for (a read, ``$HOME``, a pattern)."""
        self.unclear: set[str] = set()
        """The texts of computed words that stand for two things (``'*'*`` and ``*'*'``,
        ``$f`` and ``"$f"``): none of them is told."""
        self.homes: dict[str, tuple[str, str]] = {}
        """What follows ``$HOME`` in each word that reads it at its start, by the word."""
        self.reads: dict[str, tuple[str, str]] = {}
        """The variable each word begins with, read whole and quoted, and what follows it, by
        the word."""
        self.loops: dict[str, tuple[tuple[str, str | None], ...] | None] = {}
        """The words each ``for`` loop's variable takes, by its name (each with its pattern
        when it is a glob); None for a name looped over words the shell computes otherwise,
        or over two lists."""
        self.problems: list[str] = []
        self.sources: list[bytes] = []  # the text of each script being walked, innermost last
        self.exports = False  # a part exports variables (`export X=1`, `set -a`)
        self.environment_readers: list[str] = []  # programs run that read it as commands
        self.unseen_code = 0  # problems that are code the parts run, every part found
        self.misread = False  # a problem where Bash may run parts other than those found
        self.folders: list[tuple[int, str]] = []  # where wrappers run their commands

    def _misread(self, why: str) -> None:
        """A problem where the parser did not read the text as Bash reads it."""
        self.problems.append(why)
        self.misread = True

    def read_script(
        self,
        text: str,
        *,
        wrappers: tuple[str, ...],
        redirects: tuple[Redirect, ...],
        depth: int,
    ) -> None:
        if depth > MAX_NESTING:
            self._misread(f"commands nested deeper than {MAX_NESTING} wrappers")
            return
        size = len(text.encode(errors="surrogatepass"))
        if size > MAX_COMMAND_BYTES:
            self._misread(
                f"the command is {size} bytes long, more than the {MAX_COMMAND_BYTES} analysed"
            )
            return
        if _CONTROL.search(text):
            # Bash keeps them in words where tree-sitter may see blanks: not worth the doubt.
            self._misread("the command contains control characters")
            return
        surrogate = _SURROGATE.search(text)
        if surrogate is not None:
            code = ord(surrogate.group())
            self._misread(f"the command holds U+{code:X}, a surrogate, which is not text")
            return
        beyond = _BEYOND_PLANE_1.search(text)
        if beyond is not None:
            self._misread(
                f"the command holds U+{ord(beyond.group()):X}, which the shell parser cannot read"
            )
            return
        root = _parse(text)
        if _deeper_than(root, MAX_TREE_DEPTH):
            self._misread(f"the command nests deeper than {MAX_TREE_DEPTH} levels")
            return
        if root.has_error:
            self._misread(f"the shell parser could not read {_error_place(root, text)}")
        # Byte offsets count from the start of the text; the root node may start later.
        source = text.encode()
        self._check_continuations(root, source)
        self._check_comments(root, source)
        self.sources.append(source)
        try:
            self._walk(root, wrappers, redirects, depth)
        finally:
            self.sources.pop()

    def _check_comments(self, root: Node, source: bytes) -> None:
        """A problem for a comment Bash may read as part of a word."""
        if b"#" not in source:
            return
        stack = [root]
        while stack:
            node = stack.pop()
            if node.type != "comment":
                stack.extend(node.children)
                continue
            why = comment_misread(source, node.start_byte)
            if why is not None:
                self._misread(why)
                return

    def _check_continuations(self, root: Node, source: bytes) -> None:
        """A problem for a backslash before a newline or a blank that the parser may have read
        apart from Bash."""
        for pair, misread in _ESCAPES_TO_CHECK:
            index = source.find(pair)
            while index >= 0:
                if _continuation_counts(root, index):
                    why = misread(source, index)
                    if why is None and pair == b"\\\n" and _split_at(root, source, index):
                        why = "a line continuation inside a word the parser split in two"
                    if why is not None:
                        self._misread(why)
                        return
                index = source.find(pair, index + 2)

    # -- statements ------------------------------------------------------------------------

    def _walk(
        self, node: Node, wrappers: tuple[str, ...], redirects: tuple[Redirect, ...], depth: int
    ) -> None:
        kind = node.type
        if kind in _TOKENS_TO_CHECK:
            self._check_token(node)
        if kind == "command":
            self._command(node, wrappers, redirects, depth)
        elif kind == "redirected_statement":
            own = tuple(r for child in node.children for r in self._redirects(child))
            if node.child_by_field_name("body") is None:
                # `> f` alone still opens (and truncates) f: a part with no program.
                self._add(
                    argv=(), expanded=(), assignments=(), redirects=redirects + own,
                    wrappers=wrappers, depth=depth,
                )  # fmt: skip
            for child in node.children:
                if child.type in _REDIRECTS:
                    self._walk(child, wrappers, redirects, depth)
                else:
                    self._walk_redirected(child, wrappers, redirects, own, depth)
        elif kind == "variable_assignment":
            self._add(
                argv=(), expanded=(), assignments=(_text(node),), redirects=redirects,
                wrappers=wrappers, depth=depth,
            )  # fmt: skip
            self._walk_children(node, wrappers, depth)
        elif kind in ("for_statement", "select_statement"):
            variable = node.child_by_field_name("variable")
            name = _text(variable) if variable is not None else "?"
            if kind == "for_statement":
                self._note_loop(name, node)
            self._add(
                argv=(), expanded=(), assignments=(f"{name}=",), redirects=redirects,
                wrappers=wrappers, depth=depth,
            )  # fmt: skip
            for child in node.children:
                self._walk(child, wrappers, redirects, depth)
        elif kind in ("declaration_command", "unset_command", "test_command"):
            self._keyword_command(node, wrappers, redirects, depth)
        elif kind in _ARITHMETIC_HOLDERS and any(c.type == "((" for c in node.children):
            self._arithmetic_command(node, wrappers, redirects, depth)
        elif kind == "subshell" and _text(node).startswith("(("):
            # tree-sitter reads `! (( expr ))` as two subshells; Bash computes `expr`.
            self._misread(f"the parser misread the arithmetic command {_text(node)!r}")
            self._walk_children(node, wrappers, depth)
        elif kind in _SUBSTITUTIONS:
            # What runs inside $(...) or <(...) writes to a pipe, not to the outer redirects.
            body = _text(node)[1:-1]
            if _text(node).startswith("`") and "\\" in body:
                # Bash removes one level of backslashes in `...` before parsing it again;
                # tree-sitter does not, so `\\r\\m x` would hide rm: read it as Bash does.
                quoted = node.parent is not None and node.parent.type == "string"
                script = (_BACKQUOTE_IN_STRING if quoted else _BACKQUOTE).sub(r"\1", body)
                self.read_script(script, wrappers=wrappers, redirects=(), depth=depth + 1)
            else:
                self._walk_children(node, wrappers, depth)
        else:
            for child in node.children:
                self._walk(child, wrappers, redirects, depth)

    def _check_token(self, node: Node) -> None:
        """A problem for a word or ``$name`` the parser drew across what splits it in Bash."""
        text = _text(node)
        if node.type == "word" and "\n" in text.replace("\\\n", ""):
            self._misread(f"the parser read a line break inside the word {text!r}")
        elif node.type == "simple_expansion" and not _SIMPLE_EXPANSION.fullmatch(text):
            # `>$<tab>x`: Bash reads a lone `$` and a blank, not the variable x
            self._misread(f"the parser read {text!r} as a variable")

    def _walk_redirected(
        self,
        node: Node,
        wrappers: tuple[str, ...],
        redirects: tuple[Redirect, ...],
        own: tuple[Redirect, ...],
        depth: int,
    ) -> None:
        """Walk the statement ``own`` redirects were written after.

        tree-sitter-bash hangs ``a && b > f`` and ``a | b > f`` on the whole list or pipeline;
        Bash binds the redirect to the last command only.
        """
        if node.type not in ("list", "pipeline"):
            self._walk(node, wrappers, redirects + own, depth)
            return
        last = node.named_children[-1] if node.named_children else None
        for child in node.children:
            if child == last:
                self._walk_redirected(child, wrappers, redirects, own, depth)
            else:
                self._walk(child, wrappers, redirects, depth)

    def _walk_children(self, node: Node, wrappers: tuple[str, ...], depth: int) -> None:
        for child in node.children:
            self._walk(child, wrappers, (), depth)

    def _command(
        self, node: Node, wrappers: tuple[str, ...], redirects: tuple[Redirect, ...], depth: int
    ) -> None:
        groups: list[list[Node]] = []  # the nodes of each word
        assignments: list[str] = []
        own: list[Redirect] = []
        source = node.text or b""  # once: a copy per word would make long commands quadratic
        previous: Node | None = None
        for index, child in enumerate(node.children):
            field = node.field_name_for_child(index)
            if (
                previous is not None
                and previous.type == "variable_assignment"
                and _between(source, node.start_byte, previous, child) == ""
            ):
                # Bash reads one word (`a=b\<newline>c`): the parser split it in two.
                self._misread(f"the parser split the word {_text(previous)!r}")
            previous = child
            if child.type == "variable_assignment" and not groups:
                assignments.append(_text(child))
            elif child.type in _REDIRECTS:
                own.extend(self._redirects(child))
            elif field in ("name", "argument") or child.is_named:
                piece = child.children[0] if field == "name" and child.children else child
                gap = _between(source, node.start_byte, groups[-1][-1], piece) if groups else " "
                if gap is None:
                    self._misread(f"the parser misread the escapes in {_text(node)!r}")
                    groups.append([piece])
                elif "\n" in gap:
                    # Bash ends the command at the line break (`x =~<newline>rm y` runs rm).
                    self._misread(f"the parser ran {_text(node)!r} on past a line break")
                    groups.append([piece])
                elif gap:
                    groups.append([piece])
                else:
                    # tree-sitter splits 'a'\b in two; touching tokens are one word in Bash
                    groups[-1].append(piece)
            else:
                self._misread(f"unexpected {_text(child)!r} in {_text(node)!r}")
            if child.type == "variable_assignment":
                self._walk_children(child, wrappers, depth)
            else:
                self._walk(child, wrappers, (), depth)  # substitutions inside the words
        words = [_word(*group) for group in groups]
        self._note_globs(words)
        if groups and _text(groups[0][0]) in _RESERVED_WORDS:
            # Bash would have read a compound command here; tree-sitter misread it.
            self._misread(f"the parser misread the reserved word {_text(groups[0][0])}")
        if words and words[0].expanded:
            self.problems.append(f"the program name {words[0].value!r} is computed by the shell")
        self._add(
            argv=tuple(w.value for w in words),
            expanded=tuple(i for i, w in enumerate(words) if w.expanded),
            assignments=tuple(assignments),
            redirects=redirects + tuple(own),
            wrappers=wrappers,
            depth=depth,
        )

    def _note_loop(self, name: str, node: Node) -> None:
        """Keep the words a ``for`` loop's variable takes (:attr:`loops`), when each is plain
        or a glob; a loop with no ``in`` takes the script's arguments, which no one knows."""
        children = list(node.children)
        starts = [i for i, child in enumerate(children) if child.type == "in"]
        listed: list[tuple[str, str | None]] | None = None
        if starts:
            listed = []
            for child in children[starts[0] + 1 :]:
                if child.type in (";", "do_group", "\n") or not child.is_named:
                    break
                word = _word(child)
                if word.expanded and word.glob is None:
                    listed = None
                    break
                listed.append((word.value, word.glob))
        known = self.loops.get(name, ())
        taken = tuple(listed) if listed is not None else None
        self.loops[name] = taken if name not in self.loops or known == taken else None

    def _note_globs(self, words: Sequence[_Word]) -> None:
        """Keep the patterns of the glob words among ``words`` (:attr:`globs`), and what
        follows ``$HOME`` in the words reading it (:attr:`homes`)."""
        for word in words:
            if not word.expanded:
                continue
            kind = (word.variable, word.home, word.glob)
            if self.kinds.setdefault(word.value, kind) != kind:
                # `rm $f "$f"`: one text, read two ways (unquoted, $f is split and matched)
                self.unclear.add(word.value)
            if word.variable is not None:
                self.reads[word.value] = word.variable
            if word.home is not None:
                self.homes[word.value] = word.home
            if word.glob is not None:
                self.globs[word.value] = word.glob

    def _keyword_command(
        self, node: Node, wrappers: tuple[str, ...], redirects: tuple[Redirect, ...], depth: int
    ) -> None:
        """``export``/``declare``/``unset``/``[[ ]]``: a part named by the keyword."""
        keyword = _text(node.children[0]) if node.children else node.type
        rest = node.children[1:]
        if node.type == "test_command":
            words = [w for child in rest for w in _test_words(child)]
        else:
            words = [_word(child) for child in rest]
        self._note_globs(words)
        self._add(
            argv=(keyword, *(w.value for w in words)),
            expanded=tuple(i + 1 for i, w in enumerate(words) if w.expanded),
            assignments=(),
            redirects=redirects,
            wrappers=wrappers,
            depth=depth,
        )
        self._walk_children(node, wrappers, depth)

    def _arithmetic_command(
        self, node: Node, wrappers: tuple[str, ...], redirects: tuple[Redirect, ...], depth: int
    ) -> None:
        """``(( expr ))`` and ``for (( ...; ...; ... ))``: a part whose one word is computed.

        The shell evaluates the expression, subscripts included, so a quoted ``'a[$(cmd)]'``
        there runs ``cmd``: the part is never read-only, and such a subscript is a problem.
        """
        children = node.children
        start = next(i for i, child in enumerate(children) if child.type == "((")
        end = next((i for i, child in enumerate(children) if child.type == "))"), len(children))
        expression = " ".join(_text(child) for child in children[start + 1 : end])
        self._add(
            argv=("((", expression, "))"),
            expanded=(1,),
            assignments=(),
            redirects=redirects,
            wrappers=wrappers,
            depth=depth,
        )
        for child in children:
            self._walk(child, wrappers, redirects, depth)

    def _redirects(self, node: Node) -> list[Redirect]:
        if node.type == "file_redirect":
            destination = node.child_by_field_name("destination")
            extra = [
                c for c in node.named_children if c != destination and c.type != "file_descriptor"
            ]
            if extra:
                # tree-sitter hangs `cmd > f arg...` words on the redirection; Bash gives them
                # to the command.
                self._misread(f"words after the redirection {_text(node)!r}")
            operator = "".join(_text(child) for child in node.children if child != destination)
            target = _word(destination) if destination is not None else _Word("", expanded=False)
            self._note_globs([target])
            return [Redirect(operator=operator, target=target.value, expanded=target.expanded)]
        if node.type == "herestring_redirect":
            body = node.children[-1]
            text = _word(body)
            return [Redirect(operator="<<<", target=text.value, expanded=text.expanded)]
        if node.type == "heredoc_redirect":
            found: list[Redirect] = []
            document = next((c for c in node.children if c.type == "heredoc_body"), None)
            for child in node.children:
                if child.type == "heredoc_start":
                    start = _text(child)
                    read = heredoc_delimiter(start)
                    if read is None:
                        self.problems.append(f"the heredoc delimiter {start!r} is not a plain word")
                        read = (start, True)
                    elif not self._heredoc_ends_as_parsed(node, read):
                        self.problems.append(f"the parser may end the heredoc {start!r} elsewhere")
                    delimiter, quoted = read
                    # An unquoted delimiter: Bash expands $VAR, $(...) and `...` in the body.
                    content = _text(document) if document is not None else ""
                    computed = not quoted and bool(_EXPANSION_MARK.search(content))
                    if computed and document is not None and not _has_expansion(document):
                        # `<<-` with tab-indented lines: tree-sitter keeps the body as text.
                        self.problems.append(
                            "the parser did not read the heredoc body's expansions"
                        )
                    found.append(Redirect(operator="<<", target=delimiter, expanded=computed))
                found.extend(self._redirects(child))
            return found
        return []

    def _heredoc_ends_as_parsed(self, node: Node, read: tuple[str, bool]) -> bool:
        """Whether Bash ends the heredoc of ``node`` on the line the parser ended it."""
        end = next((c for c in node.children if c.type == "heredoc_end"), None)
        if end is None:
            return False
        body = next((c for c in node.children if c.type == "heredoc_body"), end)
        source = self.sources[-1]
        first = source.rfind(b"\n", 0, body.start_byte) + 1
        last = source.find(b"\n", end.end_byte)
        region = source[first : len(source) if last < 0 else last]
        delimiter, quoted = read
        return heredoc_ends_as_parsed(
            region.decode(errors="replace").split("\n"),
            delimiter,
            strip_tabs=any(c.type == "<<-" for c in node.children),
            joins_lines=not quoted,
        )

    # -- parts and wrappers ----------------------------------------------------------------

    def _add(
        self,
        *,
        argv: tuple[str, ...],
        expanded: tuple[int, ...],
        assignments: tuple[str, ...],
        redirects: tuple[Redirect, ...],
        wrappers: tuple[str, ...],
        depth: int,
        fed: tuple[int, ...] = (),
        found_paths: tuple[int, ...] = (),
        continued: bool = False,
    ) -> None:
        self.parts.append(
            CommandPart(
                argv=argv,
                text=" ".join(argv),
                assignments=assignments,
                redirects=redirects,
                wrappers=wrappers,
                expanded=expanded,
                fed=fed,
                found_paths=found_paths,
                continued=continued,
            )
        )
        hidden = _renaming(argv, assignments) or _hidden_code(argv, assignments)
        if hidden is not None:
            self.problems.append(hidden)
            self.unseen_code += 1
        if not argv or 0 in expanded or continued:
            return
        if argv[0] in _SUBSCRIPT_EVALUATORS:
            for word in argv[1:]:
                if _command_in_subscript(word):
                    # SPEC §9.3: what cannot be analysed asks.
                    self.problems.append(
                        f"{argv[0]} computes the subscript in {word!r}, which runs a command"
                    )
                    break
        if depth > MAX_NESTING:
            self.problems.append(f"commands nested deeper than {MAX_NESTING} wrappers")
            return
        program = argv[0].rsplit("/", 1)[-1]
        if program in _EXPORTERS and not self.exports:
            self.exports = _exports(argv)
        reads_environment = ENVIRONMENT_READERS.get(program)
        if reads_environment is not None:
            self.environment_readers.append(program)
            if assignments:
                self._follow_all(
                    program,
                    reads_environment(assignments),
                    argv=argv,
                    expanded=expanded,
                    fed=fed,
                    found_paths=found_paths,
                    redirects=redirects,
                    wrappers=wrappers,
                    depth=depth,
                )
        unwrap = WRAPPERS.get(program)
        if unwrap is None:
            return
        outcome = unwrap(argv[1:])
        if outcome is None:
            if "xargs" in wrappers:
                # `echo rm x | xargs env`: the command comes from the input.
                self.problems.append(f"xargs gives {program} the command to run")
            return
        self._follow_all(
            program,
            outcome,
            argv=argv,
            expanded=expanded,
            fed=fed,
            found_paths=found_paths,
            redirects=redirects,
            wrappers=wrappers,
            depth=depth,
        )

    def _follow_all(
        self,
        program: str,
        outcome: Unwrapped | tuple[Unwrapped, ...] | str,
        *,
        argv: tuple[str, ...],
        expanded: tuple[int, ...],
        fed: tuple[int, ...],
        found_paths: tuple[int, ...],
        redirects: tuple[Redirect, ...],
        wrappers: tuple[str, ...],
        depth: int,
    ) -> None:
        """Add what a reader says ``program`` (``argv``) runs, or its problem."""
        if isinstance(outcome, str):
            self.problems.append(f"{program}: {outcome}")
            return
        computed = frozenset(expanded)  # asked once per script: a set, not the tuple
        for each in outcome if isinstance(outcome, tuple) else (outcome,):
            self._follow(
                each,
                program=program,
                argv=argv,
                expanded=expanded,
                computed=computed,
                fed=fed,
                found_paths=found_paths,
                redirects=redirects,
                wrappers=wrappers,
                depth=depth,
            )

    def _follow(
        self,
        outcome: Unwrapped,
        *,
        program: str,
        argv: tuple[str, ...],
        expanded: tuple[int, ...],
        computed: frozenset[int],
        fed: tuple[int, ...],
        found_paths: tuple[int, ...],
        redirects: tuple[Redirect, ...],
        wrappers: tuple[str, ...],
        depth: int,
    ) -> None:
        """Add what a wrapper (``argv``) runs, as ``outcome`` says (``computed``: ``expanded``
        as a set; ``fed``: the wrapper's own words filled in from what something reads, of which
        ``found_paths`` are paths ``find`` finds)."""
        label = outcome.label or (f"{program} -c" if program in SHELLS else program)
        self.folders += ((len(self.parts), folder) for folder in outcome.folders)
        if outcome.script is not None:
            if any(i + 1 in computed for i in outcome.script_indexes):
                self.problems.append(f"{label} runs a command the shell computes")
                return
            if outcome.continued:
                self._add(
                    argv=(outcome.script,), expanded=(), assignments=(), redirects=redirects,
                    wrappers=(*wrappers, label), depth=depth + 1, continued=True,
                )  # fmt: skip
                return
            self.read_script(
                outcome.script, wrappers=(*wrappers, label), redirects=redirects, depth=depth + 1
            )
            return
        start = outcome.start + 1  # from the wrapper's arguments to indexes in argv
        end = len(argv) if outcome.end is None else outcome.end + 1
        inner = argv[start:end] or outcome.default
        if inner and inner[0] in _RESERVED_WORDS:
            # `time ! rm x`: Bash's `time` takes a pipeline, which `!` starts.
            self.problems.append(f"{label} runs the reserved word {inner[0]!r}")
        if 0 < start < len(argv) and start in computed:
            self.problems.append(f"{label} runs a program the shell computes: {argv[start]!r}")
        self._add(
            argv=inner,
            expanded=tuple(i - start for i in expanded if start <= i < end),
            assignments=outcome.assignments,
            redirects=redirects,
            wrappers=(*wrappers, label),
            depth=depth + 1,
            fed=_fed_words(outcome, inner, fed, start=start, end=end, outer=len(argv)),
            found_paths=_found_paths(outcome, inner, found_paths, start=start, end=end),
        )


def _fed_words(
    outcome: Unwrapped,
    inner: tuple[str, ...],
    fed: tuple[int, ...],
    *,
    start: int,
    end: int,
    outer: int,
) -> tuple[int, ...]:
    """Which words of the command a wrapper runs (``inner``: its wrapper's words ``start:end``
    of ``outer``) are filled in when it runs: by the wrapper (``xargs``, ``find -exec``), or
    already in the wrapper's own words (``fed``: ``xargs sudo tar`` gives tar its input)."""
    found = {index - start for index in fed if start <= index < end}
    if outcome.appends_input or (outcome.end is None and outer in fed):
        found.add(len(inner))
    if outcome.placeholder:
        found.update(i for i, word in enumerate(inner) if outcome.placeholder in word)
    return tuple(sorted(found))


def _found_paths(
    outcome: Unwrapped,
    inner: tuple[str, ...],
    found_paths: tuple[int, ...],
    *,
    start: int,
    end: int,
) -> tuple[int, ...]:
    """Which words of the command a wrapper runs are paths ``find`` finds (see
    ``CommandPart.found_paths``): a whole ``{}`` it fills in, or one its wrapper's own words
    had, unless this wrapper puts its input there (``find . -exec xargs -I{} sed p {} ;``)."""
    paths = {index - start for index in found_paths if start <= index < end}
    if outcome.placeholder:
        filled = {i for i, word in enumerate(inner) if outcome.placeholder in word}
        if outcome.fills_paths:
            paths.update(i for i in filled if inner[i] == "{}")
        else:
            paths.difference_update(filled)
    return tuple(sorted(paths))


# -- words -------------------------------------------------------------------------------------


def _between(source: bytes, base: int, left: Node, right: Node) -> str | None:
    """What separates two tokens of a command (whose text ``source`` starts at byte ``base``):
    "" (nothing: they are one word), blanks, or None (something tree-sitter skipped that is
    not a blank)."""
    gap = source[left.end_byte - base : right.start_byte - base].decode(errors="replace")
    rest = gap.replace("\\\n", "")  # a line continuation joins
    if rest.strip(" \t\n"):
        return None
    return rest


def _text(node: Node) -> str:
    return (node.text or b"").decode(errors="replace")


def _word(*nodes: Node) -> _Word:
    """A word (of one node, or of several touching ones) as the program receives it.

    ``expanded`` when the shell computes any of it.
    """
    pieces: list[tuple[str, bool]] = []  # (text, quoted)
    expanded = False
    for node in nodes:
        expanded = _pieces(node, pieces) or expanded
    value = "".join(text for text, _ in pieces)
    if expanded:
        source = "".join(_text(node) for node in nodes)
        home = _HOME_WORD.fullmatch(source.replace('"', ""))
        if home is not None:
            return _Word(value, expanded=True, home=(home["before"] or "", home["rest"]))
        read = _QUOTED_READ.fullmatch(source)
        if read is not None:
            name, rest = read["name"] or read["braced"], read["inside"] + read["after"]
            return _Word(value, expanded=True, variable=(name, rest))
    pattern = "".join(_QUOTED * len(text) if quoted else text for text, quoted in pieces)
    if _BRACES.search(pattern):
        return _Word(value, expanded=True)
    if _GLOB.search(pattern):
        if expanded:
            return _Word(value, expanded=True)
        glob = "".join(
            _GLOB_SPECIAL.sub(r"\\\g<0>", text) if quoted else text for text, quoted in pieces
        )
        return _Word(value, expanded=True, glob=glob)
    return _Word(value, expanded=expanded)


_TEST_STRUCTURE = frozenset({"unary_expression", "binary_expression", "parenthesized_expression",
                             "negated_expression", "postfix_expression"})  # fmt: skip


def _test_words(node: Node) -> list[_Word]:
    """The words of ``[ ... ]`` / ``[[ ... ]]`` in order, as ``test`` would receive them."""
    if node.type in _TEST_STRUCTURE:
        return [w for child in node.children for w in _test_words(child)]
    if node.type == "test_operator" or not node.is_named:
        return [_Word(_text(node), expanded=False)]
    return [_word(node)]


def _pieces(node: Node, pieces: list[tuple[str, bool]]) -> bool:
    kind = node.type
    text = _text(node)
    if kind in ("word", "number") or (not node.is_named and not node.children):
        pieces.extend(_unescape_bare(text))
        return False
    if kind == "raw_string":
        pieces.append((text[1:-1], True))
        return False
    if kind == "ansi_c_string":
        value, exact = _ansi_c(text[2:-1])
        pieces.append((value, True))
        return not exact  # not what Bash makes of it: as if computed
    if kind == "string":
        return _double_quoted(node, pieces)
    if kind == "concatenation":
        expanded = False
        for child in node.children:
            expanded = _pieces(child, pieces) or expanded
        return expanded
    # expansions, substitutions, arrays, anything we do not read: computed by the shell
    pieces.append((text, True))
    return True


def _double_quoted(node: Node, pieces: list[tuple[str, bool]]) -> bool:
    """The inside of ``"..."``: literal text unescaped, expansions kept as written."""
    expanded = False
    source = node.text or b""
    base = node.start_byte
    cursor = 1
    for child in node.named_children:
        start, end = child.start_byte - base, child.end_byte - base
        pieces.append((_unescape_double(source[cursor:start].decode(errors="replace")), True))
        if child.type == "string_content":
            pieces.append((_unescape_double(_text(child)), True))
        else:
            pieces.append((_text(child), True))
            expanded = True
        cursor = end
    pieces.append((_unescape_double(source[cursor:-1].decode(errors="replace")), True))
    return expanded


def _unescape_bare(text: str) -> list[tuple[str, bool]]:
    r"""Unquoted text: ``\x`` is a quoted ``x``; a backslash-newline disappears."""
    pieces: list[tuple[str, bool]] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char == "\\" and index + 1 < len(text):
            if text[index + 1] != "\n":
                pieces.append((text[index + 1], True))
            index += 2
            continue
        pieces.append((char, False))
        index += 1
    return pieces


_DOUBLE_ESCAPES = re.compile(r'\\([$`"\\\n])')


def _unescape_double(text: str) -> str:
    r"""Inside double quotes a backslash escapes only ``$ ` " \`` and newline."""
    return _DOUBLE_ESCAPES.sub(lambda m: "" if m.group(1) == "\n" else m.group(1), text)


_ANSI_C = re.compile(r"\\(x[0-9A-Fa-f]{1,2}|u[0-9A-Fa-f]{1,4}|U[0-9A-Fa-f]{1,8}|[0-7]{1,3}|c.|.)")
_ANSI_C_SIMPLE = {
    "a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r",
    "t": "\t", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?",
}  # fmt: skip


def _ansi_c(text: str) -> tuple[str, bool]:
    r"""The value of ``$'...'`` (bash's escapes: ``\n``, ``\x41``, ``\101``, ``\u00e9``...), and
    whether it is exactly what Bash makes of it.

    ``\x`` and octal escapes are one byte, the low eight bits of the number (``\562`` is
    ``r``); a byte past ASCII is kept as Python keeps an undecodable byte of a file name
    (``\udcf2``). ``\8`` and ``\9`` are no escape. ``\u`` and ``\U`` past Unicode or in its
    surrogates are not exact. Bash ends the value at a NUL (``\0``, ``\x00``, ``\c@``):
    ``$'rm\0x'`` is ``rm``.
    """
    exact = True

    def replace(match: re.Match[str]) -> str:
        nonlocal exact
        code = match.group(1)
        if code[0] in "xuU" and len(code) == 1:
            return "\\" + code  # no digits: kept as written
        if code[0] == "x" or code[0] in "01234567":
            byte = int(code[1:], 16) if code[0] == "x" else int(code, 8) & 0xFF
            return chr(byte) if byte < 0x80 else chr(0xDC00 + byte)
        if code[0] in "uU":
            value = int(code[1:], 16)
            if value > 0x10FFFF or 0xD800 <= value <= 0xDFFF:
                exact = False
                return "\\" + code
            return chr(value)
        if code[0] == "c" and len(code) == 2:
            return chr(ord(code[1]) & 0x1F)
        return _ANSI_C_SIMPLE.get(code, "\\" + code)

    value = _ANSI_C.sub(replace, text)
    return value.partition("\0")[0], exact


_EXPANSION_MARK = re.compile(r"[$`]")
_EXPANSION_NODES = frozenset(
    {*_SUBSTITUTIONS, "expansion", "simple_expansion", "arithmetic_expansion"}
)


def _has_expansion(node: Node) -> bool:
    """Whether the parser found an expansion or substitution anywhere inside ``node``."""
    return node.type in _EXPANSION_NODES or any(_has_expansion(c) for c in node.children)


_NAME_TABLES = ("BASH_ALIASES", "BASH_CMDS")


def _renaming(argv: Sequence[str], assignments: Sequence[str]) -> str | None:
    """Why a part changes which program a later name runs, if it does (SPEC §9.3: then the
    parts found are not what runs, and the command asks).

    ``alias ls=rm``, ``hash -p /bin/rm ls``, ``enable`` (loads or hides builtins) and writes to
    ``BASH_ALIASES`` / ``BASH_CMDS`` make ``ls x`` run something else.
    """
    for word in (*assignments, *argv):
        if any(table in word for table in _NAME_TABLES):
            return f"{word!r} changes which program a name runs"
    if not argv:
        return None
    program, args = argv[0], argv[1:]
    if program == "alias" and any("=" in arg for arg in args):
        return "alias changes what a later word runs"
    if program == "hash" and any(arg.startswith("-") and "p" in arg for arg in args):
        return "hash -p changes which file a name runs"
    if program == "enable" and args:
        return "enable loads or hides builtins, changing what a name runs"
    return None


_CODE_VARIABLES = re.compile(
    r"(PS[0-4]|PROMPT_COMMAND|BASH_ENV|ENV|PATH|LD_PRELOAD|LD_AUDIT|LD_LIBRARY_PATH"
    r"|[A-Z_]*PAGER|[A-Z_]*EDITOR|VISUAL|BROWSER|LESSOPEN|LESSCLOSE|[A-Z_]*ASKPASS"
    r"|GIT_SSH|GIT_SSH_COMMAND|GIT_EXTERNAL_DIFF|GIT_PROXY_COMMAND|GIT_EXEC_PATH"
    r"|GIT_DIR|GIT_COMMON_DIR|GIT_TEMPLATE_DIR"
    r"|GIT_CONFIG(?:_PARAMETERS|_COUNT|_KEY_\d+|_VALUE_\d+|_GLOBAL|_SYSTEM)?"
    r"|TAR_OPTIONS|RSYNC_RSH|RSYNC_CONNECT_PROG|MANOPT|ZIPOPT|LESS|LESSKEY(?:IN|_CONTENT)?"
    r"|PERL5OPT|RUBYOPT|NODE_OPTIONS|VIMINIT|EXINIT|GVIMINIT)"
)
"""Variables whose value decides what the shell or a program runs later: a prompt or trace
string (``PS4='$(rm x)'`` with ``set -x``), a file a shell sources (``BASH_ENV``, ``ENV``), a
command line (``GIT_EXTERNAL_DIFF``, ``PAGER``), a library loaded into every program
(``LD_PRELOAD``), the folders a name is looked up in (``PATH=.:$PATH ls`` may run a file
``./ls``, which a deny rule on ``rm`` never sees), or options and settings that name a command
or carry code (``GIT_CONFIG_VALUE_0``, ``TAR_OPTIONS=--to-command=...``, ``RSYNC_RSH``,
``PERL5OPT=-M...``, ``NODE_OPTIONS=--import data:...``, ``VIMINIT``), or the repository whose
settings and hooks git takes (``GIT_DIR``; ``GIT_TEMPLATE_DIR``, the hooks a new one copies)."""
_FILLS_VARIABLE = re.compile(
    r"\b(?:read|mapfile|readarray|getopts)\b|\bprintf\s+-v|=\$\(|=`|=\$\{|=\$[A-Za-z_]"
    r"|\bfor\s+[A-Za-z_]\w*\s+in\b"
)
"""Text that gives a variable a value from outside the command: ``read x < f``, ``mapfile``,
``x=$(cat f)``, ``x=$y``, ``for x in $(cat f)``."""
_ARITHMETIC_BODY = re.compile(r"\(\(([^)]*)|\$\[([^\]]*)")
"""An arithmetic expression's text: ``$((…))``, ``((…))``, ``for ((…))``, ``$[…]``. Each match
runs to its closing bracket (or the end), so a search over many ``((`` stays linear."""
_ARITHMETIC_WORDS = re.compile(
    r"\blet\s|\s-(?:eq|ne|lt|le|gt|ge)\s|\$\{#?[A-Za-z_]\w*(?::|\[)"
    r"|\b(?:declare|typeset|local)\s+-\w*i"
)
_NAME_START = re.compile(r"[A-Za-z_]")


def _reads_arithmetic(text: str) -> bool:
    """Whether Bash evaluates a variable's value as arithmetic somewhere in ``text``:
    ``$((x))``, ``$[x]``, ``((x))``, ``let``, ``[[ x -eq 1 ]]``, ``${s:x}``, ``${a[x]}``,
    ``declare -i``."""
    if _ARITHMETIC_WORDS.search(text):
        return True
    return any(
        _NAME_START.search(match.group(1) or match.group(2) or "")
        for match in _ARITHMETIC_BODY.finditer(text)
    )


_SETS_VARIABLE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(\[.*\])?\+?=", re.DOTALL)
_VARIABLE_SETTERS = frozenset(
    {"export", "declare", "typeset", "local", "readonly", "read", "mapfile", "readarray",
     "printf", "getopts"}
)  # fmt: skip
_DECLARATIONS = frozenset({"declare", "typeset", "local", "readonly", "export"})
_SOURCING = frozenset({"source", "."})


def _hidden_code(argv: Sequence[str], assignments: Sequence[str]) -> str | None:
    """Why a part runs code the analysis cannot see, if it does (SPEC §9.3: then the parts
    found are not all that runs, and the command asks).

    ``. f`` and ``source f`` run the commands of a file (one the same command may have just
    written), and may define functions that change what later names run; a variable of
    ``_CODE_VARIABLES`` set by an assignment or a builtin decides what runs later; a name
    reference (``declare -n``) can set any variable under another name. A value holding a
    command in a subscript (``x='a[$(rm y)]'``) runs that command wherever arithmetic reads
    the variable (``$((x))``, ``${s:x}``, ``[[ x -eq 1 ]]``).
    """
    for assignment in assignments:
        setting = _SETS_VARIABLE.match(assignment)
        if setting is not None and _CODE_VARIABLES.fullmatch(setting.group(1)):
            return f"{assignment!r} sets what runs later"
        if setting is not None and _command_in_subscript(assignment[setting.end() :]):
            return f"{assignment!r} holds a command that arithmetic reading it runs"
    if not argv:
        return None
    program = argv[0]
    if program in _SOURCING:
        return f"{program} runs the commands of a file, which are not analysed"
    if program not in _VARIABLE_SETTERS:
        return None
    for word in argv[1:]:
        setting = _SETS_VARIABLE.match(word)
        name = setting.group(1) if setting is not None else word
        if _CODE_VARIABLES.fullmatch(name):
            return f"{program} {word} sets what runs later"
        if program in _DECLARATIONS and word.startswith("-") and "n" in word:
            return f"{program} {word} makes a name refer to another variable"
    return None


_EXPORTERS = frozenset({"export", "set", *_DECLARATIONS})


def _exports(argv: Sequence[str]) -> bool:
    """Whether a part puts variables in the environment of the programs run after it:
    ``export``, ``declare -x`` (``typeset``, ``local``, ``readonly``), ``set -a`` or
    ``set -o allexport``."""
    program = argv[0]
    if program == "export":
        return len(argv) > 1
    if program in _DECLARATIONS:
        return any(_option_with(word, "x") for word in argv[1:])
    if program == "set":
        return any(_option_with(word, "a") for word in argv[1:]) or "allexport" in argv
    return False


def _option_with(word: str, letter: str) -> bool:
    """Whether ``word`` is a cluster of short options holding ``letter`` (``-gx``)."""
    return word[:1] == "-" and word[1:2] != "-" and letter in word


def _deeper_than(root: Node, limit: int) -> bool:
    """Whether any node of the tree is more than ``limit`` levels below ``root`` (no recursion)."""
    if root.descendant_count <= limit:
        return False  # a chain of nodes is no longer than their number: most commands stop here
    stack = [(root, 0)]
    while stack:
        node, level = stack.pop()
        if level > limit:
            return True
        stack.extend((child, level + 1) for child in node.children)
    return False


_WORD_HOLDERS = frozenset({"word", "concatenation", "command", "string", "string_content"})
"""Nodes that keep the two sides of a continuation in one word (a command's touching words are
joined again by ``_between``)."""


def _split_at(root: Node, source: bytes, index: int) -> bool:
    """Whether the parser puts the two word characters around the backslash-newline at
    ``index`` in different words (a redirection target or an assignment cut in two)."""
    if not joins_word_characters(source, index):
        return False
    node = root.descendant_for_byte_range(index - 1, index + 3)
    if node is None or node.type not in _WORD_HOLDERS:
        return True
    if node.type != "command":
        return False
    # Two touching words of a command are joined again; a redirection's target is not.
    sides = (
        root.descendant_for_byte_range(index - 1, index),
        root.descendant_for_byte_range(index + 2, index + 3),
    )
    for leaf in sides:
        side = leaf
        while side is not None and side.parent is not None and side.parent != node:
            side = side.parent
        if side is None or side.type in _REDIRECTS or side.type == "variable_assignment":
            return True
    return False


_LITERAL_NODES = frozenset({"raw_string", "comment"})
"""Nodes whose backslash-newlines Bash keeps as they are."""


def _continuation_counts(root: Node, index: int) -> bool:
    """Whether Bash removes the backslash-newline at byte ``index`` before reading tokens.

    Not inside single quotes or a comment, nor in the body of a heredoc whose delimiter is
    quoted (whose unquoted bodies are checked by the heredoc's own end check, and here).
    """
    node: Node | None = root.descendant_for_byte_range(index, index + 1)
    while node is not None:
        if node.type in _LITERAL_NODES:
            return False
        if node.type == "heredoc_body" and node.parent is not None:
            start = next((c for c in node.parent.children if c.type == "heredoc_start"), None)
            read = heredoc_delimiter(_text(start)) if start is not None else None
            return read is None or not read[1]
        node = node.parent
    return True


def _error_place(root: Node, text: str) -> str:
    """Where the first syntax error is, for the problem text."""
    node = _first_error(root)
    if node is None:
        return repr(text[:80])
    row, column = node.start_point
    line = text.splitlines()[row] if row < len(text.splitlines()) else ""
    return f"line {row + 1} column {column + 1}: {line[:80]!r}"


def _first_error(node: Node) -> Node | None:
    if node.type == "ERROR" or node.is_missing:
        return node
    for child in node.children:
        if child.has_error:
            found = _first_error(child)
            if found is not None:
                return found
    return None
