"""Shell commands that would write a protected path ask even in bypassPermissions mode.

An Edit of ``.bashrc`` or of ``.git/config`` gets a bypass-immune safety check (SPEC §9.3 step
1g); a Bash command that writes the same file through a redirect, ``cp``, ``tee``, ``dd`` or
``sed -i`` is just as dangerous, so it gets the same check. Each command runs through a real
``Agent`` in bypass mode with nobody to ask; the file system shows what ran.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from fsm_agent.core.config import LoopConfig
from fsm_agent.core.messages import ToolResultBlock, tool_results
from fsm_agent.runtime.agent import Agent
from fsm_agent.runtime.permissions import PermissionMode, PermissionPolicy
from fsm_agent.testing.scenario import ScriptedModel, parse_scenario
from fsm_agent.toolbox import Bash

PROTECTED_WRITES = [
    "echo evil > .bashrc",
    "echo evil >> .zshenv",
    "cp payload .git/hooks/pre-commit",
    "tee -a .profile < payload",
    "dd if=payload of=.bash_login status=none",
    "sed -i s/start/evil/ .git/config",
    "mkdir -p .claude && echo '{}' > .claude/settings.json",
    "cat payload > sub/.vscode/tasks.json",
    "ln -sf payload .gitmodules",
    "ls; > .bashrc",
    "echo 'alias ls=\"rm -rf\"' >> .bash_aliases",
    "printf evil > .cshrc",
    "echo evil &\\\n> .profile",
    # commands the analysis stops reading early: the name in the text is enough
    "echo evil > .bashrc; echo \x01",
    "cp >/dev/null payload .git/hooks/pre-commit",
    "echo evil > .profile; echo " + "$(" * 120 + "true" + ")" * 120,
]


def _workspace(root: Path) -> Path:
    work = root / "work"
    (work / ".git" / "hooks").mkdir(parents=True)
    (work / ".git" / "config").write_text("start\n")
    (work / "sub" / ".vscode").mkdir(parents=True)
    (work / "payload").write_text("evil\n")
    return work


def _snapshot(work: Path) -> dict[str, str]:
    return {
        str(path.relative_to(work)): path.read_text() if path.is_file() else "<dir>"
        for path in sorted(work.rglob("*"))
    }


def _run_bash(work: Path, command: str) -> ToolResultBlock:
    steps = [
        {"content": [{"tool_use": {"name": "Bash", "input": {"command": command}}}]},
        {"content": [{"text": "done"}]},
    ]
    agent = Agent(
        model=ScriptedModel(parse_scenario({"steps": steps}), name="scripted"),
        tools=[Bash()],
        cwd=work,
        permissions=PermissionPolicy(mode=PermissionMode.BYPASS),
        config=LoopConfig(model="scripted"),
        trace=False,
    )
    result = asyncio.run(agent.run("Set up my shell."))
    (block,) = [b for message in result.messages for b in tool_results(message)]
    return block


@pytest.mark.parametrize("command", PROTECTED_WRITES)
def test_a_write_to_a_protected_path_asks_even_in_bypass_mode(command: str, tmp_path: Path) -> None:
    """The call is not granted (nobody to ask) and nothing in the folder changed."""
    work = _workspace(tmp_path)
    before = _snapshot(work)
    block = _run_bash(work, command)
    assert block.is_error
    assert "was not granted" in str(block.content)
    assert _snapshot(work) == before


def test_bypass_mode_still_runs_a_write_elsewhere(tmp_path: Path) -> None:
    """The safety check is about protected paths only: other writes run in bypass mode."""
    work = _workspace(tmp_path)
    block = _run_bash(work, "echo fine > notes.txt")
    assert not block.is_error
    assert (work / "notes.txt").read_text() == "fine\n"
