"""What a ``find`` that runs unasked finds, against what a real ``find`` finds.

In bypass mode a find that deletes what it finds, or gives it to a command (``-exec rm -rf {}
+``), runs unasked when its expression keeps every protected path out of what it finds
(``found_paths``). Each example draws a repository-like tree (``.git`` with its settings and
a hook, caches, sources, a link into ``.git``) and a conjunction of tests, and where the check
lets the command run, the real ``find`` is asked what the expression finds (``-print``
standing for the action): nothing it prints may be, hold, or lead to a protected path.
The oracle is GNU find itself.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from bypass_decisions import allowed_in_bypass
from hypothesis import given
from hypothesis import strategies as st

from fsm_agent.toolbox.paths import holds_protected, is_protected

FIND = shutil.which("find")
pytestmark = pytest.mark.skipif(FIND is None, reason="find is not installed")

FILES = [".git/config", ".git/hooks/pre-commit", ".git/HEAD", ".git/x.pyc", "src/a.py",
         "src/a.pyc", "src/__pycache__/a.pyc", "src/config", "Config", ".hooks", "hooks/x",
         "docs/.git", "build/out.o"]  # fmt: skip
LINKS = {"to-git": ".git", "cfg.pyc": ".git/config", "up": ".."}
PATTERNS = ["*.pyc", "*", ".*", "config", "CONFIG", "conf*", "hooks", "*hook*", "pre-*",
            "__pycache__", "[.]git", ".g?t", "*.py", "x*", "to-*", "up", "[!a]*", "?"]  # fmt: skip
TESTS = st.one_of(
    st.tuples(st.sampled_from(["-name", "-iname"]), st.sampled_from(PATTERNS)),
    st.tuples(st.just("-type"), st.sampled_from(["d", "f", "l", "f,d"])),
    st.tuples(st.sampled_from(["-empty", "-depth"])),
)
ACTIONS = ["-delete", "-exec rm -rf {} +", "-exec sed -i s/a/b/ {} +", "-execdir rm {} ;"]


@given(
    files=st.lists(st.sampled_from(FILES), min_size=1, max_size=8, unique=True),
    links=st.lists(st.sampled_from(sorted(LINKS)), max_size=2, unique=True),
    tests=st.lists(TESTS, min_size=1, max_size=3),
    start=st.sampled_from([".", "src", "./"]),
    action=st.sampled_from(ACTIONS),
)
def test_a_find_running_unasked_finds_no_protected_path(
    files: list[str],
    links: list[str],
    tests: list[tuple[str, ...]],
    start: str,
    action: str,
) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        home = Path(scratch)
        work = home / "work"
        for name in files:
            (work / name).parent.mkdir(parents=True, exist_ok=True)
            (work / name).write_text("")
        (work / "src").mkdir(parents=True, exist_ok=True)
        for name in links:
            (work / name).symlink_to(work / LINKS[name])
        expression = " ".join(shlex.join(test) for test in tests)
        command = f"find {start} {expression} {action.replace(';', chr(92) + ';')}"
        if not allowed_in_bypass(command, work, home):
            return
        found = subprocess.run(
            [FIND or "find", start, *[word for test in tests for word in test], "-print"],
            cwd=work,
            capture_output=True,
            text=True,
            check=False,
            timeout=10,
        ).stdout.splitlines()
        for path in (work / line for line in found):
            if path.is_symlink() and not path.exists():
                continue  # leads nowhere: what it names would be made where no folder is
            assert not is_protected(path), (command, path)
            if path.is_dir():  # through a link too: where it leads
                assert not holds_protected(path.resolve(), through_links=True), (command, path)
