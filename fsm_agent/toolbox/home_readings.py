"""Readings of the user's home folder, taken at most once a second.

The protected-path checks look into the home folder for every path they judge: the links it
holds (``~/.gitconfig`` leading into a dotfiles repository), the files its start-up files
source. A command names tens of paths, so each reading stands for a second instead of being
taken again per path. What the model could change in that second to mislead a check (a
link in the home folder, a line in ``.bashrc``) is itself protected: it cannot change it
unasked.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from typing import Any, Final, TypeVar

T = TypeVar("T")

_FRESH_FOR: Final = 1.0
"""Seconds a reading stands."""
_MOST_KEPT: Final = 64
"""Readings kept (one per home folder and environment seen); past this all are dropped."""
_readings: dict[Hashable, tuple[float, Any]] = {}


def read_once_a_second(key: Hashable, read: Callable[[], T]) -> T:
    """``read()``, or what it gave for ``key`` less than a second ago."""
    now = time.monotonic()
    kept = _readings.get(key)
    if kept is not None and now - kept[0] < _FRESH_FOR:
        value: T = kept[1]
        return value
    if len(_readings) >= _MOST_KEPT:
        _readings.clear()
    fresh = read()
    _readings[key] = (now, fresh)
    return fresh
