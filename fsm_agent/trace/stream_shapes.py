"""The Messages API's own stream events, recognised by shape so that their key scan is skipped.

Redaction (DESIGN §8) looks for sensitive key names in every record; a model stream event is
free-form JSON from outside, so in general it is scanned whole. Most stream events, though,
are the API's own fixed shapes (a delta, a block's start and stop, the message's start and
delta, its stop, a ping), whose keys are all names the API defines and none of them
sensitive. An event is *recognised* when it has exactly such a shape: only keys the API
defines for it, each holding a value of the kind the API sends (a scalar where the API sends
one, a known object where it sends one). A recognised event holds no sensitive key, save in
a tool_use block's ``input`` (the model's JSON), which is scanned on its own. An event with
any other key, any value of another kind, or of a type this module does not know, is not
recognised and is scanned in full.

Only key names are skipped: configured secrets and API-key-shaped text are still searched
for in the rendered bytes of the whole record.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from fsm_agent.trace.redact import has_sensitive_key

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


_USAGE_KEYS: Final = frozenset(
    {
        "input_tokens",
        "output_tokens",
        "cache_creation_input_tokens",
        "cache_read_input_tokens",
        "cache_creation",
        "server_tool_use",
        "service_tier",
        "inference_geo",
    }
)
_USAGE_OBJECTS: Final = {
    "cache_creation": frozenset({"ephemeral_5m_input_tokens", "ephemeral_1h_input_tokens"}),
    "server_tool_use": frozenset({"web_search_requests", "web_fetch_requests"}),
}
"""The usage fields that hold an object, each with that object's keys (all scalars)."""


def _usage(usage: Any) -> bool:
    if type(usage) is not dict or not usage.keys() <= _USAGE_KEYS:
        return False
    for name, keys in _USAGE_OBJECTS.items():
        inner = usage.get(name)
        if inner is not None and not _flat(inner, keys):
            return False
    return all(
        type(value) not in _CONTAINERS or name in _USAGE_OBJECTS for name, value in usage.items()
    )


_STOP_DETAILS_KEYS: Final = frozenset({"type", "category", "explanation"})


def _stop_details(value: Any) -> bool:
    return value is None or _flat(value, _STOP_DETAILS_KEYS)


_MESSAGE_KEYS: Final = frozenset(
    {
        "id",
        "type",
        "role",
        "model",
        "content",
        "stop_reason",
        "stop_sequence",
        "stop_details",
        "usage",
    }
)
_MESSAGE_OBJECTS: Final = frozenset({"content", "usage", "stop_details"})


def _message_start(event: dict[str, Any]) -> bool:
    message = event.get("message")
    if len(event) != 2 or type(message) is not dict or not message.keys() <= _MESSAGE_KEYS:
        return False
    if message.get("content") != [] or not _usage(message.get("usage")):
        return False
    if not _stop_details(message.get("stop_details")):
        return False
    return all(
        type(value) not in _CONTAINERS or name in _MESSAGE_OBJECTS
        for name, value in message.items()
    )


_MESSAGE_DELTA_KEYS: Final = frozenset({"stop_reason", "stop_sequence", "stop_details"})


def _message_delta(event: dict[str, Any]) -> bool:
    delta = event.get("delta")
    if len(event) != 3 or type(delta) is not dict or not delta.keys() <= _MESSAGE_DELTA_KEYS:
        return False
    if type(delta.get("stop_reason")) in _CONTAINERS:
        return False
    if type(delta.get("stop_sequence")) in _CONTAINERS:
        return False
    return _stop_details(delta.get("stop_details")) and _usage(event.get("usage"))


_TEXT_BLOCK_KEYS: Final = frozenset({"type", "text", "citations"})
_THINKING_BLOCK_KEYS: Final = frozenset({"type", "thinking", "signature"})
_TOOL_USE_KEYS: Final = frozenset({"type", "id", "name", "input"})


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
    if kind == "tool_use":  # its input is the model's own JSON: scanned here, on its own
        if not block.keys() <= _TOOL_USE_KEYS:
            return False
        if type(block.get("id")) in _CONTAINERS or type(block.get("name")) in _CONTAINERS:
            return False
        value = block.get("input")
        return type(value) not in _CONTAINERS or not has_sensitive_key(value)
    return False


_JUDGES: Final[dict[str, Callable[[dict[str, Any]], bool]]] = {
    "content_block_delta": _block_delta,
    "content_block_stop": _block_stop,
    "content_block_start": _block_start,
    "message_start": _message_start,
    "message_delta": _message_delta,
    "message_stop": _type_only,
    "ping": _type_only,
}

KNOWN_KEYS: Final = frozenset(
    {"type", "index", "delta", "usage", "message", "content_block", *_MESSAGE_KEYS}
    | _USAGE_KEYS
    | _MESSAGE_DELTA_KEYS
    | _STOP_DETAILS_KEYS
    | _TEXT_BLOCK_KEYS
    | _THINKING_BLOCK_KEYS
    | _TOOL_USE_KEYS
    | set(_DELTA_VALUE.values())
    | {key for keys in _USAGE_OBJECTS.values() for key in keys}
)
"""Every key a recognised event may have (outside a tool_use block's ``input``)."""


def known_stream_event(event: dict[str, Any]) -> bool:
    """Whether a model stream event is one of the Messages API's own shapes, exactly (see the
    module's docstring). Such an event holds no sensitive key name: its key scan is skipped.
    False means only that the event must be scanned in full."""
    kind = event.get("type")
    if type(kind) is not str:
        return False
    judge = _JUDGES.get(kind)
    return judge is not None and judge(event)
