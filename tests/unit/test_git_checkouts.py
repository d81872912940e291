"""Files git checks out land under names the repository gives them.

Found in bypass mode, where only protected paths still ask, with no ``~/.config/git`` yet (git's
settings in ``~/.gitconfig``, as most have): ``git clone URL ~/.config/git`` asked, but ``git
worktree add ~/.config/git``, ``git --work-tree=~/.config/git checkout -f``,
``GIT_WORK_TREE=~/.config/git git checkout -f``, ``git -C ~/.config/git pull REPO`` and ``git
submodule add URL ~/.config/git`` wrote the repository's ``config`` there unasked: git's
settings, whose ``core.fsmonitor`` runs at the next ``git status``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_hostile_commands import safety_question

from fsm_agent.toolbox.git_checkouts import checkout_folder


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working folder beside a home folder with ``~/.config`` and no ``~/.config/git``."""
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (tmp_path / "home" / ".config").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return project


ASKING = [
    "git clone https://example.com/dotfiles ~/.config/git",
    "git worktree add ~/.config/git",
    "git worktree add -b side ~/.config/git main",
    "git --work-tree=~/.config/git checkout -f",
    "git --work-tree ~/.config/git checkout -- .",
    "GIT_WORK_TREE=~/.config/git git checkout -f",
    "env GIT_WORK_TREE=$HOME/.config/git git reset --hard",
    "git -C ~/.config/git pull https://example.com/dotfiles",
    "cd ~/.config/git && git pull https://example.com/dotfiles",
    "git -C ~ submodule add https://example.com/dotfiles .config/git",
    "git submodule add https://example.com/x ~/.config/git",
    "git -C ~/.config/git stash pop",
]


@pytest.mark.parametrize("command", ASKING)
def test_bypass_asks_before_git_checks_out_into_a_place(command: str, work: Path) -> None:
    assert safety_question(command, work)


ORDINARY = [
    "git clone https://example.com/lib vendor/lib",
    "git worktree add ../side-branch",
    "git checkout -f main",
    "git -C src pull",
    "git --work-tree=build checkout -- .",
    "git submodule add https://example.com/lib vendor/lib",
    "git -C ~/.config/git status",  # reads
    "git log --oneline",
]


@pytest.mark.parametrize("command", ORDINARY)
def test_bypass_still_runs_git_in_ordinary_folders(command: str, work: Path) -> None:
    assert not safety_question(command, work)


def test_the_folder_each_command_checks_out_into(tmp_path: Path) -> None:
    assert checkout_folder(["clone", "https://h/x.git"], tmp_path) == ("x", tmp_path / "x")
    assert checkout_folder(["worktree", "add", "-b", "b", "w"], tmp_path) == ("w", tmp_path / "w")
    assert checkout_folder(["-C", "a", "checkout", "."], tmp_path) == (
        str(tmp_path / "a"),
        tmp_path / "a",
    )
    assert checkout_folder(["checkout", "."], tmp_path, ["GIT_WORK_TREE=t"]) == (
        "t",
        tmp_path / "t",
    )
    assert checkout_folder(["status"], tmp_path) is None
    assert checkout_folder(["worktree", "list"], tmp_path) is None
