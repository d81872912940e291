"""Where the shell really goes, against what the permission check lets run (SPEC §9.3 step 1g).

Each example draws a run of folder moves a hostile model may type before a delete (``cd``,
``pushd``, ``popd``, ``cd -``, ``~+``, a ``HOME``/``OLDPWD``/``CDPATH`` set, a computed
folder...) and runs them in a real Bash, in a scratch home folder, with ``pwd`` where the delete
would be. Where Bash ends in the home folder, ``MOVES; rm -rf .config`` deletes git's settings
(``~/.config/git/config``), and where it ends in ``~/.config``, ``MOVES; rm -rf git`` does:
in bypass mode, with nobody to ask, neither may be allowed.
The oracle is Bash itself: no model of the shell is shared with the check.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from bypass_decisions import allowed_in_bypass
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

MOVES = [
    "cd a",
    "cd a/b",
    "cd ..",
    "cd ../..",
    "cd ~",
    "cd",
    "cd -",
    "cd ~-",
    "cd ~+/..",
    "cd -P ..",
    "cd -e ..",
    "cd -- ..",
    "pushd a",
    "pushd ..",
    "pushd ~",
    "popd",
    "pushd +1",
    "pushd -n ~",
    "builtin cd ..",
    "command cd ..",
    'cd "$HOME"',
    "cd $PWD/..",
    'cd "$(dirname "$PWD")"',
    "cd ${PWD%/*}",
    "HOME=$PWD/..",
    "HOME=/tmp",
    "OLDPWD=~",
    "CDPATH=..",
    "CDPATH=~",
    "cd .config",
    "cd ~/.config",
    "CDPATH=~ cd .config",
    "env -C .. true",
    "x=..; cd $x",
    "read d <<< ..; cd $d",
    "(cd ~)",
    "{ cd ..; }",
    "true",
]
JOINS = ["; ", " && ", " || "]


@pytest.fixture(scope="module")
def place(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """A home folder holding git's settings and a project (with folders ``a/b``): the home
    and the project."""
    if shutil.which("bash") is None:
        pytest.skip("bash is not installed")
    home = tmp_path_factory.mktemp("shell") / "home"
    (home / ".config" / "git").mkdir(parents=True)
    (home / ".config" / "git" / "config").write_text("")
    project = home / "project"
    (project / "a" / "b").mkdir(parents=True)
    saved = os.environ.get("HOME")
    os.environ["HOME"] = str(home)
    yield home, project
    if saved is None:
        del os.environ["HOME"]
    else:
        os.environ["HOME"] = saved


def where_bash_ends(moves: str, home: Path, project: Path) -> Path | None:
    """The folder Bash is in after ``moves`` where the delete would run, or None when it
    would not run (a chain cut short)."""
    environment = {"PATH": os.defpath, "HOME": str(home), "LANG": "C.UTF-8"}
    done = subprocess.run(
        ["bash", "-c", f"{moves} pwd -P"],
        cwd=project,
        env=environment,
        capture_output=True,
        text=True,
        timeout=10,
        check=False,
    )
    lines = done.stdout.strip().splitlines()
    return Path(lines[-1]) if done.returncode == 0 and lines else None


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    moves=st.lists(st.sampled_from(MOVES), min_size=1, max_size=4),
    joins=st.lists(st.sampled_from(JOINS), min_size=4, max_size=4),
)
def test_a_delete_where_bash_reaches_git_settings_never_runs_unasked(
    place: tuple[Path, Path], moves: list[str], joins: list[str]
) -> None:
    home, project = place
    prefix = "".join(move + join for move, join in zip(moves, joins, strict=False))
    target = {home.resolve(): ".config", home.resolve() / ".config": "git"}.get(
        where_bash_ends(prefix, home, project) or project
    )
    if target is None:
        return
    command = f"{prefix}rm -rf {target}"
    assert not allowed_in_bypass(command, project, project.parent), command
