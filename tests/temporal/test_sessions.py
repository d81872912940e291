"""Sessions hosted by Temporal against a real development server: tools, a permission Update,
a Stop hook, the trace, Temporal's own Replayer, a worker killed mid-call, many sessions."""

from __future__ import annotations

import asyncio
import atexit
import json
import os
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("temporalio", reason="the fsm_agent[temporal] extra is not installed")

from temporalio.client import Client
from temporalio.worker import Replayer

from fsm_agent import cli
from fsm_agent.core import texts
from fsm_agent.errors import UsageError
from fsm_agent.temporal import (
    SessionWorkflow,
    answer_permission,
    session_worker,
    start_session,
    watch_session,
    workflow_runner,
)
from fsm_agent.trace.reader import read_trace
from fsm_agent.trace.replay import replay

from .conftest import WorkerProcess, worker
from .session_agents import scripted

# The agents of these tests come from session_agents.scripted, in worker processes too.


def use(name: str, **tool_input: Any) -> dict[str, Any]:
    """A tool_use block of a scenario step."""
    return {"tool_use": {"name": name, "input": tool_input}}


def reply(text: str) -> dict[str, Any]:
    """A scenario step that answers with text."""
    return {"content": [{"text": text}]}


def folders(tmp_path: Path, name: str = "s") -> tuple[Path, Path]:
    """A working folder and a separate trace file path (tools never read their trace folder)."""
    work = tmp_path / name / "work"
    work.mkdir(parents=True)
    return work, tmp_path / name / "traces" / "trace.jsonl"


def finish(address: str, queue: str, params: dict[str, Any], trace: Path) -> dict[str, Any]:
    """Run one session of ``scripted`` with ``params`` on a worker of its own to its end."""

    async def go() -> dict[str, Any]:
        client = await Client.connect(address)
        async with session_worker(client, task_queue=queue, factory=scripted):
            handle = await start_session(
                client, "go", task_queue=queue, params=params, trace=str(trace)
            )
            result: dict[str, Any] = await handle.result()
            return result

    return asyncio.run(go())


def loop_names(trace_path: Path) -> list[str]:
    trace = read_trace(trace_path)
    return [r.data["name"] for r in trace.of_kind("transition") if r.data["machine"] == "loop"]


def test_session_with_tools_permission_update_and_stop_hook_replays(
    temporal_address: str, tmp_path: Path
) -> None:
    """Tools run, a Write waits for `fsm-agent approve`, a Stop hook blocks once, the session
    completes; its trace replays identically and Temporal's Replayer accepts its history."""
    work, trace = folders(tmp_path)
    steps = [
        {"content": [use("Append", line="first")]},
        {"content": [use("Write", file_path="out.txt", content="hello")]},
        reply("written"),
        reply("written, and said once more"),
    ]
    params = {"steps": steps, "cwd": str(work), "stop_hook": True, "allow": ["Append"]}
    seen: list[str] = []

    async def go() -> tuple[dict[str, Any], Any]:
        client = await Client.connect(temporal_address)
        async with session_worker(client, task_queue="tools", factory=scripted):
            handle = await start_session(
                client, "go", task_queue="tools", params=params, trace=str(trace)
            )
            async for item in watch_session(handle, poll_s=0.05):
                seen.append(item.kind)
                if item.kind == "question":
                    assert item.data["tool_name"] == "Write"
                    with pytest.raises(UsageError, match="no permission question is pending"):
                        await answer_permission(client, handle.id, "toolu_999", "allow")
                    status = await asyncio.to_thread(
                        cli.main,
                        [
                            "approve",
                            handle.id,
                            str(item.data["call_id"]),
                            "allow",
                            "--address",
                            temporal_address,
                        ],
                    )
                    assert status == 0
            result = await handle.result()
            return result, await handle.fetch_history()

    result, history = asyncio.run(go())
    assert result["terminal"] == "completed"
    assert result["text"] == "written, and said once more"
    assert seen.count("question") == 1
    assert (work / "out.txt").read_text(encoding="utf-8") == "hello"
    assert (work / "ledger.txt").read_text(encoding="utf-8") == "first\n"
    names = loop_names(trace)
    assert names.count("stop_hook_blocking") == 1
    assert names[-1] == "completed"
    replayed = replay(read_trace(trace))
    assert replayed.ended
    assert replayed.terminal == "completed"

    async def replay_history() -> None:
        replayer = Replayer(workflows=[SessionWorkflow], workflow_runner=workflow_runner())
        await replayer.replay_workflow(history)  # raises on any non-determinism

    asyncio.run(replay_history())


def test_a_redacted_secret_does_not_shift_the_next_trace_write(
    temporal_address: str, tmp_path: Path
) -> None:
    """A tool result holding a secret is redacted as the trace is written, which changes the
    line's length; the writes after it (a question, the end) start where the file ends, so
    every line stays whole JSON, the secret is nowhere and the trace replays."""
    work, trace = folders(tmp_path)
    secret = "correct-horse-battery-staple-" * 3
    (work / "key.txt").write_text(secret, encoding="utf-8")
    steps = [
        {"content": [use("Read", file_path="key.txt")]},
        {"content": [use("Write", file_path="out.txt", content="done")]},
        reply("written"),
    ]
    params = {"steps": steps, "cwd": str(work), "secrets": [secret]}

    async def go() -> dict[str, Any]:
        client = await Client.connect(temporal_address)
        async with session_worker(client, task_queue="secret", factory=scripted):
            handle = await start_session(
                client, "go", task_queue="secret", params=params, trace=str(trace)
            )
            async for item in watch_session(handle, poll_s=0.05):
                if item.kind == "question":
                    await answer_permission(client, handle.id, str(item.data["call_id"]), "allow")
            result: dict[str, Any] = await handle.result()
            return result

    assert asyncio.run(go())["terminal"] == "completed"
    raw = trace.read_bytes()
    assert secret.encode() not in raw
    assert b"[REDACTED]" in raw
    assert b"\x00" not in raw, "a write left a hole in the file"
    for number, line in enumerate(raw.splitlines(), start=1):
        assert json.loads(line.decode()), f"line {number} is not a JSON object"
    replayed = replay(read_trace(trace))
    assert replayed.ended
    assert replayed.terminal == "completed"


def test_killed_worker_mid_side_effect_runs_it_at_most_once(
    temporal_address: str, worker_processes: list[WorkerProcess], tmp_path: Path
) -> None:
    """A worker SIGKILLed inside a side-effecting call: a second worker finishes the session,
    the call's effect is on disk once, and the trace says the call may have run."""
    work, trace = folders(tmp_path)
    queue = f"kill-{uuid.uuid4().hex[:8]}"
    steps = [{"content": [use("Append", line="once")]}, reply("carried on")]
    params = {"steps": steps, "cwd": str(work), "allow": ["Append"], "linger_s": 60.0}
    worker_processes.append(worker(temporal_address, queue))
    ledger = work / "ledger.txt"

    async def go() -> dict[str, Any]:
        client = await Client.connect(temporal_address)
        handle = await start_session(
            client,
            "go",
            task_queue=queue,
            params=params,
            trace=str(trace),
            heartbeat_timeout_s=2.0,
        )
        deadline = time.monotonic() + 60
        while not ledger.exists():  # the call is running: its side effect is done
            assert time.monotonic() < deadline, "the first worker never ran the call"
            await asyncio.sleep(0.05)
        worker_processes[0].kill()
        worker_processes.append(worker(temporal_address, queue))
        result: dict[str, Any] = await asyncio.wait_for(handle.result(), timeout=90)
        return result

    result = asyncio.run(go())
    assert result["terminal"] == "completed"
    assert ledger.read_text(encoding="utf-8") == "once\n"
    records = read_trace(trace)
    finished = [
        r.data["event"]
        for r in records.of_kind("event")
        if r.data["event"]["type"] == "ToolCallFinished"
    ]
    assert len(finished) == 1
    assert finished[0]["content"] == texts.not_rerun("Append")
    assert finished[0]["is_error"] is True
    assert replay(records).terminal == "completed"


def test_fifty_sessions_across_two_worker_processes(
    temporal_address: str, worker_pool: str, tmp_path: Path
) -> None:
    """Fifty concurrent sessions on two worker processes all complete; every trace replays."""
    count = 50
    sessions = [folders(tmp_path, f"s{n}") for n in range(count)]

    async def go() -> list[dict[str, Any]]:
        client = await Client.connect(temporal_address)
        handles = []
        for n, (work, trace) in enumerate(sessions):
            steps = [{"content": [use("Append", line=f"line {n}")]}, reply(f"done {n}")]
            params = {"steps": steps, "cwd": str(work), "allow": ["Append"]}
            handles.append(
                await start_session(
                    client, "go", task_queue=worker_pool, params=params, trace=str(trace)
                )
            )
        return list(
            await asyncio.wait_for(asyncio.gather(*(h.result() for h in handles)), timeout=120)
        )

    results = asyncio.run(go())
    assert [r["terminal"] for r in results] == ["completed"] * count
    assert [r["text"] for r in results] == [f"done {n}" for n in range(count)]
    for n, (work, trace) in enumerate(sessions):
        assert (work / "ledger.txt").read_text(encoding="utf-8") == f"line {n}\n"
        assert replay(read_trace(trace)).terminal == "completed"


def test_abort_signal_ends_a_running_call_with_a_result(
    temporal_address: str, tmp_path: Path
) -> None:
    """The abort signal, sent while a tool runs, ends the session aborted_tools; the call
    still gets its tool_result, and the trace replays."""
    work, trace = folders(tmp_path)
    steps = [{"content": [use("Append", line="slow")]}, reply("never sent")]
    params = {"steps": steps, "cwd": str(work), "allow": ["Append"], "linger_s": 30.0}

    async def go() -> dict[str, Any]:
        client = await Client.connect(temporal_address)
        async with session_worker(client, task_queue="abort", factory=scripted):
            handle = await start_session(
                client, "go", task_queue="abort", params=params, trace=str(trace)
            )
            while not (work / "ledger.txt").exists():
                await asyncio.sleep(0.05)
            await handle.signal("abort", "user")
            result: dict[str, Any] = await asyncio.wait_for(handle.result(), timeout=30)
            return result

    result = asyncio.run(go())
    assert result["terminal"] == "aborted_tools"
    records = read_trace(trace)
    call = [r.data["name"] for r in records.of_kind("transition") if r.data["call_id"]]
    assert call[-2:] == ["cancelled", "result_yielded"]  # the core wrote the call's result
    assert replay(records).terminal == "aborted_tools"


def test_run_temporal_streams_progress_and_answers_with_yes(
    temporal_address: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`fsm-agent run --temporal --yes` prints the session, its transitions, the question it
    answered and the answer, and exits 0 once the session completes."""
    work, trace = folders(tmp_path)
    steps = [{"content": [use("Write", file_path="out.txt", content="hi")]}, reply("wrote it")]
    params = {"steps": steps, "cwd": str(work)}
    argv = ["run", "go", "--temporal", "--yes", "--address", temporal_address]
    argv += ["--task-queue", "cli", "--params", json.dumps(params), "--trace", str(trace)]

    async def go() -> int:
        client = await Client.connect(temporal_address)
        async with session_worker(client, task_queue="cli", factory=scripted):
            return await asyncio.to_thread(cli.main, argv)

    assert asyncio.run(go()) == 0
    out = capsys.readouterr().out
    assert out.startswith("session fsm-agent-")
    assert "  → request_sent" in out
    assert '  ? Write {"content": "hi", "file_path": "out.txt"}' in out
    assert "wrote it" in out
    assert "ended: completed" in out
    assert (work / "out.txt").read_text(encoding="utf-8") == "hi"


def test_a_session_counts_tokens_through_an_activity(temporal_address: str, tmp_path: Path) -> None:
    """With ``count_tokens`` on, the workflow asks a worker for the exact count before each
    request; the count is in the trace, and the trace replays."""
    work, trace = folders(tmp_path)
    params = {"steps": [{"content": [use("Append", line="x")]}, reply("ok")], "cwd": str(work)}
    params |= {"allow": ["Append"], "count_tokens": True}

    assert finish(temporal_address, "counting", params, trace)["terminal"] == "completed"
    counted = [
        r.data["event"]
        for r in read_trace(trace).of_kind("event")
        if r.data["event"]["type"] == "TokensCounted"
    ]
    assert len(counted) == 2
    assert all(c["input_tokens"] > 0 and c["error"] == "" for c in counted)
    assert replay(read_trace(trace)).terminal == "completed"


def test_approve_of_a_session_that_does_not_exist_names_it(
    temporal_address: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``fsm-agent approve`` with a wrong session id exits 1 naming the id, no traceback."""
    status = cli.main(
        ["approve", "no-such-session", "toolu_1", "allow", "--address", temporal_address]
    )
    assert status == 1
    assert "cannot answer session 'no-such-session'" in capsys.readouterr().err


def test_approve_at_an_address_where_no_cluster_answers_names_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``fsm-agent approve`` against a closed port exits 1 naming the address."""
    status = cli.main(["approve", "s", "toolu_1", "allow", "--address", "127.0.0.1:1"])
    assert status == 1
    assert "cannot reach a Temporal cluster at '127.0.0.1:1'" in capsys.readouterr().err


def test_a_temporal_command_run_as_the_program_skips_the_interpreter_teardown(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`fsm-agent approve` run as the program (no argv given) ends through ``os._exit``
    with its status, once the exit handlers have run: the Temporal SDK's bridge threads
    aborted the interpreter's teardown about one time in three ("Fatal Python error:
    PyGILState_Release", exit 134 where 1 was due)."""
    steps: list[object] = []
    monkeypatch.setattr(atexit, "_run_exitfuncs", lambda: steps.append("exit handlers"))

    def leave(status: int) -> None:
        steps.append(status)
        raise SystemExit(status)

    monkeypatch.setattr(os, "_exit", leave)
    argv = ["fsm-agent", "approve", "s", "toolu_1", "allow", "--address", "127.0.0.1:1"]
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(SystemExit):
        cli.main()
    assert steps == ["exit handlers", 1]
    assert "cannot reach a Temporal cluster at '127.0.0.1:1'" in capsys.readouterr().err


def test_worker_at_an_address_where_no_cluster_answers_names_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``fsm-agent worker`` against a closed port exits 1 with one line naming the address,
    as ``approve`` does, not a traceback."""
    status = cli.main(["worker", "--address", "127.0.0.1:1"])
    assert status == 1
    err = capsys.readouterr().err
    assert "cannot reach a Temporal cluster at '127.0.0.1:1'" in err
    assert "serving" not in err  # said only once the cluster answers
    assert "Traceback" not in err
    assert cli.main(["worker", "--address", ""]) == 1  # the SDK's ValueError: no host
    err = capsys.readouterr().err
    assert "cannot reach a Temporal cluster at '': invalid target URL" in err
    assert "Traceback" not in err


def test_a_session_snips_through_the_worker_tool(temporal_address: str, tmp_path: Path) -> None:
    """With ``snip`` on, the worker's agent offers Snip; its request reaches the workflow's
    core through the call's result, the round leaves what is sent, and the trace replays."""
    work, trace = folders(tmp_path)
    steps = [
        {"content": [use("Append", line="x")]},
        {"content": [use("Snip", ids=["toolu_001"])]},
        reply("ok"),
    ]
    params = {"steps": steps, "cwd": str(work), "allow": ["Append"], "snip": True}

    assert finish(temporal_address, "snipping", params, trace)["terminal"] == "completed"
    assert "history_snipped" in loop_names(trace)
    notes = [
        str(r.data["effect"]["message"])
        for r in read_trace(trace).of_kind("effect")
        if r.data["effect"]["type"] == "Emit"
    ]
    assert any("Snipped toolu_001: 2 messages left the conversation" in n for n in notes)
    assert replay(read_trace(trace)).terminal == "completed"
