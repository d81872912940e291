"""The paths a glob word names when the shell runs the command.

Bash replaces a word such as ``src/*.py`` by the existing paths it matches, or leaves it as
written when none does. The safety check judges every path a writing command names (SPEC
§9.3 step 1g), and a glob word used to count as a path the shell computes, which may be any
path: everyday commands (``rm -rf build dist *.egg-info``, ``sed -i s/a/b/ src/*.py``)
asked even in bypass mode. Here such a word becomes the paths it matches at the time of the
check, so the command is judged as the command naming each of them would be; what is made
between the check and the run is no more seen than a file a plain word comes to name then.

Matching is Bash's default, read to match more rather than less where Bash versions differ:
``*``, ``?`` and bracket expressions (``[abc]``, ``[!a-z]``, ``[^…]``) within a component;
a name beginning with ``.`` only for a component written with a leading ``.``, which may also
give ``.`` and ``..`` (Bash before 5.2 gives them). A word this cannot match as Bash would
stays computed: ``**`` (``globstar`` reads it otherwise), a character class (``[[:alpha:]]``),
more than :data:`MAX_MATCHES` paths, more than
:data:`~fsm_agent.toolbox.paths.MAX_TREE_ENTRIES` entries listed on the way (all its folders
together), and any word of a command that may change how the shell matches (``shopt``,
``set``, ``GLOBIGNORE``, or an environment naming a start-up script or shell options:
:func:`matching_as_written`).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Final

from fsm_agent.core.shell_commands import CommandAnalysis
from fsm_agent.toolbox.paths import MAX_TREE_ENTRIES, expand_home

__all__ = ["MAX_MATCHES", "glob_matches", "matching_as_written", "name_pattern"]

MAX_MATCHES: Final = 256
"""Paths a glob word may match and still be judged path by path."""

_CHANGES_MATCHING: Final = re.compile(r"\b(?:shopt|set|GLOBIGNORE|BASHOPTS|SHELLOPTS)\b|[-+]O\b")
"""Words of a command that may change how its shell matches a glob (``shopt -s dotglob``,
``set -o``, ``bash -O nocaseglob -c …``): such a command's glob words stay computed."""

_ENVIRONMENT: Final = ("BASH_ENV", "ENV", "GLOBIGNORE", "BASHOPTS", "SHELLOPTS")
"""Variables that, given to ``bash -c``, may change how it matches: a script it runs first,
names it leaves out (which also turns on ``dotglob``), the options it starts with."""

_UNQUOTED_BLANK: Final = re.compile(r"(?<!\\)(?:\\\\)*\s")
"""A blank no backslash escapes (an even run of backslashes before it escapes each other)."""

_ACTIVE: Final = re.compile(r"\\.|[*?\[]", re.DOTALL)
"""An escaped character, or one that makes a component a pattern."""


def matching_as_written(analysis: CommandAnalysis) -> bool:
    """Whether the shell that runs ``analysis``'s command matches globs the default way."""
    if any(os.environ.get(name) for name in _ENVIRONMENT):
        return False
    return _CHANGES_MATCHING.search(analysis.command) is None


def glob_matches(pattern: str, folder: Path) -> list[str] | None:
    """The words the glob ``pattern`` (quoted characters escaped with a backslash) becomes,
    relative words starting from ``folder``, as Bash writes them: the literal start as
    written (a leading ``~`` expanded), each match's name after it, sorted. An empty list
    when nothing matches (Bash then leaves the word as written); None when this cannot tell
    (see the module's text)."""
    if _UNQUOTED_BLANK.search(pattern):
        return None  # not one word to Bash: the parser read words apart as one (`[ [x]`)
    components = pattern.split("/")
    if any(_has_globstar(component) for component in components):
        return None
    first, rest = components[0], components[1:]
    if first.startswith("~"):
        if _is_pattern(first):
            return None
        home = str(expand_home(first))
        found = [(home, Path(home))]
    elif first == "" and rest:  # an absolute pattern
        found = [("/", Path("/"))]
    else:
        found, rest = [("", folder)], components
    budget = [MAX_TREE_ENTRIES]  # entries listed for the whole word, not per folder
    for component in rest:
        matched = _next_matches(found, component, budget)
        if matched is None:
            return None
        found = matched
    # A component after the last pattern is taken as written: only what exists is a match,
    # and a word ending in "/" names a folder.
    return [
        text
        for text, path in found
        if (path.is_dir() if text.endswith("/") else os.path.lexists(path))
    ]


def _next_matches(
    found: list[tuple[str, Path]], component: str, budget: list[int]
) -> list[tuple[str, Path]] | None:
    """Each of ``found`` (a word and the path it names) followed by ``component``: by its
    text when it is no pattern, else by each entry of the folder it names that matches; None
    past :data:`MAX_MATCHES` paths, or once ``budget`` (entries still to list) runs out
    (``*/*/*`` over a tree of many folders)."""
    joined: list[tuple[str, Path]] = []
    if not _is_pattern(component):
        name = _unescaped(component)
        return [(_joined(text, name), path / name) for text, path in found]
    matcher = name_pattern(component)
    if matcher is None:
        return None
    dotted = component.startswith((".", "\\."))
    for text, path in found:
        names = _entries(path, budget)
        if names is None:
            return None
        if dotted:
            names += [".", ".."]
        kept = [
            name
            for name in names
            if matcher.fullmatch(name) and (dotted or not name.startswith("."))
        ]
        joined += [(_joined(text, name), path / name) for name in sorted(kept)]
        if len(joined) > MAX_MATCHES:
            return None
    return joined


def _joined(text: str, name: str) -> str:
    """The word ``text`` (empty for a relative word's start) followed by the name ``name``."""
    if text == "":
        return name
    return f"{text}{name}" if text.endswith("/") else f"{text}/{name}"


def _entries(path: Path, budget: list[int]) -> list[str] | None:
    """The names in the folder ``path`` (none when it is not a folder one can list), each
    taken from ``budget``; None when it runs out (the word's folders together hold more than
    :data:`~fsm_agent.toolbox.paths.MAX_TREE_ENTRIES` entries)."""
    names: list[str] = []
    try:
        with os.scandir(path) as entries:
            for entry in entries:
                names.append(entry.name)
                budget[0] -= 1
                if budget[0] < 0:
                    return None
    except OSError:  # not a folder, gone, unreadable: Bash matches nothing there either
        return []
    return names


def _is_pattern(component: str) -> bool:
    """Whether ``component`` holds an unescaped ``*``, ``?`` or ``[``."""
    return any(match.group() in "*?[" for match in _ACTIVE.finditer(component))


def _has_globstar(component: str) -> bool:
    """Whether ``component`` holds two unescaped stars in a row (``globstar`` reads them as
    any depth of folders)."""
    previous, previous_end = "", -1
    for match in _ACTIVE.finditer(component):
        text = match.group()
        if text == "*" and previous == "*" and match.start() == previous_end:
            return True
        previous, previous_end = text, match.end()
    return False


def _unescaped(component: str) -> str:
    """A component that is no pattern, as the name it spells."""
    return re.sub(r"\\(.)", r"\1", component, flags=re.DOTALL)


def name_pattern(component: str, *, ignore_case: bool = False) -> re.Pattern[str] | None:
    """The regular expression of one component of a glob (a name's pattern, as ``fnmatch``
    reads it: a backslash escapes), or None for what this module does not match as Bash would
    (a character class, an equivalence class). A leading ``.`` is the caller's to require."""
    out: list[str] = []
    index = 0
    while index < len(component):
        char = component[index]
        if char == "\\" and index + 1 < len(component):
            out.append(re.escape(component[index + 1]))
            index += 2
        elif char == "*":
            out.append(".*")
            index += 1
        elif char == "?":
            out.append(".")
            index += 1
        elif char == "[":
            bracket = _bracket(component, index)
            if bracket is None:
                return None
            if bracket[0] is None:  # no closing bracket: a plain "["
                out.append(re.escape("["))
                index += 1
            else:
                out.append(bracket[0])
                index = bracket[1]
        else:
            out.append(re.escape(char))
            index += 1
    return re.compile("".join(out), re.DOTALL | (re.IGNORECASE if ignore_case else 0))


def _bracket(component: str, start: int) -> tuple[str | None, int] | None:
    """The bracket expression at ``component[start]`` (a ``[``) as a regular expression and
    the index past it; ``(None, start)`` when it has no closing bracket; None for a class
    (``[:alpha:]``, ``[=a=]``, ``[.a.]``) inside."""
    index = start + 1
    negated = index < len(component) and component[index] in "!^"
    if negated:
        index += 1
    items: list[str] = []
    first = True
    while index < len(component):
        char = component[index]
        if char == "]" and not first:
            body = "".join(items)
            return (f"[^{body}]" if negated else f"[{body}]"), index + 1
        if char == "[" and component[index + 1 : index + 2] in (":", "=", "."):
            return None
        if char == "\\" and index + 1 < len(component):
            items.append(re.escape(component[index + 1]))
            index += 2
        else:
            items.append("-" if char == "-" else re.escape(char))
            index += 1
        first = False
    return None, start
