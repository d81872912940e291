"""What ``git config`` and ``git init``/``git clone --template`` write where git reads code.

git runs command lines its configuration names (``core.pager``, ``core.fsmonitor``,
``alias.x=!cmd``, ...) and the hooks in ``.git/hooks``. ``git -c KEY=VALUE`` gives such a
setting for one command, which :mod:`~fsm_agent.core.git_commands` follows. These commands
keep one for every later git command instead:

* ``git config KEY VALUE`` (and ``--add``, ``--replace-all``, ``set``, ...) writes the setting to
  the repository's ``.git/config``, or ``~/.gitconfig`` (``--global``), ``/etc/gitconfig``
  (``--system``), ``.git/config.worktree`` (``--worktree``), or the file ``-f`` names; ``--edit``
  writes whatever an editor leaves there, and ``--unset``/``--rename-section`` change what is
  there;
* ``git init --template=DIR`` copies the hooks of ``DIR/hooks`` into ``.git/hooks``; ``git clone
  --template=DIR`` does it for the new repository and runs its ``post-checkout`` hook at once.

Those files and folders are protected paths (SPEC §9.3): written by a tool, they ask even in
bypass mode, for a later ``git status`` runs what they name. :func:`config_write` and
:func:`template_folder` read the words; the shell analysis asks on them and follows a setting's
value as ``git -c`` would be followed, so a deny rule sees ``rm`` in
``git config core.pager 'rm -rf src'``.

Only what is sure to read is taken as reading (``--get``, ``--list``, ``get``, a key alone);
anything else — an option we do not know among them — counts as a write. A write that can only
take settings away (``--unset``, ``--remove-section``) or sets a key of :data:`PLAIN_KEYS`
(``user.email``, ``init.defaultBranch``: keys naming no program, file, folder or address) is
:attr:`ConfigWrite.plain` and does not ask: a setting that looks harmless alone may not be in
company (``url.<base>.insteadOf`` with ``protocol.ext.allow``, a section renamed to ``core``),
so only keys known to be plain are.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from typing import Final

import attrs

from fsm_agent.core.command_options import (
    Option,
    abbreviates_any,
    option_table,
    parse_arguments,
)

_CONFIG_OPTIONS: Final = attrs.evolve(
    option_table(
        "lez",
        "global system local worktree includes no-includes show-origin show-scope name-only "
        "null bool int bool-or-int path expiry-date no-type fixed-value all regexp get "
        "get-all get-regexp get-urlmatch get-color get-colorbool list edit add replace-all "
        "unset unset-all rename-section remove-section",
        short_values="f",
        long_values="file blob type default comment value url",
    ),
    stops_at_operand=False,
)
"""``git config``'s options (before and after the ``set``/``get``/... of newer gits)."""

_READING: Final = frozenset(
    {"--get", "--get-all", "--get-regexp", "--get-urlmatch", "--get-color", "--get-colorbool",
     "--list", "-l"}
)  # fmt: skip
_WRITING: Final = frozenset(
    {"--add", "--replace-all", "--unset", "--unset-all", "--rename-section", "--remove-section",
     "--edit", "-e"}
)  # fmt: skip
_READING_VERBS: Final = frozenset({"get", "list"})
_WRITING_VERBS: Final = frozenset({"set", "unset", "rename-section", "remove-section", "edit"})
_SETTING: Final = frozenset({"--add", "--replace-all"})
"""Write actions whose operands are ``KEY VALUE``, as with no action at all."""
_TAKING_AWAY: Final = frozenset({"--unset", "--unset-all", "--remove-section"})
_TAKING_AWAY_VERBS: Final = frozenset({"unset", "remove-section"})

PLAIN_KEYS: Final = frozenset(
    {"user.name", "user.email", "init.defaultbranch", "pull.rebase", "pull.ff",
     "push.default", "push.autosetupremote", "fetch.prune", "core.autocrlf", "core.filemode",
     "core.ignorecase", "core.quotepath", "core.safecrlf", "core.eol", "commit.gpgsign",
     "tag.gpgsign", "merge.conflictstyle", "rerere.enabled", "diff.renames",
     "color.ui", "advice.detachedhead", "credential.usehttppath", "log.date",
     "branch.*.remote", "branch.*.merge", "branch.*.rebase"}
)  # fmt: skip
"""Keys (lower case, ``*`` for a subsection) whose value names no program, file, folder or
address: an agent in a fresh checkout sets them before it commits."""

REPOSITORY_CONFIG: Final = ".git/config"


@attrs.frozen(kw_only=True)
class ConfigWrite:
    """What a ``git config`` command writes.

    Attributes:
        file: the configuration file it writes when git reads it on its own (the
            repository's, the user's, the system's), or None when ``-f FILE`` names it (a
            word of the command, judged as any other).
        settings: the ``(key, value, index)`` of each setting it writes, ``index`` being the
            value's place in git's arguments.
        unwritten: why it writes settings that are not in its words (``--edit``), or None.
        plain: it only takes settings away or sets keys of :data:`PLAIN_KEYS`.
    """

    file: str | None
    settings: tuple[tuple[str, str, int], ...] = ()
    unwritten: str | None = None
    plain: bool = False


def config_write(args: Sequence[str], start: int) -> ConfigWrite | None:
    """What ``git ... config ...`` writes, ``args`` being git's arguments and ``args[start]``
    its ``config``; None when it only reads."""
    words = args[start + 1 :]
    parsed = parse_arguments(words, _CONFIG_OPTIONS)
    if parsed.problem is not None:
        return ConfigWrite(file=REPOSITORY_CONFIG, unwritten=f"git config: {parsed.problem}")
    names = {option.name for option in parsed.options}
    operands = list(parsed.operands)
    verb = operands[0] if operands and not names & _WRITING else None
    reading = names & _READING or verb in _READING_VERBS or len(operands) < 2
    if reading and not names & _WRITING and verb not in _WRITING_VERBS:
        return None
    file = _config_file(parsed.options)
    if "--blob" in names:
        return None  # git refuses to write a blob; only reading takes one
    if names & {"--edit", "-e"} or verb == "edit":
        return ConfigWrite(file=file, unwritten="git config --edit writes what an editor leaves")
    if verb == "set":
        operands = operands[1:]
    elif verb in _WRITING_VERBS or (names & _WRITING and not names & _SETTING):
        # no value written: an unset, or a section renamed (into `core`, say)
        taking_away = bool(names & _TAKING_AWAY) or verb in _TAKING_AWAY_VERBS
        return ConfigWrite(file=file, plain=taking_away)
    if len(operands) < 2:
        return ConfigWrite(file=file)
    key, value = operands[0], operands[1]
    value_index = start + 1 + _index_of(words, value, after=key)
    return ConfigWrite(file=file, settings=((key, value, value_index),), plain=_plain(key))


def _plain(key: str) -> bool:
    lowered = key.lower()
    return any(fnmatch.fnmatchcase(lowered, pattern) for pattern in PLAIN_KEYS)


def _config_file(options: Sequence[Option]) -> str | None:
    names = [option.name for option in options]
    if "-f" in names or "--file" in names:
        return None
    if "--global" in names:
        return "~/.gitconfig"
    if "--system" in names:
        return "/etc/gitconfig"
    if "--worktree" in names:
        return ".git/config.worktree"
    return REPOSITORY_CONFIG


def _index_of(words: Sequence[str], value: str, *, after: str) -> int:
    """The index in ``words`` of the operand ``value`` written after the operand ``after``."""
    key_at = words.index(after) if after in words else -1
    for index in range(key_at + 1, len(words)):
        if words[index] == value:
            return index
    return key_at + 1


def template_folder(args: Sequence[str], start: int) -> tuple[str, int] | None:
    """The folder ``git init``/``git clone`` (at ``args[start]``) copies hooks from
    (``--template=DIR``, ``--template DIR``, or a start of the name), and its index."""
    for index in range(start + 1, len(args)):
        word = args[index]
        if word == "--":
            return None
        if not word.startswith("--"):
            continue
        name, has_value, value = word[2:].partition("=")
        if abbreviates_any(name, ("template",)):
            if has_value:
                return value, index
            if index + 1 < len(args):
                return args[index + 1], index + 1
    return None
