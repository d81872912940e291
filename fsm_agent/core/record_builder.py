"""Building frozen records fast, for the few the core makes on every event (DESIGN §7).

Calling an attrs frozen class costs far more than its fields suggest: the keywords are packed
into a dict and unpacked again on the way into ``__init__``, and each field is set through
``object.__setattr__`` (the class's own ``__setattr__`` refuses). A step, a tool-machine
transition, a hook request and a shown message are built on almost every event, and that
price was a large share of a transition's.

:func:`record_builder` makes, once per class, a plain function taking the class's fields by
the same names (and the same defaults) that sets the slots directly. What it returns is
the record the class would have built: same class, equal, frozen. It only accepts classes
whose construction does nothing else — no validator, converter, init hook or cached
hash — and refuses the rest when it is made, not when it is called.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

import attrs

from fsm_agent.errors import DefinitionError

__all__ = ["record_builder"]

_P = ParamSpec("_P")
_R = TypeVar("_R")
_ABSENT = object()  # an argument left out, where the field's default is a factory


def record_builder(cls: Callable[_P, _R]) -> Callable[_P, _R]:
    """A function building ``cls`` records from the same arguments, without ``__init__``.

    Args:
        cls: a slotted, frozen attrs class whose construction only stores its arguments.

    Raises:
        DefinitionError: the class does more on construction than store its fields.
    """
    if not (isinstance(cls, type) and attrs.has(cls)):
        raise DefinitionError(f"{cls!r} is not an attrs class")
    props = attrs.inspect(cls)
    plain = (
        props.is_slotted
        and props.is_frozen
        and props.hashability is not attrs.ClassProps.Hashability.HASHABLE_CACHED
        and not hasattr(cls, "__attrs_pre_init__")
        and not hasattr(cls, "__attrs_post_init__")
    )
    if not plain:
        raise DefinitionError(
            f"{cls.__name__}: only slotted frozen records without a cached hash or init hooks"
        )
    namespace: dict[str, Any] = {"_new": object.__new__, "_cls": cls, "_absent": _ABSENT}
    parameters: list[str] = []
    lines: list[str] = []
    for position, field in enumerate(attrs.fields(cls)):
        if field.validator is not None or field.converter is not None or not field.init:
            raise DefinitionError(f"{cls.__name__}.{field.name} does more than store a value")
        name = field.alias  # the name __init__ takes it by
        namespace[f"_set{position}"] = getattr(cls, field.name).__set__
        default = field.default
        if default is attrs.NOTHING:
            parameters.append(name)
        elif isinstance(default, attrs.Factory):  # type: ignore[arg-type]
            if default.takes_self:
                raise DefinitionError(f"{cls.__name__}.{field.name}: a factory taking self")
            namespace[f"_factory{position}"] = default.factory
            parameters.append(f"{name}=_absent")
            lines.append(f"    if {name} is _absent:")
            lines.append(f"        {name} = _factory{position}()")
        else:
            namespace[f"_default{position}"] = default
            parameters.append(f"{name}=_default{position}")
        lines.append(f"    _set{position}(record, {name})")
    source = (
        f"def build_{cls.__name__}(*, {', '.join(parameters)}):\n"
        "    record = _new(_cls)\n" + "\n".join(lines) + "\n    return record\n"
    )
    # Generated as attrs generates __init__: one straight-line function per class.
    exec(compile(source, f"<record builder {cls.__qualname__}>", "exec"), namespace)
    build: Callable[_P, _R] = namespace[f"build_{cls.__name__}"]
    return build
