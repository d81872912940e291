"""The loop machine as an inline SVG picture, with a run's path drawn on it.

The states stand in one column, phases in table order, then the terminal states; every edge
of the table is an arc beside the column (downward edges on the right, upward ones on the
left, wider the farther they reach), so the picture stays readable at page width without a
layout engine or any script. Edges the run took are drawn thick and labelled with their
transition names and counts; the rest are thin and grey, named in a tooltip. The abort edges
(from every phase, on ``AbortRequested``) would cross everything: they are folded into a note.
"""

from __future__ import annotations

import html
from collections import Counter
from collections.abc import Iterable

from fsm_agent.core.events import AbortRequested
from fsm_agent.core.tables import LOOP_INITIAL, LOOP_ROWS, Phase, Terminal

_ROW_HEIGHT = 28
_BOX_WIDTH = 150
_BOX_HEIGHT = 20
_TOP = 20
_ARC_BASE = 18
_ARC_STEP = 11
_TAKEN = "#d9480f"
_IDLE = "#b8b8b8"

Taken = Counter[tuple[str, str, str]]
"""How often each (transition name, source, dest) was taken."""


def count_taken(transitions: Iterable[tuple[str, str, str]]) -> Taken:
    """Count loop transitions given as (name, source, dest)."""
    return Counter(transitions)


def render_loop_svg(taken: Taken) -> str:
    """The loop machine as an ``<svg>`` element, with ``taken`` drawn on it."""
    states = [phase.value for phase in Phase] + [terminal.value for terminal in Terminal]
    index = {state: position for position, state in enumerate(states)}
    edges: dict[tuple[str, str], list[str]] = {}
    aborts: list[tuple[str, str, str]] = []
    for row in LOOP_ROWS:
        for source in row.source:
            if row.on is AbortRequested:
                aborts.append((row.name, source, row.dest))
                continue
            names = edges.setdefault((source, row.dest), [])
            if row.name not in names:
                names.append(row.name)
    span = max(abs(index[d] - index[s]) for s, d in edges)
    reach = _ARC_BASE + _ARC_STEP * span
    left = reach + 160  # room for the upward arcs and their labels
    width = left + _BOX_WIDTH + reach + 220
    height = _TOP + _ROW_HEIGHT * len(states) + 60
    visited = {LOOP_INITIAL} | {s for (_, s, _) in taken} | {d for (_, _, d) in taken}

    parts = [
        f'<svg class="loop-diagram" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
        'aria-label="loop machine with the run\'s path">',
        "<defs>",
        _arrow_marker("arrow-taken", _TAKEN),
        _arrow_marker("arrow-idle", _IDLE),
        "</defs>",
    ]
    for (source, dest), names in edges.items():
        parts.append(_edge(source, dest, names, taken=taken, index=index, left=left))
    for state in states:
        parts.append(_node(state, index[state], left, state in visited, state in _TERMINALS))
    parts.append(_abort_note(aborts, taken, height - 30))
    parts.append("</svg>")
    return "\n".join(parts)


_TERMINALS = frozenset(terminal.value for terminal in Terminal)


def _arrow_marker(name: str, colour: str) -> str:
    return (
        f'<marker id="{name}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="9" '
        f'markerHeight="9" markerUnits="userSpaceOnUse" orient="auto-start-reverse">'
        f'<path d="M0,0 L10,5 L0,10 z" '
        f'fill="{colour}"/></marker>'
    )


def _y(position: int) -> int:
    return _TOP + _ROW_HEIGHT * position + _BOX_HEIGHT // 2


def _node(state: str, position: int, left: int, visited: bool, terminal: bool) -> str:
    y = _TOP + _ROW_HEIGHT * position
    classes = " ".join(
        name for name, on in (("node", True), ("visited", visited), ("final", terminal)) if on
    )
    return (
        f'<g class="{classes}"><rect x="{left}" y="{y}" width="{_BOX_WIDTH}" '
        f'height="{_BOX_HEIGHT}" rx="{10 if terminal else 4}"/>'
        f'<text x="{left + _BOX_WIDTH // 2}" y="{y + 14}" text-anchor="middle">'
        f"{html.escape(state)}</text></g>"
    )


def _edge(
    source: str,
    dest: str,
    names: list[str],
    *,
    taken: Taken,
    index: dict[str, int],
    left: int,
) -> str:
    counts = {name: taken[(name, source, dest)] for name in names if taken[(name, source, dest)]}
    was_taken = bool(counts)
    colour, marker = (_TAKEN, "arrow-taken") if was_taken else (_IDLE, "arrow-idle")
    stroke = 3 if was_taken else 1
    start, end = index[source], index[dest]
    y1, y2 = _y(start), _y(end)
    if start == end:  # a row that stays in its state: a small loop on the right
        x = left + _BOX_WIDTH
        path = f"M{x},{y1 - 5} C{x + 40},{y1 - 22} {x + 40},{y1 + 22} {x},{y1 + 5}"
        label_x, label_y, anchor = x + 44, y1 + 4, "start"
    else:  # downward arcs bulge to the right of the column, upward ones to the left
        down = end > start
        x = left + _BOX_WIDTH if down else left
        reach = _ARC_BASE + _ARC_STEP * abs(end - start)
        bulge = x + reach if down else x - reach
        path = f"M{x},{y1} C{bulge},{y1} {bulge},{y2} {x},{y2}"
        apex = x + (bulge - x) * 3 // 4  # where a cubic arc with these controls turns
        label_x = apex + 4 if down else apex - 4
        label_y, anchor = (y1 + y2) // 2, "start" if down else "end"
    tooltip = html.escape(f"{', '.join(names)}: {source} → {dest}")
    out = [
        f'<g class="edge{" taken" if was_taken else ""}"><title>{tooltip}</title>'
        f'<path d="{path}" fill="none" stroke="{colour}" stroke-width="{stroke}" '
        f'marker-end="url(#{marker})"/>'
    ]
    if was_taken:
        label = ", ".join(f"{name} ×{count}" for name, count in counts.items())
        out.append(
            f'<text class="edge-label" x="{label_x}" y="{label_y}" text-anchor="{anchor}">'
            f"{html.escape(label)}</text>"
        )
    out.append("</g>")
    return "".join(out)


def _abort_note(aborts: list[tuple[str, str, str]], taken: Taken, y: int) -> str:
    dests = sorted({dest for (_, _, dest) in aborts})
    used = [f"{s} → {d}" for (n, s, d) in aborts if taken[(n, s, d)]]
    text = f"Not drawn: an abort from any phase ends in {' or '.join(dests)}."
    if used:
        text += f" This run: {', '.join(used)}."
    return f'<text class="note{" taken" if used else ""}" x="10" y="{y}">{html.escape(text)}</text>'
