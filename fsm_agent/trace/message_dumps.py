"""The transcript a turn starts from, serialized once per conversation (issue 10, DESIGN §7).

Every user turn's trace starts with a ``TurnStarted`` event that holds the whole transcript, so
dumping, scanning and serializing every message again would make a turn's cost grow with the
conversation. Two caches keep that work to what the turn added:

* each message's JSON bytes, as they sit in the record, and whether a sensitive key name
  occurs in it, kept by the identity of the (frozen) message. An entry holds only a weak
  reference to its message and goes when the message does, so the memo never keeps a finished
  conversation alive in a long-lived process, and an id is never taken for another object's;
* :class:`TranscriptJson`, which a session keeps over its turns: the bytes of the last
  transcript written, redacted as written. The next turn's transcript begins with the very
  same messages, so only what comes after them is serialized and scanned for secrets. It also
  decides whether the turn's record holds that transcript whole or begins with the one the
  last turn's trace holds (``full_every``; :mod:`~fsm_agent.trace.transcript_base`), and keeps
  the digest that reference carries, updated with each turn's added bytes only.

Splicing gives exactly the bytes of the generic path (a test holds it to that): orjson writes
a list as its items' bytes, comma-separated between brackets, with no whitespace; each
message is serialized at the depth it has in the record, so it fails exactly where the whole
record would; and redaction works value by value, so redacting each message alone gives the
bytes that redacting the whole record gives. A message orjson cannot write as it is
(:func:`~fsm_agent.trace.json_limits.fit_for_json` would rewrite the whole record) sends the
writer down the generic path.
"""

from __future__ import annotations

import hashlib
import weakref
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final, NamedTuple

import orjson

from fsm_agent.core.codec import dump_message
from fsm_agent.core.messages import Message
from fsm_agent.trace.records import JSON_OPTIONS, refuse_unknown
from fsm_agent.trace.redact import Redactor
from fsm_agent.trace.render_fns import render_message

__all__ = ["TranscriptJson", "TranscriptParts", "message_json"]

_DEPTH: Final = 3
"""Containers around a message in a ``TurnStarted`` record: the record, its event, the list."""

_memo: dict[int, tuple[weakref.ref[Message], bytes | None, bool]] = {}


def _forgetting(key: int) -> Callable[[weakref.ref[Message]], None]:
    """The callback that drops the entry kept under ``key`` when its message goes."""

    def forget(_gone: weakref.ref[Message]) -> None:
        _memo.pop(key, None)

    return forget


def _serialized(dumped: Any) -> bytes | None:
    """``dumped`` serialized as it is inside a ``TurnStarted`` record, or None when orjson
    cannot write it as it is there (nested too deep, a lone surrogate, a huge integer)."""
    try:
        wrapped = orjson.dumps([[[dumped]]], default=refuse_unknown, option=JSON_OPTIONS)
    except orjson.JSONEncodeError:
        return None
    return wrapped[_DEPTH:-_DEPTH]


def message_json(message: Message) -> tuple[bytes | None, bool]:
    """A message's bytes in a ``TurnStarted`` record (None when orjson cannot write it as it
    is) and whether a sensitive key name occurs in it (DESIGN §8), unredacted."""
    key = id(message)
    entry = _memo.get(key)
    if entry is None or entry[0]() is not message:
        rendered, keys_hit = render_message(message)
        ref = weakref.ref(message, _forgetting(key))
        entry = _memo[key] = (ref, _serialized(rendered), keys_hit)
    return entry[1], entry[2]


class TranscriptParts(NamedTuple):
    """What a ``TurnStarted`` record holds of its transcript (:meth:`TranscriptJson.parts`).

    Attributes:
        array: the bytes of its ``messages`` array, in parts to be joined.
        base: None when the array is the whole transcript; otherwise the record's
            ``transcript_from`` (:mod:`~fsm_agent.trace.transcript_base`): the array holds
            only the messages after those of the trace it names.
    """

    array: list[bytes]
    base: dict[str, Any] | None


class TranscriptJson:
    """The JSON array of the transcript each turn of a conversation starts from, as written.

    One object serves the turns of one conversation in order; it keeps the bytes of the last
    transcript it gave and the messages they are of (strongly: a session keeps both anyway).

    Args:
        full_every: a turn's trace holds its whole transcript once in this many turns; the
            turns between begin with the transcript of the trace written before them (one
            in the same folder: :mod:`~fsm_agent.trace.transcript_base`) and hold only what
            follows it. 1: every turn's whole (each trace reads alone).

    Example:
        >>> TranscriptJson().array((), Redactor())
        [b'[]']
    """

    def __init__(self, *, full_every: int = 1) -> None:
        self.full_every = full_every
        self._messages: tuple[Message, ...] = ()
        self._parts: list[bytes] = []  # the items of the array, each turn's run of them joined
        self._secrets: tuple[str, ...] = ()
        self._digest = hashlib.sha256(b"[")
        """The digest of ``[``, then ``_parts`` joined by commas (``]`` is added to a copy)."""
        self._file: Path | None = None
        """The trace the last transcript was written to (resolved), if it has one."""
        self._links = 0
        """How many traces in a row have begun with another's transcript."""
        self.messages_serialized = 0
        """Messages looked at so far, each time counted (linear in a growing conversation)."""

    def array(self, messages: Sequence[Message], redactor: Redactor) -> list[bytes] | None:
        """The bytes of ``messages`` as the ``messages`` array of a ``TurnStarted`` record,
        redacted by ``redactor``, in parts to be joined; None when a message cannot be
        written as it is (the writer then serializes the whole record)."""
        parts = self.parts(messages, redactor, file=None)
        return None if parts is None else parts.array

    def parts(
        self, messages: Sequence[Message], redactor: Redactor, *, file: str | None
    ) -> TranscriptParts | None:
        """What the ``TurnStarted`` record written to ``file`` (None: a file without a name)
        holds of ``messages``: the whole array, or what follows the transcript written last
        with a reference to its trace. None when a message cannot be written as it is (the
        writer then serializes the whole record, and the next turn writes its whole)."""
        history = tuple(messages)
        known = len(self._messages)
        if (
            not known
            or len(history) < known
            or redactor.secrets != self._secrets
            or history[:known] != self._messages  # the same objects: compared at C speed
        ):
            known = 0
            self._parts = []
            self._digest = hashlib.sha256(b"[")
        here = None if file is None else Path(file).resolve()
        base = self._base(known, here)
        added = self._items(history[known:], redactor)
        if added is None:
            self.forget()
            return None
        run = b",".join(added)
        if added:
            self._digest.update(b"," + run if self._parts else run)
            self._parts.append(run)
        self._messages, self._secrets = history, redactor.secrets
        self._file = here
        self._links = 0 if base is None else self._links + 1
        if base is not None:
            return TranscriptParts([b"[", run, b"]"] if added else [b"[]"], base)
        if not self._parts:
            return TranscriptParts([b"[]"], None)
        # "[", each run of items with a comma between runs, "]"
        parts = [b","] * (2 * len(self._parts) + 1)
        parts[0] = b"["
        parts[1::2] = self._parts
        parts[-1] = b"]"
        return TranscriptParts(parts, None)

    def forget(self) -> None:
        """Forget the transcript written last (its trace may lack it: the file refused a
        line), so that the next turn writes its whole."""
        self._messages, self._parts, self._file, self._links = (), [], None, 0
        self._digest = hashlib.sha256(b"[")

    def _base(self, known: int, here: Path | None) -> dict[str, Any] | None:
        """The ``transcript_from`` of a record written to ``here`` (resolved) whose
        transcript begins with the ``known`` messages written last, or None when it is
        written whole: the first turn, every ``full_every``-th, a transcript that does not go
        on from the last (a compaction, an edit), a file without a name, or one in another
        folder than the last (a reader looks for it beside the file) or the same file (it is
        written over), or when the last is gone."""
        if not known or here is None or self._file is None:
            return None
        if self._links + 1 >= self.full_every:
            return None
        if here == self._file or here.parent != self._file.parent:
            return None
        if not self._file.is_file():  # deleted since (a folder emptied between turns)
            return None
        digest = self._digest.copy()
        digest.update(b"]")
        return {
            "messages": known,
            "sha256": digest.hexdigest(),
            "trace": self._file.name,
        }

    def _items(self, messages: Sequence[Message], redactor: Redactor) -> list[bytes] | None:
        """Each message's bytes, redacted; None when one cannot be written as it is."""
        self.messages_serialized += len(messages)
        items: list[bytes] = []
        for message in messages:
            data, keys_hit = message_json(message)
            if data is None:
                return None
            if keys_hit or redactor.holds_secret(data):
                data = _serialized(redactor.value(dump_message(message)))
                if data is None:
                    return None
            items.append(data)
        return items
