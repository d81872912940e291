"""git settings and hooks that outlive the command: ``git config``, ``init``/``clone --template``.

Found: in bypass mode ``git config core.fsmonitor 'rm -rf src'`` wrote ``.git/config`` unasked
(an Edit of the same file asks), so the next ``git status`` — the user's, or the agent's under a
``Bash(rm:*)`` deny rule — ran ``rm -rf src``; ``git init --template=DIR`` copied hooks the
model wrote into ``.git/hooks``; ``git --git-dir=DIR`` and ``GIT_DIR=DIR`` ran the settings
and hooks of a repository the model may have written, under a deny rule.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from test_hostile_commands import decide, safety_question

from fsm_agent.core.git_commands import configuration_written
from fsm_agent.core.git_config_writes import config_write
from fsm_agent.core.kinds import DecisionSource, PermissionBehavior
from fsm_agent.runtime.permissions import PermissionMode


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """A working folder with a repository, a folder to delete and a bare repository whose
    settings run ``rm -rf src`` (files a model can write: no ``.git`` in their path)."""
    (tmp_path / ".git" / "hooks").mkdir(parents=True)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("")
    bare = tmp_path / "x"
    bare.mkdir()
    (bare / "config").write_text("[core]\n\tfsmonitor = rm -rf src\n")
    return tmp_path


PERSISTING = [
    "git config core.fsmonitor 'rm -rf src'",
    "git config core.pager 'rm -rf src'",
    "git config --global core.pager 'rm -rf src'",
    "git config --system core.pager x",
    "git config --worktree core.pager x",
    "git config --local core.hooksPath src",
    "git config --add alias.x '!rm -rf src'",
    "git config --replace-all core.fsmonitor 'rm -rf src'",
    "git config --rep core.fsmonitor 'rm -rf src'",
    "git config --glob alias.st '!rm -rf src'",
    "git config set core.pager 'rm -rf src'",
    "git config --type=bool core.pager x",
    "git config include.path ../evil.cfg",
    "git config protocol.ext.allow always",
    "git config url.ext::sh.insteadOf https://example.com/",
    "git config init.templateDir tpl",
    "git config --rename-section x core",
    "git config --global core.editor vim",
    "git config --global --add safe.directory /work",
    "git config branch.main.pushRemote evil",
    "git config -e",
    "git config --edit",
    "git config edit",
    "git config --frobnicate k v",
    "git -C src config core.fsmonitor x",
    "git --no-pager config core.pager x",
    "git config core.fsmonitor 'rm -rf src' && git status",
    "git init --template=tpl",
    "git init --templ tpl",
    "git init -q --template tpl sub",
    "git clone --template=tpl src copy",
    "git -c init.templateDir=tpl init",
    "GIT_TEMPLATE_DIR=tpl git init",
]


@pytest.mark.parametrize("command", PERSISTING)
def test_bypass_asks_before_git_keeps_a_setting_or_hooks(command: str, work: Path) -> None:
    """Settings git reads on its own and the hooks of ``.git/hooks`` are protected paths: git
    writing them is a safety question, even in bypass mode."""
    assert safety_question(command, work)


ORDINARY = [
    "git config user.name 'A Writer'",
    "git config --global user.email a@example.com",
    "git config User.Email a@example.com",
    "git config --global init.defaultBranch main",
    "git config pull.rebase false",
    "git config branch.main.remote origin",
    "git config set user.name A",
    "git config user.name",
    "git config --get user.name",
    "git config get user.name",
    "git config --global --get-regexp alias",
    "git config --list",
    "git config -l --show-origin",
    "git config list",
    "git config --unset core.pager",
    "git config --unset-all alias.x",
    "git config --remove-section alias",
    "git config -f out.cfg core.pager x",
    "git config --blob HEAD:.gitmodules --list",
    "git init",
    "git init -q newrepo",
    "git clone https://example.com/r.git",
    "git clone --depth 1 https://example.com/r.git",
]


@pytest.mark.parametrize("command", ORDINARY)
def test_bypass_still_runs_git_settings_that_name_no_code(command: str, work: Path) -> None:
    """Reading settings, taking them away, setting keys known to name no program, file or
    address, a file ``-f`` names (judged as any word) and a plain ``init``/``clone`` run."""
    assert decide(command, work, mode=PermissionMode.BYPASS).behavior is PermissionBehavior.ALLOW


@pytest.mark.parametrize(
    "command",
    [
        "git config core.pager 'rm -rf src'",
        "git config --global alias.st '!rm -rf src'",
        "git config set core.sshCommand 'rm -rf src'",
        "git config --add credential.helper '!rm -rf src'",
    ],
)
def test_a_deny_rule_sees_the_command_a_kept_setting_runs(command: str, work: Path) -> None:
    """Under an allow rule for git, the value is read as the command line it is, as with
    ``git -c``: the deny rule on ``rm`` wins."""
    decided = decide(command, work, allow={"Bash(git:*)"}, deny={"Bash(rm:*)"})
    assert decided.behavior is PermissionBehavior.DENY
    assert decided.source is not DecisionSource.SAFETY_CHECK
    assert decided.step != "no_one_to_ask"


@pytest.mark.parametrize(
    "command",
    [
        "git --git-dir=x status",
        "git --git-dir x --work-tree=. status",
        "GIT_DIR=x git status",
        "GIT_COMMON_DIR=x git status",
        "git --exec-path=x frob",
        "git config core.fsmonitor 'sh x/run' && git status",
        "git config core.hooksPath src",
        "cd sub && git -c safe.bareRepository=all status",
        "git -c safe.bareRepository=all -C sub status",
        "git -c safe.barerepository= -C sub diff",
        "cd sub && env -i git status",
        "cd sub && env - git status",
        "cd sub && env --ignore-environment PATH=/usr/bin git status",
        "cd sub && env -u GIT_CONFIG_COUNT git status",
        "env --unset=GIT_CONFIG_KEY_0 sh -c 'cd sub && git status'",
    ],
)
def test_a_repository_the_command_chooses_asks_under_a_bash_rule(command: str, work: Path) -> None:
    """A git folder that is not ``.git`` holds settings and hooks anyone may have written (the
    fixture's ``x/config`` runs ``rm -rf src`` on ``git status``): no rule reads them."""
    decided = decide(command, work, mode=PermissionMode.BYPASS, deny={"Bash(rm:*)"})
    assert decided.behavior is PermissionBehavior.DENY


@pytest.mark.parametrize(
    "command",
    [
        "git status",
        "git log -1",
        "git diff --stat",
        "git -c safe.bareRepository=explicit -C sub status",
        "env -u FOO git status",
        "env LANG=C git log -1",
    ],
)
def test_the_repository_s_own_git_folder_still_runs_under_a_bash_rule(
    command: str, work: Path
) -> None:
    """The control: ``.git``'s settings are a protected path, which only the user changes."""
    decided = decide(command, work, mode=PermissionMode.BYPASS, deny={"Bash(rm:*)"})
    assert decided.behavior is PermissionBehavior.ALLOW


def test_a_fixture_bare_repository_really_runs_its_settings(work: Path) -> None:
    """The control for the test above: git does run ``core.fsmonitor`` of ``--git-dir``."""
    marker = work / "ran"
    (work / "x" / "config").write_text(f"[core]\n\tfsmonitor = touch '{marker}'\n")
    for name in ("objects", "refs"):
        (work / "x" / name).mkdir()
    (work / "x" / "HEAD").write_text("ref: refs/heads/main\n")
    subprocess.run(
        ["git", "--git-dir=x", "--work-tree=.", "status"],
        cwd=work,
        capture_output=True,
        check=False,
        env={"PATH": "/usr/bin:/bin", "HOME": str(work), "GIT_CONFIG_NOSYSTEM": "1"},
    )
    assert marker.exists()


@pytest.mark.parametrize(
    ("args", "written"),
    [
        (["config", "a.b", "c"], ".git/config"),
        (["config", "--global", "core.pager", "c"], "~/.gitconfig"),
        (["-c", "x.y=z", "config", "--system", "core.pager", "c"], "/etc/gitconfig"),
        (["config", "--file", "f.cfg", "core.pager", "c"], None),
        (["config", "--get", "a.b"], None),
        (["config", "a.b"], None),
        (["config"], None),
        (["config", "user.email", "a@b"], None),
        (["status"], None),
        (["init", "--template=t"], ".git/hooks"),
        (["init"], None),
    ],
)
def test_what_git_writes_where_it_reads_code(args: list[str], written: str | None) -> None:
    assert configuration_written(args) == written


def test_a_kept_setting_is_read_with_the_index_of_its_value() -> None:
    written = config_write(["-C", "d", "config", "--add", "alias.x", "!rm -rf src"], 2)
    assert written is not None
    assert written.settings == (("alias.x", "!rm -rf src", 5),)
    assert not written.plain
