"""Context collapse performed by the driver (SPEC §7.4, our design; the reference is a stub).

Where autocompact replaces the whole history with one summary, a collapse replaces only its
oldest span and keeps the recent turns as they were, so the model keeps granular context. The
core asks for it with ``DrainCollapse`` after the API refused a request as too long (a 413 or
"prompt is too long"); this module summarises the oldest half of the history (cut where no
tool_use is parted from its tool_result) and answers ``CollapseDrained`` with the collapsed
view, which the core takes through the ``collapse_drain_retry`` row. A history too short to
cut, or a summary request that fails, commits nothing, and the core goes on to reactive
compaction or ``prompt_too_long``.

Collapses are made when the refusal arrives, not staged ahead of it: a span is summarised once,
when it has to go.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from fsm_agent.core.messages import AssistantMessage, Message, ToolResultBlock, UserMessage
from fsm_agent.runtime.compaction import SummaryCompactor
from fsm_agent.runtime.models import Model

__all__ = ["CollapseResult", "collapse_cut", "collapse_oldest"]


@attrs.frozen(kw_only=True)
class CollapseResult:
    """What a collapse produced: how many spans it committed, and the collapsed history."""

    committed: int
    messages: tuple[Message, ...] = ()


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


async def collapse_oldest(
    history: Sequence[Message], compactor: SummaryCompactor, model: Model, model_name: str
) -> CollapseResult:
    """Summarise the oldest half of ``history``; the summary and the rest are the new view."""
    cut = collapse_cut(history)
    if cut == 0:
        return CollapseResult(committed=0)
    summary = await compactor.summarise(history[:cut], model, model_name, what="context collapse")
    if not summary.ok:
        return CollapseResult(committed=0)
    return CollapseResult(committed=1, messages=(*summary.messages, *history[cut:]))
