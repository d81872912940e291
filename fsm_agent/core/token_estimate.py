"""How many tokens the next request will take: the estimate the context checks compare.

SPEC §7.5 "token estimate": the input size the API reported for the last response, plus
characters / 4 of everything after it. Rules of this module:

* **Over what is sent.** The estimate walks the *projected* history (the committed context
  collapse in place of its span, tool-result replacements, cleared results, snipped messages
  gone), never the full transcript.
* **Anchored at the first split.** One response may arrive as several assistant messages
  sharing a ``message_id`` with tool_results between them; the API's figure (it lands on the
  last part) covers the request and the response, so the characters counted are those of
  every message after the *first* part of that response.
* **Rewrites of what the figure covered are subtracted.** A reported figure counts the history
  as it was sent. When a later step shrinks a message at or before the anchor (microcompact
  clears a result, a collapse is committed, snip removes a turn), that figure would count it
  at full size; :meth:`TokenEstimate.rewritten` keeps the difference, in tokens, and the
  estimate subtracts it until a newer response reports a figure of its own.
* **Exact counts win.** When the API counted the request about to be sent (``count_tokens``,
  an optional effect), that count is used until the history changes.

Cost: the walk stops at the anchor, so it looks at the messages since the last response, not
at the whole history (DESIGN §7); a rewrite costs one pass, and rewrites are rare.
"""

from __future__ import annotations

from collections.abc import Sequence

from fsm_agent.core.messages import (
    AssistantMessage,
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
    text_of,
)

__all__ = ["CHARS_PER_TOKEN", "TokenEstimate", "chars_estimate", "message_chars"]

CHARS_PER_TOKEN = 4
"""SPEC §7.5: the rough estimate counts a token per four characters."""


def message_chars(message: Message) -> int:
    """Characters of text a message sends (tool inputs as their text form; media count 0)."""
    if isinstance(message, UserMessage | AssistantMessage):
        total = 0
        for block in message.content:
            if isinstance(block, TextBlock):
                total += len(block.text)
            elif isinstance(block, ToolResultBlock):
                content = block.content
                total += (
                    len(content)
                    if isinstance(content, str)
                    else sum(len(getattr(part, "text", "")) for part in content)
                )
            elif isinstance(block, ToolUseBlock):
                total += len(str(block.input))
            else:
                total += len(getattr(block, "thinking", ""))
        return total
    return len(text_of(message))


def chars_estimate(messages: Sequence[Message]) -> int:
    """Characters / 4 of ``messages``: the estimate when no reported figure applies."""
    total = 0
    for message in messages:
        total += message_chars(message)
    return total // CHARS_PER_TOKEN


def _anchor(messages: Sequence[Message]) -> tuple[int, AssistantMessage] | None:
    """The index of the first part of the last response that reported usage, and the part
    that carries the figure; None when no response in ``messages`` did."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, AssistantMessage) and message.usage.context_tokens:
            first = index
            response = message.message_id
            if response:
                # Walk back over the interleaved tool_results to the first part of this
                # response; another response ends the walk.
                for earlier in range(index - 1, -1, -1):
                    before = messages[earlier]
                    if isinstance(before, AssistantMessage):
                        if before.message_id != response:
                            break
                        first = earlier
            return first, message
    return None


class TokenEstimate:
    """The estimate of one run, and what rewrites of its history took out of the figure.

    Example:
        >>> estimate = TokenEstimate()
        >>> estimate.tokens(())
        0
    """

    def __init__(self) -> None:
        self._anchor_uuid: str | None = None  # the response part whose figure ``_freed`` adjusts
        self._freed = 0
        self._counted: tuple[int, int, str | None] | None = None  # (tokens, length, last uuid)

    @property
    def freed(self) -> int:
        """Tokens the current reported figure counts that are no longer sent (negative when
        what it covered grew)."""
        return self._freed

    def tokens(self, projected: Sequence[Message]) -> int:
        """The estimated size of a request carrying ``projected`` (SPEC §7.5)."""
        counted = self.counted(projected)
        if counted is not None:
            return counted
        found = _anchor(projected)
        if found is None:
            return chars_estimate(projected)
        first, carrier = found
        freed = self._freed if carrier.uuid == self._anchor_uuid else 0
        after = chars_estimate(projected[first + 1 :])
        return max(carrier.usage.context_tokens - freed, 0) + after

    def rewritten(self, before: Sequence[Message], after: Sequence[Message]) -> int:
        """The projected history changed from ``before`` to ``after`` other than by growing:
        remember what the reported figure no longer covers; return the tokens freed in all
        (what was taken out, less what was put in, never negative)."""
        self._counted = None
        freed = max(chars_estimate(before) - chars_estimate(after), 0)
        found = _anchor(before)
        if found is None:
            return freed
        first, carrier = found
        kept = {m.uuid for m in after}
        if carrier.uuid not in kept:
            return freed  # the figure's response is gone: nothing is anchored on it now
        position = next(i for i in range(len(after) - 1, -1, -1) if after[i].uuid == carrier.uuid)
        found_after = _anchor(after[: position + 1])
        first_after = found_after[0] if found_after is not None else position
        covered_before = chars_estimate(before[: first + 1])
        covered_after = chars_estimate(after[: first_after + 1])
        if carrier.uuid != self._anchor_uuid:
            self._anchor_uuid, self._freed = carrier.uuid, 0
        # Negative when a rewrite made something longer (a cleared note longer than the
        # result it replaced): the figure then counts too little, and the estimate grows.
        self._freed += covered_before - covered_after
        return freed

    @property
    def adjustment(self) -> tuple[str | None, int]:
        """The response part whose figure is adjusted, and by how many tokens (what a
        checkpoint carries)."""
        return self._anchor_uuid, self._freed

    def restore(self, anchor_uuid: str | None, freed: int) -> None:
        """Take the adjustment a checkpoint carried."""
        self._anchor_uuid, self._freed = anchor_uuid, freed

    def take_count(self, tokens: int, projected: Sequence[Message]) -> None:
        """The API counted a request carrying ``projected``: use that until it changes."""
        last = projected[-1].uuid if projected else None
        self._counted = (tokens, len(projected), last)

    def counted(self, projected: Sequence[Message]) -> int | None:
        """The exact count of ``projected``, if the API counted exactly that history."""
        counted = self._counted
        if counted is None:
            return None
        tokens, length, last = counted
        if len(projected) != length or (projected[-1].uuid if projected else None) != last:
            return None
        return tokens

    def forget_count(self) -> None:
        """Drop the exact count (a new iteration counts again)."""
        self._counted = None
