"""A tool's permission check that fails asks; a home folder that cannot be found never fails one.

Found: ``echo x > ~nobody0/x; echo evil > .git/hooks/pre-commit`` in bypass mode wrote the hook
unasked. ``Path.expanduser`` raises for the home of a user that does not exist, the Bash
tool's check raised on the first part before it reached the second, and a check that raised
counted as having no opinion, which bypass mode allows. Read, Write, Edit, Glob and Grep
answered such a path with ``RuntimeError: Could not determine home directory``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import pytest
from test_hostile_commands import safety_question

from fsm_agent import Agent, LoopConfig, PermissionMode, PermissionPolicy
from fsm_agent.core.messages import ToolResultBlock
from fsm_agent.runtime.permissions import PermissionRequest
from fsm_agent.runtime.tool import PermissionCheck, Tool, ToolContext, ToolOutput
from fsm_agent.testing.scenario import ScriptedModel, parse_scenario
from fsm_agent.toolbox import default_tools
from fsm_agent.toolbox.paths import expand_home

NO_SUCH_HOME = "~nobody0no0such0user"


def _run(cwd: Path, calls: list[dict[str, Any]], tools: list[Any]) -> tuple[Any, list[Any]]:
    """Run the calls in one assistant turn in bypass mode, every question answered no."""
    steps = [{"content": [{"tool_use": call} for call in calls]}, {"content": [{"text": "ok"}]}]
    asked: list[PermissionRequest] = []

    def ask(request: PermissionRequest) -> bool:
        asked.append(request)
        return False

    agent = Agent(
        model=ScriptedModel(parse_scenario({"steps": steps}), name="scripted"),
        tools=tools,
        config=LoopConfig(model="scripted"),
        permissions=PermissionPolicy(mode=PermissionMode.BYPASS, ask=ask),
        trace=False,
        cwd=cwd,
        store=False,
    )
    return agent.run_sync("go"), asked


def _results(result: Any) -> list[str]:
    return [
        str(block.content)
        for message in result.messages
        for block in getattr(message, "content", ())
        if isinstance(block, ToolResultBlock)
    ]


def test_a_missing_home_leaves_the_word_as_the_shell_does() -> None:
    assert expand_home(f"{NO_SUCH_HOME}/x") == Path(f"{NO_SUCH_HOME}/x")
    assert expand_home("~/x") == Path.home() / "x"


def test_a_bash_check_that_would_have_failed_still_asks_for_a_protected_path(
    tmp_path: Path,
) -> None:
    (tmp_path / ".git" / "hooks").mkdir(parents=True)
    command = f"echo x > {NO_SUCH_HOME}/x; echo evil > .git/hooks/pre-commit"
    calls = [{"name": "Bash", "input": {"command": command}}]
    result, asked = _run(tmp_path, calls, default_tools())
    assert [request.reason for request in asked] == ["safety_check"]
    assert not (tmp_path / ".git" / "hooks" / "pre-commit").exists()
    assert result.terminal == "completed"


LONG = "a" * 300
"""A name longer than a file system allows: ``Path.is_dir`` raises on it."""


@pytest.mark.parametrize(
    "command",
    [
        f"cp x {LONG}",
        f"rm -rf {LONG}",
        f"cp -r {LONG}/. backup/",
        f"find {LONG} -name '*.pyc' -delete",
        f"cd {LONG} && git status",
        "wget 'http://[bad/x.tgz'",  # a URL Python cannot split
    ],
)
def test_an_odd_word_makes_no_bash_check_raise(command: str, tmp_path: Path) -> None:
    """Found: each raised (``File name too long``, ``Invalid IPv6 URL``), so bypass mode asked
    a needless safety question for an ordinary command."""
    assert not safety_question(command, tmp_path)


def test_file_tools_take_a_missing_home_as_a_plain_name(tmp_path: Path) -> None:
    path = f"{NO_SUCH_HOME}/x"
    calls = [
        {"name": "Read", "input": {"file_path": path}},
        {"name": "Glob", "input": {"pattern": "*", "path": NO_SUCH_HOME}},
        {"name": "Grep", "input": {"pattern": "x", "path": NO_SUCH_HOME}},
    ]
    result, _asked = _run(tmp_path, calls, default_tools())
    texts = _results(result)
    assert len(texts) == 3
    assert not any("RuntimeError" in text for text in texts)
    assert "does not exist" in texts[0]


@attrs.frozen
class _Input:
    text: str


class _Fragile(Tool[_Input]):
    """A tool whose own permission check raises."""

    name = "Fragile"
    description = "checks badly"
    input_type = _Input

    def check_permissions(self, data: _Input, ctx: ToolContext) -> PermissionCheck:
        raise ValueError("the check broke")

    async def call(self, data: _Input, ctx: ToolContext, progress: Any) -> ToolOutput:
        return ToolOutput(content="ran")


def test_a_check_that_raises_asks_in_bypass_mode_and_names_the_failure(tmp_path: Path) -> None:
    result, asked = _run(tmp_path, [{"name": "Fragile", "input": {"text": "x"}}], [_Fragile()])
    (request,) = asked
    assert request.reason == "safety_check"
    assert "ValueError: the check broke" in request.message
    assert "ran" not in _results(result)
