"""Which shell commands are provably read-only: an allowlist of programs and of their options.

A command is read-only only if every part that ``analyse_command`` found is a program on the
list below, with every option on that program's own list, every path it reads inside the
working folder or a readable root, no words the shell computes, no wrapper around it and no
redirect other than to ``/dev/null``, between descriptors, or from a readable file. Anything
not proven read-only is not: the caller asks (SPEC §9.3: "read-only ⇒ allow", nothing else).

Options are read the way the program reads them (``command_options``), so ``sort --outp=f``
is ``--output`` and is refused. An abbreviation passes only when spelled out in full: our
tables list the options we know, and an abbreviation of an allowed option could be the exact
name of one we do not know (``git diff --output`` is also a prefix of the harmless
``--output-indicator-new``).

Options that take the names of the files to read from a file (``--files0-from``, ``md5sum
-c``) are refused: the names inside could lead anywhere.

Path checks are lexical here (``~``, ``..``); callers pass ``resolve`` (``os.path.realpath``)
to follow symlinks as well: the core does no I/O. Options that make a program follow symlinks
while it walks a tree (``grep -R``, ``find -L``, ``rg --follow``) are refused, and so are globs
(a match could be a link). What is not covered: programs named by the repository's own
configuration (git's ``core.fsmonitor``, diff drivers, ripgrep's config file): ``.git/`` and
the shell's start-up files are protected paths, so the agent cannot plant them unasked, and the
Bash tool runs git with ``safe.bareRepository=explicit``, so a folder of plain files the agent
wrote (``HEAD``, ``config``, ``refs/``) is not taken for a repository (a git too old to honour
it makes git commands ask: ``toolbox/git_reads``).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Mapping, Sequence

import attrs

from fsm_agent.core.command_options import (
    Arity,
    OptionTable,
    ParsedArguments,
    parse_arguments,
)
from fsm_agent.core.git_commands import GIT_GLOBALS, READ_ONLY_GIT_GLOBALS, without_git_globals
from fsm_agent.core.shell_commands import CommandAnalysis, CommandPart, Redirect
from fsm_agent.core.tree_transfers import sent_trees


@attrs.frozen(kw_only=True)
class ReadOnlyVerdict:
    """Whether a command is read-only, and why (naming the part that decided).

    Attributes:
        read_only: every part was proven read-only.
        reason: for a refusal, the part and what about it is not read-only; otherwise a short
            confirmation.
    """

    read_only: bool
    reason: str


def judge_read_only(
    analysis: CommandAnalysis,
    *,
    cwd: str,
    readable_roots: Sequence[str],
    home: str,
    resolve: Callable[[str], str] = posixpath.normpath,
    shell_dirs: Sequence[str] = (),
    resolve_under: Callable[[str, str], str] | None = None,
) -> ReadOnlyVerdict:
    """Judge a command by allowlist.

    Args:
        analysis: the command, from ``analyse_command``.
        cwd: the working folder (absolute); relative paths resolve against it.
        readable_roots: further folders whose files may be read (``additionalDirectories``).
        home: what ``~`` stands for.
        resolve: turns an absolute path, ``..`` included, into the path it really names; the
            default removes ``..`` by the text alone; pass ``os.path.realpath`` so a symlink
            cannot lead outside (``link/../x`` is then beside where the link points).
        shell_dirs: further folders (absolute) the shell may be in when the command starts
            (the ``cd`` of an earlier part, judged apart); a path must be inside from each.
        resolve_under: given a folder ``resolve`` gave and a relative path, what ``resolve``
            gives for the two joined, looking up only the path's own names (a long command
            judged from many folders otherwise looks each folder up again for every word).
    """
    if analysis.problem is not None:
        return ReadOnlyVerdict(read_only=False, reason=f"cannot be analysed: {analysis.problem}")
    if not analysis.parts:
        return ReadOnlyVerdict(read_only=False, reason="there is no command to run")
    places = _Places(
        cwd=cwd,
        shell_dirs=tuple(dict.fromkeys((cwd, *shell_dirs))),
        roots=tuple(readable_roots),
        home=home,
        resolve=resolve,
        resolve_under=resolve_under,
    )
    for part in analysis.parts:
        why = _refusal(part, places)
        if why is None and part.argv[0] == "cd":
            places, why = places.entered(_cd_target(part.argv[1:], home) or "")
        if why is not None:
            shown = part.text or " ".join(part.assignments) or _redirections_text(part)
            return ReadOnlyVerdict(read_only=False, reason=f"`{shown}`: {why}")
    return ReadOnlyVerdict(read_only=True, reason="read-only command")


@attrs.frozen(kw_only=True)
class _Places:
    """Where reading is allowed, and where the shell may be when a part runs.

    After ``cd src`` the shell is in ``src`` for the parts that follow, unless the ``cd`` ran
    in a subshell: both are kept in ``shell_dirs``, and a path must be inside from each.
    """

    cwd: str
    shell_dirs: tuple[str, ...]
    roots: tuple[str, ...]
    home: str
    resolve: Callable[[str], str]
    resolve_under: Callable[[str, str], str] | None = None
    allowed: tuple[str, ...] = attrs.field(init=False)
    """The working folder and the readable roots, resolved (once: every word is judged)."""
    resolved_dirs: tuple[str, ...] = attrs.field(init=False)
    """``shell_dirs`` resolved, once."""

    @allowed.default
    def _resolved_roots(self) -> tuple[str, ...]:
        return tuple(self.resolve(posixpath.normpath(root)) for root in (self.cwd, *self.roots))

    @resolved_dirs.default
    def _resolved_dirs(self) -> tuple[str, ...]:
        return tuple(self.resolve(folder) for folder in self.shell_dirs)

    def _from(self, index: int, path: str) -> str:
        """``path`` from the ``index``-th folder the shell may be in, resolved: by
        ``resolve_under`` from the folder resolved once, when given."""
        if self.resolve_under is not None and not path.startswith("/"):
            return self.resolve_under(self.resolved_dirs[index], path)
        # Not normalised first: `link/../x` is beside where the link points, not `x`.
        return self.resolve(posixpath.join(self.shell_dirs[index], path))

    def entered(self, target: str) -> tuple[_Places, str | None]:
        """These places after ``cd target`` (already judged to stay inside)."""
        if target == "~" or target.startswith("~/"):
            target = self.home + target[1:]
        # Resolved as a whole: `cd link/..` is where the link points, up one.
        joined = (self.resolve(posixpath.join(d, target)) for d in self.shell_dirs)
        dirs = tuple(dict.fromkeys((*self.shell_dirs, *joined)))
        if len(dirs) > MAX_SHELL_DIRS:
            return self, f"more than {MAX_SHELL_DIRS} folders the shell may be in"
        return attrs.evolve(self, shell_dirs=dirs), None

    def outside(self, path: str) -> bool:
        """Whether ``path`` names something outside the working folder and readable roots."""
        if path in ("-", "/dev/null"):
            return False
        if path == "~" or path.startswith("~/"):
            path = self.home + path[1:]
        elif path.startswith("~"):
            return True  # another user's home
        for index in range(len(self.shell_dirs)):
            full = self._from(index, path)
            if not any(_within(full, root) for root in self.allowed):
                return True
        return False


MAX_SHELL_DIRS = 16
"""``cd`` after ``cd`` doubles the folders to check from; past this many, the command asks."""


def _cd_target(args: Sequence[str], home: str) -> str | None:
    """Where ``cd args`` goes, or None when it is not a plain ``cd [-L|-P] [--] [DIR]``."""
    words = [arg for arg in args if arg not in ("-L", "-P")]
    if words[:1] == ["--"]:
        words = words[1:]
    if not words:
        return home
    if len(words) > 1 or words[0].startswith("-"):
        return None  # `cd -` goes back to a folder not known here
    return words[0]


def _cd(program: str, args: Sequence[str], places: _Places) -> str | None:
    """``cd DIR`` changes nothing but where later parts run: DIR must be inside."""
    target = _cd_target(args, places.home)
    if target is None:
        return "cd other than `cd [-L|-P] DIR` is not judged read-only"
    if places.outside(target):
        return f"cd {target} leaves the working folder"
    return None


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


# -- one part ----------------------------------------------------------------------------------

_ENVIRONMENT_PRINTERS = {
    "env": "prints the environment (or runs a program)",
    "printenv": "prints the environment",
    "set": "prints the shell's variables",
    "export": "prints or changes the environment",
    "declare": "prints or changes shell variables",
    "typeset": "prints or changes shell variables",
    "compgen": "can list the environment",
}

_LOCALE = r"(?:[A-Za-z0-9_]+(?:\.[A-Za-z0-9_-]+)?(?:@[A-Za-z0-9_]+)?)?"
_SAFE_ASSIGNMENT = re.compile(
    rf"(?:(?:LC_[A-Z]+|LANG)={_LOCALE}|LANGUAGE={_LOCALE}(?::{_LOCALE})*"
    r"|TZ=(?:[A-Za-z0-9_+-]+(?:/[A-Za-z0-9_+-]+)*)?|NO_COLOR=[^$`]*|COLUMNS=[0-9]*)"
)
"""``VAR=value`` prefixes a read-only command may carry. A zone or locale name is a file the C
library reads under its own folders, so only plain names pass: ``TZ=/etc/shadow``,
``TZ=:/path``, ``TZ=../../x``, ``LC_ALL=/tmp/x`` or ``LANGUAGE=../x`` would read a file
elsewhere (``NLSPATH``, ``GCONV_PATH``, ``LOCPATH`` are not listed at all)."""
_PROGRAM_DIRS = ("/bin/", "/usr/bin/", "/usr/local/bin/")


def _refusal(part: CommandPart, places: _Places) -> str | None:
    """Why ``part`` is not read-only, or ``None`` when it is."""
    if not part.argv and part.assignments:
        return "assigns shell variables, which changes what later commands do"
    if not part.argv:
        return "opens its redirections without running a program (`> f` empties f)"
    if part.wrappers:
        return f"runs inside {part.wrappers[-1]}, which is never judged read-only"
    for assignment in part.assignments:
        if not _SAFE_ASSIGNMENT.fullmatch(assignment):
            return f"sets {assignment.split('=', 1)[0]} for the program"
    if part.expanded:
        return f"uses {part.argv[part.expanded[0]]}, which the shell computes"
    for redirect in part.redirects:
        why = _redirect_refusal(redirect, places)
        if why is not None:
            return why
    program = part.argv[0]
    if "/" in program:
        if not program.startswith(_PROGRAM_DIRS):
            return f"runs the program file {program}"
        program = program.rsplit("/", 1)[1]
    if program in _ENVIRONMENT_PRINTERS:
        return f"{program} {_ENVIRONMENT_PRINTERS[program]}"
    judge = _PROGRAMS.get(program)
    if judge is None:
        return f"{program} is not on the read-only list"
    return judge(program, part.argv[1:], places)


def _redirections_text(part: CommandPart) -> str:
    return " ".join(f"{redirect.operator} {redirect.target}" for redirect in part.redirects)


def _redirect_refusal(redirect: Redirect, places: _Places) -> str | None:
    operator, target = redirect.operator, redirect.target
    bare = operator.lstrip("0123456789")  # without its file descriptor
    if redirect.expanded:
        return f"redirects {operator} to {target}, which the shell computes"
    if bare in ("<<", "<<-", "<<<"):
        return None  # data written in the command itself
    if bare in (">&", "<&") and (target.isdigit() or target == "-"):
        return None  # between descriptors (2>&1, >&2) or closing one
    if bare in (">", ">>", "&>", "&>>", ">|"):
        return None if target == "/dev/null" else f"writes to {target} ({operator})"
    if bare == "<":
        return f"reads {target}, outside the working folder" if places.outside(target) else None
    return f"redirects with {operator} {target}"


# -- the allowlist -----------------------------------------------------------------------------

_Judge = Callable[[str, Sequence[str], _Places], "str | None"]


@attrs.frozen(kw_only=True)
class _Rule:
    """A program's options: all we know, which are allowed, and what its operands are."""

    table: OptionTable
    allowed: frozenset[str]
    path_options: frozenset[str]
    operands: str = "paths"  # "paths", "text", or "pattern" (a pattern, then paths)
    pattern_options: frozenset[str] = frozenset()  # given, the first operand is a path too
    max_operands: int | None = None


def _rule(
    allowed: str,
    refused: str = "",
    *,
    operands: str = "paths",
    digits: bool = False,
    pattern_options: str = "",
    max_operands: int | None = None,
) -> _Rule:
    """A rule from option spellings.

    ``-a`` takes no value, ``-n=`` a required one, ``--color=?`` an optional inline one, and
    ``-f=@`` a required path that is checked like an operand. ``refused`` lists options the
    program has that are not read-only: known, so abbreviations resolve to them.
    """
    short: dict[str, Arity] = dict.fromkeys("0123456789", Arity.NONE) if digits else {}
    long: dict[str, Arity] = {}
    allowed_names = {f"-{d}" for d in short}
    paths: set[str] = set()
    for group, is_allowed in ((allowed, True), (refused, False)):
        for spelling in group.split():
            name, equals, value = spelling.partition("=")
            arity = Arity.NONE if not equals else Arity.OPTIONAL if value == "?" else Arity.REQUIRED
            if name.startswith("--"):
                long[name[2:]] = arity
            else:
                short[name[1:]] = arity
            if is_allowed:
                allowed_names.add(name)
            elif name in allowed_names:
                # Listed twice, the option would pass: a refused option must stay refused.
                raise ValueError(f"{name} is both allowed and refused")
            if value == "@":
                paths.add(name)
    return _Rule(
        table=OptionTable(short=short, long=long),
        allowed=frozenset(allowed_names),
        path_options=frozenset(paths),
        operands=operands,
        pattern_options=frozenset(pattern_options.split()),
        max_operands=max_operands,
    )


def _judge_by_rule(rule: _Rule) -> _Judge:
    def judge(program: str, args: Sequence[str], places: _Places) -> str | None:
        return _rule_refusal(program, rule, parse_arguments(args, rule.table), places)

    return judge


def _rule_refusal(
    program: str, rule: _Rule, parsed: ParsedArguments, places: _Places
) -> str | None:
    if parsed.problem is not None:
        return f"{program}: {parsed.problem}"
    for option in parsed.options:
        written = option.written.partition("=")[0]
        if option.name not in rule.allowed:
            spelled = written if written == option.name else f"{written} (that is {option.name})"
            return f"{program} {spelled} is not a read-only option"
        if written != option.name:
            return f"{program} {written} abbreviates {option.name}; spell options out in full"
        if option.name in rule.path_options and option.value and places.outside(option.value):
            return f"reads {option.value}, outside the working folder"
    if rule.max_operands is not None and len(parsed.operands) > rule.max_operands:
        return f"{program} with more than {rule.max_operands} operand(s) writes or changes"
    if rule.operands == "text":
        return None
    operands = parsed.operands
    if rule.operands == "pattern" and not any(
        option.name in rule.pattern_options for option in parsed.options
    ):
        operands = operands[1:]
    for operand in operands:
        if places.outside(operand):
            return f"reads {operand}, outside the working folder"
    return None


_GREP = _rule(
    "-E -F -G -P -e= -f=@ -i -y -v -w -x -c --color=? --colour=? -L -l -m= -o -q -s -b -H -h "
    "-n -T -Z -z -A= -B= -C= -a -I -r -U --extended-regexp --fixed-strings --basic-regexp "
    "--perl-regexp --regexp= --file=@ --ignore-case --no-ignore-case --invert-match "
    "--word-regexp --line-regexp --count --files-without-match --files-with-matches "
    "--max-count= --only-matching --quiet --silent --no-messages --byte-offset --with-filename "
    "--no-filename --label= --line-number --initial-tab --null --null-data --after-context= "
    "--before-context= --context= --text --binary-files= --devices= -D= -d= --directories= "
    "--exclude= --exclude-from=@ --exclude-dir= --include= --recursive "
    "--line-buffered --binary --help --version",
    "-R --dereference-recursive",
    digits=True,
    operands="pattern",
    pattern_options="-e -f --regexp --file",
)

_RG = _rule(
    "-i -S -s -w -x -v -n -N -l -c -o -F -e= -f=@ -g= -t= -T= -u -A= -B= -C= -m= -d= -H -I "
    "-P -U -0 -a -j= -M= -r= -q -h -V -. -p -b --ignore-case --smart-case --case-sensitive "
    "--word-regexp --line-regexp --invert-match --line-number --no-line-number "
    "--files-with-matches --files-without-match --count --count-matches --only-matching "
    "--fixed-strings --regexp= --file=@ --glob= --iglob= --type= --type-not= --type-list "
    "--unrestricted --hidden --no-hidden --no-ignore --no-ignore-vcs --no-ignore-dot "
    "--no-ignore-parent --after-context= --before-context= --context= --max-count= "
    "--max-depth= --json --color= --colors= --heading --no-heading --with-filename "
    "--no-filename --files --sort= --sortr= --pcre2 --multiline --multiline-dotall --trim "
    "--vimgrep --null --text --threads= --max-columns= --max-columns-preview --replace= "
    "--column --no-column --stats --quiet --no-messages --no-config --ignore-file=@ --help "
    "--version --debug --engine= --passthru --line-buffered --block-buffered --byte-offset "
    "--pretty --max-filesize= --one-file-system --crlf --encoding= --null-data",
    "-z -L --follow --pre= --pre-glob= --search-zip --hostname-bin= --hyperlink-format=",
    operands="pattern",
    pattern_options="-e -f --regexp --file --files --type-list",
)

_SORT = _rule(
    "-b -d -f -g -h -i -M -n -R -r -V -c -C -m -s -u -z -k= -t= -S= --parallel= "
    "--buffer-size= --key= --field-separator= --ignore-leading-blanks --dictionary-order "
    "--ignore-case --general-numeric-sort --human-numeric-sort --ignore-nonprinting "
    "--month-sort --numeric-sort --random-sort --random-source=@ --reverse --version-sort "
    "--sort= --check=? --merge --stable --unique --zero-terminated --debug --help --version",
    "-o= --output= -T= --temporary-directory= --compress-program= --files0-from=",
)

_LS = _rule(
    "-a -A -b -B -c -C -d -D -f -F -g -G -h -H -i -k -l -m -n -N -o -p -q -Q -r -R -s -S -t "
    "-u -U -v -x -X -Z -1 -I= -w= -T= --all --almost-all --author --escape --block-size= "
    "--ignore-backups --color=? --directory --dired --classify=? --file-type --format= "
    "--full-time --group-directories-first --no-group --human-readable --si "
    "--dereference-command-line --dereference-command-line-symlink-to-dir --hide= "
    "--hyperlink=? --indicator-style= --inode --ignore= --kibibytes --numeric-uid-gid "
    "--literal --hide-control-chars --show-control-chars --quote-name --quoting-style= "
    "--reverse --recursive --size --sort= --time= --time-style= --tabsize= --width= --context "
    "--zero --help --version",
    "-L --dereference",
)

_COMMON_TEXT_TOOLS = {
    "cat": _rule(
        "-A -b -e -E -n -s -t -T -u -v --show-all --number-nonblank --number --squeeze-blank "
        "--show-ends --show-tabs --show-nonprinting --help --version"
    ),
    "head": _rule(
        "-c= -n= -q -v -z --bytes= --lines= --quiet --silent --verbose --zero-terminated "
        "--help --version",
        digits=True,
    ),
    "tail": _rule(
        "-c= -n= -q -v -z -f -F -s= --bytes= --lines= --quiet --silent --verbose "
        "--zero-terminated --follow=? --retry --sleep-interval= --pid= --max-unchanged-stats= "
        "--help --version",
        digits=True,
    ),
    "wc": _rule(
        "-c -m -l -L -w --bytes --chars --lines --max-line-length --words --total= "
        "--help --version",
        "--files0-from=",
    ),
    "nl": _rule(
        "-b= -d= -f= -h= -i= -l= -n= -p -s= -v= -w= --body-numbering= --section-delimiter= "
        "--footer-numbering= --header-numbering= --line-increment= --join-blank-lines= "
        "--number-format= --no-renumber --number-separator= --starting-line-number= "
        "--number-width= --help --version"
    ),
    "tac": _rule("-b -r -s= --before --regex --separator= --help --version"),
    "rev": _rule("--help --version"),
    "cut": _rule(
        "-b= -c= -d= -f= -n -s -z --bytes= --characters= --delimiter= --fields= --complement "
        "--only-delimited --output-delimiter= --zero-terminated --help --version"
    ),
    "tr": _rule(
        "-c -C -d -s -t --complement --delete --squeeze-repeats --truncate-set1 --help --version",
        operands="text",
    ),
    "uniq": _rule(
        "-c -d -D -u -i -f= -s= -w= -z --count --repeated --all-repeated=? --unique "
        "--ignore-case --skip-fields= --skip-chars= --check-chars= --zero-terminated --group=? "
        "--help --version",
        max_operands=1,
    ),
    "sort": _SORT,
    "diff": _rule(
        "-u -U= -c -C= -q -s -N -i -w -b -B -a -y -W= -p -t -T -x= -X=@ -I= -d -E -Z "
        "--brief --report-identical-files --new-file --unidirectional-new-file "
        "--ignore-case --ignore-all-space --ignore-space-change --ignore-blank-lines "
        "--ignore-tab-expansion --ignore-trailing-space --ignore-file-name-case "
        "--no-ignore-file-name-case --ignore-matching-lines= --text --side-by-side --width= "
        "--unified=? --context=? --color=? --normal --exclude= --exclude-from=@ "
        "--strip-trailing-cr --show-c-function --show-function-line= --expand-tabs "
        "--initial-tab --label= --no-dereference --minimal --speed-large-files "
        "--suppress-common-lines --left-column --suppress-blank-empty --tabsize= "
        "--from-file=@ --to-file=@ --horizon-lines= --starting-file= --help --version",
        "-r --recursive",
    ),
    "comm": _rule(
        "-1 -2 -3 -i -z --check-order --nocheck-order --output-delimiter= --total "
        "--zero-terminated --help --version"
    ),
    "cmp": _rule(
        "-b -l -s -i= -n= --print-bytes --verbose --quiet --silent --ignore-initial= "
        "--bytes= --help --version"
    ),
    "ls": _LS,
    "grep": _GREP,
    "egrep": _GREP,
    "fgrep": _GREP,
    "rg": _RG,
    "stat": _rule(
        "-L -f -t -c= --dereference --file-system --terse --format= --printf= --cached= "
        "--help --version"
    ),
    "du": _rule(
        "-0 -a -b -c -D -h -H -k -l -m -P -s -S -x -d= -t= -X=@ --null --all "
        "--apparent-size --block-size= --bytes --total --dereference-args --human-readable "
        "--inodes --count-links --max-depth= --no-dereference --separate-dirs "
        "--si --summarize --threshold= --time=? --time-style= --exclude-from=@ --exclude= "
        "--one-file-system --help --version",
        "-L --dereference --files0-from=",
    ),
    "df": _rule(
        "-a -h -H -i -k -l -P -T -t= -x= -B= --all --block-size= --human-readable --si "
        "--inodes --local --no-sync --output=? --portability --print-type --type= "
        "--exclude-type= --total --help --version"
    ),
    "file": _rule(
        "-b -c -E -h -i -k -l -L -N -n -r -s -S -0 -F= -e= -P= --brief --checking-printout "
        "--dereference --no-dereference --mime --mime-type --mime-encoding --keep-going --list "
        "--no-pad --no-buffer --raw --special-files --no-sandbox --print0 "
        "--separator= --exclude= --extension --apple --parameter= --help --version",
        "-C --compile -m= --magic-file= -f= --files-from= -z --uncompress -Z --uncompress-noreport "
        "-p --preserve-date",  # sets each file's times back after reading it: a write
    ),
    "tree": _rule(
        "-a -d -f -x -L= -P= -I= -q -N -Q -p -u -g -s -h -D -F -v -t -c -U -r -i -A -S -n -C "
        "-J -X --noreport --dirsfirst --filesfirst --gitignore --charset= --filelimit= --du "
        "--si --prune --matchdirs --ignore-case --inodes --device --sort= --timefmt= --help "
        "--version",
        "-o= -R -H= -T= -l --fromfile",
    ),
    "realpath": _rule(
        "-e -m -L -P -q -s -z --canonicalize-existing --canonicalize-missing "
        "--logical --physical --quiet --strip --no-symlinks --zero "
        "--relative-to=@ --relative-base=@ --help --version"
    ),
    "readlink": _rule(
        "-f -e -m -n -q -s -v -z --canonicalize --canonicalize-existing "
        "--canonicalize-missing --no-newline --quiet --silent --verbose --zero "
        "--help --version"
    ),
    "basename": _rule("-a -s= -z --multiple --suffix= --zero --help --version", operands="text"),
    "dirname": _rule("-z --zero --help --version", operands="text"),
    "od": _rule(
        "-A= -j= -N= -S= -t= -v -w=? -a -b -c -d -f -i -l -o -s -x --address-radix= "
        "--endian= --skip-bytes= --read-bytes= --strings=? --format= "
        "--output-duplicates --width=? --traditional --help --version"
    ),
    "pwd": _rule("-L -P --logical --physical --help --version"),
    "which": _rule("-a -s --all --help --version", operands="text"),
    "type": _rule("-a -f -p -P -t", operands="text"),
    "whoami": _rule("--help --version"),
    "id": _rule(
        "-a -Z -g -G -n -r -u -z --context --group --groups --name --real --user "
        "--zero --help --version",
        operands="text",
    ),
    "uname": _rule(
        "-a -s -n -r -v -m -p -i -o --all --kernel-name --nodename "
        "--kernel-release --kernel-version --machine --processor "
        "--hardware-platform --operating-system --help --version"
    ),
    "hostname": _rule(
        "-s -I --short --all-ip-addresses --help --version",
        "-f -d -i -A -a -y -b -F= --fqdn --long --domain --ip-address --all-fqdns --alias "
        "--yp --nis --boot --file=",  # names looked up in DNS (the network), or set
        max_operands=0,
    ),
    "nproc": _rule("--all --ignore= --help --version"),
    "seq": _rule(
        "-f= -s= -w --format= --separator= --equal-width --help --version", operands="text"
    ),
}
_CHECKSUM = _rule(
    "-b -t -z -w --binary --tag --text --zero --ignore-missing --quiet --status --strict --warn "
    "--help --version",
    "-c --check",
)
_COMMON_TEXT_TOOLS |= dict.fromkeys(("md5sum", "sha1sum", "sha256sum", "sha512sum"), _CHECKSUM)


def _prints_its_arguments(program: str, args: Sequence[str], places: _Places) -> str | None:
    """``echo``, ``true``, ``false``: every argument is text; nothing is read or written."""
    return None


def _printf(program: str, args: Sequence[str], places: _Places) -> str | None:
    """``printf FORMAT ARGS``; ``-v NAME`` assigns a shell variable instead of printing."""
    if args and args[0].startswith("-v"):
        return "printf -v assigns a shell variable"
    return None


_TEST_OPERATORS = frozenset({"!", "(", ")", "]", "=", "==", "!=", "<", ">"})


_SHELL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _test(program: str, args: Sequence[str], places: _Places) -> str | None:
    """``test`` and ``[``: every word that is not an operator may name a file.

    Bash's ``test -v NAME`` (and ``-R``) reads ``NAME[SUBSCRIPT]`` as an array element and
    computes the subscript as arithmetic, which runs any ``$(...)`` in it: ``test -v
    'a[$(rm x)]'`` runs ``rm``. Such an operand is refused unless it is a plain name.
    """
    for index, word in enumerate(args):
        if word in ("-v", "-R") and index + 1 < len(args):
            name = args[index + 1]
            if not _SHELL_NAME.fullmatch(name):
                return f"{program} {word} {name} computes a subscript, which can run commands"
        if word.startswith("-") or word in _TEST_OPERATORS:
            continue
        if places.outside(word):
            return f"looks at {word}, outside the working folder"
    return None


def _date(program: str, args: Sequence[str], places: _Places) -> str | None:
    """``date`` prints; ``date -s`` and a bare ``MMDDhhmm`` operand set the clock."""
    parsed = parse_arguments(args, _DATE.table)
    refusal = _rule_refusal(program, _DATE, parsed, places)
    if refusal is not None:
        return refusal
    if any(not operand.startswith("+") for operand in parsed.operands):
        return "date with an operand other than +FORMAT sets the clock"
    for option in parsed.options:
        if option.name in ("-d", "--date") and "TZ" in (option.value or ""):
            zones = _ZONE_IN_DATE.findall(option.value or "")
            if not zones or not all(_PLAIN_ZONE.fullmatch(zone) for zone in zones):
                return f"date {option.name} {option.value!r} names a zone that is not a plain name"
    return None


_PLAIN_ZONE = re.compile(r"[A-Za-z0-9_+-]+(?:/[A-Za-z0-9_+-]+)*")
_ZONE_IN_DATE = re.compile(r'TZ\s*=\s*"([^"]*)"')
"""``date -d 'TZ="Europe/Paris" 10:00'`` reads that zone's file, as ``TZ=`` does."""


_DATE = _rule(
    "-d= -f=@ -I=? -R -r=@ -u --date= --file=@ --iso-8601=? --rfc-email --rfc-3339= "
    "--reference=@ --utc --universal --debug --resolution --help --version",
    "-s= --set=",
    operands="text",
)


def _sed(program: str, args: Sequence[str], places: _Places) -> str | None:
    """``sed`` that only prints: no ``-i``, no script file, and scripts of printing commands."""
    parsed = parse_arguments(args, _SED.table)
    refusal = _rule_refusal(program, _SED, parsed, places)
    if refusal is not None:
        return refusal
    scripts = [o.value or "" for o in parsed.options if o.name in ("-e", "--expression")]
    if not scripts:
        scripts = list(parsed.operands[:1])
    for script in scripts:
        why = _sed_script_refusal(script)
        if why is not None:
            return f"sed {why}"
    return None


_SED = _rule(
    "-n -e= -E -r -z -u -s -l= --quiet --silent --expression= --regexp-extended --null-data "
    "--unbuffered --separate --line-length= --posix --debug --sandbox --help --version",
    "-i=? -f= --in-place=? --file= --follow-symlinks -b --binary",
    operands="pattern",
    pattern_options="-e --expression",
)

# One sed command of a printing script: an optional address or range, `!`, then the command.
# A label or number is on the command's line: sed skips blanks before it, not a line break
# (`t` then a line `e` is a branch to the end and a command running each line read).
_SED_ADDRESS = r"(?:\d+(?:~\d+)?|\$|/(?:\\.|[^/\\\n])*/[IM]*)"
_SED_COMMAND = re.compile(
    rf"\s*(?:{_SED_ADDRESS}(?:\s*,\s*(?:{_SED_ADDRESS}|[+~]\d+))?)?\s*!?\s*"
    r"(?P<command>[{}pPdDnNgGhHxz=lF]|[qQ][ \t]*\d*|l[ \t]*\d+|[btT](?:[ \t]*[^;}\s]+)?"
    r"|(?P<s>s)(?P<d>[^\\\n])(?:\\.|(?!(?P=d))[^\\])*(?P=d)(?:\\.|(?!(?P=d))[^\\])*(?P=d)"
    r"(?P<flags>[a-zA-Z0-9]*)"
    r"|y(?P<yd>[^\\\n])(?:\\.|(?!(?P=yd))[^\\])*(?P=yd)(?:\\.|(?!(?P=yd))[^\\])*(?P=yd))"
    r"\s*(?:;|\n|(?=})|(?<={)|$)"
)
_SED_SAFE_FLAGS = re.compile(r"[gpiImM0-9]*")
_SED_LABEL = re.compile(r":[ \t]*[^\s;}]+")
"""A label, ``:NAME``. GNU sed ends the name at a blank, ``;`` or ``}``, and what follows a
blank is the next command: ``:a w out`` writes ``out``, ``:a e CMD`` runs CMD."""


def _sed_script_refusal(script: str) -> str | None:
    """Why a sed script may write, read or run something; None when it only prints."""
    position = 0
    while position < len(script):
        if script[position].isspace() or script[position] == ";":
            position += 1
            continue
        label = _SED_LABEL.match(script, position)
        if label is not None:
            position = label.end()
            continue
        match = _SED_COMMAND.match(script, position)
        if match is None:
            return f"script {script[position : position + 20]!r} is not a printing command"
        flags = match.group("flags")
        if match.group("s") and not _SED_SAFE_FLAGS.fullmatch(flags or ""):
            return f"s///{flags} can write a file or run a command"
        position = match.end()
    return None


def _find(program: str, args: Sequence[str], places: _Places) -> str | None:
    """``find``: starting points inside, then only tests and printing actions."""
    index = 0
    while index < len(args) and args[index] in ("-H", "-L", "-P"):
        if args[index] == "-L":
            return "find -L follows symbolic links, out of the folder too"
        index += 1
    while index < len(args) and not args[index].startswith(("-", "(", "!")):
        if places.outside(args[index]):
            return f"reads {args[index]}, outside the working folder"
        index += 1
    while index < len(args):
        word = args[index]
        index += 1
        if word in ("(", ")", "!", ","):
            continue
        if word in _FIND_REFUSED:
            return f"find {word} {_FIND_REFUSED[word]}"
        takes = _FIND_PREDICATES.get(word)
        if takes is None:
            return f"find {word} is not known to be read-only"
        if takes:
            if index >= len(args):
                return f"find {word} needs a value"
            value = args[index]
            index += 1
            if word in ("-newer", "-anewer", "-cnewer", "-samefile") and places.outside(value):
                return f"reads {value}, outside the working folder"
    return None


_FIND_REFUSED = {
    "-follow": "follows symbolic links, out of the folder too",
    "-exec": "runs a command",
    "-execdir": "runs a command",
    "-ok": "runs a command",
    "-okdir": "runs a command",
    "-delete": "deletes files",
    "-fprint": "writes a file",
    "-fprint0": "writes a file",
    "-fprintf": "writes a file",
    "-fls": "writes a file",
}
_FIND_TAKING_VALUES = (
    "-name -iname -path -ipath -wholename -iwholename -regex -iregex -type -xtype -size -mtime "
    "-mmin -atime -amin -ctime -cmin -newer -anewer -cnewer -perm -user -group -uid -gid -links "
    "-inum -samefile -lname -ilname -used -fstype -maxdepth -mindepth -regextype -printf "
    "-context"
)
_FIND_TAKING_NOTHING = (
    "-empty -nouser -nogroup -readable -writable -executable -true -false -print -print0 -ls "
    "-prune -quit -depth -xdev -mount -noleaf -daystart -ignore_readdir_race "
    "-noignore_readdir_race -warn -nowarn -not -a -and -o -or -help --help -version "
    "--version"
)
_FIND_PREDICATES: Mapping[str, bool] = dict.fromkeys(_FIND_TAKING_VALUES.split(), True) | (
    dict.fromkeys(_FIND_TAKING_NOTHING.split(), False)
)
"""find's tests, options and printing actions, and whether each takes a value."""


# -- git ---------------------------------------------------------------------------------------

_GIT_GLOBAL = _Rule(table=GIT_GLOBALS, allowed=READ_ONLY_GIT_GLOBALS, path_options=frozenset())


_DIFF_OPTIONS = (
    "-p -u -s -U=? -z -R -a -b -w -M=? -C=? -B=? -D -W --patch --no-patch --unified=? --raw "
    "--patch-with-raw --minimal --patience --histogram --anchored= --diff-algorithm= --stat=? "
    "--compact-summary --numstat --shortstat --dirstat=? --cumulative --summary "
    "--patch-with-stat --name-only --name-status --submodule=? --color=? --no-color "
    "--color-moved=? --no-color-moved --color-moved-ws= --word-diff=? --word-diff-regex= "
    "--color-words=? --no-renames --rename-empty --no-rename-empty --check --full-index "
    "--binary --abbrev=? --break-rewrites=? --find-renames=? --find-copies=? "
    "--find-copies-harder --irreversible-delete -l= --diff-filter= -S= -G= --find-object= "
    "--pickaxe-all --pickaxe-regex -O=@ --skip-to= --rotate-to= --relative=? --no-relative "
    "--text --ignore-cr-at-eol --ignore-space-at-eol --ignore-space-change --ignore-all-space "
    "--ignore-blank-lines --ignore-matching-lines= -I= --inter-hunk-context= --function-context "
    "--exit-code --quiet --no-ext-diff --no-textconv --ignore-submodules=? --src-prefix= "
    "--dst-prefix= --no-prefix --default-prefix --line-prefix= --ita-invisible-in-index "
    "--ita-visible-in-index --indent-heuristic --no-indent-heuristic --stat-width= "
    "--stat-name-width= --stat-count= --merge-base --cached --staged"
)
_DIFF_REFUSED = "--output= --ext-diff --textconv --no-index --output-indicator-new= " \
    "--output-indicator-old= --output-indicator-context="  # fmt: skip
_LOG_OPTIONS = (
    "-n= -i -E -F -P -L= -m -c -t --oneline --max-count= --skip= --since= --after= --until= "
    "--before= --author= --committer= --grep= --all-match --invert-grep --regexp-ignore-case "
    "--basic-regexp --extended-regexp --fixed-strings --perl-regexp --merges --no-merges "
    "--min-parents=? --max-parents=? --no-min-parents --no-max-parents --first-parent --all "
    "--branches=? --tags=? --remotes=? --glob= --exclude= --reflog --alternate-refs "
    "--single-worktree --ignore-missing --bisect --cherry-mark --cherry-pick --left-only "
    "--right-only --cherry --walk-reflogs --merge --boundary --simplify-by-decoration "
    "--full-history --dense --sparse --simplify-merges --ancestry-path=? --show-pulls "
    "--date-order --author-date-order --topo-order --reverse --no-walk=? --do-walk "
    "--format=? --pretty=? --abbrev-commit --no-abbrev-commit --oneline --encoding= "
    "--expand-tabs=? --no-expand-tabs --notes=? --no-notes --show-notes=? --relative-date "
    "--date= --parents --children --left-right --graph --show-linear-break=? --decorate=? "
    "--no-decorate --decorate-refs= --decorate-refs-exclude= --source --use-mailmap "
    "--no-use-mailmap --full-diff --log-size --follow --no-follow --diff-merges= "
    "--no-diff-merges --combined-all-paths --remerge-diff --dd --count --clear-decorations"
)
_LOG_REFUSED = "--show-signature --output= --ext-diff --textconv --no-index"
# A value git takes only joined to its option (-U5, --unified=5, --format=%h, --min-parents=2)
# is written `=?`: read as taking the next word, -U would hide that word from the checks, and
# git log -U --output=f writes f (git takes --output=f for an option of its own).

_GIT_SUBCOMMANDS: Mapping[str, _Rule] = {
    "status": _rule(
        "-s -b -v -u=? -z --short --branch --show-stash --porcelain=? --long --verbose "
        "--untracked-files=? --ignore-submodules=? --ignored=? --column=? --no-column "
        "--ahead-behind --no-ahead-behind --renames --no-renames --find-renames=?"
    ),
    "diff": _rule(_DIFF_OPTIONS, _DIFF_REFUSED),
    "log": _rule(f"{_DIFF_OPTIONS} {_LOG_OPTIONS}", f"{_DIFF_REFUSED} {_LOG_REFUSED}", digits=True),
    "show": _rule(
        f"{_DIFF_OPTIONS} {_LOG_OPTIONS}", f"{_DIFF_REFUSED} {_LOG_REFUSED}", digits=True
    ),
    "shortlog": _rule(
        # Its own options last, where they win: -n and --committer take no value here, and
        # --format takes one in the next word too.
        f"{_LOG_OPTIONS} "
        "-n -s -e -c -w=? --numbered --summary --email --committer --group= --format="
    ),
    "rev-parse": _rule(
        "-q --show-toplevel --abbrev-ref=? --short=? --verify --quiet --git-dir "
        "--absolute-git-dir --git-common-dir --is-inside-work-tree --is-inside-git-dir "
        "--is-bare-repository --is-shallow-repository --show-prefix --show-cdup "
        "--show-superproject-working-tree --symbolic --symbolic-full-name --all --branches=? "
        "--tags=? --remotes=? --sq --default= --since= --until= --path-format= "
        "--show-object-format=? --revs-only --no-revs --flags --no-flags --not"
    ),
    "ls-files": _rule(
        "-c -d -m -o -i -s -u -k -z -t -v -f --cached --deleted --modified --others --ignored "
        "--stage --unmerged --killed --exclude= -x= --exclude-standard --exclude-from=@ "
        "--exclude-per-directory= --directory --no-empty-directory --error-unmatch "
        "--full-name --abbrev=? --format= --recurse-submodules --deduplicate --sparse --eol "
        "--debug"
    ),
    "ls-tree": _rule(
        "-d -r -t -l -z --long --name-only --name-status --object-only --full-name "
        "--full-tree --abbrev=? --format="
    ),
    "blame": _rule(
        "-L= -l -t -s -e -w -p -M=? -C=? -c -b -f -n --root --show-stats --porcelain "
        "--line-porcelain --incremental --date= --show-name --show-number --show-email "
        "--abbrev=? --first-parent --reverse --ignore-rev= --ignore-revs-file=@ --color-lines "
        "--color-by-age --progress --no-progress --contents=@ -S=@ --score-debug"
    ),
    "grep": _rule(
        "-i -w -v -n -l -L -c -e= -E -F -G -P -h -H -o -q -z -p -W -a -I -r -f=@ -A= -B= -C= "
        "--cached --untracked --no-exclude-standard --exclude-standard --recurse-submodules "
        "--ignore-case --word-regexp --invert-match --line-number --column --full-name "
        "--files-with-matches --name-only --files-without-match --count --only-matching "
        "--heading --break --show-function --function-context --max-depth= --and --or --not "
        "--all-match --quiet --color=? --no-color --threads= --null --text --no-textconv "
        "--basic-regexp --extended-regexp --fixed-strings --perl-regexp --after-context= "
        "--before-context= --context= --max-count= -m= --recursive --no-recursive",
        "-O=? --open-files-in-pager=? --no-index --textconv",
        digits=True,
        operands="pattern",
        pattern_options="-e -f",
    ),
    "branch": _rule(
        "-a -r -v -l -i --all --remotes --verbose --list --show-current --no-color --color=? "
        "--contains=? --no-contains=? --merged=? --no-merged=? --sort= --format= --points-at= "
        "--column=? --no-column --ignore-case --abbrev=? --no-abbrev",
        "-d -D -m -M -c -C -f -t -u --delete --move --copy --force --track=? --no-track "
        "--set-upstream-to= --unset-upstream --edit-description --create-reflog "
        "--recurse-submodules",
    ),
    "tag": _rule(
        "-l -n=? -i --list --sort= --contains=? --no-contains=? --points-at= --merged=? "
        "--no-merged=? --format= --column=? --no-column --ignore-case --color=?",
        "-a -s -u= -f -d -v -m= -F= -e --annotate --sign --local-user= --force --delete "
        "--verify --message= --file= --edit --create-reflog",
    ),
    "describe": _rule(
        "--tags --all --long --abbrev=? --always --exact-match --match= --exclude= --contains "
        "--first-parent --candidates= --debug"
    ),
    "cat-file": _rule(
        "-t -s -p -e --allow-unknown-type",
        "--textconv --filters --batch=? --batch-check=? --batch-command=?",
    ),
    "remote": _rule("-v --verbose", max_operands=0),
    "version": _rule("--build-options"),
}
_GIT_LISTING = {"branch": ("-l", "--list"), "tag": ("-l", "--list")}


def _git(program: str, args: Sequence[str], places: _Places) -> str | None:
    """``git [read-only globals] <read-only subcommand> [its read-only options]``."""
    parsed = parse_arguments(args, GIT_GLOBALS)
    refusal = _rule_refusal(program, _GIT_GLOBAL, attrs.evolve(parsed, operands=()), places)
    if refusal is not None:
        return refusal
    if parsed.rest_index >= len(args):
        return None  # git --version
    subcommand = args[parsed.rest_index]
    rule = _GIT_SUBCOMMANDS.get(subcommand)
    if rule is None:
        return f"git {subcommand} is not on the read-only list"
    rest = parse_arguments(args[parsed.rest_index + 1 :], rule.table)
    refusal = _rule_refusal(f"git {subcommand}", rule, rest, places)
    if refusal is not None:
        return refusal
    listing = _GIT_LISTING.get(subcommand)
    if listing and rest.operands and not any(o.name in listing for o in rest.options):
        return f"git {subcommand} with a name creates it"
    for option in rest.options:
        if option.name in _GIT_FORMATS and _SIGNATURE_PLACEHOLDER.search(option.value or ""):
            return f"git {subcommand} {option.name}={option.value} checks signatures, running gpg"
    return None


_GIT_FORMATS = frozenset({"--format", "--pretty"})
_SIGNATURE_PLACEHOLDER = re.compile(r"%[-+ ]*G|%\(\**signature")
"""``%G?``, ``%GS``... (log) and ``%(signature)`` (branch, tag) verify signatures as
``--show-signature`` does: they run gpg, which writes its own files and may fetch keys. So do
``%+GS``, ``%-G?`` and ``% GK`` (a line break or blank before a value that is not empty, or
none after one that is) and ``%(*signature)`` (that of the object a tag points to)."""


_PROGRAMS: dict[str, _Judge] = {
    **{name: _judge_by_rule(rule) for name, rule in _COMMON_TEXT_TOOLS.items()},
    **dict.fromkeys(("echo", "true", "false", ":"), _prints_its_arguments),
    "printf": _printf,
    "test": _test,
    "[": _test,
    "date": _date,
    "cd": _cd,
    "sed": _sed,
    "find": _find,
    "git": _git,
}
"""Every program that can be judged read-only, and how its arguments are judged."""


# -- what a search reads -----------------------------------------------------------------------

REPOSITORY = ""
"""Stands, in ``trees_read``, for the whole git repository the command runs in."""


OUTPUT_ONLY = frozenset({"echo", "printf", "true", "false", ":", "test", "["})
"""Programs that read no file's content and write nothing but their output: a word the
shell computes is no path they read or write (``echo "$HOME"``, ``test -f "$f"``)."""


def trees_read(argv: Sequence[str]) -> tuple[str, ...]:
    """The folders whose files ``argv`` may read without naming them, as written (``.`` for
    the folder the shell is in, :data:`REPOSITORY` for git's whole repository).

    A deny rule on ``Read(./.env)`` must see ``grep -r KEY .``, ``rg KEY`` and ``git grep KEY``
    (SPEC §9.3: deny rules always win), which read ``.env`` without a word naming it:
    ``grep -r`` (or ``-d recurse``) and ``rg`` read every file under their operands, git's
    searches, diffs, logs and blobs read the repository's files and history, ``cp -r``,
    ``rsync -a``, ``scp -r``, ``zip -r`` and ``diff -r`` every file under theirs, and a
    creating ``tar`` anything (``/``), and so do ``cpio -o`` and ``-p`` (the names their
    input gives); ``docker build`` (``podman``, ``buildah``) sends its context whole, ``7z a``
    and ``rar a`` archive what their operands hold, ``ln`` makes a link through which a
    later word reads what it leads to, and a folder carried or served elsewhere is read whole
    (``aws s3 sync . s3://b``, ``python3 -m http.server``: ``tree_transfers``).
    """
    if not argv:
        return ()
    program = argv[0].rsplit("/", 1)[-1]
    args = argv[1:]
    if program in ("grep", "egrep", "fgrep", "rg"):
        rule = _RG if program == "rg" else _GREP
        parsed = parse_arguments(args, rule.table)
        if parsed.problem is not None:
            return (".",)  # read as we cannot: as if it searched where it runs
        names = {option.name: option.value for option in parsed.options}
        recursive = program == "rg" or bool(
            {"-r", "-R", "--recursive", "--dereference-recursive"} & names.keys()
        )
        for name in ("-d", "--directories"):
            value = names.get(name)  # grep takes any start of the word: -d rec
            recursive = recursive or bool(value and "recurse".startswith(value))
        if not recursive:
            return ()
        operands = parsed.operands
        if not rule.pattern_options & names.keys():
            operands = operands[1:]
        return tuple(operands) or (".",)
    if program == "git":
        rest = without_git_globals(args)
        if rest is None or (rest and not _git_names_only(rest)):
            return (REPOSITORY,)
    if program == "tar":
        # Its first word may be options without a dash (``czf out.tgz .``), ``-C`` moves it,
        # and ``-T`` reads names from a file: what a creating tar reads is anything.
        creates = any(
            word == "--create" or (not word.startswith("--") and "c" in word.lstrip("-"))
            for word in [*args[:1], *(w for w in args[1:] if w.startswith("-"))]
        )
        return ("/",) if creates else ()
    copier = _TREE_COPIERS.get(program)
    if copier is not None and _any_option(args, *copier):
        # Every word that is not an option, the destination too: a value of an option taken
        # for a folder only makes the command ask where it might not have needed to.
        return tuple(_operands(args)) or (".",)
    words = _operands(args)
    if program == "ln":  # a link through which a later word reads what it leads to
        return tuple(words)
    sent = sent_trees(argv)
    if sent:
        return sent
    if program in _TREE_COMMANDS and bool(words) and words[0] in _TREE_COMMANDS[program]:
        # A build context sent whole, an archive made (7z a, rar a): every operand may be a
        # folder read whole.
        return tuple(words[1:]) or (".",)
    if program in ("cpio", "bsdcpio") and any(
        (word.startswith("-") and "o" in word.lstrip("-")) or word == "--create" for word in args
    ):
        return ("/",)  # copies the files its input names
    return ()


_TREE_COMMANDS: dict[str, frozenset[str]] = {
    **dict.fromkeys(("docker", "podman", "nerdctl"), frozenset({"build", "buildx", "image"})),
    "buildah": frozenset({"bud", "build"}),
    **dict.fromkeys(("7z", "7za", "7zr", "7zz", "rar"), frozenset({"a", "u"})),
}
"""Programs whose command (their first operand) reads every file under their other operands:
an image's build context, sent whole to the daemon; files added to an archive."""


_TREE_COPIERS: dict[str, tuple[str, frozenset[str]]] = {
    "cp": ("rRa", frozenset({"--recursive", "--archive"})),
    "rsync": ("ra", frozenset({"--recursive", "--archive"})),
    "scp": ("r", frozenset()),
    "zip": ("r", frozenset({"--recurse-paths"})),
    "diff": ("r", frozenset({"--recursive"})),
}
"""Programs that read every file under a folder when told to recurse, read as (short option
letters, long options) that tell them to: ``cp -r . backup`` copies ``.env`` where no rule
names it, ``diff -r . other`` prints it."""


def _any_option(args: Sequence[str], letters: str, long: frozenset[str]) -> bool:
    """Whether ``args`` (before ``--``) hold a long option of ``long`` (``=value`` aside, or
    any start of it, as GNU programs take ``--recur``) or a short cluster with one of
    ``letters``."""
    for word in args:
        if word == "--":
            return False
        if word.startswith("--"):
            name = word.partition("=")[0]
            if len(name) > 2 and any(option.startswith(name) for option in long):
                return True
        elif word.startswith("-") and any(letter in word[1:] for letter in letters):
            return True
    return False


def _operands(args: Sequence[str]) -> list[str]:
    """The words of ``args`` that are not options (all of them after ``--``)."""
    operands, options_end = [], False
    for word in args:
        if options_end or not word.startswith("-") or word == "-":
            operands.append(word)
        elif word == "--":
            options_end = True
    return operands


_GIT_NAMES_ONLY = frozenset(
    {"status", "branch", "tag", "remote", "rev-parse", "ls-files", "ls-tree", "describe",
     "merge-base", "rev-list", "count-objects", "version", "help", "symbolic-ref", "show-ref",
     "for-each-ref", "check-ignore", "name-rev", "check-ref-format"}
)  # fmt: skip
"""git subcommands that print names, hashes and refs, never the content of a file. Every
other one counts as reading the repository: git has many ways to print a file (``grep``,
``show``, ``fast-export``, ``diff-tree -p``, ``reflog -p``, ``bundle``...), and a list of
those would always miss one."""


def _git_names_only(rest: Sequence[str]) -> bool:
    """Whether git's subcommand and its words (``rest``) print no file's content (``status
    -v`` prints the diff)."""
    if rest[0] not in _GIT_NAMES_ONLY:
        return False
    return not (rest[0] == "status" and any(w in ("-v", "--verbose", "-vv") for w in rest))
