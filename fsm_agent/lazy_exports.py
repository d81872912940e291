"""Public names of a package loaded on first use (PEP 562 module ``__getattr__``).

``fsm_agent``, ``fsm_agent.trace`` and ``fsm_agent.toolbox`` list their public names in a
table (name → module) instead of importing every module up front, so that importing one
piece does not pay for the SDK, the shell parser or the timelines.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    package: str, table: Mapping[str, str], namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``, loading ``table``'s names lazily.

    Args:
        package: the package's name, for the error of a name it does not have.
        table: each public name and the module that defines it.
        namespace: the package's ``globals()``; a loaded name is cached there.
    """

    def getattr_(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def dir_() -> list[str]:
        return sorted(namespace.get("__all__", table))

    return getattr_, dir_
