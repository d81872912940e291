"""Snip (SPEC §7.2, our design): whole old turns leave what is sent, by the model's request.

With ``LoopConfig.snip`` on, each user message that is not a tool_result carries an
``[id:<uuid>]`` tag in the request (normalization, SPEC §8.1 step 13), and the model may ask,
through the ``Snip`` tool, that old parts of the conversation be dropped. It names them by tag
or by a tool_use id. Rules of this module:

* **Units, never halves.** A tool_use id, an assistant message or a tool_result message names
  its *response*: every part of that response and every tool_result that answers it. A tagged
  user message (a prompt, a note) names its *exchange*: that message and everything after it
  up to the next tagged message. So a tool_use never loses its result, nor a result its call.
* **What is refused**, with a reason the model is told: an id that is not in what is sent (it
  may have been summarised, compacted away or snipped before), the first message (the prompt
  or the summary the conversation starts from), the latest prompt and the latest response
  (the model is still working on them), a span a background collapse is summarising now, a
  message that is not sent (a notice), a malformed request, and any removal that would leave
  two responses side by side or a request that does not start with a user message.
* The decision is pure and recorded: the request rides on the Snip call's ``context_update``
  in ``ToolCallFinished``, and the core applies it in ``preprocess`` (transition
  ``history_snipped``), so replay removes the same messages. The transcript keeps what was
  shown; only what is sent changes. The tokens freed leave the estimate (``token_estimate``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence, Set

import attrs

from fsm_agent.core.messages import (
    AssistantMessage,
    AttachmentMessage,
    Message,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)

__all__ = [
    "MAX_SNIP_IDS",
    "SNIP_REQUEST",
    "SnipOutcome",
    "is_tagged",
    "plan_snip",
    "snip_ids",
]

SNIP_REQUEST = "snip"
"""The ``context_update`` key a snip request arrives under (a list of ids)."""

MAX_SNIP_IDS = 50
"""The most ids one request may name; a longer request is refused whole."""

_MAX_ID_CHARS = 200


@attrs.frozen(kw_only=True)
class SnipOutcome:
    """What one snip request did.

    Attributes:
        removed: uuids of the messages removed, in history order.
        refused: ``(id, reason)`` for each id that removed nothing.
        snipped: the ids that removed something, as the model named them.
    """

    removed: tuple[str, ...] = ()
    refused: tuple[tuple[str, str], ...] = ()
    snipped: tuple[str, ...] = ()


def snip_ids(raw: object) -> tuple[tuple[str, ...], str | None]:
    """The ids of a request as it arrived (anything a tool may put there), or why it is
    refused whole."""
    if not isinstance(raw, list | tuple) or not all(isinstance(item, str) for item in raw):
        return (), "a snip request must be a list of ids"
    if len(raw) > MAX_SNIP_IDS:
        return (), f"a snip request may name at most {MAX_SNIP_IDS} ids, not {len(raw)}"
    return tuple(dict.fromkeys(item.strip()[:_MAX_ID_CHARS] for item in raw)), None


def is_tagged(message: Message) -> bool:
    """Whether normalization tags this message with its id: a user message that does not
    begin with a tool_result."""
    return isinstance(message, UserMessage) and not (
        message.content and isinstance(message.content[0], ToolResultBlock)
    )


def _starts_with_result(message: Message) -> bool:
    return isinstance(message, UserMessage) and not is_tagged(message)


def _response_span(history: Sequence[Message], index: int) -> range:
    """Every message of the response ``history[index]`` belongs to, and its results."""
    response = history[index]
    assert isinstance(response, AssistantMessage)
    first = index
    if response.message_id:
        for earlier in range(index - 1, -1, -1):
            before = history[earlier]
            if isinstance(before, AssistantMessage):
                if before.message_id != response.message_id:
                    break
                first = earlier
            elif not _starts_with_result(before):
                break
    calls: set[str] = set()
    end = first
    while end < len(history):
        message = history[end]
        if isinstance(message, AssistantMessage) and (
            end == first or (message.message_id and message.message_id == response.message_id)
        ):
            calls.update(b.id for b in message.content if isinstance(b, ToolUseBlock))
        elif not (
            _starts_with_result(message)
            and isinstance(message, UserMessage)
            and all(
                b.tool_use_id in calls for b in message.content if isinstance(b, ToolResultBlock)
            )
        ):
            break
        end += 1
    return range(first, end)


def _exchange_span(history: Sequence[Message], index: int) -> range:
    """A tagged message and everything after it up to the next tagged message."""
    end = index + 1
    while end < len(history) and not is_tagged(history[end]):
        end += 1
    return range(index, end)


def _unit(history: Sequence[Message], index: int) -> range | str:
    """The span an id at ``index`` names, or why it names none."""
    message = history[index]
    if isinstance(message, AssistantMessage):
        return _response_span(history, index)
    if is_tagged(message):
        return _exchange_span(history, index)
    if isinstance(message, UserMessage):  # a tool_result message: its response
        ids = {b.tool_use_id for b in message.content if isinstance(b, ToolResultBlock)}
        for earlier in range(index - 1, -1, -1):
            before = history[earlier]
            if isinstance(before, AssistantMessage) and any(
                isinstance(b, ToolUseBlock) and b.id in ids for b in before.content
            ):
                return _response_span(history, earlier)
        return "its tool call is not in what is sent"
    if isinstance(message, AttachmentMessage):
        return range(index, index + 1)
    return "it is a notice, which is never sent"


def _locate(history: Sequence[Message]) -> dict[str, int]:
    """Where each uuid and each tool_use id is."""
    where: dict[str, int] = {}
    for index, message in enumerate(history):
        where[message.uuid] = index
        if isinstance(message, AssistantMessage):
            for block in message.content:
                if isinstance(block, ToolUseBlock):
                    where.setdefault(block.id, index)
    return where


def _protected_from(history: Sequence[Message]) -> tuple[int, int | None]:
    """Where the latest response begins, and the index of the latest prompt (None if none)."""
    last_response = len(history)
    for index in range(len(history) - 1, -1, -1):
        if isinstance(history[index], AssistantMessage):
            last_response = _response_span(history, index).start
            break
    prompt = None
    for index in range(len(history) - 1, -1, -1):
        message = history[index]
        if isinstance(message, UserMessage) and is_tagged(message) and not message.is_meta:
            prompt = index
            break
    return last_response, prompt


def _api_role(message: Message) -> str | None:
    if isinstance(message, AssistantMessage):
        return message.message_id or message.uuid
    if isinstance(message, UserMessage | AttachmentMessage):
        return "user"
    return None  # not sent


def _seams_hold(history: Sequence[Message], gone: Set[int]) -> bool:
    """Whether the history without ``gone`` still starts with a user message and never puts
    two different responses side by side."""
    previous: str | None = None
    for index, message in enumerate(history):
        if index in gone:
            continue
        role = _api_role(message)
        if role is None:
            continue
        if previous is None and role != "user":
            return False
        if role != "user" and previous not in (None, "user", role):
            return False
        previous = role
    return True


def plan_snip(
    history: Sequence[Message],
    ids: Iterable[str],
    *,
    snipped_before: Set[str] = frozenset(),
    pinned_through: str | None = None,
) -> SnipOutcome:
    """Decide a snip request over what is sent now.

    Args:
        history: the messages a request would carry (the projected history).
        ids: the ids named, in order, without repeats.
        snipped_before: uuids earlier snips removed (named again, they are refused as such).
        pinned_through: a background collapse is summarising the history up to this uuid;
            nothing up to it may go.

    Returns:
        The uuids to remove, and each refused id with its reason.
    """
    where = _locate(history)
    last_response, prompt = _protected_from(history)
    pinned_end = where.get(pinned_through, -1) if pinned_through is not None else -1
    gone: set[int] = set()
    refused: list[tuple[str, str]] = []
    snipped: list[str] = []
    for name in ids:
        index = where.get(name)
        if index is None:
            reason = (
                "it was snipped already"
                if name in snipped_before
                else "no message or tool call has that id in what is sent"
            )
            refused.append((name, reason))
            continue
        unit = _unit(history, index)
        if isinstance(unit, str):
            refused.append((name, unit))
            continue
        span = set(unit)
        if span <= gone:
            refused.append((name, "an earlier id of this request removes it already"))
        elif 0 in span:
            refused.append((name, "the first message is where the conversation starts"))
        elif unit.stop > last_response or (prompt is not None and prompt in span):
            refused.append((name, "it is part of the latest turn, still being worked on"))
        elif unit.start <= pinned_end:
            refused.append((name, "a summary of that part of the conversation is being made"))
        elif not _seams_hold(history, gone | span):
            refused.append((name, "removing it would leave two responses side by side"))
        else:
            gone |= span
            snipped.append(name)
    removed = tuple(history[i].uuid for i in sorted(gone))
    return SnipOutcome(removed=removed, refused=tuple(refused), snipped=tuple(snipped))
