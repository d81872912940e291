"""Renderers of events and effects made once per class, each scanning for key names as it
builds (issue 10, DESIGN §7-§8).

The trace writer renders every event and effect it writes. The codec's dump (the function
cattrs generates) copies every free-form dict, calls a hook for every enum and tuple, and
unstructures the message an ``Emit`` carries though :mod:`~fsm_agent.trace.message_dumps`
keeps its bytes; the key scan (:mod:`~fsm_agent.trace.closed_fields`) then looks the dict
up again. The function made here for a class builds a dict that orjson renders to exactly
the bytes of the codec's dict, and scans the class's open fields as it goes:

* a field cattrs reads inline (a scalar, an optional scalar) is read the same way;
* an enum member (whose value is a string or an integer), a tuple of strings and a free-form
  dict are left for orjson to render — the same bytes as the member's value, the list and the
  copy the codec makes — when the value has exactly the field's type;
* the hook outcome, an attrs class the codec unstructures field by field, gets its own function;
* a message, which sits three containers deep in a line both inside an event's message list
  and as an ``Emit``'s message, is the bytes message_dumps keeps for it at that depth, as an
  ``orjson.Fragment``, with message_dumps' key-scan judgement;
* anything else (a field of another type, a value of an unexpected type) goes through the
  converter's own hook for the field, exactly as cattrs' function does. An object whose class
  is not exactly an event or effect class is dumped by the codec.

So a value fails where the codec's dict would (the hooks raise alike, and orjson refuses the
same leaves), and the key scan judges what :func:`~fsm_agent.trace.closed_fields.sensitive_key_in`
judges on the codec's dict. The dict is for rendering only: its free-form values are the
object's own, and a message in it is bytes not redacted; whoever redacts uses the codec's dict.
"""

from __future__ import annotations

import enum
import types
import typing
from collections.abc import Callable
from typing import Any, Final

import attrs
import orjson

from fsm_agent.core import events, messages
from fsm_agent.core.codec import converter, dump_effect, dump_event, omitted_if_default
from fsm_agent.core.effects import EFFECT_TYPES
from fsm_agent.core.events import EVENT_TYPES
from fsm_agent.trace.closed_fields import field_scan, sensitive_key_in
from fsm_agent.trace.message_dumps import message_json
from fsm_agent.trace.redact import has_sensitive_key

__all__ = ["render_effect", "render_event"]

Rendered = tuple[dict[str, Any], bool]
"""A JSON-ready dict and whether a sensitive key name occurs in it."""

_FACTORY: Final[type[Any]] = type(attrs.Factory(list))
_CONTAINERS: Final = frozenset({dict, list, tuple})
_MESSAGE_TYPES: Final = frozenset(messages.MESSAGE_TYPES)
_NESTED: Final = (events.HookOutcome,)
"""The attrs classes (held by an event or effect field) rendered by a function of their own."""
_SCALARS: Final = (str, int)


def _message(message: Any, hook: Callable[[Any], Any]) -> tuple[Any, bool]:
    """A message as a value three containers deep in a line, and whether a sensitive key
    name occurs in it; through ``hook`` (the field's) when message_dumps cannot keep it."""
    if type(message) in _MESSAGE_TYPES:
        data, keys_hit = message_json(message)
        if data is not None:
            return orjson.Fragment(data), keys_hit
    value = hook(message)
    return value, type(value) in _CONTAINERS and has_sensitive_key(value)


def _messages(value: Any, hook: Callable[[Any], Any]) -> tuple[Any, bool]:
    """A tuple of messages as a list of values three containers deep (see :func:`_message`)."""
    if type(value) is not tuple or not all(type(item) in _MESSAGE_TYPES for item in value):
        dumped = hook(value)
        return dumped, type(dumped) in _CONTAINERS and has_sensitive_key(dumped)
    items: list[Any] = []
    keys_hit = False
    for message in value:
        data, hit = message_json(message)
        if data is None:
            dumped = hook(value)
            return dumped, has_sensitive_key(dumped)
        items.append(orjson.Fragment(data))
        keys_hit = keys_hit or hit
    return items, keys_hit


def _optional_member(kind: Any) -> tuple[Any, bool]:
    """``kind`` without ``| None``, and whether it allowed None."""
    if typing.get_origin(kind) in (typing.Union, types.UnionType):
        members = typing.get_args(kind)
        others = [member for member in members if member is not type(None)]
        if len(members) == 2 and len(others) == 1:
            return others[0], True
    return kind, False


def _is_message(kind: Any) -> bool:
    members = typing.get_args(kind) if typing.get_origin(kind) is types.UnionType else (kind,)
    return bool(members) and set(members) == _MESSAGE_TYPES


def _plain_enum(kind: Any) -> bool:
    """Whether orjson renders each member of enum ``kind`` as the codec renders its value."""
    return (
        isinstance(kind, type)
        and issubclass(kind, enum.Enum)
        and all(type(member.value) in _SCALARS for member in kind)
    )


def _field_code(
    name: str, kind: Any, index: int, names: dict[str, Any], *, top: bool
) -> tuple[list[str], str | None]:
    """Statements leaving field ``name``'s value for the dict in ``v<index>`` and, for a
    message field, its key judgement in ``h<index>``; returns them and the judgement's
    name (None when the scan plan judges the field)."""
    value, hook = f"v{index}", f"__hook{index}"
    names[hook] = converter().get_unstructure_hook(kind)
    if top and _is_message(kind):
        return [f"{value}, h{index} = __message(instance.{name}, {hook})"], f"h{index}"
    if top and typing.get_origin(kind) is tuple and _is_message(typing.get_args(kind)[0]):
        return [f"{value}, h{index} = __messages(instance.{name}, {hook})"], f"h{index}"
    inner, optional = _optional_member(kind)
    if inner in _NESTED:
        names[f"__render{index}"] = _nested_fn(inner)
        names[f"__type{index}"] = inner
        rendered = f"__render{index}({value}) if type({value}) is __type{index} else {hook}({value})"
        if optional:
            return [f"{value} = instance.{name}", f"if {value} is not None: {value} = {rendered}"], None
        return [f"{value} = instance.{name}", f"{value} = {rendered}"], None
    if inner == dict[str, Any]:
        names[f"__type{index}"] = dict
    elif inner == tuple[str, ...]:
        names[f"__type{index}"] = tuple
    elif _plain_enum(inner):
        names[f"__type{index}"] = inner
    else:
        return [f"{value} = {hook}(instance.{name})"], None
    # Left for orjson when it has exactly the field's type (None as is, as the hook leaves it).
    test = f"type({value}) is not __type{index}"
    if optional:
        test = f"{value} is not None and {test}"
    return [f"{value} = instance.{name}", f"if {test}: {value} = {hook}({value})"], None


def _source(cls: type, *, tag: str | None, names: dict[str, Any]) -> str:
    """The function's source: the dict of cattrs' function, built as described above; a
    top-level class (``tag`` given) also gets its tag and its key scan."""
    hints = typing.get_type_hints(cls)
    omitted = set(omitted_if_default(cls))
    lines = ["def render(instance):"]
    items: list[str] = []
    later: list[str] = []
    judged: dict[str, str] = {}  # a message field's judgement, by the field's name
    values: dict[str, str] = {}  # where the value of a field always present is
    for index, field in enumerate(attrs.fields(cls)):
        kind = hints[field.name]
        if converter().get_unstructure_hook(kind) is _identity() and field.name not in omitted:
            items.append(f"{field.name!r}: instance.{field.name}")
            values[field.name] = f"res[{field.name!r}]"
            continue
        code, judgement = _field_code(field.name, kind, index, names, top=tag is not None)
        if judgement is not None:
            judged[field.name] = judgement
        if field.name not in omitted:
            lines += [f"    {line}" for line in code]
            items.append(f"{field.name!r}: v{index}")
            values[field.name] = f"v{index}"
            continue
        default: Any = field.default
        if isinstance(default, _FACTORY):
            if default.takes_self:
                raise TypeError(f"{cls.__name__}.{field.name}: a default that takes self")
            names[f"__default{index}"] = default.factory
            differs = f"instance.{field.name} != __default{index}()"
        else:
            names[f"__default{index}"] = default
            differs = f"instance.{field.name} != __default{index}"
        later.append(f"    if {differs}:")
        later += [f"        {line}" for line in code]
        later.append(f"        res[{field.name!r}] = v{index}")
    if tag is not None:
        items.append(f"'type': {tag!r}")
    lines.append("    res = {" + ", ".join(items) + "}")
    lines += later
    if tag is None:
        lines.append("    return res")
        return "\n".join(lines)
    lines += _scan_lines(cls, judged, values, names)
    return "\n".join(lines)


def _scan_lines(
    cls: type, judged: dict[str, str], values: dict[str, str], names: dict[str, Any]
) -> list[str]:
    """The key scan of a top-level class's dict ``res`` (closed fields are skipped); a field
    left out while it holds its default is looked for in ``res``."""
    scan = field_scan(cls)
    tests = [f"{name!r} in res" for name in scan.named]
    for name in scan.whole:
        present = name in values
        if name in judged:
            tests.append(judged[name] if present else f"({name!r} in res and {judged[name]})")
        else:
            item = values[name] if present else f"res.get({name!r})"
            tests.append(f"(type({item}) in __containers and __has_key({item}))")
    for index, (name, check) in enumerate(scan.nested):
        names[f"__check{index}"] = check
        item = values[name] if name in values else f"res.get({name!r})"
        tests.append(f"({item} is not None and __check{index}({item}))")
    return [f"    return res, {' or '.join(tests) if tests else 'False'}"]


def _identity() -> Any:
    from cattrs.fns import identity  # noqa: PLC0415 - cattrs is imported lazily (codec)

    return identity


def _compiled(cls: type, *, tag: str | None) -> Any:
    names: dict[str, Any] = {
        "__message": _message,
        "__messages": _messages,
        "__containers": _CONTAINERS,
        "__has_key": has_sensitive_key,
    }
    source = _source(cls, tag=tag, names=names)
    exec(compile(source, f"<render {cls.__qualname__}>", "exec"), names)  # noqa: S102
    return names["render"]


_nested_fns: dict[type, Callable[[Any], dict[str, Any]]] = {}


def _nested_fn(cls: type) -> Callable[[Any], dict[str, Any]]:
    function = _nested_fns.get(cls)
    if function is None:
        function = _nested_fns[cls] = _compiled(cls, tag=None)
    return function


_event_fns: dict[type, Callable[[Any], Rendered]] = {}
_effect_fns: dict[type, Callable[[Any], Rendered]] = {}
_EVENT_CLASSES: Final = frozenset(EVENT_TYPES)
_EFFECT_CLASSES: Final = frozenset(EFFECT_TYPES)


def render_event(event: events.Event) -> Rendered:
    """``event`` as a dict that orjson renders, where an event sits in a line, to the bytes
    of the codec's dict (:func:`~fsm_agent.core.codec.dump_event`), and whether a sensitive
    key name occurs in it (as :func:`~fsm_agent.trace.closed_fields.sensitive_key_in`
    judges)."""
    function = _event_fns.get(type(event))
    if function is None:
        if type(event) not in _EVENT_CLASSES:
            dumped = dump_event(event)
            return dumped, sensitive_key_in(dumped)
        function = _event_fns[type(event)] = _compiled(type(event), tag=type(event).__name__)
    return function(event)


def render_effect(effect: Any) -> Rendered:
    """:func:`render_event` for an effect, where an effect sits in a line (in its list)."""
    function = _effect_fns.get(type(effect))
    if function is None:
        if type(effect) not in _EFFECT_CLASSES:
            dumped = dump_effect(effect)
            return dumped, sensitive_key_in(dumped)
        function = _effect_fns[type(effect)] = _compiled(type(effect), tag=type(effect).__name__)
    return function(effect)
