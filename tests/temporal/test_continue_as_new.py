"""Long sessions continue as new runs on a real development server: the session goes on
seamlessly, its trace stays one file that replays, and clients notice nothing."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import orjson
import pytest

pytest.importorskip("temporalio", reason="the fsm_agent[temporal] extra is not installed")

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowFailureError, WorkflowHandle, WorkflowHistory
from temporalio.worker import Replayer

from fsm_agent.core import texts
from fsm_agent.errors import ConfigError
from fsm_agent.temporal import (
    SessionWorkflow,
    answer_permission,
    session_worker,
    start_session,
    watch_session,
    workflow_runner,
)
from fsm_agent.temporal.workflow import (
    PROGRESS_CARRIED,
    PROGRESS_CARRIED_BYTES,
    SESSION_WORKFLOW,
    carried_progress,
)
from fsm_agent.trace.reader import read_trace
from fsm_agent.trace.replay import replay

from .conftest import WorkerProcess, causes_of, worker
from .session_agents import scripted
from .test_sessions import folders, loop_names, reply, use

TURNS = 24
THRESHOLD = 60
"""History events after which a run continues: a few model turns' worth."""


async def run_histories(client: Client, workflow_id: str, first_run: str) -> list[WorkflowHistory]:
    """The history of every run of a session, following the continue-as-new chain."""
    histories = []
    run_id: str | None = first_run
    while run_id:
        history = await client.get_workflow_handle(workflow_id, run_id=run_id).fetch_history()
        histories.append(history)
        last = history.events[-1]
        run_id = None
        if last.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
            run_id = last.workflow_execution_continued_as_new_event_attributes.new_execution_run_id
    return histories


async def start_long(
    client: Client, queue: str, params: dict[str, Any], trace: Path, *, after: int = THRESHOLD
) -> WorkflowHandle[Any, Any]:
    """A session that continues as new after ``after`` history events."""
    return await start_session(
        client, "go", task_queue=queue, params=params, trace=str(trace), continue_after_events=after
    )


def test_a_long_session_continues_as_new_and_stays_one_trace(
    temporal_address: str, tmp_path: Path
) -> None:
    """A session of many model turns with a small history threshold runs over several runs;
    a permission Update after a boundary is answered, progress arrives once each, every
    side effect happened once, the one trace replays and the Replayer accepts every run."""
    work, trace = folders(tmp_path)
    steps = [{"content": [use("Append", line=f"line {n}")]} for n in range(TURNS)]
    steps[TURNS // 2 + 2] = {"content": [use("Write", file_path="out.txt", content="late")]}
    steps.append(reply("all done"))
    params = {"steps": steps, "cwd": str(work), "allow": ["Append"]}
    numbers: list[int] = []
    runs_when_asked: list[int] = []

    async def go() -> tuple[dict[str, Any], list[WorkflowHistory]]:
        client = await Client.connect(temporal_address)
        async with session_worker(client, task_queue="long", factory=scripted):
            handle = await start_long(client, "long", params, trace)
            async for item in watch_session(handle, poll_s=0.05):
                if item.kind == "question":
                    runs_when_asked.append((await handle.query("status"))["runs"])
                    await answer_permission(client, handle.id, item.data["call_id"], "allow")
                else:
                    numbers.append(int(item.data["n"]))
            result: dict[str, Any] = await handle.result()
            assert handle.first_execution_run_id is not None
            histories = await run_histories(client, handle.id, handle.first_execution_run_id)
            return result, histories

    result, histories = asyncio.run(go())
    assert result["terminal"] == "completed"
    assert result["text"] == "all done"
    assert result["turns"] == TURNS + 1
    assert result["runs"] == len(histories) >= 3
    assert runs_when_asked and runs_when_asked[0] >= 2  # the question came after a boundary
    assert numbers == list(range(len(numbers)))  # every progress item once, in order
    lines = [f"line {n}\n" for n in range(TURNS) if n != TURNS // 2 + 2]
    assert (work / "ledger.txt").read_text(encoding="utf-8") == "".join(lines)
    assert (work / "out.txt").read_text(encoding="utf-8") == "late"
    records = read_trace(trace)
    assert len(records.of_kind("end")) == 1
    assert loop_names(trace).count("next_turn") == TURNS
    assert replay(records).terminal == "completed"
    assert all(len(history.events) < 3 * THRESHOLD for history in histories)

    async def replay_histories() -> None:
        replayer = Replayer(workflows=[SessionWorkflow], workflow_runner=workflow_runner())
        for history in histories:
            await replayer.replay_workflow(history)  # raises on any non-determinism

    asyncio.run(replay_histories())


def model_calls_at_bytes(history: WorkflowHistory) -> list[int]:
    """For each model call a run scheduled, the bytes its history held when the workflow
    decided to make it (at the start of the workflow task that scheduled it)."""
    held = 0
    decided_at = 0
    found = []
    for event in history.events:
        held += event.ByteSize()
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED:
            decided_at = held
        elif (
            event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
            and event.activity_task_scheduled_event_attributes.activity_type.name
            == "fsm_agent.call_model"
        ):
            found.append(decided_at)
    return found


BYTES_BOUND = 150_000
"""History bytes after which a run continues: a few turns of a context that grows by
about 700 bytes a turn, above what a continued run starts with."""


def test_a_session_continues_as_new_past_a_history_size(
    temporal_address: str, tmp_path: Path
) -> None:
    """A session bounded by continue_after_bytes alone, whose every model call carries a
    context that grows each turn, makes no model call once a run's history holds that many
    bytes (but the one the run was continued for) and continues as new instead; every side
    effect happened once and the one trace replays."""
    work, trace = folders(tmp_path)
    lines = [f"{n:03d} " + "x" * 300 for n in range(TURNS)]
    steps = [{"content": [use("Append", line=line)]} for line in lines]
    params = {"steps": [*steps, reply("all done")], "cwd": str(work), "allow": ["Append"]}

    async def go() -> tuple[dict[str, Any], list[WorkflowHistory]]:
        client = await Client.connect(temporal_address)
        async with session_worker(client, task_queue="long-bytes", factory=scripted):
            handle = await start_session(
                client,
                "go",
                task_queue="long-bytes",
                params=params,
                trace=str(trace),
                continue_after_bytes=BYTES_BOUND,
            )
            result: dict[str, Any] = await handle.result()
            assert handle.first_execution_run_id is not None
            return result, await run_histories(client, handle.id, handle.first_execution_run_id)

    result, histories = asyncio.run(go())
    assert result["terminal"] == "completed"
    assert result["runs"] == len(histories) >= 3
    decided = [model_calls_at_bytes(history) for history in histories]
    assert sum(len(calls) for calls in decided) == TURNS + 1
    assert all(held < BYTES_BOUND for calls in decided for held in calls[1:]), decided
    assert (work / "ledger.txt").read_text(encoding="utf-8") == "".join(f"{x}\n" for x in lines)
    assert replay(read_trace(trace)).terminal == "completed"


def test_a_continued_run_carries_a_bounded_tail_of_progress() -> None:
    """The progress a continued run keeps for watchers still behind is the latest items, at
    most PROGRESS_CARRIED of them and PROGRESS_CARRIED_BYTES of JSON, however long the
    messages were."""
    items = [{"kind": "message", "text": "m" * 5_000, "n": n} for n in range(40)]
    kept = carried_progress(items)
    assert kept == items[len(items) - len(kept) :]
    assert 0 < len(kept) < len(items)
    assert len(orjson.dumps(kept)) <= PROGRESS_CARRIED_BYTES
    small = [{"kind": "transition", "n": n} for n in range(PROGRESS_CARRIED + 10)]
    assert carried_progress(small) == small[10:]
    assert carried_progress([{"kind": "message", "text": "m" * 10**6, "n": 0}]) == []


def test_abort_signal_reaches_a_continued_run(temporal_address: str, tmp_path: Path) -> None:
    """The abort signal sent to a session that has continued as new ends it aborted, with a
    tool_result for the running call, and the trace across the runs replays."""
    work, trace = folders(tmp_path)
    steps = [{"content": [use("Append", line=f"line {n}")]} for n in range(40)]
    params: dict[str, Any] = {"steps": [*steps, reply("never")], "cwd": str(work)}
    params.update(allow=["Append"], linger_s=0.2)

    async def go() -> dict[str, Any]:
        client = await Client.connect(temporal_address)
        async with session_worker(client, task_queue="long-abort", factory=scripted):
            handle = await start_long(client, "long-abort", params, trace)
            while (await handle.query("status"))["runs"] < 2:
                await asyncio.sleep(0.05)
            await handle.signal("abort", "user")
            result: dict[str, Any] = await asyncio.wait_for(handle.result(), timeout=60)
            return result

    result = asyncio.run(go())
    assert result["terminal"] in {"aborted_tools", "aborted_streaming"}
    assert result["runs"] >= 2
    records = read_trace(trace)
    assert replay(records).terminal == result["terminal"]


def test_a_worker_killed_across_continued_runs_runs_no_side_effect_twice(
    temporal_address: str, worker_processes: list[WorkerProcess], tmp_path: Path
) -> None:
    """A worker SIGKILLed once the session has continued as new: a second worker finishes
    it; no Append happened twice, one is missing only where the trace says a call may have
    run or a model call was lost, and the one trace replays."""
    work, trace = folders(tmp_path)
    queue = f"long-kill-{uuid.uuid4().hex[:8]}"
    steps = [{"content": [use("Append", line=f"line {n}")]} for n in range(16)]
    params: dict[str, Any] = {"steps": [*steps, reply("done")], "cwd": str(work)}
    params.update(allow=["Append"], linger_s=0.3)
    worker_processes.append(worker(temporal_address, queue))

    async def go() -> dict[str, Any]:
        client = await Client.connect(temporal_address)
        handle = await start_session(
            client,
            "go",
            task_queue=queue,
            params=params,
            trace=str(trace),
            heartbeat_timeout_s=2.0,
            continue_after_events=THRESHOLD,
        )
        while (await handle.query("status"))["runs"] < 2:
            await asyncio.sleep(0.05)
        worker_processes[0].kill()
        worker_processes.append(worker(temporal_address, queue))
        result: dict[str, Any] = await asyncio.wait_for(handle.result(), timeout=120)
        return result

    result = asyncio.run(go())
    assert result["terminal"] == "completed"
    assert result["runs"] >= 2
    written = (work / "ledger.txt").read_text(encoding="utf-8").splitlines()
    assert len(written) == len(set(written))  # at most once each
    records = read_trace(trace)
    events = [r.data["event"] for r in records.of_kind("event")]
    not_rerun = [
        e
        for e in events
        if e["type"] == "ToolCallFinished" and e["content"] == texts.not_rerun("Append")
    ]
    # A model call lost with the worker is asked again, and the scripted model, which
    # counts requests, answers the retry with its next step: that step's Append is skipped.
    lost = [e for e in events if e["type"] == "ModelStreamFailed" and e["kind"] == "connection"]
    assert len(written) >= len(steps) - len(not_rerun) - len(lost)
    assert replay(records).terminal == "completed"


def test_a_bad_history_threshold_is_refused_before_starting() -> None:
    """continue_after_events or continue_after_bytes of 0, a negative number, a bool, a
    float or a string is a ConfigError naming the bound and the value."""

    async def go(name: str, value: Any) -> None:
        await start_session(None, "go", task_queue="q", **{name: value})  # type: ignore[arg-type]

    for name in ("continue_after_events", "continue_after_bytes"):
        for value in (0, -5, True, 1e6, "100"):
            with pytest.raises(ConfigError, match=f"{name} must be a positive .*{value!r}"):
                asyncio.run(go(name, value))


def test_a_bad_history_threshold_given_to_the_workflow_fails_it_at_once(
    temporal_address: str, tmp_path: Path
) -> None:
    """A session started by hand with a threshold that is no positive integer fails at
    once, naming the bound, instead of retrying its first task for ever."""
    work, _trace = folders(tmp_path)

    async def go() -> None:
        client = await Client.connect(temporal_address)
        async with session_worker(client, task_queue="bad-bound", factory=scripted):
            start = {
                "prompt": "go",
                "params": {"steps": [reply("hi")], "cwd": str(work)},
                "continue_after_events": "many",
            }
            handle = await client.start_workflow(
                SESSION_WORKFLOW, start, id=f"bad-{uuid.uuid4().hex[:8]}", task_queue="bad-bound"
            )
            await asyncio.wait_for(handle.result(), timeout=30)

    with pytest.raises(WorkflowFailureError) as failed:
        asyncio.run(go())
    assert any("continue_after_events must be a positive" in c for c in causes_of(failed.value))
