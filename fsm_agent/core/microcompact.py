"""Time-based microcompact (SPEC §7.3): old tool results cleared after a long pause.

When the model has not answered for a long time (60 minutes by default), the prompt cache
has expired and the next request pays for the whole history anyway; the results of old tool
calls are then the cheapest thing to drop. All but the most recent ``keep`` results of
compactable tools (reads, searches, shells, edits) have their content replaced by a short
note; the calls themselves and their pairing stay as they were.

The core reads no clock: the wall time arrives in events the driver stamps (``TurnStarted``,
``ModelStreamClosed``, ``AttachmentsReady``), so replay makes the same decision from the trace.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from fsm_agent.core import texts
from fsm_agent.core.messages import (
    AssistantMessage,
    Message,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)

__all__ = ["COMPACTABLE_TOOLS", "clear_old_results", "gap_elapsed"]

COMPACTABLE_TOOLS = frozenset(
    {"Read", "Bash", "Grep", "Glob", "WebSearch", "WebFetch", "Edit", "Write"}
)
"""Tools whose old results may be cleared (SPEC §7.3); shell tools count whatever their name."""


def gap_elapsed(now: float | None, last_response: float | None, gap_minutes: int) -> bool:
    """Whether at least ``gap_minutes`` passed since the last response (False when either
    time is unknown)."""
    return now is not None and last_response is not None and now - last_response >= gap_minutes * 60


def clear_old_results(
    messages: Sequence[Message], *, compactable: frozenset[str], keep: int
) -> tuple[Message, ...] | None:
    """``messages`` with all but the last ``keep`` results of ``compactable`` tools cleared;
    None when there is nothing to clear."""
    names: dict[str, str] = {}
    found: list[tuple[int, str]] = []  # (message index, tool_use_id), oldest first
    for index, message in enumerate(messages):
        if isinstance(message, AssistantMessage):
            for block in message.content:
                if isinstance(block, ToolUseBlock):
                    names[block.id] = block.name
        elif isinstance(message, UserMessage):
            found.extend(
                (index, block.tool_use_id)
                for block in message.content
                if isinstance(block, ToolResultBlock)
                and names.get(block.tool_use_id) in compactable
            )
    old = found[: max(len(found) - keep, 0)]
    clear = {tool_use_id for _, tool_use_id in old}
    changed = False
    result = list(messages)
    for index in sorted({index for index, _ in old}):
        message = result[index]
        assert isinstance(message, UserMessage)
        content = tuple(
            attrs.evolve(block, content=texts.OLD_TOOL_RESULT_CLEARED)
            if isinstance(block, ToolResultBlock)
            and block.tool_use_id in clear
            and block.content != texts.OLD_TOOL_RESULT_CLEARED
            else block
            for block in message.content
        )
        if content != message.content:
            result[index] = attrs.evolve(message, content=content)
            changed = True
    return tuple(result) if changed else None
