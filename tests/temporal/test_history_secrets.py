"""What a Temporal session keeps in its history, in clear (DESIGN §8).

Temporal stores every workflow input, activity input and result, and failure in the session's
history. The conversation is there by design (README: protect it with a payload codec); the
agent's own configuration is not: the secrets and credentials the worker's agent is built with
stay on the worker, where the trace writes are redacted with them.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("temporalio", reason="the fsm_agent[temporal] extra is not installed")

from temporalio.client import Client

from fsm_agent.runtime.agent import Agent
from fsm_agent.temporal import answer_permission, session_worker, start_session, watch_session

from .session_agents import scripted

SECRET = "worker-side-secret-0123456789"
PROMPT = "a prompt the history must hold"


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
