"""Protected names inside the code a command gives a program in its own language.

``python3 -c "open('.git/config', 'a')"``, ``node -e``, ``perl -e``, ``awk '{print >
".bashrc"}'`` and ``sed -n 'w .git/hooks/pre-commit' f`` write a protected path that no word of
the command names as a path: the name sits inside the program's code. So the safety check
(SPEC §9.3) searches that code for a protected name standing alone (``.git/``, ``.bashrc``;
not ``.github`` or ``.gitignore``): the words of an interpreter given code inline (what
``inline_code`` finds), and of ``awk`` and ``sed``, whose languages write files; code fed from
a here-document is searched in the command's text, which holds it.

This reads names, not code: code that builds a name (``'.g' + 'it'``) or reads it from a file
is not caught. Bypass mode runs code; only a sandbox bounds what code does.
"""

from __future__ import annotations

import re
from typing import Final

from fsm_agent.core.shell_commands import CommandAnalysis, CommandPart
from fsm_agent.toolbox.paths import PROTECTED_DIRS, PROTECTED_FILES
from fsm_agent.toolbox.startup_places import SPELLINGS

PROTECTED_NAME: Final = re.compile(
    r"(?<![\w.-])(?:"
    + "|".join([*map(re.escape, sorted(PROTECTED_DIRS | PROTECTED_FILES)), *SPELLINGS])
    + r")(?![\w.-])",
    re.IGNORECASE,
)
"""A protected file or folder name standing alone in a text (``.git/`` but not ``.github``),
or a place whose files run code later spelled out (``~/.config/git/config``, ``.ssh``)."""

_FILE_WRITING_LANGUAGES: Final = frozenset({"awk", "gawk", "mawk", "nawk", "sed", "gsed"})
"""Programs whose own language writes files (awk's ``print >``, sed's ``w``)."""

_FED = ("<<", "<<-", "<<<")


def protected_name_in_code(part: CommandPart, analysis: CommandAnalysis) -> str | None:
    """The protected name in the code ``part`` gives a program (``analysis``: the whole
    command, whose text holds a here-document), or None."""
    for text in _code_texts(part, analysis):
        found = PROTECTED_NAME.search(text)
        if found is not None:
            return found.group(0)
    return None


def code_literals(part: CommandPart, analysis: CommandAnalysis) -> list[str]:
    """The quoted strings and the bare words in the code ``part`` gives a program, each as a
    word that may name a file (``open(".env")``: ``.env``; Perl's ``"<.env"``: ``.env``;
    sqlite3's ``.read x.sql``: ``x.sql``), for the path rules
    (``Read(./.env)``) to judge as they judge the command's own words. Names the code builds
    are not found, as for :func:`protected_name_in_code`."""
    texts = _code_texts(part, analysis)
    quoted = [match.group(2).lstrip("<>+| ") for text in texts for match in _QUOTED.finditer(text)]
    # And the code's bare words (sqlite3's ``.read secrets/key.pem``, a shell line in it).
    bare = [word for text in texts for word in _CODE_SEPARATORS.split(text)]
    return [word for word in dict.fromkeys([*quoted, *bare]) if word.strip()]


_CODE_SEPARATORS: Final = re.compile(r"""[\s()\[\]{},;'"`<>=|&]+""")
"""What separates the words of most languages' code."""
_QUOTED: Final = re.compile(r"""(['"`])((?:\\.?|(?!\1)[^\\])*)(?:\1|\Z)""")
"""A string literal of most languages: quote, characters (a backslash escaping the next),
the same quote, or the end of the text for one never closed (so that every search goes on
from where the last ended: text full of unclosed quotes is read once, not once a quote)."""


def _code_texts(part: CommandPart, analysis: CommandAnalysis) -> list[str]:
    """The texts that hold the code ``part`` gives a program in its own language (its words,
    and the command's text when a here-document feeds it); none when it is given none."""
    if not part.argv:
        return []
    program = part.argv[0].rsplit("/", 1)[-1]
    if program not in _FILE_WRITING_LANGUAGES:
        from fsm_agent.core.inline_code import unread_code  # noqa: PLC0415 - only when needed

        if unread_code(part) is None:
            return []
    texts = list(part.argv[1:])
    if any(redirect.operator in _FED for redirect in part.redirects):
        texts.append(analysis.command)
    return texts
