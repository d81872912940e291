"""Key-name redaction inside a tool input that streams as text (DESIGN §8).

A model's tool input reaches the trace as ``input_json_delta`` pieces of JSON text; only
their concatenation is the input object. The record-level rule (:mod:`fsm_agent.trace.redact`:
a value stored under a sensitive key name, at any depth, is redacted whatever its type: a
non-empty string or a number becomes :data:`~fsm_agent.trace.redact.REDACTED`, and so does
every string and number inside an array or object stored there) never sees an object there,
only strings. This module applies that rule to the text itself, piece by piece, as it is
written: :class:`ToolInputScanner` reads one block's JSON incrementally and rewrites each
piece so that the rewritten pieces, concatenated, parse to exactly what the record-level rule
makes of the parsed input. A sensitive string's characters are replaced by its mask as they
are read, one for each code point (:mod:`fsm_agent.trace.streamed_mask`), and what the mask
still lacks of ``[REDACTED]`` is written before its closing quote (an empty value stays
empty, as the rule leaves it). A sensitive number is written as ``"[REDACTED]"`` where
it begins, and its characters are dropped. An array or object under a sensitive key keeps its
brackets, keys, commas, ``true``, ``false`` and ``null``: inside it, every string and number
is sensitive, down to where it closes. Everything else passes byte for byte; a piece that
changes nothing is returned as is.

The rewritten text carries the scanner's state: read again, each rewritten piece is returned
as it is and leaves the scanner as the original piece left it, so a writer that copies a
trace's pieces (a run carried on from a copied prefix, :meth:`TraceWriter.write_record`) and
then goes on with live ones writes what one writer would have written for the whole stream.
Three marks make it so. The mask written for a sensitive value's characters has one for
each, so read again it is counted as the value was (and a value begun is told from an empty
one). A piece that ends inside an escape of a sensitive value is written ending inside one
too, completed by the next piece (see :mod:`fsm_agent.trace.streamed_mask` for the one case
it cannot be). And the text of the
cut, ``[REDACTED]``, is itself cut wherever it stands between tokens, or as a name in broken
text (it is never valid JSON there). A number is dropped with no mark of its own: the
characters a number is made of are dropped wherever they follow a string that is
``[REDACTED]`` (never valid JSON there), so a copy that ends inside a number, whose written
text ends with the marker, goes on dropping the rest of it. And a container's sensitivity
needs no mark: its key is written as it came.

Theory of operation: a key the rule redacts under is spelled in the text, as it is or in
``\\u`` escapes, so text that names no credential (no sensitive name in any case, no ``\\u``)
has nothing to redact: until a piece names one, the pieces are only searched for names and
kept unread. From then on (the unread pieces read first) a small state machine follows the
JSON grammar's tokens (what may come next: a value, a key, a colon, a comma or closing
bracket), with a stack of open containers and the string states (inside a key, kept to be
judged when it closes, escapes included; inside an ordinary value; inside a sensitive value).
A piece inside an ordinary string with no quote and no backslash costs two searches.

The scanner is total: any text in any state. Text that breaks the grammar cannot be read for
keys and values any more, so from there on it is only searched for names; from the first
one, or at once when the text broke right after a sensitive key (an unquoted value, a missing
colon) or right after a string that names one or was a sensitive value (a key and value with
no braces, ``"password": "x"``, a string meant as a key inside a container, a value that goes
on, ``"password": "a" "b"``), the rest of the block is dropped (``[REDACTED]`` marks the
place). Text with no such
name (``[REDACTED]`` counts as one) passes as it came; inside a container under a sensitive
key, any break cuts the rest: the core answers it with the same error
as in the run, so its trace replays.

Replay feeds the rewritten pieces to its core, which assembles the redacted input; its
effects then equal the recorded ones, which the writer redacted by the record-level rule.
:class:`StreamInputRedaction` keeps one scanner per open tool-input block of the current
request, for a writer.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

from fsm_agent.trace.redact import (
    CREDENTIAL_WORDS,
    LAST_PART_WORDS,
    REDACTED,
    WHOLE_KEY_WORDS,
    is_sensitive_key,
)
from fsm_agent.trace.streamed_mask import StreamedMask

# What the scanner expects next (outside strings) or where it is (inside one).
_VALUE: Final = 0
"""A value: the input's start, after a colon, after a comma in an array."""
_VALUE_OR_CLOSE: Final = 1
"""After ``[``: a value or ``]``."""
_KEY_OR_CLOSE: Final = 2
"""After ``{``: a key or ``}``."""
_KEY: Final = 3
"""After a comma in an object."""
_COLON: Final = 4
"""After a key."""
_AFTER_VALUE: Final = 5
"""A comma or the innermost container's closing bracket."""
_DONE: Final = 6
"""The input's value is complete: whitespace only."""
_IN_KEY: Final = 7
_IN_STRING: Final = 8
"""Inside a string value that is kept."""
_SECRET_START: Final = 9
"""Just after the opening quote of a value under a sensitive key."""
_IN_SECRET: Final = 10
"""Inside such a value, its characters replaced by its mask as they are read."""
_LITERAL: Final = 11
"""Inside a number, ``true``, ``false`` or ``null``."""
_BROKEN: Final = 12
"""The text broke the grammar, with no sensitive key before it: searched for names only."""
_CUT: Final = 13
"""The rest of the block is dropped."""
_SECRET_NUMBER: Final = 14
"""A number under a sensitive key begins here (passed on at once: never a state kept)."""

_STRINGS: Final = frozenset({_IN_KEY, _IN_STRING})
_OBJECT: Final = 0
_ARRAY: Final = 1
_OPENS: Final = {"{": (_OBJECT, _KEY_OR_CLOSE), "[": (_ARRAY, _VALUE_OR_CLOSE)}
_CLOSES: Final = {"}": _OBJECT, "]": _ARRAY}

_STRING_STOP: Final = re.compile(r'["\\]')
_SPACE: Final = re.compile(r"[ \t\n\r]*")
_LITERAL_RUN: Final = re.compile(r'[^ \t\n\r,:\[\]{}"]*')
_NUMBER_RUN: Final = re.compile(r"[0-9+\-.eE]*")
"""The characters a number is made of."""
_NUMBER_START: Final = frozenset("-0123456789")
_VIABLE_LITERAL: Final = re.compile(
    r"-|-?[0-9][0-9+\-.eE]*|t(?:r(?:ue?)?)?|f(?:a(?:l(?:se?)?)?)?|n(?:u(?:ll?)?)?"
)
"""A literal's beginning that may still be a number, ``true``, ``false`` or ``null``; any
other bare word is a grammar error (under a sensitive key it could be an unquoted secret)."""
_NAMES: Final = "|".join(
    [
        *(word.replace("_", "[-_]") for word in CREDENTIAL_WORDS),
        *LAST_PART_WORDS,
        *WHOLE_KEY_WORDS,
        r"\\u",
        re.escape(REDACTED.lower()),
    ]
)
"""What may name a credential in text: the key rule's names anywhere (``token`` in any word,
``-`` or ``_`` where the rule reads ``_``), a ``\\u`` escape, which could spell one, and the
mark of a cut (so that the rewritten text, read again, is cut where it was)."""
_NAME: Final = re.compile(_NAMES, re.IGNORECASE)
"""The names in any case, as the key rule's ``re.IGNORECASE`` matches them (``ſ`` is an
``s`` and ``ı`` an ``i`` to it)."""
_ASCII_NAME: Final = re.compile(_NAMES)
"""The names in lower case: for ASCII text lowered, a search many times faster."""
_NAME_TAIL: Final = 16
"""Characters of text kept to find a name cut between two pieces (the longest has 13)."""
_LITERAL_KEPT: Final = 8
"""Characters of a literal kept to judge the next piece's continuation: past the longest
keyword, a literal can only go on as a number, judged by its characters."""


class ToolInputScanner:
    """Rewrites one tool-input block's JSON text, piece by piece (see the module docstring):
    reads it once a piece names a credential, and until then only searches it for names."""

    __slots__ = ("_reader", "_tail", "_unread")

    def __init__(self) -> None:
        self._reader: _JsonReader | None = None
        """Made when a piece first names a credential."""
        self._unread: list[str] = []
        """The pieces before that."""
        self._tail = ""
        """The end of the text so far, to find a name cut between two pieces."""

    def rewrite(self, piece: str) -> str:
        """``piece`` as the trace is to hold it (``piece`` itself when nothing changes)."""
        reader = self._reader
        if reader is None:
            text = self._tail + piece
            if _first_name(text) < 0:
                self._unread.append(piece)
                self._tail = text[-_NAME_TAIL:]
                return piece
            reader = self._reader = _JsonReader()
            for earlier in self._unread:
                reader.rewrite(earlier)  # unchanged: they name nothing (they were written)
            self._unread = []
        return reader.rewrite(piece)


class _JsonReader:
    """Follows one tool input's JSON and rewrites its pieces (see the module docstring)."""

    __slots__ = (
        "_escape",
        "_key",
        "_literal",
        "_mask",
        "_region",
        "_secret_key",
        "_stack",
        "_state",
        "_tail",
        "_value",
    )

    def __init__(self) -> None:
        self._state = _VALUE
        self._escape = False
        """The previous piece ended inside a string on a backslash."""
        self._stack = bytearray()
        """The open containers, innermost last (``_OBJECT`` or ``_ARRAY``)."""
        self._key: list[str] = []
        """The text of the key being read, as written (escapes undecoded)."""
        self._secret_key = False
        """The key just read is a sensitive key name: the value to come is under it."""
        self._region = 0
        """Inside an array or object under a sensitive key: the depth of that container in
        ``_stack`` (counted from 1), else 0. Every value in it is sensitive."""
        self._value: list[str] = []
        """The text of the string value being read or read last, as written (a sensitive
        value's is :data:`REDACTED`); empty once a literal or a container follows it."""
        self._literal = ""
        """The beginning of the literal being read."""
        self._tail = ""
        """The end of the broken text so far (``_BROKEN``), to find a name cut between two
        pieces."""
        self._mask: StreamedMask | None = None
        """In a sensitive string value: its mask, written as the value is read."""

    def rewrite(self, piece: str) -> str:
        """``piece`` as the trace is to hold it (``piece`` itself when nothing changes)."""
        # Most pieces of a large input are inside an ordinary string, and end inside it.
        if (
            self._state == _IN_STRING
            and not self._escape
            and '"' not in piece
            and "\\" not in piece
        ):
            self._value.append(piece)
            return piece
        return self._scan(piece)

    def _scan(self, piece: str) -> str:
        out: list[str] = []  # the rewritten piece's parts, once something is dropped
        kept = 0  # piece[kept:] is not yet in out
        pos, end = 0, len(piece)
        state = self._state
        while pos < end:
            if state == _IN_SECRET:
                assert self._mask is not None  # made as the value began
                out.append(piece[kept:pos])
                close = self._mask.read(piece, pos, out)
                if close < 0:
                    kept = end
                    break
                self._mask.close(out)
                self._mask = None
                kept, pos = close, close + 1
                state = self._after_value()
                continue
            if state in _STRINGS:
                close = self._string_end(piece, pos)
                if state == _IN_KEY:
                    self._key.append(piece[pos:end] if close < 0 else piece[pos:close])
                else:
                    self._value.append(piece[pos:end] if close < 0 else piece[pos:close])
                if close < 0:
                    break
                pos = close + 1
                state = self._key_read() if state == _IN_KEY else self._after_value()
                continue
            if state == _SECRET_START:
                if piece[pos] == '"':  # an empty value stays empty
                    pos += 1
                    state = self._after_value()
                else:  # not empty: its mask is written as it is read
                    self._mask = StreamedMask()
                    state = _IN_SECRET
                continue
            if state == _SECRET_NUMBER:
                # Its marker at once, as a string; its characters are dropped from here on.
                out += (piece[kept:pos], f'"{REDACTED}"')
                kept = pos
                state = self._after_value()
                continue
            if state == _LITERAL:
                state, pos = self._literal_on(piece, pos)
            elif state < _IN_KEY:  # between tokens
                pos = _SPACE.match(piece, pos).end()  # type: ignore[union-attr]  # matches always
                if pos == end:
                    break
                if piece.startswith(REDACTED, pos):  # a cut's mark, read again: cut here
                    state = _CUT
                elif (run := self._number_dropped(piece, pos, state)) > pos:
                    out.append(piece[kept:pos])
                    kept = pos = run
                    continue
                else:
                    state = self._token(piece[pos], state)
                    if state < _LITERAL:
                        pos += 1
            if state == _BROKEN:
                # An unquoted value, or a value with no colon before it; or any break inside
                # a container under a sensitive key.
                if self._secret_key or self._region:
                    state = _CUT
                else:
                    found = self._name_in(piece, pos)
                    if found < 0:
                        break
                    pos, state = found, _CUT
            if state == _CUT:
                # Marked where it begins; a piece that begins dropped is dropped whole.
                out += (piece[kept:pos], REDACTED) if self._state != _CUT else ("",)
                kept = end
                break
        self._state = state
        if not out:
            return piece
        out.append(piece[kept:])
        return "".join(out)

    def _number_dropped(self, piece: str, pos: int, state: int) -> int:
        """Where the characters of a sensitive number that go on at ``pos`` end (``pos`` when
        none do): a number's characters right after a string that is ``[REDACTED]`` (the
        marker a sensitive number was written as; in text that follows a redacted string
        they are no JSON) are dropped."""
        if state != _AFTER_VALUE or self._value != [REDACTED]:
            return pos
        return _NUMBER_RUN.match(piece, pos).end()  # type: ignore[union-attr]  # matches always

    def _name_in(self, piece: str, pos: int) -> int:
        """Where in ``piece``, from ``pos``, broken text first names a credential; -1 when it
        does not (the piece's end is kept to find a name cut by the next piece)."""
        tail = self._tail
        text = tail + piece[pos:]
        found = _first_name(text)
        if found < 0:
            self._tail = text[-_NAME_TAIL:]
            return -1
        return pos + max(0, found - len(tail))

    def _string_end(self, piece: str, pos: int) -> int:
        """The index of the quote closing the string the scanner is in, from ``pos``; -1 when
        the piece ends first (then ``_escape`` says whether it ended on a backslash)."""
        if self._escape:
            self._escape = False
            pos += 1  # the escaped character
        while True:
            found = _STRING_STOP.search(piece, pos)
            if found is None:
                return -1
            at = found.start()
            if piece[at] == '"':
                return at
            if at + 1 == len(piece):
                self._escape = True
                return -1
            pos = at + 2

    def _key_read(self) -> int:
        """The state after a key's closing quote: its name is judged."""
        text = "".join(self._key)
        self._key = []
        key = _decoded_key(text)
        if key is None:  # not a JSON string: judged as broken text is
            self._secret_key = _first_name(text) >= 0
            return _BROKEN
        self._secret_key = is_sensitive_key(key)
        return _COLON

    def _after_value(self) -> int:
        """The state after a complete value."""
        return _AFTER_VALUE if self._stack else _DONE

    def _token(self, char: str, state: int) -> int:
        """The state after ``char`` (not whitespace) outside any string in ``state``;
        ``_LITERAL`` leaves ``char`` to be read as a literal's first character."""
        if state in (_VALUE, _VALUE_OR_CLOSE):
            secret = self._secret_key or self._region > 0
            if char == '"':
                self._secret_key = False
                self._value = [REDACTED] if secret else []
                return _SECRET_START if secret else _IN_STRING
            opened = _OPENS.get(char)
            if opened is not None:
                self._value = []
                self._stack.append(opened[0])
                if self._secret_key and not self._region:  # every value in it is sensitive
                    self._region = len(self._stack)
                self._secret_key = False
                return opened[1]
            if char == "]" and state == _VALUE_OR_CLOSE:
                return self._closed()
            if secret and char in _NUMBER_START:
                self._secret_key = False
                self._value = [REDACTED]
                return _SECRET_NUMBER
            self._value = []
            self._literal = ""  # a literal is judged, under a sensitive key, as it ends
            return _LITERAL
        if state in (_KEY_OR_CLOSE, _KEY):
            if char == '"':
                return _IN_KEY
            if char == "}" and state == _KEY_OR_CLOSE:
                return self._closed()
            return _BROKEN
        if state == _COLON:
            return _VALUE if char == ":" else _BROKEN
        if state == _AFTER_VALUE:
            if char == ",":
                return _KEY if self._stack[-1] == _OBJECT else _VALUE
            if _CLOSES.get(char) == self._stack[-1]:
                return self._closed()
        # After the input's value, or a character the grammar has no place for. A string just
        # before may have been meant as a key (``"password": "x"`` with no braces,
        # ``["password": "x"]``) or a value may go on (``"password": "a" "b"``): one that names
        # a credential, or was one, counts as a sensitive key, judged as broken text is.
        self._secret_key = bool(self._value) and _first_name("".join(self._value)) >= 0
        return _BROKEN

    def _closed(self) -> int:
        """Close the innermost container."""
        self._stack.pop()
        if len(self._stack) < self._region:
            self._region = 0
        self._value = []
        return self._after_value()

    def _literal_on(self, piece: str, pos: int) -> tuple[int, int]:
        """Read a literal's characters from ``pos``: the state and position after them."""
        run = _LITERAL_RUN.match(piece, pos).end()  # type: ignore[union-attr]  # matches always
        literal = self._literal + piece[pos:run]
        if not literal or not _VIABLE_LITERAL.fullmatch(literal):
            return _BROKEN, pos
        if run == len(piece):  # it may go on in the next piece
            self._literal = literal[:_LITERAL_KEPT]
            return _LITERAL, run
        self._literal = ""
        self._secret_key = False
        return self._after_value(), run


def _first_name(text: str) -> int:
    """Where ``text`` first names a credential (:data:`_NAMES`); -1 when it does not."""
    found = _ASCII_NAME.search(text.lower()) if text.isascii() else _NAME.search(text)
    return -1 if found is None else found.start()


def _decoded_key(text: str) -> str | None:
    """A key's name from its text as written between its quotes; None when it is not a JSON
    string's text."""
    if "\\" not in text:
        return text
    try:
        key = json.loads(f'"{text}"')
    except ValueError:
        return None
    return key if isinstance(key, str) else None


_INPUT_DELTA: Final = "input_json_delta"
_BLOCK_BOUNDS: Final = frozenset({"content_block_start", "content_block_stop"})


class StreamInputRedaction:
    """One writer's scanners: one per tool-input block of the current request, made at the
    block's first ``input_json_delta`` and dropped at its ``content_block_stop`` (or a new
    start at its index), at ``message_stop``, and when events of another request arrive (a
    core streams one request at a time)."""

    __slots__ = ("_open", "_request_id")

    def __init__(self) -> None:
        self._request_id: str | None = None
        self._open: dict[int, ToolInputScanner] = {}

    def event(self, request_id: str, raw: dict[str, Any]) -> dict[str, Any]:
        """A model stream event as the trace is to hold it: ``raw`` itself, or a copy whose
        ``partial_json`` is rewritten."""
        kind = raw.get("type")
        if kind == "content_block_delta":
            delta = raw.get("delta")
            if type(delta) is dict and delta.get("type") == _INPUT_DELTA:
                piece = delta.get("partial_json")
                if type(piece) is str and piece:  # every block starts with an empty one
                    new = self._scanner(request_id, raw.get("index")).rewrite(piece)
                    if new is not piece:
                        return {**raw, "delta": {**delta, "partial_json": new}}
        elif self._open:
            if kind in _BLOCK_BOUNDS:
                if request_id == self._request_id:
                    index = raw.get("index")
                    if type(index) is int:
                        self._open.pop(index, None)
            elif kind == "message_stop":
                self._open.clear()
        return raw

    def _scanner(self, request_id: str, index: object) -> ToolInputScanner:
        """The scanner of the block at ``index``, made when it has none yet."""
        if request_id != self._request_id:
            self._request_id = request_id
            self._open.clear()
        if type(index) is not int:  # the core refuses the event; its text is still judged
            return ToolInputScanner()
        scanner = self._open.get(index)
        if scanner is None:
            scanner = self._open[index] = ToolInputScanner()
        return scanner
