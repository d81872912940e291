"""Fixtures for integration tests: a fake Anthropic server and the real SDK pointed at it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
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
