"""Context collapse performed by the driver (SPEC §7.4, our design; the reference is a stub).

The core decides (``core.context_collapse``); this module summarises. Two jobs:

* **Staging**, in the background: for ``StageCollapse`` the oldest span the core named (the
  first ``message_count`` messages of what it sends now) is summarised while the run goes on,
  and ``CollapseStaged`` brings the summary back. Nothing changes yet.
* **Draining**, when the API refused a request as too long: for ``DrainCollapse`` with a span
  staged, the core commits it and the next request is projected through its summary. With
  nothing staged, the oldest half of the history is summarised on demand and ``CollapseDrained``
  carries the collapsed view. Either way the core takes the ``collapse_drain_retry`` row; a
  history too short to cut, or a summary request that fails, commits nothing, and the core
  goes on to reactive compaction or ``prompt_too_long``.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from fsm_agent.core.context_collapse import collapse_cut
from fsm_agent.core.messages import Message
from fsm_agent.runtime.compaction import CompactionResult, SummaryCompactor
from fsm_agent.runtime.models import Model

__all__ = ["CollapseResult", "collapse_cut", "collapse_oldest", "stage_span"]


@attrs.frozen(kw_only=True)
class CollapseResult:
    """What a collapse produced: how many spans it committed, and the collapsed history."""

    committed: int
    messages: tuple[Message, ...] = ()


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


async def stage_span(
    span: Sequence[Message], compactor: SummaryCompactor, model: Model, model_name: str
) -> CompactionResult:
    """Summarise a span the core chose to stage (its summary replaces it once committed)."""
    return await compactor.summarise(span, model, model_name, what="staged context collapse")
