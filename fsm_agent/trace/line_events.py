"""Event lines read once per distinct line (issue 10).

A corpus of traces repeats event lines byte for byte: runs that start alike record the same
hooks finishing, the same tool results, at the same seqs. The same bytes parse to the same
JSON and that structures to the same event, so replay keeps, by the bytes of such a line, the
line's dict and its event, and the next time it meets those bytes it neither parses the line
again nor structures its event.

Sharing them is safe because neither changes. Events are frozen values: their tuples cannot
change, and the JSON objects in them are copies the structuring made, which nothing changes
(as the headers' config and tools, shared the same way,
:func:`~fsm_agent.trace.records.parse_header`). A kept dict is only read: replay's hot loop
reads its keys, and a line that needs any other look is parsed again, so no dict that goes
into an error or a result is a kept one. Stream events are not kept: their payload is handed
to the core as it is.

The memo is bounded: a line longer than :data:`LINE_LIMIT` is not kept, and the memo is
emptied when the lines it keeps would pass :data:`HELD_LIMIT` bytes.
"""

from __future__ import annotations

from typing import Any, Final

from fsm_agent.core.codec import load_event
from fsm_agent.core.events import Event

__all__ = ["HELD_LIMIT", "LINE_LIMIT", "event_of_line", "keep_line", "kept_line"]

LINE_LIMIT: Final = 64 * 1024
"""Lines longer than this are not kept (a long transcript rarely repeats)."""

HELD_LIMIT: Final = 1024 * 1024
"""The most line bytes the memo keeps (their dicts take a few times that)."""

_Kept = tuple[dict[str, Any], Event]


class _LineEvents:
    """The memo: each kept line's dict and event by its bytes, and how many bytes it keeps."""

    def __init__(self) -> None:
        self.lines: dict[bytes, _Kept] = {}
        self.held = 0

    def event_of(self, content: bytes, raw: dict[str, Any]) -> Event | None:
        """The event of the line ``content`` whose parsed event object is ``raw``, or None
        when it does not structure (the caller's careful path names what is wrong)."""
        kept = self.lines.get(content)
        if kept is not None:
            return kept[1]
        try:
            event: Event = load_event(raw)  # structuring leaves the dict whole
        except Exception:
            return None
        return event

    def keep(self, content: bytes, data: dict[str, Any], event: Event) -> None:
        """Keep the line ``content``, parsed as ``data`` (from now on only read), with the
        event structured from it."""
        size = len(content)
        if size > LINE_LIMIT or content in self.lines:
            return
        if self.held + size > HELD_LIMIT:
            self.lines.clear()
            self.held = 0
        self.lines[content] = (data, event)
        self.held += size


_memo: Final = _LineEvents()
event_of_line: Final = _memo.event_of
keep_line: Final = _memo.keep
kept_line: Final = _memo.lines.get
"""The dict and event kept for a line's bytes, or None."""
