"""The Messages API's own stream events, recognised by shape so that their key scan is skipped.

Redaction (DESIGN §8) looks for sensitive key names in every record; a model stream event is
free-form JSON from outside, so in general it is scanned whole. Most stream events, though,
are a few of the API's own small shapes (a block's delta, start and stop, the message's stop,
a ping), whose keys are all names the API defines and none of them sensitive. Such an event
is *recognised* when it has exactly its shape: only the keys the API defines for it, each
holding a value of the kind the API sends. A recognised event holds no sensitive key, so
its scan is skipped; an event with any other key, any value of another kind, or of a type
not listed here, is scanned in full.

``message_start`` and ``message_delta`` are left to the scan on purpose: they nest three
or four objects (the usage and its parts), and telling their shape apart in Python costs
more than the scan, whose key names are judged once per process.

Only key names are skipped: configured secrets and API-key-shaped text are still searched
for in the rendered bytes of the whole record.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

_CONTAINERS: Final = frozenset({dict, list, tuple})
"""The kinds of value a key scan looks into; a scalar's type is any other."""


def _flat(value: Any, keys: frozenset[str]) -> bool:
    """Whether ``value`` is an object with only ``keys`` and no container among its values."""
    return (
        type(value) is dict
        and value.keys() <= keys
        and _CONTAINERS.isdisjoint(map(type, value.values()))
    )


_DELTA_VALUE: Final = {
    "text_delta": "text",
    "input_json_delta": "partial_json",
    "thinking_delta": "thinking",
    "signature_delta": "signature",
}
"""The ``content_block_delta`` kinds that carry one string, and its key."""


def _block_delta(event: dict[str, Any]) -> bool:
    if len(event) != 3:
        return False
    delta = event.get("delta")
    if type(delta) is not dict or len(delta) != 2 or type(event.get("index")) is not int:
        return False
    kind = delta.get("type")
    value = _DELTA_VALUE.get(kind) if type(kind) is str else None
    return value is not None and type(delta.get(value)) is str


def _type_only(event: dict[str, Any]) -> bool:
    """``message_stop`` and ``ping``: the type alone."""
    return len(event) == 1


def _block_stop(event: dict[str, Any]) -> bool:
    return len(event) == 2 and type(event.get("index")) is int


_TEXT_BLOCK_KEYS: Final = frozenset({"type", "text", "citations"})
_THINKING_BLOCK_KEYS: Final = frozenset({"type", "thinking", "signature"})


def _block_start(event: dict[str, Any]) -> bool:
    block = event.get("content_block")
    if len(event) != 3 or type(block) is not dict or type(event.get("index")) is not int:
        return False
    kind = block.get("type")
    if kind == "text":
        citations = block.get("citations")
        return (
            block.keys() <= _TEXT_BLOCK_KEYS
            and type(block.get("text")) not in _CONTAINERS
            and (citations is None or citations == [])
        )
    if kind == "thinking":
        return _flat(block, _THINKING_BLOCK_KEYS)
    return False


_JUDGES: Final[dict[str, Callable[[dict[str, Any]], bool]]] = {
    "content_block_delta": _block_delta,
    "content_block_stop": _block_stop,
    "content_block_start": _block_start,
    "message_stop": _type_only,
    "ping": _type_only,
}

KNOWN_KEYS: Final = frozenset(
    {"type", "index", "delta", "content_block", *_DELTA_VALUE.values()}
    | _TEXT_BLOCK_KEYS
    | _THINKING_BLOCK_KEYS
)
"""Every key a recognised event may have."""


def known_stream_event(event: dict[str, Any]) -> bool:
    """Whether a model stream event is one of the Messages API's own shapes, exactly (see the
    module's docstring). Such an event holds no sensitive key name: its key scan is skipped.
    False means only that the event must be scanned in full."""
    kind = event.get("type")
    if type(kind) is not str:
        return False
    judge = _JUDGES.get(kind)
    return judge is not None and judge(event)
