"""Text that tree-sitter-bash and Bash read differently: heredoc ends, line continuations and
comments.

``shell_commands`` trusts the parse tree to say where each command is. Two places where the
tree can be wrong in a way that hides a command from it (and so from the read-only judge and
from deny rules, SPEC §9.3):

* **Heredoc ends.** Bash ends a heredoc at the first line equal to its delimiter after quote
  removal (``<<E'O'F``, ``<<$'EOF'`` and ``<<EO"F"`` all end at ``EOF``), with leading tabs
  stripped for ``<<-`` and, when no part of the delimiter is quoted, backslash-newlines joined
  first. tree-sitter compares the delimiter as written, so ``cat <<E'O'F`` followed by ``EOF``
  and ``rm -rf x`` lines runs ``rm`` while the tree shows heredoc text.
* **Line continuations.** Bash removes a backslash-newline before it splits tokens, so
  ``echo a\\<newline>#b; rm x`` runs ``rm`` (``a#b`` is one word) and ``&\\<newline>>`` is
  ``&>``; tree-sitter reads a comment and an ``&`` there.
* **Escaped blanks.** ``\\<space>`` or ``\\<tab>`` opening a word is part of it for Bash;
  tree-sitter skips it, so ``> \\<space><newline>rm x`` redirects to a file named by a blank
  and runs ``rm`` in Bash, and redirects to ``rm`` for the parser.
* **Comments.** ``#`` starts a comment only at the start of a word; after a backslash-escaped
  tab (``echo\\<tab>#; rm x``) it is inside one, and ``rm`` runs, while tree-sitter reads a
  comment to the end of the line.

The functions here only say whether the text is read the same way; the caller reports a
problem when it is not, and the command asks.
"""

from __future__ import annotations

import re

_DELIMITER_CHARS = re.compile(r"[A-Za-z0-9_.,:+=@%/^~!-]")
"""Characters a heredoc delimiter may hold unquoted: none of them is special to Bash there."""


def heredoc_delimiter(word: str) -> tuple[str, bool] | None:
    """The delimiter Bash ends a heredoc at, and whether any part of ``word`` was quoted.

    None when ``word`` is not a plain word of literal characters, single- or double-quoted
    runs without expansions, and backslash-escaped characters (``$'...'``, ``$"..."``,
    ``$x`` and shell operators are refused: what Bash makes of them is not worth the doubt).
    """
    out: list[str] = []
    quoted = False
    index = 0
    while index < len(word):
        char = word[index]
        if char in "'\"":
            end = word.find(char, index + 1)
            inner = word[index + 1 : end]
            if end < 0 or "\n" in inner or (char == '"' and re.search(r"[$`\\]", inner)):
                return None
            out.append(inner)
            quoted, index = True, end + 1
        elif char == "\\":
            if index + 1 >= len(word) or word[index + 1] == "\n":
                return None
            out.append(word[index + 1])
            quoted, index = True, index + 2
        elif _DELIMITER_CHARS.fullmatch(char):
            out.append(char)
            index += 1
        else:
            return None
    delimiter = "".join(out)
    return (delimiter, quoted) if delimiter else None


def heredoc_ends_as_parsed(
    lines: list[str], delimiter: str, *, strip_tabs: bool, joins_lines: bool
) -> bool:
    """Whether Bash ends a heredoc on the last of ``lines``, as the parser did.

    Args:
        lines: the heredoc's lines as the parser read them, from its first body line to its
            end line (whole lines, without newlines).
        delimiter: from :func:`heredoc_delimiter`.
        strip_tabs: ``<<-``: Bash strips leading tabs before comparing.
        joins_lines: the delimiter is unquoted: Bash joins a line ending in an unescaped
            backslash with the next before comparing.
    """
    pending = ""
    for index, written in enumerate(lines):
        last = index == len(lines) - 1
        line = written.lstrip("\t") if strip_tabs else written
        if joins_lines and not last and _continues(line):
            if strip_tabs:
                return False  # tabs stripped before or after joining: not worth the doubt
            pending += line[:-1]
            continue
        text, pending = pending + line, ""
        if text == delimiter:
            return last and text == line
    return False


def _continues(line: str) -> bool:
    """Whether ``line`` ends in a backslash that escapes the newline after it."""
    trailing = len(line) - len(line.rstrip("\\"))
    return trailing % 2 == 1


_JOINABLE = re.compile(rb"[A-Za-z0-9_./:=,+@%^~-]")
"""Word characters: a backslash-newline between two of them leaves one word either way."""


def _backslashes_before(source: bytes, index: int) -> int:
    """How many backslashes stand right before ``source[index]``: counted back from it, not
    by copying the text before it, so a long command is read in linear time."""
    count = 0
    while count < index and source[index - count - 1] == 0x5C:
        count += 1
    return count


def continuation_misread(source: bytes, index: int) -> str | None:
    """Why the backslash-newline at ``source[index]`` may be read apart by the parser, if so.

    A continuation after a blank, before a blank within a line, between two word characters,
    or at the very end reads the same in both; one at the start of a line, or touching an
    operator, ``#``, ``$``, a quote or a bracket may not (after ``ls`` and a newline,
    ``\\<newline>touch x`` is a command of its own to Bash and more words of ``ls`` to the
    parser).
    """
    backslashes = _backslashes_before(source, index)
    if backslashes % 2 == 1:
        return None  # the backslash is itself escaped: not a continuation
    before = source[index - 1 : index]
    after = source[index + 2 : index + 3]
    if not after or before in (b" ", b"\t"):
        return None
    if after in (b" ", b"\t") and before not in (b"", b"\n"):
        return None
    if joins_word_characters(source, index):
        return None
    left, right = before.decode(errors="replace"), after.decode(errors="replace")
    return f"a line continuation joins {left!r} and {right!r}, which the parser may read apart"


def comment_misread(source: bytes, index: int) -> str | None:
    """Why the comment the parser found at ``source[index]`` may be part of a word to Bash.

    Bash starts a comment at a ``#`` opening a word: at the start of a line, after an unescaped
    blank, or after ``;``, ``&`` or ``|``. Anything else before it is not worth the doubt.
    """
    last = source[index - 1 : index] if index else b""
    if not last or last in (b"\n", b";", b"&", b"|"):
        return None
    if last in (b" ", b"\t") and _backslashes_before(source, index - 1) % 2 == 0:
        return None
    shown = last.decode(errors="replace")
    return f"a '#' after {shown!r} may be inside a word for Bash, not a comment"


def escaped_blank_misread(source: bytes, index: int) -> str | None:
    """Why the backslash-blank at ``source[index]`` may be skipped by the parser, if so.

    Inside a word (``my\\ file``) both read one word; opening one, the parser drops it.
    """
    backslashes = _backslashes_before(source, index)
    if backslashes % 2 == 1:
        return None  # the backslash is itself escaped
    before = source[index - 1 : index]
    if before and _JOINABLE.fullmatch(before):
        return None
    blank = source[index + 1 : index + 2].decode()
    return f"an escaped {blank!r} opening a word, which the parser may skip"


def joins_word_characters(source: bytes, index: int) -> bool:
    """Whether the backslash-newline at ``source[index]`` stands between two word characters
    (``EO\\<newline>F``): Bash reads one word, which the parser must not split."""
    before = source[index - 1 : index]
    after = source[index + 2 : index + 3]
    return bool(_JOINABLE.fullmatch(before) and _JOINABLE.fullmatch(after))
