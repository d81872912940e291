"""Writes that reach a whole tree: ``rm -r``, ``chmod -R``, and what ``cp -r``, ``mv`` and
``rsync`` carry along ask, even in ``bypassPermissions``, when that tree holds a protected path
(SPEC §9.3 step 1g); ``acceptEdits`` asked for most of them already."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_hostile_commands import decide

from fsm_agent.core.kinds import DecisionSource, PermissionBehavior
from fsm_agent.runtime.permissions import PermissionMode
from fsm_agent.toolbox import paths

# found: each ran in bypass mode without a question, and each writes a protected path
REACH_PROTECTED = [
    "rm -rf .",
    "rm -r -f .",
    "rm --recursive --force .",
    "rm -rf template",
    "sudo rm -rf .",
    "chmod -R +x .",
    "chmod --recursive 777 .",
    "chown -R nobody template",
    "chgrp -R staff .",
    "cp -r template/. .",
    "cp -a template/. sub",
    "cp -R template ~",
    "cp -r -t sub template",
    "cp --target-directory=sub -r template",
    "mv template sub",
    "mv -t sub template",
    "rsync -a template/ sub",
    "rsync -av --delete src/ .",
    "rm -rf ..",
    "cd src && rm -rf ..",
]

RUN_IN_BYPASS = [
    "rm -rf build",
    "rm -rf build src/sub",
    "chmod -R +x src",
    "cp -r src sub",
    "cp -r src/. .",
    "cp -r src template",  # the target holds one: cp writes only what src holds
    "mv src sub",
    "mv build/out.o src",
    "rsync -a src/ template",
    "rsync -avt src dst",  # rsync's -t keeps times; it names no target
    "rm -f template/x",  # not recursive
    "chmod +x template",
    "cp template/x y",
]


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """A repository with a template holding a .bashrc, a build folder and sources."""
    work = tmp_path / "work"
    (work / ".git" / "hooks").mkdir(parents=True)
    (work / "template").mkdir()
    (work / "template" / ".bashrc").write_text("")
    (work / "build").mkdir()
    (work / "build" / "out.o").write_text("")
    (work / "src" / "sub").mkdir(parents=True)
    (work / "src" / "a.py").write_text("")
    (work / "sub").mkdir()
    return work


@pytest.mark.parametrize("command", REACH_PROTECTED)
def test_a_write_reaching_a_tree_that_holds_a_protected_path_asks_in_bypass(
    command: str, work: Path
) -> None:
    decided = decide(command, work, mode=PermissionMode.BYPASS)
    assert decided.behavior is PermissionBehavior.DENY, decided.reason
    assert decided.source is DecisionSource.NO_ONE_TO_ASK
    assert "may change the protected path" in decided.reason


@pytest.mark.parametrize("mode", [PermissionMode.DEFAULT, PermissionMode.ACCEPT_EDITS])
@pytest.mark.parametrize("command", REACH_PROTECTED)
def test_default_and_accept_edits_ask_as_before(
    command: str, mode: PermissionMode, work: Path
) -> None:
    decided = decide(command, work, mode=mode)
    assert decided.behavior is PermissionBehavior.DENY
    assert decided.step == "no_one_to_ask"


@pytest.mark.parametrize("command", ["rm -rf .", "mv template sub"])
def test_plan_mode_in_a_bypass_session_asks_too(command: str, work: Path) -> None:
    decided = decide(command, work, mode=PermissionMode.PLAN, bypass_available=True)
    assert decided.step == "no_one_to_ask"


def test_a_deny_rule_still_decides_first(work: Path) -> None:
    decided = decide("rm -rf .", work, mode=PermissionMode.BYPASS, deny={"Bash(rm:*)"})
    assert decided.source is DecisionSource.RULE


@pytest.mark.parametrize("command", RUN_IN_BYPASS)
def test_writes_reaching_no_protected_path_run_in_bypass(command: str, work: Path) -> None:
    decided = decide(command, work, mode=PermissionMode.BYPASS)
    assert decided.behavior is PermissionBehavior.ALLOW, decided.reason


def test_a_big_folder_inside_counts_only_when_it_is_not_build_output(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Too big to search: inside the working folder it is build output (``rm -rf
    node_modules`` runs); the working folder itself, or one outside, asks."""
    monkeypatch.setattr(paths, "MAX_TREE_ENTRIES", 3)
    for index in range(5):
        (work / "build" / f"f{index}").touch()
    assert decide("rm -rf build", work, mode=PermissionMode.BYPASS).behavior.value == "allow"
    outside = work.parent / "outside"
    (outside / "x").mkdir(parents=True)
    for index in range(5):
        (outside / f"f{index}").touch()
    asked = decide(f"rm -rf {outside}", work, mode=PermissionMode.BYPASS)
    assert asked.behavior is PermissionBehavior.DENY
