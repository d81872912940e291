"""RequestHistory: requests of a growing session are normalized from where the last one settled."""

from __future__ import annotations

import attrs

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


def _prompt(text: str) -> UserMessage:
    return UserMessage(uuid=f"prompt.{text}", content=(TextBlock(text=text),))


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


def _renamed(messages: tuple[Message, ...], turn: int) -> tuple[Message, ...]:
    """``messages`` as a session carries them into the next turn (uuids made unique)."""
    return tuple(attrs.evolve(m, uuid=f"{turn}:{m.uuid}") for m in messages)


def test_a_carried_over_turn_normalizes_only_its_new_messages() -> None:
    """After a turn's messages are renamed for the next turn, only the new prompt is normalized."""
    history = RequestHistory()
    finished = _session(6)[-1]
    history.normalize(finished)
    history.normalize((*finished, _prompt("next")))  # the finished run's last request
    carried = _renamed(finished, 1)
    history.carry_over(finished, carried)
    before = history.messages_normalized
    request = (*carried, _prompt("again"))
    assert history.normalize(request) == normalize_for_api(request)
    assert history.messages_normalized - before <= 2


def test_a_carry_over_that_changes_content_is_normalized_again() -> None:
    """A carried transcript that differs in more than uuids gets a full, right pass."""
    history = RequestHistory()
    finished = _session(4)[-1]
    history.normalize((*finished, _prompt("next")))
    changed = (_prompt("edited"), *finished[1:])
    history.carry_over(finished, changed)
    before = history.messages_normalized
    request = (*changed, _prompt("again"))
    assert history.normalize(request) == normalize_for_api(request)
    assert history.messages_normalized - before == len(request)


def test_a_carry_over_with_id_tags_is_normalized_again() -> None:
    """With snip tags the uuids are part of the request, so renamed messages are re-tagged."""
    history = RequestHistory(tag_ids=True)
    finished = _session(4)[-1]
    history.normalize((*finished, _prompt("next")))
    carried = _renamed(finished, 1)
    history.carry_over(finished, carried)
    request = (*carried, _prompt("again"))
    assert history.normalize(request) == normalize_for_api(request, tag_ids=True)
