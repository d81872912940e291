"""The events of recorded lines, structured once per distinct line (issue 10).

A corpus of traces repeats event lines byte for byte: runs that start alike record the same
hooks finishing, the same tool results, at the same seqs. The same bytes parse to the same
JSON and that structures to the same event, so replay structures the event of such a line
once and feeds the same object again. That is safe because events are frozen values: their
tuples cannot change, and the JSON objects in them are copies the structuring made, which
nothing changes (as the headers' config and tools, shared the same way,
:func:`~fsm_agent.trace.records.parse_header`).

The memo is bounded: a line longer than :data:`LINE_LIMIT` is not kept, and the memo is
emptied when the lines it keeps would pass :data:`HELD_LIMIT` bytes.
"""

from __future__ import annotations

from typing import Any, Final

from fsm_agent.core.codec import load_event
from fsm_agent.core.events import Event

__all__ = ["HELD_LIMIT", "LINE_LIMIT", "event_of_line"]

LINE_LIMIT: Final = 64 * 1024
"""Lines longer than this are structured every time (a long transcript rarely repeats)."""

HELD_LIMIT: Final = 4 * 1024 * 1024
"""The most line bytes the memo keeps as keys."""


class _LineEvents:
    """The memo: events by the bytes of their lines, and how many bytes those keys hold."""

    def __init__(self) -> None:
        self.events: dict[bytes, Event] = {}
        self.held = 0

    def event_of(self, content: bytes, raw: dict[str, Any]) -> Event | None:
        """The event of the line ``content`` whose parsed event object is ``raw``, or None
        when it does not structure (the caller's careful path names what is wrong)."""
        event = self.events.get(content)
        if event is not None:
            return event
        try:
            event = load_event(raw)  # structuring leaves the dict whole
        except Exception:
            return None
        size = len(content)
        if size <= LINE_LIMIT:
            if self.held + size > HELD_LIMIT:
                self.events.clear()
                self.held = 0
            self.events[content] = event
            self.held += size
        return event


_memo: Final = _LineEvents()
event_of_line: Final = _memo.event_of
