"""Indexing a run when it ends, without ever breaking it (issue 13).

The trace is complete and closed before the store is touched, and every failure of the store
(down, full, read-only, a bad URL) is logged and swallowed: the run's result and its trace do
not depend on the index, which can be rebuilt with ``fsm-agent runs import``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from pathlib import Path

from fsm_agent.store.opening import open_store
from fsm_agent.store.sql_store import RunStore
from fsm_agent.store.summary import RunSummary, summarize_trace
from fsm_agent.trace.reader import trace_files
from fsm_agent.trace.redact import KEY_RULES_ONLY, Redactor

LOGGER = logging.getLogger("fsm_agent.store")
"""Store failures are reported here (stdlib logging), never raised into a run."""


def index_run(
    trace_path: str | os.PathLike[str], store: RunStore | str, secrets: Iterable[str] = ()
) -> bool:
    """Index one finished run; returns whether it was indexed.

    Args:
        trace_path: the run's (closed) trace file.
        store: the store to write to, or its URL (then it is opened, and closed afterwards).
        secrets: the run's secrets: the trace holds none, but its file's path may.
    """
    summary = summary_of_run(trace_path, secrets)
    return summary is not None and write_summary(summary, store)


def summary_of_run(
    trace_path: str | os.PathLike[str], secrets: Iterable[str] = ()
) -> RunSummary | None:
    """The summary of a finished run's trace, redacted with ``secrets`` as well as by the key
    rules, or None (logged) when it cannot be read."""
    secrets = tuple(secrets)
    redactor = Redactor(secrets) if secrets else KEY_RULES_ONLY
    try:
        return summarize_trace(trace_path, redactor)
    except Exception as exc:  # the run must not fail because its index did
        shown = Path(redactor.text(os.fspath(trace_path)))
        _not_indexed(shown.stem, shown, redactor.text(f"{type(exc).__name__}: {exc}"))
        return None


def write_summary(summary: RunSummary, store: RunStore | str) -> bool:
    """Write one run's summary to ``store`` (a store, or a URL opened and closed here);
    returns whether it was written. Every failure is logged, none raised."""
    try:
        if isinstance(store, str):
            opened = open_store(store)
            try:
                opened.add([summary])
            finally:
                opened.close()
        else:
            store.add([summary])
    except Exception as exc:  # the run must not fail because its index did
        _not_indexed(summary.run_id, Path(summary.trace_path), f"{type(exc).__name__}: {exc}")
        return False
    return True


def _not_indexed(run_id: str, trace_path: Path, reason: str) -> None:
    LOGGER.warning(
        "run %s was not indexed in the run store (%s); its trace is complete, "
        "index it later with: fsm-agent runs import %s",
        run_id,
        reason,
        trace_path.parent,
    )


def import_traces(
    store: RunStore, paths: Iterable[str | os.PathLike[str]], secrets: Iterable[str] = ()
) -> tuple[int, int]:
    """Index every trace under ``paths`` (files or folders); returns (indexed, unreadable).

    A trace that cannot be read is logged and skipped; the others are still indexed. What the
    store keeps of each is redacted as the trace writer redacts, ``secrets`` included (a trace
    written by another program may hold them in clear).
    """
    unreadable = 0
    redactor = Redactor(secrets)

    def summaries() -> Iterable[RunSummary]:
        nonlocal unreadable
        for path in trace_files(paths):
            try:
                yield summarize_trace(path, redactor)
            except Exception as exc:  # one bad file must not stop an import
                unreadable += 1
                LOGGER.warning("%s: not indexed: %s", redactor.text(os.fspath(path)), exc)

    indexed = store.add(summaries())
    return indexed, unreadable
