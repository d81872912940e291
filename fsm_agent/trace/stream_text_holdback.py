"""Secrets that a model streams across several deltas, or a tool reports across several
progress texts (DESIGN §8).

A model streams its text in pieces of a few characters: a secret it writes (a token it read
from a file, an API key) arrives split over several ``content_block_delta`` events, and no
piece holds it whole. Each line of the trace holds one piece, so redacting each piece on its
own would write the secret in parts that anyone can join again (and replay does join them).
A tool that reports its output as it comes (``ToolProgressReported``, in chunks) splits it
the same way.

So the writer holds back the end of a piece that may be the beginning of a secret: the
longest end of the text so far that begins one of the writer's secret strings, or ``sk-ant-``
(an API key's prefix), or that is an API key still running (``sk-ant-`` and key characters up
to the end: its end is not known yet). A piece with such an end is not written at once. When
the next piece of the same text comes (a delta of the same kind, request and index; a
progress text of the same call), the held characters move to the front of that piece when a
secret may run on from them into it; the piece is written without them, and the next piece
is judged with them. So a secret is always whole in one piece, where the writer's redaction
replaces it as it replaces a secret in any string.

What comes between two pieces decides the rest (the writer holds one line at a time):

* an event whose step performs nothing and takes no transition (a ``ping``, a tool's
  progress or ``SubagentStarted`` while the model streams; tools start mid-stream, SPEC §2)
  passes over: its line waits with the held one, and both keep their order and seqs;
* an event whose step has effects cannot wait (its line is written before any of them is
  performed, DESIGN §5), nor one that takes a transition, nor another piece that is to be
  held: the held piece is written without its held end, which is kept for the next piece of
  its text. When the text ends without one, the end is written as one more piece of it, a
  line of its own just before the event that ended it, which takes the seq after: a
  block's next stream event (its stop, another block), a step of the loop's machine (the
  stream ended, failed, was aborted or retried), for a call's progress a step that moves or
  cancels the call, or the end of the run. Replay feeds that piece as the piece it is: the
  core only adds a delta's text to its block and takes a progress text as a fact, and no
  step of a tool's event depends on a block still streaming, so the core's text, its steps
  and the trace's effects stay as they were;
* a held piece whose text ends with the next event (the same cases) is written whole: the
  text is complete there, and is redacted as it stands.

Nothing the core sees changes: the core is fed every event as it came, and a piece's step
does not depend on its text (the core only appends it). Replay feeds the pieces as the trace
holds them; they join to the same text, so the core's message is the one the trace's effects
hold, redacted.

What this module owns is the text arithmetic: which delta carries text (:func:`text_key`),
what a piece becomes with the held characters in front (:meth:`StreamTextHoldback.piece`) and
how many of its last characters to hold. The writer owns when its lines are written; lines
written by a writer that knew no secrets (a Temporal workflow's, whose secrets stay on the
worker that writes its lines to the file) are moved the same way by :func:`held_back_lines`.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Iterable, Iterator
from typing import Any, Final

import orjson

from fsm_agent.trace import records

__all__ = [
    "StreamTextHoldback",
    "held_back_lines",
    "progress_call",
    "progress_key",
    "text_key",
]

_TEXT_KEYS: Final = {
    "text_delta": "text",
    "thinking_delta": "thinking",
    "input_json_delta": "partial_json",
}
"""The deltas whose string joins into a block's text, and its key."""
_KEY_PREFIX: Final = "sk-ant-"
_KEY_RUNNING: Final = re.compile(r"sk-ant-[A-Za-z0-9_\-]*\Z")
"""An API key begun and not yet ended (the redactor's rule takes ``sk-ant-`` and the key
characters after it, as many as there are)."""
_KEPT_PREFIX: Final = 256
"""Beginnings of a secret kept as strings up to this length (longer ones are sliced from the
secret when looked at), so that a long secret costs no more than its length squared by half
up to this bound."""
_KEY_HOLD_LIMIT: Final = 512
"""The most characters of a running key held back. An API key is about a hundred characters;
a longer run of key characters is written as it comes (the redactor still replaces the part
that begins with ``sk-ant-``), so that no text is held and searched again without end."""

BlockKey = tuple[str, int, str]
"""Which block's text a piece belongs to: the request, the block's index, the delta's type;
or which call's progress text (:func:`progress_key`)."""
_PROGRESS: Final = "progress"


def progress_key(call_id: str) -> BlockKey:
    """The key of the progress texts of tool call ``call_id``, which join as a block's
    pieces do."""
    return call_id, -1, _PROGRESS


def progress_call(key: BlockKey) -> str | None:
    """The tool call whose progress texts ``key`` is the key of; None for a block's."""
    return key[0] if key[2] == _PROGRESS else None


def text_key(raw: Any) -> tuple[int, str, str] | None:
    """``(index, delta type, key of its string)`` for a stream event that is a delta adding
    text to a block; None for any other event (or a delta of another shape, which the core
    refuses or skips)."""
    if type(raw) is not dict or raw.get("type") != "content_block_delta":
        return None
    delta = raw.get("delta")
    index = raw.get("index")
    if type(delta) is not dict or type(index) is not int:
        return None
    kind = delta.get("type")
    key = _TEXT_KEYS.get(kind) if type(kind) is str else None
    if key is None or type(delta.get(key)) is not str:
        return None
    return index, kind, key  # type: ignore[return-value]  # kind is a str: looked up above


_Begins = dict[str, tuple[list[int], list[str]]]


@functools.lru_cache(maxsize=64)
def _tables(patterns: tuple[str, ...]) -> tuple[_Begins, dict[str, list[str]]]:
    """What a holdback looks ``patterns`` up by, made once per set of them (a writer is made
    per run, most with no secret of their own): the beginnings a piece may end with, by their
    last character, and the patterns by their first.

    A pattern's beginnings are all but the whole (a whole secret is redacted where it is,
    unless it begins a longer one: then it is that one's beginning; ``sk-ant-`` whole is a key
    running, held by that rule). Each character's beginnings come longest first, as two lists:
    their lengths negated (a bisection skips those longer than the text at once) and the
    beginnings, kept as strings up to :data:`_KEPT_PREFIX` characters (longer ones are the
    whole pattern, sliced when looked at).
    """
    begins: dict[str, list[tuple[int, str]]] = {}
    starting: dict[str, list[str]] = {}
    for pattern in patterns:
        starting.setdefault(pattern[0], []).append(pattern)
        for size in range(1, len(pattern)):
            kept = pattern[:size] if size <= _KEPT_PREFIX else pattern
            begins.setdefault(pattern[size - 1], []).append((size, kept))
    ordered = {last: sorted(found, reverse=True) for last, found in begins.items()}
    tables = {
        last: ([-size for size, _ in found], [kept for _, kept in found])
        for last, found in ordered.items()
    }
    return tables, starting


class StreamTextHoldback:
    """The characters one writer holds back, by the block (or the call's progress) they go
    in front of.

    Args:
        secrets: the writer's secret strings (the redactor's).
    """

    __slots__ = ("_begins", "_held", "_starting")

    def __init__(self, secrets: Iterable[str]) -> None:
        self._begins, self._starting = _tables((*secrets, _KEY_PREFIX))
        self._held: dict[BlockKey, str] = {}

    def delta(self, request_id: str, raw: dict[str, Any]) -> tuple[dict[str, Any], int]:
        """A model stream event of request ``request_id`` as the trace is to hold it (``raw``
        itself, or a copy whose piece of text has what is held in front), and how many of the
        last characters of its piece may begin a secret (0: none; always 0 for an event that
        adds no text). :meth:`piece` for an event, in one call: it runs for every one."""
        if raw.get("type") != "content_block_delta":
            return raw, 0
        delta = raw.get("delta")
        if type(delta) is not dict:
            return raw, 0
        kind = delta.get("type")
        field = _TEXT_KEYS.get(kind) if type(kind) is str else None
        index = raw.get("index")
        if field is None or type(index) is not int:
            return raw, 0
        piece = delta.get(field)
        if type(piece) is not str:
            return raw, 0
        text, cut = self.piece((request_id, index, kind), piece)  # type: ignore[arg-type]
        if text is not piece:
            raw = {**raw, "delta": {**delta, field: text}}
        return raw, cut

    def piece(self, key: BlockKey, text: str) -> tuple[str, int]:
        """The piece ``text`` of block ``key`` as the trace is to hold it, with what is held
        for it in front, and how many of its last characters may begin a secret (0: none)."""
        if self._held:
            held = self._held.pop(key, None)
            if held is not None:
                text = held + text
        return text, self._cut(text)

    def goes_on(self, held: str, piece: str) -> bool:
        """Whether a secret or a key may begin within ``held`` (the end held of a piece) and
        go on into ``piece`` (the block's next piece): when not, the held piece is written as
        it was and ``piece`` is judged alone (most held ends are a letter or two that begin no
        secret after all)."""
        text = held + piece
        starting = self._starting
        for start in range(len(held)):
            rest = text[start:]
            for pattern in starting.get(rest[0], ()):
                if pattern.startswith(rest) or rest.startswith(pattern):
                    return True
        return False

    def hold(self, key: BlockKey, held: str) -> None:
        """Hold ``held`` (the end of a piece written without it) for the next piece of
        block ``key``."""
        self._held[key] = held

    def take(self, key: BlockKey) -> str:
        """What is held for block ``key``, no longer held (its block ended: the caller writes
        it as a piece of its own)."""
        return self._held.pop(key, "")

    def _cut(self, text: str) -> int:
        """How many of the last characters of ``text`` may begin a secret or a key."""
        if not text:
            return 0
        cut = 0
        length = len(text)
        found = self._begins.get(text[-1])
        if found is None and _KEY_PREFIX not in text:
            return 0
        if found is not None:
            sizes, beginnings = found
            for place in range(bisect.bisect_left(sizes, -length), len(sizes)):
                size = -sizes[place]
                beginning = beginnings[place]
                if text.endswith(beginning if len(beginning) == size else beginning[:size]):
                    cut = size
                    break
        if _KEY_PREFIX in text:
            running = _KEY_RUNNING.search(text)
            if running is not None and len(text) - running.start() <= _KEY_HOLD_LIMIT:
                cut = max(cut, len(text) - running.start())
        return cut


def held_back_lines(lines: Iterable[bytes], secrets: Iterable[str]) -> Iterator[bytes]:
    """Trace lines written by a writer that did not know ``secrets`` (a Temporal workflow's:
    its secrets stay on the worker), with the streamed pieces and the progress texts moved as
    a writer knowing them would have moved them, ready to be redacted line by line.

    Lines are passed on as they are but for a piece's whose text ends with characters that
    may begin a secret: it is passed on with the next line that is not a ``ping`` of its
    request, without those characters when a secret may run on from them into that line,
    the block's next piece (or the call's next progress text), which then begins with them,
    as the writer decides. A line held when ``lines`` end is passed on as it is: a writer
    hands over whole responses and whole tool steps (a workflow feeds the events of one
    response, or of one tool step, one after the other, nothing but an abort between them),
    whose texts end within the lines it hands over.
    """
    holdback = StreamTextHoldback(secrets)
    # The held line: its record, its text's key and the dict and field holding it, the
    # characters held, and its bytes when its text is still the one it was written with
    # (None once something went in front of it).
    held: tuple[dict[str, Any], BlockKey, dict[str, Any], str, int, bytes | None] | None = None
    after: list[bytes] = []  # pings that came after the held line
    for line in lines:
        found = _text_record(line)
        if held is not None:
            record_then, key, holder, field, cut, unchanged = held
            if found is None and _is_ping(line, key[0]):
                after.append(line)
                continue
            held = None
            text = holder[field]
            if (
                found is not None
                and found[1] == key
                and holdback.goes_on(text[-cut:], found[2][found[3]])
            ):
                holdback.hold(key, text[-cut:])
                holder[field] = text[:-cut]
                unchanged = None
            yield records.dumps(record_then) + b"\n" if unchanged is None else unchanged
            yield from after
            after.clear()
        if found is None:
            yield line
            continue
        record, key, holder, field = found
        piece = holder[field]
        text, cut = holdback.piece(key, piece)
        if text is not piece:
            holder[field] = text
        if cut:
            held = (record, key, holder, field, cut, line if text is piece else None)
        else:
            yield line if text is piece else records.dumps(record) + b"\n"
    if held is not None:
        yield records.dumps(held[0]) + b"\n" if held[5] is None else held[5]
        yield from after


def _is_ping(line: bytes, request_id: str) -> bool:
    """Whether ``line`` is the event line of a ``ping`` of request ``request_id``."""
    if b'"ping"' not in line:
        return False
    try:
        event = orjson.loads(line).get("event")
    except (orjson.JSONDecodeError, AttributeError):
        return False
    return (
        type(event) is dict
        and event.get("request_id") == request_id
        and type(event.get("event")) is dict
        and event["event"].get("type") == "ping"
    )


def _text_record(line: bytes) -> tuple[dict[str, Any], BlockKey, dict[str, Any], str] | None:
    """For an event line that adds a piece of text (a block's delta, a call's progress):
    its record, the text's key, and the dict and field that hold the text; None for any
    other line."""
    if b'"content_block_delta"' not in line and b'"ToolProgressReported"' not in line:
        return None
    try:
        record = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    event = record.get("event") if type(record) is dict else None
    if type(event) is not dict:
        return None
    if event.get("type") == "ToolProgressReported":
        call_id = event.get("call_id")
        if type(call_id) is not str or type(event.get("text")) is not str:
            return None
        return record, progress_key(call_id), event, "text"
    request_id = event.get("request_id")
    shape = text_key(event.get("event"))
    if event.get("type") != "ModelStreamEvent" or type(request_id) is not str or shape is None:
        return None
    index, kind, field = shape
    return record, (request_id, index, kind), event["event"]["delta"], field
