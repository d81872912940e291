"""A model call's activity input carries only what changed since the run's previous request;
the worker rebuilds the request, and one that cannot gets it whole, so the model is asked
exactly what the in-process driver asks it."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("temporalio", reason="the fsm_agent[temporal] extra is not installed")

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHistory
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment
from temporalio.worker import Replayer

from fsm_agent.core import codec
from fsm_agent.core import effects as fx
from fsm_agent.temporal import (
    SessionActivities,
    SessionWorkflow,
    answer_permission,
    session_worker,
    start_session,
    workflow_runner,
)

from .session_agents import REQUESTS_LOG, scripted
from .test_sessions import folders, reply, use

TURNS = 8


def model_call_inputs(history: WorkflowHistory) -> list[dict[str, Any]]:
    """The input of every model-call activity the run scheduled, in order."""
    found = []
    for event in history.events:
        if event.event_type != EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            continue
        scheduled = event.activity_task_scheduled_event_attributes
        if scheduled.activity_type.name == "fsm_agent.call_model":
            found.append(json.loads(scheduled.input.payloads[0].data))
    return found


def world(work: Path) -> dict[str, Any]:
    """Appends that each add a turn to the context, a Write that asks permission, a reply."""
    steps = [{"content": [use("Append", line=f"line {n} " + "y" * 200)]} for n in range(TURNS)]
    steps.insert(TURNS // 2, {"content": [use("Write", file_path="w.txt", content="w")]})
    return {
        "steps": [*steps, reply("done")],
        "cwd": str(work),
        "allow": ["Append"],
        "record_requests": True,
    }


def test_model_calls_carry_what_changed_and_a_new_worker_gets_it_whole(
    temporal_address: str, tmp_path: Path
) -> None:
    """On one worker every model call after a run's first carries only the messages after
    the start it shares with the previous request; when the session moves to a worker that
    never saw that request (the first worker stopped while a question waited), that call is
    sent again whole; the model gets the in-process driver's requests, and the Replayer
    accepts the history."""
    local, _ = folders(tmp_path, "local")
    remote, trace = folders(tmp_path, "remote")
    # In-process, the Write is allowed by a rule rather than by an answer: same requests.
    local_agent = scripted(**{**world(local), "allow": ["Append", "Write"]})
    assert asyncio.run(local_agent.run("go")).terminal == "completed"

    async def go() -> WorkflowHistory:
        client = await Client.connect(temporal_address)
        async with session_worker(client, task_queue="deltas", factory=scripted):
            handle = await start_session(
                client, "go", task_queue="deltas", params=world(remote), trace=str(trace)
            )
            while not (questions := (await handle.query("status"))["questions"]):
                await asyncio.sleep(0.05)
        async with session_worker(client, task_queue="deltas", factory=scripted):
            await answer_permission(client, handle.id, questions[0]["call_id"], "allow")
            result = await asyncio.wait_for(handle.result(), timeout=60)
            assert result["terminal"] == "completed"
            return await handle.fetch_history()

    history = asyncio.run(go())
    inputs = model_call_inputs(history)
    based = [job for job in inputs if "base" in job]
    whole = [job for job in inputs if "base" not in job]
    assert len(whole) == 2  # the first request, and the one the new worker could not build
    assert len(based) == len(inputs) - 2 >= TURNS - 1
    assert all(len(job["messages"]) <= 2 < job["base"]["keep"] for job in based[1:])
    not_held = [
        e
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED
        and e.activity_task_failed_event_attributes.failure.application_failure_info.type
        == "RequestNotHeld"
    ]
    assert len(not_held) == 1
    asked = [(side / REQUESTS_LOG).read_text(encoding="utf-8") for side in (local, remote)]
    assert asked[0] == asked[1]

    async def replay_history() -> None:
        replayer = Replayer(workflows=[SessionWorkflow], workflow_runner=workflow_runner())
        await replayer.replay_workflow(history)

    asyncio.run(replay_history())


def call_model(activities: SessionActivities, job: dict[str, Any]) -> list[dict[str, Any]]:
    """Run the call_model activity once, as a worker of a run ``run-1`` would."""
    environment = ActivityEnvironment()
    environment.info = dataclasses.replace(environment.info, workflow_run_id="run-1")
    found: list[dict[str, Any]] = asyncio.run(environment.run(activities.call_model, job))
    return found


def test_a_model_call_building_on_a_request_not_held_fails_for_good(tmp_path: Path) -> None:
    """A model call whose job builds on a request this worker never made, or on another
    request than the one it holds, fails at once with RequestNotHeld (not retried), and the
    model is not asked."""
    params = {"steps": [reply("one"), reply("two")], "cwd": str(tmp_path)}
    params["record_requests"] = True
    session = {"id": "s-1", "params": params}
    effect = codec.dump_effect(
        fx.CallModel(effect_id="e1", request_id="r1", model="scripted-model", max_output_tokens=99)
    )
    first = [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
    activities = SessionActivities(scripted)
    base_job = {"session": session, "effect": effect, "requests_before": 0}
    for base in ({"request": 0, "keep": 1}, {"request": 5, "keep": 1}):
        if base["request"] == 5:
            call_model(activities, {**base_job, "messages": first})
        job = {**base_job, "requests_before": 6, "messages": [], "base": base}
        with pytest.raises(ApplicationError) as failed:
            call_model(activities, job)
        assert failed.value.type == "RequestNotHeld"
        assert failed.value.non_retryable
    assert len((tmp_path / REQUESTS_LOG).read_text(encoding="utf-8").splitlines()) == 1
