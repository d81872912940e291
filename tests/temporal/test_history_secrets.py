"""What a Temporal session keeps in its history, in clear (DESIGN §8).

Temporal stores every workflow input, activity input and result, and failure in the session's
history. The conversation is there by design (README: protect it with a payload codec); the
agent's own configuration is not: the secrets and credentials the worker's agent is built with
stay on the worker, where the trace writes are redacted with them. What ``fsm-agent run
--temporal`` prints of the conversation never shows API-key-shaped text.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("temporalio", reason="the fsm_agent[temporal] extra is not installed")

from temporalio.client import Client

from fsm_agent import cli
from fsm_agent.runtime.agent import Agent
from fsm_agent.temporal import answer_permission, session_worker, start_session, watch_session
from fsm_agent.temporal.dev_server import WorkerProcess
from fsm_agent.trace.redact import mask
from fsm_agent.trace.replay import replay

from .conftest import FACTORY, HERE
from .session_agents import scripted

SECRET = "worker-side-secret-0123456789"
PROMPT = "a prompt the history must hold"
KEY = "sk-ant-api03-PLANTED0123456789abcdef"


def with_secret(**params: Any) -> Agent:
    """The scripted agent, given a secret on the worker rather than in the session's params."""
    return scripted(**params, secrets=[SECRET])


def test_the_agents_secrets_never_enter_the_history(temporal_address: str, tmp_path: Path) -> None:
    """A session with tools, a permission question and a trace: its history holds the
    conversation (the prompt) but not the secret its worker's agent was built with."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("nothing secret here\n", encoding="utf-8")
    trace = tmp_path / "traces" / "trace.jsonl"
    steps = [
        {"content": [{"tool_use": {"name": "Read", "input": {"file_path": "notes.txt"}}}]},
        {
            "content": [
                {"tool_use": {"name": "Write", "input": {"file_path": "o.txt", "content": "x"}}}
            ]
        },
        {"content": [{"text": "done"}]},
    ]
    params = {"steps": steps, "cwd": str(work)}

    async def go() -> tuple[dict[str, Any], bytes]:
        client = await Client.connect(temporal_address)
        async with session_worker(client, task_queue="history-secrets", factory=with_secret):
            handle = await start_session(
                client, PROMPT, task_queue="history-secrets", params=params, trace=str(trace)
            )
            async for item in watch_session(handle, poll_s=0.05):
                if item.kind == "question":
                    await answer_permission(client, handle.id, str(item.data["call_id"]), "allow")
            result: dict[str, Any] = await handle.result()
            history = await handle.fetch_history()
        # The binary form holds each payload's bytes as they are (the JSON form is base64).
        return result, b"".join(event.SerializeToString() for event in history.events)

    result, history = asyncio.run(go())
    assert result["terminal"] == "completed"
    assert PROMPT.encode() in history
    assert SECRET.encode() not in history


def test_a_secret_streamed_in_pieces_is_written_redacted(
    temporal_address: str, tmp_path: Path
) -> None:
    """The model streams the worker's secret and an API key a few characters per delta: the
    workflow's writer knows no secret, so the worker makes each whole in one piece before it
    redacts the lines; the trace holds neither, in one piece or in parts, and replays."""
    work = tmp_path / "work"
    work.mkdir()
    trace = tmp_path / "traces" / "trace.jsonl"
    said = f"the secret {SECRET} and the key {KEY}"
    params = {"steps": [{"content": [{"text": said}], "chunk": 3}], "cwd": str(work)}

    async def go() -> dict[str, Any]:
        client = await Client.connect(temporal_address)
        async with session_worker(client, task_queue="split-secrets", factory=with_secret):
            handle = await start_session(
                client, PROMPT, task_queue="split-secrets", params=params, trace=str(trace)
            )
            result: dict[str, Any] = await handle.result()
        return result

    assert asyncio.run(go())["terminal"] == "completed"
    pieces = []
    for line in trace.read_bytes().splitlines()[1:]:
        raw = json.loads(line).get("event", {}).get("event", {})
        if raw.get("type") == "content_block_delta":
            pieces.append(raw["delta"]["text"])
    joined = "".join(pieces)
    assert joined == f"the secret {mask(len(SECRET))} and the key {mask(len(KEY))}"
    assert SECRET.encode() not in trace.read_bytes()
    assert replay(trace).terminal == "completed"


def test_a_secret_a_tool_reports_in_pieces_is_written_redacted(
    temporal_address: str, tmp_path: Path
) -> None:
    """A tool reports a line holding the worker's secret and an API key as progress, a few
    characters at a time: the worker makes each whole in one progress text before it
    redacts the lines (a tool step's events come together, so the texts follow each other
    in the lines the workflow hands over); the trace holds neither, and replays."""
    work = tmp_path / "work"
    work.mkdir()
    trace = tmp_path / "traces" / "trace.jsonl"
    line = f"TOKEN={SECRET} KEY={KEY} ok"
    steps = [
        {"content": [{"tool_use": {"name": "Append", "input": {"line": line}}}]},
        {"content": [{"text": "done"}]},
    ]
    params = {"steps": steps, "cwd": str(work), "echo_chunk": 4, "allow": ["Append"]}

    async def go() -> dict[str, Any]:
        client = await Client.connect(temporal_address)
        async with session_worker(client, task_queue="split-progress", factory=with_secret):
            handle = await start_session(
                client, PROMPT, task_queue="split-progress", params=params, trace=str(trace)
            )
            result: dict[str, Any] = await handle.result()
        return result

    assert asyncio.run(go())["terminal"] == "completed"
    content = trace.read_bytes()
    reported = [
        event["text"]
        for event in (json.loads(line).get("event", {}) for line in content.splitlines()[1:])
        if event.get("type") == "ToolProgressReported"
    ]
    assert "".join(reported) == f"TOKEN={mask(len(SECRET))} KEY={mask(len(KEY))} okappended"
    assert SECRET.encode() not in content
    assert replay(trace).terminal == "completed"


def test_run_temporal_prints_no_api_key(
    temporal_address: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`fsm-agent run --temporal` prints the model's answers and the questions it answers;
    API-key-shaped text in them is shown as ``[REDACTED]``, as the in-process view shows it."""
    work = tmp_path / "work"
    work.mkdir()
    steps = [
        {
            "content": [
                {"tool_use": {"name": "Write", "input": {"file_path": "k.txt", "content": KEY}}}
            ]
        },
        {"content": [{"text": f"the key is {KEY}"}]},
    ]
    params = {"steps": steps, "cwd": str(work)}
    argv = ["run", "go", "--temporal", "--yes", "--address", temporal_address]
    argv += ["--task-queue", "cli-secrets", "--params", json.dumps(params)]
    argv += ["--trace", str(tmp_path / "traces" / "t.jsonl")]

    async def go() -> int:
        client = await Client.connect(temporal_address)
        async with session_worker(client, task_queue="cli-secrets", factory=scripted):
            return await asyncio.to_thread(cli.main, argv)

    assert asyncio.run(go()) == 0
    out = capsys.readouterr().out
    assert "  ? Write " in out
    assert "the key is [REDACTED]" in out
    assert KEY not in out


def test_a_data_converter_given_to_the_commands_seals_the_history(
    temporal_address: str,
    tmp_path: Path,
    worker_processes: list[WorkerProcess],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`fsm-agent worker` and `run --temporal` given the same `--data-converter` (here one
    whose codec seals every payload) run the session as usual, and the history on the
    cluster holds neither the prompt nor the model's answer in clear; the trace, written on
    the worker, holds both."""
    work = tmp_path / "work"
    work.mkdir()
    answer = "an answer the history must not show"
    params = {"steps": [{"content": [{"text": answer}]}], "cwd": str(work)}
    option = ["--data-converter", "session_agents:sealed"]
    monkeypatch.syspath_prepend(str(HERE))  # as the worker process has it
    worker_processes.append(
        WorkerProcess(
            temporal_address,
            "sealed",
            factory=FACTORY,
            import_path=HERE,
            data_converter=option[1],
        )
    )
    trace = tmp_path / "traces" / "t.jsonl"
    argv = ["run", PROMPT, "--temporal", "--address", temporal_address, "--task-queue", "sealed"]
    argv += ["--params", json.dumps(params), "--trace", str(trace), *option]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    assert answer in out  # the command read the sealed history back
    session = out.split("session ", 1)[1].split()[0]

    async def history_of_a_client_without_the_codec() -> bytes:
        client = await Client.connect(temporal_address)
        history = await client.get_workflow_handle(session).fetch_history()
        return b"".join(event.SerializeToString() for event in history.events)

    history = asyncio.run(history_of_a_client_without_the_codec())
    assert b"sealed-for-tests" in history
    assert PROMPT.encode() not in history
    assert answer.encode() not in history
    text = trace.read_text(encoding="utf-8")
    assert PROMPT in text and answer in text


def test_data_converter_option_errors_are_clear(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A name that is not a data converter, or the option on a local run, is refused up front."""
    monkeypatch.syspath_prepend(str(HERE))
    base = ["run", "hi", "--temporal", "--address", "127.0.0.1:1"]
    assert cli.main([*base, "--data-converter", "json:dumps"]) == 1
    assert cli.main([*base, "--data-converter", "json:JSONDecoder"]) == 1
    assert cli.main(["run", "hi", "--data-converter", "session_agents:sealed"]) == 2
    err = capsys.readouterr().err
    assert "'json:dumps': calling it failed" in err
    assert "expected a temporalio DataConverter (or a function returning one)" in err
    assert "--data-converter: only with --temporal" in err
