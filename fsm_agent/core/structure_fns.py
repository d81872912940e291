"""Structure functions generated per attrs class that read a dict's fields directly.

Replay structures an event per recorded line (issue 10); the function cattrs generates copies
the dict, pops its tag, calls a hook for every field (a Python call per string) and builds a
set to find unknown keys. The function made here does only the common case itself: a dict
holding the fields of the class and its ``type`` tag, nothing else (a field left out takes
its default, as in cattrs' function). A field of a scalar type (``str``, ``int``, ``bool``,
``float``, or one of them or None) is taken as it is when its value already has that type;
any other value, and any field of another type, goes through the converter's own hook for
the field's type, as cattrs' function does it. So the object made is the one cattrs'
function makes (strict scalar hooks return such a value unchanged).

Anything else (a required field missing, an unknown key, a hook that refuses a value) is
handed to ``fallback``, cattrs' function, with the dict as it came: what it accepts and what
it refuses, and how, stays cattrs' business.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

import attrs

if TYPE_CHECKING:
    import cattrs

_SCALARS: Final = (str, int, bool, float)


def make_structure_fn(
    cls: type,
    conv: cattrs.Converter,
    fallback: Callable[[dict[str, Any]], Any],
    *,
    tag: str,
) -> Callable[[dict[str, Any]], Any]:
    """A function that structures a dict tagged ``tag`` (its class name) into ``cls``."""
    hints = typing.get_type_hints(cls)
    names: dict[str, Any] = {"__cls": cls, "__fallback": fallback, "__missing": _MISSING}
    lines = [
        "def structure(o):",
        f"    if o.get('type') != {tag!r}:",
        "        return __fallback(o)",
        "    present = 1",
        "    try:",
    ]
    arguments = []
    for index, field in enumerate(attrs.fields(cls)):
        kind = hints[field.name]
        names[f"__hook{index}"] = conv.get_structure_hook(kind)
        names[f"__type{index}"] = kind
        value = f"v{index}"
        arguments.append(f"{field.alias}={value}")
        lines.append(f"        {value} = o.get({field.name!r}, __missing)")
        lines.append(f"        if {value} is __missing:")
        lines.append(f"            {_absent(field, index, names)}")
        lines.append("        else:")
        lines.append("            present += 1")
        scalar, optional = _scalar_of(kind)
        if scalar is None:
            lines.append(f"            {value} = __hook{index}({value}, __type{index})")
            continue
        names[f"__scalar{index}"] = scalar
        check = f"type({value}) is not __scalar{index}"
        if optional:
            check = f"{value} is not None and {check}"
        lines.append(f"            if {check}:")
        lines.append(f"                {value} = __hook{index}({value}, __type{index})")
    lines += [
        "        if present != len(o):",  # a key that is no field
        "            return __fallback(o)",
        f"        return __cls({', '.join(arguments)})",
        "    except Exception:",
        "        return __fallback(o)",
    ]
    exec(compile("\n".join(lines), f"<structure {cls.__qualname__}>", "exec"), names)
    function: Callable[[dict[str, Any]], Any] = names["structure"]
    return function


_MISSING: Final = object()
_FACTORY: Final[type[Any]] = type(attrs.Factory(list))


def _absent(field: attrs.Attribute[Any], index: int, names: dict[str, Any]) -> str:
    """The statement for an absent field: its default, or cattrs' judgement."""
    default: Any = field.default
    if default is attrs.NOTHING or (isinstance(default, _FACTORY) and default.takes_self):
        return "return __fallback(o)"
    if isinstance(default, _FACTORY):
        names[f"__factory{index}"] = default.factory
        return f"v{index} = __factory{index}()"
    names[f"__default{index}"] = default
    return f"v{index} = __default{index}"


def _scalar_of(kind: Any) -> tuple[type | None, bool]:
    """The scalar type of a field (``str``, ``int | None``...) and whether None is allowed;
    ``(None, False)`` for any other type."""
    if kind in _SCALARS:
        return kind, False
    if isinstance(kind, types.UnionType) or typing.get_origin(kind) is typing.Union:
        members = typing.get_args(kind)
        others = [member for member in members if member is not type(None)]
        if len(members) == 2 and len(others) == 1 and others[0] in _SCALARS:
            return others[0], True
    return None, False
