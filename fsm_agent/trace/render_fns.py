"""Renderers of events, effects and messages made once per class, each scanning for key
names as it builds (issue 10, DESIGN §7-§8).

The trace writer renders every event and effect it writes. The codec's dump (the function
cattrs generates) copies every free-form dict and calls a hook for every enum, tuple and
nested object; the key scan then looks the dict up again
(:func:`~fsm_agent.trace.closed_fields.sensitive_key_in`), or walks all of it (a message).
The function made here for a class builds a dict that orjson renders to exactly the bytes of
the codec's dict, and judges its keys as it goes:

* a field cattrs reads inline (a scalar, an optional scalar) is read the same way;
* an enum member (whose value is a string or an integer), a tuple of strings and a free-form
  dict are left for orjson to render — the same bytes as the member's value, the list and
  the copy the codec makes — when the value has exactly the field's type;
* an attrs class, or a tagged union of them (a message, a content block), held by a field
  is rendered by its own function, with its tag, when the value's class is exactly one the
  codec knows;
* anything else — a field of another type, a value of an unexpected type — goes through the
  converter's own hook for the field, exactly as cattrs' function does; an object whose class
  is not exactly an event or effect class is dumped by the codec.

So a value fails where the codec's dict would (the hooks raise alike, and orjson refuses the
same leaves). Keys are judged as the writer judged them on the codec's dict: an event's or
an effect's open fields only, as ``sensitive_key_in`` does; a message whole, as
:func:`~fsm_agent.trace.redact.has_sensitive_key` does (so a message whose scalar field holds
a container is handed to the codec and walked). The dict is for rendering only: its
free-form values are the object's own; whoever redacts uses the codec's dict.
"""

from __future__ import annotations

import enum
import types
import typing
from collections.abc import Callable
from typing import Any, Final, Literal

import attrs

from fsm_agent.core import events, messages
from fsm_agent.core.codec import (
    converter,
    dump_effect,
    dump_event,
    omitted_if_default,
    union_tags,
)
from fsm_agent.core.effects import EFFECT_TYPES
from fsm_agent.core.events import EVENT_TYPES
from fsm_agent.trace.closed_fields import check_of, field_scan, sensitive_key_in
from fsm_agent.trace.redact import has_sensitive_key, is_sensitive_key

__all__ = ["render_effect", "render_event", "render_message"]

Rendered = tuple[Any, bool]
"""A JSON-ready value and whether a sensitive key name occurs in it."""
_Mode = Literal["top", "nested", "whole"]
"""What a function is made for: an event or effect, or an attrs class one holds (its open
fields judged, as closed_fields plans), or a message or what it holds (judged whole)."""

_FACTORY: Final[type[Any]] = type(attrs.Factory(list))
_VALUE_FACTORIES: Final = frozenset({dict, list, tuple, frozenset})
"""Default factories whose value is compared by value only (cattrs calls the factory each
time; comparing with one value made once answers the same)."""
_CONTAINERS: Final = frozenset({dict, list, tuple})
_SCALARS: Final = (str, int)
_NESTED: Final = (events.HookOutcome,)
"""The attrs classes an event or effect holds that get a function of their own."""
_WHOLE: Final = (messages.Usage,)
"""The attrs classes a message holds that get a function of their own (besides blocks)."""


def _scanned(value: Any) -> Rendered:
    return value, type(value) in _CONTAINERS and has_sensitive_key(value)


def _tagged(value: Any, table: dict[type, Callable[[Any], Rendered]], hook: Any) -> Rendered:
    """A value rendered by the function of its class, or by ``hook`` (and walked)."""
    function = table.get(type(value))
    return _scanned(hook(value)) if function is None else function(value)


def _tagged_items(value: Any, table: dict[type, Callable[[Any], Rendered]], hook: Any) -> Rendered:
    """A tuple of values rendered as :func:`_tagged` does, as a list; the whole tuple goes
    through ``hook`` when it is not a tuple or one of its items has no function."""
    if type(value) is not tuple:
        return _scanned(hook(value))
    items: list[Any] = []
    keys_hit = False
    for item in value:
        function = table.get(type(item))
        if function is None:
            return _scanned(hook(value))
        rendered, hit = function(item)
        items.append(rendered)
        keys_hit = keys_hit or hit
    return items, keys_hit


def _result_content(
    value: Any, table: dict[type, Callable[[Any], Rendered]], hook: Any
) -> Rendered:
    """A tool result's content: a string as it is, parts as :func:`_tagged_items` does."""
    if type(value) is str:
        return value, False
    return _tagged_items(value, table, hook)


def _optional_member(kind: Any) -> tuple[Any, bool]:
    """``kind`` without ``| None``, and whether it allowed None."""
    if typing.get_origin(kind) in (typing.Union, types.UnionType):
        members = typing.get_args(kind)
        others = [member for member in members if member is not type(None)]
        if len(members) == 2 and len(others) == 1:
            return others[0], True
    return kind, False


def _plain_enum(kind: Any) -> bool:
    """Whether orjson renders each member of enum ``kind`` as the codec renders its value."""
    return (
        isinstance(kind, type)
        and issubclass(kind, enum.Enum)
        and all(type(member.value) in _SCALARS for member in kind)
    )


def _union_table(kind: Any) -> dict[type, Callable[[Any], Rendered]] | None:
    """The functions of the members of a tagged union of attrs classes, or None."""
    if typing.get_origin(kind) not in (typing.Union, types.UnionType):
        return None
    members = typing.get_args(kind)
    tags = union_tags()
    if not all(member in tags for member in members):
        return None
    return {member: _function(member, "whole") for member in members}


def _field_code(
    name: str, kind: Any, index: int, names: dict[str, Any], mode: _Mode
) -> tuple[list[str], str | None]:
    """Statements leaving field ``name``'s value in ``v<index>`` (and, for a value judged by
    its own function, its judgement in ``h<index>``); returns them and that judgement."""
    value, hook = f"v{index}", f"__hook{index}"
    names[hook] = converter().get_unstructure_hook(kind)
    read = f"{value} = instance.{name}"
    judged = f"{value}, h{index} = "
    if kind == messages.ToolResultContent:
        names[f"__table{index}"] = _union_table(messages.ResultPart)
        call = f"__result_content(instance.{name}, __table{index}, {hook})"
        return [judged + call], f"h{index}"
    table = _union_table(kind)
    if table is not None:
        names[f"__table{index}"] = table
        return [judged + f"__tagged(instance.{name}, __table{index}, {hook})"], f"h{index}"
    if typing.get_origin(kind) is tuple and typing.get_args(kind)[1:] == (Ellipsis,):
        table = _union_table(typing.get_args(kind)[0])
        if table is not None:
            names[f"__table{index}"] = table
            call = f"__tagged_items(instance.{name}, __table{index}, {hook})"
            return [judged + call], f"h{index}"
    if kind in _WHOLE:
        names[f"__table{index}"] = {kind: _function(kind, "whole")}
        return [judged + f"__tagged(instance.{name}, __table{index}, {hook})"], f"h{index}"
    inner, optional = _optional_member(kind)
    names[f"__type{index}"] = inner
    if inner in _NESTED:
        names[f"__render{index}"] = _function(inner, "nested")
        names[f"__check{index}"] = check_of(inner)
        return [
            read,
            f"if type({value}) is __type{index}: {value}, h{index} = __render{index}({value})",
            "else:",
            f"    {value} = {hook}({value})",
            f"    h{index} = {value} is not None and __check{index}({value})",
        ], f"h{index}"
    if inner == dict[str, Any]:
        names[f"__type{index}"] = dict
    elif inner == tuple[str, ...]:
        names[f"__type{index}"] = tuple
    elif not _plain_enum(inner):
        return [f"{value} = {hook}(instance.{name})"], None
    # Left for orjson when it has exactly the field's type (None as it is, as the hook does).
    test = f"type({value}) is not __type{index}"
    if optional:
        test = f"{value} is not None and {test}"
    return [read, f"if {test}: {value} = {hook}({value})"], None


def _source(cls: type, mode: _Mode, tag: str | None, names: dict[str, Any]) -> str:
    """The function's source: the dict of cattrs' function (with ``tag``), built as the
    module says, and (but for a nested class) the judgement of its keys."""
    hints = typing.get_type_hints(cls)
    omitted = set(omitted_if_default(cls))
    items: list[str] = []
    reads: list[str] = []  # the scalars a message's function reads before its guard
    statements: list[str] = []
    later: list[str] = []  # the fields left out while they hold their default
    guards: list[str] = []  # scalars that must not be containers (a message is judged whole)
    values: dict[str, str] = {}
    judged: dict[str, str] = {}
    for index, field in enumerate(attrs.fields(cls)):
        name, kind = field.name, hints[field.name]
        if converter().get_unstructure_hook(kind) is _identity() and name not in omitted:
            if mode == "whole":
                reads.append(f"v{index} = instance.{name}")
                guards.append(f"type(v{index}) in __containers")
                items.append(f"{name!r}: v{index}")
            else:
                items.append(f"{name!r}: instance.{name}")
            values[name] = f"res[{name!r}]" if mode != "whole" else ""
            continue
        code, judgement = _field_code(name, kind, index, names, mode)
        if judgement is not None:
            judged[name] = judgement
        values[name] = f"v{index}"
        if name not in omitted:
            statements += code
            items.append(f"{name!r}: v{index}")
            continue
        default: Any = field.default
        if isinstance(default, _FACTORY):
            if default.takes_self:
                raise TypeError(f"{cls.__name__}.{name}: a default that takes self")
            if default.factory in _VALUE_FACTORIES:  # compared by value: one will do
                names[f"__default{index}"] = default.factory()
                differs = f"instance.{name} != __default{index}"
            else:
                names[f"__default{index}"] = default.factory
                differs = f"instance.{name} != __default{index}()"
        else:
            names[f"__default{index}"] = default
            differs = f"instance.{name} != __default{index}"
        statements += [f"v{index} = None"] + ([f"h{index} = False"] if judgement else [])
        later += [f"if {differs}:", *(f"    {line}" for line in code)]
        later.append(f"    res[{name!r}] = v{index}")
    if tag is not None:
        items.append(f"'type': {tag!r}")
    lines = ["def render(instance):", *(f"    {line}" for line in reads)]
    if guards:
        lines.append("    if " + " or ".join(guards) + ":")
        lines.append("        return __fallback(instance)")
    lines += [f"    {line}" for line in statements]
    lines.append("    res = {" + ", ".join(items) + "}")
    lines += [f"    {line}" for line in later]
    tests = _key_tests(cls, mode, values, judged, names)
    lines.append(f"    return res, {' or '.join(tests) if tests else 'False'}")
    return "\n".join(lines)


def _key_tests(
    cls: type, mode: _Mode, values: dict[str, str], judged: dict[str, str], names: dict[str, Any]
) -> list[str]:
    """The tests whose disjunction judges the keys of ``res``: an event's or effect's open
    fields (as its plan in closed_fields says), or every field of a message's class."""
    tests: list[str] = []
    if mode != "whole":
        scan = field_scan(cls)
        tests += [f"{name!r} in res" for name in scan.named]
        whole: tuple[str, ...] = scan.whole
        for index, (name, check) in enumerate(scan.nested):
            if name in judged:  # rendered by its own function, which judged it
                tests.append(judged[name])
                continue
            names[f"__nested_check{index}"] = check
            item = values[name]
            tests.append(f"({item} is not None and __nested_check{index}({item}))")
    else:
        tests += [f"{name!r} in res" for name in values if is_sensitive_key(name)]
        whole = tuple(name for name, value in values.items() if value)
    for name in whole:
        if name in judged:
            tests.append(judged[name])
        else:
            item = values[name]
            tests.append(f"(type({item}) in __containers and __has_key({item}))")
    return tests


def _identity() -> Any:
    from cattrs.fns import identity  # noqa: PLC0415 - cattrs is imported lazily (codec)

    return identity


_functions: dict[tuple[type, str], Any] = {}


def _function(cls: type, mode: _Mode) -> Any:
    """The function made for ``cls`` in ``mode`` (made on first use; a class held by
    itself would be made once only)."""
    function = _functions.get((cls, mode))
    if function is not None:
        return function
    tag = union_tags().get(cls) if mode == "whole" else None
    if mode == "top":
        tag = cls.__name__
    names: dict[str, Any] = {
        "__containers": _CONTAINERS,
        "__has_key": has_sensitive_key,
        "__tagged": _tagged,
        "__tagged_items": _tagged_items,
        "__result_content": _result_content,
        "__fallback": _fallback(cls, tag),
    }
    source = _source(cls, mode, tag, names)
    exec(compile(source, f"<render {cls.__qualname__}>", "exec"), names)
    function = _functions[cls, mode] = names["render"]
    return function


def _fallback(cls: type, tag: str | None) -> Callable[[Any], Rendered]:
    """The codec's dict of ``cls`` (tagged as its union tags it), walked for key names."""

    def fallback(value: Any) -> Rendered:
        dumped = converter().get_unstructure_hook(cls)(value)
        if tag is not None:
            dumped["type"] = tag
        return _scanned(dumped)

    return fallback


def _top_renderer(
    classes: frozenset[type], dump: Callable[[Any], dict[str, Any]]
) -> Callable[[Any], Rendered]:
    """The renderer of the members of one tagged union of ``classes`` (events, effects): each
    class's function made on first use; an object whose class is not exactly a member is
    dumped by the codec's ``dump`` and scanned as the writer scans it."""
    functions: dict[type, Callable[[Any], Rendered]] = {}

    def render(value: Any) -> Rendered:
        function = functions.get(type(value))
        if function is None:
            if type(value) not in classes:
                dumped = dump(value)
                return dumped, sensitive_key_in(dumped)
            function = functions[type(value)] = _function(type(value), "top")
        return function(value)

    return render


render_event: Final[Callable[[events.Event], Rendered]] = _top_renderer(
    frozenset(EVENT_TYPES), dump_event
)
"""``event`` as a dict that orjson renders to the bytes of the codec's dict
(:func:`~fsm_agent.core.codec.dump_event`), and whether a sensitive key name occurs in it
(as :func:`~fsm_agent.trace.closed_fields.sensitive_key_in` judges)."""
render_effect: Final[Callable[[Any], Rendered]] = _top_renderer(
    frozenset(EFFECT_TYPES), dump_effect
)
""":func:`render_event` for an effect."""


_message_table: dict[type, Callable[[Any], Rendered]] = {}


def render_message(message: messages.Message) -> Rendered:
    """A message as a dict that orjson renders to the bytes of the codec's dict
    (:func:`~fsm_agent.core.codec.dump_message`), and whether a sensitive key name occurs
    anywhere in it (as :func:`~fsm_agent.trace.redact.has_sensitive_key` judges)."""
    if not _message_table:
        _message_table.update({cls: _function(cls, "whole") for cls in messages.MESSAGE_TYPES})
    function = _message_table.get(type(message))
    if function is None:
        from fsm_agent.core.codec import dump_message  # noqa: PLC0415

        return _scanned(dump_message(message))
    return function(message)
