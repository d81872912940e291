"""The token estimate is taken over what is sent (SPEC §7.5): whatever collapse, cleared
results, replaced results or snip took out of the history, the estimate does not count it."""

from __future__ import annotations

import attrs
from hypothesis import given
from hypothesis import strategies as st

from fsm_agent.core.context_collapse import collapse_cut
from fsm_agent.core.messages import (
    AssistantMessage,
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
    UserMessage,
)
from fsm_agent.core.microcompact import clear_old_results
from fsm_agent.core.snip import plan_snip
from fsm_agent.core.token_estimate import TokenEstimate, chars_estimate
from fsm_agent.core.tool_result_budget import replace_results
from fsm_agent.testing.transcripts import loop_transcripts

_SIZES = st.sampled_from([0, 40, 400, 4_000])


@st.composite
def sent_histories(draw: st.DrawFn) -> list[Message]:
    """Loop transcripts with results of generated sizes, each response reporting the usage
    the API would: characters / 4 of the request and of its first part."""
    messages = list(draw(loop_transcripts(max_rounds=6)))
    for index, message in enumerate(messages):
        if isinstance(message, UserMessage) and any(
            isinstance(b, ToolResultBlock) for b in message.content
        ):
            content = tuple(
                attrs.evolve(b, content="r" * draw(_SIZES)) if isinstance(b, ToolResultBlock) else b
                for b in message.content
            )
            messages[index] = attrs.evolve(message, content=content)
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    for index, message in enumerate(messages):
        if isinstance(message, AssistantMessage):
            first.setdefault(message.message_id, index)
            last[message.message_id] = index
    for response, index in last.items():
        if draw(st.booleans()) or response == max(last, key=last.__getitem__):
            figure = chars_estimate(messages[: first[response] + 1])
            carrier = messages[index]
            assert isinstance(carrier, AssistantMessage)
            messages[index] = attrs.evolve(carrier, usage=Usage(input_tokens=figure))
    return messages


def _result_ids(messages: list[Message]) -> list[str]:
    return [
        b.tool_use_id
        for m in messages
        if isinstance(m, UserMessage)
        for b in m.content
        if isinstance(b, ToolResultBlock)
    ]


def _collapse(messages: list[Message], size: int) -> list[Message]:
    cut = collapse_cut(messages)
    if cut == 0:
        return messages
    summary = UserMessage(uuid=f"summary{len(messages)}", content=(TextBlock(text="s" * size),))
    return [summary, *messages[cut:]]


def _clear(messages: list[Message], keep: int) -> list[Message]:
    names = frozenset(
        b.name
        for m in messages
        if isinstance(m, AssistantMessage)
        for b in m.content
        if isinstance(b, ToolUseBlock)
    )
    cleared = clear_old_results(messages, compactable=names, keep=keep)
    return list(cleared) if cleared is not None else messages


def _snip(messages: list[Message], picks: list[int]) -> list[Message]:
    names = [m.uuid for m in messages] + _result_ids(messages)
    chosen = dict.fromkeys(names[p % len(names)] for p in picks)
    removed = set(plan_snip(messages, chosen).removed)
    return [m for m in messages if m.uuid not in removed]


def _replace(messages: list[Message], picks: list[int]) -> list[Message]:
    ids = _result_ids(messages)
    chosen = {ids[p % len(ids)]: "<persisted-output> preview" for p in picks} if ids else {}
    return [replace_results(m, chosen) for m in messages]


_STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("collapse"), _SIZES),
        st.tuples(st.just("clear"), st.integers(0, 3)),
        st.tuples(st.just("replace"), st.lists(st.integers(0, 50), max_size=3)),
        st.tuples(st.just("snip"), st.lists(st.integers(0, 50), max_size=3)),
    ),
    min_size=1,
    max_size=4,
)


@given(history=sent_histories(), steps=_STEPS)
def test_the_estimate_counts_what_is_sent_after_any_rewrite(
    history: list[Message], steps: list[tuple[str, object]]
) -> None:
    """When the reported usage is characters / 4 of what was sent, the estimate after any
    run of collapses, cleared results, replaced results and snips is characters / 4 of what
    is sent now (to rounding): no removed span is counted at its full size."""
    estimate = TokenEstimate()
    assert abs(estimate.tokens(history) - chars_estimate(history)) <= 1
    current = history
    for kind, argument in steps:
        if kind == "collapse":
            assert isinstance(argument, int)
            changed = _collapse(current, argument)
        elif kind == "clear":
            assert isinstance(argument, int)
            changed = _clear(current, argument)
        elif kind == "snip":
            assert isinstance(argument, list)
            changed = _snip(current, argument)
        else:
            assert isinstance(argument, list)
            changed = _replace(current, argument)
        freed = estimate.rewritten(current, changed)
        assert freed == max(chars_estimate(current) - chars_estimate(changed), 0)
        current = changed
        assert abs(estimate.tokens(current) - chars_estimate(current)) <= 1


@given(history=sent_histories(), tokens=st.integers(0, 10**6), grown=st.integers(1, 3))
def test_an_exact_count_holds_until_the_history_changes(
    history: list[Message], tokens: int, grown: int
) -> None:
    """A count is the figure for exactly the history it counted; a longer history, or a
    rewrite, goes back to the estimate."""
    estimate = TokenEstimate()
    counted, rest = history[:-grown] or history, history
    estimate.take_count(tokens, counted)
    assert estimate.tokens(counted) == tokens
    if len(rest) != len(counted):
        assert estimate.tokens(rest) == TokenEstimate().tokens(rest)
    estimate.rewritten(counted, _clear(counted, 0))
    assert estimate.counted(counted) is None
