"""A command run in another folder by its wrapper, and a tree that holds a start-up place.

Found in bypass mode, where only protected paths still ask: ``cd .. && rm -rf project`` asked
(the project holds ``.git``), but ``env -C .. rm -rf project``, ``sudo -D .. rm -rf project``
and ``uv --directory .. run rm -rf project`` ran unasked: the folder a wrapper runs its command
in was not one the command's relative words were judged from. And ``rm ~/.config/git/config``
asked while ``rm -rf ~/.config`` and ``chmod -R 777 ~/.config``, which delete or open the same
file, did not: a tree was searched for protected names, not for start-up places.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from test_hostile_commands import safety_question

from fsm_agent.core.shell_commands import analyse_command
from fsm_agent.toolbox.paths import entered_folders, expand_home, holds_protected


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project (a repository, a virtual environment, a source file) beside a home folder
    holding git's XDG settings and an AWS profile; a folder of dotfiles inside the project."""
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    site = project / ".venv" / "lib" / "python3.12" / "site-packages"
    site.mkdir(parents=True)
    (site / "editable.pth").write_text("/src")
    (project / ".venv" / "bin").mkdir()
    (project / ".venv" / "bin" / "activate").write_text("")
    (project / "src").mkdir()
    (project / "src" / "a.py").write_text("")
    (project / "build").mkdir()
    (project / "dotfiles" / ".config" / "git").mkdir(parents=True)
    (project / "dotfiles" / ".config" / "git" / "config").write_text("")
    home = tmp_path / "home"
    (home / ".config" / "git").mkdir(parents=True)
    (home / ".config" / "git" / "config").write_text("")
    (home / ".aws").mkdir()
    (home / ".aws" / "config").write_text("")
    monkeypatch.setenv("HOME", str(home))
    return project


ASKING = [
    # The folder a wrapper runs its command in (the project holds .git).
    "env -C .. rm -rf project",
    "env --chdir=.. rm -rf project",
    "env --chdir .. chmod -R 777 project",
    "sudo -D .. rm -rf project",
    "sudo --chdir=.. rm -rf project",
    "unshare --wd=.. rm -rf project",
    "nsenter --wd=.. rm -rf project",
    "chroot .. rm -rf project",
    "uv --directory .. run rm -rf project",
    "uv run --directory .. rm -rf project",
    "poetry -C .. run rm -rf project",
    "pnpm --dir .. exec rm -rf project",
    "yarn --cwd .. exec rm -rf project",
    "conda run --cwd .. rm -rf project",
    "env -C ~ rm -rf .config",
    'env -C "$HOME" rm -rf .config',
    "env -C src sh -c 'cd .. && rm -rf .git'",
    "env -C ~ sh -c 'echo x >> .config/git/config'",
    "cd $HOME && rm -rf .config",
    # A tree that holds a start-up place.
    "rm -rf ~/.config",
    "rm -rf ~/.config/git",
    "chmod -R 777 ~/.config",
    "rm -rf ~/.aws",
    "chmod -R a+w dotfiles",
    "rm -r dotfiles",
]


@pytest.mark.parametrize("command", ASKING)
def test_bypass_asks(command: str, work: Path) -> None:
    assert safety_question(command, work)


ORDINARY = [
    "env -C src rm -rf ../build",
    "uv --directory src run pytest",
    "poetry -C src run pytest -q",
    "rm -rf build",
    # A virtual environment's own start-up files go with it: a build's output.
    "rm -rf .venv",
    "chmod -R u+w .venv",
]


@pytest.mark.parametrize("command", ORDINARY)
def test_bypass_still_runs(command: str, work: Path) -> None:
    assert not safety_question(command, work)


def test_the_folders_wrappers_enter_are_recorded_where_they_stand() -> None:
    analysis = analyse_command("ls; env -C a sudo -D b rm x; uv --directory c run make")
    # Parts: ls, env, sudo, rm, uv, make.
    assert analysis.folders == ((2, "a"), (3, "b"), (5, "c"))


def test_a_login_shell_starts_in_its_users_home() -> None:
    for command in ("sudo -i rm -rf x", "sudo -u root --login rm -rf x", "su - -c 'rm -rf x'"):
        assert analyse_command(command).folders[0][1] == "~root", command
    assert analyse_command("su -l alice -c 'rm x'").folders[0][1] == "~alice"
    assert analyse_command("sudo rm -rf x").folders == ()


def test_a_wrappers_folder_is_taken_from_each_folder_before_it(tmp_path: Path) -> None:
    entered = entered_folders(analyse_command("cd a && env -C b rm x"), tmp_path)
    assert entered == [tmp_path, tmp_path / "a", tmp_path / "b", tmp_path / "a" / "b"]
    # A folder the shell computes: each path its text spells, $HOME the home folder.
    computed = entered_folders(analyse_command('env -C "$HOME/.config" rm -rf git'), tmp_path)
    assert expand_home("~/.config") in computed
    assert entered_folders(analyse_command("sudo -i true"), tmp_path)[-1] == expand_home("~root")


def test_a_tree_holds_a_start_up_place_but_not_a_virtual_environments(work: Path) -> None:
    assert holds_protected(Path(os.environ["HOME"]) / ".config")
    assert holds_protected(work / "dotfiles")
    assert not holds_protected(work / ".venv")
    assert not holds_protected(work / "src")
