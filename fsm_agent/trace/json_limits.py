"""What one trace line can hold, and how a value past orjson's limits is written instead.

orjson refuses three kinds of JSON-shaped data that a run can meet (NOTES: orjson): a string
holding a lone surrogate (a file name that is not UTF-8, decoded with ``surrogateescape``), an
integer outside the signed/unsigned 64-bit range, and containers nested deeper than its
recursion limit. A trace writer that raised on them would end the run without its ``end``
record, so :func:`fit_for_json` rewrites such values in a way the reader reads back:

* a lone surrogate becomes the text ``\\udce9`` (backslash escape, six characters);
* an integer past 64 bits becomes its decimal string, which the codec's integer hook turns
  back into the integer where the field is typed ``int`` (:func:`fsm_agent.core.codec.big_int`);
* a container nested deeper than :data:`MAX_DEPTH` levels becomes the :data:`TOO_DEEP` marker.

The rewrite is idempotent (a rewritten value is rewritten to itself), so a replay, which
rewrites what its fresh core produces the same way, yields the same bytes as the recording.
Objects that are not JSON values at all are left alone: the writer still refuses them loudly.
"""

from __future__ import annotations

from typing import Any, Final

from fsm_agent.core.json_values import JSON_INT_MAX, JSON_INT_MIN

MAX_DEPTH: Final = 200
"""Containers nested deeper than this are cut (orjson stops near 255; records add a few)."""

TOO_DEEP: Final = f"[fsm_agent: nested deeper than {MAX_DEPTH} levels; the rest is not recorded]"
"""What stands in for a container nested too deep to write."""


def escape_surrogates(text: str) -> str:
    """``text`` with every lone surrogate written as a ``\\uXXXX`` escape (valid UTF-8)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def fit_for_json(value: Any, depth: int = 0) -> Any:
    """A copy of ``value`` that orjson can write, read back the same by the trace reader.

    Args:
        value: a JSON-shaped value (dicts, lists, tuples, strings, numbers, booleans, None).
        depth: how deep ``value`` already sits in the record (0 for the record itself).
    """
    if isinstance(value, str):
        return escape_surrogates(value)
    if isinstance(value, bool) or not isinstance(value, int | dict | list | tuple):
        return value
    if isinstance(value, int):
        return value if JSON_INT_MIN <= value <= JSON_INT_MAX else str(value)
    if depth >= MAX_DEPTH:
        return TOO_DEEP
    if isinstance(value, dict):
        return {_fit_key(key): fit_for_json(item, depth + 1) for key, item in value.items()}
    return [fit_for_json(item, depth + 1) for item in value]


def _fit_key(key: object) -> object:
    if isinstance(key, str):
        return escape_surrogates(key)
    if key is None or isinstance(key, bool):
        return {None: "null", True: "true", False: "false"}[key]
    if isinstance(key, int | float):
        return str(key)
    return key  # not a JSON key at all: the writer refuses it
