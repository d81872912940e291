"""Run-store backends for the conformance suite: SQLite in a file, PostgreSQL in a throwaway
cluster started with ``initdb`` + ``pg_ctl`` on a free loopback port (removed afterwards)."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest


def _postgres_program(name: str) -> str | None:
    """Debian keeps the server programs under /usr/lib/postgresql/<version>/bin."""
    found = sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"))
    return str(found[-1]) if found else shutil.which(name)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextlib.contextmanager
def throwaway_cluster() -> Iterator[tuple[str, Callable[[], None]]]:
    """A fresh PostgreSQL cluster: the URL of its ``postgres`` database and a function that
    stops the server (fast, as a crash would); removed afterwards."""
    initdb, pg_ctl = _postgres_program("initdb"), _postgres_program("pg_ctl")
    if initdb is None or pg_ctl is None:
        pytest.skip("PostgreSQL server programs (initdb, pg_ctl) are not installed")
    pytest.importorskip("psycopg", reason="the fsm_agent[postgres] extra is not installed")
    # The server refuses to run as root: run it as nobody, in a folder nobody may write.
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
    subprocess.run(
        [
            *as_user,
            pg_ctl,
            "-D",
            str(data),
            "-l",
            str(root / "log"),
            "-o",
            f"-p {port} -h 127.0.0.1 -k {root} -c fsync=off -c max_connections=50",
            "-w",
            "start",
        ],
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


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """The URL of a fresh PostgreSQL cluster's ``postgres`` database, for this session."""
    with throwaway_cluster() as (url, _stop):
        yield url


@pytest.fixture
def stoppable_postgres() -> Iterator[tuple[str, Callable[[], None]]]:
    """A cluster of this test's own, and the function that stops its server mid-test."""
    with throwaway_cluster() as server:
        yield server


@pytest.fixture
def postgres_url(postgres_server: str) -> Iterator[str]:
    """A new, empty database in the session's cluster, dropped after the test."""
    import psycopg

    name = f"runs_{os.urandom(6).hex()}"
    with psycopg.connect(postgres_server, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    yield postgres_server.rsplit("/", 1)[0] + f"/{name}"
    with (
        psycopg.connect(postgres_server, autocommit=True) as admin,
        contextlib.suppress(psycopg.Error),
    ):
        admin.execute(f"DROP DATABASE {name} WITH (FORCE)")


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A store URL for each backend: the conformance suite runs once per backend."""
    if request.param == "sqlite":
        return str(tmp_path / "index.sqlite3")
    url: str = request.getfixturevalue("postgres_url")
    return url
