"""Words a command gets when it runs: from ``xargs``'s input, the names ``find`` finds, or the
shell.

``xargs CMD ARGS`` adds the words it reads after ``ARGS``; ``xargs -I R CMD ARGS`` and
``find -exec CMD ARGS {} ;`` put them where ``R`` or ``{}`` stand (``CommandPart.fed`` says
where); the shell computes variables, substitutions and globs (``CommandPart.expanded``: a
variable set beside, ``f=--expression=...; sed -n p $f``, or a glob matching a file named
``-e...``). No rule sees them before the command runs. For most programs that does not matter:
``xargs grep x`` searches more files. For a program whose words decide what it runs it does:
fed ``--to-command=rm -rf src``, ``xargs tar -xf a.tar`` runs rm; fed ``-c CODE``,
``xargs python3`` runs that code; fed ``-e '1e rm -rf src'``, ``xargs sed -i s/a/b/`` runs rm
(GNU sed reads options after its operands).

:func:`fed_words_run` says when such words may make a part run a command no rule reads: the part
then asks under any Bash deny or ask rule, even in bypass mode (SPEC §9.3 step 1f, as code given
inline does: ``runtime/permission_content``). Every program with a wrapper reader
(``shell_wrappers``) or an inline code judge (``inline_code``) counts, unless its reader proves
the words land where they cannot change what it runs:

* a wrapper given its command before them (``xargs sudo rm``, ``xargs env X=1 cat``): they are
  that command's words, and its own part is judged (``xargs sudo tar`` asks at tar);
* a shell given its ``-c`` script or its script file before them: they are the script's
  arguments (a word it computes from them is judged where it stands in the script);
* awk given an operand before them (its program, or a file after ``-f``): awk reads no option
  after its first operand, so they are input files or ``var=value`` assignments;
* an interpreter given its script file before them (``xargs python3 x.py``): they are the
  script's arguments (``inline_code.script_file_at``);
* git given, before them, a subcommand none of whose options names a command
  (``git_commands.QUIET_SUBCOMMANDS``: ``xargs git add``, ``find -exec git rm {} ;``): words after
  the subcommand are not git's own options (``-c``), and git ignores an alias of that name.

Programs that read options after their operands (``sed``, ``tar``, ``rsync``, ``ssh``, ``man``,
``zip``) ask for words that may be options. Two kinds of word cannot be options: the path
``find -exec``/``-ok`` puts in place of a whole ``{}`` (it begins with a start point written in
the command: ``CommandPart.found_paths``), and a glob or brace expansion whose text begins
with a plain character and holds no ``$`` or backquote (each word it gives begins with that
character, and it splits into no other words). Such a word is an operand, which runs nothing
for ``sed`` once its script is given before it (an input file:
``inline_code.sed_input_files``), nor for ``tar`` after its options (a member; options come
first, so no old-style ``tar xf``; no option's value, but the archive ``-f`` names when it is
a path ``find`` found). Nor does it, given to ``find`` itself, wherever it stands: a start
point, a test's value, or a word of the command ``-exec`` runs (judged on that command's own
part), never a test, an action or the ``;`` that ends a command. So
``find . -exec sed -n 1,5p {} ;``, ``sed -n p src/*.py`` and ``find src/* -name x`` run, while
``sed -n p *`` and ``sed -n p "$f"`` ask (a name or a value may begin with ``-``).

Everything else asks: interpreters given no script file (a fed ``-c`` comes before any the
input names), editors, database shells, ``find`` (fed words go on with its expression:
``-delete``, ``-exec``), and wrappers whose command comes from the input (already a problem of
the analysis).
"""

from __future__ import annotations

from collections.abc import Sequence

from fsm_agent.core.command_options import parse_arguments
from fsm_agent.core.git_commands import QUIET_SUBCOMMANDS, without_git_globals
from fsm_agent.core.inline_code import (
    awk_operands_start,
    has_judge,
    script_file_at,
    sed_input_files,
)
from fsm_agent.core.shell_commands import CommandPart
from fsm_agent.core.shell_wrappers import SHELL_OPTIONS, SHELLS, WRAPPERS
from fsm_agent.core.wrapper_reading import Unwrapped

_AWKS = frozenset({"awk", "gawk", "mawk", "nawk"})


def fed_words_run(part: CommandPart) -> str | None:
    """Why the words ``part`` is given when it runs, or that the shell computes, may make it
    run a command, or None."""
    computed = [index for index in part.expanded if index > 0]
    if not (part.fed or computed) or not part.argv:
        return None
    program = part.argv[0].rsplit("/", 1)[-1]
    if program not in WRAPPERS and not has_judge(program):
        return None
    args = part.argv[1:]
    fed, paths = frozenset(part.fed), frozenset(part.found_paths)  # looked up once a word
    words = {*fed, *computed}
    plain = _plain_operands(
        program,
        args,
        [i - 1 for i in words if _no_option(part.argv, i, fed=fed, paths=paths)],
        paths={i - 1 for i in paths},
    )
    words.difference_update(i + 1 for i in plain)  # from its arguments to argv
    if not words:
        return None
    first = min(words)
    harmless_after = _harmless_after(program, args)
    if harmless_after is not None and first - 1 > harmless_after:  # from argv to its arguments
        return None
    if first in fed:
        source = part.wrappers[-1] if part.wrappers else "a wrapper"
        return f"the words {source} gives {program} may make it run a command"
    return f"the words the shell computes for {program} may make it run a command"


_PLAIN_START = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./")


def _no_option(
    argv: Sequence[str], index: int, *, fed: frozenset[int], paths: frozenset[int]
) -> bool:
    """Whether the word at ``argv[index]``, filled in (``fed``, of which ``paths`` are paths
    ``find`` finds) or computed when the part runs, gives only words that are no option (see
    the module's text)."""
    if index in paths:
        return True
    if index in fed or index >= len(argv):
        return False
    word = argv[index]
    return word[:1] in _PLAIN_START and "$" not in word and "`" not in word


def _plain_operands(
    program: str, args: Sequence[str], words: Sequence[int], *, paths: set[int]
) -> set[int]:
    """Which of ``words`` (indexes in ``args`` of words that are no option; ``paths``: those
    that are paths ``find`` finds) are operands that cannot make ``program`` run a command."""
    if program in ("sed", "gsed"):
        return sed_input_files(args, words)
    if program == "find":
        return set(words)  # a start point, a test's value, or a word of the command -exec runs
    if program in ("tar", "gtar") and args[0].startswith("-"):  # no old-style `tar xf`
        return {
            index
            for index in words
            if index > 0 and _tar_operand(args[index - 1], found=index in paths)
        }
    return set()


def _tar_operand(before: str, *, found: bool) -> bool:
    """Whether a word after ``before`` that is no option is a member tar reads or writes, or
    the archive ``-f`` names when the word is a path ``find`` found (``./x``: GNU tar reaches a
    name with a colon before any slash, ``host:file``, through a remote shell); not the value
    of an option that may name a command (``-I``, ``-F``)."""
    if before[:1] != "-":
        return True  # an operand before it, or the value of an option: this one is neither
    return found and before[1:2] != "-" and before.endswith("f")


def _harmless_after(program: str, args: Sequence[str]) -> int | None:
    """The index in ``args`` (the words after the program) after which words, whatever they
    are, cannot change what the program runs, as its reader proves; None when it does not."""
    if program == "git":
        rest = without_git_globals(args)
        if not rest or rest[0] not in QUIET_SUBCOMMANDS:
            return None
        return len(args) - len(rest)
    if program in SHELLS:
        if any(arg.startswith("+") for arg in args):
            return None
        parsed = parse_arguments(args, SHELL_OPTIONS)
        if parsed.problem is not None or parsed.rest_index >= len(args):
            return None
        return parsed.rest_index
    if program in _AWKS:
        return awk_operands_start(args)
    script = script_file_at(program, args)
    if script is not None:
        return script
    outcome = WRAPPERS[program](args) if program in WRAPPERS else None
    if isinstance(outcome, Unwrapped) and outcome.script is None and outcome.end is None:
        return outcome.start if outcome.start < len(args) else None
    return None
