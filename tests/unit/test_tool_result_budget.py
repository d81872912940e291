"""The per-message tool-result budget (SPEC §7.1): which results are saved, and how."""

from __future__ import annotations

import asyncio
import weakref
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fsm_agent.core import events as ev
from fsm_agent.core.agent_core import AgentCore
from fsm_agent.core.config import LoopConfig
from fsm_agent.core.messages import (
    AssistantMessage,
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)
from fsm_agent.core.tool_result_budget import (
    ToolResultBudget,
    _groups,
    _some_group_over,
    result_chars,
)
from fsm_agent.errors import UsageError
from fsm_agent.runtime.agent import Agent
from fsm_agent.runtime.tool import tool
from fsm_agent.testing.scenario import ScriptedModel, parse_scenario
from fsm_agent.testing.world import open_turn

NONE: frozenset[str] = frozenset()


def _round(sizes: dict[str, int], tool_name: str = "Glob") -> list[Message]:
    """One response calling a tool per id, and one result message per call."""
    calls = tuple(ToolUseBlock(id=i, name=tool_name) for i in sizes)
    results: list[Message] = [
        UserMessage(uuid=f"u{i}", content=(ToolResultBlock(tool_use_id=i, content="x" * n),))
        for i, n in sizes.items()
    ]
    return [AssistantMessage(uuid="a", message_id="msg", content=calls), *results]


def _prompt() -> UserMessage:
    return UserMessage(uuid="p", content=(TextBlock(text="go"),))


def test_the_largest_fresh_results_go_until_the_message_is_under() -> None:
    """Over the limit, results are chosen largest first and only as many as needed."""
    budget = ToolResultBudget(limit=1_000)
    history = [_prompt(), *_round({"a": 300, "b": 700, "c": 500})]
    chosen = budget.plan(history, unbounded_tools=NONE)
    assert [(r.tool_use_id, r.chars) for r in chosen] == [("b", 700)]


def test_a_message_under_the_limit_keeps_everything() -> None:
    """At or under the limit nothing is chosen."""
    budget = ToolResultBudget(limit=1_000)
    assert budget.plan([_prompt(), *_round({"a": 500, "b": 500})], unbounded_tools=NONE) == ()


def test_a_result_the_model_has_seen_is_never_chosen() -> None:
    """Once a request carried a result, its content is frozen however large the message."""
    budget = ToolResultBudget(limit=1_000)
    history = [_prompt(), *_round({"a": 900, "b": 900})]
    budget.mark_sent(history)
    assert budget.seen("a")
    assert budget.plan(history, unbounded_tools=NONE) == ()


def test_results_of_tools_that_bound_their_own_output_are_skipped() -> None:
    """A Read result (unbounded_results) is never saved, even when it is the largest."""
    budget = ToolResultBudget(limit=1_000)
    reads = _round({"a": 900}, "Read")
    history = [_prompt(), *reads, *_round({"b": 400}, "Glob")[1:]]
    chosen = budget.plan(history, unbounded_tools=frozenset({"Read"}))
    assert [r.tool_use_id for r in chosen] == ["b"]


def test_no_limit_chooses_nothing() -> None:
    """``tool_result_budget_chars=None`` turns the budget off."""
    budget = ToolResultBudget(limit=None)
    assert budget.plan([_prompt(), *_round({"a": 10**6})], unbounded_tools=NONE) == ()


def test_replacing_a_seen_result_is_refused() -> None:
    """An answer that would change content the model has seen is a clear error."""
    core = AgentCore(config=LoopConfig(tool_result_budget_chars=10), tools=())
    open_turn(core.feed, [_prompt(), *_round({"a": 50})])  # sent with the first request
    core._machine_model.state = "persisting_results"  # as if the budget had asked
    core._awaiting = "e9"
    persisted = ev.PersistedResult(tool_use_id="a", content="<persisted-output>")
    with pytest.raises(UsageError, match="seen already"):
        core.feed(ev.ToolResultsPersisted(effect_id="e9", results=(persisted,)))


BIG = "line\n" * 300  # 1,500 characters


@tool(name="Dump", description="Print a lot.", concurrency_safe=True, read_only=True)
async def dump() -> str:
    return BIG


def test_the_driver_saves_the_chosen_results_and_sends_the_preview(tmp_path: Path) -> None:
    """Two 1,500-character results over a 2,000 budget: one is saved beside the trace, the
    next request carries its preview and path, and the transcript keeps that form."""
    calls = [{"tool_use": {"name": "Dump", "input": {}}} for _ in range(2)]
    steps = [{"content": calls}, {"content": [{"text": "ok"}]}]
    model = ScriptedModel(parse_scenario({"steps": steps}))
    agent = Agent(
        model=model,
        tools=[dump],
        cwd=tmp_path,
        trace=tmp_path / "run.jsonl",
        config=LoopConfig(tool_result_budget_chars=2_000),
    )
    result = asyncio.run(agent.run("go"))
    assert result.terminal == "completed"
    saved = tmp_path / "run.tool-results" / "toolu_001.txt"
    assert saved.read_text(encoding="utf-8") == BIG
    sent = model.requests[-1].messages[-1]["content"]
    contents = [block["content"] for block in sent]
    assert contents[0].startswith("<persisted-output>")
    assert str(saved) in contents[0]
    assert contents[1] == BIG
    results = [
        b
        for m in result.messages
        if isinstance(m, UserMessage)
        for b in m.content
        if isinstance(b, ToolResultBlock)
    ]
    assert [b.content == BIG for b in results] == [False, True]


class _History(list[Message]):
    """A history a weak reference can follow (to see whether the budget still holds it)."""


def test_a_budget_that_never_reads_holds_one_history_not_one_per_request() -> None:
    """Requests whose histories each go on from the last leave only the newest held (a long
    session used to keep every request's history: memory and collector time grew with the
    square of its length), and every result they carried is still seen."""
    budget = ToolResultBudget(limit=10_000)
    messages: list[Message] = [_prompt()]
    held: list[weakref.ref[_History]] = []
    for turn in range(50):
        messages += _round({f"t{turn}": 5})
        history = _History(messages)
        budget.mark_sent(history)
        held.append(weakref.ref(history))
        del history
    assert sum(ref() is not None for ref in held) == 1
    assert all(budget.seen(f"t{turn}") for turn in range(50))
    assert not budget.seen("never-sent")


def test_a_rewritten_history_keeps_what_was_sent_before_it() -> None:
    """A history rewritten (a compaction) does not go on from the unread one: results the
    earlier requests carried stay seen."""
    budget = ToolResultBudget(limit=10_000)
    budget.mark_sent((_prompt(), *_round({"a": 5})))
    budget.mark_sent((_prompt(), *_round({"b": 5})))  # new objects: a rewrite
    assert budget.seen("a")
    assert budget.seen("b")


_SIZES = st.lists(st.integers(min_value=0, max_value=40), max_size=4)
_HISTORY = st.lists(
    st.one_of(
        st.just("assistant"),
        st.just("text"),
        _SIZES.map(lambda sizes: ("results", sizes)),
    ),
    max_size=12,
)


@settings(max_examples=300)  # cheap: a few microseconds each
@given(history=_HISTORY, limit=st.integers(min_value=0, max_value=80))
def test_the_quick_check_agrees_with_the_groups(history: list[Any], limit: int) -> None:
    """The one-pass check that lets plan() return early says "over" exactly when some group
    of tool_results (as the detailed pass cuts them) is over the limit."""
    messages: list[Message] = []
    for number, item in enumerate(history):
        if item == "assistant":
            messages.append(AssistantMessage(uuid=f"a{number}", message_id="m", content=()))
        elif item == "text":
            messages.append(UserMessage(uuid=f"t{number}", content=(TextBlock(text="x" * 50),)))
        else:
            blocks = tuple(
                ToolResultBlock(tool_use_id=f"r{number}.{i}", content="x" * size)
                for i, size in enumerate(item[1])
            )
            messages.append(UserMessage(uuid=f"u{number}", content=blocks))
    over = any(
        sum(result_chars(block) for block in group) > limit for group, _names in _groups(messages)
    )
    assert _some_group_over(messages, 0, limit) == over
