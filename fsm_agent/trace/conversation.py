"""The turns of a conversation, found from their trace files.

Each user turn of a session is traced to a file of its own (its ``TurnStarted`` event carries
the transcript it started from, whole or after the transcript of the turn before it:
:mod:`~fsm_agent.trace.transcript_base`). The header's ``meta`` ties the
turns together: ``session`` (the conversation's id), ``turn`` (1, 2, ...) and ``previous``
(the file name of the turn before, in the same folder). Replay ignores ``meta``; these
functions read it to walk a conversation.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from fsm_agent.errors import TraceError
from fsm_agent.trace.reader import TraceReader, trace_files


def header_meta(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The ``meta`` of a trace's header (only the first line is read)."""
    with TraceReader(path, allow_truncated=True) as reader:
        return dict(reader.header.meta)


def conversation_turns(path: str | os.PathLike[str]) -> list[Path]:
    """The trace files of the conversation ``path`` belongs to, up to it, first turn first.

    A run that is not a turn of a session is a conversation of one. The walk stops at an
    earlier turn that is missing from the folder (or at a loop in the links).
    """
    turns = [Path(path)]
    seen = {turns[0].resolve()}
    while True:
        earlier = previous_turn(turns[0], header_meta(turns[0]))
        if earlier is None or earlier.resolve() in seen:
            return turns
        seen.add(earlier.resolve())
        turns.insert(0, earlier)


def previous_turn(path: Path, meta: Mapping[str, Any]) -> Path | None:
    """The trace of the turn before the one at ``path`` (whose header holds ``meta``), when
    it names one and the folder holds it.

    A file of that name holding a turn of another session is not it: a later run given the
    same ``--trace FILE`` wrote over the turn, which is gone (the walk stops there, as at a
    missing turn). A file whose header cannot be read is returned, for its reader to report.
    """
    previous = meta.get("previous")
    if not isinstance(previous, str) or not previous:
        return None
    earlier = path.parent / Path(previous).name
    if not earlier.is_file():
        return None
    session = meta.get("session")
    if isinstance(session, str) and session:
        try:
            theirs = header_meta(earlier).get("session")
        except TraceError:
            return earlier
        if theirs != session:
            return None
    return earlier


def latest_turn(
    folder: str | os.PathLike[str],
    *,
    passed_over: Callable[[Path, TraceError], None] | None = None,
) -> Path | None:
    """The most recently written trace file of ``folder`` that a conversation can go on from
    (``run --continue``), or None.

    Skipped: a file whose header cannot be read (a run killed as its file was created leaves
    it empty) and a subagent's trace (the conversation is its parent's). ``passed_over`` is
    told of each file skipped as unreadable that is not empty: the turns it held, if any,
    are not in the conversation carried on.
    """
    files = list(trace_files([folder])) if Path(folder).is_dir() else []
    files.sort(key=lambda file: (file.stat().st_mtime_ns, file.name), reverse=True)
    for file in files:
        try:
            meta = header_meta(file)
        except TraceError as exc:
            if passed_over is not None and file.stat().st_size > 0:
                passed_over(file, exc)
            continue
        if "subagent_of" not in meta:  # a child's header (runtime.subagent_link)
            return file
    return None


def turn_label(meta: dict[str, Any]) -> str | None:
    """``turn 2 of session 3f1c…, after run-….jsonl`` for a turn of a session, else None."""
    session, turn = meta.get("session"), meta.get("turn")
    if not isinstance(session, str) or not isinstance(turn, int):
        return None
    previous = meta.get("previous")
    after = f", after {previous}" if isinstance(previous, str) and previous else ""
    return f"turn {turn} of session {session}{after}"
