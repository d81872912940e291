"""Run-store backends for the conformance suite: SQLite in a file, PostgreSQL in a throwaway
cluster started with ``initdb`` + ``pg_ctl`` on a free loopback port (removed afterwards)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from fsm_agent.testing import postgres_cluster
from fsm_agent.testing.postgres_cluster import cluster_available


@contextlib.contextmanager
def throwaway_cluster() -> Iterator[tuple[str, Callable[[], None]]]:
    """A cluster of :mod:`fsm_agent.testing.postgres_cluster`, or a skip naming what is missing."""
    if not cluster_available():
        pytest.skip("PostgreSQL server programs (initdb, pg_ctl) are not installed")
    pytest.importorskip("psycopg", reason="the fsm_agent[postgres] extra is not installed")
    with postgres_cluster.throwaway_cluster() as server:
        yield server


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
