"""Fixtures for the unit tests: hook scripts written into the test's own folder, and a
project in a home folder holding git's settings (the place a hostile command goes for)."""

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


@pytest.fixture
def home_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project with a ``src`` folder in a home folder (``HOME``) holding git's settings,
    ``~/.config/git/config``; the project's path."""
    home = tmp_path / "home"
    (home / ".config" / "git").mkdir(parents=True)
    (home / ".config" / "git" / "config").write_text("")
    project = home / "project"
    (project / "src").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    return project
