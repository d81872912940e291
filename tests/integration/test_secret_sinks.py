"""Secrets never leave the process by a side door (DESIGN §8).

One run through the real SDK against the fake server plants a configured secret, an
API-key-shaped string and the API key itself (not shaped like one, so only the agent's own
secrets can hide it) everywhere a user or a model can put them: the prompt, the model's text,
a tool's input, name and output, a tool's exception, hook output and a model error body. Then
every sink the run reaches is read back as bytes: the trace, the run store (its SQLite file
and what ``fsm-agent runs`` prints), the OpenTelemetry spans, the library's log records, what
``fsm-agent show`` prints and its HTML page, and the terminal view. The results saved beside
the trace are the one place the run's data is kept in clear (the model reads them back): they
must be owner-only.
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
from rich.console import Console

from fsm_agent.core.config import LoopConfig
from fsm_agent.core.events import HookOutcome
from fsm_agent.runtime.agent import Agent, RunResult
from fsm_agent.runtime.hooks import Hooks
from fsm_agent.runtime.models import AnthropicModel
from fsm_agent.runtime.tool import tool
from fsm_agent.store.background import wait_for_store_writes
from fsm_agent.store.opening import open_store
from fsm_agent.store.query import RunQuery
from fsm_agent.terminal_view import LiveView
from fsm_agent.testing.fake_server import FakeAnthropicServer

pytest.importorskip("opentelemetry.sdk", reason="the fsm_agent[otel] extra is not installed")

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)

from fsm_agent.cli import main
from fsm_agent.telemetry.config import Telemetry

ServeFn = Callable[[Any], FakeAnthropicServer]  # the ``serve`` fixture (conftest.py)
MODEL = "claude-primary"
SECRET = "configured-hunter2-secret"
KEY_SHAPED = "sk-ant-api03-PLANTED0123456789abcdef"
API_KEY = "proxy-credential-0123456789"
"""Not shaped like an Anthropic key: only the agent's secrets, which the model adds its key
to, keep it out."""
FORBIDDEN = (SECRET, KEY_SHAPED, API_KEY)
PLANTED = f"[{SECRET} {KEY_SHAPED} {API_KEY}]"


@tool(description="Echo a text, at length.", max_result_chars=300)
async def echo(text: str) -> str:
    # Longer than the tool's limit: the whole output is saved to a file beside the trace.
    return f"echoed {text} {PLANTED}\n" * 40


@tool(description="Refuse a text.")
async def refuse(text: str) -> str:
    raise RuntimeError(f"refused {text} {PLANTED}")


def planted_hook(_hook: object) -> HookOutcome:
    return HookOutcome(additional_context=(f"context {PLANTED}",), system_messages=(PLANTED,))


SCENARIO: dict[str, Any] = {
    "steps": [
        {"error": {"kind": "overloaded", "message": f"overloaded, body {PLANTED}"}},
        {
            "content": [
                {"text": f"I will echo {PLANTED}"},
                {"tool_use": {"name": "echo", "input": {"text": PLANTED}}},
                {"tool_use": {"name": "refuse", "input": {"text": PLANTED}}},
                {"tool_use": {"name": SECRET, "input": {"text": PLANTED}}},
            ]
        },
        {"content": [{"text": f"Done: {PLANTED}"}]},
    ]
}


@attrs.frozen
class Sinks:
    """What one planted run left behind."""

    result: RunResult
    trace: Path
    store: Path
    spans: tuple[ReadableSpan, ...]
    logs: str
    view: str


@pytest.fixture
def planted_run(
    serve: ServeFn, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> Iterator[Sinks]:
    """The run, with every sink it writes to."""
    server = serve(SCENARIO)
    work = tmp_path / "work"
    work.mkdir()
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    store = tmp_path / "index.sqlite3"
    console = Console(file=io.StringIO(), width=400, force_terminal=False)

    async def go() -> RunResult | None:
        async with AnthropicModel(name=MODEL, api_key=API_KEY, base_url=server.base_url) as model:
            agent = Agent(
                model=model,
                tools=[echo, refuse],
                config=LoopConfig(model=MODEL, retry_base_ms=1, retry_cap_ms=5),
                hooks=Hooks(pre_tool_use=[planted_hook], user_prompt_submit=[planted_hook]),
                trace=tmp_path / "traces" / "run.jsonl",
                cwd=work,
                secrets=[SECRET],
                store=str(store),
                telemetry=Telemetry(tracer_provider=provider),
            )
            view = LiveView(console=console, secrets=agent.secrets)
            result = None
            with view:
                async for update in agent.stream(f"Please echo {PLANTED}"):
                    result = view.show(update) or result
            return result

    with caplog.at_level(logging.DEBUG, logger="fsm_agent"):
        result = asyncio.run(go())
        assert wait_for_store_writes(timeout_s=30)
    assert result is not None
    assert result.trace_path is not None
    output = console.file.getvalue()  # type: ignore[attr-defined]
    yield Sinks(
        result=result,
        trace=result.trace_path,
        store=store,
        spans=tuple(exporter.get_finished_spans()),
        logs=caplog.text,
        view=output,
    )
    provider.shutdown()


def assert_clean(what: str, data: str | bytes) -> None:
    """``data`` holds none of the planted strings."""
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    leaked = [secret for secret in FORBIDDEN if secret in text]
    assert not leaked, f"{what} holds {leaked}"


def test_the_run_went_where_the_secrets_are(planted_run: Sinks) -> None:
    """The planted strings did reach the run (else the other tests prove nothing): the model
    saw them in its answers and the tools' outputs."""
    result = planted_run.result
    assert result.terminal == "completed"
    transcript = json.dumps([repr(message) for message in result.messages])
    assert all(secret in transcript for secret in FORBIDDEN)


def test_the_trace_holds_no_secret(planted_run: Sinks) -> None:
    assert_clean("the trace", planted_run.trace.read_bytes())


def test_the_run_store_holds_no_secret(planted_run: Sinks, capsys: pytest.CaptureFixture) -> None:
    """Not the database file (with its write-ahead log), not a row, not `fsm-agent runs`."""
    for path in planted_run.store.parent.glob(f"{planted_run.store.name}*"):
        assert_clean(path.name, path.read_bytes())
    store = open_store(str(planted_run.store))
    try:
        rows = [run.to_json() for run in store.runs(RunQuery())]
    finally:
        store.close()
    assert len(rows) == 1
    assert_clean("the store's rows", json.dumps(rows))
    capsys.readouterr()
    assert main(["runs", "--store", str(planted_run.store)]) == 0
    assert main(["runs", "--store", str(planted_run.store), "--json"]) == 0
    assert_clean("fsm-agent runs", capsys.readouterr().out)


def span_texts(span: ReadableSpan) -> list[str]:
    """Every string a collector receives of ``span``."""
    texts = [span.name, str(span.status.description or "")]
    texts += [str(value) for value in (span.attributes or {}).values()]
    for event in span.events:
        texts.append(event.name)
        texts += [str(value) for value in (event.attributes or {}).values()]
    return texts


def test_the_spans_hold_no_secret(planted_run: Sinks) -> None:
    """A live run's spans come from records no trace writer redacted: the model error's body,
    the tool name the model made up and the call's failure all quote a secret."""
    spans = planted_run.spans
    assert {span.name for span in spans} >= {"invoke_agent fsm_agent", f"chat {MODEL}"}
    failed = [span for span in spans if span.attributes.get("error.type") == "overloaded"]
    assert failed and "[REDACTED]" in str(failed[0].status.description)
    assert_clean("the spans", json.dumps([span_texts(span) for span in spans]))


def test_the_logs_hold_no_secret(planted_run: Sinks) -> None:
    assert_clean("the fsm_agent log records", planted_run.logs)


def test_the_terminal_view_holds_no_secret(planted_run: Sinks) -> None:
    """What the person at the terminal saw: the model's text, the tool calls and results,
    the model failure."""
    assert "[REDACTED]" in planted_run.view
    assert "model request failed" in planted_run.view
    assert_clean("the terminal view", planted_run.view)


def test_show_and_its_html_page_hold_no_secret(
    planted_run: Sinks, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    page = tmp_path / "timeline.html"
    capsys.readouterr()
    assert main(["show", str(planted_run.trace), "--html", str(page)]) == 0
    assert_clean("fsm-agent show", capsys.readouterr().out)
    for written in tmp_path.glob("*.html"):
        assert_clean(written.name, written.read_bytes())


def test_saved_results_are_owner_only(planted_run: Sinks) -> None:
    """The echo's whole output is saved beside the trace as the tool gave it (the model may
    read it back), so the folder and the file are the owner's alone."""
    folder = planted_run.trace.parent / f"{planted_run.trace.stem}.tool-results"
    [saved] = folder.iterdir()
    assert SECRET in saved.read_text(encoding="utf-8")  # kept in clear, as documented
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE(saved.stat().st_mode) == 0o600


def test_the_run_results_repr_holds_no_secret(planted_run: Sinks) -> None:
    """A result is what a caller prints or logs: its repr counts the messages, which hold the
    conversation as it was (secrets included), instead of quoting them."""
    shown = repr(planted_run.result)
    assert f"messages=<{len(planted_run.result.messages)} messages>" in shown
    assert_clean("the result's repr", shown)
