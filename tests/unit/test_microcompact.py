"""Time-based microcompact (SPEC §7.3): old tool results cleared after a long pause."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import attrs

from fsm_agent.core import texts
from fsm_agent.core.agent_core import AgentCore
from fsm_agent.core.config import LoopConfig
from fsm_agent.core.messages import (
    AssistantMessage,
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
    tool_results,
)
from fsm_agent.core.microcompact import clear_old_results
from fsm_agent.core.tool_spec import ToolSpec
from fsm_agent.runtime.agent import Agent
from fsm_agent.runtime.response_clock import ResponseClock
from fsm_agent.runtime.tool import tool
from fsm_agent.testing.scenario import ScriptedModel, parse_scenario
from fsm_agent.testing.world import ToolScript, World, WorldRun, prompt

CLEARED = texts.OLD_TOOL_RESULT_CLEARED
READ = {"content": [{"tool_use": {"name": "Read", "input": {"path": "a"}}}]}
TEXT = {"content": [{"text": "done"}]}


def _calls(*names: str) -> list[Message]:
    messages: list[Message] = [UserMessage(uuid="p", content=(TextBlock(text="go"),))]
    for n, name in enumerate(names):
        call = ToolUseBlock(id=f"t{n}", name=name)
        messages.append(AssistantMessage(uuid=f"a{n}", message_id=f"m{n}", content=(call,)))
        result = ToolResultBlock(tool_use_id=f"t{n}", content=f"result {n}")
        messages.append(UserMessage(uuid=f"u{n}", content=(result,)))
    return messages


def _contents(messages: tuple[Message, ...] | list[Message]) -> list[Any]:
    return [r.content for m in messages for r in tool_results(m)]


def _sent(messages: list[dict[str, Any]]) -> list[Any]:
    """The tool_result contents of a request's API messages."""
    return [
        block["content"]
        for message in messages
        if isinstance(message["content"], list)
        for block in message["content"]
        if block["type"] == "tool_result"
    ]


def test_all_but_the_last_compactable_results_are_cleared() -> None:
    """Keep 2: the older Read and Grep results are cleared, a custom tool's is not."""
    cleared = clear_old_results(
        _calls("Read", "Mine", "Grep", "Read", "Glob"),
        compactable=frozenset({"Read", "Grep", "Glob"}),
        keep=2,
    )
    assert cleared is not None
    assert _contents(cleared) == [CLEARED, "result 1", CLEARED, "result 3", "result 4"]


def test_nothing_to_clear_is_none() -> None:
    """With no more compactable results than ``keep``, the history is left alone."""
    assert (
        clear_old_results(_calls("Read", "Mine"), compactable=frozenset({"Read"}), keep=1) is None
    )


def _run_with_pause(config: LoopConfig, pause_s: float) -> tuple[AgentCore, WorldRun]:
    """Three Read turns; the second tool call takes ``pause_s`` of wall time."""
    now = [1_000.0]
    clock = ResponseClock(lambda: now[0])
    core = AgentCore(config=config, tools=(ToolSpec(name="Read"),))
    world = World(
        scenario=parse_scenario({"steps": [READ, READ, READ, TEXT]}),
        tools={"Read": ToolScript(content="file text")},
    )
    run = WorldRun(lambda event: core.feed(clock.stamp(event)), world, prompt("hi"))
    paused = False
    while not run.done:
        finished = sum(t.name == "tools_finished" for _, s in run.steps for t in s.transitions)
        if finished == 2 and not paused:
            now[0] += pause_s
            paused = True
        now[0] += 1
        run.advance()
    return core, run


def _names(run: WorldRun) -> list[str]:
    return [t.name for _, s in run.steps for t in s.transitions if t.machine == "loop"]


def test_a_long_pause_clears_old_results_once() -> None:
    """A tool call an hour long: before the next request the older result is cleared."""
    config = LoopConfig(time_based_microcompact=True, microcompact_keep_recent=1)
    core, run = _run_with_pause(config, 3_600)
    assert run.terminal == "completed"
    assert _names(run).count("old_tool_results_cleared") == 1
    assert _contents(core.messages_for_query()) == [CLEARED, "file text", "file text"]
    assert "file text" in str(core.transcript[2:4])  # the transcript keeps what was shown


def test_a_short_pause_or_the_switch_off_clears_nothing() -> None:
    """Under the gap, or with the switch off (the default), no result is cleared."""
    on = LoopConfig(time_based_microcompact=True, microcompact_keep_recent=1)
    for config, pause in ((on, 600.0), (LoopConfig(microcompact_keep_recent=1), 7_200.0)):
        core, run = _run_with_pause(config, pause)
        assert "old_tool_results_cleared" not in _names(run)
        assert CLEARED not in _contents(core.messages_for_query())


def test_a_subagent_never_clears() -> None:
    """SPEC §7.3: main thread only."""
    config = LoopConfig(time_based_microcompact=True, microcompact_keep_recent=1, is_subagent=True)
    _, run = _run_with_pause(config, 3_600)
    assert "old_tool_results_cleared" not in _names(run)


@tool(name="Read", description="Read a file.", concurrency_safe=True, read_only=True)
async def read(path: str) -> str:
    del path
    return "file text"


def test_a_conversation_picked_up_after_an_hour_clears_old_results(tmp_path: Path) -> None:
    """The agent remembers when its last response was made: a run carrying that transcript
    on two hours later sends the older results cleared; a copied transcript is not known."""
    now = [5_000.0]
    model = ScriptedModel(parse_scenario({"steps": [READ, READ, TEXT, TEXT, TEXT]}))
    config = LoopConfig(time_based_microcompact=True, microcompact_keep_recent=1)
    agent = Agent(
        model=model, tools=[read], cwd=tmp_path, trace=False, config=config,
        wall_clock=lambda: now[0],
    )  # fmt: skip
    first = asyncio.run(agent.run("look"))
    now[0] += 7_200
    again = UserMessage(uuid="again", content=(TextBlock(text="and now?"),))
    asyncio.run(agent.run([*first.messages, again]))
    assert _sent(model.requests[-1].messages) == [CLEARED, "file text"]
    copied = [*(attrs.evolve(m) for m in first.messages), again]  # equal, not the same
    asyncio.run(agent.run(copied))
    assert _sent(model.requests[-1].messages) == ["file text", "file text"]
