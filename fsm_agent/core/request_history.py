"""``RequestHistory``: the API form of a growing transcript, normalized a little at a time.

A session sends the whole history with every request, and the history only grows between
compactions. Normalizing all of it for every request costs O(history) per turn (DESIGN §7), so
this module keeps the API form of the settled start of the history and normalizes only what
came after it. The result is always what :func:`~fsm_agent.core.normalize.normalize_for_api`
gives for the whole transcript (a property test holds it to that).

Theory of operation. The transcript is cut into segments at *settle points*: a user message
right after an assistant message. Nothing after such a point changes the API form of what came
before it (attachments bubble up no further than that assistant message, the user turn cannot
merge backwards, the assistant before it is not the final one). A tool_result and a new prompt
both settle: a text-only conversation settles at every user turn. What a segment hands to
the next (tool_use ids used, open tool_uses, mergeable response ids, withdrawn uuids) is kept
in a :class:`~fsm_agent.core.normalize.Carry`. Each request:

1. checks that the settled start is still the start of the transcript (one comparison of
   tuples, at C speed, which sees the same message objects at once); if not (compaction, an
   edited history) everything is normalized again;
2. normalizes the messages after it, settling the latest settle point among them;
3. falls back to a full normalization when a segment reaches back into an earlier one (a
   tombstone or a media error aimed at an older message, a later part of an older response),
   or when the media cap has to drop something.

A conversation keeps one history over its user turns (:meth:`RequestHistory.carry_over`):
the next turn starts from the same messages, some of them renamed, so its first request
normalizes only what the new turn added. When renaming changes the API form (snip's id tags)
or the carry-over left messages behind, the history falls back to a *checkpoint*: the carry
as it was when the settled start last reached no further than where the finished turn began,
which the renaming cannot have touched; only the finished turn is normalized again.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from fsm_agent.core.messages import AssistantMessage, Message, UserMessage
from fsm_agent.core.normalize import (
    MAX_MEDIA_ITEMS,
    ApiMessage,
    Carry,
    SegmentNotSeparable,
    cap_media,
    normalize_for_api,
    normalize_segment,
)

__all__ = ["RequestHistory"]


def _last_settle_point(messages: Sequence[Message]) -> int:
    """Index of the last settle point in ``messages`` (0 when there is none).

    A point where the next part of the same response follows (results interleaved between
    the parts of one response) is skipped: that part would merge back across it.
    """
    next_response = ""  # message_id of the nearest assistant message after ``index``
    for index in range(len(messages) - 1, 0, -1):
        message = messages[index]
        if type(message) is AssistantMessage:
            next_response = message.message_id
            continue
        before = messages[index - 1]
        if (
            type(message) is UserMessage
            and message.content
            and type(before) is AssistantMessage
            and not (before.message_id and before.message_id == next_response)
        ):
            return index
    return 0


class RequestHistory:
    """The ``messages`` of successive requests of one session, normalized incrementally.

    Args:
        max_media: How many images and documents one request may carry (SPEC §10).
        tag_ids: Tag user messages with their ids, for snip (SPEC §7.2, §8.1 step 13).

    Example:
        >>> history = RequestHistory()
        >>> history.normalize(()) == normalize_for_api(())
        True
    """

    def __init__(self, *, max_media: int = MAX_MEDIA_ITEMS, tag_ids: bool = False) -> None:
        self._max_media = max_media
        self._tag_ids = tag_ids
        self._settled: tuple[Message, ...] = ()
        self._settled_api: list[ApiMessage] = []
        self._carry = Carry()
        # Where the current turn began, and the state when the settled start last ended
        # there or before (length of ``_settled``, of ``_settled_api``, the carry).
        self._turn_start = 0
        self._checkpoint: tuple[int, int, Carry] | None = None
        self.messages_normalized = 0
        """Messages normalized so far, each time counted (linear in a growing session)."""

    @property
    def tag_ids(self) -> bool:
        """Whether user messages are tagged with their ids (the API form depends on them)."""
        return self._tag_ids

    def carry_over(
        self, before: Sequence[Message], after: Sequence[Message], *, kept: int = 0
    ) -> None:
        """Follow a new user turn that starts from ``after``, the transcript ``before`` with
        some messages given new uuids (a session's carry-over between turns).

        The settled start is kept, renamed, when renaming cannot change its API form: nothing
        was left behind, no id tags are sent and no tombstone withdrew anything. Otherwise it
        is cut back to the checkpoint (see the module docstring) when ``after`` begins with
        it, and else dropped: the next request normalizes everything again, as a new history
        would. ``kept``: how many messages at the start are expected unchanged; they are
        compared at C speed, only the others one by one (DESIGN §7).
        """
        if self._settled:
            if self._only_renamed(before, after, kept):
                self._settled = tuple(after[: len(self._settled)])
            else:
                self._back_to_checkpoint(after)
        self._turn_start = len(after)

    def _only_renamed(self, before: Sequence[Message], after: Sequence[Message], kept: int) -> bool:
        """Whether ``after`` differs from ``before`` by new uuids only, which cannot change the
        API form of the settled start (no id tags are sent, no tombstone withdrew anything)."""
        settled = len(self._settled)
        if (
            self._tag_ids
            or self._carry.withdrawn
            or len(before) != len(after)
            or tuple(before[:settled]) != self._settled
        ):
            return False
        renamed = tuple(after[:settled])
        same = min(kept, settled)
        if renamed[:same] != self._settled[:same]:
            same = 0  # not as expected: every message is looked at
        return all(
            old is new or attrs.evolve(new, uuid=old.uuid) == old
            for old, new in zip(self._settled[same:], renamed[same:], strict=True)
        )

    def _back_to_checkpoint(self, after: Sequence[Message]) -> None:
        """Keep the settled start up to the checkpoint if ``after`` begins with it, else
        nothing."""
        if self._checkpoint is None:
            self._reset()
            return
        length, api_length, carry = self._checkpoint
        start = tuple(after[:length])
        if len(start) != length or start != self._settled[:length]:
            self._reset()
            return
        self._settled = start
        del self._settled_api[api_length:]
        self._carry = carry.copy()

    def _reset(self) -> None:
        self._settled = ()
        self._settled_api = []
        self._carry = Carry()
        self._checkpoint = None

    def normalize(self, messages: Sequence[Message]) -> list[ApiMessage]:
        """The API messages for ``messages``, equal to ``normalize_for_api(messages)``.

        Args:
            messages: The whole transcript of this request.

        Returns:
            A new list; the message dicts in it are shared with earlier and later results, so
            treat them as read-only.
        """
        history = tuple(messages)
        settled = len(self._settled)
        if settled and history[:settled] != self._settled:
            self._reset()  # SPEC §7: compaction or an edit replaced the start
            settled = 0
        try:
            return self._extend(history, settled)
        except SegmentNotSeparable:
            self._reset()
            self.messages_normalized += len(history)
            return normalize_for_api(history, max_media=self._max_media, tag_ids=self._tag_ids)

    def _extend(self, history: tuple[Message, ...], settled: int) -> list[ApiMessage]:
        tail = history[settled:]
        self.messages_normalized += len(tail)
        cut = _last_settle_point(tail)
        if cut:
            head = normalize_segment(tail[:cut], self._carry, final=False, tag_ids=self._tag_ids)
            if head.ends_with_assistant:
                self._carry.absorb(head)
                self._settled_api.extend(head.api)
                self._settled = history[: settled + cut]
                tail = tail[cut:]
                if settled + cut <= self._turn_start:
                    self._checkpoint = (settled + cut, len(self._settled_api), self._carry.copy())
        rest = normalize_segment(tail, self._carry, final=True, tag_ids=self._tag_ids)
        api = [*self._settled_api, *rest.api]
        if self._carry.media + rest.media > self._max_media:
            return cap_media(api, limit=self._max_media)
        return api
