"""RequestHistory: requests of a growing session are normalized from where the last one settled."""

from __future__ import annotations

from fsm_agent.core.messages import (
    Message,
    TextBlock,
    TombstoneMessage,
    UserMessage,
)
from fsm_agent.core.normalize import normalize_for_api
from fsm_agent.core.request_history import RequestHistory
from fsm_agent.testing.transcripts import tool_round


def _session(turns: int) -> list[tuple[Message, ...]]:
    messages: list[Message] = [UserMessage(uuid="p", content=(TextBlock(text="go"),))]
    requests = [tuple(messages)]
    for number in range(turns):
        messages.extend(tool_round(number))
        requests.append(tuple(messages))
    return requests


def test_a_growing_session_is_normalized_from_the_start_once() -> None:
    """Appending turns never normalizes the whole history again, and the result stays exact."""
    history = RequestHistory()
    for messages in _session(30):
        assert history.normalize(messages) == normalize_for_api(messages)
    # Each message is normalized about twice (before and after it settles), not per request.
    assert history.messages_normalized <= 3 * len(messages)


def test_a_replaced_start_is_normalized_from_the_start() -> None:
    """A history whose start changed (as after compaction) gets a full pass, and a right one."""
    history = RequestHistory()
    requests = _session(10)
    for messages in requests:
        history.normalize(messages)
    compacted = (UserMessage(uuid="s", content=(TextBlock(text="summary"),)), *tool_round(99))
    before = history.messages_normalized
    assert history.normalize(compacted) == normalize_for_api(compacted)
    assert history.messages_normalized == before + len(compacted)


def test_a_tombstone_for_a_settled_message_is_honoured() -> None:
    """A later tombstone withdrawing an already settled message still removes it."""
    history = RequestHistory()
    requests = _session(5)
    for messages in requests:
        history.normalize(messages)
    withdrawn = (*requests[-1], TombstoneMessage(uuid="t", target_uuid="a2"))
    assert history.normalize(withdrawn) == normalize_for_api(withdrawn)
