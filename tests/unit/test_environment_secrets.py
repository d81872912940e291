"""Credentials in the process's environment are secrets (DESIGN §8): a tool runs with that
environment, and one that prints it (``env``, ``printenv``) must not put a token in the trace,
the terminal or anything made from the trace."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fsm_agent.cli import main
from fsm_agent.credentials import ENVIRONMENT_SECRET_MIN, environment_credentials
from fsm_agent.runtime.agent import Agent
from fsm_agent.testing.scenario import ScriptedModel, parse_scenario

TOKEN = "ghp_envtoken0123456789abcdef"
AWS = "aws/secret+KEY0123456789"
DB_PASSWORD = "db-password-0123"


def test_the_credentials_of_an_environment() -> None:
    """Values under a credential's name (whole, and a scheme's token alone) and a URL's
    password in any variable; not a short switch, nor the path of an existing file."""
    environ = {
        "GITHUB_TOKEN": TOKEN,
        "AWS_SECRET_ACCESS_KEY": AWS,
        "MY_API_KEY": "Bearer bearer-token-0123",
        "DATABASE_URL": f"postgres://app:{DB_PASSWORD}@db.example/app",
        "HF_HUB_DISABLE_IMPLICIT_TOKEN": "1",
        "SSH_PASSWORD_AUTH": "disabled",  # 8 characters: kept, as a secret that short is
        "PGPASSWORD": "short",
        "GOOGLE_APPLICATION_CREDENTIALS": __file__,  # where a secret is kept, not the secret
        "HOME": "/home/someone",
        "EDITOR": "vim-with-a-long-name",
    }
    assert set(environment_credentials(environ)) == {
        TOKEN,
        AWS,
        "Bearer bearer-token-0123",
        "bearer-token-0123",
        DB_PASSWORD,
        "disabled",
    }
    assert all(len(value) >= ENVIRONMENT_SECRET_MIN for value in environment_credentials(environ))
    assert environment_credentials({"PASSWORD_FILE": "/no/such/file/anywhere-0123"}) == (
        "/no/such/file/anywhere-0123",
    )
    pem = "-----BEGIN KEY-----\nAAAAbbbbCCCCdddd0123\nEEEEffff4567\n-----END KEY-----\n"
    assert set(environment_credentials({"SSH_PRIVATE_KEY": pem})) == {
        pem.strip(),
        "-----BEGIN KEY-----",
        "AAAAbbbbCCCCdddd0123",
        "EEEEffff4567",
        "-----END KEY-----",
    }
    service = '{"type": "service_account", "private_key_id": "abcdef0123456789"}'
    assert environment_credentials({"GOOGLE_CREDENTIALS_JSON": service}) == (service,)


def _scripted() -> ScriptedModel:
    return ScriptedModel(parse_scenario({"steps": [{"content": [{"text": "hi"}]}]}))


def test_an_agent_takes_its_environment_credentials_unless_told_not_to(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    agent = Agent(model=_scripted(), trace=False, store=False, secrets=[TOKEN])
    assert agent.secrets.count(TOKEN) == 1  # given and found: kept once
    agent = Agent(model=_scripted(), trace=False, store=False)
    assert TOKEN in agent.secrets
    agent = Agent(model=_scripted(), trace=False, store=False, environment_secrets=False)
    assert TOKEN not in agent.secrets


@pytest.fixture
def printing_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working folder, credentials in the environment, and a scenario whose model runs a
    command that prints them, then repeats what it saw."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", AWS)
    monkeypatch.setenv("DATABASE_URL", f"postgres://app:{DB_PASSWORD}@db.example/app")
    command = "env; printenv GITHUB_TOKEN AWS_SECRET_ACCESS_KEY DATABASE_URL"
    steps = [
        {"content": [{"tool_use": {"name": "Bash", "input": {"command": command}}}]},
        {"content": [{"text": f"I saw {TOKEN} and {AWS} and {DB_PASSWORD}"}]},
    ]
    (tmp_path / "scenario.json").write_text(json.dumps({"steps": steps}))
    return tmp_path


def test_a_tool_printing_the_environment_leaks_no_credential(
    printing_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`fsm-agent run`: the trace, the terminal view and `show` (text and HTML) hold none of
    the credentials the tool printed, and the run replays."""
    argv = ["run", "go", "--model", "scripted:scenario.json", "--trace", "t.jsonl", "--yes"]
    assert main(argv) == 0
    printed = capsys.readouterr()
    assert main(["show", "t.jsonl"]) == 0
    assert main(["show", "t.jsonl", "--html", "t.html"]) == 0
    assert main(["replay", "t.jsonl"]) == 0
    shown = capsys.readouterr()
    trace = (printing_env / "t.jsonl").read_bytes()
    assert b"[REDACTED]" in trace  # the tool did print them
    sinks = {
        "trace": trace.decode(),
        "terminal": printed.out + printed.err,
        "show": shown.out + shown.err,
        "html": (printing_env / "t.html").read_text(),
    }
    for sink, text in sinks.items():
        for secret in (TOKEN, AWS, DB_PASSWORD, json.dumps(AWS)[1:-1]):
            assert secret not in text, (sink, secret)
