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
  same messages, so only what comes after them is serialized and scanned for secrets.

Splicing gives exactly the bytes of the generic path (a test holds it to that): orjson writes
a list as its items' bytes, comma-separated between brackets, with no whitespace; each
message is serialized at the depth it has in the record, so it fails exactly where the whole
record would; and redaction works value by value, so redacting each message alone gives the
bytes that redacting the whole record gives. A message orjson cannot write as it is
(:func:`~fsm_agent.trace.json_limits.fit_for_json` would rewrite the whole record) sends the
writer down the generic path.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any, Final

import orjson

from fsm_agent.core.codec import dump_message
from fsm_agent.core.messages import Message
from fsm_agent.trace.records import JSON_OPTIONS, refuse_unknown
from fsm_agent.trace.redact import Redactor
from fsm_agent.trace.render_fns import render_message

__all__ = ["TranscriptJson", "message_json"]

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


class TranscriptJson:
    """The JSON array of the transcript each turn of a conversation starts from, as written.

    One object serves the turns of one conversation in order; it keeps the bytes of the last
    transcript it gave and the messages they are of (strongly: a session keeps both anyway).

    Example:
        >>> TranscriptJson().array((), Redactor())
        [b'[]']
    """

    def __init__(self) -> None:
        self._messages: tuple[Message, ...] = ()
        self._parts: list[bytes] = []  # the items of the array, each turn's run of them joined
        self._secrets: tuple[str, ...] = ()
        self.messages_serialized = 0
        """Messages looked at so far, each time counted (linear in a growing conversation)."""

    def array(self, messages: Sequence[Message], redactor: Redactor) -> list[bytes] | None:
        """The bytes of ``messages`` as the ``messages`` array of a ``TurnStarted`` record,
        redacted by ``redactor``, in parts to be joined; None when a message cannot be
        written as it is (the writer then serializes the whole record)."""
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
        added = self._items(history[known:], redactor)
        if added is None:
            self._messages, self._parts = (), []
            return None
        if added:
            self._parts.append(b",".join(added))
        self._messages, self._secrets = history, redactor.secrets
        if not self._parts:
            return [b"[]"]
        # "[", each run of items with a comma between runs, "]"
        parts = [b","] * (2 * len(self._parts) + 1)
        parts[0] = b"["
        parts[1::2] = self._parts
        parts[-1] = b"]"
        return parts

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
