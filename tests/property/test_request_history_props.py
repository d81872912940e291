"""Incremental request messages equal a full normalization (DESIGN §7, SPEC §8.1–8.2)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from fsm_agent.core.messages import Message, TextBlock, UserMessage
from fsm_agent.core.normalize import normalize_for_api
from fsm_agent.core.request_history import RequestHistory
from fsm_agent.runtime.session import carry_over
from fsm_agent.testing.transcripts import loop_transcripts, transcripts


@st.composite
def _growing(draw: st.DrawFn, source: st.SearchStrategy[list[Message]]) -> list[list[Message]]:
    """Successive requests of one session: ever longer prefixes of one transcript."""
    transcript = draw(source)
    cuts = sorted(draw(st.lists(st.integers(0, len(transcript)), max_size=6)))
    return [transcript[:cut] for cut in cuts] + [transcript]


def _session() -> st.SearchStrategy[list[list[Message]]]:
    return st.one_of(
        _growing(transcripts(max_size=30)),
        _growing(loop_transcripts(max_rounds=8)),
        _growing(
            st.lists(loop_transcripts(max_rounds=3), min_size=2, max_size=3).map(
                lambda parts: [m for part in parts for m in part]
            )
        ),
    )


@given(_session(), st.booleans())
def test_incremental_requests_equal_full_normalization(
    requests: list[list[Message]], tag_ids: bool
) -> None:
    """Each request of a growing session normalizes to exactly what a full pass gives, with
    or without the snip tags."""
    history = RequestHistory(tag_ids=tag_ids)
    for messages in requests:
        assert history.normalize(messages) == normalize_for_api(messages, tag_ids=tag_ids)


@given(_session(), st.data())
def test_an_edited_history_is_normalized_again(
    requests: list[list[Message]], data: st.DataObject
) -> None:
    """A request whose start differs from the last one (compaction, an edit) is still right."""
    history = RequestHistory()
    for messages in requests:
        history.normalize(messages)
    last = requests[-1]
    if last:
        drop = data.draw(st.integers(0, len(last) - 1))
        edited = last[:drop] + last[drop + 1 :]
        assert history.normalize(edited) == normalize_for_api(edited)
        assert history.normalize(last) == normalize_for_api(last)


@given(_session(), st.booleans())
def test_a_carried_over_turn_equals_full_normalization(
    requests: list[list[Message]], tag_ids: bool
) -> None:
    """A session's next user turn, started from the carried-over transcript with one history
    kept over both turns, normalizes to exactly what a full pass gives."""
    history = RequestHistory(tag_ids=tag_ids)
    for messages in requests:
        history.normalize(messages)
    finished = requests[-1]
    carried = carry_over(finished, finished_turn=1)
    history.carry_over(finished, carried)
    prompt = UserMessage(uuid="2:prompt.1", content=(TextBlock(text="next"),))
    for messages in ([*carried, prompt], [*carried, prompt, *finished[-2:]]):
        assert history.normalize(messages) == normalize_for_api(messages, tag_ids=tag_ids)


@given(
    st.lists(
        st.one_of(transcripts(max_size=8), loop_transcripts(max_rounds=3)), min_size=2, max_size=4
    ),
    st.booleans(),
    st.data(),
)
def test_many_carried_over_turns_equal_full_normalization(
    turns: list[list[Message]], tag_ids: bool, data: st.DataObject
) -> None:
    """Over several user turns, each started from the last one carried over (ids renamed,
    withdrawn messages left behind) with one history kept over all, every request normalizes
    to exactly what a full pass gives, with or without the snip tags."""
    history = RequestHistory(tag_ids=tag_ids)
    carried: tuple[Message, ...] = ()
    finished: list[Message] = []
    for number, added in enumerate(turns, 1):
        starting = carry_over(finished, finished_turn=number - 1, carried_before=carried)
        history.carry_over(finished, starting, kept=len(carried))
        carried = starting
        start = [*carried, UserMessage(uuid=f"{number}:prompt.1", content=(TextBlock(text="q"),))]
        cuts = sorted(data.draw(st.lists(st.integers(0, len(added)), max_size=3)))
        for cut in [*cuts, len(added)]:
            messages = [*start, *added[:cut]]
            assert history.normalize(messages) == normalize_for_api(messages, tag_ids=tag_ids)
        finished = [*start, *added]
