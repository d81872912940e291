"""Starting, watching and answering sessions on a Temporal cluster, from any process."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Mapping
from typing import Any

import attrs
from temporalio.client import Client, WorkflowHandle, WorkflowUpdateFailedError
from temporalio.converter import DataConverter
from temporalio.service import RPCError

from fsm_agent.errors import ConfigError, UsageError
from fsm_agent.runtime.agent import as_messages
from fsm_agent.temporal.workflow import SESSION_WORKFLOW, history_bound_problem


@attrs.frozen(kw_only=True)
class SessionProgress:
    """Something a session did (``kind`` ``transition`` or ``message``), or a permission
    question it waits on (``kind`` ``question``)."""

    kind: str
    data: Mapping[str, Any]


async def start_session(
    client: Client,
    prompt: str,
    *,
    task_queue: str,
    session_id: str | None = None,
    params: Mapping[str, Any] | None = None,
    trace: str | None = None,
    heartbeat_timeout_s: float = 10.0,
    continue_after_events: int | None = None,
    continue_after_bytes: int | None = None,
) -> WorkflowHandle[Any, Any]:
    """Start a session; its workflow handle (its id is the run name ``approve`` takes).

    Args:
        client: a connected Temporal client.
        prompt: what to ask the agent.
        task_queue: where the workers serving sessions listen.
        session_id: the workflow id (default: ``fsm-agent-`` and a random suffix).
        params: keyword arguments for the workers' agent factory (JSON values).
        trace: the trace file on the workers' file system (default: the agent's own choice).
        heartbeat_timeout_s: how long a silent activity is given before its worker is taken
            for dead (a side-effecting tool call is then reported as possibly run).
        continue_after_events: continue the session as a new run once its history holds
            this many events (at the next model request with nothing else in flight); the
            server's own suggestion applies either way.
        continue_after_bytes: likewise, once its history holds this many bytes (each model
            call's input carries its request, so the bytes grow with context times turns).

    Raises:
        UsageError: the prompt is empty.
        ConfigError: a history bound is not a positive integer.
    """
    as_messages(prompt)  # the same check as the in-process agent: an empty prompt is refused
    check_history_bounds(continue_after_events, continue_after_bytes)
    start = {
        "prompt": prompt,
        "params": dict(params or {}),
        "trace": trace,
        "heartbeat_timeout_s": heartbeat_timeout_s,
        "continue_after_events": continue_after_events,
        "continue_after_bytes": continue_after_bytes,
    }
    return await client.start_workflow(
        SESSION_WORKFLOW,
        start,
        id=session_id or f"fsm-agent-{uuid.uuid4().hex[:12]}",
        task_queue=task_queue,
    )


def check_history_bounds(
    continue_after_events: object = None, continue_after_bytes: object = None
) -> None:
    """Refuse a history bound that is not None or a positive integer.

    Raises:
        ConfigError: naming the bound and the value given.
    """
    given = {
        "continue_after_events": continue_after_events,
        "continue_after_bytes": continue_after_bytes,
    }
    for name, value in given.items():
        problem = history_bound_problem(name, value)
        if problem is not None:
            raise ConfigError(problem)


async def watch_session(
    handle: WorkflowHandle[Any, Any], *, poll_s: float = 0.2
) -> AsyncIterator[SessionProgress]:
    """What the session does, as it does it, until it ends (each question reported once)."""
    seen = 0
    asked: set[str] = set()
    ending = asyncio.ensure_future(handle.result())
    try:
        while True:
            done = ending.done()
            status = await handle.query("status")
            for item in await handle.query("progress", seen):
                # Numbered across the runs of a continued session, so none is seen twice.
                seen = int(item.get("n", seen)) + 1
                yield SessionProgress(kind=str(item["kind"]), data=item)
            for question in status["questions"]:
                if question["call_id"] not in asked:
                    asked.add(question["call_id"])
                    yield SessionProgress(kind="question", data=question)
            if done:
                return
            await asyncio.wait({ending}, timeout=poll_s)
    finally:
        if not ending.done():
            ending.cancel()


async def connect(
    address: str, *, namespace: str = "default", data_converter: DataConverter | None = None
) -> Client:
    """A client of the cluster at ``address``; ``data_converter``: the one every client and
    worker of the sessions shares (default: Temporal's), e.g. one whose payload codec
    encrypts the history.

    Raises:
        ConfigError: nothing answers there (the address is named).
    """
    try:
        return await Client.connect(
            address, namespace=namespace, data_converter=data_converter or DataConverter.default
        )
    except (RuntimeError, ValueError) as exc:  # the SDK's bridge reports a failed
        # connection as a RuntimeError, an address it cannot parse as a ValueError
        raise ConfigError(f"cannot reach a Temporal cluster at {address!r}: {exc}") from exc


async def answer_permission(
    client: Client, session_id: str, call_id: str, decision: str, *, message: str = ""
) -> str:
    """Answer a pending permission question of session ``session_id`` (``allow``/``deny``).

    Raises:
        UsageError: no such session is running, no such question is pending, or the
            decision is neither word.
    """
    handle = client.get_workflow_handle(session_id)
    try:
        answered: str = await handle.execute_update(
            "answer_permission", args=[call_id, decision, message], result_type=str
        )
    except WorkflowUpdateFailedError as exc:
        raise UsageError(str(exc.cause or exc)) from exc
    except RPCError as exc:  # no such session, or it has ended
        raise UsageError(f"cannot answer session {session_id!r}: {exc}") from exc
    return answered
