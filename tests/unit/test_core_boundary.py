"""The core stays pure: it imports no I/O or concurrency module and reads no clock or randomness."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import fsm_agent.core

CORE_DIR = Path(fsm_agent.core.__file__).parent
CORE_MODULES = sorted(
    f"fsm_agent.core.{p.stem}" for p in CORE_DIR.glob("*.py") if p.stem != "__init__"
)
FORBIDDEN_IMPORTS = (
    "anthropic",
    "httpx",
    "httpx2",
    "asyncio",
    "socket",
    "subprocess",
    "selectors",
    "ssl",
)
FORBIDDEN_SOURCE = {
    "time": re.compile(
        r"^\s*(import time\b|from time import)|\btime\.(time|monotonic|sleep)\(", re.M
    ),
    "random": re.compile(r"^\s*(import random\b|from random import)|\brandom\.", re.M),
    "datetime": re.compile(r"^\s*(import datetime\b|from datetime import)|\bdatetime\.", re.M),
    "open(": re.compile(r"(?<![\w.])open\("),
    "os.": re.compile(r"^\s*(import os\b|from os\b)|(?<![\w.])os\.", re.M),
    "uuid": re.compile(r"^\s*(import uuid\b|from uuid import)|\buuid\.uuid\d\(", re.M),
}


def test_core_modules_are_found() -> None:
    """The scan below sees the core's modules (agent_core among them)."""
    assert "fsm_agent.core.agent_core" in CORE_MODULES


def test_importing_the_core_loads_no_io_module() -> None:
    """Importing every fsm_agent.core module loads none of the I/O or SDK modules."""
    code = (
        "import importlib, json, sys\n"
        f"for name in {CORE_MODULES!r}:\n"
        "    importlib.import_module(name)\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    ).stdout
    loaded = set(json.loads(out))
    bad = sorted(m for m in loaded if m.split(".")[0] in FORBIDDEN_IMPORTS)
    assert bad == []


@pytest.mark.parametrize("module", CORE_MODULES)
def test_core_source_uses_no_clock_random_or_io(module: str) -> None:
    """No core module reads the clock, draws randoms, opens files, touches os or makes uuids."""
    source = (CORE_DIR / f"{module.rsplit('.', 1)[1]}.py").read_text(encoding="utf-8")
    code = "\n".join(line.split("#", 1)[0] for line in _code_lines(source))
    hits = [word for word, pattern in FORBIDDEN_SOURCE.items() if pattern.search(code)]
    assert hits == []


def _code_lines(source: str) -> list[str]:
    """Source lines outside docstrings (a rough cut: triple-quoted blocks are skipped)."""
    lines: list[str] = []
    inside = False
    for line in source.splitlines():
        quotes = line.count('"""')
        if inside:
            inside = quotes % 2 == 0
            continue
        if quotes % 2 == 1:
            inside = True
            continue
        if quotes:
            continue
        lines.append(line)
    return lines
