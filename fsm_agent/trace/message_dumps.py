"""Dumped transcript messages, kept over a conversation's turns (issue 10).

Every user turn's trace starts with a ``TurnStarted`` event that holds the whole transcript,
so unstructuring each message and scanning it for sensitive key names again would make a
turn's cost grow with the conversation. Messages are frozen and the next turn starts from the
same message objects, so each message's dumped form, and whether a sensitive key name occurs
in it, are kept by the identity of the message. An entry holds only a weak reference to its
message and goes when the message does, so the memo never keeps a finished conversation alive
in a long-lived process, and an id is never taken for another object's. The dumped dicts are
shared between records: the writer only reads them (redaction makes copies).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any

from fsm_agent.core.codec import dump_message
from fsm_agent.core.messages import Message
from fsm_agent.trace.redact import has_sensitive_key

__all__ = ["dumped_messages"]

_memo: dict[int, tuple[weakref.ref[Message], dict[str, Any], bool]] = {}


def _forgetting(key: int) -> Callable[[weakref.ref[Message]], None]:
    """The callback that drops the entry kept under ``key`` when its message goes."""

    def forget(_gone: weakref.ref[Message]) -> None:
        _memo.pop(key, None)

    return forget


def dumped_messages(messages: Sequence[Message]) -> tuple[list[dict[str, Any]], bool]:
    """Each message as :func:`~fsm_agent.core.codec.dump_message` gives it, and whether a
    sensitive key name occurs in any of them (DESIGN §8)."""
    memo = _memo
    dumps: list[dict[str, Any]] = []
    keys_hit = False
    for message in messages:
        key = id(message)
        entry = memo.get(key)
        if entry is None or entry[0]() is not message:
            dumped = dump_message(message)
            ref = weakref.ref(message, _forgetting(key))
            entry = memo[key] = (ref, dumped, has_sensitive_key(dumped))
        dumps.append(entry[1])
        keys_hit = keys_hit or entry[2]
    return dumps, keys_hit
