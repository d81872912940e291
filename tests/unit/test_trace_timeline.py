"""Timeline rendering: readable text and a self-contained, escaped HTML page."""

from __future__ import annotations

import json
import re
from pathlib import Path

from test_trace_support import record_run

from fsm_agent.runtime.agent import Agent
from fsm_agent.testing.scenario import ScriptedModel, parse_scenario
from fsm_agent.trace.reader import read_trace
from fsm_agent.trace.timeline import render_timeline, timeline_entries
from fsm_agent.trace.timeline_page import render_html


def test_text_timeline_tells_the_story(tmp_path: Path) -> None:
    """Phases with transition names, tool steps, permission source and reason, usage, terminal."""
    text = render_timeline(read_trace(record_run(tmp_path / "t.jsonl")))
    assert "phase setup → streaming  [request_sent]" in text
    assert "tool toolu_001: permission → running  [permission_granted]" in text
    assert "permission for toolu_001: allow by policy — scripted policy" in text
    assert "run Read call for toolu_001" in text
    assert "usage in 120, out 40" in text
    assert "end: terminal completed" in text
    assert text.rstrip().endswith("terminal completed")


def test_stream_deltas_are_folded(tmp_path: Path) -> None:
    """Stream events become one line per model response, not one per delta."""
    trace = read_trace(record_run(tmp_path / "t.jsonl"))
    entries = timeline_entries(trace)
    streamed = sum(
        1
        for r in trace.records
        if r.kind == "event" and r.data["event"]["type"] == "ModelStreamEvent"
    )
    model_lines = [e for e in entries if e.text.startswith("model response")]
    assert len(model_lines) == 2
    assert len(entries) < len(trace.records) - streamed + 5


def test_failures_and_recoveries_are_shown(tmp_path: Path) -> None:
    """A failed request shows its failure kind and status."""
    text = render_timeline(read_trace(record_run(tmp_path / "t.jsonl", "overloaded_then_reply")))
    assert re.search(r"model request r1 failed: overloaded 529", text)


def test_html_is_self_contained_and_escaped(tmp_path: Path) -> None:
    """The HTML page has inline CSS, no external assets or scripts, and escapes trace text."""
    trace = read_trace(record_run(tmp_path / "t.jsonl", text="<script>alert(1)</script> & more"))
    page = render_html(trace)
    assert page.startswith("<!DOCTYPE html>")
    assert "<style>" in page
    assert "<script" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; more" in page
    assert not re.search(r"(src|href)\s*=", page)
    assert "http://" not in page and "https://" not in page


def test_citations_are_shown_under_their_message(tmp_path: Path) -> None:
    """A cited answer's citations appear in the timeline with title, url and cited text."""
    citation = {
        "type": "web_search_result_location",
        "url": "https://example.com/w",
        "title": "Weather today",
        "cited_text": "Sunny all day.",
        "encrypted_index": "Eo8B",
    }
    events = [
        {"type": "message_start", "message": {"id": "msg_c", "model": "m", "usage": {}}},
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "text", "text": "", "citations": []},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "citations_delta", "citation": citation},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": "Sun."},
        },
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {}},
        {"type": "message_stop"},
    ]
    body = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
    model = ScriptedModel(parse_scenario({"steps": [{"sse": body}]}))
    result = Agent(model=model, trace=tmp_path / "t.jsonl").run_sync("Weather?")
    assert result.trace_path is not None
    text = render_timeline(read_trace(result.trace_path))
    assert 'cites Weather today <https://example.com/w>: "Sunny all day."' in text
