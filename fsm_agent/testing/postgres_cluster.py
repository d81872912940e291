"""A throwaway PostgreSQL cluster for tests and benchmarks of the run store (issue 13).

``initdb`` + ``pg_ctl`` start a fresh cluster on a free loopback port, trusting local
connections, with fsync off; it is stopped and removed afterwards. The server refuses to run
as root, so as root it runs as ``nobody``. Debian keeps the programs under
``/usr/lib/postgresql/<version>/bin`` (``.ci/run`` installs the ``postgresql`` package).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path


def postgres_program(name: str) -> str | None:
    """The path of a PostgreSQL server program (``initdb``, ``pg_ctl``), or None."""
    found = sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"))
    return str(found[-1]) if found else shutil.which(name)


def cluster_available() -> bool:
    """Whether ``initdb`` and ``pg_ctl`` are installed."""
    return postgres_program("initdb") is not None and postgres_program("pg_ctl") is not None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextlib.contextmanager
def throwaway_cluster() -> Iterator[tuple[str, Callable[[], None]]]:
    """A fresh cluster: the URL of its ``postgres`` database, and a function that stops the
    server at once (as a crash would); stopped and removed on leaving.

    Raises:
        FileNotFoundError: ``initdb`` or ``pg_ctl`` is not installed (see
            :func:`cluster_available`).
    """
    initdb, pg_ctl = postgres_program("initdb"), postgres_program("pg_ctl")
    if initdb is None or pg_ctl is None:
        raise FileNotFoundError("PostgreSQL server programs (initdb, pg_ctl) are not installed")
    as_user = ["runuser", "-u", "nobody", "--"] if os.geteuid() == 0 else []
    root = Path(tempfile.mkdtemp(prefix="fsm-agent-pg-"))
    data = root / "data"
    if as_user:
        shutil.chown(root, user="nobody")
    root.chmod(0o755)
    port = _free_port()
    subprocess.run(
        [*as_user, initdb, "-D", str(data), "-U", "fsm", "--auth=trust", "-E", "UTF8"],
        check=True,
        capture_output=True,
    )
    options = f"-p {port} -h 127.0.0.1 -k {root} -c fsync=off -c max_connections=50"
    subprocess.run(
        [*as_user, pg_ctl, "-D", str(data), "-l", str(root / "log"), "-o", options, "-w", "start"],
        check=True,
        capture_output=True,
    )

    def stop() -> None:
        subprocess.run(
            [*as_user, pg_ctl, "-D", str(data), "-m", "immediate", "stop"],
            check=False,
            capture_output=True,
        )

    try:
        yield f"postgresql://fsm@127.0.0.1:{port}/postgres", stop
    finally:
        stop()
        shutil.rmtree(root, ignore_errors=True)
