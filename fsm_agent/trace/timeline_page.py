"""The HTML timeline of a trace: one self-contained page to open when a run went wrong.

The page holds a summary (model, tools, start, duration, how the run ended, the parent of a
forked or resumed run), the loop diagram with the run's path drawn on it
(:mod:`fsm_agent.trace.loop_svg`), and the timeline grouped by iteration; inside an iteration
each tool call is one collapsible group that follows the call through its states, with its
input and output. Recoveries, errors and permission decisions are highlighted, each line
shows its time since the start, long texts open in full, and a row of check boxes filters the
lines by kind. Only inline CSS and inline SVG: no script, no external asset; every piece of
trace text is escaped.

A run that started subagents links to their pages from the calls that started them, and a
subagent's page links back to that call on its parent's page, when the caller says where
those pages are (:mod:`fsm_agent.trace.run_tree_pages` writes a run's pages together).
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any, Final

import attrs

from fsm_agent.trace.loop_svg import count_taken, render_loop_svg
from fsm_agent.trace.reader import Trace
from fsm_agent.trace.timeline import TimelineEntry, timeline_entries

CATEGORIES: Final = (
    "phase",
    "model",
    "tool",
    "permission",
    "hooks",
    "compact",
    "event",
    "effect",
    "end",
)
"""The kinds of line, in the order of the filter's check boxes."""

_SHOWN_CHARS: Final = 100
"""A line longer than this, or with more text behind it, can be opened in full."""


@attrs.define
class _Call:
    """One tool call's lines within an iteration."""

    call_id: str
    entries: list[TimelineEntry] = attrs.field(factory=list)


@attrs.define
class _Iteration:
    """The lines of one iteration of the loop, tool calls gathered."""

    number: int
    items: list[TimelineEntry | _Call] = attrs.field(factory=list)
    calls: dict[str, _Call] = attrs.field(factory=dict)
    entries: list[TimelineEntry] = attrs.field(factory=list)

    def add(self, entry: TimelineEntry) -> None:
        self.entries.append(entry)
        if entry.call_id is None:
            self.items.append(entry)
            return
        call = self.calls.get(entry.call_id)
        if call is None:
            call = self.calls[entry.call_id] = _Call(call_id=entry.call_id)
            self.items.append(call)
        call.entries.append(entry)


def _iterations(entries: list[TimelineEntry]) -> list[_Iteration]:
    groups = [_Iteration(number=0)]
    for entry in entries:
        if entry.category == "phase" and entry.name == "iteration_started":
            groups.append(_Iteration(number=len(groups)))
        groups[-1].add(entry)
    return [group for group in groups if group.entries]


def _seconds(ms: float | None) -> str:
    return "" if ms is None else f"{ms / 1000:.3f} s"


def _span(entries: list[TimelineEntry]) -> str:
    times = [e.elapsed_ms for e in entries if e.elapsed_ms is not None]
    if len(times) < 2:
        return ""
    return f"{(max(times) - min(times)) / 1000:.3f} s"


def _esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def _line(entry: TimelineEntry) -> str:
    classes = f"e k-{_esc(entry.category)}" + (f" t-{_esc(entry.tone)}" if entry.tone else "")
    seq = str(entry.seq) if entry.seq else ""
    parts = [
        f'<div class="{classes}"><span class="seq">{seq}</span>',
        f'<span class="time">{_seconds(entry.elapsed_ms)}</span>',
        f'<span class="cat">{_esc(entry.category)}</span>',
    ]
    detail = entry.detail
    if detail and (len(detail) > _SHOWN_CHARS or "\n" in detail or detail not in entry.text):
        parts.append(
            f'<details class="text"><summary>{_esc(entry.text)}</summary>'
            f"<pre>{_esc(detail)}</pre></details>"
        )
    else:
        parts.append(f'<span class="text">{_esc(entry.text)}</span>')
    parts.append("</div>")
    return "".join(parts)


def _call_group(call: _Call, tools: dict[str, tuple[str, Any]], children: Mapping[str, str]) -> str:
    name, tool_input = tools.get(call.call_id, ("tool", {}))
    states = [
        e.text.split("→", 1)[1].split("[", 1)[0].strip()
        for e in call.entries
        if e.category == "tool" and "→" in e.text
    ]
    ended = next((s for s in reversed(states) if s != "yielded"), "(unfinished)")
    tones = {e.tone for e in call.entries}
    tone = next((t for t in ("error", "denied", "recovery") if t in tones), "")
    shown = " ".join(f"{key}={value!r}" for key, value in (tool_input or {}).items())
    shown = shown if len(shown) <= 80 else shown[:79] + "…"
    span = _span(call.entries)
    summary = (
        f"<b>{_esc(name)}</b> {_esc(shown)} → <b>{_esc(ended)}</b>"
        f'<span class="meta">{_esc(call.call_id)}{" · " + span if span else ""}</span>'
    )
    child = children.get(call.call_id)
    if child is not None:
        summary += f' <a class="subagent" href="{_esc(child)}">subagent timeline →</a>'
    body = "\n".join(_line(entry) for entry in call.entries)
    return (
        f'<a id="call-{_esc(call.call_id)}"></a>'  # what a subagent's page links back to
        f'<details class="call{" t-" + tone if tone else ""}"><summary>{summary}</summary>'
        f'<div class="lines">{body}</div></details>'
    )


def _iteration_group(
    group: _Iteration, tools: dict[str, tuple[str, Any]], children: Mapping[str, str]
) -> str:
    loop = [e for e in group.entries if e.category == "phase"]
    ending = loop[-1].name if loop else ""
    recoveries = sorted({e.name for e in group.entries if e.tone == "recovery"})
    errors = sum(1 for e in group.entries if e.tone == "error")
    badges = [f'<span class="badge t-recovery">{_esc(name)}</span>' for name in recoveries]
    if errors:
        badges.append(f'<span class="badge t-error">{errors} error(s)</span>')
    span = _span(group.entries)
    title = f"Iteration {group.number}" if group.number else "Start"
    meta = " · ".join(
        part
        for part in (
            f"ends with {ending}" if ending else "",
            f"{len(group.calls)} tool call(s)" if group.calls else "",
            span,
        )
        if part
    )
    body = "\n".join(
        _call_group(item, tools, children) if isinstance(item, _Call) else _line(item)
        for item in group.items
    )
    return (
        f'<details class="iteration" open><summary><b>{title}</b>'
        f'<span class="meta">{_esc(meta)}</span>{"".join(badges)}</summary>'
        f'<div class="lines">{body}</div></details>'
    )


def _tool_calls(trace: Trace) -> dict[str, tuple[str, Any]]:
    """Each call id's tool name and input, from its ``RunToolStep`` effects."""
    found: dict[str, tuple[str, Any]] = {}
    for record in trace.of_kind("effect"):
        effect = record.data.get("effect") or {}
        if effect.get("type") == "RunToolStep" and effect.get("call_id") not in found:
            found[str(effect.get("call_id"))] = (
                str(effect.get("tool_name")),
                effect.get("input"),
            )
    return found


def _summary(trace: Trace, entries: list[TimelineEntry], parent_href: str | None) -> str:
    header = trace.header
    ends = trace.of_kind("end")
    terminal = ends[-1].data.get("terminal") if ends else None
    times = [e.elapsed_ms for e in entries if e.elapsed_ms is not None]
    rows: list[tuple[str, str]] = [
        ("trace", trace.source or "(in memory)"),
        ("model", header.config.model),
        ("tools", ", ".join(tool.name for tool in header.tools) or "(none)"),
        ("started", str(header.meta.get("started", "(not recorded)"))),
        ("duration", _seconds(max(times)) if times else "(not recorded)"),
        ("ended", (terminal or "(not ended)") + (", trace cut off" if trace.truncated else "")),
        ("records", f"{len(trace.records)}"),
    ]
    parent = header.meta.get("parent")
    if isinstance(parent, dict):
        rows.append(
            ("parent", f"{parent.get('kind')} of {parent.get('trace')} at seq {parent.get('seq')}")
        )
    ending_class = "t-error" if terminal not in {"completed", None} else ""
    cells = "".join(
        f'<dt>{_esc(key)}</dt><dd class="{ending_class if key == "ended" else ""}">'
        f"{_esc(value)}</dd>"
        for key, value in rows
    )
    return f'<dl class="summary">{cells}{_parent_cell(trace, parent_href)}</dl>'


def _parent_cell(trace: Trace, parent_href: str | None) -> str:
    """The summary row of a subagent's page: the run and call it worked for, linked."""
    parent = trace.header.meta.get("subagent_of")
    if not isinstance(parent, dict):
        return ""
    text = _esc(
        f"subagent {parent.get('agent')!r} of run {parent.get('run_id')}, "
        f"call {parent.get('call_id')} ({parent.get('trace') or 'not traced'})"
    )
    if parent_href is not None:
        text = f'<a class="parent" href="{_esc(parent_href)}">{text}</a>'
    return f"<dt>subagent of</dt><dd>{text}</dd>"


def _diagram(trace: Trace) -> str:
    taken = count_taken(
        (r.data["name"], r.data["source"], r.data["dest"])
        for r in trace.of_kind("transition")
        if r.data.get("machine") == "loop"
    )
    return (
        '<details class="diagram" open><summary><b>Loop machine</b>'
        '<span class="meta">the run\'s path in orange; hover an edge for its name</span>'
        f"</summary>{render_loop_svg(taken)}</details>"
    )


def _filters() -> str:
    boxes = "".join(
        f'<input type="checkbox" id="show-{name}" class="filter" checked>' for name in CATEGORIES
    )
    labels = "".join(f'<label for="show-{name}">{name}</label>' for name in CATEGORIES)
    return f'{boxes}<nav class="filters">show: {labels}</nav>'


def _filter_css() -> str:
    rules = []
    for name in CATEGORIES:
        rules.append(f"#show-{name}:not(:checked) ~ main .k-{name} {{ display: none; }}")
        rules.append(
            f"#show-{name}:not(:checked) ~ nav label[for=show-{name}] "
            "{ opacity: .4; text-decoration: line-through; }"
        )
    return "\n".join(rules)


_CSS: Final = """
body { font: 13px/1.45 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
       margin: 1.5em; color: #1d1d1f; background: #fafafa; }
h1 { font-size: 1.2em; margin: 0 0 .6em; }
dl.summary { display: grid; grid-template-columns: max-content 1fr; gap: 2px 14px;
             margin: 0 0 1em; }
dl.summary dt { color: #666; } dl.summary dd { margin: 0; }
details { margin: 4px 0; }
details > summary { cursor: pointer; padding: 3px 6px; }
details.iteration { border: 1px solid #ddd; border-radius: 6px; background: #fff; }
details.iteration > summary { background: #f2f4f7; border-radius: 6px 6px 0 0; }
details.call { border-left: 3px solid #c9a227; margin: 4px 0 4px 1.5em; background: #fffdf3; }
details.call.t-error { border-left-color: #c92a2a; background: #fff5f5; }
details.call.t-denied { border-left-color: #862e9c; background: #fbf3ff; }
.meta { color: #777; margin-left: 1em; }
.badge { margin-left: .6em; padding: 0 6px; border-radius: 8px; font-size: 12px; }
.lines { padding: 2px 6px 6px; }
.e { display: grid; grid-template-columns: 3.5em 6.5em 7em 1fr; gap: 8px;
     padding: 1px 4px; border-bottom: 1px solid #f0f0f0; }
.e .seq { text-align: right; color: #999; } .e .time { color: #888; }
.e .cat { font-weight: bold; } .e details.text { margin: 0; }
.e details.text > summary { padding: 0; }
.e pre { white-space: pre-wrap; word-break: break-word; background: #f6f8fa;
         padding: 6px; margin: 4px 0; max-height: 30em; overflow: auto; }
.k-phase .cat { color: #0a58ca; } .k-tool .cat { color: #8a4b00; }
.k-permission .cat { color: #a4161a; } .k-hooks .cat { color: #6f42c1; }
.k-compact .cat { color: #146c43; } .k-model .cat { color: #055160; }
.t-recovery { background: #fff3bf; } .e.t-recovery .text::before { content: "↻ "; }
.t-error { background: #ffe3e3; color: #8b0000; } .e.t-error .text::before { content: "✗ "; }
.t-permission { background: #e6fcf5; } .t-denied { background: #f3d9fa; }
nav.filters { position: sticky; top: 0; background: #fafafa; padding: 6px 0; z-index: 1; }
nav.filters label { margin-left: .8em; cursor: pointer; border-bottom: 1px dotted #888; }
input.filter { display: none; }
svg.loop-diagram { max-width: 100%; height: auto; }
svg .node rect { fill: #fff; stroke: #999; } svg .node text { font-size: 12px; fill: #555; }
svg .node.visited rect { fill: #ffd8a8; stroke: #d9480f; stroke-width: 2; }
svg .node.visited text { fill: #000; font-weight: bold; }
svg .node.final rect { stroke-dasharray: 3 2; }
svg .edge-label { font-size: 11px; fill: #d9480f; font-weight: bold; }
svg .note { font-size: 12px; fill: #555; } svg .note.taken { fill: #c92a2a; }
"""


PAGE_MARK: Final = '<meta name="generator" content="fsm_agent">'
"""In the head of every run's page: a file that has it is a page this library wrote, which a
later ``--html`` may write over (:mod:`~fsm_agent.trace.run_tree_pages`)."""


def render_html(
    trace: Trace,
    *,
    title: str | None = None,
    children: Mapping[str, str] | None = None,
    parent_href: str | None = None,
) -> str:
    """The timeline page of ``trace`` (see the module docstring).

    Args:
        trace: the trace to show.
        title: the page's title (default: the trace's file).
        children: for a run that started subagents, the address of each one's page, by the
            id of the call that started it.
        parent_href: for a subagent's trace, the address of the call that started it on its
            parent's page.
    """
    heading = _esc(title or f"fsm_agent trace {trace.source or ''}".strip())
    entries = timeline_entries(trace)
    tools = _tool_calls(trace)
    links = children or {}
    groups = "\n".join(
        _iteration_group(group, tools, links)
        for group in _iterations([e for e in entries if e.seq])
    )
    return (
        f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n{PAGE_MARK}\n'
        f"<title>{heading}</title>\n<style>{_CSS}\n{_filter_css()}</style>\n</head>\n<body>\n"
        f"<h1>{heading}</h1>\n{_summary(trace, entries, parent_href)}\n{_diagram(trace)}\n"
        f"{_filters()}\n<main>\n{groups}\n</main>\n</body>\n</html>\n"
    )
