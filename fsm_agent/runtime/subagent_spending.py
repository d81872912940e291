"""What the subagents of a run tree have spent: counted live, and read back from traces.

The tree's token budget (``SubagentLimits.max_tokens``) counts the input and output tokens of
every child response as it streams in (:class:`ResponseTokens`). A resumed or forked run
starts a new driver, so the count is read back from the recording it continues
(:func:`spent_before`): each ``SubagentStarted`` event of the run names a child's trace, and the
child's recorded stream events are counted the same way they were counted live, its own
children included. A resumed run therefore keeps the limits it was started with.

A child's trace that is gone or unreadable counts as a run with no tokens: what cannot be
read back is not invented. When a call started a child more than once (a resumed child
writes a new trace that repeats the old one's prefix), only its latest trace counts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from fsm_agent.errors import TraceError
from fsm_agent.runtime.subagent_link import SubagentBudget

MAX_TREE_DEPTH = 32
"""Child traces nested deeper than this are not read (a trace that names itself ends here)."""


class ResponseTokens:
    """Counts one response's input and output tokens as its stream events arrive.

    ``message_start`` carries the input tokens and the first output count; ``message_delta``
    carries the output count so far (cumulative, NOTES: anthropic), so only its growth is new.
    """

    def __init__(self) -> None:
        self._output = 0

    def add(self, event: Mapping[str, Any]) -> int:
        """The tokens ``event`` adds to the response's total (0 for other events)."""
        kind = event.get("type")
        if kind == "message_start":
            message = event.get("message")
            usage = message.get("usage") if isinstance(message, Mapping) else None
            self._output = _tokens(usage, "output_tokens")
            return _tokens(usage, "input_tokens") + self._output
        if kind == "message_delta":
            total = _tokens(event.get("usage"), "output_tokens")
            added = max(total - self._output, 0)
            self._output = max(total, self._output)
            return added
        return 0


def _tokens(usage: object, key: str) -> int:
    value = usage.get(key) if isinstance(usage, Mapping) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def spent_before(records: Iterable[Mapping[str, Any]]) -> SubagentBudget:
    """What the children of a recorded run (and theirs) had spent: runs started and tokens.

    Args:
        records: the run's trace records, as dicts (``ResumePoint.records``).
    """
    budget = SubagentBudget()
    _add_children(budget, records, depth=0, seen=set())
    return budget


def _add_children(
    budget: SubagentBudget, records: Iterable[Mapping[str, Any]], *, depth: int, seen: set[Path]
) -> None:
    latest: dict[str, str | None] = {}  # call id → the trace of the child it started last
    for record in records:
        event = record.get("event") if record.get("record") == "event" else None
        if isinstance(event, Mapping) and event.get("type") == "SubagentStarted":
            trace = event.get("trace")
            latest[str(event.get("call_id"))] = trace if isinstance(trace, str) else None
    budget.runs += len(latest)
    if depth >= MAX_TREE_DEPTH:
        return
    for trace in latest.values():
        path = Path(trace).resolve() if trace else None
        if path is None or path in seen:
            continue
        seen.add(path)
        child = _child_records(path)
        budget.tokens += _stream_tokens(child)
        _add_children(budget, child, depth=depth + 1, seen=seen)


def _child_records(path: Path) -> list[Mapping[str, Any]]:
    """A child's records; none when its trace is gone or unreadable (a cut tail is dropped)."""
    # Imported here: the reader is needed only when a recorded run is continued.
    from fsm_agent.trace.reader import read_trace  # noqa: PLC0415

    try:
        return [record.data for record in read_trace(path, allow_truncated=True).records]
    except (OSError, TraceError):
        return []


def _stream_tokens(records: Iterable[Mapping[str, Any]]) -> int:
    """The tokens of every response recorded in ``records``, counted as they were live."""
    counters: dict[str, ResponseTokens] = {}
    total = 0
    for record in records:
        event = record.get("event") if record.get("record") == "event" else None
        if not isinstance(event, Mapping) or event.get("type") != "ModelStreamEvent":
            continue
        raw = event.get("event")
        if isinstance(raw, Mapping):
            counter = counters.setdefault(str(event.get("request_id")), ResponseTokens())
            total += counter.add(raw)
    return total
