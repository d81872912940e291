"""Context collapse as staged summaries (SPEC §7.4, our design): the core's half.

Where autocompact replaces the whole history with one summary, a collapse replaces only its
oldest span and keeps the recent turns as they were. Rules:

* **Staging.** When the estimated context crosses the staging threshold (90% of the effective
  window), the core asks the driver, with ``StageCollapse``, to summarise the oldest span of
  what it sends now (the oldest half, cut where no tool_use is parted from its result). Nothing
  waits: the answer, ``CollapseStaged``, may come in any phase, and is kept.
* **Projection.** History is never changed by a staged or committed collapse. A request is a
  read-time projection of it: the messages up to the end of the committed span are replaced by
  its summary. A span always starts at the beginning, so only the latest committed one counts.
* **Commit.** A real refusal (413, prompt too long) commits what is staged through the
  ``collapse_drain_retry`` row; with nothing staged, the driver collapses on demand, as before.
* A span whose end is no longer in the history (a compaction replaced it) projects nothing.

The decisions live here and in the table; summarising is the driver's (``runtime``).
"""

from __future__ import annotations

from collections.abc import Sequence, Set

import attrs

from fsm_agent.core.messages import AssistantMessage, Message, ToolResultBlock, UserMessage

__all__ = ["CollapseView", "CollapsedSpan", "collapse_cut"]

STAGING_SHARE = 0.9
"""Staging starts when the estimate reaches this share of the effective window (SPEC §7.4)."""


def _starts_round(history: Sequence[Message], index: int) -> bool:
    """Whether a cut before ``history[index]`` leaves every tool_use with its result."""
    message = history[index]
    if isinstance(message, AssistantMessage):
        # A new response, unless it continues the one before it (same message_id).
        before = history[index - 1]
        return not (
            isinstance(before, AssistantMessage) and before.message_id == message.message_id
        )
    if isinstance(message, UserMessage):
        return not (message.content and isinstance(message.content[0], ToolResultBlock))
    return False


def collapse_cut(history: Sequence[Message]) -> int:
    """Where the oldest half of ``history`` ends: the round start nearest the middle, or 0
    when no cut keeps something on both sides."""
    middle = len(history) // 2
    for distance in range(middle + 1):
        for index in (middle - distance, middle + distance):
            if 0 < index < len(history) and _starts_round(history, index):
                return index
    return 0


@attrs.frozen(kw_only=True)
class CollapsedSpan:
    """A summary of the history up to and including the message ``through_uuid``."""

    through_uuid: str
    summary: tuple[Message, ...]


class CollapseView:
    """The staged and committed collapses of one run, and the projection they give."""

    def __init__(self) -> None:
        self.staged: CollapsedSpan | None = None
        self.committed: CollapsedSpan | None = None
        self.staging: str | None = None  # the StageCollapse effect in flight
        self.staging_through: str | None = None  # the last message of the span it summarises
        self.staging_failed = False
        self._end: tuple[int, str] | None = None  # where the committed span ends, as found

    def _committed_end(self, history: Sequence[Message]) -> int | None:
        """Index of the committed span's last message in ``history`` (None if gone)."""
        span = self.committed
        if span is None:
            return None
        if self._end is not None:
            index, uuid = self._end
            if index < len(history) and history[index].uuid == uuid:
                return index
        for index in range(len(history) - 1, -1, -1):
            if history[index].uuid == span.through_uuid:
                self._end = (index, span.through_uuid)
                return index
        return None

    def project(self, history: tuple[Message, ...]) -> tuple[Message, ...]:
        """What a request sends: ``history`` with the committed span replaced by its summary."""
        end = self._committed_end(history)
        if end is None or self.committed is None:
            return history
        return (*self.committed.summary, *history[end + 1 :])

    def next_span(self, history: tuple[Message, ...]) -> tuple[int, str] | None:
        """The oldest span of the projection not yet summarised: (messages, last uuid)."""
        projected = self.project(history)
        cut = collapse_cut(projected)
        summary = self.committed.summary if self.committed is not None else ()
        if cut <= len(summary):
            return None
        return cut, projected[cut - 1].uuid

    def forget_staged_touching(self, history: Sequence[Message], gone: Set[str]) -> None:
        """Drop the staged span when messages up to its end leave ``history`` (a snip): its
        summary would describe what is no longer there. Staging may run again."""
        span = self.staged
        if span is None:
            return
        for message in history:
            if message.uuid in gone:
                self.staged = None
                return
            if message.uuid == span.through_uuid:
                return

    def commit(self) -> int:
        """Commit what is staged; the number of spans committed (0 or 1)."""
        if self.staged is None:
            return 0
        self.committed, self.staged, self._end = self.staged, None, None
        return 1
