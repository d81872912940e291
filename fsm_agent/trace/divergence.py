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


def format_divergence(error: TraceDivergence) -> str:
    """A short report: where, the first differing field, both records, and the context."""
    on_line = f" (line {error.line})" if error.line is not None else ""
    lines = [f"{error.source or 'trace'}: replay diverged at seq {error.seq}{on_line}"]
    if error.expected is not None and error.actual is not None:
        where = first_difference(error.expected, error.actual)
        lines.append(f"  first difference: {KEY_RULES_ONLY.text(str(where))}")  # keys too
    lines.append(f"  recorded: {_json(error.expected)}")
    lines.append(f"  replayed: {_json(error.actual)}")
    if error.context:
        lines.append("  around it (recorded):")
        for record in error.context:
            marker = ">" if record.get("seq") == error.seq else " "
            lines.append(f"   {marker} {_json(record)}")
    if error.redacted_before:
        lines.append(f"  {redaction_note(error.redacted_before)}")
    return "\n".join(lines)
