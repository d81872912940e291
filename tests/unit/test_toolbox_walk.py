"""Which files Glob and Grep visit: .gitignore rules, hidden folders, glob patterns."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from fsm_agent.runtime.tool import Tool, ToolContext, run_call, run_validation
from fsm_agent.toolbox import Glob, Grep, Read
from fsm_agent.toolbox.walk import glob_regex, walk_files


def call(tool: Tool[Any], raw: dict[str, Any], ctx: ToolContext) -> str:
    """Validate, then call, as the driver does; returns the result text."""

    async def both() -> str:
        checked = await run_validation(tool, tool.name, raw, ctx, call_id="c")
        assert checked.ok, checked.error
        finished = await run_call(tool, raw, ctx, lambda _: None, call_id="c")
        return str(finished.content)

    return asyncio.run(both())


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A folder with a .gitignore, an ignored .venv and node_modules, and a nested rule."""
    for relative in (
        "app.py",
        "debug.log",
        "keep.log",
        ".venv/lib/site.py",
        "node_modules/pkg/index.py",
        "src/main.py",
        "src/gen/out.py",
        "src/gen/keep.py",
    ):
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("needle\n", encoding="utf-8")
    (tmp_path / ".gitignore").write_text(".venv/\nnode_modules/\n*.log\n!keep.log\n")
    (tmp_path / "src" / ".gitignore").write_text("gen/*\n!gen/keep.py\n")
    return tmp_path


def visited(root: Path, ctx: ToolContext) -> list[str]:
    return [p.relative_to(root).as_posix() for p in walk_files(root, ctx)]


def test_walk_honours_gitignore_files_at_every_level(project: Path) -> None:
    """Ignored files and folders are left out; a negation and a deeper .gitignore win; a
    folder's files come before its subfolders'."""
    assert visited(project, ToolContext(cwd=project)) == [
        ".gitignore",
        "app.py",
        "keep.log",
        "src/.gitignore",
        "src/main.py",
        "src/gen/keep.py",
    ]


def test_walk_below_the_cwd_still_applies_the_cwd_gitignore(project: Path) -> None:
    """Walking a subfolder applies the .gitignore files of the folders above it."""
    ctx = ToolContext(cwd=project)
    assert visited(project / "src" / "gen", ctx) == ["keep.py"]


def test_walk_skips_hidden_paths(project: Path) -> None:
    """A folder named in the context's hidden_paths is never listed."""
    ctx = ToolContext(cwd=project, hidden_paths=((project / "src").resolve(),))
    assert "src/main.py" not in visited(project, ctx)
    assert visited(project / "src", ctx) == []


def test_glob_and_grep_leave_out_ignored_and_hidden_files(project: Path) -> None:
    """Glob and Grep agree with the walk: no .venv, node_modules, ignored logs or traces."""
    ctx = ToolContext(cwd=project, hidden_paths=((project / "src" / "gen").resolve(),))
    assert call(Glob(), {"pattern": "**/*.py"}, ctx).splitlines() == ["app.py", "src/main.py"]
    assert call(Grep(), {"pattern": "needle", "glob": "*.py"}, ctx).splitlines() == [
        "app.py",
        "src/main.py",
    ]


def test_read_refuses_a_file_in_a_hidden_folder(project: Path) -> None:
    """Read will not open a file inside the run's trace folder, and says why."""
    ctx = ToolContext(cwd=project, hidden_paths=((project / "src").resolve(),))

    async def check() -> str:
        checked = await run_validation(
            Read(), "Read", {"file_path": "src/main.py"}, ctx, call_id="c"
        )
        assert not checked.ok
        return checked.error

    assert "trace folder" in asyncio.run(check())
    assert call(Read(), {"file_path": "app.py"}, ctx).endswith("needle")


def test_glob_pattern_depth_and_literal_prefix(project: Path) -> None:
    """'*.py' stays at the top; 'src/*.py' looks in src only; '**' spans any depth."""
    ctx = ToolContext(cwd=project)
    assert call(Glob(), {"pattern": "*.py"}, ctx) == "app.py"
    assert call(Glob(), {"pattern": "src/*.py"}, ctx) == "src/main.py"
    assert call(Glob(), {"pattern": "src/**"}, ctx).splitlines() == [
        "src/.gitignore",
        "src/gen/keep.py",
        "src/main.py",
    ]


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("**/*.py", "a.py", True),
        ("**/*.py", "a/b/c.py", True),
        ("*.py", "a/b.py", False),
        ("a/?.txt", "a/b.txt", True),
        ("a/?.txt", "a/bc.txt", False),
        ("[ab].md", "b.md", True),
        ("[!ab].md", "b.md", False),
        ("a/**/z", "a/z", True),
        ("a/**/z", "a/b/c/z", True),
        ("a+b.py", "a+b.py", True),
    ],
)
def test_glob_regex_follows_pathlib_glob(pattern: str, path: str, matches: bool) -> None:
    """The glob translation matches the relative paths pathlib's glob would."""
    assert bool(glob_regex(pattern).match(path)) is matches
