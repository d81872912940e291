"""A path through a process's own working folder or root under ``/proc`` asks in bypass mode.

Found in bypass mode with an ``Agent`` whose folder is not this process's: ``rm -rf
/proc/self/cwd/../.config`` deleted git's settings unasked, and with ``Edit(./src/**)``
denied, ``rm -rf /proc/self/cwd/src`` deleted the folder the rule guards. The checks read
``/proc/self/cwd`` as this process's folder; the command's shell reads it as its own. So with
a folder the command holds open: ``exec 3<~; rm -rf /dev/fd/3/.config`` and ``rm -rf
/dev/stdin/.config < ~`` deleted git's settings unasked, and with ``Read(./.env)`` denied
``cat /dev/fd/3/.env 3<.`` printed it; so did ``cd /dev/fd/3 3<~ && rm -rf .config``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_hostile_commands import decide

from fsm_agent import PermissionMode
from fsm_agent.core.kinds import DecisionSource, PermissionBehavior
from fsm_agent.toolbox.process_views import through_process_view


@pytest.fixture
def work(home_project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project in a home folder holding git's settings, with a link to this process's
    folder; this process is elsewhere."""
    project = home_project
    (project / "here").symlink_to("/proc/self/cwd")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    return project


ASKING = [
    "rm -rf /proc/self/cwd/../.config",
    "rm -rf /proc/thread-self/cwd/../.config",
    "rm -rf /proc/self/task/1/cwd/../.config",
    "rm -rf /dev/fd/../cwd/../.config",  # /dev/fd is /proc/self/fd
    "cd /proc/self/cwd/.. && rm -rf .config",
    "rm -rf here/../.config",  # a link made earlier
    "chmod -R 777 /proc/self/root/../proc/self/cwd/..",
    "echo x >> /proc/self/cwd/../.profile",
    # on through a folder the command holds open (found)
    "exec 3<~; rm -rf /dev/fd/3/.config",
    "rm -rf /proc/self/fd/3/.config 3<~",
    "rm -rf /dev/stdin/.config < ~",
    "cd ~ && exec 3<. && cd / && rm -rf /proc/thread-self/fd/3/.config",
    "cd /dev/fd/3 3<~ && rm -rf .config",  # entered: cd follows the link
    "exec 3<~; cd /proc/self/fd/3; rm -rf .config",
    "ln -s /dev/fd/3 x; rm -rf x/.config 3<~",  # a link made to one (found)
]


@pytest.mark.parametrize("command", ASKING)
def test_a_path_through_a_process_view_asks_in_bypass(command: str, work: Path) -> None:
    decided = decide(command, work, mode=PermissionMode.BYPASS)
    assert decided.behavior is PermissionBehavior.DENY, decided.reason
    assert decided.source is DecisionSource.NO_ONE_TO_ASK
    assert "may change the protected path" in decided.reason


@pytest.mark.parametrize(
    ("command", "rule"),
    [
        ("rm -rf /proc/self/cwd/src", "Edit(./src/**)"),
        ("cat /proc/self/cwd/src/.env", "Read(./src/.env)"),
        ("cat here/src/.env", "Read(./src/.env)"),
        ("cat /dev/fd/3/src/.env 3<.", "Read(./src/.env)"),
        ("cat /dev/stdin/src/.env < .", "Read(./src/.env)"),
        ("ln -s /dev/fd/3 x; cat x/src/.env 3<.", "Read(./src/.env)"),
    ],
)
def test_a_path_rule_asks_for_a_path_through_a_process_view(
    command: str, rule: str, work: Path
) -> None:
    decided = decide(command, work, mode=PermissionMode.BYPASS, deny={rule})
    assert decided.behavior is PermissionBehavior.DENY
    assert rule in decided.reason


@pytest.mark.parametrize(
    "command",
    [
        "echo x > /dev/stderr",
        "tee /dev/stdout < /dev/null",
        "cat /proc/cpuinfo > cpu.txt",
        "rm -rf src",
    ],
)
def test_other_paths_still_run_in_bypass(command: str, work: Path) -> None:
    decided = decide(command, work, mode=PermissionMode.BYPASS)
    assert decided.behavior is PermissionBehavior.ALLOW, decided.reason


def test_through_process_view(tmp_path: Path) -> None:
    (tmp_path / "here").symlink_to("/proc/self/cwd")
    (tmp_path / "there").symlink_to("here/..")
    (tmp_path / "loop").symlink_to("loop")
    base = str(tmp_path)
    assert through_process_view("/", "proc/self/cwd")
    assert through_process_view("/", "proc/1/root/etc")
    assert through_process_view(base, "here")
    assert through_process_view(base, "there/x")
    assert through_process_view(base, "loop/x")  # where it leads is not known
    assert not through_process_view("/", "proc/self/status")
    assert not through_process_view("/", "dev/stderr")
    assert through_process_view("/", "dev/stdin/x")  # the folder it may have opened
    assert through_process_view("/", "proc/self/fd/3/..")
    assert not through_process_view("/", "proc/self/fd/3")
    assert not through_process_view(base, "x/../y")
    assert not through_process_view("/", "proc/self/cwdx")
