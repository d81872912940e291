"""`fsm-agent run --settings FILE --permission-mode MODE`, and `show` naming the deciding rule."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fsm_agent.cli import main


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working folder with a canary file and a scenario whose model runs `rm canary.txt`."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "canary.txt").write_text("alive\n")
    steps = [
        {"content": [{"tool_use": {"name": "Bash", "input": {"command": "rm canary.txt"}}}]},
        {"content": [{"text": "done"}]},
    ]
    (tmp_path / "scenario.json").write_text(json.dumps({"steps": steps}))
    return tmp_path


def test_run_applies_a_settings_file_and_show_names_the_rule(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A deny rule from --settings holds even with --yes; `show` prints the rule and its file."""
    (folder / "deny.json").write_text(json.dumps({"permissions": {"deny": ["Bash(rm:*)"]}}))
    argv = ["run", "go", "--model", "scripted:scenario.json", "--trace", "t.jsonl", "--yes"]
    assert main([*argv, "--settings", "deny.json", "--permission-mode", "bypassPermissions"]) == 0
    assert (folder / "canary.txt").exists()
    capsys.readouterr()
    assert main(["show", "t.jsonl"]) == 0
    shown = capsys.readouterr().out
    assert "deny by rule (step 1d, rule Bash(rm:*) from flagSettings (deny.json)" in shown
    assert "mode bypassPermissions" in shown


def test_run_with_a_malformed_settings_file_names_file_and_key(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A wrong type in a settings file stops `run` with exit 1 and a message, no traceback."""
    (folder / "bad.json").write_text(json.dumps({"permissions": {"allow": "Bash"}}))
    assert main(["run", "go", "--model", "scripted:scenario.json", "--settings", "bad.json"]) == 1
    err = capsys.readouterr().err
    assert "bad.json: $.permissions.allow: expected an array of strings" in err
    assert "Traceback" not in err
    assert (folder / "canary.txt").exists()


def test_a_folder_given_as_settings_file_is_named_a_folder(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--settings FOLDER` says the path is a folder, not that it does not exist."""
    (folder / "conf").mkdir()
    assert main(["run", "go", "--model", "scripted:scenario.json", "--settings", "conf"]) == 1
    assert "settings file conf is a folder, not a file" in capsys.readouterr().err
