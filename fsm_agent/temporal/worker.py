"""A Temporal worker for fsm_agent sessions: the workflow and the activities on one queue."""

from __future__ import annotations

from collections.abc import Callable

from temporalio.client import Client
from temporalio.converter import DataConverter
from temporalio.worker import Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from fsm_agent.temporal.activities import AgentFactory, SessionActivities
from fsm_agent.temporal.client import connect
from fsm_agent.temporal.workflow import SessionWorkflow

PASSED_THROUGH = (
    "fsm_agent.core",
    "fsm_agent.errors",
    "fsm_agent.lazy_exports",
    "fsm_agent.runtime",
    "fsm_agent.store",
    "fsm_agent.testing",
    "fsm_agent.toolbox",
    "fsm_agent.trace",
    "transitions",
    "attrs",
    "cattrs",
    "structlog",
    "orjson",
    "jiter",
)
"""Modules the workflow sandbox shares with the worker instead of re-importing them for each
run: the core and what it is built on are deterministic and keep no per-run module state, and
re-importing them would cost more than a session's work. The workflow module itself is not
among them, so the sandbox checks what it calls (no clock, no randomness, no I/O)."""


def workflow_runner() -> SandboxedWorkflowRunner:
    """The sandbox sessions run in (also what a ``Replayer`` of their histories needs)."""
    restrictions = SandboxRestrictions.default.with_passthrough_modules(*PASSED_THROUGH)
    return SandboxedWorkflowRunner(restrictions=restrictions)


def session_worker(
    client: Client,
    *,
    task_queue: str,
    factory: AgentFactory,
    heartbeat_s: float = 1.0,
    max_concurrent_activities: int = 100,
) -> Worker:
    """A worker that runs sessions on ``task_queue`` with the agents ``factory`` builds.

    Use it as ``async with session_worker(...):`` or ``await worker.run()``.
    """
    activities = SessionActivities(factory, heartbeat_s=heartbeat_s)
    return Worker(
        client,
        task_queue=task_queue,
        workflows=[SessionWorkflow],
        activities=activities.all(),
        workflow_runner=workflow_runner(),
        max_concurrent_activities=max_concurrent_activities,
    )


async def run_worker(
    address: str,
    *,
    task_queue: str,
    factory: AgentFactory,
    namespace: str = "default",
    data_converter: DataConverter | None = None,
    on_connected: Callable[[], None] | None = None,
) -> None:
    """Connect to ``address`` and serve sessions until cancelled (``fsm-agent worker``);
    ``data_converter``: as for :func:`~fsm_agent.temporal.client.connect`; ``on_connected``
    is called once the cluster has answered, before serving.

    Raises:
        ConfigError: nothing answers at ``address`` (as ``fsm-agent approve`` says it).
    """
    client = await connect(address, namespace=namespace, data_converter=data_converter)
    if on_connected is not None:
        on_connected()
    await session_worker(client, task_queue=task_queue, factory=factory).run()
