"""git's own options, and the command lines git runs because its words say so (SPEC §9.3).

git runs shell commands named in the command itself: configuration given with ``-c KEY=VALUE``
whose value is a command line (``core.pager``, ``core.editor``, ``core.sshCommand``,
``diff.external``, ``pager.<cmd>``, ``alias.<name>=!...``, ``credential.helper``, filters and
text conversions, ...), options of some subcommands (``rebase --exec``, ``difftool -x``,
``filter-branch --tree-filter``, ``fetch --upload-pack``, ``push --receive-pack``...), and the
commands of ``bisect run`` and ``submodule foreach``. :func:`git_runs` lists them, so the shell
analysis follows each one as it follows ``sh -c`` and a deny rule sees what runs.

Where following is not sound it says so instead (:attr:`GitRuns.unread`): the value names a
folder of hooks or a program file (``core.hooksPath``, ``core.fsmonitor``), a configuration file
to load (``include.path``), comes from the environment (``--config-env``), or is an ``ext::``
address (given, or made by ``url.ext::....insteadOf``), whose command git builds itself. A
Bash deny or ask rule then asks: it cannot read that code (``inline_code``).
"""

from __future__ import annotations

import fnmatch
import itertools
from collections.abc import Sequence
from pathlib import PurePosixPath
from typing import Final

import attrs

from fsm_agent.core.command_options import Option, abbreviates_any, option_table, parse_arguments
from fsm_agent.core.git_config_writes import config_write, template_folder

GIT_GLOBALS = option_table(
    "Pp",
    "no-pager no-optional-locks literal-pathspecs no-replace-objects glob-pathspecs "
    "noglob-pathspecs icase-pathspecs version help paginate bare",
    short_values="cC",
    long_values="git-dir work-tree namespace config-env super-prefix list-cmds attr-source",
    long_optional="exec-path",
)
"""git's own options, those written before its subcommand."""

READ_ONLY_GIT_GLOBALS = frozenset(
    {"-P", "--no-pager", "--no-optional-locks", "--literal-pathspecs", "--no-replace-objects",
     "--glob-pathspecs", "--noglob-pathspecs", "--icase-pathspecs", "--version", "--help"}
)  # fmt: skip
"""Those of git's own options a read-only git command may carry (``-c`` and ``-C`` may not)."""


def without_git_globals(args: Sequence[str]) -> tuple[str, ...] | None:
    """git's arguments from its subcommand on, its own options (``-C dir``, ``-c k=v``,
    ``--no-pager``) left out; None when one of them is not an option we know."""
    parsed = parse_arguments(args, GIT_GLOBALS)
    if parsed.problem is not None:
        return None
    return tuple(args[parsed.rest_index :])


@attrs.frozen(kw_only=True)
class GitRuns:
    """What a git command runs beyond git, read from its words.

    Attributes:
        scripts: command lines, each with the indexes (in git's arguments) of the words holding
            it and a label naming where it came from (``git -c core.pager``).
        commands: commands given as words (``bisect run CMD ARGS...``): the index of the first
            word and a label.
        unread: why git runs code no rule can read here, or None.
    """

    scripts: tuple[tuple[str, tuple[int, ...], str], ...] = ()
    commands: tuple[tuple[int, str], ...] = ()
    unread: str | None = None


_Script = tuple[str, tuple[int, ...], str]

_SHELL_KEYS = (
    "core.pager", "core.editor", "core.sshcommand", "core.askpass", "core.gitproxy",
    "core.alternaterefscommand", "sequence.editor", "diff.external", "diff.*.command",
    "*.textconv", "merge.*.driver", "filter.*.clean", "filter.*.smudge", "filter.*.process",
    "pager.*", "gpg.program", "gpg.*.program", "sendemail.tocmd", "sendemail.cccmd",
    "sendemail.headercmd", "sendemail.sendmailcmd", "sendemail.smtpserver", "browser.*.cmd",
    "browser.*.path", "man.*.cmd", "man.*.path", "difftool.*.cmd", "mergetool.*.cmd",
    "remote.*.uploadpack", "remote.*.receivepack", "uploadpack.packobjectshook",
    "hook.*.command", "interactive.difffilter", "trailer.*.cmd", "trailer.*.command",
    "gpg.ssh.defaultkeycommand", "sendemail.*.tocmd", "sendemail.*.cccmd",
    "sendemail.*.headercmd", "sendemail.*.sendmailcmd", "sendemail.*.smtpserver", "imap.tunnel",
    "instaweb.httpd", "difftool.*.path", "mergetool.*.path",
)  # fmt: skip
"""Configuration keys (lower case, ``*`` for a subsection) whose value is a command line or a
program git runs."""

_UNREAD_KEYS = {
    "core.hookspath": "names a folder of hooks",
    "core.fsmonitor": "names a hook program",
    "include.path": "loads a configuration file",
    "includeif.*.path": "loads a configuration file",
    "init.templatedir": "names a folder of hooks a new repository starts with",
}
"""Keys whose value leads to code elsewhere: a folder, a program file, a configuration file."""

_BOOLEANS = frozenset({"true", "false", "yes", "no", "on", "off", "1", "0", ""})
_BOOLEAN_KEYS = ("pager.*", "core.fsmonitor")
"""Keys that also take a boolean (``pager.log=false``, ``core.fsmonitor=true``): nothing runs."""

_SUBCOMMAND_OPTIONS: dict[str, tuple[str, str]] = {
    "rebase": ("exec", "x"),
    "difftool": ("extcmd", "x"),
    "filter-branch": (
        "setup env-filter tree-filter index-filter parent-filter msg-filter commit-filter "
        "tag-name-filter",
        "",
    ),
    "fetch": ("upload-pack", ""),
    "fetch-pack": ("upload-pack exec", ""),
    "send-pack": ("receive-pack exec", ""),
    "daemon": ("access-hook", ""),
    "pull": ("upload-pack", ""),
    "clone": ("upload-pack", "u"),
    "ls-remote": ("upload-pack", ""),
    "archive": ("exec", ""),
    "push": ("receive-pack exec", ""),
    "send-email": ("smtp-server sendmail-cmd to-cmd cc-cmd header-cmd", ""),
}
"""Subcommand options whose value is a command line: long names, and option letters."""

QUIET_SUBCOMMANDS = frozenset(
    {"add", "rm", "mv", "restore", "status", "log", "show", "diff", "blame", "annotate",
     "shortlog", "ls-files", "ls-tree", "cat-file", "rev-parse", "rev-list", "describe",
     "check-ignore", "check-attr", "hash-object", "checkout", "switch", "reset", "stage"}
)  # fmt: skip
"""Builtin subcommands none of whose options names a command line (none of them is in the
tables below, nor ``bisect``, ``submodule`` or ``clone``): more words after one of them cannot
make git run one (they cannot be git's own options, ``-c``, either), and git ignores an alias
that has one of their names. Words ``xargs`` or ``find -exec`` fill in may follow them."""

GIT_COMMANDS = frozenset(
    """add am annotate apply archimport archive bisect blame branch bugreport bundle cat-file
    check-attr check-ignore check-mailmap check-ref-format checkout checkout-index cherry
    cherry-pick citool clean clone column commit commit-graph commit-tree config count-objects
    credential credential-cache credential-store cvsexportcommit cvsimport cvsserver daemon
    describe diagnose diff diff-files diff-index diff-tree difftool fast-export fast-import fetch
    fetch-pack filter-branch fmt-merge-msg for-each-ref for-each-repo format-patch fsck
    fsmonitor--daemon gc get-tar-commit-id gitk gitweb grep gui hash-object help hook
    http-backend http-fetch http-push imap-send index-pack init init-db instaweb
    interpret-trailers log ls-files ls-remote ls-tree mailinfo mailsplit maintenance merge
    merge-base merge-file merge-index merge-octopus merge-one-file merge-ours merge-recursive
    merge-resolve merge-subtree merge-tree mergetool mktag mktree multi-pack-index mv name-rev
    notes p4 pack-objects pack-redundant pack-refs patch-id prune prune-packed pull push
    quiltimport range-diff read-tree rebase receive-pack reflog remote remote-ext remote-fd
    remote-ftp remote-ftps remote-http remote-https repack replace replay request-pull rerere
    reset restore rev-list rev-parse revert rm scalar send-email send-pack sh-i18n sh-setup shell
    shortlog show show-branch show-index show-ref sparse-checkout stage stash status stripspace
    submodule svn switch symbolic-ref tag unpack-file unpack-objects update-index update-ref
    update-server-info upload-archive upload-pack var verify-commit verify-pack verify-tag
    version web--browse whatchanged worktree write-tree""".split()  # noqa: SIM905 - a table
)
"""git's own commands (``git help -a``, and the helpers it runs). Any other name is an alias
from a configuration file or a ``git-NAME`` program on the ``PATH``, whose meaning is not in
the command."""

_EVERY_SUBCOMMAND = ("pager",)
"""Long options read as a command line after any subcommand."""

_ATTACHED_ONLY = {"grep": ("open-files-in-pager", "O")}
"""Options whose command line is given only inline (``-Oless``, ``--open-files-in-pager=x``);
written alone they run the pager the configuration names."""


def git_runs(args: Sequence[str]) -> GitRuns:
    """The command lines and commands git's arguments ``args`` make it run."""
    parsed = parse_arguments(args, GIT_GLOBALS)
    starts: list[int] | None
    unread: list[str] = []
    if parsed.problem is None:
        settings = [
            (o.value or "", o.name) for o in parsed.options if o.name in ("-c", "--config-env")
        ]
        starts = [parsed.rest_index]
        unread += [why for why in map(_chosen_repository, parsed.options) if why is not None]
    else:
        # An option we do not know: every `-c` pair counts, and each word that may be the
        # subcommand is read as it.
        settings = [(args[i + 1], "-c") for i in range(len(args) - 1) if args[i] == "-c"]
        settings += [(w[13:], "--config-env") for w in args if w.startswith("--config-env=")]
        starts = command_starts(args)
    scripts: list[_Script] = []
    commands: list[tuple[int, str]] = []
    if starts is None:
        unread.append("git options we do not know leave where its command starts untold")
    first: dict[str, int] = {}
    for position, word in enumerate(args):
        first.setdefault(word, position)
    for setting, option in settings:
        index = _holding(args, setting, first)
        key, has_value, value = setting.partition("=")
        if option == "--config-env":
            if _key_runs(key) or _key_unread(key):
                unread.append(f"git --config-env={key} takes a command from the environment")
            continue
        if has_value:
            _setting(key, value, index, scripts, unread)
    aliases = {
        _normal_key(key).partition(".")[2]
        for key, _, _ in (setting.partition("=") for setting, _ in settings)
        if _matches(key, ("alias.*",))
    }
    for start in starts or ():
        if start < len(args):
            if args[start] not in GIT_COMMANDS and args[start].lower() not in aliases:
                unread.append(
                    f"git {args[start]} is no git command: an alias or a git-{args[start]}"
                    " program decides what it runs"
                )
            if args[start].lower() in aliases and start + 1 < len(args):
                # git puts the words after an alias's name after its value: the whole is
                # a command line we only have in pieces.
                unread.append("a git alias given more words runs them as part of it")
            if args[start] == "clone":
                _clone_settings(args, start, first, scripts, unread)
            if args[start] == "config":
                _config_settings(args, start, scripts, unread)
            if args[start] in ("init", "clone") and template_folder(args, start) is not None:
                unread.append(f"git {args[start]} --template copies hooks from a folder")
            _subcommand(args, start, scripts, commands)
    if any("ext::" in word for word in args):  # an address, or -c url.ext::....insteadOf
        unread.append("an ext:: address runs a command git builds from it")
    return GitRuns(
        scripts=tuple(dict.fromkeys(scripts)),
        commands=tuple(dict.fromkeys(commands)),
        unread=unread[0] if unread else None,
    )


def _chosen_repository(option: Option) -> str | None:
    """Why git's own ``option`` makes it run code no rule reads, or None: ``--git-dir`` naming
    a folder that is not a ``.git`` (a bare repository's settings and hooks are files anyone
    may have written; a ``.git`` folder is a protected path), ``--exec-path`` (the folder git
    runs its other commands from)."""
    if option.name == "--git-dir" and ".git" not in PurePosixPath(option.value or "").parts:
        return "git --git-dir names a repository whose settings and hooks no rule reads"
    if option.name == "--exec-path" and option.value is not None:
        return "git --exec-path names the folder git runs its commands from"
    return None


COMMAND_STARTS_LIMIT: Final = 16
"""How many words that may be git's command :func:`command_starts` tells apart."""


def command_starts(args: Sequence[str]) -> list[int] | None:
    """Where git's command may start in its arguments ``args`` when an option among them is
    not one we know; None past :data:`COMMAND_STARTS_LIMIT` places.

    Each of git's own options takes at most one word as its value, so a word that is not an
    option is the command unless the word before it is an option (it may be its value): the
    places end at the first word that follows a word that is not an option. ``git --frob``
    and a thousand words thus has two places, not a thousand (each read, and matched against
    every rule, as the rest of the line)."""
    starts: list[int] = []
    for index, word in enumerate(args):
        if word.startswith("-"):
            continue
        starts.append(index)
        if len(starts) > COMMAND_STARTS_LIMIT:
            return None
        if index == 0 or not args[index - 1].startswith("-"):
            break
    return starts


def _holding(args: Sequence[str], text: str, first: dict[str, int]) -> tuple[int, ...]:
    """The index of the first argument holding an option's value ``text`` (``first``: each
    argument's first index, so that a line of a thousand settings is not searched a thousand
    times)."""
    for word in (text, f"-c{text}", f"--config-env={text}"):
        if word in first:
            return (first[word],)
    return next(((index,) for index, word in enumerate(args) if text in word), ())


def _normal_key(key: str) -> str:
    """A key as git compares it: section and name without case, the subsection as written."""
    section, _, rest = key.partition(".")
    middle, _, name = rest.rpartition(".")
    return ".".join(part for part in (section.lower(), middle, name.lower()) if part)


def _matches(key: str, patterns: Sequence[str]) -> bool:
    normal = _normal_key(key)
    return any(fnmatch.fnmatchcase(normal, pattern) for pattern in patterns)


def _key_runs(key: str) -> bool:
    return _matches(key, (*_SHELL_KEYS, "alias.*", "credential.helper", "credential.*.helper"))


def _key_unread(key: str) -> str | None:
    return next((why for pattern, why in _UNREAD_KEYS.items() if _matches(key, (pattern,))), None)


def _setting(
    key: str,
    value: str,
    index: tuple[int, ...],
    scripts: list[_Script],
    unread: list[str],
    *,
    given_by: str = "git -c",
) -> None:
    """What ``-c KEY=VALUE`` runs, added to ``scripts`` (or why it cannot be read, to
    ``unread``); ``given_by`` names how the setting is given, for the label."""
    label = f"{given_by} {_normal_key(key)}"
    if _matches(key, _BOOLEAN_KEYS) and value.lower() in _BOOLEANS:
        return
    why = _key_unread(key)
    if why is not None:
        unread.append(f"{label} {why}")
    elif _matches(key, ("safe.barerepository",)) and value.lower() != "explicit":
        # The Bash tool gives git `explicit` (toolbox/bash.py): any other value lets a folder
        # of plain files be a repository, whose settings run programs.
        unread.append(f"{label} lets git take a folder of plain files for a repository")
    elif _matches(key, ("alias.*",)):
        # `!` runs the rest in the shell; otherwise the value is more of git's own words.
        scripts.append((value[1:] if value.startswith("!") else f"git {value}", index, label))
    elif _matches(key, ("submodule.*.update",)):  # `!command`, or a way to update
        if value.startswith("!"):
            scripts.append((value[1:], index, label))
    elif _matches(key, ("credential.helper", "credential.*.helper")):
        if value.startswith("!"):
            scripts.append((value[1:], index, label))
        elif value:
            helper = value if value.startswith("/") else f"git credential-{value}"
            scripts.append((helper, index, label))
    elif _matches(key, _SHELL_KEYS):
        scripts.append((value, index, label))


def _clone_settings(
    args: Sequence[str],
    start: int,
    first: dict[str, int],
    scripts: list[_Script],
    unread: list[str],
) -> None:
    """``git clone -c KEY=VALUE`` / ``--config KEY=VALUE``: settings of the new repository,
    which the clone itself already uses (``core.sshCommand``), read as ``git -c`` ones."""
    index = start + 1
    while index < len(args):
        word, index = args[index], index + 1
        if word == "--":
            return
        setting: str | None = None
        if word in ("-c", "--config") and index < len(args):
            setting, index = args[index], index + 1
        elif word.startswith("--config="):
            setting = word.partition("=")[2]
        elif word.startswith("-c") and len(word) > 2:
            setting = word[2:]
        if setting is not None and "=" in setting:
            key, _, value = setting.partition("=")
            _setting(key, value, _holding(args, setting, first), scripts, unread)


def _config_settings(
    args: Sequence[str], start: int, scripts: list[_Script], unread: list[str]
) -> None:
    """``git config KEY VALUE``: a setting every later git command runs, read as ``git -c``
    (:mod:`~fsm_agent.core.git_config_writes`)."""
    written = config_write(args, start)
    if written is None:
        return
    if written.unwritten is not None:
        unread.append(written.unwritten)
    for key, value, index in written.settings:
        _setting(key, value, (index,), scripts, unread, given_by="git config")


def configuration_written(args: Sequence[str], assignments: Sequence[str] = ()) -> str | None:
    """The file or folder git reads code from that git's arguments ``args`` write (the
    repository's ``.git/config`` for ``git config KEY VALUE``, ``.git/hooks`` for ``git init
    --template=DIR``, ``-c init.templateDir=DIR`` or ``GIT_TEMPLATE_DIR=DIR`` among the
    ``assignments`` before it...), or None; a protected path (SPEC §9.3)."""
    templated = any(a.startswith("GIT_TEMPLATE_DIR=") for a in assignments) or any(
        _matches(setting.partition("=")[0], ("init.templatedir",))
        for before, setting in itertools.pairwise(args)
        if before == "-c"
    )
    rest = without_git_globals(args)
    starts = [len(args) - len(rest)] if rest is not None else command_starts(args)
    if starts is None:  # too many words that may be the command: the one that writes among them
        starts = [index for index, word in enumerate(args) if word in ("config", "init", "clone")]
    for start in starts:
        if start >= len(args):
            continue
        name = args[start]
        if name == "config":
            written = config_write(args, start)
            if written is not None and not written.plain:
                return written.file
        elif name in ("init", "clone") and (templated or template_folder(args, start)):
            return ".git/hooks"
    return None


def _subcommand(
    args: Sequence[str],
    start: int,
    scripts: list[_Script],
    commands: list[tuple[int, str]],
) -> None:
    """What the subcommand at ``args[start]`` runs through its options and words."""
    name = args[start]
    rest = range(start + 1, len(args))
    if name == "bisect" and start + 2 < len(args) and args[start + 1] == "run":
        commands.append((start + 2, "git bisect run"))
    if name == "submodule":
        _foreach(args, start + 1, scripts)
    longs, letters = _SUBCOMMAND_OPTIONS.get(name, ("", ""))
    attached_longs, attached_letters = _ATTACHED_ONLY.get(name, ("", ""))
    label = f"git {name}"
    for index in rest:
        word = args[index]
        if word == "--":
            return
        value: tuple[str, int] | None = None
        if word.startswith("--"):
            option, has_value, inline = word[2:].partition("=")
            if abbreviates_any(option, (*longs.split(), *_EVERY_SUBCOMMAND)):
                value = (inline, index) if has_value else _next(args, index)
            elif has_value and abbreviates_any(option, attached_longs.split()):
                value = (inline, index)
        elif word.startswith("-") and len(word) > 1:
            value = _letter_value(args, index, letters, attached_letters)
        if value is not None and value[0]:
            scripts.append((value[0], (value[1],), f"{label} {word.partition('=')[0]}"))


def _next(args: Sequence[str], index: int) -> tuple[str, int] | None:
    return (args[index + 1], index + 1) if index + 1 < len(args) else None


def _letter_value(
    args: Sequence[str], index: int, letters: str, attached: str
) -> tuple[str, int] | None:
    """The value of the first of ``letters`` in the cluster ``args[index]`` (the rest of the
    cluster, or the next word), or of one of ``attached`` (the rest of the cluster only)."""
    word = args[index]
    for position in range(1, len(word)):
        letter = word[position]
        if letter in letters:
            rest = word[position + 1 :]
            return (rest, index) if rest else _next(args, index)
        if letter in attached:
            return (word[position + 1 :], index)
    return None


def _foreach(args: Sequence[str], start: int, scripts: list[_Script]) -> None:
    """``git submodule [--quiet] foreach [--recursive] COMMAND...``: the words, joined, are run
    by the shell in each submodule."""
    index = start
    while index < len(args) and args[index] in ("-q", "--quiet"):
        index += 1
    if index >= len(args) or args[index] != "foreach":
        return
    index += 1
    while index < len(args) and args[index] in ("--recursive", "-q", "--quiet", "--"):
        index += 1
    if index < len(args):
        indexes = tuple(range(index, len(args)))
        scripts.append((" ".join(args[index:]), indexes, "git submodule foreach"))
