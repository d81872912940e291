"""Programs given code in their own language by the command itself, which no Bash rule reads.

A Bash deny rule reads command text: ``Bash(rm:*)`` sees ``rm`` after ``&&`` or inside
``sh -c '...'`` (``shell_commands`` follows both), but not inside ``awk 'BEGIN{system("rm x")}'``,
``python3 -c "import os; os.system('rm x')"``, ``sed '1e rm x'``, ``vim -c '!rm x'`` or
``sqlite3 db '.shell rm x'``: there the shell command is spelled in another language, or built
at run time, and telling what it runs would need that language's parser and more. Such a part
asks under any Bash deny or ask rule, even in bypass mode (SPEC §9.3 step 1f: the rule cannot
read that code; ``runtime/permission_content``). Without such a rule there is nothing to dodge
and bypass runs it.

:func:`unread_code` says why a part runs such code, or None:

* an interpreter given inline code (``python3 -c``, ``perl -e``/``-E`` and ``-M`` with more than
  a module name, ``ruby -e``, ``node -e``/``-p``, ``php -r``, ``lua -e``, ``Rscript -e``,
  ``osascript -e``, ``pwsh -c``, ``deno eval``, ``bun -e``, ``expect -c``, ``julia -e``,
  ``dc -e``, ``emacs --eval``), or reading its code from its input (``python3``, ``python3 -``,
  a heredoc or here-string fed to it: the input may come from a pipe the part does not see);
* ``awk`` programs that call ``system``, use a pipe (``print | "cmd"``, ``"cmd" | getline``)
  or ``@`` (gawk's indirect calls, ``@load``), unless ``gawk --sandbox``; other awk programs run
  no command;
* ``sed`` scripts with GNU's ``e`` command or ``s///e`` flag, or that we cannot read through;
* editors and pagers given commands: ``vim -c``/``+cmd``/``--cmd``/``-e``, ``ex``, ``ed`` (its
  commands come from its input), ``less +cmd`` and key files;
* database shells given commands or reading them from their input (``sqlite3 db 'SQL'``,
  ``psql -c``, ``mysql -e``), ``m4`` (``syscmd``), ``crontab`` installing a table, and
  ``make`` given makefile code (``--eval``, ``X:=$(shell ...)``, ``-f -``);
* git where following is not sound (``git_commands``: ``core.hooksPath``...).

Script files stay allowed (``python3 x.py``, ``bash x.sh``, ``sed -f x.sed``, ``make``,
``npm test``): a deny rule sees command text, not files' code, and asking for every script would
leave bypass mode nothing to run; a sandbox is the tool for what files do. Input redirected
from a file (``sqlite3 db < schema.sql``) is such a file.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Sequence

import attrs

from fsm_agent.core.command_options import (
    Arity,
    Option,
    OptionTable,
    ParsedArguments,
    abbreviates_any,
    loose_table,
    parse_arguments,
)
from fsm_agent.core.git_commands import git_runs
from fsm_agent.core.shell_commands import CommandPart

FROM_INPUT = "it reads code from its input"


def unread_code(part: CommandPart) -> str | None:
    """Why ``part`` runs code given in the command that no Bash rule can read, or None (also
    for a program name whose words are in a file: ``CommandPart.continued``)."""
    if not part.argv or part.continued:
        return None
    program = part.argv[0].rsplit("/", 1)[-1]
    judge = _judge_of(program)
    if judge is None:
        return None
    stdin_file = _input_from_file(part)
    why = judge(part.argv[1:], stdin_file)
    return f"{program}: {why}" if why is not None else None


_Judge = Callable[[Sequence[str], bool], "str | None"]
"""Given a program's arguments and whether its input is a file, why it runs unread code."""


def _input_from_file(part: CommandPart) -> bool:
    """Whether the part's input is a file (``< f``), not a heredoc, a here-string or a pipe."""
    inputs = [r for r in part.redirects if r.operator.lstrip("0") in _STDIN_REDIRECTS]
    return bool(inputs) and inputs[-1].operator.lstrip("0") == "<" and not inputs[-1].expanded


_STDIN_REDIRECTS = frozenset({"<", "<<", "<<-", "<<<", "<&"})


# -- interpreters ------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class _Interpreter:
    """An interpreter's options, as far as finding inline code and the script file needs.

    Attributes:
        inline: letters whose value (or the cluster's rest) is code, or that read code from
            the input (``php -a``).
        values: letters taking a value: the rest of the cluster or the next word.
        attached: letters taking the rest of the cluster only (``perl -i.bak``).
        digits: letters taking the octal digits after them (``perl -l0``, ``-0777``).
        flags: letters taking nothing.
        stops: letters after which the rest is not the interpreter's (``python3 -m mod``).
        script_values: letters whose value is the script file, after which the interpreter
            still reads options (``expect -f x.exp -c CMD``, ``php -f x.php -r CODE``).
        modules: letters whose value must be a plain module name (``perl -MFoo=bar``).
        long_inline, long_values, long_flags, long_stops, long_script_values: long options,
            likewise.
        needs_script: without a script operand it reads code from its input.
        options_after_operands: it reads options after its operands too (GNU getopt's
            permutation: ``dc x.dc -e CODE``).
    """

    inline: str = ""
    values: str = ""
    attached: str = ""
    digits: str = ""
    flags: str = ""
    stops: str = ""
    script_values: str = ""
    modules: str = ""
    long_inline: frozenset[str] = frozenset()
    long_values: frozenset[str] = frozenset()
    long_flags: frozenset[str] = frozenset()
    long_stops: frozenset[str] = frozenset()
    long_script_values: frozenset[str] = frozenset()
    needs_script: bool = True
    options_after_operands: bool = False


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


_MODULE = re.compile(r"-?[A-Za-z_][\w:]*(?:=[\w:,.-]*)?")
"""A plain module for ``perl -M``: more (``-MPOSIX;system(...)``, ``=x}``) is code perl runs."""


def _judge_interpreter(spec: _Interpreter) -> _Judge:
    def judge(args: Sequence[str], stdin_file: bool) -> str | None:
        why, _ = _read_interpreter(spec, args)
        if why == FROM_INPUT and stdin_file:
            return None  # `python3 < script.py`: a script file
        return why

    return judge


def _read_interpreter(spec: _Interpreter, args: Sequence[str]) -> tuple[str | None, int | None]:
    """Why the interpreter's arguments give it code, reading options up to its script file,
    and where that file stands (None when it is not given, or where is not known)."""
    index = 0
    while index < len(args):
        word = args[index]
        index += 1
        if word == "--":
            if index < len(args):
                return None, index
            return (FROM_INPUT if spec.needs_script else None), None
        if word == "-":
            return FROM_INPUT, None
        if word.startswith("--"):
            name, has_value, value = word[2:].partition("=")
            if name in spec.long_inline:
                return f"--{name} gives it code", None
            if name in spec.long_stops:
                return None, None
            if name in spec.long_script_values:  # the script; options go on after it
                return _anywhere(spec, args[index + (not has_value) :]), None
            if name in spec.long_values and not has_value:
                value = args[index] if index < len(args) else ""
                index += 1
            if value.startswith("data:"):
                return f"--{name} {value[:20]} gives it code", None
            if not (has_value or name in spec.long_values or name in spec.long_flags):
                return _anywhere(spec, args[index - 1 :]), None
        elif word.startswith("-"):
            read = _cluster(spec, args, index)
            if isinstance(read, _Stopped):
                return None, read.at
            if isinstance(read, str):
                return read, None
            index = read
        elif spec.options_after_operands:
            return _anywhere(spec, args[index:]), None
        else:
            return None, index - 1  # the script file, and its arguments
    return (FROM_INPUT if spec.needs_script else None), None


def script_file_at(program: str, args: Sequence[str]) -> int | None:
    """Where the script file (or module: ``python3 -m mod``) stands in the arguments of an
    interpreter that leaves every word after it to the script (``python3 x.py -c y``), or
    None: not such an interpreter, no script file, or code given otherwise."""
    spec = _SCRIPT_FIRST.get(program)
    if spec is None and _PYTHON_NAME.fullmatch(program):
        spec = _LUA if program.startswith("lua") else _PYTHON
    if spec is None:
        return None
    why, at = _read_interpreter(spec, args)
    return at if why is None else None


@attrs.frozen
class _Stopped:
    """Past a cluster the rest is not the interpreter's: from the script file or module named
    at ``at`` (``python3 -m mod``), or from where we do not know (None)."""

    at: int | None


def _cluster(spec: _Interpreter, args: Sequence[str], index: int) -> int | str | _Stopped:
    """Read the cluster ``args[index - 1]``: the next index, a reason (inline code), or where
    the rest stops being the interpreter's."""
    word = args[index - 1]
    position = 1
    while position < len(word):
        letter = word[position]
        position += 1
        rest = word[position:]
        if letter in spec.inline:
            return f"-{letter} gives it code"
        if letter in spec.stops:
            return _Stopped(at=index - 1 if rest else (index if index < len(args) else None))
        if letter in spec.script_values:  # the script; options go on after it
            why = _anywhere(spec, args[index + (not rest) :])
            return _Stopped(at=None) if why is None else why
        if letter in spec.values or letter in spec.modules:
            value = rest
            if not rest:
                value = args[index] if index < len(args) else ""
                index += 1
            if (letter in spec.modules and not _MODULE.fullmatch(value)) or value.startswith(
                "data:"
            ):
                return f"-{letter}{value} gives it code"
            return index
        if letter in spec.attached:
            return index
        if letter in spec.digits:
            hexadecimal = letter == "0" and rest[:1] == "x"
            digits = re.match(r"x[0-9A-Fa-f]*" if hexadecimal else r"[0-7]*", rest)
            position += len(digits.group()) if digits else 0
        elif letter not in spec.flags:
            why = _anywhere(spec, args[index - 1 :])
            return _Stopped(at=None) if why is None else why
    return index


def _anywhere(spec: _Interpreter, words: Sequence[str]) -> str | None:
    """After an option we do not know (which may take the next word), where the script starts
    is not known: any later word that may give inline code counts."""
    for word in words:
        if word == "--":
            return None
        name = word[2:].partition("=")[0] if word.startswith("--") else ""
        if name in spec.long_inline or word == "-":
            return f"{word} may give it code"
        if not name and word.startswith("-") and set(word[1:]) & set(spec.inline + spec.modules):
            return f"{word} may give it code"
    return None


_PYTHON = _Interpreter(
    inline="c",
    values="WXQ",
    flags="bBdEhiIOPqRsSuvVx3",
    stops="m",
    long_values=_names("check-hash-based-pycs"),
    long_flags=_names("help version help-env help-xoptions help-all"),
)
_PERL = _Interpreter(
    inline="eE",
    values="I",
    modules="Mm",
    attached="iFxdDCV",
    digits="l0",
    flags="acnpsStTuUvwWXhg",
    long_flags=_names("help version"),
)
_RUBY = _Interpreter(
    inline="e",
    values="IrCE",
    attached="iWxKTF",
    digits="0",
    flags="acdhlnpsSvwyU",
    long_values=_names("encoding external-encoding internal-encoding enable disable dump"),
    long_flags=_names("version help verbose copyright yydebug jit yjit"),
)
_NODE = _Interpreter(
    inline="ep",
    values="rC",
    flags="icvh",
    long_inline=_names("eval print"),
    long_values=_names(
        "require import loader experimental-loader conditions input-type env-file title "
        "inspect-port stack-size max-old-space-size run"
    ),
    long_flags=_names(
        "version help interactive check test watch inspect inspect-brk trace-warnings "
        "trace-deprecation throw-deprecation pending-deprecation enable-source-maps no-warnings "
        "no-deprecation preserve-symlinks preserve-symlinks-main experimental-vm-modules "
        "experimental-strip-types experimental-transform-types experimental-detect-module "
        "abort-on-uncaught-exception expose-gc trace-uncaught frozen-intrinsics"
    ),
)
_PHP = _Interpreter(
    inline="rBREa",
    values="cdztS",
    script_values="fF",
    flags="CeHhilmnqsvw",
    long_values=_names("rf rc re rz ri"),
    long_flags=_names("ini"),
)
_LUA = _Interpreter(inline="e", values="l", flags="iEvW")
_R_SCRIPT = _Interpreter(
    inline="e",
    long_flags=_names(
        "verbose vanilla no-environ no-site-file no-init-file restore no-restore save no-save "
        "no-echo quiet silent slave interactive help version"
    ),
)
_R = attrs.evolve(
    _R_SCRIPT,
    values="dg",
    script_values="f",
    long_script_values=_names("file"),
    options_after_operands=True,
)
_OSASCRIPT = _Interpreter(inline="e", values="ls", flags="i")
_EXPECT = _Interpreter(inline="c", values="D", script_values="fb", flags="dinNv")
_JULIA = _Interpreter(
    inline="eE",
    values="pJLCOgtm",
    flags="hviq",
    long_inline=_names("eval print"),
    long_flags=_names("help version quiet interactive banner"),
)
_DC = _Interpreter(
    inline="e",
    script_values="f",
    flags="hV",
    long_inline=_names("expression"),
    long_script_values=_names("file"),
    options_after_operands=True,
)
_BUN = _Interpreter(inline="ep", long_inline=_names("eval print"), needs_script=False)


def _bun(args: Sequence[str], stdin_file: bool) -> str | None:
    """``bun -e CODE`` / ``--print``: bun reads options anywhere before ``--``."""
    return _anywhere(_BUN, args)


def _deno(args: Sequence[str], stdin_file: bool) -> str | None:
    """``deno eval CODE`` gives code; ``deno`` alone or ``deno repl`` reads it from the input."""
    words = [word for word in args if not word.startswith("-")]
    if not args or (words[:1] == ["repl"]):
        return None if stdin_file else FROM_INPUT
    return "deno eval gives it code" if words[:1] == ["eval"] else None


def _powershell(args: Sequence[str], stdin_file: bool) -> str | None:
    """``pwsh -c``/``-Command``/``-EncodedCommand`` (any case, any start of the name, before
    ``-File``); ``pwsh`` alone or ``-`` reads commands from the input."""
    if not args:
        return None if stdin_file else FROM_INPUT
    for word in args:
        name = word.lstrip("-/").lower()
        if word == "-":
            return FROM_INPUT
        if not word.startswith(("-", "/")) or not name:
            continue
        if "file".startswith(name) and name.startswith("f"):
            return None
        if name.startswith("c") or (name.startswith("e") and not name.startswith("ex")):
            return f"{word} gives it commands"
    return None


def _emacs(args: Sequence[str], stdin_file: bool) -> str | None:
    """``emacs --eval EXPR`` (``-eval``, ``--execute``): Lisp given in the command."""
    for word in args:
        if word.lstrip("-").partition("=")[0] in ("eval", "execute"):
            return f"{word} gives it code"
    return None


# -- awk and sed -------------------------------------------------------------------------------

_AWK = _Interpreter(
    values="FvfeEilW",
    attached="dDLop",
    flags="bcCghMnNOPrsStVY",
    long_values=_names("field-separator assign file source exec include load"),
    long_flags=_names(
        "characters-as-bytes traditional copyright gen-pot help lint lint-old bignum "
        "use-lc-numeric non-decimal-data optimize no-optimize posix re-interval sandbox version "
        "csv dump-variables debug pretty-print profile"
    ),
)
_AWK_RUNS = re.compile(r"system|\||@")
"""What in an awk program may run a command: ``system()``, a pipe to or from a command
(``|``, ``|&``; ``||`` too, which only asks more), gawk's ``@`` (indirect calls, ``@load``)."""
_AWK_FILES = frozenset({"f", "E", "file", "exec"})
_AWK_SOURCES = frozenset({"e", "source"})


def awk_operands_start(args: Sequence[str]) -> int | None:
    """Where awk's operands start in its arguments (its program, or its first file when
    ``-f``/``-e`` give the program), or None when there are none or an option is not one we
    read: awk reads no option after it, so later words are input files or ``var=value``
    assignments, which run nothing."""
    read = _read_options(_AWK, args, permute=False)
    if read is None or not read[1]:
        return None
    return len(args) - len(read[1])


def _gawk(args: Sequence[str], stdin_file: bool) -> str | None:
    """gawk, whose ``--sandbox`` (``-S``) turns off all that runs commands."""
    return _awk_runs(args, sandbox_counts=True)


def _awk(args: Sequence[str], stdin_file: bool) -> str | None:
    """An awk that may not be gawk: ``--sandbox`` is not trusted (the one-true-awk warns about
    an option it does not know and runs the program anyway)."""
    return _awk_runs(args, sandbox_counts=False)


def _awk_runs(args: Sequence[str], *, sandbox_counts: bool) -> str | None:
    """awk runs a command only as its program says (``system``, a pipe); ``-f`` is a file."""
    read = _read_options(_AWK, args, permute=False)
    if read is None:
        return "an option we do not read may give it code"
    given, operands = read
    if sandbox_counts and any(name in ("S", "sandbox") for name, _ in given):
        return None
    files = [value for name, value in given if name in _AWK_FILES]
    if any(_is_input(value) for value in files):
        return FROM_INPUT
    programs = [value for name, value in given if name in _AWK_SOURCES]
    if not files and not programs:
        programs = list(operands[:1])
    if any(_AWK_RUNS.search(program) for program in programs):
        return "its program may run a command (system, a pipe or @)"
    return None


_SED = _Interpreter(
    values="efl",
    attached="i",
    flags="nrEszu",
    long_values=_names("expression file line-length"),
    long_flags=_names(
        "quiet silent regexp-extended separate null-data zero-terminated unbuffered debug "
        "posix sandbox follow-symlinks binary help version in-place"
    ),
)
_SED_ADDRESS = re.compile(
    r"\s*(?:(?:\d+(?:~\d+)?|\$|/(?:\\.|[^/\\\n])*/|\\(.)(?:\\.|(?!\1)[^\\])*\1)[IM]*"
    r"(?:\s*,\s*(?:\d+|\$|[+~]\d+|/(?:\\.|[^/\\\n])*/[IM]*))?)?\s*!*\s*",
    re.DOTALL,
)
"""A sed address (``1``, ``$``, ``/re/``, ``\\%re%``, ``1~2``, ``a,b``, ``!``). A backslash in a
regex is only ever the start of an escape: were it also a character of its own, a run of them
with no closing delimiter could be split both ways, and the match would try every split."""
_SED_FLAGS = re.compile(r"[gpiImMe0-9]*")
_SED_LABEL = re.compile(r"[ \t]*[^\s;}]*")
_SED_SIMPLE = frozenset("{}=dDgGhHnNpPxzF")
_SED_TO_LINE_END = frozenset("aicrRwW#")
_SED_TO_SEMICOLON = frozenset(":btTqQlLv")


def _sed(args: Sequence[str], stdin_file: bool) -> str | None:
    """GNU sed's ``e`` command and ``s///e`` flag run the shell; ``--sandbox`` refuses them;
    ``-f`` is a script file."""
    read = _read_options(_SED, args, permute=True)
    if read is None:
        return "an option we do not read may give it a script"
    given, operands = read
    if any(name == "sandbox" for name, _ in given):
        return None
    files = [value for name, value in given if name in ("f", "file")]
    if any(_is_input(value) for value in files):
        return FROM_INPUT
    scripts = [value for name, value in given if name in ("e", "expression")]
    if not files and not scripts:
        scripts = list(operands[:1])
    for script in scripts:
        why = _sed_runs(script)
        if why is not None:
            return why
    return None


def sed_input_files(args: Sequence[str], words: Iterable[int]) -> set[int]:
    """Which of ``words`` (indexes in ``args`` of words that are no option) are sed's input
    files: its script is given before the word (an operand, ``-e`` or ``-f``), and the word is
    no option's value. Read once from left to right, between one such word and the next
    (getopt keeps no state across an operand but ``--``, which read afresh only says no more
    often); an option we do not read, which may take the next words, ends the search."""
    files: set[int] = set()
    start, script_given = 0, False
    for index in sorted(words):
        read = _read_options(_SED, args[start:index], permute=True)
        if read is None:
            break  # an option we do not read, or `-e`/`-l` whose value is this word
        given, operands = read
        script_given = script_given or bool(operands) or any(n in _SED_SCRIPTS for n, _ in given)
        if script_given:
            files.add(index)
        script_given, start = True, index + 1  # this word is the script when none was given
    return files


_SED_SCRIPTS = frozenset({"e", "expression", "f", "file"})


def _is_input(path: str) -> bool:
    """Whether a script file named in the command is the program's input."""
    return path in ("-", "/dev/stdin") or path.startswith("/dev/fd/")


def _read_options(
    spec: _Interpreter, args: Sequence[str], *, permute: bool
) -> tuple[list[tuple[str, str]], list[str]] | None:
    """The options (letter or long name, value) and operands of ``args`` as ``spec`` says;
    None for an option we do not know. ``permute``: options may follow operands (GNU)."""
    parsed = parse_arguments(args, _option_table(spec, permute=permute))
    if parsed.problem is not None:
        return None
    given = [(option.name.lstrip("-"), option.value or "") for option in parsed.options]
    return given, list(parsed.operands)


@functools.cache
def _option_table(spec: _Interpreter, *, permute: bool) -> OptionTable:
    """``spec`` as the shared option reader's table: a long flag may be given a value inline
    (``--in-place=.bak``, ``--lint=fatal``)."""
    return OptionTable(
        short=dict.fromkeys(spec.flags, Arity.NONE)
        | dict.fromkeys(spec.attached, Arity.OPTIONAL)
        | dict.fromkeys(spec.values, Arity.REQUIRED),
        long=dict.fromkeys(spec.long_flags, Arity.OPTIONAL)
        | dict.fromkeys(spec.long_values, Arity.REQUIRED),
        stops_at_operand=not permute,
    )


def _sed_runs(script: str) -> str | None:
    """Why a sed script may run a command: an ``e`` command, an ``s///e`` flag, or a command we
    cannot read past (which may hide one)."""
    position = 0
    while position < len(script):
        if script[position] in " \t\n;":
            position += 1
            continue
        address = _SED_ADDRESS.match(script, position)
        position = address.end() if address else position
        if position >= len(script):
            return None
        command = script[position]
        position += 1
        if command == "e":
            return "its script runs a command (e)"
        if command in _SED_SIMPLE:
            continue
        if command in _SED_TO_LINE_END:
            position = _line_end(script, position)
        elif command in _SED_TO_SEMICOLON:
            position = _label_end(script, position)
        elif command in "sy":
            read = _sed_delimited(script, position, 2)
            if read is None:
                return f"its script {script[position - 1 : position + 20]!r} is not read"
            position = read
            if command == "s":
                flags = _SED_FLAGS.match(script, position)  # from where it stands: no copy
                letters = flags.group() if flags else ""
                if "e" in letters:
                    return "its script runs a command (s///e)"
                position += len(letters)
                if script[position : position + 1] == "w":
                    position = _line_end(script, position)
        else:
            return f"its script {script[position - 1 : position + 20]!r} is not read"
        if position < len(script) and script[position] not in " \t\n;}#":
            return f"its script {script[position : position + 20]!r} is not read"
    return None


def _line_end(script: str, position: int) -> int:
    """Past the text of ``a``/``i``/``c``/``r``/``w``: to the end of the line, a line ending in a
    backslash going on."""
    while position < len(script):
        if script[position] == "\\":
            position += 2
            continue
        if script[position] == "\n":
            return position
        position += 1
    return position


def _label_end(script: str, position: int) -> int:
    """Past the label of ``b``/``:``/``v``, or the number of ``q``/``l``...: GNU sed ends the
    word at a blank, ``;`` or ``}``, and reads what follows a blank as the next command
    (``:a e CMD`` and ``v 4.2 e CMD`` run CMD)."""
    found = _SED_LABEL.match(script, position)
    return found.end() if found else position


def _sed_delimited(script: str, position: int, parts: int) -> int | None:
    """Past ``/regex/replacement/`` (``parts`` parts after a delimiter), or None."""
    if position >= len(script) or script[position] in "\\\n":
        return None
    delimiter = script[position]
    position += 1
    for _ in range(parts):
        while position < len(script) and script[position] != delimiter:
            position += 2 if script[position] == "\\" else 1
        if position >= len(script):
            return None
        position += 1
    return position


# -- editors, pagers, database shells ----------------------------------------------------------

_PLAIN_START = re.compile(r"\+\+?(?:\d*[GgF]?|/[^\n]*)")
"""A start-up command that only moves (``+42``, ``+G``, ``+/pattern``)."""


def _vim(args: Sequence[str], stdin_file: bool) -> str | None:
    """vim's ``-c CMD``, ``+CMD``, ``--cmd CMD``, remote keys, and ex mode (commands read from
    the input)."""
    for word in args:
        if word == "--":
            return None
        if word.startswith("+") and not _PLAIN_START.fullmatch(word):
            return f"{word} gives it commands"
        if word.startswith("-c") or word in ("--cmd", "--remote-send", "--remote-expr"):
            return f"{word} gives it commands"
        if word in ("-e", "-E", "-es", "-Es") and not stdin_file:
            return FROM_INPUT
    return None


def _ex(args: Sequence[str], stdin_file: bool) -> str | None:
    """``ex`` and ``ed`` take their commands from the input (``!cmd`` runs the shell)."""
    return _vim(args, stdin_file) or (None if stdin_file else FROM_INPUT)


def _less(args: Sequence[str], stdin_file: bool) -> str | None:
    """``less +CMD`` runs a command at start (``+!cmd``); key files bind keys to commands."""
    for word in args:
        if word == "--":
            return None
        if word.startswith("+") and not _PLAIN_START.fullmatch(word):
            return f"{word} gives it commands"
        if word == "-k" or word.startswith(("--lesskey", "-k")):
            return f"{word} loads key bindings, which may run commands"
    return None


def _sqlite(args: Sequence[str], stdin_file: bool) -> str | None:
    """``sqlite3 DB 'SQL'`` (or ``-cmd``) gives it commands (``.shell``, ``.system``); without
    SQL it reads them from the input."""
    if any(word.lstrip("-") == "cmd" for word in args):
        return "-cmd gives it commands"
    if len([word for word in args if not word.startswith("-")]) > 1:
        return "it is given SQL and dot-commands (.shell, .system)"
    return None if stdin_file else FROM_INPUT


def _loose_options(args: Sequence[str], values: str, optional: str = "") -> ParsedArguments:
    """A getopt program's options read loosely (``command_options.loose_table``): only the
    letters in ``values`` take a value, those in ``optional`` one given inline."""
    return parse_arguments(args, _loose_table(values, optional))


@functools.cache
def _loose_table(values: str, optional: str) -> OptionTable:
    return loose_table(values, optional)


def _gives(options: Sequence[Option], letters: str, longs: Sequence[str]) -> str | None:
    """The first option among ``letters`` or (any start of) ``longs``, as written."""
    for option in options:
        name = option.name
        if name[2:] and name[1] == "-":
            if abbreviates_any(name[2:], longs):
                return name
        elif name[1:] in letters:
            return name
    return None


def _psql(args: Sequence[str], stdin_file: bool) -> str | None:
    """``psql -c CMD`` (``\\!`` runs the shell), ``-v`` (prompts may run commands); without
    ``-f FILE`` (or ``-l``) it reads its commands from the input."""
    options = _loose_options(args, "cdfFhLoPpRTUv").options
    given = _gives(options, "cv", ("command", "set", "variable"))
    if given is not None:
        return f"{given} gives it commands"
    files = [option.value or "" for option in options if _gives((option,), "f", ("file",))]
    if any(value in ("-", "/dev/stdin") for value in files):
        return FROM_INPUT
    if files or _gives(options, "lV?", ("list", "version", "help")) or stdin_file:
        return None
    return FROM_INPUT


def _mysql(args: Sequence[str], stdin_file: bool) -> str | None:
    """``mysql -e CMD`` (``system`` runs the shell), ``--init-command``, ``--pager``; without
    them it reads its commands from the input."""
    options = _loose_options(args, "DehPSuO").options
    given = _gives(options, "e", ("execute", "init-command", "pager"))
    if given is not None:
        return f"{given} gives it commands"
    if stdin_file or _gives(options, "V?", ("version", "help")):
        return None
    return FROM_INPUT


_M4_DEFINITION = re.compile(r"[A-Za-z_]\w*(?:=[\w.,:/+-]*)?")


def _m4(args: Sequence[str], stdin_file: bool) -> str | None:
    """m4 runs the shell from its input (``syscmd``); input files are script files, and a
    definition given in the command is code if it is more than a plain value."""
    parsed = _loose_options(args, "DUIlLoFRtH", optional="d")  # -d[FLAGS]
    for option in parsed.options:
        value = option.value or ""
        if _gives((option,), "D", ("define",)) and not _M4_DEFINITION.fullmatch(value):
            return f"-D{value} gives it code"
    operands = parsed.operands
    if "-" in operands or not (operands or stdin_file):
        return FROM_INPUT
    return None


def _crontab(args: Sequence[str], stdin_file: bool) -> str | None:
    """``crontab FILE`` or ``crontab -`` installs commands to run later; ``-l`` lists, ``-r``
    removes."""
    listed = ("-l", "-r", "-V", "-T", "--help", "--version")
    if any(option.name in listed for option in _loose_options(args, "u").options):
        return None
    return "it installs a table of commands to run later"


_MAKE_FUNCTION = re.compile(r"\$[({]")


def _make(args: Sequence[str], stdin_file: bool) -> str | None:
    """GNU make given makefile code: ``--eval``/``-E`` (``$(shell ...)`` runs the shell), a
    variable set to a function call (``X:=$(shell ...)`` runs at once), or ``-f -`` (its
    makefile from the input). A plain value (``CC=clang``) stays allowed: the makefile, a
    file, decides what runs with it."""
    parsed = _loose_options(args, "CfIoWE", optional="jlO")
    given = _gives(parsed.options, "E", ("eval",))
    if given is not None:
        return f"{given} gives it code"
    for word in parsed.operands:
        if "=" in word and _MAKE_FUNCTION.search(word):
            return f"{word[:40]!r} gives it code"
    files = [o.value or "" for o in parsed.options if _gives((o,), "f", ("file", "makefile"))]
    if any(_is_input(value) for value in files) and not stdin_file:
        return FROM_INPUT
    return None


def _git(args: Sequence[str], stdin_file: bool) -> str | None:
    """git where following what it runs is not sound (``git_commands``)."""
    return git_runs(args).unread


_PYTHON_NAME = re.compile(r"(?:python|pypy)[0-9.]*|lua(?:jit|[0-9.]*)")
"""Interpreters known by a family of names (``python3.12``, ``pypy3``, ``lua5.4``)."""
_PYTHON_JUDGE = _judge_interpreter(_PYTHON)
_LUA_JUDGE = _judge_interpreter(_LUA)

_SCRIPT_FIRST: dict[str, _Interpreter] = {
    "perl": _PERL,
    "ruby": _RUBY,
    **dict.fromkeys(("node", "nodejs"), _NODE),
    "php": _PHP,
    "Rscript": _R_SCRIPT,
    "osascript": _OSASCRIPT,
    "expect": _EXPECT,
    "julia": _JULIA,
}
"""Interpreters that read no option of their own after their script file, by name (``dc``
reads options after its files; ``R`` takes no script file there)."""

_JUDGES: dict[str, _Judge] = {
    **{name: _judge_interpreter(spec) for name, spec in _SCRIPT_FIRST.items()},
    "R": _judge_interpreter(_R),
    "dc": _judge_interpreter(_DC),
    "bun": _bun,
    "deno": _deno,
    **dict.fromkeys(("pwsh", "powershell"), _powershell),
    "emacs": _emacs,
    "gawk": _gawk,
    **dict.fromkeys(("awk", "mawk", "nawk"), _awk),
    **dict.fromkeys(("sed", "gsed"), _sed),
    **dict.fromkeys(("vi", "vim", "nvim", "view", "vimdiff", "gvim", "rvim", "evim"), _vim),
    **dict.fromkeys(("ex", "ed", "red"), _ex),
    "less": _less,
    "sqlite3": _sqlite,
    "psql": _psql,
    **dict.fromkeys(("mysql", "mariadb"), _mysql),
    "m4": _m4,
    "crontab": _crontab,
    **dict.fromkeys(("make", "gmake"), _make),
    "git": _git,
}
"""Programs that may be given code in the command, by name, and how that is told."""


def has_judge(program: str) -> bool:
    """Whether ``program`` (a name, not a path) may be given code in the command."""
    return _judge_of(program) is not None


def _judge_of(program: str) -> _Judge | None:
    judge = _JUDGES.get(program)
    if judge is None and _PYTHON_NAME.fullmatch(program):
        return _LUA_JUDGE if program.startswith("lua") else _PYTHON_JUDGE
    return judge
