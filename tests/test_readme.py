"""The README stays true: its diagram is current and its test command is what CI runs."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from fsm_agent.runtime.agent import RunResult

ROOT = Path(__file__).resolve().parents[1]


def test_diagram_is_current() -> None:
    """tools/render_diagram.py --check passes (the README diagram matches the tables)."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "render_diagram.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout


def _quick_start_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```bash\n(.+?)\n```", section)


def test_quick_start_has_two_commands() -> None:
    """The quick start gives exactly two commands: the demo and the tests."""
    commands = _quick_start_commands()
    assert len(commands) == 2
    assert "fsm-agent demo" in commands[0]
    assert "pytest" in commands[1]


def test_ci_runs_the_readme_test_command() -> None:
    """.ci/run runs the README's test command verbatim."""
    test_command = _quick_start_commands()[1]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert test_command in ci.splitlines()


def test_the_library_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The README's library example runs as written, with a scripted model in Claude's place."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Using the library", 1)[1]
    code = re.search(r"```python\n(.+?)\n```", section, re.DOTALL)
    assert code is not None
    source = code.group(1)
    claude = 'AnthropicModel(name="claude-sonnet-4-6")'
    assert claude in source
    scripted = (
        "__import__('fsm_agent.testing.scenario', fromlist=['x']).ScriptedModel("
        "__import__('fsm_agent.testing.scenario', fromlist=['x']).parse_scenario("
        "{'steps': [{'content': [{'tool_use': {'name': 'word_count', "
        "'input': {'text': 'a b c'}}}]}, {'content': [{'text': 'It prints hello.'}]}]}))"
    )
    result = _run_readme_block(source, claude, scripted, tmp_path, monkeypatch)
    assert result.terminal == "completed"
    assert result.text == "It prints hello."


def test_the_subagent_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The README's subagent example runs as written, one scripted model answering for the
    parent and its child in turn: the child's answer reaches the parent."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("### Subagents", 1)[1]
    code = re.search(r"```python\n(.+?)\n```", section, re.DOTALL)
    assert code is not None
    source = code.group(1)
    claude = 'AnthropicModel(name="claude-sonnet-4-6")'
    assert claude in source
    scripted = (
        "__import__('fsm_agent.testing.scenario', fromlist=['x']).ScriptedModel("
        "__import__('fsm_agent.testing.scenario', fromlist=['x']).parse_scenario("
        "{'steps': [{'content': [{'tool_use': {'name': 'Task', 'input': {'description': 'find', "
        "'prompt': 'find the retry delay', 'subagent_type': 'explorer'}}}]}, "
        "{'content': [{'text': 'core/config.py, retry_delay_ms'}]}, "
        "{'content': [{'text': 'In core/config.py.'}]}]}))"
    )
    result = _run_readme_block(source, claude, scripted, tmp_path, monkeypatch)
    assert result.terminal == "completed"
    assert result.text == "In core/config.py."
    assert "core/config.py, retry_delay_ms" in str(result.messages)


def _run_readme_block(
    source: str, claude: str, scripted: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> RunResult:
    """Run a README code block in an empty folder with ``scripted`` in place of ``claude``."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "traces").mkdir()
    namespace: dict[str, object] = {}
    exec(compile(source.replace(claude, scripted), "README.md", "exec"), namespace)
    result = namespace["result"]
    assert isinstance(result, RunResult)
    return result
