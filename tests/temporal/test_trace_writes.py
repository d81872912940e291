"""The trace writes of a Temporal session: idempotent under retries and late deliveries, never
cutting the file, and loud when the file holds bytes the session did not write."""

from __future__ import annotations

import asyncio
import re
import uuid
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("temporalio", reason="the fsm_agent[temporal] extra is not installed")

from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.enums.v1 import EventType
from temporalio.api.workflowservice.v1 import ResetWorkflowExecutionRequest
from temporalio.client import Client, WorkflowFailureError
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from fsm_agent.temporal import (
    SessionActivities,
    answer_permission,
    session_worker,
    start_session,
)
from fsm_agent.trace.reader import read_trace
from fsm_agent.trace.replay import replay

from .conftest import WorkerProcess, causes_of, worker
from .session_agents import scripted
from .test_sessions import folders, reply, use

SECRET = "open-sesame-0123456789"
LINES = (
    '{"kind":"header","n":0}\n',
    f'{{"kind":"event","n":1,"said":"{SECRET}"}}\n',
    '{"kind":"event","n":2}\n',
)


def write(
    activities: SessionActivities, path: Path, offset: int, data: str, *, ended: bool = False
) -> int:
    """Run the write_trace activity once, as a worker would."""
    session = {"id": "s-1", "params": {"steps": [reply("hi")], "cwd": str(path.parent)}}
    session["params"]["secrets"] = [SECRET]
    job = {"session": session, "path": str(path), "offset": offset, "data": data, "ended": ended}
    end: int = asyncio.run(ActivityEnvironment().run(activities.write_trace, job))
    return end


def test_a_late_first_write_after_later_writes_leaves_the_trace_whole(tmp_path: Path) -> None:
    """The first write delivered again after the later ones (redacted lines among them)
    changes no byte of the file and answers where it ended the first time."""
    activities = SessionActivities(scripted)
    path = tmp_path / "trace.jsonl"
    first = write(activities, path, 0, LINES[0])
    second = write(activities, path, first, LINES[1])
    third = write(activities, path, second, LINES[2], ended=True)
    whole = path.read_bytes()
    assert SECRET.encode() not in whole
    assert len(whole) == third
    assert write(activities, path, 0, LINES[0]) == first
    assert write(activities, path, first, LINES[1]) == second
    assert path.read_bytes() == whole


def test_a_conflicting_write_fails_for_good_naming_trace_and_offset(tmp_path: Path) -> None:
    """Bytes at a write's offset that are not its own: a non-retryable TraceWriteConflict
    naming the trace file and the offset, and the file is not changed."""
    activities = SessionActivities(scripted)
    path = tmp_path / "trace.jsonl"
    first = write(activities, path, 0, LINES[0])
    write(activities, path, first, LINES[2])
    before = path.read_bytes()
    with pytest.raises(ApplicationError) as failed:
        write(activities, path, first, LINES[1])
    assert failed.value.non_retryable
    assert failed.value.type == "TraceWriteConflict"
    assert str(path) in str(failed.value)
    differs = first + len(LINES[1].partition("1")[0])  # the first byte that differs
    assert f"offset {differs}" in str(failed.value)
    assert path.read_bytes() == before


def test_a_superseded_sessions_late_first_write_keeps_the_newer_trace(tmp_path: Path) -> None:
    """Two sessions traced to one named file: the first write of the earlier session,
    delivered by a stalled worker after the later session wrote its trace there, fails for
    good and leaves the later session's trace whole (it used to wipe it)."""
    activities = SessionActivities(scripted)
    path = tmp_path / "trace.jsonl"
    later = '{"meta":{"started":"2026-03-01T09:00:05+00:00"},"record":"header"}\n'
    ended = write(activities, path, 0, later)
    write(activities, path, ended, LINES[2], ended=True)
    before = path.read_bytes()
    earlier = '{"meta":{"started":"2026-03-01T09:00:00+00:00"},"record":"header"}\n'
    with pytest.raises(ApplicationError) as failed:
        write(activities, path, 0, earlier)
    assert failed.value.non_retryable
    assert failed.value.type == "TraceWriteConflict"
    assert "superseded run" in str(failed.value)
    assert path.read_bytes() == before


def permission_steps(count: int) -> list[dict[str, Any]]:
    """``count`` Writes, each asking permission (so the trace is written before each
    question), then a reply."""
    writes = [
        {"content": [use("Write", file_path=f"out{n}.txt", content=str(n))]} for n in range(count)
    ]
    return [*writes, reply("written")]


async def next_question(client: Client, session_id: str, seen: set[str]) -> str:
    """The call id of the session's next pending question not yet answered."""
    handle = client.get_workflow_handle(session_id)
    async with asyncio.timeout(60):
        while True:
            for question in (await handle.query("status"))["questions"]:
                if question["call_id"] not in seen:
                    seen.add(question["call_id"])
                    return str(question["call_id"])
            await asyncio.sleep(0.05)


def test_a_worker_killed_between_trace_writes_leaves_one_whole_trace(
    temporal_address: str, worker_processes: list[WorkerProcess], tmp_path: Path
) -> None:
    """A worker SIGKILLed after the trace was first written (a question pending) and again
    after a later write: the workers after it go on writing where the file ends, and the
    session's trace is one file, its first bytes unchanged, with one header and one end, that
    replays."""
    work, trace = folders(tmp_path)
    queue = f"writes-{uuid.uuid4().hex[:8]}"
    params = {"steps": permission_steps(2), "cwd": str(work)}
    worker_processes.append(worker(temporal_address, queue))
    written: list[bytes] = []

    async def go() -> dict[str, Any]:
        client = await Client.connect(temporal_address)
        handle = await start_session(
            client, "go", task_queue=queue, params=params, trace=str(trace), heartbeat_timeout_s=2
        )
        asked: set[str] = set()
        for _ in range(2):
            call_id = await next_question(client, handle.id, asked)
            written.append(trace.read_bytes())  # flushed before the question was asked
            worker_processes[-1].kill()
            worker_processes.append(worker(temporal_address, queue))
            await answer_permission(client, handle.id, call_id, "allow")
        result: dict[str, Any] = await asyncio.wait_for(handle.result(), timeout=120)
        return result

    assert asyncio.run(go())["terminal"] == "completed"
    whole = trace.read_bytes()
    assert written[0] and whole.startswith(written[1]) and written[1].startswith(written[0])
    assert len(written[1]) > len(written[0])
    assert whole.count(b'"record":"header"') == 1
    records = read_trace(trace)
    assert len(records.of_kind("end")) == 1
    assert replay(records).terminal == "completed"
    assert (work / "out0.txt").read_text(encoding="utf-8") == "0"
    assert (work / "out1.txt").read_text(encoding="utf-8") == "1"


def test_a_session_whose_trace_was_changed_under_it_fails_loudly(
    temporal_address: str, tmp_path: Path
) -> None:
    """Bytes appended to a session's trace by someone else while it waits for an answer:
    its next write does not fit, and the session fails naming the trace and the offset
    instead of writing over them or after them."""
    work, trace = folders(tmp_path)
    params = {"steps": permission_steps(1), "cwd": str(work)}

    async def go() -> None:
        client = await Client.connect(temporal_address)
        async with session_worker(client, task_queue="tampered", factory=scripted):
            handle = await start_session(
                client, "go", task_queue="tampered", params=params, trace=str(trace)
            )
            call_id = await next_question(client, handle.id, set())
            with trace.open("ab") as file:
                file.write(b'{"kind":"stray"}\n')  # someone else's line
            await answer_permission(client, handle.id, call_id, "allow")
            await asyncio.wait_for(handle.result(), timeout=60)

    with pytest.raises(WorkflowFailureError) as failed:
        asyncio.run(go())
    stray = b'{"kind":"stray"}\n'
    size = len(trace.read_bytes()) - len(stray)
    named = [
        m for c in causes_of(failed.value) if (m := re.search(r"(\S+): at byte offset (\d+)", c))
    ]
    assert named, causes_of(failed.value)
    assert str(failed.value.cause).startswith("TraceWriteConflict: ")
    assert named[0][1] == str(trace)
    assert size <= int(named[0][2]) < size + len(stray)  # the first byte that differs
    assert trace.read_bytes().endswith(stray)


async def reset_to_the_question(client: Client, session_id: str) -> str:
    """Reset a session to the end of the workflow task that asked its first question (the
    trace written up to the question, the answer not yet taken); the new run's id."""
    handle = client.get_workflow_handle(session_id)
    events = [event async for event in handle.fetch_history_events()]
    accepted = next(
        e.event_id
        for e in events
        if e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED
    )
    task_done = max(
        e.event_id
        for e in events
        if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED and e.event_id < accepted
    )
    described = await handle.describe()
    answer = await client.workflow_service.reset_workflow_execution(
        ResetWorkflowExecutionRequest(
            namespace=client.namespace,
            workflow_execution=WorkflowExecution(workflow_id=session_id, run_id=described.run_id),
            reason="test: a reset session rewrites its trace from the reset point",
            workflow_task_finish_event_id=task_done,
            request_id=uuid.uuid4().hex,
        )
    )
    return str(answer.run_id)


def test_a_reset_session_keeps_the_replaced_runs_trace_beside_its_own(
    temporal_address: str, tmp_path: Path
) -> None:
    """A finished session reset to its first question: the new run goes its own way (a fresh
    scripted model asks again), its trace replaces the replaced run's from the reset point
    on, and the replaced run's whole trace is kept as NAME.superseded-1.jsonl (before, the
    reset run failed with TraceWriteConflict at its first write)."""
    work, trace = folders(tmp_path)
    params = {"steps": permission_steps(1), "cwd": str(work)}
    queue = f"reset-{uuid.uuid4().hex[:8]}"

    async def answer_until_done(client: Client, session_id: str) -> dict[str, Any]:
        handle = client.get_workflow_handle(session_id)
        result = asyncio.ensure_future(handle.result())
        asked: set[str] = set()
        while not result.done():
            status = await handle.query("status")
            for question in status["questions"]:
                if question["call_id"] not in asked:
                    asked.add(question["call_id"])
                    await answer_permission(client, session_id, question["call_id"], "allow")
            await asyncio.wait([result], timeout=0.1)
        answered: dict[str, Any] = result.result()
        return answered

    async def go() -> tuple[bytes, dict[str, Any]]:
        client = await Client.connect(temporal_address)
        async with session_worker(client, task_queue=queue, factory=scripted):
            handle = await start_session(
                client, "go", task_queue=queue, params=params, trace=str(trace)
            )
            first = await asyncio.wait_for(answer_until_done(client, handle.id), timeout=60)
            assert first["terminal"] == "completed"
        replaced = trace.read_bytes()
        await reset_to_the_question(client, handle.id)
        # A new worker: its scripted model starts from the first step, so the reset run
        # diverges from the replaced one right after the reset point.
        async with session_worker(client, task_queue=queue, factory=scripted):
            second = await asyncio.wait_for(answer_until_done(client, handle.id), timeout=60)
        return replaced, second

    replaced, second = asyncio.run(go())
    assert second["terminal"] == "completed"
    kept = trace.with_name(f"{trace.stem}.superseded-1{trace.suffix}")
    assert kept.read_bytes() == replaced
    whole = trace.read_bytes()
    assert whole != replaced
    header = replaced.partition(b"\n")[0]
    assert whole.startswith(header)  # the same session's trace, re-made from the start
    assert whole.count(b'"record":"header"') == 1
    records = read_trace(trace)
    assert len(records.of_kind("end")) == 1
    assert replay(records).terminal == "completed"
    assert replay(read_trace(kept)).terminal == "completed"
