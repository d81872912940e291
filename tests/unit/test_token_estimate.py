"""The token estimate (SPEC §7.5): anchored on the last reported usage at the first part of
that response, and over the history as it is sent."""

from __future__ import annotations

from fsm_agent.core import events as ev
from fsm_agent.core.agent_core import AgentCore
from fsm_agent.core.config import LoopConfig
from fsm_agent.core.messages import (
    AssistantMessage,
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
    UserMessage,
)
from fsm_agent.core.token_estimate import TokenEstimate, chars_estimate
from fsm_agent.core.tool_spec import ToolSpec

RESULT = "r" * 4_000


def _split_response() -> list[Message]:
    """A prompt, then one response in two parts with a tool_result between them; the usage
    lands on the last part."""
    call = ToolUseBlock(id="t1", name="Read")
    return [
        UserMessage(uuid="p", content=(TextBlock(text="go"),)),
        AssistantMessage(uuid="a1", message_id="msg1", content=(call,)),
        UserMessage(uuid="u1", content=(ToolResultBlock(tool_use_id="t1", content=RESULT),)),
        AssistantMessage(
            uuid="a2",
            message_id="msg1",
            content=(TextBlock(text="x" * 400),),
            usage=Usage(input_tokens=900, output_tokens=100),
        ),
    ]


def test_the_figure_is_anchored_at_the_first_part_of_its_response() -> None:
    """Everything after the first part is counted by characters, the figure before it."""
    history = _split_response()
    assert TokenEstimate().tokens(history) == 1_000 + chars_estimate(history[2:])


def test_without_any_reported_usage_it_is_characters_over_four() -> None:
    """No response reported a figure: characters / 4 of the whole history."""
    history = _split_response()[:3]
    assert TokenEstimate().tokens(history) == chars_estimate(history)


def _old_history() -> tuple[Message, ...]:
    """Three Read rounds whose last response reported 20,000 tokens, then a prompt."""
    messages: list[Message] = [UserMessage(uuid="p", content=(TextBlock(text="go"),))]
    for n in range(3):
        call = ToolUseBlock(id=f"t{n}", name="Read")
        usage = Usage(input_tokens=20_000) if n == 2 else Usage()
        messages.append(
            AssistantMessage(uuid=f"a{n}", message_id=f"m{n}", content=(call,), usage=usage)
        )
        result = ToolResultBlock(tool_use_id=f"t{n}", content=RESULT)
        messages.append(UserMessage(uuid=f"u{n}", content=(result,)))
    messages.append(UserMessage(uuid="q", content=(TextBlock(text="and now?"),)))
    return tuple(messages)


def _first_request(config: LoopConfig) -> AgentCore:
    core = AgentCore(config=config, tools=(ToolSpec(name="Read"),))
    core.feed(
        ev.TurnStarted(messages=_old_history(), wall_time=10_000.0, last_response_wall_time=0.0)
    )
    for effect_id in ("e1", "e2"):  # SessionStart and UserPromptSubmit hooks: nothing to say
        core.feed(ev.HooksFinished(effect_id=effect_id))
    return core


def test_results_cleared_before_the_figure_leave_the_estimate() -> None:
    """Microcompact clears two results the reported figure covered: the estimate drops by
    their characters / 4, less the note that replaced them."""
    kept = _first_request(LoopConfig())
    cleared = _first_request(LoopConfig(time_based_microcompact=True, microcompact_keep_recent=1))
    assert kept.phase == cleared.phase == "streaming"
    sent = cleared.messages_for_query()
    note = sent[2].content[0].content  # type: ignore[union-attr]
    assert isinstance(note, str) and note != RESULT
    assert kept.estimated_tokens() - cleared.estimated_tokens() == (
        chars_estimate(kept.messages_for_query()[:6]) - chars_estimate(sent[:6])
    )
    assert kept.estimated_tokens() - cleared.estimated_tokens() > 1_500
