"""Fixtures for integration tests: a fake Anthropic server and the real SDK pointed at it."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

# Paid once at collection, not inside a timed test (the SDK takes ~1-2 s to import).
import anthropic  # noqa: F401
import pytest

from fsm_agent.testing.fake_server import FakeAnthropicServer
from fsm_agent.testing.scenario import Scenario, parse_scenario

ServeFn = Callable[[Scenario | dict[str, Any]], FakeAnthropicServer]


@pytest.fixture
def serve() -> Iterator[ServeFn]:
    """Start a FakeAnthropicServer (background thread) for a scenario; stopped at teardown."""
    servers: list[FakeAnthropicServer] = []

    def start(scenario: Scenario | dict[str, Any]) -> FakeAnthropicServer:
        if not isinstance(scenario, Scenario):
            scenario = parse_scenario(scenario)
        server = FakeAnthropicServer(scenario)
        server.start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def notes_over_http() -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """The MCP notes server (``mcp/notes_server.py``) on streamable HTTP at 127.0.0.1 on a
    free port; yields its endpoint and its process (stopped at teardown)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    script = Path(__file__).parent / "mcp" / "notes_server.py"
    process = subprocess.Popen(
        [sys.executable, str(script), "http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    pytest.fail("the MCP HTTP server did not start")
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp", process
    finally:
        process.terminate()
        process.wait(10)
