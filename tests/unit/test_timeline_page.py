"""The HTML timeline page: iterations, tool-call groups, highlights, timings, filters, diagram."""

from __future__ import annotations

import re
from pathlib import Path

from fsm_agent.runtime.agent import Agent
from fsm_agent.testing.scenario import ScriptedModel, parse_scenario
from fsm_agent.toolbox import default_tools
from fsm_agent.trace.reader import read_trace
from fsm_agent.trace.timeline_page import CATEGORIES, render_html

TRACES = Path(__file__).resolve().parents[2] / "traces"


def page_of(name: str) -> str:
    return render_html(read_trace(TRACES / f"{name}.jsonl"))


def lines_with(page: str, css_class: str) -> list[str]:
    """The text of every timeline line carrying ``css_class``."""
    return [
        re.sub(r"<[^>]+>", " ", match)
        for match in re.findall(rf'<div class="e [^"]*\b{css_class}\b[^"]*">(.*?)</div>', page)
    ]


def test_the_run_is_grouped_by_iteration() -> None:
    """Each iteration is its own open group, saying how it ended."""
    page = page_of("reactive_compact_retry")
    assert page.count('<details class="iteration" open>') == 3  # the start, then two
    assert "<b>Iteration 1</b>" in page and "<b>Iteration 2</b>" in page
    assert "ends with reactive_compact_retry" in page and "ends with completed" in page


def test_recoveries_and_errors_are_highlighted() -> None:
    """A recovery transition and a failed model request carry their highlight classes."""
    page = page_of("reactive_compact_retry")
    assert any("reactive_compact_retry" in line for line in lines_with(page, "t-recovery"))
    assert any("failed: prompt_too_long" in line for line in lines_with(page, "t-error"))
    assert not any("request_sent" in line for line in lines_with(page, "t-recovery"))


def test_each_tool_call_is_one_collapsible_group() -> None:
    """A tool call's lines sit in one group titled with the tool, its input and its end."""
    page = page_of("concurrent_reads_next_turn")
    groups = re.findall(r'<details class="call[^"]*"><summary>(.*?)</summary>', page)
    assert [summary.split("→")[0] for summary in groups] == [
        "<b>Read</b> file_path=&#x27;README.md&#x27; ",
        "<b>Glob</b> pattern=&#x27;*.py&#x27; ",
    ]
    assert all("→ <b>completed</b>" in summary for summary in groups)


def test_a_denied_call_is_marked_and_the_decision_shown() -> None:
    """A denied tool call's group and its permission line are highlighted as denied."""
    page = page_of("rejected_and_denied")
    assert re.search(r'<details class="call t-denied"><summary>.*?→ <b>denied</b>', page)
    assert lines_with(page, "t-denied")


def test_long_texts_open_in_full_and_lines_show_their_time(tmp_path: Path) -> None:
    """A long tool output is expandable to its full text; timed runs show times and duration."""
    long_line = "word " * 60
    (tmp_path / "big.txt").write_text(long_line + "\nlast line of the file\n", encoding="utf-8")
    steps = {
        "steps": [
            {"content": [{"tool_use": {"name": "Read", "input": {"file_path": "big.txt"}}}]},
            {"content": [{"text": "read it"}]},
        ]
    }
    agent = Agent(
        model=ScriptedModel(parse_scenario(steps)),
        tools=default_tools(),
        cwd=tmp_path,
        trace=tmp_path / "t.jsonl",
    )
    result = agent.run_sync("read big.txt")
    assert result.trace_path is not None
    page = render_html(read_trace(result.trace_path))
    expandable = re.findall(
        r'<details class="text"><summary>.*?</summary><pre>(.*?)</pre>', page, re.DOTALL
    )
    assert any("last line of the file" in full for full in expandable)
    assert re.search(r'<span class="time">\d+\.\d{3} s</span>', page)
    assert re.search(r"<dt>duration</dt><dd[^>]*>\d+\.\d{3} s</dd>", page)


def test_a_filter_by_kind_needs_no_script() -> None:
    """One check box per kind of line, each hiding its lines through CSS alone."""
    page = page_of("max_turns")
    for name in CATEGORIES:
        assert f'<input type="checkbox" id="show-{name}" class="filter" checked>' in page
        assert f"#show-{name}:not(:checked) ~ main .k-{name} {{ display: none; }}" in page
    assert "<script" not in page


def test_the_diagram_draws_the_run_path_and_folds_aborts() -> None:
    """The loop diagram marks visited states and taken edges, and notes the abort edges."""
    page = page_of("reactive_compact_retry")
    assert '<g class="node visited"><rect' in page
    assert "reactive_compact_retry ×1" in page
    assert "Not drawn: an abort from any phase" in page
    visited = re.findall(r'<g class="node visited[^"]*">.*?>([a-z_]+)</text>', page)
    assert "reactive_compacting" in visited and "tool_exec" not in visited
