"""The mask of a string value dropped from streamed JSON text, written as the text arrives.

A value under a sensitive key in a tool input the model streams as JSON text
(:mod:`fsm_agent.trace.stream_input_redaction`) is written as its mask
(:func:`fsm_agent.trace.redact.mask`): :data:`~fsm_agent.trace.redact.REDACTED` padded with
``*`` to the length of the value as ``json.loads`` decodes it, so that replay's core measures
the same lengths as the recording one did (DESIGN §8). :class:`StreamedMask` counts the
value's code points as its text arrives and writes one character of the mask for each, so the
written text carries the count: read again (a trace copied into a fork's), it is counted the
same and goes on the same. At the closing quote, what the mask still lacks of
:data:`~fsm_agent.trace.redact.REDACTED` is written.

Escapes count as what they decode to: ``\\n`` or ``\\u00e9`` is one code point, and so is a
``\\u`` surrogate pair (a high one, ``\\ud83d``, then a low one, ``\\ude00``): a high escape's
character waits for what follows it, which joins it when it is a low escape. A piece that
ends inside an escape is written ending inside one too (a backslash, then ``u`` and the hex
digits the original has so far, taken from the ``\\u00XX`` escape of the mask's next
character); the next piece completes it. A written escape is one character, so an escape is
written across a piece's end only when it adds one for sure. It adds none when it is a low
escape pairing with a character written already: a high escape written across a piece's end
(it could not wait), or any escape written across a piece's end with one of its hex digits
(read again, its digits are the mask's, and it may have been a high one). Right after such
an escape, an escape whose digits do not yet show that it is no low one waits, unwritten, for
the next piece; a copy that ends right there reads what follows as plain text. Lone surrogate
escapes (which the core refuses as input anyway) count one each, except a low one right
after such an escape.
"""

from __future__ import annotations

import re
from typing import Final

from fsm_agent.trace.redact import MASK_FILL, REDACTED

_HEX: Final = frozenset("0123456789abcdefABCDEF")
_PLAIN: Final = 0
_HIGH: Final = 1
_LOW: Final = 2
_STOP: Final = re.compile(r'["\\]')


class StreamedMask:
    """One dropped string value, from its first character to its closing quote."""

    __slots__ = ("_deferred", "_escape", "_pairable", "_written", "_written_escape")

    def __init__(self) -> None:
        self._written = 0
        """The mask's characters written (an escape written in part counts once complete)."""
        self._deferred = False
        """A high surrogate escape was read whose character is not written yet."""
        self._pairable = False
        """A low surrogate escape right now would pair with the character before."""
        self._escape: str | None = None
        """The escape being read, after its backslash (``""``, ``"u"``, ``"ud8"``, ...)."""
        self._written_escape = 0
        """How many characters of the escape being read are written (0: none yet)."""

    def read(self, piece: str, pos: int, out: list[str]) -> int:
        """Read the value's text in ``piece`` from ``pos``, appending what is written for it to
        ``out``; returns the index of its closing quote, or -1 when the piece ends first (then
        an escape begun is written in part, when it may be)."""
        end = len(piece)
        while pos < end:
            escape = self._escape
            if escape is None:
                found = _STOP.search(piece, pos)
                stop = end if found is None else found.start()
                if stop > pos:
                    self._unit(_PLAIN, stop - pos, out)
                if stop == end:
                    break
                if piece[stop] == '"':
                    return stop
                self._escape = ""
                pos = stop + 1
            elif escape == "":
                char = piece[pos]
                if char == "u":
                    self._escape = "u"
                else:  # \n, \", \\ ... (or a character JSON does not escape: one all the same)
                    self._escaped(_PLAIN, out)
                pos += 1
            elif piece[pos] in _HEX:
                escape += piece[pos]
                pos += 1
                if len(escape) < 5:
                    self._escape = escape
                else:
                    code = int(escape[1:], 16)
                    kind = _HIGH if 0xD800 <= code < 0xDC00 else _PLAIN
                    self._escaped(_LOW if 0xDC00 <= code < 0xE000 else kind, out)
            else:  # a \u escape cut short by a character that is no hex digit: one, then that
                self._escaped(_PLAIN, out)
        self._write_escape_begun(out)
        return -1

    def close(self, out: list[str]) -> None:
        """Append what the mask lacks at the value's closing quote."""
        if self._deferred:
            self._deferred = False
            self._write(1, out)
        if self._written < len(REDACTED):
            out.append(REDACTED[self._written :])
            self._written = len(REDACTED)

    def _escaped(self, kind: int, out: list[str]) -> None:
        """An escape read to its end."""
        self._escape = None
        self._unit(kind, 1, out)

    def _unit(self, kind: int, count: int, out: list[str]) -> None:
        """``count`` code points of ``kind`` read (only plain text counts more than one)."""
        written_escape, self._written_escape = self._written_escape, 0
        owed = 1 if self._deferred else 0
        if kind == _LOW:
            if not self._deferred and not self._pairable:
                owed = 1  # a lone low surrogate (the deferred high one pairs with it)
            self._deferred = False
        elif kind == _HIGH:
            self._deferred = not written_escape  # written in part: it is written now
            owed += 0 if self._deferred else 1
        else:
            self._deferred = False
            owed += count
        self._pairable = kind == _HIGH or written_escape > 2  # a hex digit of it was written
        if written_escape:
            out.append(self._escape_text()[written_escape:])
            self._written += 1
            owed -= 1
        self._write(owed, out)

    def _write(self, count: int, out: list[str]) -> None:
        """Append the mask's next ``count`` characters."""
        if count <= 0:
            return
        done = self._written
        self._written = done + count
        if done >= len(REDACTED):
            out.append(MASK_FILL * count)
        else:
            out.append((REDACTED + MASK_FILL * count)[done : done + count])

    def _escape_text(self) -> str:
        """The mask's next character as a ``\\u`` escape."""
        done = self._written
        char = REDACTED[done] if done < len(REDACTED) else MASK_FILL
        return f"\\u{ord(char):04x}"

    def _write_escape_begun(self, out: list[str]) -> None:
        """At a piece's end inside an escape: write as much of it as has been read, when the
        escape is sure to add a character (see the module docstring)."""
        escape = self._escape
        if escape is None:
            return
        if not self._written_escape and self._pairable and not self._deferred:
            digits = escape[1:3].lower()
            if not digits or (digits[0] == "d" and (len(digits) < 2 or digits[1] in "cdef")):
                return  # it may be a low surrogate, joining the character before: it waits
        size = 1 + len(escape)
        if size > self._written_escape:
            out.append(self._escape_text()[self._written_escape : size])
            self._written_escape = size
