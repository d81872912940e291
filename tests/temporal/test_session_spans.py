"""A Temporal session's OpenTelemetry spans: the in-process run's spans, built once from the
session's trace when it ends (every run of a continued session included)."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("temporalio", reason="the fsm_agent[temporal] extra is not installed")
pytest.importorskip("opentelemetry.sdk", reason="the fsm_agent[otel] extra is not installed")

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from temporalio.client import Client, WorkflowFailureError

from fsm_agent.runtime.agent import Agent
from fsm_agent.telemetry.config import Telemetry
from fsm_agent.telemetry.spans import RUN_ID
from fsm_agent.temporal import session_worker, start_session

from .conftest import causes_of
from .session_agents import scripted
from .test_continue_as_new import start_long
from .test_sessions import folders, reply, use


def collector() -> tuple[Telemetry, InMemorySpanExporter]:
    """Telemetry whose finished spans stay in memory, and where to read them."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return Telemetry(tracer_provider=provider), exporter


def span_tree(spans: tuple[ReadableSpan, ...]) -> Counter[tuple[str, str, str, str]]:
    """Each span's name, its parent's name, its attributes but the run id, and its events."""
    names = {span.context.span_id: span.name for span in spans}
    return Counter(
        (
            span.name,
            names[span.parent.span_id] if span.parent is not None else "",
            repr(sorted((k, v) for k, v in (span.attributes or {}).items() if k != RUN_ID)),
            repr([event.name for event in span.events]),
        )
        for span in spans
    )


def session_params(work: Path) -> dict[str, Any]:
    """A read, a run of appends and an answer: enough model turns to continue as new."""
    (work / "a.txt").write_text("alpha\n", encoding="utf-8")
    steps = [{"content": [use("Read", file_path="a.txt")]}]
    steps += [{"content": [use("Append", line=f"line {n}")]} for n in range(8)]
    return {"steps": [*steps, reply("done")], "cwd": str(work), "allow": ["Append"]}


def test_a_session_gives_the_spans_of_the_same_run_in_process(
    temporal_address: str, tmp_path: Path
) -> None:
    """The same world run in-process and as a Temporal session that continues as new gives
    the same span tree: names, parents, attributes and transition events, each span once."""
    local_work, local_trace = folders(tmp_path, "local")
    live, live_spans = collector()
    params = session_params(local_work)
    local = scripted(**params, trace=str(local_trace), telemetry=live)
    assert asyncio.run(local.run("go")).terminal == "completed"

    remote_work, remote_trace = folders(tmp_path, "remote")
    telemetry, remote_spans = collector()

    def traced(**given: Any) -> Agent:
        return scripted(**given, telemetry=telemetry)

    async def go() -> tuple[dict[str, Any], str]:
        client = await Client.connect(temporal_address)
        async with session_worker(client, task_queue="spans", factory=traced):
            handle = await start_long(
                client, "spans", session_params(remote_work), remote_trace, after=40
            )
            result: dict[str, Any] = await handle.result()
            return result, handle.id

    result, session_id = asyncio.run(go())
    assert result["terminal"] == "completed"
    assert result["runs"] >= 2
    exported = tuple(remote_spans.get_finished_spans())
    assert span_tree(exported) == span_tree(tuple(live_spans.get_finished_spans()))
    (run_span,) = [span for span in exported if span.parent is None]
    assert (run_span.attributes or {})[RUN_ID] == session_id  # the workflow id


def test_telemetry_without_a_trace_is_refused_naming_why(
    temporal_address: str, tmp_path: Path
) -> None:
    """An agent with telemetry but no trace cannot run on Temporal: the session fails with a
    ConfigError that says the spans are built from the trace."""
    work = tmp_path / "work"
    work.mkdir()
    telemetry, _spans = collector()

    def traced(**given: Any) -> Agent:
        return scripted(**given, telemetry=telemetry)

    async def go() -> None:
        client = await Client.connect(temporal_address)
        async with session_worker(client, task_queue="spans-no-trace", factory=traced):
            params = {"steps": [reply("hi")], "cwd": str(work)}
            handle = await start_session(client, "go", task_queue="spans-no-trace", params=params)
            await handle.result()

    with pytest.raises(WorkflowFailureError) as failed:
        asyncio.run(go())
    causes = causes_of(failed.value)
    assert any("telemetry needs a trace" in cause for cause in causes)
