"""The per-message tool-result budget (SPEC §7.1 ``applyToolResultBudget``): its decisions.

Rules of this module:

* A *group* is the tool_results between two assistant messages: they reach the API as one
  user message, and the budget is per API message (200,000 characters by default).
* A group over the budget has its largest *fresh* results persisted to a file, largest first,
  until what stays is under the budget. A result is fresh until a request has carried it: once
  the model has seen a result its fate is frozen, so no already-sent content is ever newly
  replaced (the prompt-cache prefix stays byte-identical, issue 10).
* Results of tools that bound their own output (``ToolSpec.unbounded_results``, like Read),
  results carrying images or documents, and results already persisted are never chosen.
* The core does no I/O. It names the chosen results in a ``PersistToolResults`` effect; the
  driver writes the files and answers ``ToolResultsPersisted`` with the preview text of each,
  which the core puts in place of the content. That answer is in the trace, so replay and
  resume reproduce the replacement without touching the disk.

Nothing here is O(history) per request: only the messages added since the last request are
scanned, except once after compaction or collapse replaced the history; and they are scanned
only when a group is over the budget (a user turn hands in the whole transcript as sent).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

import attrs

from fsm_agent.core.effects import OversizedResult
from fsm_agent.core.messages import (
    AssistantMessage,
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)

__all__ = ["ToolResultBudget", "replace_results", "result_chars"]

PERSISTED_MARK = "<persisted-output>"
"""How a result already saved to a file begins (``texts.persisted_output``)."""


def result_chars(block: ToolResultBlock) -> int:
    """Characters of text a tool_result sends (images and documents count nothing)."""
    content = block.content
    if isinstance(content, str):
        return len(content)
    return sum(len(part.text) for part in content if isinstance(part, TextBlock))


def _persistable(block: ToolResultBlock) -> bool:
    content = block.content
    if isinstance(content, str):
        return not content.startswith(PERSISTED_MARK)
    return all(isinstance(part, TextBlock) for part in content)


def _groups(messages: Sequence[Message]) -> Iterator[tuple[list[ToolResultBlock], dict[str, str]]]:
    """Each group of tool_results, with the tool names of the tool_uses seen so far."""
    names: dict[str, str] = {}
    group: list[ToolResultBlock] = []
    for message in messages:
        if isinstance(message, AssistantMessage):
            if group:
                yield group, names
                group = []
            for block in message.content:
                if isinstance(block, ToolUseBlock):
                    names[block.id] = block.name
        elif isinstance(message, UserMessage):
            group.extend(b for b in message.content if isinstance(b, ToolResultBlock))
    if group:
        yield group, names


def _some_group_over(messages: Sequence[Message], start: int, limit: int) -> bool:
    """Whether a group of ``messages[start:]`` (as :func:`_groups` cuts them) holds more than
    ``limit`` characters of tool_results."""
    total = 0
    for index in range(start, len(messages)):
        message = messages[index]
        if isinstance(message, AssistantMessage):
            total = 0
        elif isinstance(message, UserMessage):
            for block in message.content:
                if isinstance(block, ToolResultBlock):
                    content = block.content
                    total += len(content) if isinstance(content, str) else result_chars(block)
                    if total > limit:
                        return True
    return False


def replace_results(message: Message, replacements: Mapping[str, str]) -> Message:
    """``message`` with the content of the tool_results named in ``replacements`` replaced
    (the same object when it holds none of them)."""
    if not isinstance(message, UserMessage):
        return message
    blocks = message.content
    if not any(isinstance(b, ToolResultBlock) and b.tool_use_id in replacements for b in blocks):
        return message
    content = tuple(
        attrs.evolve(b, content=replacements[b.tool_use_id])
        if isinstance(b, ToolResultBlock) and b.tool_use_id in replacements
        else b
        for b in blocks
    )
    return attrs.evolve(message, content=content)


def _goes_on_from(messages: Sequence[Message], count: int, last: Message | None) -> bool:
    """Whether ``messages`` continue a history of ``count`` messages ending with ``last``
    (it is at its place in them: histories are extended by appending, and rewritten as new
    tuples)."""
    return 0 < count <= len(messages) and messages[count - 1] is last


class ToolResultBudget:
    """What the model has seen, and which fresh results a history must persist.

    Args:
        limit: characters of tool_results one API message may carry; None turns it off.

    Example:
        >>> ToolResultBudget(limit=10).plan((), unbounded_tools=frozenset())
        ()
    """

    def __init__(self, *, limit: int | None) -> None:
        self._limit = limit
        self._seen: set[str] = set()
        # Sent messages not yet read into ``_seen`` (each with where to start reading): a
        # user turn hands in its whole transcript, and reading it only when a decision needs
        # it keeps a turn under the budget free of O(history) work (DESIGN §7).
        self._unread: list[tuple[Sequence[Message], int]] = []
        self._sent_count = 0
        self._sent_last: Message | None = None

    def _unsent_start(self, messages: Sequence[Message]) -> int:
        """Where the messages no request has carried begin (0 after a rewrite of history)."""
        count = self._sent_count
        return count if _goes_on_from(messages, count, self._sent_last) else 0

    def mark_sent(self, messages: Sequence[Message]) -> None:
        """A request carried ``messages``: every tool_result in them is now seen."""
        start = self._unsent_start(messages)
        if start < len(messages):
            unread = self._unread
            earlier = unread[-1][0] if unread else ()
            if start and earlier and _goes_on_from(messages, len(earlier), earlier[-1]):
                # Keep only the longer sequence: a session whose budget never reads holds
                # one transcript, not one per request (issue 10).
                unread[-1] = (messages, unread[-1][1])
            else:
                unread.append((messages, start))
        self._sent_count = len(messages)
        self._sent_last = messages[-1] if messages else None

    def _read_sent(self) -> set[str]:
        """Every tool_result id a request has carried."""
        for messages, start in self._unread:
            for index in range(start, len(messages)):
                message = messages[index]
                if isinstance(message, UserMessage):
                    self._seen.update(
                        b.tool_use_id for b in message.content if isinstance(b, ToolResultBlock)
                    )
        self._unread.clear()
        return self._seen

    def seen(self, tool_use_id: str) -> bool:
        """Whether a request has carried this result (its fate is then frozen)."""
        return tool_use_id in self._read_sent()

    def plan(
        self, messages: Sequence[Message], *, unbounded_tools: frozenset[str]
    ) -> tuple[OversizedResult, ...]:
        """The fresh results to persist so that every group is under the limit, largest
        first; empty when no group is over it or nothing in it may be persisted.
        ``unbounded_tools`` name the tools whose results are never persisted."""
        if self._limit is None:
            return ()
        start = self._unsent_start(messages)
        # A group that began before the last request may go on after it: start at the
        # response its tool_uses came in (every part of it, for the tool names).
        while start > 0 and not isinstance(messages[start - 1], AssistantMessage):
            start -= 1
        while start > 0 and isinstance(messages[start - 1], AssistantMessage):
            start -= 1
        if not _some_group_over(messages, start, self._limit):
            return ()  # the usual case, decided in one plain pass
        chosen: list[OversizedResult] = []
        for group, names in _groups(messages[start:]):
            sizes = [(result_chars(b), b) for b in group]
            total = sum(size for size, _ in sizes)
            if total <= self._limit:
                continue
            seen = self._read_sent()
            fresh = sorted(
                (
                    (size, position, b)
                    for position, (size, b) in enumerate(sizes)
                    if b.tool_use_id not in seen
                    and names.get(b.tool_use_id) not in unbounded_tools
                    and size > 0
                    and _persistable(b)
                ),
                key=lambda item: (-item[0], item[1]),
            )
            for size, _, block in fresh:
                if total <= self._limit:
                    break
                chosen.append(OversizedResult(tool_use_id=block.tool_use_id, chars=size))
                total -= size
        return tuple(chosen)
