"""Trace bytes written at the offset they belong at, so that writing them again is harmless.

A trace made away from its file (the Temporal workflow builds it in memory) reaches the file
in chunks, each carrying the byte offset it starts at. A chunk may be delivered twice, or
late, after the chunks that follow it (a retried attempt of a write whose first attempt had
in fact landed). :func:`place_chunk` therefore never cuts the file: it writes only the part
of the chunk the file does not hold yet, after checking that the part it does hold is the
same bytes. A chunk that does not fit — its offset past the file's end, or other bytes
already at its place — raises :class:`~fsm_agent.errors.TraceWriteConflict` and writes
nothing, because no retry can make it fit.

The one exception is the first chunk of a trace (offset 0): a file whose start is not that
chunk belongs to another run traced to the same named file, and is replaced as the
in-process driver replaces it — unless that run started later than this one (the ``started``
of both headers' ``meta``), or at the same moment. Then the chunk is a late delivery from a
superseded run (a stalled worker waking up after its session ended and a newer session took
the file), and it fails with a conflict instead of wiping the newer trace. A file that
starts with the chunk, or with a part of it, is this trace's own, and is kept.

The same trace may also go on differently from what the file holds. A Temporal workflow
reset re-makes the trace up to the reset point and then goes its own way (the chunk says it
is ``superseding``); a workflow task that failed (under load, say) and was retried had its
local activities run, and the retry may take its events in another order. Then the file's
header is the writer's own (its :class:`TraceOwner`) and the file's line where the chunk
goes has the seq the chunk's first line has. Nothing is lost: the file is first copied whole
to a sibling, ``NAME.superseded-N.jsonl`` (the first free ``N``), and only then cut where
the chunk goes. Bytes of anyone else (another session's trace, a line someone appended)
still fail with a conflict.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

import attrs
import orjson

from fsm_agent.errors import TraceWriteConflict

_COMPARED = 1 << 20
"""Bytes of the file read at a time while comparing it with a chunk."""
_HEADER_LIMIT = 16 << 20
"""Longest header line read back to learn when the file's run started."""


@attrs.frozen
class TraceOwner:
    """Who writes a trace: its header's ``meta.run_id`` and ``meta.started``."""

    run_id: str
    started: str


def place_chunk(
    path: Path,
    offset: int,
    data: bytes,
    *,
    ended: bool = False,
    superseding: bool = False,
    owner: TraceOwner | None = None,
) -> int:
    """Write ``data`` at ``offset`` of ``path`` unless the file holds it already; the offset
    just past the chunk.

    Args:
        path: the trace file (created when missing).
        offset: where the chunk starts in the file.
        data: the chunk.
        ended: the chunk is the trace's last; bytes after it in the file are a conflict.
        superseding: the chunk is from a run that replaces the one that wrote the file
            (a reset): other bytes where it goes, or after its end, are that run's; the
            file is copied aside (:func:`set_aside`) and cut there instead of refused.
        owner: the trace's owner; other bytes where the chunk goes, or after its end, are
            set aside the same way when the file is this owner's trace going on differently
            (see the module's text).

    Raises:
        TraceWriteConflict: ``offset`` is past the end of the file, the file holds other
            bytes where the chunk goes, or (``ended``) the file goes on past the chunk
            (the last two only when neither ``superseding`` nor ``owner`` explains them).
        OSError: the file cannot be opened or written, or copied aside.
    """
    if offset < 0:
        raise TraceWriteConflict(path=str(path), offset=offset, problem="a negative offset")
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    with os.fdopen(descriptor, "r+b") as file, _locked(descriptor):
        size = os.fstat(descriptor).st_size
        if offset == 0 and _differs_at(file, 0, data[: min(size, len(data))]) is not None:
            # The file starts with another run's trace: this trace replaces it, unless that
            # run is not provably older (a late first chunk of a superseded run).
            if superseding or _owned_by(file, owner):
                set_aside(path, file)  # this trace, gone on differently: kept, then replaced
            else:
                theirs = _run_started(_file_header(file))
                ours = _run_started(_header_meta(_json_line(data[: data.find(b"\n") + 1])))
                if theirs is not None and ours is not None and theirs >= ours:
                    raise TraceWriteConflict(
                        path=str(path),
                        offset=0,
                        problem=f"the file holds the trace of a run started at "
                        f"{theirs.isoformat()}, not before this one ({ours.isoformat()}): this "
                        "chunk is a late write of a superseded run and does not replace it",
                    )
            file.truncate(0)
            size = 0
        if offset > size:
            raise TraceWriteConflict(
                path=str(path),
                offset=offset,
                problem=f"the chunk starts past the end of the file ({size} bytes): "
                "an earlier chunk is missing",
            )
        held = min(size - offset, len(data))
        differs = _differs_at(file, offset, data[:held])
        end = offset + len(data)
        going_on = ended and size > end
        if (differs is not None or going_on) and (
            superseding or _own_other_course(file, owner, data, at=offset, past_end=differs is None)
        ):
            # The replaced run's bytes from here on: kept aside, then cut off.
            set_aside(path, file)
            file.truncate(offset)
            size = offset
            held = 0
            differs = None
        if differs is not None:
            raise TraceWriteConflict(
                path=str(path),
                offset=differs,
                problem="the file holds other bytes where this chunk goes (another writer, "
                "or the file was changed)",
            )
        if ended and size > end:
            raise TraceWriteConflict(
                path=str(path),
                offset=end,
                problem=f"the file goes on for {size - end} bytes after the trace's end "
                "(another writer)",
            )
        if held < len(data):
            file.seek(offset + held)
            file.write(data[held:])
            file.flush()
    return end


def set_aside(path: Path, file: BinaryIO) -> Path:
    """Copy the whole of ``file`` (open on ``path``) to a new sibling file,
    ``NAME.superseded-N.jsonl`` with the first free ``N``; its path. The copy is made under a
    temporary name, flushed to disk and only then given its name, so a process killed while
    copying leaves no cut-off copy under that name (and the original is not cut before)."""
    descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(descriptor, "wb") as copy:
            file.seek(0)
            while block := file.read(_COMPARED):
                copy.write(block)
            copy.flush()
            os.fsync(copy.fileno())
        number = 1
        while True:
            aside = path.with_name(f"{path.stem}.superseded-{number}{path.suffix}")
            try:
                os.link(temporary, aside)  # fails on an existing name: never overwrites
            except FileExistsError:
                number += 1
                continue
            return aside
    finally:
        Path(temporary).unlink()


def _own_other_course(
    file: BinaryIO, owner: TraceOwner | None, data: bytes, *, at: int, past_end: bool
) -> bool:
    """Whether the file is ``owner``'s trace going on differently: its header names
    ``owner``, and its line at ``at`` (the chunk's start) has the seq of the chunk's first
    line, or (``past_end``: the file agrees with the chunk and goes on after it) the line
    just past the chunk has a later seq."""
    if not _owned_by(file, owner):
        return False
    file.seek(at + len(data) if past_end else at)
    theirs = _json_line(file.readline(_HEADER_LIMIT))
    ours = _json_line(data[: data.find(b"\n") + 1])
    if theirs is None or ours is None:
        return False
    their_seq, our_seq = theirs.get("seq"), ours.get("seq")
    if type(their_seq) is not int or type(our_seq) is not int:
        return False
    return their_seq > our_seq if past_end else their_seq == our_seq


def _owned_by(file: BinaryIO, owner: TraceOwner | None) -> bool:
    """Whether the file's header names ``owner`` (its ``meta.run_id`` and ``started``)."""
    if owner is None:
        return False
    meta = _file_header(file)
    return meta is not None and [meta.get("run_id"), meta.get("started")] == [
        owner.run_id,
        owner.started,
    ]


def _file_header(file: BinaryIO) -> dict[str, Any] | None:
    """The ``meta`` of the header on the file's first line, or None when it has none."""
    file.seek(0)
    return _header_meta(_json_line(file.readline(_HEADER_LIMIT)))


def _header_meta(header: dict[str, Any] | None) -> dict[str, Any] | None:
    meta = header.get("meta") if header is not None else None
    return meta if isinstance(meta, dict) else None


def _json_line(line: bytes) -> dict[str, Any] | None:
    """A whole line (its newline included) parsed as a JSON object, else None."""
    if not line.endswith(b"\n"):
        return None
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def _run_started(meta: dict[str, Any] | None) -> dt.datetime | None:
    """When a trace's run started (its header's ``meta.started``, an ISO 8601 time with a
    zone), or None when it does not say."""
    started = meta.get("started") if meta is not None else None
    if not isinstance(started, str):
        return None
    try:
        moment = dt.datetime.fromisoformat(started)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else None


def _differs_at(file: BinaryIO, offset: int, expected: bytes) -> int | None:
    """The offset of the first byte of the file that differs from ``expected`` laid at
    ``offset``, or None when they agree (the file is read in slices, not whole)."""
    file.seek(offset)
    for start in range(0, len(expected), _COMPARED):
        wanted = expected[start : start + _COMPARED]
        found = file.read(len(wanted))
        if found != wanted:
            same = next(
                (i for i, (a, b) in enumerate(zip(found, wanted, strict=False)) if a != b),
                min(len(found), len(wanted)),
            )
            return offset + start + same
    return None


@contextlib.contextmanager
def _locked(descriptor: int) -> Iterator[None]:
    """Hold an exclusive lock on the file while it is checked and written, so that two
    processes writing the same trace (a stalled worker that wakes up) take turns."""
    if sys.platform == "win32":  # pragma: no cover - no advisory locks; the workflow serializes
        yield
        return
    import fcntl  # noqa: PLC0415 - POSIX only

    fcntl.flock(descriptor, fcntl.LOCK_EX)
    try:
        yield
    finally:
        fcntl.flock(descriptor, fcntl.LOCK_UN)
