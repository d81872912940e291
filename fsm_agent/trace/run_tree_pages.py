"""The HTML pages of a run and of the subagents it started, written together and linked.

:func:`write_run_pages` writes a run's timeline page, then, for every call of the run that
started a subagent whose trace is on disk (its ``SubagentStarted`` event names the file), the
subagent's page beside it as ``<page stem>.<call id>.html``, and so on down the tree. Each
such call links to its subagent's page, and each subagent's page links back to the call on
its parent's page (``#call-<call id>``).
"""

from __future__ import annotations

import re
from pathlib import Path

from fsm_agent.trace.reader import Trace, read_trace
from fsm_agent.trace.timeline_page import render_html


def subagent_traces(trace: Trace) -> dict[str, Path]:
    """The trace file of each subagent the run started and that is on disk, by call id (the
    latest, when a resumed run started the same call's subagent again)."""
    found: dict[str, Path] = {}
    for record in trace.of_kind("event"):
        event = record.data.get("event") or {}
        if event.get("type") == "SubagentStarted" and isinstance(event.get("trace"), str):
            found[str(event.get("call_id"))] = Path(event["trace"])
    return {call: path for call, path in found.items() if path.is_file()}


def write_run_pages(trace: Trace, target: Path, *, parent_href: str | None = None) -> list[Path]:
    """Write the page of ``trace`` to ``target`` and its subagents' pages beside it, each
    trace redacted (:meth:`Trace.redacted`).

    Args:
        trace: the run's trace.
        target: the file of the run's page.
        parent_href: for a subagent, the address of the call that started it.

    Returns:
        The files written, the run's page first.
    """
    return _write(trace.redacted(), target, parent_href, seen=set())


def _write(trace: Trace, target: Path, parent_href: str | None, *, seen: set[Path]) -> list[Path]:
    if trace.source is not None:
        seen.add(Path(trace.source).absolute())
    children = {
        call: path for call, path in subagent_traces(trace).items() if path.absolute() not in seen
    }
    pages = {call: f"{target.stem}.{_file_part(call)}.html" for call in children}
    target.write_text(render_html(trace, children=pages, parent_href=parent_href), encoding="utf-8")
    written = [target]
    for call, path in children.items():
        child = read_trace(path, allow_truncated=True).redacted()
        back = f"{target.name}#call-{call}"
        written += _write(child, target.parent / pages[call], back, seen=seen)
    return written


def _file_part(call_id: str) -> str:
    """A call id as part of a file name (ids come from the model's response)."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", call_id)
