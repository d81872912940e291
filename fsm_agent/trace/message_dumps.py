"""Dumped transcript messages, kept over a conversation's turns (issue 10).

Every user turn's trace starts with a ``TurnStarted`` event that holds the whole transcript,
so unstructuring each message and scanning it for sensitive key names again would make a
turn's cost grow with the conversation. Messages are frozen and the next turn starts from the
same message objects, so each message's dumped form, and whether a sensitive key name occurs
in it, are kept by the identity of the message (the entry holds the message itself, so an id
is never taken for another object's). The dumped dicts are shared between records: the
writer only reads them (redaction makes copies).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from fsm_agent.core.codec import dump_message
from fsm_agent.core.messages import Message
from fsm_agent.trace.redact import has_sensitive_key

__all__ = ["dumped_messages"]

_LIMIT: Final = 50_000
"""Messages kept at most; the memo starts over when it is full (memory stays bounded)."""

_memo: dict[int, tuple[Message, dict[str, Any], bool]] = {}


def dumped_messages(messages: Sequence[Message]) -> tuple[list[dict[str, Any]], bool]:
    """Each message as :func:`~fsm_agent.core.codec.dump_message` gives it, and whether a
    sensitive key name occurs in any of them (DESIGN §8)."""
    memo = _memo
    dumps: list[dict[str, Any]] = []
    keys_hit = False
    for message in messages:
        entry = memo.get(id(message))
        if entry is None or entry[0] is not message:
            if len(memo) >= _LIMIT:
                memo.clear()
            dumped = dump_message(message)
            entry = memo[id(message)] = (message, dumped, has_sensitive_key(dumped))
        dumps.append(entry[1])
        keys_hit = keys_hit or entry[2]
    return dumps, keys_hit
