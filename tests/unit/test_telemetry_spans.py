"""OpenTelemetry spans of a run (issue 13), checked with the SDK's in-memory exporter."""

from __future__ import annotations

import logging
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the fsm_agent[otel] extra is not installed")

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from fsm_agent.core.config import LoopConfig
from fsm_agent.core.pricing import ModelPrice
from fsm_agent.errors import ConfigError
from fsm_agent.runtime.agent import Agent, RunResult
from fsm_agent.telemetry import config as telemetry_config
from fsm_agent.telemetry.config import Telemetry, enabled_by_environment, tracer_for
from fsm_agent.telemetry.export import export_trace
from fsm_agent.testing.scenario import ScriptedModel, parse_scenario
from fsm_agent.toolbox import Read, Write
from fsm_agent.trace.reader import read_trace
from fsm_agent.trace.replay import replay

MODEL = "scripted-model"
READ_THEN_WRITE_THEN_REPLY = [
    {
        "content": [
            {"text": "Let me look."},
            {"tool_use": {"name": "Read", "input": {"file_path": "a.txt"}}},
            {"tool_use": {"name": "Write", "input": {"file_path": "b.txt", "content": "x"}}},
        ],
        "usage": {"input_tokens": 120, "output_tokens": 40},
    },
    {"content": [{"text": "Done."}], "usage": {"input_tokens": 400, "output_tokens": 15}},
]


class Collected:
    """A tracer provider whose finished spans are kept in memory."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))

    @property
    def spans(self) -> tuple[ReadableSpan, ...]:
        return tuple(self.exporter.get_finished_spans())

    def named(self, prefix: str) -> list[ReadableSpan]:
        return [span for span in self.spans if span.name.startswith(prefix)]

    def parent_name(self, span: ReadableSpan) -> str | None:
        if span.parent is None:
            return None
        by_id = {s.context.span_id: s for s in self.spans}
        return by_id[span.parent.span_id].name


def make_agent(
    tmp_path: Path, steps: list[dict[str, Any]], provider: object, **options: Any
) -> Agent:
    """An agent with Read and Write on a scripted model, its spans going to ``provider``."""
    (tmp_path / "a.txt").write_text("alpha\n", encoding="utf-8")
    options.setdefault("trace", tmp_path / "trace.jsonl")
    return Agent(
        model=ScriptedModel(parse_scenario({"steps": steps}), name=MODEL),
        tools=[Read(), Write()],
        config=LoopConfig(model=MODEL, retry_base_ms=1, retry_cap_ms=5),
        cwd=tmp_path,
        store=False,
        telemetry=Telemetry(tracer_provider=provider),
        **options,
    )


def run_agent(
    tmp_path: Path, steps: list[dict[str, Any]], collected: Collected, **options: Any
) -> RunResult:
    return make_agent(tmp_path, steps, collected.provider, **options).run_sync("please look")


def shape(collected: Collected) -> list[tuple[str, str, str, list[str]]]:
    """Each span's name, parent's name, attributes and event names, in a stable order."""
    return sorted(
        (
            span.name,
            str(collected.parent_name(span)),
            repr(sorted(dict(span.attributes or {}).items())),
            [event.name for event in span.events],
        )
        for span in collected.spans
    )


def test_a_run_has_one_span_per_run_iteration_model_call_and_tool_call(tmp_path: Path) -> None:
    """Two iterations, two model calls, two tool calls: the span tree has exactly those."""
    collected = Collected()
    run_agent(tmp_path, READ_THEN_WRITE_THEN_REPLY, collected)
    names = Counter(span.name for span in collected.spans)
    assert names == {
        "invoke_agent fsm_agent": 1,
        "fsm_agent.iteration": 2,
        f"chat {MODEL}": 2,
        "execute_tool Read": 1,
        "execute_tool Write": 1,
    }
    assert collected.parent_name(collected.named("invoke_agent")[0]) is None
    for span in collected.named("fsm_agent.iteration"):
        assert collected.parent_name(span) == "invoke_agent fsm_agent"
    for span in collected.named("chat ") + collected.named("execute_tool"):
        assert collected.parent_name(span) == "fsm_agent.iteration"
    run_span = collected.named("invoke_agent")[0]
    assert all(span.context.trace_id == run_span.context.trace_id for span in collected.spans)


def test_model_call_spans_carry_the_genai_attributes(tmp_path: Path) -> None:
    """Model spans name the operation, provider, models, token usage and finish reason."""
    collected = Collected()
    run_agent(tmp_path, READ_THEN_WRITE_THEN_REPLY, collected)
    first, second = sorted(
        collected.named("chat "), key=lambda span: span.attributes["fsm_agent.request_id"]
    )
    assert first.kind.name == "CLIENT"
    attributes = dict(first.attributes or {})
    assert attributes["gen_ai.operation.name"] == "chat"
    assert attributes["gen_ai.provider.name"] == "anthropic"
    assert attributes["gen_ai.request.model"] == MODEL
    assert attributes["gen_ai.response.model"] == MODEL
    assert attributes["gen_ai.usage.input_tokens"] == 120
    assert attributes["gen_ai.usage.output_tokens"] == 40
    assert attributes["gen_ai.response.finish_reasons"] == ("tool_use",)
    assert second.attributes["gen_ai.response.finish_reasons"] == ("end_turn",)
    assert second.attributes["gen_ai.usage.input_tokens"] == 400


def test_tool_spans_name_the_tool_the_call_and_its_outcome(tmp_path: Path) -> None:
    """A Read that ran and a Write denied for want of someone to ask, each with its outcome."""
    collected = Collected()
    run_agent(tmp_path, READ_THEN_WRITE_THEN_REPLY, collected)
    read = collected.named("execute_tool Read")[0]
    write = collected.named("execute_tool Write")[0]
    assert read.attributes["gen_ai.operation.name"] == "execute_tool"
    assert read.attributes["gen_ai.tool.name"] == "Read"
    assert read.attributes["gen_ai.tool.call.id"] == "toolu_001"
    assert read.attributes["fsm_agent.tool.outcome"] == "completed"
    assert write.attributes["gen_ai.tool.call.id"] == "toolu_002"
    assert write.attributes["fsm_agent.tool.outcome"] == "denied"
    decided = [event for event in write.events if event.name == "permission_decided"]
    assert decided[0].attributes["fsm_agent.permission.behavior"] == "deny"


def test_every_transition_of_the_trace_is_a_span_event(tmp_path: Path) -> None:
    """The span events are the trace's transitions, each once: spans cannot drift from it."""
    collected = Collected()
    result = run_agent(tmp_path, READ_THEN_WRITE_THEN_REPLY, collected)
    assert result.trace_path is not None
    traced = Counter(
        record.data["name"] for record in read_trace(result.trace_path).of_kind("transition")
    )
    events = Counter(
        event.name
        for span in collected.spans
        for event in span.events
        if event.name != "permission_decided"
    )
    assert events == traced


def test_the_run_span_tells_the_terminal_usage_cost_and_run_id(tmp_path: Path) -> None:
    """The run span carries the terminal reason, the totals, the cost at the price, the id."""
    collected = Collected()
    result = run_agent(
        tmp_path, READ_THEN_WRITE_THEN_REPLY, collected, price=ModelPrice(input=3, output=15)
    )
    assert result.trace_path is not None
    run_span = collected.named("invoke_agent")[0]
    attributes = dict(run_span.attributes or {})
    assert attributes["fsm_agent.terminal"] == "completed"
    assert attributes["gen_ai.usage.input_tokens"] == 520
    assert attributes["gen_ai.usage.output_tokens"] == 55
    assert attributes["fsm_agent.cost_usd"] == pytest.approx(result.cost_usd)
    assert attributes["fsm_agent.run_id"] == read_trace(result.trace_path).header.meta["run_id"]
    assert run_span.status.status_code is StatusCode.UNSET


def test_a_failed_model_attempt_is_an_error_span_and_the_retry_a_new_one(tmp_path: Path) -> None:
    """An overloaded attempt ends its span in ERROR with error.type; the retry has its own."""
    collected = Collected()
    run_agent(
        tmp_path,
        [{"error": {"kind": "overloaded"}}, {"content": [{"text": "Here."}]}],
        collected,
        sleep=_no_wait,
    )
    attempts = sorted(
        collected.named("chat "), key=lambda span: span.attributes["fsm_agent.attempt"]
    )
    assert [span.attributes["fsm_agent.attempt"] for span in attempts] == [1, 2]
    assert attempts[0].status.status_code is StatusCode.ERROR
    assert attempts[0].attributes["error.type"] == "overloaded"
    assert attempts[1].status.status_code is StatusCode.UNSET


async def _no_wait(_seconds: float) -> None:
    return None


def test_exporting_the_trace_gives_the_spans_the_run_gave(tmp_path: Path) -> None:
    """The spans exported from a recorded trace equal the live run's (names, tree, attributes)."""
    live = Collected()
    result = run_agent(tmp_path, READ_THEN_WRITE_THEN_REPLY, live)
    assert result.trace_path is not None
    exported = Collected()
    export_trace(result.trace_path, telemetry=Telemetry(tracer_provider=exported.provider))
    assert shape(exported) == shape(live)


def test_a_crashed_trace_exports_its_spans_closed_with_the_cut(tmp_path: Path) -> None:
    """A trace without its end record still exports; the run span says where it stops."""
    live = Collected()
    result = run_agent(tmp_path, READ_THEN_WRITE_THEN_REPLY, live)
    assert result.trace_path is not None
    lines = result.trace_path.read_bytes().splitlines(keepends=True)
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(b"".join(lines[:-5]))
    exported = Collected()
    export_trace(cut, telemetry=Telemetry(tracer_provider=exported.provider))
    run_span = exported.named("invoke_agent")[0]
    assert run_span.status.status_code is StatusCode.ERROR
    assert "without an end record" in str(run_span.attributes["fsm_agent.fault"])
    assert all(span.end_time is not None for span in exported.spans)


def test_replay_emits_no_spans_even_when_the_environment_asks_for_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Replaying a trace never builds a tracer, whatever OTEL_* says."""
    result = run_agent(tmp_path, READ_THEN_WRITE_THEN_REPLY, Collected())
    assert result.trace_path is not None
    asked: list[object] = []
    monkeypatch.setattr(telemetry_config, "_tracer", lambda *args: asked.append(args))
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "otlp")
    assert replay(result.trace_path).terminal == "completed"
    assert asked == []


class BrokenTracer:
    """A tracer whose every span fails to start."""

    def start_span(self, *_args: object, **_kwargs: object) -> object:
        raise RuntimeError("exporter exploded")


class BrokenProvider:
    def get_tracer(self, *_args: object) -> BrokenTracer:
        return BrokenTracer()


def test_a_failing_tracer_never_breaks_the_run(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Telemetry that raises is logged once; the run and its trace complete."""
    agent = make_agent(tmp_path, READ_THEN_WRITE_THEN_REPLY, BrokenProvider())
    with caplog.at_level(logging.WARNING, logger="fsm_agent.telemetry"):
        result = agent.run_sync("please look")
    assert result.terminal == "completed"
    assert replay(tmp_path / "trace.jsonl").terminal == "completed"
    assert "exporter exploded" in caplog.text


@pytest.mark.parametrize(
    ("environ", "enabled"),
    [
        ({}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, True),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, True),
        ({"OTEL_TRACES_EXPORTER": "otlp"}, True),
        ({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://x"}, False),
        ({"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"}, False),
    ],
)
def test_the_otel_environment_turns_telemetry_on(environ: dict[str, str], enabled: bool) -> None:
    """The standard OTEL_* variables decide when the agent is given no telemetry setting."""
    assert enabled_by_environment(environ) is enabled


def test_telemetry_off_by_default_needs_no_tracer() -> None:
    """With no setting and no OTEL_* variable there is no tracer; False wins over the env."""
    assert tracer_for(None, {}) is None
    assert tracer_for(False, {"OTEL_TRACES_EXPORTER": "otlp"}) is None


def test_an_exporter_we_cannot_use_is_a_config_error_when_asked_for() -> None:
    """Asked for explicitly, a gRPC protocol or unknown exporter is a ConfigError naming it."""
    with pytest.raises(ConfigError, match="OTLP over HTTP"):
        tracer_for(True, {"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"})
    with pytest.raises(ConfigError, match="'zipkin'"):
        tracer_for(True, {"OTEL_TRACES_EXPORTER": "zipkin"})


def test_an_unusable_environment_alone_runs_without_spans(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Asked for by the environment only, an unusable exporter is logged, not raised."""
    with caplog.at_level(logging.WARNING, logger="fsm_agent.telemetry"):
        assert tracer_for(None, {"OTEL_TRACES_EXPORTER": "zipkin"}) is None
    assert "zipkin" in caplog.text


def test_importing_the_package_does_not_import_opentelemetry() -> None:
    """``import fsm_agent`` and its Agent load no OpenTelemetry module."""
    code = (
        "import sys, fsm_agent; fsm_agent.Agent; "
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env={}
    )
    assert out.stdout.strip() == "[]"


def test_a_subagent_run_nests_under_the_parent_task_call(tmp_path: Path) -> None:
    """A child agent started by the Task tool has its run span under the parent's call span."""
    from fsm_agent.runtime.subagents import SubagentDefinition
    from fsm_agent.toolbox.task import Task

    (tmp_path / "a.txt").write_text("alpha\n", encoding="utf-8")
    child_steps = [
        {"content": [{"tool_use": {"name": "Read", "input": {"file_path": "a.txt"}}}]},
        {"content": [{"text": "a.txt says alpha"}]},
    ]
    reader = SubagentDefinition(
        description="reads files",
        tools=[Read()],
        model=ScriptedModel(parse_scenario({"steps": child_steps})),
    )
    task = {"description": "a sub-task", "prompt": "read a.txt", "subagent_type": "reader"}
    parent_steps = [
        {"content": [{"tool_use": {"name": "Task", "input": task}}]},
        {"content": [{"text": "done"}]},
    ]
    collected = Collected()
    agent = Agent(
        model=ScriptedModel(parse_scenario({"steps": parent_steps}), name=MODEL),
        tools=[Task({"reader": reader})],
        trace=tmp_path / "parent.jsonl",
        cwd=tmp_path,
        store=False,
        telemetry=Telemetry(tracer_provider=collected.provider),
    )
    assert agent.run_sync("go").terminal == "completed"
    runs = collected.named("invoke_agent")
    assert len(runs) == 2
    (child,) = [span for span in runs if span.parent is not None]
    assert collected.parent_name(child) == "execute_tool Task"
    (root,) = [span for span in runs if span.parent is None]
    assert child.context.trace_id == root.context.trace_id
    assert collected.named("execute_tool Read")[0].context.trace_id == root.context.trace_id


def test_a_forked_run_names_the_run_it_continues(tmp_path: Path) -> None:
    """A run carried on from a fork point has its parent's run id on its run span."""
    import asyncio

    from fsm_agent.trace.replay import fork

    original = run_agent(tmp_path, READ_THEN_WRITE_THEN_REPLY, Collected())
    assert original.trace_path is not None
    point = fork(original.trace_path, 3)
    collected = Collected()
    agent = make_agent(
        tmp_path, READ_THEN_WRITE_THEN_REPLY, collected.provider, trace=tmp_path / "forked.jsonl"
    )

    async def go() -> None:
        async for _update in agent.continue_from(point):
            pass

    asyncio.run(go())
    (run_span,) = collected.named("invoke_agent")
    parent_id = read_trace(original.trace_path).header.meta["run_id"]
    assert run_span.attributes["fsm_agent.parent_run"] == parent_id
    assert run_span.attributes["fsm_agent.run_id"] != parent_id
