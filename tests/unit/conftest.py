"""Fixtures for the unit tests: hook scripts written into the test's own folder."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

HookScript = Callable[[str, str], str]


@pytest.fixture
def hook_script(tmp_path: Path) -> HookScript:
    """``hook_script(name, body)`` writes a Python hook script; returns the command running it.

    The body sees ``json``, ``os``, ``sys`` and ``time`` imported, and its stdin is the hook's
    JSON payload, as for any command hook (SPEC §6.1).
    """

    def write(name: str, body: str) -> str:
        path = tmp_path / f"{name}.py"
        path.write_text("import json, os, sys, time\n" + body, encoding="utf-8")
        return f"{shlex.quote(sys.executable)} {shlex.quote(str(path))}"

    return write
