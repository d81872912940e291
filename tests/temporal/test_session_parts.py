"""Agent parts on Temporal: attachment providers work as in-process; the parts the Temporal
driver cannot run (MCP servers, tool providers, subagents) fail the session at once, named."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("temporalio", reason="the fsm_agent[temporal] extra is not installed")

from temporalio.client import Client, WorkflowFailureError

from fsm_agent.temporal import session_worker, start_session
from fsm_agent.trace.reader import read_trace

from .conftest import causes_of
from .session_agents import scripted
from .test_continue_as_new import start_long
from .test_sessions import folders, reply, use


def attached(trace: Path) -> list[tuple[str, str, str]]:
    """Every attachment the trace's AttachmentsReady events carry: (uuid, kind, text)."""
    found = []
    for record in read_trace(trace).of_kind("event"):
        event = record.data["event"]
        if event["type"] == "AttachmentsReady":
            found += [(m["uuid"], m["kind"], m["text"]) for m in event.get("messages", ())]
    return found


def test_attachment_providers_attach_what_they_attach_in_process(
    temporal_address: str, tmp_path: Path
) -> None:
    """Every-phase, turn-prefetch and iteration-prefetch providers give, on Temporal and
    across continued runs, the attachments (ids, kinds, texts) they give in-process."""
    steps = [{"content": [use("Append", line=f"line {n}")]} for n in range(6)]
    world = {"steps": [*steps, reply("done")], "allow": ["Append"], "notes": True}
    local_work, local_trace = folders(tmp_path, "local")
    local = scripted(**world, cwd=str(local_work), trace=str(local_trace))
    assert asyncio.run(local.run("go")).terminal == "completed"
    remote_work, remote_trace = folders(tmp_path, "remote")

    async def go() -> dict[str, Any]:
        client = await Client.connect(temporal_address)
        async with session_worker(client, task_queue="notes", factory=scripted):
            handle = await start_long(
                client, "notes", {**world, "cwd": str(remote_work)}, remote_trace, after=40
            )
            result: dict[str, Any] = await handle.result()
            return result

    result = asyncio.run(go())
    assert result["terminal"] == "completed"
    assert result["runs"] >= 2
    expected = attached(local_trace)
    assert [text for _uuid, _kind, text in expected].count("memory asked at iteration 1") == 1
    assert len(expected) == 2 * len(steps) + 1
    assert attached(remote_trace) == expected


@pytest.mark.parametrize(
    ("part", "named"),
    [
        ("mcp", "MCP servers cannot run on Temporal"),
        ("tool_provider", "tool providers cannot run on Temporal"),
        ("subagent", "subagents (the Task tool) cannot run on Temporal"),
    ],
)
def test_a_part_temporal_cannot_run_fails_the_session_at_start(
    temporal_address: str, tmp_path: Path, part: str, named: str
) -> None:
    """An agent with MCP servers, tool providers or subagents: the session fails before any
    model call, at once (not retried), with the ConfigError naming the part and why."""
    work, trace = folders(tmp_path)
    params = {"steps": [reply("never")], "cwd": str(work), "unsupported": part}

    async def go() -> None:
        client = await Client.connect(temporal_address)
        async with session_worker(client, task_queue=f"refuse-{part}", factory=scripted):
            handle = await start_session(
                client, "go", task_queue=f"refuse-{part}", params=params, trace=str(trace)
            )
            await asyncio.wait_for(handle.result(), timeout=30)

    with pytest.raises(WorkflowFailureError) as failed:
        asyncio.run(go())
    causes = causes_of(failed.value)
    assert any(named in cause for cause in causes), causes
    assert not trace.exists()  # nothing ran
