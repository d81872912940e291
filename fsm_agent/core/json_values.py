"""Facts about JSON values that the codec, the trace and the tools share: which integers a
trace line holds as numbers, and the JSON names of types for error messages.

Kept apart from :mod:`fsm_agent.core.codec` (which builds the event and effect classes) so
that validating a tool's input does not load the codec.
"""

from __future__ import annotations

from typing import Final

JSON_INT_MIN: Final = -(2**63)
JSON_INT_MAX: Final = 2**64 - 1
"""The integers a trace line holds as numbers (orjson's range); others are written as strings."""


def json_type_name(value: object) -> str:
    """The JSON name of a value's type, for error messages (``expected string, got number``)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__
