"""Where the agent's secrets come from, and the sinks a single run does not reach (DESIGN §8).

The whole-run check of every sink is ``tests/integration/test_secret_sinks.py``; here: the
credentials a model names for the agent to hide, those of MCP servers, a store URL and a
telemetry endpoint (each repeated by a model into a trace), a conversation's turns, a
subagent's trace, the permission question at the terminal, what ``fsm-agent run`` prints, and
a store URL's password in the errors about it.
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
import sys
import traceback
from pathlib import Path
from typing import Any

import anthropic
import pytest
from rich.console import Console

from fsm_agent.cli import main
from fsm_agent.core.config import LoopConfig
from fsm_agent.credentials import (
    argument_credentials,
    otlp_header_credentials,
    url_passwords,
    without_passwords,
)
from fsm_agent.errors import ConfigError
from fsm_agent.runtime.agent import Agent, model_credentials
from fsm_agent.runtime.hook_spec import CommandHook
from fsm_agent.runtime.hooks import Hooks
from fsm_agent.runtime.mcp_tools import McpServer
from fsm_agent.runtime.models import AnthropicModel, ModelRequest
from fsm_agent.runtime.permissions import PermissionPolicy, PermissionRequest
from fsm_agent.runtime.settings import load_settings
from fsm_agent.runtime.subagents import SubagentDefinition
from fsm_agent.runtime.tool import tool
from fsm_agent.store.background import wait_for_store_writes
from fsm_agent.store.opening import STORE_ENV, open_store
from fsm_agent.telemetry.config import Telemetry
from fsm_agent.terminal_view import LiveView
from fsm_agent.testing.fake_server import FakeAnthropicServer
from fsm_agent.testing.scenario import ScriptedModel, parse_scenario
from fsm_agent.toolbox.task import Task
from fsm_agent.trace.conversation import conversation_turns
from fsm_agent.trace.redact import mask

SECRET = "configured-hunter2-secret"
KEY_SHAPED = "sk-ant-api03-PLANTED0123456789abcdef"
PLANTED = f"[{SECRET} {KEY_SHAPED}]"
HELLO = [{"role": "user", "content": "hello"}]
NOTES_SERVER = Path(__file__).parents[1] / "integration" / "mcp" / "notes_server.py"


def scripted(*texts: str, tool_name: str | None = None) -> ScriptedModel:
    """A model that calls ``tool_name`` with the planted strings first (when named), then
    answers each of ``texts`` in turn."""
    steps: list[dict[str, Any]] = []
    if tool_name is not None:
        steps.append({"content": [{"tool_use": {"name": tool_name, "input": {"text": PLANTED}}}]})
    steps += [{"content": [{"text": text}]} for text in texts]
    return ScriptedModel(parse_scenario({"steps": steps}))


def assert_clean(what: str, data: bytes | str, forbidden: tuple[str, ...]) -> None:
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    leaked = [secret for secret in forbidden if secret in text]
    assert not leaked, f"{what} holds {leaked}"


@tool(description="Echo a text.")
async def echo(text: str) -> str:
    return f"echoed {text} {PLANTED}"


# --- the model's credentials ----------------------------------------------------------------


def completed_trace(tmp_path: Path, **options: Any) -> bytes:
    """The trace of a run of ``Agent(**options)`` (with :data:`SECRET` given) that completes."""
    agent = Agent(
        cwd=tmp_path, trace=tmp_path / "run.jsonl", store=False, secrets=[SECRET], **options
    )
    assert agent.run_sync("go").terminal == "completed"
    return (tmp_path / "run.jsonl").read_bytes()


def test_an_anthropic_model_names_the_key_it_was_given_and_never_shows_it() -> None:
    model = AnthropicModel(name="m", api_key="proxy-credential-0123")
    assert model.secrets == ("proxy-credential-0123",)
    assert "proxy-credential-0123" not in repr(model)


def test_an_anthropic_model_names_the_credentials_the_sdk_finds_itself(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without ``api_key`` the SDK reads the environment; a client passed in has its own."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "env-key-0123456")
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "env-token-0123456")
    assert AnthropicModel(name="m").secrets == ("env-key-0123456", "env-token-0123456")
    assert AnthropicModel(name="m", api_key="given-key-0123").secrets == ("given-key-0123",)
    client = anthropic.AsyncAnthropic(auth_token="client-token-0123")
    assert AnthropicModel(name="m", client=client).secrets == ("client-token-0123",)


def test_an_anthropic_model_names_the_credentials_of_its_extra_headers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Its own ``extra_headers``, and the headers the SDK adds from the environment."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    monkeypatch.setenv("ANTHROPIC_CUSTOM_HEADERS", "X-Team: infra\nProxy-Authorization: pa-0123")
    model = AnthropicModel(
        name="m",
        extra_headers={
            "Authorization": "Bearer proxy-token-0123",
            "X-Gateway-Api-Key": "gateway-0123",
            "X-Trace-Id": "not-a-secret",
        },
    )
    assert set(model.secrets) == {
        "Bearer proxy-token-0123",
        "proxy-token-0123",
        "gateway-0123",
        "pa-0123",
    }


def test_an_agent_hides_its_model_credentials_and_your_secrets() -> None:
    """The model's credentials join the configured secrets; a model of your own may name its
    key as ``api_key``; a credential too short to be one is left out (a trace could not be
    written with it)."""
    agent = Agent(
        model=AnthropicModel(name="m", api_key="proxy-credential-0123"),
        secrets=[SECRET],
        trace=False,
        store=False,
    )
    assert agent.secrets == (SECRET, "proxy-credential-0123")

    class OwnModel:
        name = "own"
        api_key = "own-model-key-0123"

    assert model_credentials(OwnModel()) == ("own-model-key-0123",)
    OwnModel.api_key = "abc"
    assert model_credentials(OwnModel()) == ()
    assert model_credentials(scripted("hi")) == ()


def test_an_mcp_servers_credentials_are_secrets_and_never_shown() -> None:
    """The credential headers, environment variables and URL password an MCP server is
    reached with join the agent's secrets (a server may echo them in a tool result), and the
    server's ``repr`` names them without their values."""
    http = McpServer.http(
        "docs",
        "https://bot:url-password-0123@mcp.example/mcp",
        headers={"Authorization": "Bearer mcp-token-0123", "X-Team": "infra"},
    )
    stdio = McpServer.stdio("gh", "gh-mcp", env={"GITHUB_TOKEN": "ghp-0123456", "HOME": "/h"})
    agent = Agent(model=scripted("hi"), mcp_servers=[http, stdio], trace=False, store=False)
    assert set(agent.secrets) == {
        "Bearer mcp-token-0123",
        "mcp-token-0123",
        "url-password-0123",
        "ghp-0123456",
    }
    shown = repr([http, stdio])
    assert "'Authorization': '***'" in shown
    assert "'GITHUB_TOKEN': '***'" in shown
    assert_clean("an MCP server's repr", shown, (*agent.secrets, "infra", "/h"))


@pytest.mark.parametrize(
    ("args", "credentials"),
    [
        (("--token", "tok-0123", "--verbose"), ("tok-0123",)),
        (("--api-key=key-0123", "--port=8080"), ("key-0123",)),
        (("GITHUB_TOKEN=ghp-0123",), ("ghp-0123",)),
        (("--header", "Authorization: Bearer hdr-0123"), ("Bearer hdr-0123", "hdr-0123")),
        (("https://bot:url-0123@mcp.example/?access_token=qs-0123",), ("url-0123", "qs-0123")),
        (("-y", "@scope/server", "--port", "8080", "X-Team: infra"), ()),
        # Known programs' password options (PROGRAM_PASSWORD_OPTIONS), judged after the
        # program's name only, and only in the forms the program reads a password from.
        (("mysql", "-uroot", "-pmy-0123", "db"), ("my-0123",)),
        (("/usr/bin/mysqldump", "-p", "dbname"), ()),  # apart, -p prompts: dbname is the db
        (("docker", "exec", "db", "mariadb", "db", "-pmaria-0123"), ("maria-0123",)),
        (("sshpass", "-p", "ssh-0123", "ssh", "-p", "2222", "host"), ("ssh-0123",)),
        (("sshpass", "-pssh-4567", "ssh", "host"), ("ssh-4567",)),
        (("curl", "-u", "bob:curl-0123", "https://x.example"), ("curl-0123",)),
        (("curl", "--user=bob:curl-4567", "--proxy-user", "p:px-0123"), ("curl-4567", "px-0123")),
        (("wget", "--user=bob:wget-0123", "--password=wget-4567"), ("wget-0123", "wget-4567")),
        (("htpasswd", "-b", ".htpasswd", "bob", "htp-0123"), ("htp-0123",)),
        (("htpasswd", "-nbB", "bob", "htp-4567"), ("htp-4567",)),
        (("htpasswd", "-c", ".htpasswd", "bob"), ()),
        (("redis-cli", "-a", "redis-0123", "ping"), ("redis-0123",)),
        (("mongosh", "-u", "bob", "-p", "mongo-0123"), ("mongo-0123",)),
        (("ldapsearch", "-x", "-w", "ldap-0123"), ("ldap-0123",)),
        (("sqlcmd", "-S", "db", "-P", "sql-0123"), ("sql-0123",)),
        (("smbclient", "-U", "bob%smb-0123", "//host/share"), ("smb-0123",)),
        (("ls", "-p", "folder"), ()),
        (("ssh", "-p", "2222", "host"), ()),
        (("tar", "-pcf", "out.tar", "folder"), ()),
    ],
)
def test_the_credentials_in_a_commands_arguments(
    args: tuple[str, ...], credentials: tuple[str, ...]
) -> None:
    assert set(argument_credentials(args)) == set(credentials)


def test_a_known_programs_password_option_is_a_secret_and_never_shown() -> None:
    """The program is the server's command: its password options are judged from it."""
    server = McpServer.stdio("db", "mysql", ["-uroot", "-pmysql-pw-0123", "-h", "db.example"])
    agent = Agent(model=scripted("hi"), mcp_servers=[server], trace=False, store=False)
    assert set(agent.secrets) == {"mysql-pw-0123"}
    shown = repr(server)
    assert "args=('-uroot', '-p***', '-h', 'db.example')" in shown
    assert_clean("an MCP server's repr", shown, agent.secrets)


def test_the_credentials_in_an_mcp_servers_arguments_are_secrets_and_never_shown() -> None:
    server = McpServer.stdio(
        "gh",
        "npx",
        ["-y", "gh-mcp", "--token", "arg-token-0123", "--api-key=arg-key-0123", "--port=80"],
    )
    agent = Agent(model=scripted("hi"), mcp_servers=[server], trace=False, store=False)
    assert set(agent.secrets) == {"arg-token-0123", "arg-key-0123"}
    shown = repr(server)
    assert "'--token', '***', '--api-key=***', '--port=80'" in shown
    assert_clean("an MCP server's repr", shown, agent.secrets)


def test_a_model_repeating_an_mcp_servers_argument_writes_no_secret(tmp_path: Path) -> None:
    """A run with a real MCP server started with ``--token VALUE``: the model repeats the
    token (and the planted strings) in its answer; the trace shows ``[REDACTED]``."""
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    token = "arg-token-0123456"
    server = McpServer.stdio("notes", sys.executable, [str(NOTES_SERVER), "--token", token])
    written = completed_trace(
        tmp_path, model=scripted(f"the token is {token} {PLANTED}"), mcp_servers=[server]
    )
    assert b"the token is [REDACTED]" in written
    assert_clean("the trace", written, (token, SECRET, KEY_SHAPED))


# --- a command hook's command and its stderr ------------------------------------------------


def test_the_credentials_in_a_command_hooks_command_are_secrets() -> None:
    """A settings file's hook command written with a token (``--token VALUE``, a variable, a
    header): an error about the hook quotes the command, so they are the agent's secrets."""
    command = (
        "GITHUB_TOKEN=hook-env-0123 notify --token hook-arg-0123 "
        "&& curl -H 'Authorization: Bearer hook-bearer-0123' https://example.invalid"
    )
    settings = {"PreToolUse": [{"hooks": [{"type": "command", "command": command}]}]}
    hooks = Hooks.from_settings(settings, source="settings.json")
    agent = Agent(model=scripted("hi"), hooks=hooks, trace=False, store=False)
    for value in ("hook-env-0123", "hook-arg-0123", "hook-bearer-0123"):
        assert value in agent.secrets
    assert "notify" not in agent.secrets
    assert CommandHook(command="echo 'unclosed --token tok-0123").secrets == ("tok-0123",)


@pytest.mark.parametrize(
    "command",
    [
        "API_KEY=tok-0123456; notify",
        "notify --token=tok-0123456&&next",
        "notify --token tok-0123456|tee log",
        "mysql -ptok-0123456</dev/null",
        "notify --token tok-0123456; echo 'bad token tok-0123456' >&2; exit 2",
    ],
)
def test_a_hook_credential_is_recorded_without_the_operator_after_it(command: str) -> None:
    """Found: split as by ``shlex.split``, ``--token=abc&&x`` gave the secret ``abc&&x``, so the
    token itself reached the trace in clear wherever the operator did not follow it."""
    assert CommandHook(command=command).secrets == ("tok-0123456",)


def test_a_failing_command_hook_writes_no_secret(tmp_path: Path) -> None:
    """A hook written with a token that fails, printing the planted strings on stderr (a
    blocking error, then a failure): the trace holds neither the token nor what it printed."""
    token = "hook-token-0123456"
    said = f"echo {PLANTED} >&2"
    settings = {
        "PreToolUse": [
            {"hooks": [{"type": "command", "command": f"{said}; exit 2 # --token {token}"}]}
        ],
        "PostToolUseFailure": [
            {"hooks": [{"type": "command", "command": f"{said}; exit 1 # --token {token}"}]}
        ],
        "Stop": [{"hooks": [{"type": "command", "command": f"{said}; exit 1 # --token {token}"}]}],
    }
    written = completed_trace(
        tmp_path,
        model=scripted("done", tool_name="echo"),
        tools=[echo],
        hooks=Hooks.from_settings(settings, source="settings.json"),
        permissions=PermissionPolicy(allow={"echo"}),
    )
    assert b"exit 2 # --token [REDACTED]" in written  # the blocking error quotes the command
    assert_clean("the trace", written, (token, SECRET, KEY_SHAPED))


# --- a telemetry endpoint -------------------------------------------------------------------


def test_a_telemetry_endpoints_credentials_stay_out_of_the_trace_and_spans(
    tmp_path: Path,
) -> None:
    """The password and a credential-named query parameter of ``Telemetry(endpoint=...)``
    join the agent's secrets: a model error quoting them (the spans take it from a record no
    trace writer redacted) and an answer repeating them show ``[REDACTED]`` in the spans and
    the trace, and the ``Telemetry``'s repr shows ``***``."""
    pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    password, key = "otel-password-0123", "otel-key-0123"
    planted = f"{password} {key} {PLANTED}"
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry = Telemetry(
        tracer_provider=provider,
        endpoint=f"https://otel:{password}@collector.example:4318/?api_key={key}",
    )
    assert "otel:***@collector.example:4318/?api_key=***" in repr(telemetry)
    steps = [
        {"error": {"kind": "overloaded", "message": f"overloaded, body {planted}"}},
        {"content": [{"text": f"collector {planted}"}]},
    ]
    agent = Agent(
        model=ScriptedModel(parse_scenario({"steps": steps})),
        config=LoopConfig(retry_base_ms=1, retry_cap_ms=5),
        cwd=tmp_path,
        trace=tmp_path / "run.jsonl",
        store=False,
        secrets=[SECRET],
        telemetry=telemetry,
    )
    assert {password, key} <= set(agent.secrets)
    assert agent.run_sync("go").terminal == "completed"
    provider.shutdown()
    spans = json.dumps(
        [
            [str(span.status.description), dict(span.attributes or {})]
            for span in exporter.get_finished_spans()
        ]
    )
    forbidden = (password, key, SECRET, KEY_SHAPED)
    assert "overloaded, body [REDACTED]" in spans
    assert_clean("the spans", spans, forbidden)
    assert_clean("the trace", (tmp_path / "run.jsonl").read_bytes(), forbidden)


@pytest.mark.parametrize(
    ("headers", "credentials"),
    [
        (
            "Authorization=Bearer%20otlp-0123",
            ("Bearer%20otlp-0123", "Bearer otlp-0123", "otlp-0123"),
        ),
        ("api-key=otlp-key-0123, x-scope-orgid=tenant1", ("otlp-key-0123",)),
        ("x-honeycomb-team=hc-0123,DD-API-KEY=dd-0123", ("hc-0123", "dd-0123")),
        ("uptrace-dsn=https://0123456789abcdef0123@api.uptrace.dev?grpc=4317", None),
        ("x-team=infra,=novalue,broken", ()),
    ],
)
def test_the_credentials_of_the_otlp_headers(
    headers: str, credentials: tuple[str, ...] | None
) -> None:
    found = otlp_header_credentials(headers)
    if credentials is None:  # a DSN: the whole URL and its token
        assert "0123456789abcdef0123" in found
    else:
        assert set(found) == set(credentials)


@pytest.mark.parametrize(
    "variable", ["OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"]
)
def test_the_otlp_header_credentials_stay_out_of_the_trace_and_spans(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    """With telemetry on, the credentials the environment gives the exporter's headers join
    the agent's secrets: an answer repeating them shows ``[REDACTED]`` in the spans and the
    trace. With telemetry off they are not the agent's concern."""
    pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    token, key = "otlp-token-0123", "otlp-key/0123"
    monkeypatch.setenv(variable, f"Authorization=Bearer%20{token},api-key=otlp-key%2F0123")
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    agent = Agent(
        model=scripted(f"the collector takes {token} and {key}"),
        cwd=tmp_path,
        trace=tmp_path / "run.jsonl",
        store=False,
        telemetry=Telemetry(tracer_provider=provider),
    )
    assert {token, key} <= set(agent.secrets)
    assert agent.run_sync("go").terminal == "completed"
    provider.shutdown()
    spans = json.dumps([dict(span.attributes or {}) for span in exporter.get_finished_spans()])
    assert "[REDACTED]" in (tmp_path / "run.jsonl").read_text(encoding="utf-8")
    assert_clean("the spans", spans, (token, key))
    assert_clean("the trace", (tmp_path / "run.jsonl").read_bytes(), (token, key))
    off = Agent(model=scripted("hi"), cwd=tmp_path, trace=False, store=False, telemetry=False)
    assert token not in off.secrets


# --- sessions and subagents -----------------------------------------------------------------


def test_no_turn_of_a_conversation_holds_a_secret(tmp_path: Path) -> None:
    """Each turn's trace starts from the transcript so far (``TurnStarted``): the secrets of
    the earlier turns, in prompts, tool outputs and answers, are redacted there too."""
    agent = Agent(
        model=scripted(f"first {PLANTED}", f"second {PLANTED}", tool_name="echo"),
        tools=[echo],
        cwd=tmp_path,
        trace=f"{tmp_path / 'traces'}/",
        store=False,
        secrets=[SECRET],
    )

    async def talk() -> Path | None:
        async with agent.session(changed_files=False) as session:
            await session.ask(f"one {PLANTED}")
            return (await session.ask(f"two {PLANTED}")).trace_path

    last = asyncio.run(talk())
    assert last is not None
    turns = conversation_turns(last)
    assert len(turns) == 2
    for path in turns:
        assert_clean(path.name, path.read_bytes(), (SECRET, KEY_SHAPED))


def test_a_subagent_keeps_its_parents_secrets(tmp_path: Path) -> None:
    """The child agent a Task call starts is given the parent's secrets: its own trace, and
    the answer the parent records, hold none."""
    child = SubagentDefinition(
        description="echoes",
        tools=[echo],
        model=scripted(f"child says {PLANTED}", tool_name="echo"),
    )
    task = {"description": "echo", "prompt": f"echo {PLANTED}", "subagent_type": "echoer"}
    parent = Agent(
        model=ScriptedModel(
            parse_scenario(
                {
                    "steps": [
                        {"content": [{"tool_use": {"name": "Task", "input": task}}]},
                        {"content": [{"text": "done"}]},
                    ]
                }
            )
        ),
        tools=[Task({"echoer": child})],
        cwd=tmp_path,
        trace=tmp_path / "traces" / "parent.jsonl",
        store=False,
        secrets=[SECRET],
    )
    result = parent.run_sync("go")
    assert result.terminal == "completed"
    traces = sorted((tmp_path / "traces").rglob("*.jsonl"))
    assert len(traces) == 2
    for path in traces:
        assert_clean(path.name, path.read_bytes(), (SECRET, KEY_SHAPED))


# --- the terminal ---------------------------------------------------------------------------


def test_a_permission_question_shows_no_secret() -> None:
    console = Console(file=io.StringIO(), width=200)
    view = LiveView(console=console, read_line=lambda _prompt: "y", secrets=[SECRET])
    request = PermissionRequest(
        tool_name="Bash",
        input={"command": f"curl -H 'Authorization: {SECRET}' {KEY_SHAPED}"},
        message=f"it sends {SECRET}",
        suggested_rules=(f"Bash(curl -H 'Authorization: {SECRET}':*)",),
    )
    assert asyncio.run(view.ask(request)).allow
    shown = console.file.getvalue()  # type: ignore[attr-defined]
    assert "Permission needed: Bash" in shown
    assert_clean("the question", shown, (SECRET, KEY_SHAPED))


def test_a_view_made_before_its_agent_hides_the_agents_secrets_once_told() -> None:
    """`fsm-agent run` makes its view before the agent (the view answers its questions) and
    hands it the agent's secrets, every source at once, once the agent is built."""
    console = Console(file=io.StringIO(), width=200)
    view = LiveView(console=console, read_line=lambda _prompt: "y", secrets=[KEY_SHAPED])
    view.hide([SECRET])
    request = PermissionRequest(
        tool_name="Bash",
        input={"command": f"echo {SECRET} {KEY_SHAPED}"},
        message=f"it sends {SECRET}",
    )
    assert asyncio.run(view.ask(request)).allow
    assert_clean("the question", console.file.getvalue(), (SECRET, KEY_SHAPED))  # type: ignore[attr-defined]


def test_fsm_agent_run_prints_no_api_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`run` hides the API key it read from the environment, shaped like one or not, in what
    it prints and in the trace, even when the model repeats it."""
    key = "proxy-credential-0123456789"
    scenario = parse_scenario({"steps": [{"content": [{"text": f"your key is {key}"}]}]})
    monkeypatch.chdir(tmp_path)
    with FakeAnthropicServer(scenario) as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", key)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        assert main(["run", "hi", "--trace", "run.jsonl"]) == 0
    printed = capsys.readouterr()
    assert "your key is [REDACTED]" in printed.out
    assert_clean("fsm-agent run", printed.out + printed.err, (key,))
    assert_clean("the trace", (tmp_path / "run.jsonl").read_bytes(), (key,))


def test_a_crash_of_fsm_agent_run_prints_its_traceback_without_a_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A fault nobody expected is printed as its traceback (a bug report needs it), exit
    status 1, with the API key, an environment variable's token and API-key-shaped text
    hidden in its words."""
    key = "proxy-credential-0123456789"
    token = "ghp-env-token-0123"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    monkeypatch.setenv("GITHUB_TOKEN", token)

    def crash(*_args: object, **_kwargs: object) -> None:
        raise RuntimeError(f"boom {key} {token} {KEY_SHAPED}")

    monkeypatch.setattr(Agent, "session", crash)
    assert main(["run", "hi", "--trace", "run.jsonl"]) == 1
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err
    masks = " ".join(mask(len(secret)) for secret in (key, token, KEY_SHAPED))
    assert err.rstrip().endswith(f"RuntimeError: boom {masks}")
    assert_clean("the traceback", err, (key, token, KEY_SHAPED))


# --- a store URL's password -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "passwords"),
    [
        ("postgresql://bob:hunter2-pw@db.example/runs", ("hunter2-pw",)),
        ("postgresql://db.example/runs?sslmode=require&password=hunter2-pw", ("hunter2-pw",)),
        ("postgresql://bob:hunter2%20pw@db.example/runs", ("hunter2%20pw", "hunter2 pw")),
        ("postgresql://bob@db.example/runs", ()),
        # User info with no password is a credential when it is shaped like a token.
        ("https://ghp_0123456789abcdefghij@github.com/o/r.git", ("ghp_0123456789abcdefghij",)),
        ("https://x-access-token:ghs-0123@github.com/o/r.git", ("ghs-0123",)),
        ("https://0123456789abcdef0123@sentry.example/42", ("0123456789abcdef0123",)),
        ("https://first.last.name.here@host.example/", ()),  # letters only: a name
        ("ssh://git@github.com/o/r.git", ()),
        ("https://collector.example/?service=x&api_key=otel-key-0123", ("otel-key-0123",)),
        ("runs.sqlite3", ()),
    ],
)
def test_the_passwords_of_a_store_url(url: str, passwords: tuple[str, ...]) -> None:
    assert set(url_passwords(url)) == set(passwords)
    shown = without_passwords(url, url)
    assert_clean("the shown URL", shown, passwords)
    assert shown.count("***") == len({p for p in passwords if p in url})


@pytest.mark.parametrize("given", ["store", "environment"])
def test_a_store_urls_password_is_a_secret_of_the_run(
    given: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The password of the store a run is indexed in, given as ``store=`` or in
    ``FSM_AGENT_STORE``, joins the agent's secrets: a model repeating it writes
    ``[REDACTED]`` in the trace (the store, down here, is only warned about)."""
    password = "store-password-0123"
    url = f"postgresql://bob:{password}@127.0.0.1:1/runs"
    if given == "environment":
        monkeypatch.setenv(STORE_ENV, url)
    agent = Agent(
        model=scripted(f"the store's password is {password} {PLANTED}"),
        cwd=tmp_path,
        trace=tmp_path / "run.jsonl",
        store=url if given == "store" else None,
        secrets=[SECRET],
    )
    assert password in agent.secrets
    assert agent.run_sync("go").terminal == "completed"
    assert wait_for_store_writes(timeout_s=30)
    written = (tmp_path / "run.jsonl").read_bytes()
    assert b"the store's password is [REDACTED]" in written
    assert_clean("the trace", written, (password, SECRET, KEY_SHAPED))


def test_fsm_agent_run_prints_no_store_password(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`run` indexing into the store ``FSM_AGENT_STORE`` names hides that URL's password in
    what it prints and in the trace, when the model repeats it."""
    password = "store-password-0123"
    answer = f"the store's password is {password} {KEY_SHAPED}"
    scenario = parse_scenario({"steps": [{"content": [{"text": answer}]}]})
    monkeypatch.chdir(tmp_path)
    with FakeAnthropicServer(scenario) as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "proxy-credential-0123456789")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        monkeypatch.setenv(STORE_ENV, f"postgresql://bob:{password}@127.0.0.1:1/runs")
        assert main(["run", "hi", "--trace", "run.jsonl"]) == 0
        assert wait_for_store_writes(timeout_s=30)
    printed = capsys.readouterr()
    masks = f"{mask(len(password))} {mask(len(KEY_SHAPED))}"
    assert f"the store's password is {masks}" in " ".join(printed.out.split())  # lines wrap
    assert_clean("fsm-agent run", printed.out + printed.err, (password, KEY_SHAPED))
    assert_clean("the trace", (tmp_path / "run.jsonl").read_bytes(), (password, KEY_SHAPED))


@pytest.mark.parametrize(
    "url",
    [
        "mysql://bob:hunter2-pw@db.example/runs",  # an unknown kind of database
        "postgresql://bob:hunter2-pw@127.0.0.1:1/runs",  # nobody listens there
        "postgresql://127.0.0.1:1/runs?password=hunter2-pw&sslmode=bogus",  # a bad option
        "postgresql://bob:hunter2 pw@127.0.0.1:1/runs",  # psycopg quotes the password itself
    ],
)
def test_a_store_that_cannot_be_opened_never_shows_its_password(url: str) -> None:
    if url.startswith("postgresql"):
        pytest.importorskip("psycopg", reason="the fsm_agent[postgres] extra is not installed")
    with pytest.raises(ConfigError) as raised:
        open_store(url)
    assert "***" in str(raised.value)
    assert_clean("the error", str(raised.value), ("hunter2-pw", "hunter2 pw"))


# --- errors that quote what the user wrote --------------------------------------------------


def test_an_error_quoting_a_setting_never_shows_an_api_key(tmp_path: Path) -> None:
    """A malformed permission rule, settings file or command hook is quoted in its error,
    which reaches terminals, logs and CI output: API-key-shaped text in it is not shown."""
    header = f'curl -H "x-api-key: {KEY_SHAPED}"'
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({"permissions": {"allow": f"Bash({header})"}}), "utf-8")
    broken = [
        lambda: PermissionPolicy(allow=(f"Bash({header}",)),
        lambda: load_settings(tmp_path, extra_files=[settings]),
        lambda: CommandHook(command=header, timeout=0),
    ]
    for build in broken:
        with pytest.raises(ConfigError) as raised:
            build()
        shown = "".join(traceback.format_exception(raised.value))
        assert "x-api-key: [REDACTED]" in shown
        assert_clean("the error", shown, (KEY_SHAPED,))


def test_a_store_that_is_down_is_logged_without_its_password(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A run indexed in a PostgreSQL store nobody answers for: the run completes, and the
    warning that says so (logger ``fsm_agent.store``) hides the URL's password."""
    pytest.importorskip("psycopg", reason="the fsm_agent[postgres] extra is not installed")
    agent = Agent(
        model=scripted("hi"),
        cwd=tmp_path,
        trace=tmp_path / "run.jsonl",
        store="postgresql://bob:hunter2-pw@127.0.0.1:1/runs",
    )
    with caplog.at_level(logging.WARNING, logger="fsm_agent.store"):
        assert agent.run_sync("go").terminal == "completed"
        assert wait_for_store_writes(timeout_s=30)
    assert "was not indexed" in caplog.text
    assert "bob:***@127.0.0.1" in caplog.text
    assert_clean("the store's warning", caplog.text, ("hunter2-pw",))


def test_the_fake_server_records_no_credential_header() -> None:
    """What the fake server keeps of a request (tests print it when they fail) holds no
    credential header's value: the API key, and a gateway's token under any credential name."""
    scenario = parse_scenario({"steps": [{"content": [{"text": "hi"}]}]})

    async def ask(server: FakeAnthropicServer) -> None:
        async with AnthropicModel(
            name="m",
            api_key="proxy-credential-0123",
            base_url=server.base_url,
            extra_headers={"X-Gateway-Token": "gateway-0123", "Cookie": "session=cookie-0123"},
        ) as model:
            async for _event in model.stream(
                ModelRequest(model="m", max_output_tokens=64, messages=HELLO)
            ):
                pass

    with FakeAnthropicServer(scenario) as server:
        asyncio.run(ask(server))
    [recorded] = server.message_requests
    assert recorded.headers["x-gateway-token"] == "[redacted]"
    assert_clean(
        "a recorded request",
        repr(recorded),
        ("proxy-credential-0123", "gateway-0123", "cookie-0123"),
    )
