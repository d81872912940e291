"""A session's carry-over between turns, looking only past the last one, equals a full pass."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from fsm_agent.core.messages import Message, TextBlock, TombstoneMessage, UserMessage
from fsm_agent.runtime.session import carry_over
from fsm_agent.testing.transcripts import loop_transcripts, transcripts

_TRANSCRIPTS = st.one_of(transcripts(max_size=12), loop_transcripts(max_rounds=3))


@given(_TRANSCRIPTS, _TRANSCRIPTS, st.data())
def test_carrying_over_past_the_last_carry_equals_a_full_pass(
    first: list[Message], second: list[Message], data: st.DataObject
) -> None:
    """The next turn's start, computed from what the last carry-over gave plus what the turn
    added, is exactly the whole transcript carried over, a tombstone aimed at a carried
    message included."""
    carried = carry_over(first, finished_turn=1)
    prompt = UserMessage(uuid="2:prompt.1", content=(TextBlock(text="next"),))
    finished: list[Message] = [*carried, prompt, *second]
    if carried and data.draw(st.booleans()):
        target = data.draw(st.sampled_from(carried)).uuid
        finished.insert(
            data.draw(st.integers(len(carried), len(finished))),
            TombstoneMessage(uuid="t", target_uuid=target),
        )
    full = carry_over(finished, finished_turn=2)
    assert carry_over(finished, finished_turn=2, carried_before=carried) == full
    # A stale carry (not the start of the transcript) is ignored.
    assert carry_over(finished[1:], finished_turn=2, carried_before=carried) == carry_over(
        finished[1:], finished_turn=2
    )
