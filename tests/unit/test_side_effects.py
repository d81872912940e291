"""Side effects at most once (SPEC §5.2 "Ours"), interrupt texts, and duplicate tool ids.

The runs answer tool effects before the rest of the model stream whenever they can (the last
pending answer first), which is the interleaving where a call could start before its response
has ended.
"""

from __future__ import annotations

from typing import Any

import pytest

from fsm_agent.core import effects as fx
from fsm_agent.core import events as ev
from fsm_agent.core import texts
from fsm_agent.core.agent_core import AgentCore
from fsm_agent.core.config import LoopConfig
from fsm_agent.core.messages import ApiErrorMessage, text_of, tool_results
from fsm_agent.core.step import Step
from fsm_agent.core.tool_spec import ToolSpec
from fsm_agent.runtime.agent import Agent
from fsm_agent.testing.invariants import check_run
from fsm_agent.testing.scenario import ScriptedModel, parse_scenario, render_events
from fsm_agent.testing.strategies import events_through_first_block
from fsm_agent.testing.world import ToolScript, World, WorldRun, open_turn, prompt
from fsm_agent.toolbox import default_tools
from fsm_agent.trace.replay import replay

TOOLS = [ToolSpec(name="Read"), ToolSpec(name="Write")]
SCRIPTS = {"Read": ToolScript(safe=True), "Write": ToolScript(safe=False)}
TEXT = {"content": [{"text": "done"}]}


def tools_first() -> int:
    """Pick the newest pending answer: tool effects overtake the model stream."""
    return -1


def asks(name: str, then_fail: dict[str, Any] | None = None) -> dict[str, Any]:
    """A response asking for ``name`` and saying more; optionally failing after the tool block."""
    step: dict[str, Any] = {
        "content": [{"tool_use": {"name": name, "input": {"arg": name}}}, {"text": "more"}]
    }
    if then_fail is not None:
        after = events_through_first_block(step["content"])  # right after the tool block
        step["error"] = {**then_fail, "mid_stream_after": after}
    return step


def play(steps: list[dict[str, Any]], config: LoopConfig | None = None) -> tuple[AgentCore, Any]:
    """Run a scripted world to its end with tools answered first; check the invariants."""
    core = AgentCore(config=config or LoopConfig(max_retries=2), tools=TOOLS)
    world = World(scenario=parse_scenario({"steps": steps}), tools=SCRIPTS)
    run = WorldRun(core.feed, world, prompt("hi"))
    run.run(tools_first)
    assert check_run(core, run.steps, core.config) == []
    return core, run


def calls_of(run: WorldRun) -> list[str]:
    """Call ids the core asked the driver to run, in order."""
    return [
        e.call_id
        for _, step in run.steps
        for e in step.effects
        if isinstance(e, fx.RunToolStep) and e.step is fx.ToolStep.CALL
    ]


def results(core: AgentCore) -> dict[str, str]:
    """tool_use id → the text of its one tool_result in the transcript."""
    return {b.tool_use_id: str(b.content) for m in core.transcript for b in tool_results(m)}


def test_side_effect_waits_for_the_end_of_the_response() -> None:
    """A Write whose response then fails and is retried never ran: only the retry's Write runs,
    once, and the withdrawn tool_use is answered as discarded."""
    core, run = play([asks("Write", {"kind": "overloaded"}), asks("Write"), TEXT])
    assert calls_of(run) == ["toolu_002"]
    assert results(core)["toolu_001"] == texts.DISCARDED_BY_FALLBACK
    assert core.terminal == "completed"


def test_side_effect_waits_across_a_model_fallback() -> None:
    """After a fallback to another model the withdrawn Write did not run and is answered."""
    config = LoopConfig(fallback_model="backup", overloaded_before_fallback=1)
    core, run = play([asks("Write", {"kind": "overloaded"}), asks("Write"), TEXT], config)
    assert "model_fallback" in [t.name for _, s in run.steps for t in s.transitions]
    assert calls_of(run) == ["toolu_002"]
    assert results(core)["toolu_001"] == texts.DISCARDED_BY_FALLBACK


def test_a_read_that_ran_in_a_withdrawn_attempt_stays_visible() -> None:
    """A read-only call that ran before the stream failed keeps its tool_use and its result in
    the history the retry is sent with."""
    core = AgentCore(config=LoopConfig(max_retries=2), tools=TOOLS)
    sent: list[list[dict[str, Any]]] = []

    def feed(event: ev.Event) -> Step:
        step = core.feed(event)
        if any(isinstance(e, fx.CallModel) for e in step.effects):
            sent.append(core.api_messages())  # what the driver sends with this request
        return step

    steps = [asks("Read", {"kind": "connection"}), TEXT]
    run = WorldRun(feed, World(scenario=parse_scenario({"steps": steps}), tools=SCRIPTS),
                   prompt("hi"))  # fmt: skip
    run.run(tools_first)
    assert check_run(core, run.steps, core.config) == []
    assert calls_of(run) == ["toolu_001"]
    assert "request_retried" in [t.name for _, s in run.steps for t in s.transitions]
    api = sent[1]  # the re-request
    uses = [b["id"] for m in api for b in m["content"] if b.get("type") == "tool_use"]
    answered = [
        (b["tool_use_id"], b["content"])
        for m in api
        for b in m["content"]
        if b.get("type") == "tool_result"
    ]
    assert uses == ["toolu_001"]
    assert answered == [("toolu_001", "ok")]


def test_duplicate_tool_ids_are_a_model_protocol_error() -> None:
    """Two tool_use blocks sharing an id end the run in model_error naming the duplicate, and
    the one call shown is answered."""
    same = {"name": "Read", "input": {"arg": "x"}, "id": "toolu_same"}
    core, _ = play([{"content": [{"tool_use": same}, {"tool_use": same}]}, TEXT])
    assert core.terminal == "model_error"
    errors = [text_of(m) for m in core.transcript if isinstance(m, ApiErrorMessage)]
    assert any("duplicate tool_use id 'toolu_same'" in text for text in errors)
    assert list(results(core)) == ["toolu_same"]


@pytest.mark.parametrize("name", ["Read", "Write"])
def test_a_retry_reusing_a_withdrawn_call_id_is_a_model_protocol_error(name: str) -> None:
    """A retried response whose tool_use reuses the id of the attempt it replaces ends in
    model_error naming the id, every tool_use answered once (a kept read included)."""
    first = asks(name, {"kind": "connection"})
    first["content"][0]["tool_use"]["id"] = "toolu_same"
    again = {"content": [{"tool_use": {"name": name, "input": {"arg": name}, "id": "toolu_same"}}]}
    core, _ = play([first, again, TEXT])
    assert core.terminal == "model_error"
    errors = [text_of(m) for m in core.transcript if isinstance(m, ApiErrorMessage)]
    assert any("'toolu_same' (already used in this run)" in text for text in errors)


# --- interrupts ---------------------------------------------------------------------------------


class Hand:
    """Feeds a core by hand."""

    def __init__(self) -> None:
        self.core = AgentCore(config=LoopConfig(), tools=TOOLS)
        self.steps: list[tuple[ev.Event, Step]] = []

    def feed(self, event: ev.Event) -> Step:
        step = self.core.feed(event)
        self.steps.append((event, step))
        return step

    def last(self, kind: type, **fields: Any) -> Any:
        found = [
            e
            for _, s in self.steps
            for e in s.effects
            if isinstance(e, kind) and all(getattr(e, k) == v for k, v in fields.items())
        ]
        return found[-1]


def test_interrupt_texts_say_what_happened_to_each_call() -> None:
    """An interrupt is worded as an interruption: a call stopped while running may have had a
    partial effect; a call that had not started did not run. Neither reads as a refusal."""
    hand = Hand()
    request = open_turn(hand.feed, prompt("hi")).effects[-1]
    reply = {
        "content": [
            {"tool_use": {"name": "Read", "input": {"arg": "r"}}},
            {"tool_use": {"name": "Write", "input": {"arg": "w"}}},
        ]
    }
    for raw in render_events(parse_scenario({"steps": [reply]}).steps[0]):
        hand.feed(ev.ModelStreamEvent(request_id=request.request_id, event=raw))
    hand.feed(ev.ModelStreamClosed(request_id=request.request_id))
    hand.feed(ev.ToolInputValidated(call_id="toolu_001", ok=True, concurrency_safe=True,
                                    read_only=True))  # fmt: skip
    hand.feed(ev.ToolInputValidated(call_id="toolu_002", ok=True))
    hook = hand.last(fx.RunHooks, call_id="toolu_001")
    hand.feed(ev.HooksFinished(effect_id=hook.effect_id))
    ask = hand.last(fx.AskPermission, call_id="toolu_001")
    allowed = ev.PermissionDecided(
        effect_id=ask.effect_id,
        behavior=ev.PermissionBehavior.ALLOW,
        source=ev.DecisionSource.POLICY,
    )
    hand.feed(allowed)
    assert hand.core.tool_calls[0].state == "running"
    assert hand.feed(ev.AbortRequested(reason="user")).terminal == "aborted_tools"
    answered = results(hand.core)
    assert answered["toolu_001"] == texts.INTERRUPTED_WHILE_RUNNING
    assert answered["toolu_002"] == texts.INTERRUPTED_BEFORE_START
    assert "partial" in texts.INTERRUPTED_WHILE_RUNNING
    for text in answered.values():
        assert "does not want" not in text
    assert check_run(hand.core, hand.steps, hand.core.config) == []


def test_duplicate_tool_ids_end_an_agent_run_instead_of_hanging(tmp_path: Any) -> None:
    """Through the async driver, a response with two tool_use blocks under one id ends the run
    in model_error, with every tool_use answered and the trace ended."""
    same = {"name": "Read", "input": {"file_path": "a.txt"}, "id": "toolu_same"}
    scenario = parse_scenario({"steps": [{"content": [{"tool_use": same}, {"tool_use": same}]}]})
    agent = Agent(model=ScriptedModel(scenario), tools=default_tools(), cwd=tmp_path,
                  trace=tmp_path / "trace.jsonl")  # fmt: skip
    result = agent.run_sync("read it twice")
    assert result.terminal == "model_error"
    answered = [b.tool_use_id for m in result.messages for b in tool_results(m)]
    assert answered == ["toolu_same"]
    assert replay(tmp_path / "trace.jsonl").ended
