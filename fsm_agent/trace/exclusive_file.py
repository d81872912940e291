"""A trace file opened by one writer at a time.

Two runs given the same trace file (two terminals, a script started twice) would otherwise
both write it: the second truncates what the first wrote, and the first goes on writing at its
own offset, so neither trace survives. :func:`open_exclusive` takes an exclusive lock on the
file before it is truncated, and refuses when another writer holds it; the lock goes with the
file when it is closed, or when the process dies. It is advisory (``flock``): it keeps our
writers apart, not other programs. Where there is no ``flock`` (Windows), the file is opened
as it always was.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import IO

from fsm_agent.errors import TraceFileBusy

try:
    import fcntl
except ImportError:  # pragma: no cover - not on POSIX
    fcntl = None  # type: ignore[assignment]


def open_exclusive(path: str | os.PathLike[str]) -> IO[bytes]:
    """``path`` created or emptied and opened for unbuffered writing, locked for this writer.

    Raises:
        TraceFileBusy: another writer (another run, in this process or another) holds it.
    """
    if fcntl is None:  # pragma: no cover - not on POSIX
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
    os.ftruncate(fd, 0)  # only now: the file was no one else's
    return os.fdopen(fd, "wb", buffering=0)
