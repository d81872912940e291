"""How a divergence is reported, the same way by the CLI and the pytest plugin.

Records are shown as the JSON lines of the trace (keys sorted, redacted as the trace writer
redacts, whoever wrote the trace), and the report names the first field that differs as a
JSON path (``$.effect.max_output_tokens``), so a long record need not be compared by eye.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from fsm_agent.errors import TraceDivergence, redaction_note
from fsm_agent.trace.redact import KEY_RULES_ONLY


def first_difference(expected: Any, actual: Any, path: str = "$") -> str | None:
    """The JSON path of the first place where two JSON values differ, or None if equal.

    Object keys are visited in sorted order, list items in order; a key present on one side
    only is a difference at that key, a list of another length at the first missing index.
    """
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key in sorted(expected.keys() | actual.keys()):
            if key not in expected or key not in actual:
                return f"{path}.{key}"
            found = first_difference(expected[key], actual[key], f"{path}.{key}")
            if found is not None:
                return found
        return None
    if isinstance(expected, list) and isinstance(actual, list):
        for index, (mine, theirs) in enumerate(zip(expected, actual, strict=False)):
            found = first_difference(mine, theirs, f"{path}[{index}]")
            if found is not None:
                return found
        if len(expected) != len(actual):
            return f"{path}[{min(len(expected), len(actual))}]"
        return None
    if type(expected) is not type(actual) or expected != actual:
        return path
    return None


def _json(record: dict[str, Any] | None) -> str:
    """A record as shown: redacted by the key rules (DESIGN §8), for the trace may not be
    one this library wrote, or the replayed side may hold what the writer would redact."""
    if record is None:
        return "(nothing: the trace ends here)"
    return orjson.dumps(KEY_RULES_ONLY.value(record), option=orjson.OPT_SORT_KEYS).decode()


def recorded_as_shown(
    error: TraceDivergence, shown: Mapping[int, dict[str, Any]]
) -> TraceDivergence:
    """``error`` with its recorded records (``expected`` and the context) replaced by the
    records of the same ``seq`` in ``shown``, the trace as a view shows it (``Trace.redacted``:
    a tool input streamed in pieces is judged with the pieces before it, which a record shown
    alone lacks). The replayed record is the library's own, redacted already."""

    def as_shown(record: dict[str, Any]) -> dict[str, Any]:
        seq = record.get("seq")
        return shown.get(seq, record) if type(seq) is int else record

    return error.replace(
        expected=None if error.expected is None else as_shown(error.expected),
        context=tuple(as_shown(record) for record in error.context),
    )


WHOLE_RECORD = 2_000
"""A record shown in a report up to this many characters long is shown whole."""

AROUND_DIFFERENCE = 400
"""Of two longer records, the characters shown on either side of where they first differ."""

CONTEXT_RECORD = 300
"""Of a longer record around the divergence, the characters shown from its start."""


def _clipped(text: str, start: int, end: int) -> str:
    """``text[start:end]``, saying how many characters were left out on either side."""
    start, end = max(0, start), min(len(text), end)
    before = f"[… {start:,} characters …]" if start > 0 else ""
    after = f"[… {len(text) - end:,} characters …]" if end < len(text) else ""
    return f"{before}{text[start:end]}{after}"


def _common_prefix(first: str, second: str) -> int:
    """How many characters ``first`` and ``second`` start with alike (in blocks: records
    may be megabytes long)."""
    shorter = min(len(first), len(second))
    at, block = 0, 4096
    while at < shorter and first[at : at + block] == second[at : at + block]:
        at += block
    at = min(at, shorter)
    while at < shorter and first[at] == second[at]:
        at += 1
    return at


def _compared(recorded: str, replayed: str) -> tuple[str, str]:
    """The two records' texts as a report shows them: whole when short, else each around the
    first character where they differ (a long text differing at its end stays readable)."""
    if len(recorded) <= WHOLE_RECORD and len(replayed) <= WHOLE_RECORD:
        return recorded, replayed
    at = _common_prefix(recorded, replayed)
    start, end = at - AROUND_DIFFERENCE, at + AROUND_DIFFERENCE
    return _clipped(recorded, start, end), _clipped(replayed, start, end)


def format_divergence(error: TraceDivergence) -> str:
    """A short report: where, the first differing field, both records, and the context.

    A record longer than ``WHOLE_RECORD`` characters is shown around the place where the two
    first differ, and one of the context by its start, each with the count of characters
    left out: a report on megabytes of text stays a few lines long.
    """
    on_line = f" (line {error.line})" if error.line is not None else ""
    lines = [f"{error.source or 'trace'}: replay diverged at seq {error.seq}{on_line}"]
    if error.expected is not None and error.actual is not None:
        where = first_difference(error.expected, error.actual)
        lines.append(f"  first difference: {KEY_RULES_ONLY.text(str(where))}")  # keys too
    recorded, replayed = _compared(_json(error.expected), _json(error.actual))
    lines.append(f"  recorded: {recorded}")
    lines.append(f"  replayed: {replayed}")
    if error.context:
        lines.append("  around it (recorded):")
        for record in error.context:
            marker = ">" if record.get("seq") == error.seq else " "
            text = _json(record)
            if len(text) > WHOLE_RECORD:
                text = _clipped(text, 0, CONTEXT_RECORD)
            lines.append(f"   {marker} {text}")
    if error.redacted_before:
        lines.append(f"  {redaction_note(error.redacted_before)}")
    return "\n".join(lines)
