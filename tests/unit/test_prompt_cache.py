"""Prompt-cache breakpoints: where they go, that nothing shared changes, and the switch."""

from __future__ import annotations

import asyncio
import copy

from fsm_agent.core.prompt_cache import CACHE_CONTROL, cache_breakpoints, count_breakpoints
from fsm_agent.runtime.agent import Agent
from fsm_agent.testing.scenario import ScriptedModel, parse_scenario

TOOLS = [{"name": "Read", "description": "r", "input_schema": {}}, {"name": "Glob"}]
MESSAGES = [
    {"role": "user", "content": [{"type": "text", "text": "go"}]},
    {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "t", "name": "Read", "input": {}}],
    },
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "x"}]},
    {
        "role": "assistant",
        "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
    },
    {"role": "user", "content": "more"},
]


def test_marks_go_on_system_tools_and_the_end_of_the_history() -> None:
    """System, last tool, last message and the message two before it are marked; four in all."""
    system, tools, messages = cache_breakpoints(system="Be brief.", tools=TOOLS, messages=MESSAGES)
    assert system == [{"type": "text", "text": "Be brief.", "cache_control": CACHE_CONTROL}]
    assert tools[0] == TOOLS[0]
    assert tools[-1]["cache_control"] == CACHE_CONTROL
    assert messages[-1]["content"] == [
        {"type": "text", "text": "more", "cache_control": CACHE_CONTROL}
    ]
    assert messages[2]["content"][-1]["cache_control"] == CACHE_CONTROL
    assert [count_breakpoints(m) for m in messages] == [0, 0, 1, 0, 1]
    assert count_breakpoints([system, tools, messages]) == 4


def test_a_continued_reply_marks_where_the_previous_request_ended() -> None:
    """When the last message is the model's paused reply, the message before it (the previous
    request's end) is marked, however many blocks the reply has."""
    searches = [{"type": "text", "text": f"found {n}"} for n in range(30)]
    history = [
        {"role": "user", "content": [{"type": "text", "text": "go"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "a"}]},
        {"role": "user", "content": [{"type": "text", "text": "search"}]},
        {"role": "assistant", "content": searches},
    ]
    _, _, messages = cache_breakpoints(system="", tools=[], messages=history)
    assert [count_breakpoints(m) for m in messages] == [0, 0, 1, 1]
    assert messages[2]["content"][-1]["cache_control"] == CACHE_CONTROL


def test_thinking_and_empty_text_are_never_marked() -> None:
    """The API refuses cache_control on thinking blocks and empty text: the mark moves back."""
    mixed = {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Let me think."},
            {"type": "thinking", "thinking": "hm", "signature": "s"},
            {"type": "redacted_thinking", "data": "x"},
            {"type": "text", "text": ""},
        ],
    }
    go = {"role": "user", "content": [{"type": "text", "text": "go"}]}
    _, _, messages = cache_breakpoints(system="", tools=[], messages=[go, mixed])
    marked = [b for b in messages[-1]["content"] if "cache_control" in b]
    assert marked == [{"type": "text", "text": "Let me think.", "cache_control": CACHE_CONTROL}]
    thinking_only = {
        "role": "assistant",
        "content": [{"type": "thinking", "thinking": "", "signature": ""}],
    }
    _, _, messages = cache_breakpoints(system="", tools=[], messages=[go, thinking_only])
    assert messages[-1] == thinking_only  # nothing in it may carry a mark


def test_the_given_dicts_are_left_alone() -> None:
    """Marking copies what it marks: the history's shared dicts never change."""
    before = copy.deepcopy((TOOLS, MESSAGES))
    cache_breakpoints(system="", tools=TOOLS, messages=MESSAGES)
    assert before == (TOOLS, MESSAGES)


def test_an_empty_request_gets_no_marks() -> None:
    """No system prompt, no tools and one message: only that message is marked."""
    system, tools, messages = cache_breakpoints(system="", tools=[], messages=MESSAGES[:1])
    assert (system, tools) == ("", [])
    assert count_breakpoints(messages) == 1


def _requests(**options: bool) -> list[object]:
    model = ScriptedModel(parse_scenario({"steps": [{"content": [{"text": "hi"}]}]}))
    agent = Agent(model=model, system="Be brief.", trace=False, **options)
    asyncio.run(agent.run("go"))
    return [[r.system, r.tools, r.messages] for r in model.requests]


def test_agent_requests_are_marked_by_default() -> None:
    """An Agent marks its requests for the prompt cache unless told not to."""
    assert count_breakpoints(_requests()) == 2
    assert count_breakpoints(_requests(prompt_caching=False)) == 0
