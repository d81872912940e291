"""A formatter or fixer rewriting files in place meets the Edit rules on them.

Found in bypass mode with ``Edit(./src/**)`` denied: ``black src``, ``isort src``, ``prettier
--write src``, ``eslint --fix src``, ``gofmt -w src``, ``ruff check --fix .``, ``python3 -m
black .``, ``cargo fmt``, ``go fmt ./...`` and ``gzip -r src`` rewrote the files under ``src``
unasked: no word of them names a file there (``src`` is a folder, or none is named and the
program works where it runs). Each now asks, as ``rm -rf src`` does. So do ``ruff --config
x.toml format`` and ``cargo +nightly fmt``, whose subcommand follows the program's own options
(found: they ran); and ``ruff format --diff``, ``black --check`` and ``ruff check --fix
--diff``, which write nothing, run (found: they asked).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_hostile_commands import decide

from fsm_agent import PermissionMode
from fsm_agent.core.kinds import PermissionBehavior
from fsm_agent.toolbox.in_place_writers import rewritten_trees

REWRITING = [
    "black src",
    "isort src",
    "ruff format",
    "ruff check --fix .",
    "uvx ruff check --unsafe-fixes",
    "python3 -m black .",
    "python3.12 -m isort src",
    "autopep8 -ir src",
    "yapf --in-place -r src",
    "prettier --write src",
    "npx prettier -w .",
    "eslint --fix src",
    "biome check --write .",
    "deno fmt",
    "gofmt -w src",
    "go fmt ./...",
    "cargo fmt",
    "cargo clippy --fix",
    "rustfmt src/main.rs src",
    "clang-format -i src/*.c",
    "terraform fmt -recursive",
    "mix format",
    "rubocop -A",
    "shfmt -w .",
    "gzip -r src",
    "cd src && black .",
    "black -l 100 src",
    # a subcommand after the program's own options (found)
    "ruff --config pyproject.toml format",
    "ruff -q format src",
    "ruff --isolated check --fix",
    "cargo +nightly fmt",
]


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("x=1\n")
    (tmp_path / "tests").mkdir()
    return tmp_path


@pytest.mark.parametrize("command", REWRITING)
def test_a_formatter_asks_under_an_edit_rule_in_bypass(command: str, work: Path) -> None:
    decided = decide(command, work, mode=PermissionMode.BYPASS, deny={"Edit(./src/**)"})
    assert decided.behavior is PermissionBehavior.DENY, decided.reason  # nobody to ask
    assert decided.rule == "Edit(./src/**)"


@pytest.mark.parametrize(
    "command",
    [
        "prettier --check src",
        "black --check src",
        "pipx run black --diff .",
        "ruff format --check",
        "cargo fmt --check",
        "terraform fmt -check",
        "isort --check-only src",
        "eslint src",
        "gofmt -l src",
        "ruff check src",
        "cargo clippy",
        "gzip -k notes.txt",
        "ruff format --diff",
        "ruff check --fix --diff .",  # shows the fixes (found: it asked)
        "python3 -m black --diff src",
        "cargo +nightly fmt -- --check",
    ],
)
def test_a_formatter_told_only_to_check_runs(command: str, work: Path) -> None:
    decided = decide(command, work, mode=PermissionMode.BYPASS, deny={"Edit(./src/**)"})
    assert decided.behavior is PermissionBehavior.ALLOW, decided.reason


@pytest.mark.parametrize("command", ["black tests", "prettier --write tests", "ruff format tests"])
def test_a_formatter_elsewhere_runs(command: str, work: Path) -> None:
    decided = decide(command, work, mode=PermissionMode.BYPASS, deny={"Edit(./src/**)"})
    assert decided.behavior is PermissionBehavior.ALLOW, decided.reason


def test_the_trees_a_formatter_rewrites() -> None:
    assert rewritten_trees(("black", "src", "tests")) == ["src", "tests"]
    assert rewritten_trees(("/usr/bin/ruff", "format")) == ["."]
    assert rewritten_trees(("go", "fmt", "./...", "pkg/...")) == [".", "pkg"]
    assert rewritten_trees(("prettier", "--check", "src")) == []
    assert rewritten_trees(("prettier", "--write=true", "src")) == ["src"]
    assert rewritten_trees(("python3", "-m", "black", "src")) == ["src"]
    assert rewritten_trees(("pythonx", "-m", "black", "src")) == []
    assert rewritten_trees(("cat", "src")) == []
    assert rewritten_trees(("ruff", "--config", "x.toml", "format", "src")) == ["src"]
    assert rewritten_trees(("ruff", "format", "--diff", "src")) == []
    assert rewritten_trees(("biome", "check", "--write", "format")) == ["format"]


@pytest.mark.parametrize(
    "command",
    [
        "pip install --target src requests",
        "pip install -q --target=src requests",
        "tsc --outDir src",
        "python3 -m build --outdir src",
        "cargo build --target-dir src",
        "make install DESTDIR=/tmp --prefix src",
        "pytest --rootdir src",
    ],
)
def test_an_output_folder_asks_under_an_edit_rule(command: str, work: Path) -> None:
    """Found: ``pip install --target src requests`` wrote into ``src`` unasked in bypass mode
    with ``Edit(./src/**)`` denied; a long option naming a folder for output counts."""
    decided = decide(command, work, mode=PermissionMode.BYPASS, deny={"Edit(./src/**)"})
    assert decided.behavior is PermissionBehavior.DENY, decided.reason
    assert decided.rule == "Edit(./src/**)"


@pytest.mark.parametrize(
    "command", ["pip install --target vendor requests", "tsc --outDir dist", "pytest -q tests"]
)
def test_an_output_folder_elsewhere_runs(command: str, work: Path) -> None:
    decided = decide(command, work, mode=PermissionMode.BYPASS, deny={"Edit(./src/**)"})
    assert decided.behavior is PermissionBehavior.ALLOW, decided.reason
