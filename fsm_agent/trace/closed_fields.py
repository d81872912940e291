"""Which fields of an event or effect can never hold a key the library did not choose.

Redaction (DESIGN §8) looks for sensitive key names in every record the writer renders. The
keys of an unstructured event or effect are its own field names, fixed by its class; only a
value typed as free-form JSON (a tool input, a model event, a hook payload, an API source
object) can bring keys from outside. This module decides once per class which of its fields
are *closed*: the field's name is not a sensitive key, and its type is built only from
scalars, enums, tuples, unions and attrs classes whose own fields are closed in turn. The
writer skips closed fields when it looks for sensitive keys and scans every other field in
full, so a new field typed ``dict[str, Any]`` (or ``Any``, or anything this module does not
know) is scanned without anyone having to remember it. A field holding one attrs class (a
hook outcome) is looked into the same way: only that class's open fields are scanned, as
long as the dict has no key the class lacks (anything else is scanned whole).

Only key names are skipped: configured secrets and API-key-shaped text are still searched
for in the rendered bytes of the whole record.
"""

from __future__ import annotations

import enum
import functools
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, Final

import attrs

from fsm_agent.core.effects import EFFECT_TYPES
from fsm_agent.core.events import EVENT_TYPES
from fsm_agent.trace.redact import has_sensitive_key, is_sensitive_key

TAG: Final = "type"
"""The key of the class-name tag the codec adds to every unstructured event and effect."""

_SCALARS: Final = frozenset({str, int, float, bool, type(None)})
_SEQUENCES: Final = frozenset({tuple, list, frozenset})


def _is_closed(kind: Any, visiting: frozenset[type]) -> bool:
    """Whether every key of ``kind`` unstructured is a non-sensitive field name of ours."""
    if kind in _SCALARS or (isinstance(kind, type) and issubclass(kind, enum.Enum)):
        return True
    origin = typing.get_origin(kind)
    if origin is typing.Literal:
        return all(type(value) in _SCALARS for value in typing.get_args(kind))
    if origin in (typing.Union, types.UnionType) or origin in _SEQUENCES:
        return all(arg is Ellipsis or _is_closed(arg, visiting) for arg in typing.get_args(kind))
    if isinstance(kind, type) and attrs.has(kind):
        if kind in visiting:
            return True  # a recursive reference: judged by the rest of the class
        return not _open_fields(kind, visiting | {kind})
    return False  # Any, dict, Mapping, object, a type variable: free-form


def _open_fields(cls: type, visiting: frozenset[type]) -> tuple[str, ...]:
    hints = typing.get_type_hints(cls)
    return tuple(
        field.name
        for field in attrs.fields(cls)
        if is_sensitive_key(field.name) or not _is_closed(hints[field.name], visiting)
    )


@functools.cache
def closed_fields(cls: type) -> frozenset[str]:
    """The field names of attrs class ``cls`` whose values need no key scan (with the tag)."""
    every = {field.name for field in attrs.fields(cls)}
    return frozenset(every - set(_open_fields(cls, frozenset({cls})))) | {TAG}


@functools.cache
def closed_fields_by_tag() -> Mapping[str, frozenset[str]]:
    """:func:`closed_fields` of every event and effect class, by the class's tag."""
    return types.MappingProxyType(
        {cls.__name__: closed_fields(cls) for cls in (*EVENT_TYPES, *EFFECT_TYPES)}
    )


_CONTAINERS: Final = frozenset({dict, list, tuple})
"""A set, not a tuple: ``type(x) in`` a tuple compares ``x``'s type with each member in turn,
at the cost of a failed rich comparison per member; a set hashes it once."""
_NAMED: Final = "named"
"""In a scan plan: a field whose own name is a sensitive key (present means hit)."""


@attrs.frozen
class _Plan:
    """Where a sensitive key can hide in an attrs class unstructured: ``keys`` are all the
    keys its dict may have; ``scan`` maps each open field to None (scan its value whole),
    :data:`_NAMED`, or the plan of the attrs class it holds (scan only that class's open
    fields)."""

    keys: frozenset[str]
    scan: tuple[tuple[str, Any], ...]


def _attrs_class_of(kind: Any) -> type | None:
    """The attrs class a field holds (itself, or optional), else None."""
    if isinstance(kind, type) and attrs.has(kind):
        return kind
    if typing.get_origin(kind) in (typing.Union, types.UnionType):
        members = [arg for arg in typing.get_args(kind) if arg is not type(None)]
        if len(members) == 1 and isinstance(members[0], type) and attrs.has(members[0]):
            return members[0]
    return None


@functools.cache
def _plan(cls: type) -> _Plan:
    hints = typing.get_type_hints(cls)
    closed = closed_fields(cls)
    scan: list[tuple[str, Any]] = []
    for field in attrs.fields(cls):
        if field.name in closed:
            continue
        if is_sensitive_key(field.name):
            scan.append((field.name, _NAMED))
            continue
        inner = _attrs_class_of(hints[field.name])
        scan.append((field.name, None if inner is None or inner is cls else _plan(inner)))
    return _Plan(frozenset({field.name for field in attrs.fields(cls)} | {TAG}), tuple(scan))


_Check = Callable[[Any], bool]
"""Whether a sensitive key name occurs in a value that is some attrs class unstructured."""


@functools.cache
def _check(plan: _Plan) -> _Check:
    """The scan ``plan`` stands for, as one function made for it: a class whose fields are
    all closed, or that has one free-form field, is the common case and gets its own."""
    keys, containers = plan.keys, _CONTAINERS
    named = [name for name, inner in plan.scan if inner is _NAMED]
    whole = [name for name, inner in plan.scan if inner is None]
    nested = [(name, _check(inner)) for name, inner in plan.scan if type(inner) is _Plan]

    # Each checks first that the value is what the codec makes of the class (a dict with no
    # key the class lacks); anything else is scanned whole.
    if not named and not nested and len(whole) <= 1:
        if not whole:

            def closed(value: Any) -> bool:
                shaped = type(value) is dict and value.keys() <= keys
                return not shaped and has_sensitive_key(value)

            return closed
        (field,) = whole

        def one_open(value: Any) -> bool:
            if type(value) is not dict or not value.keys() <= keys:
                return has_sensitive_key(value)
            item = value.get(field)
            return type(item) in containers and has_sensitive_key(item)

        return one_open

    def any_open(value: Any) -> bool:
        if type(value) is not dict or not value.keys() <= keys:
            return has_sensitive_key(value)
        for name in named:
            if name in value:
                return True
        for name in whole:
            item = value.get(name)
            if type(item) in containers and has_sensitive_key(item):
                return True
        for name, inner in nested:
            item = value.get(name)
            if item is not None and inner(item):
                return True
        return False

    return any_open


@attrs.frozen
class FieldScan:
    """The key scan of an attrs class unstructured, field by field (for a renderer that
    scans as it builds the dict, :mod:`~fsm_agent.trace.render_fns`).

    Attributes:
        named: fields whose own name is a sensitive key (present means hit).
        whole: fields scanned whole (when their value is a container).
        nested: fields holding an attrs class, each with the check of that class's dict.
    """

    named: tuple[str, ...]
    whole: tuple[str, ...]
    nested: tuple[tuple[str, _Check], ...]


@functools.cache
def field_scan(cls: type) -> FieldScan:
    """What :func:`sensitive_key_in` looks at in the dict ``cls`` unstructures to (the
    dict's shape taken as given)."""
    scan = _plan(cls).scan
    return FieldScan(
        named=tuple(name for name, inner in scan if inner is _NAMED),
        whole=tuple(name for name, inner in scan if inner is None),
        nested=tuple((name, _check(inner)) for name, inner in scan if type(inner) is _Plan),
    )


def check_of(cls: type) -> Callable[[Any], bool]:
    """Whether a sensitive key name occurs in a value that is ``cls`` unstructured (only its
    open fields looked at when the value has the dict's shape; anything else scanned whole)."""
    return _check(_plan(cls))


_checks_by_tag: dict[str, _Check] = {}
"""The check of every event and effect class, by its tag (filled on first use)."""


def sensitive_key_in(dumped: dict[str, Any]) -> bool:
    """Whether an unstructured event or effect holds a sensitive key name. Only its open
    fields are looked at — inside a field holding an attrs class, only that class's open
    fields — and a tag this module does not know, or a dict with a key its class does not
    have, is scanned whole."""
    if not _checks_by_tag:
        _checks_by_tag.update(
            {cls.__name__: _check(_plan(cls)) for cls in (*EVENT_TYPES, *EFFECT_TYPES)}
        )
    tag = dumped.get(TAG)
    check = _checks_by_tag.get(tag) if type(tag) is str else None
    return has_sensitive_key(dumped) if check is None else check(dumped)
