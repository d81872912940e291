"""The same world run by the in-process ``Agent`` and as a Temporal session takes the same
transitions (the workflow is a second driver of the same core, not a second loop)."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("temporalio", reason="the fsm_agent[temporal] extra is not installed")

from temporalio.client import Client

from fsm_agent.temporal import start_session
from fsm_agent.trace.reader import read_trace

from .session_agents import REQUESTS_LOG, scripted

TOOLS = ("Read", "Write", "Append")
SIDES = ("local", "remote")

_calls = st.sampled_from(
    [
        {"tool_use": {"name": "Read", "input": {"file_path": "a.txt"}}},
        {"tool_use": {"name": "Read", "input": {"file_path": "missing.txt"}}},
        {"tool_use": {"name": "Append", "input": {"line": "x"}}},
        {"tool_use": {"name": "Write", "input": {"file_path": "w.txt", "content": "w"}}},
        {"tool_use": {"name": "Write", "input": {"content": "no path"}}},
    ]
)
_steps = st.one_of(
    st.just({"content": [{"text": "so far so good"}]}),
    st.lists(_calls, min_size=1, max_size=2).map(lambda uses: {"content": uses}),
    st.just({"error": {"kind": "overloaded"}}),
)


@st.composite
def worlds(draw: st.DrawFn) -> dict[str, Any]:
    """A scripted model, per-tool allow or deny rules, maybe a Stop hook that blocks once, and
    maybe the exact token count before each request."""
    steps = [*draw(st.lists(_steps, max_size=3)), {"content": [{"text": "the end"}]}]
    allowed = draw(st.lists(st.booleans(), min_size=len(TOOLS), max_size=len(TOOLS)))
    return {
        "steps": steps,
        "allow": [tool for tool, yes in zip(TOOLS, allowed, strict=True) if yes],
        "deny": [tool for tool, yes in zip(TOOLS, allowed, strict=True) if not yes],
        "stop_hook": draw(st.booleans()),
        "count_tokens": draw(st.booleans()),
    }


def transitions(trace_path: Path) -> tuple[list[str], dict[str, list[str]]]:
    """The loop machine's transitions in order, and each tool call's, by call id."""
    loop: list[str] = []
    calls: dict[str, list[str]] = defaultdict(list)
    for record in read_trace(trace_path).of_kind("transition"):
        if record.data["machine"] == "loop":
            loop.append(record.data["name"])
        else:
            calls[record.data["call_id"]].append(record.data["name"])
    return loop, dict(calls)


def fresh_folder(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "a.txt").write_text("alpha\n", encoding="utf-8")
    return root


@settings(
    max_examples=6,  # each example is a whole Temporal session: a few, not a hundred
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(world=worlds())
def test_temporal_session_takes_the_in_process_transitions(
    temporal_address: str, worker_pool: str, tmp_path_factory: pytest.TempPathFactory, world: Any
) -> None:
    """For generated worlds, the Temporal session and the in-process Agent agree on every
    loop transition, on every tool call's transitions and on every request the model gets."""
    root = tmp_path_factory.mktemp("world")
    local_trace, remote_trace = root / "local.jsonl", root / "remote.jsonl"
    world = {**world, "record_requests": True}
    agent = scripted(**world, cwd=str(fresh_folder(root / "local")), trace=str(local_trace))
    local = asyncio.run(agent.run("go"))

    async def remote() -> dict[str, Any]:
        client = await Client.connect(temporal_address)
        params = {**world, "cwd": str(fresh_folder(root / "remote"))}
        handle = await start_session(
            client, "go", task_queue=worker_pool, params=params, trace=str(remote_trace)
        )
        result: dict[str, Any] = await asyncio.wait_for(handle.result(), timeout=60)
        return result

    result = asyncio.run(remote())
    assert result["terminal"] == local.terminal
    assert transitions(remote_trace) == transitions(local_trace)
    # Model calls after the first carry only what changed, on either of two workers: the
    # model is still asked exactly what the in-process driver asks it.
    asked = [(root / side / REQUESTS_LOG).read_text(encoding="utf-8") for side in SIDES]
    assert asked[0] == asked[1]
