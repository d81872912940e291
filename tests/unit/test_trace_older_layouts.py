"""Every reader of traces sees a run alike whichever schema laid it out: the run store's
summary, the telemetry spans, the timeline, the subagent spending read-back and ``diff``."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import attrs
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from test_trace_support import lines_of, record_run
from trace_layouts import write_schema1, write_schema2

from fsm_agent.runtime.subagent_spending import spent_before
from fsm_agent.store.summary import summarize_trace
from fsm_agent.telemetry.export import build_trace_spans
from fsm_agent.trace.reader import read_trace
from fsm_agent.trace.replay import diff_traces
from fsm_agent.trace.timeline import timeline_entries

WRITERS = {"schema1": write_schema1, "schema2": write_schema2}


@pytest.fixture
def current(tmp_path: Path) -> Path:
    """A real run with a tool call, as this library writes it (schema 3)."""
    return record_run(tmp_path / "current.jsonl")


@pytest.fixture(params=sorted(WRITERS))
def older(request: pytest.FixtureRequest, tmp_path: Path, current: Path) -> Path:
    """The same run laid out as an older schema."""
    write = WRITERS[request.param]
    return write(tmp_path / f"{request.param}.jsonl", lines_of(current))


def test_the_store_summary_is_the_same(current: Path, older: Path) -> None:
    """The run store indexes an older layout exactly as the current one (but for the file's
    path and the run id taken from its name)."""
    ours = summarize_trace(current)
    assert summarize_trace(older) == attrs.evolve(ours, trace_path=str(older), run_id=older.stem)


def spans_of(path: Path) -> Counter[tuple[str, str]]:
    """The names and attributes of the spans built from a trace."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    build_trace_spans(path, provider.get_tracer("test"))
    return Counter(
        (s.name, str(sorted(dict(s.attributes or {}).items())))
        for s in exporter.get_finished_spans()
    )


def test_the_telemetry_spans_are_the_same(current: Path, older: Path) -> None:
    """Spans built from an older layout are those built from the current one."""
    assert spans_of(older) == spans_of(current)


def test_the_timeline_and_diff_are_the_same(current: Path, older: Path) -> None:
    """The timeline has the same entries, and ``diff`` finds no difference between the layouts."""
    # The first entry names the file.
    assert timeline_entries(read_trace(older))[1:] == timeline_entries(read_trace(current))[1:]
    assert diff_traces(current, older) is None


def test_the_spending_read_back_is_the_same(current: Path, older: Path) -> None:
    """A subagent's spending counted from an older layout is the current layout's."""
    ours = [r.data for r in read_trace(current).records]
    theirs = [r.data for r in read_trace(older).records]
    assert spent_before(theirs) == spent_before(ours)
