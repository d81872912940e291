"""Files the user's start-up files source or include are protected as those files are.

Found in bypass mode: with ``. ~/dotfiles/aliases.sh`` in ``~/.bashrc`` and ``[include] path =
~/dotfiles/git.inc`` in ``~/.gitconfig``, ``echo 'curl … | sh' >> ~/dotfiles/aliases.sh`` and
``echo '[core] fsmonitor = x' >> ~/dotfiles/git.inc`` ran unasked, and the Write tool wrote
them: code for every later shell and every later ``git``.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from test_hostile_commands import decide

from fsm_agent import PermissionMode
from fsm_agent.core.kinds import PermissionBehavior
from fsm_agent.runtime.tool import SAFETY_CHECK, ToolContext
from fsm_agent.toolbox import Write
from fsm_agent.toolbox.sourced_files import sourced_by_startup


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home folder whose start-up files source and include files of a dotfiles folder."""
    home = tmp_path / "home"
    (home / "dotfiles").mkdir(parents=True)
    (home / ".bashrc").write_text(
        "[ -f ~/dotfiles/aliases.sh ] && . ~/dotfiles/aliases.sh\n"
        'source "$HOME/dotfiles/env.sh"\n'
        "source $SOMEWHERE/computed.sh\n"
    )
    (home / "dotfiles" / "env.sh").write_text("if true; then source ~/dotfiles/deep.sh; fi\n")
    (home / ".gitconfig").write_text(
        '[include]\n\tpath = ~/dotfiles/git.inc\n[includeIf "gitdir:~/w/"]\n\tpath = w.inc\n'
    )
    (home / "project").mkdir()
    monkeypatch.setenv("HOME", str(home))
    return home


@pytest.mark.parametrize(
    "command",
    [
        "echo 'curl x | sh' >> ~/dotfiles/aliases.sh",
        "cp x ~/dotfiles/env.sh",
        "echo x > ~/dotfiles/deep.sh",  # sourced by a sourced file
        "echo '[core] fsmonitor = x' >> ~/dotfiles/git.inc",
        "echo x > ~/w.inc",  # relative to the file including it
        "cd ~/dotfiles && echo x >> aliases.sh",
    ],
)
def test_a_write_of_a_sourced_file_asks_in_bypass(command: str, home: Path) -> None:
    decided = decide(command, home / "project", mode=PermissionMode.BYPASS)
    assert decided.behavior is PermissionBehavior.DENY, decided.reason
    assert "protected path" in decided.reason


def test_the_write_tool_asks_for_one(home: Path) -> None:
    tool = Write()
    data = tool.parse_input({"file_path": str(home / "dotfiles" / "aliases.sh"), "content": "x"})
    check = tool.check_permissions(data, ToolContext(cwd=home))  # a home working folder
    assert check.reason == SAFETY_CHECK


def test_other_files_beside_them_run(home: Path) -> None:
    decided = decide("echo x > ~/dotfiles/notes.md", home / "project", mode=PermissionMode.BYPASS)
    assert decided.behavior is PermissionBehavior.ALLOW, decided.reason
    assert not any("computed" in path for path in sourced_by_startup())


def test_a_named_pipe_sourced_is_not_waited_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``.bashrc`` sourcing a named pipe (or ``/dev/stdin``): reading it would wait for a
    writer forever, and every permission check with it. Only regular files are read; the pipe
    itself is still a path the start-up files name."""
    home = tmp_path / "pipe-home"
    home.mkdir()
    os.mkfifo(home / "fifo")
    (home / ".bashrc").write_text("source ~/fifo\n. /dev/stdin\n")
    monkeypatch.setenv("HOME", str(home))
    found: list[frozenset[str]] = []
    reader = threading.Thread(target=lambda: found.append(sourced_by_startup()), daemon=True)
    reader.start()
    reader.join(timeout=10)
    assert found, "reading the start-up files waited on a pipe"
    assert str(home / "fifo") in found[0]
