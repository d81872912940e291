"""Compaction performed by the driver: ask the model for a summary of the history (SPEC §7.5).

The core decides *when* to compact; this module does it. The summary request is an ordinary
model request (no tools) whose last user message asks for a summary; its text becomes one meta
user message that opens the compacted history. A failure (the summary request itself fails or
returns nothing) is reported, and the core picks the named transition for it.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from fsm_agent.core.effects import CompactKind
from fsm_agent.core.messages import Message, TextBlock, UserMessage
from fsm_agent.core.normalize import normalize_for_api
from fsm_agent.core.texts import SUMMARY_PREFIX, summary_request
from fsm_agent.runtime.models import Model, ModelFailure, ModelRequest

SUMMARY_OUTPUT_TOKENS = 20_000


@attrs.frozen(kw_only=True)
class CompactionResult:
    """What a compaction produced."""

    ok: bool
    messages: tuple[Message, ...] = ()
    error: str = ""


class SummaryCompactor:
    """Compacts by asking ``model`` for a summary of the history."""

    def __init__(self) -> None:
        self._count = 0

    async def compact(
        self,
        kind: CompactKind,
        history: Sequence[Message],
        model: Model,
        model_name: str,
        *,
        instructions: str = "",
    ) -> CompactionResult:
        """Summarise ``history``; on success the summary message replaces it.

        ``instructions`` come from PreCompact hooks: what the summary should keep.
        """
        return await self.summarise(
            history,
            model,
            model_name,
            what=f"{kind.value} compaction",
            instructions=instructions,
        )

    async def summarise(
        self,
        history: Sequence[Message],
        model: Model,
        model_name: str,
        *,
        what: str,
        instructions: str = "",
    ) -> CompactionResult:
        """Summarise ``history`` into one meta user message (``what`` names the job in errors)."""
        text = summary_request(instructions)
        ask = UserMessage(uuid="summary-request", content=(TextBlock(text=text),))
        request = ModelRequest(
            model=model_name,
            max_output_tokens=SUMMARY_OUTPUT_TOKENS,
            messages=normalize_for_api([*history, ask]),
        )
        pieces: list[str] = []
        try:
            async for raw in model.stream(request):
                delta = raw.get("delta") if raw.get("type") == "content_block_delta" else None
                if isinstance(delta, dict) and delta.get("type") == "text_delta":
                    pieces.append(str(delta.get("text", "")))
        except ModelFailure as failure:
            return CompactionResult(ok=False, error=f"{what} failed: {failure}")
        summary = "".join(pieces).strip()
        if not summary:
            return CompactionResult(ok=False, error=f"{what} got no summary")
        self._count += 1
        message = UserMessage(
            uuid=f"compact{self._count}",
            content=(TextBlock(text=SUMMARY_PREFIX + summary),),
            is_meta=True,
        )
        return CompactionResult(ok=True, messages=(message,))
