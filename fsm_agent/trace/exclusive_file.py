"""A trace file opened by one writer at a time.

Two runs given the same trace file (two terminals, a script started twice) would otherwise
both write it: the second truncates what the first wrote, and the first goes on writing at its
own offset, so neither trace survives. :func:`open_exclusive` takes an exclusive lock on the
file before it is truncated, and refuses when another writer holds it; the lock goes with the
file when it is closed, or when the process dies. It is advisory (``flock``): it keeps our
writers apart, not other programs. Where there is no ``flock`` (Windows), the file is opened
as it always was.

Only a trace is emptied: a file that holds anything else (``--trace notes.txt``, a slip of
the finger or of tab completion) is refused before a byte of it changes. A run's writer keeps
an earlier run's trace as well (``overwrite=False``): the same ``--trace run.jsonl`` given
twice, or a resume told to write over the trace it resumes, would otherwise lose the record
of what that run did, and with it the way to resume it.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import IO, Final

import orjson

from fsm_agent.errors import NotATraceFile, TraceFileBusy, TraceFileHoldsRun

try:
    import fcntl
except ImportError:  # pragma: no cover - not on POSIX
    fcntl = None  # type: ignore[assignment]


def open_exclusive(path: str | os.PathLike[str], *, overwrite: bool = True) -> IO[bytes]:
    """``path`` created or emptied and opened for unbuffered writing, locked for this writer.

    Args:
        path: the trace file.
        overwrite: whether a trace with a whole header line (an earlier run's) is emptied;
            False refuses it. A file cut off in its header, or empty, is emptied either way:
            its run was killed before it recorded anything.

    Raises:
        TraceFileBusy: another writer (another run, in this process or another) holds it.
        NotATraceFile: it holds something that is not a trace (:func:`holds_a_trace`).
        TraceFileHoldsRun: with ``overwrite=False``, it holds an earlier run's trace.
    """
    if fcntl is None:  # pragma: no cover - not on POSIX
        _refuse_unless_a_trace(path, overwrite=overwrite)
        return Path(path).open("wb", buffering=0)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise TraceFileBusy(path=os.fspath(path)) from None
    except BaseException:
        os.close(fd)
        raise
    try:
        _refuse_unless_a_trace(path, overwrite=overwrite)
    except BaseException:
        os.close(fd)
        raise
    os.ftruncate(fd, 0)  # only now: the file was no one else's, and a trace
    return os.fdopen(fd, "wb", buffering=0)


_HEADER_START: Final = b'{"config":'
"""How every trace begins: its header, rendered with sorted keys (``config`` first)."""

_FIRST_LINE_READ: Final = 1 << 20
"""How much of a file is read to find its first line (a header with many tools' schemas can
be long; past this, its start decides)."""


def holds_a_trace(path: str | os.PathLike[str]) -> bool:
    """Whether the file at ``path`` is empty or begins with a trace header: a first line that
    is a header record, or the start of one cut off (a run killed as it wrote its header
    leaves that, with no newline). A JSON document that merely begins as a header does
    (``{"config": ...}``, a settings file) is not a trace: a header is always written with
    its newline, and says it is one (``"record": "header"``)."""
    with Path(path).open("rb") as file:
        start = file.read(_FIRST_LINE_READ)
        longer = file.read(1) != b""
    if not start:
        return True
    if not start.startswith(_HEADER_START):
        return False
    line, newline, _ = start.partition(b"\n")
    if not newline:
        if longer:  # a first line past what is read: only its start can tell
            return True
        try:
            orjson.loads(start)
        except orjson.JSONDecodeError:
            return True  # cut off: a header whose run was killed as it wrote it
        return False  # whole, and no newline: a document, not a header's line
    try:
        data = orjson.loads(line)
    except orjson.JSONDecodeError:
        return False
    return type(data) is dict and data.get("record", data.get("kind")) == "header"


def _refuse_unless_a_trace(path: str | os.PathLike[str], *, overwrite: bool) -> None:
    """Raise :class:`NotATraceFile` when ``path`` exists as a file holding something else,
    and without ``overwrite`` :class:`TraceFileHoldsRun` when it holds a run's header."""
    with contextlib.suppress(FileNotFoundError):
        if not Path(path).is_file():
            return
        if not holds_a_trace(path):
            raise NotATraceFile(path=os.fspath(path))
        if not overwrite and _has_whole_first_line(path):
            raise TraceFileHoldsRun(path=os.fspath(path))


def _has_whole_first_line(path: str | os.PathLike[str]) -> bool:
    """Whether the file's first line (a trace's header, :func:`holds_a_trace` found) ends in
    a newline: the run got as far as recording its header."""
    with Path(path).open("rb") as file:
        while chunk := file.read(_FIRST_LINE_READ):
            if b"\n" in chunk:
                return True
    return False
