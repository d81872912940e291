"""Store writes off the run's path: one writer thread per process behind a bounded queue.

A finished run hands its (closed, complete) trace to :func:`index_later`, which reads it into
a summary (the file may be overwritten by the next run soon after) and queues that; the
writer thread writes it to the store while the run returns (issue 13: writing to the store
never blocks or breaks a run). A store that is slow only delays the index; one that is down, full or
read-only fails in :func:`~fsm_agent.store.recording.write_summary`, which logs and carries on. When
the queue is full (the store has stalled for a long while), the run is not queued: that is
logged too, with the command that indexes it later. At exit, the process waits a bounded time
for queued writes; what is left then is logged, never waited for.

The trace stays the source of truth, so nothing here can lose a run: a run the index missed is
added by ``fsm-agent runs import FOLDER``.
"""

from __future__ import annotations

import atexit
import os
import queue
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Final

from fsm_agent.store.recording import LOGGER, summary_of_run, write_summary
from fsm_agent.store.sql_store import RunStore
from fsm_agent.store.summary import RunSummary

QUEUE_CAPACITY: Final = 1024
"""Runs waiting to be indexed, at most; past that a finished run is logged, not queued."""
EXIT_WAIT_S: Final = 5.0
"""How long a process that is exiting waits for the queued writes."""


class StoreWriter:
    """A daemon thread that indexes finished runs, in the order they were handed over.

    Args:
        capacity: how many runs may wait (see :data:`QUEUE_CAPACITY`).
    """

    def __init__(self, *, capacity: int = QUEUE_CAPACITY) -> None:
        self._queue: queue.Queue[tuple[RunSummary, RunStore | str]] = queue.Queue(maxsize=capacity)
        self._thread: threading.Thread | None = None
        self._starting = threading.Lock()

    def submit(self, summary: RunSummary, store: RunStore | str) -> bool:
        """Queue a finished run for indexing; returns False (and logs) when the queue is full."""
        self._start()
        try:
            self._queue.put_nowait((summary, store))
        except queue.Full:
            LOGGER.warning(
                "run %s was not indexed: %d runs are already waiting for the run store; its "
                "trace is complete, index it later with: fsm-agent runs import %s",
                summary.run_id,
                self._queue.maxsize,
                Path(summary.trace_path).parent,
            )
            return False
        return True

    def wait(self, timeout_s: float) -> bool:
        """Wait until every queued run is written (or failed); False if ``timeout_s`` passed."""
        deadline = time.monotonic() + timeout_s
        done = self._queue.all_tasks_done
        with done:
            while self._queue.unfinished_tasks:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not done.wait(remaining):
                    return not self._queue.unfinished_tasks
        return True

    @property
    def waiting(self) -> int:
        """Runs queued or being written."""
        return self._queue.unfinished_tasks

    def _start(self) -> None:
        with self._starting:
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._work, name="fsm_agent-store-writer", daemon=True
                )
                self._thread.start()

    def _work(self) -> None:
        while True:
            summary, store = self._queue.get()
            try:
                write_summary(summary, store)  # logs and swallows every store failure
            finally:
                self._queue.task_done()


_WRITER = StoreWriter()


def index_later(
    trace_path: str | os.PathLike[str], store: RunStore | str, secrets: Iterable[str] = ()
) -> bool:
    """Read a finished run's trace and hand its summary (redacted with the run's ``secrets``:
    its file's path may hold one) to the process's store writer; never waits for the store,
    never raises. Returns whether the run was queued."""
    summary = summary_of_run(trace_path, secrets)
    return summary is not None and _WRITER.submit(summary, store)


def wait_for_store_writes(timeout_s: float = 30.0) -> bool:
    """Wait until the runs handed over so far are indexed (or their failure logged); returns
    whether that happened within ``timeout_s``. A short-lived program that wants its runs
    queryable before it goes on can call this; an exiting process waits by itself, up to
    :data:`EXIT_WAIT_S` seconds."""
    return _WRITER.wait(timeout_s)


@atexit.register
def _drain_at_exit() -> None:
    if _WRITER.waiting and not _WRITER.wait(EXIT_WAIT_S):
        LOGGER.warning(
            "%d runs were not indexed before exit (the run store is slow or down); their "
            "traces are complete: index them with fsm-agent runs import",
            _WRITER.waiting,
        )
