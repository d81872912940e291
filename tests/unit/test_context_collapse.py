"""Context collapse: a refused request collapses the oldest half of the history and retries."""

from __future__ import annotations

import asyncio

from fsm_agent.core.config import LoopConfig
from fsm_agent.core.messages import (
    AssistantMessage,
    Message,
    TextBlock,
    UserMessage,
)
from fsm_agent.core.normalize import api_invariant_violations, normalize_for_api
from fsm_agent.runtime.agent import Agent, TransitionUpdate
from fsm_agent.runtime.context_collapse import collapse_cut
from fsm_agent.runtime.tool import tool
from fsm_agent.testing.scenario import ScriptedModel, parse_scenario
from fsm_agent.testing.transcripts import tool_round


@tool(name="Echo", description="Say it back.", concurrency_safe=True, read_only=True)
async def echo(*, text: str) -> str:
    return text


def test_the_cut_never_parts_a_tool_use_from_its_result() -> None:
    """The oldest half ends where a new response starts, and what is kept is valid."""
    history: list[Message] = [UserMessage(uuid="p", content=(TextBlock(text="go"),))]
    for number in range(5):
        history += tool_round(number)
    cut = collapse_cut(history)
    assert 0 < cut < len(history)
    assert isinstance(history[cut], AssistantMessage)
    summary = UserMessage(uuid="s", content=(TextBlock(text="summary"),), is_meta=True)
    kept = [summary, *history[cut:]]
    assert api_invariant_violations(normalize_for_api(kept, strict=True)) == []


def test_a_history_too_short_is_not_cut() -> None:
    """A lone prompt has no oldest half to collapse."""
    assert collapse_cut([UserMessage(uuid="p", content=(TextBlock(text="go"),))]) == 0


def test_a_refused_request_takes_the_collapse_drain_retry_row() -> None:
    """With context collapse on, a prompt-too-long refusal collapses old turns and the run
    carries on from the collapsed view."""
    turn = {"content": [{"tool_use": {"name": "Echo", "input": {"text": "x"}}}]}
    steps = [
        turn,
        turn,
        turn,
        {"error": {"kind": "prompt_too_long"}},
        {"content": [{"text": "Earlier: three echoes."}]},  # the collapse's summary request
        {"content": [{"text": "done"}]},
    ]
    model = ScriptedModel(parse_scenario({"steps": steps}))
    agent = Agent(model=model, tools=[echo], config=LoopConfig(context_collapse=True), trace=False)

    async def run() -> list[str]:
        return [
            update.transition.name
            async for update in agent.stream("go")
            if isinstance(update, TransitionUpdate)
        ]

    taken = asyncio.run(run())
    assert "collapse_drain_retry" in taken
    assert taken[-1] == "completed"
    retried = model.requests[-1].messages
    assert "Earlier: three echoes." in str(retried[0])
    assert len(retried) < len(model.requests[3].messages)


def test_a_staged_collapse_is_committed_by_the_refusal() -> None:
    """Near the window the oldest span is summarised while the run goes on; the refusal
    commits that summary, the retry sends it in place of the span, and the history is kept."""
    big = {
        "content": [{"tool_use": {"name": "Echo", "input": {"text": "x"}}}],
        "usage": {"input_tokens": 19_000, "output_tokens": 10},
    }
    steps = [
        big,
        {"content": [{"text": "Staged: the prompt."}]},  # the staging summary request
        {"error": {"kind": "prompt_too_long"}},
        {"content": [{"text": "done"}]},
    ]
    model = ScriptedModel(parse_scenario({"steps": steps}))
    config = LoopConfig(context_collapse=True, reactive_compact=False, context_window=40_000)
    agent = Agent(model=model, tools=[echo], config=config, trace=False)
    result = asyncio.run(agent.run("go"))
    assert result.terminal == "completed"
    staged, refused, retried = model.requests[1:]
    assert "go" in str(staged.messages)  # the span it summarised
    assert "Staged: the prompt." in str(retried.messages[0])
    assert len(retried.messages) == len(refused.messages)  # one prompt became one summary
    assert "Staged: the prompt." not in str(result.messages)  # history unchanged
