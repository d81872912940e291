"""The files a patch writes, read from the patch before ``patch``, ``git apply`` or ``git am``
runs it (SPEC §9.3 safety checks).

A patch names the files it changes inside itself (``+++ b/.claude/settings.json``, ``rename to
.vscode/tasks.json``), not in the command that applies it, so the words of ``patch -p1 <
change.diff`` name no protected path while the patch may write one: a settings file whose
hooks run commands, a task an editor runs when the folder opens. The Bash tool reads the patch
first: the file given (``git apply x.diff``, ``patch -i x.diff``, ``patch FILE x.diff``,
``< x.diff``), or the command's own text when the patch comes in a here-document (the text
holds it whole). The paths its headers name are judged as any path a command names.

When the patch cannot be read — it comes from a pipe (``git diff | git apply -R``), it is
missing or too long, or another part of the same command writes it before it is applied — the
patch may name anything, and the command is taken as one that may write a protected path.
Commands that only look at a patch (``git apply --check``, ``patch --dry-run``) write nothing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from fsm_agent.core.command_options import Arity, option_table, resolve_long
from fsm_agent.core.git_commands import without_git_globals
from fsm_agent.core.shell_commands import CommandAnalysis, CommandPart
from fsm_agent.toolbox.data_paths import UNTOLD, first_protected_where, named_by_another

PATCH_READ_LIMIT: Final = 4 * 1024 * 1024
"""The most bytes of a patch file read; a longer one counts as one that cannot be read."""

UNREAD: Final = "a patch that cannot be read before it is applied"

_HEADER = re.compile(
    r"^(?:\+\+\+|---|\*\*\*) (?P<path>\S+)"  # unified and context diffs (a date may follow)
    r"|^(?:rename|copy) (?:to|from) (?P<moved>.+)$"
    r"|^diff --git (?P<git>.+)$"
    r"|^Index: (?P<index>.+)$",
    re.MULTILINE,
)

_PATCH_OPTIONS: Final = option_table(
    "bcEefhlNnRstTuvZ",
    "backup backup-if-mismatch no-backup-if-mismatch batch binary context dry-run ed "
    "follow-symlinks force forward help ignore-whitespace normal posix quiet remove-empty-files "
    "reverse set-time set-utc silent unified verbose version",
    short_values="BdDFgiopVrYz",
    long_values="prefix directory ifdef fuzz get input output strip version-control "
    "reject-file basename-prefix suffix quoting-style reject-format read-only merge",
)
"""GNU patch's options (``--merge`` and ``--read-only`` take their value inline only; read
here as taking one either way, which finds the patch file no later)."""

_GIT_APPLY_VALUES: Final = frozenset(
    {"--exclude", "--include", "--directory", "--whitespace", "--build-fake-ancestor"}
)
"""``git apply`` options whose value may be the next word (the others take theirs inline)."""
_GIT_APPLY_LOOKING: Final = frozenset({"--check", "--stat", "--numstat", "--summary"})
"""``git apply`` options that only look at the patch, unless ``--apply`` is given too."""
_GIT_AM_NO_PATCH: Final = frozenset(
    {"--abort", "--skip", "--quit", "--continue", "--resolved", "-r", "--show-current-patch",
     "--retry", "--allow-empty"}
)  # fmt: skip
"""``git am`` options that go on with, or give up, a patch it already took."""


def patch_refusal(
    part: CommandPart, analysis: CommandAnalysis, cwd: Path, entered: Sequence[Path] = ()
) -> str | None:
    """The protected path that the patch ``part`` applies would write, or :data:`UNREAD` when
    the patch cannot be read; None when ``part`` applies no patch or its patch names none.

    Args:
        part: one part of ``analysis``.
        analysis: the whole command (a here-document's text is in it, and other parts may
            write the patch file).
        cwd: the working folder, against which the patch file's path and the paths it names
            are judged.
        entered: the other folders the command may run it in (``cd DIR && patch``), where
            the paths are judged too, as in the folders its words name (``patch -d DIR``,
            ``git -C DIR apply``, ``--directory=DIR``:
            :func:`~fsm_agent.toolbox.data_paths.first_protected_where`).
    """
    source = _patch_source(part)
    if source is None:
        return None
    if source == "":
        return UNREAD
    if source == "<<":
        text: str | None = analysis.command
    elif named_by_another(source, part, analysis):
        return UNREAD
    else:
        text = _read(cwd / source)
    if text is None:
        return UNREAD
    found = first_protected_where(_targets(text), part, cwd, entered)
    return None if found is None else f"{found} (a path the patch names)"


def applies_patch(part: CommandPart) -> bool:
    """Whether ``part`` applies a patch (``patch``, ``git apply``, ``git am``)."""
    return _patch_source(part) is not None


def _patch_source(part: CommandPart) -> str | None:
    """Where the patch ``part`` applies comes from: a file's name, ``"<<"`` for a
    here-document or here-string, ``""`` when it cannot be told (its input: a pipe); None
    when ``part`` applies no patch."""
    if not part.argv:
        return None
    program = part.argv[0].rsplit("/", 1)[-1]
    if program == "patch":
        given = _patch_file(part.argv[1:])
    elif program == "git":
        rest = without_git_globals(part.argv[1:])
        if rest is None or rest[:1] not in (("apply",), ("am",)):
            return None
        given = _git_patch_file(rest[0], rest[1:])
    else:
        return None
    if given == UNTOLD:
        return ""
    if given is None or given not in ("", "-"):
        return given
    for redirect in part.redirects:
        if redirect.expanded:
            continue  # a computed name, or a here-document holding a substitution
        if redirect.operator in ("<<", "<<-", "<<<"):
            return "<<"
        if redirect.operator == "<":
            return redirect.target
    return ""


def _patch_file(args: Sequence[str]) -> str | None:
    """GNU patch's patch file (``-i FILE``, or ``patch ORIGFILE PATCHFILE``), ``""`` when it
    reads its input, None when it writes nothing (``--dry-run``)."""
    operands: list[str] = []
    given = ""
    index = 0
    while index < len(args):
        word, index = args[index], index + 1
        if word == "--":
            operands += args[index:]
            break
        if word.startswith("--"):
            name, has_value, value = word[2:].partition("=")
            canonical, _ = resolve_long(name, _PATCH_OPTIONS)
            if canonical is None:
                return UNTOLD
            if canonical == "dry-run":
                return None
            takes = _PATCH_OPTIONS.long[canonical] is Arity.REQUIRED
            if takes and not has_value and index < len(args):
                value, index = args[index], index + 1
            if canonical == "input":
                given = value
        elif word.startswith("-") and word != "-":
            for position, letter in enumerate(word[1:], start=1):
                if letter not in _PATCH_OPTIONS.short:
                    return UNTOLD
                if _PATCH_OPTIONS.short[letter] is Arity.REQUIRED:
                    value = word[position + 1 :]
                    if not value and index < len(args):
                        value, index = args[index], index + 1
                    if letter == "i":
                        given = value
                    break
        else:
            operands.append(word)
    if len(operands) >= 2:
        return operands[1]
    return given


def _git_patch_file(subcommand: str, args: Sequence[str]) -> str | None:
    """The patch file of ``git apply``/``git am`` (its first file; ``""`` for its input),
    None when it writes nothing new."""
    options = {word.partition("=")[0] for word in args if word.startswith("-")}
    if subcommand == "apply" and options & _GIT_APPLY_LOOKING and "--apply" not in options:
        return None
    if subcommand == "am" and options & _GIT_AM_NO_PATCH:
        return None
    files: list[str] = []
    index = 0
    while index < len(args):
        word, index = args[index], index + 1
        if word == "--":
            files += args[index:]
            break
        if word in _GIT_APPLY_VALUES:
            index += 1
        elif not word.startswith("-") or word == "-":
            files.append(word)
    if len(files) > 1:
        return ""  # several patches: each would have to be read; judged as one unread
    return files[0] if files else ""


def _read(path: Path) -> str | None:
    try:
        with path.open("rb") as file:
            data = file.read(PATCH_READ_LIMIT + 1)
    except OSError:
        return None
    if len(data) > PATCH_READ_LIMIT:
        return None
    return data.decode("utf-8", errors="replace")


def _targets(text: str) -> list[str]:
    """Every path the headers of the patch ``text`` name (both sides: a reversed patch writes
    what the other side names), with quotes and a ``a/``/``b/`` prefix left on."""
    paths: list[str] = []
    for found in _HEADER.finditer(text):
        if found.group("path") is not None:
            paths.append(found.group("path"))
        elif found.group("moved") is not None:
            paths.append(found.group("moved").strip())
        elif found.group("git") is not None:
            paths += found.group("git").split()
        else:
            paths.append(found.group("index").strip())
    return [path.strip('"') for path in paths]
