"""Paths into JSON values, for the tests that change one field of a recorded trace."""

from __future__ import annotations

from typing import Any


def json_paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path into a JSON value as keys and indexes, the value's own (``()``) first."""
    out = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            out.extend(json_paths(item, (*prefix, key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            out.extend(json_paths(item, (*prefix, index)))
    return out
