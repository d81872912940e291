"""Snip: the model asks for old turns to leave the context (SPEC §7.2, our design).

The tool itself changes nothing: it hands the ids to the loop (a ``context_update``), and the
core decides, before the next request, what goes and what is refused, and tells the model
(:mod:`fsm_agent.core.snip`). It does something only when ``LoopConfig.snip`` is on; then
``Agent`` offers it to the model unless a tool of that name is given.
"""

from __future__ import annotations

import attrs

from fsm_agent.core.snip import MAX_SNIP_IDS, SNIP_REQUEST
from fsm_agent.runtime.tool import ProgressCallback, Tool, ToolContext, ToolOutput


@attrs.frozen(kw_only=True)
class SnipInput:
    """Parameters of Snip."""

    ids: list[str] = attrs.field(
        metadata={
            "description": "What to remove: the id in a message's [id:...] tag (that message "
            "and what followed it up to the next tagged message), or a tool_use id (that "
            "response and its results)."
        }
    )


class Snip(Tool[SnipInput]):
    """Asks the loop to drop old parts of the conversation from what is sent."""

    name = "Snip"
    description = (
        "Free context by removing old parts of this conversation you no longer need. Name "
        "them by the [id:...] tag a user message carries, or by a tool_use id. The first "
        "message, the latest turn and anything already summarised stay; what was removed and "
        "what was refused (with the reason) is told to you before your next request."
    )
    input_type = SnipInput
    read_only = True

    def is_concurrency_safe(self, data: SnipInput) -> bool:
        """Not safe, though it only asks: the request rides on a context update, and the
        streaming executor drops those of calls run side by side (SPEC §5.2)."""
        return False

    def is_read_only(self, data: SnipInput) -> bool:
        """Nothing outside the conversation changes."""
        return True

    async def validate_input(self, data: SnipInput, ctx: ToolContext) -> str | None:
        """One to fifty non-empty ids."""
        if not data.ids:
            return "name at least one id"
        if len(data.ids) > MAX_SNIP_IDS:
            return f"name at most {MAX_SNIP_IDS} ids at a time"
        if any(not isinstance(i, str) or not i.strip() for i in data.ids):
            return "every id must be a non-empty string"
        return None

    async def call(
        self, data: SnipInput, ctx: ToolContext, progress: ProgressCallback
    ) -> ToolOutput:
        """Hand the ids to the loop."""
        del ctx, progress
        return ToolOutput(
            content=f"Asked to snip {', '.join(data.ids)}; the outcome follows.",
            context_update={SNIP_REQUEST: list(data.ids)},
        )
