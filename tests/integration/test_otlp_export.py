"""A run's spans reach an OTLP/HTTP collector named by OTEL_EXPORTER_OTLP_ENDPOINT (issue 13).

The collector is a stub on 127.0.0.1 that keeps every request body; the run is the real
anthropic SDK against the fake Anthropic server.
"""

from __future__ import annotations

import asyncio
import gzip
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "opentelemetry.exporter.otlp.proto.http", reason="the fsm_agent[otel] extra is not installed"
)

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from fsm_agent.core.config import LoopConfig
from fsm_agent.runtime.agent import Agent
from fsm_agent.runtime.models import AnthropicModel
from fsm_agent.telemetry.config import flush_telemetry
from fsm_agent.testing.fake_server import FakeAnthropicServer

MODEL = "claude-sonnet-4-6"
ServeFn = Callable[[Any], FakeAnthropicServer]  # the ``serve`` fixture (conftest.py)


class CollectorStub(ThreadingHTTPServer):
    """Answers every POST with ``status`` (200) and keeps (path, body)."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.requests: list[tuple[str, bytes]] = []
        self.status = 200  # what every POST is answered with

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        assert isinstance(self.server, CollectorStub)
        self.server.requests.append((self.path, body))
        self.send_response(self.server.status)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def collector() -> Iterator[CollectorStub]:
    stub = CollectorStub()
    thread = threading.Thread(target=stub.serve_forever, daemon=True)
    thread.start()
    yield stub
    stub.shutdown()
    stub.server_close()


def test_spans_are_exported_over_otlp_http_to_the_collector_the_environment_names(
    tmp_path: Path,
    serve: ServeFn,
    collector: CollectorStub,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With only OTEL_EXPORTER_OTLP_ENDPOINT set, the run's spans arrive and decode as OTLP."""
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.url)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    for name in ("OTEL_TRACES_EXPORTER", "OTEL_SDK_DISABLED", "OTEL_EXPORTER_OTLP_PROTOCOL"):
        monkeypatch.delenv(name, raising=False)
    server = serve({"steps": [{"content": [{"text": "Hello."}]}]})

    async def go() -> str:
        async with AnthropicModel(name=MODEL, api_key="sk-test", base_url=server.base_url) as model:
            agent = Agent(
                model=model,
                config=LoopConfig(model=MODEL),
                trace=tmp_path / "trace.jsonl",
                cwd=tmp_path,
                store=False,
            )
            return (await agent.run("hi")).terminal

    assert asyncio.run(go()) == "completed"
    assert flush_telemetry(timeout_s=10)
    assert collector.requests, "the collector received nothing"
    spans = []
    for path, body in collector.requests:
        assert path == "/v1/traces"
        request = ExportTraceServiceRequest.FromString(body)
        for resource_spans in request.resource_spans:
            for scope_spans in resource_spans.scope_spans:
                assert scope_spans.scope.name == "fsm_agent"
                spans.extend(scope_spans.spans)
    names = sorted(span.name for span in spans)
    assert names == ["chat " + MODEL, "fsm_agent.iteration", "invoke_agent fsm_agent"]
    chat = next(span for span in spans if span.name.startswith("chat "))
    attributes = {item.key: item.value for item in chat.attributes}
    assert attributes["gen_ai.response.model"].string_value == MODEL
    reasons = attributes["gen_ai.response.finish_reasons"].array_value.values
    assert [reason.string_value for reason in reasons] == ["end_turn"]


@pytest.mark.parametrize(("status", "exit_code"), [(200, 0), (400, 1)])
def test_replay_export_spans_says_whether_the_collector_took_them(
    collector: CollectorStub, status: int, exit_code: int
) -> None:
    """Found: ``fsm-agent replay --export-spans`` exited 0 and said nothing when the collector
    refused every span (or none listened): the SDK only logs the failure."""
    collector.status = status
    trace = Path(__file__).parents[2] / "traces" / "max_turns.jsonl"
    env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": collector.url}
    env.pop("OTEL_SDK_DISABLED", None)
    done = subprocess.run(
        [sys.executable, "-m", "fsm_agent", "replay", "--export-spans", str(trace)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == exit_code, done.stderr
    assert collector.requests  # the spans were sent either way
    assert ("spans not exported" in done.stderr) is (status != 200)
