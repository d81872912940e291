"""Every loop state × every event type: a Step or a "not legal here" error, never a crash.

Like h11's tests, each phase is reached by building a core in a realistic context and setting
its machine state directly; then one event of each of the 13 types, with drawn fields, is fed.
The answer must be a ``Step`` or an ``IllegalTransition``/``UsageError``; after an error the
core is poisoned. The tool machine gets the same treatment through ``ToolExecutor``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fsm_agent.core import effects as fx
from fsm_agent.core import events as ev
from fsm_agent.core.agent_core import AgentCore
from fsm_agent.core.config import LoopConfig
from fsm_agent.core.messages import TextBlock, UserMessage
from fsm_agent.core.step import Step
from fsm_agent.core.tables import CallState, Phase, Terminal
from fsm_agent.core.tool_calls import ToolCall, ToolExecutor
from fsm_agent.core.tool_spec import ToolSpec
from fsm_agent.errors import CorePoisoned, IllegalTransition, UsageError
from fsm_agent.testing.scenario import parse_scenario
from fsm_agent.testing.world import World, WorldRun, prompt

LOOP_STATES = [p.value for p in Phase] + [t.value for t in Terminal]
TOOLS = [ToolSpec(name="Read"), ToolSpec(name="Bash", is_shell=True)]
IDS = st.sampled_from(["e1", "e2", "e3", "e5", "e9"])
CALL_IDS = st.sampled_from(["toolu_001", "toolu_002", "c1", "nope"])
REQUEST_IDS = st.sampled_from(["r1", "r2", "r9"])
MESSAGES = st.just((UserMessage(uuid="u1", content=(TextBlock(text="x"),)),)) | st.just(())
RAW_EVENTS = st.sampled_from(
    [
        {"type": "ping"},
        {"type": "bogus"},
        {"type": "message_stop"},
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn"},
            "usage": {"output_tokens": 1},
        },
        {
            "type": "message_start",
            "message": {
                "id": "m",
                "type": "message",
                "role": "assistant",
                "model": "x",
                "content": [],
                "usage": {},
            },
        },
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    ]
)
OUTCOMES = st.builds(
    ev.HookOutcome,
    blocking_errors=st.sampled_from([(), ("no",)]),
    prevent_continuation=st.booleans(),
    decision=st.none() | st.sampled_from(list(ev.HookDecision)),
)

EVENTS: dict[str, st.SearchStrategy[Any]] = {
    "TurnStarted": st.builds(ev.TurnStarted, messages=MESSAGES),
    "ModelStreamEvent": st.builds(ev.ModelStreamEvent, request_id=REQUEST_IDS, event=RAW_EVENTS),
    "ModelStreamClosed": st.builds(ev.ModelStreamClosed, request_id=REQUEST_IDS),
    "ModelStreamFailed": st.builds(
        ev.ModelStreamFailed, request_id=REQUEST_IDS, kind=st.sampled_from(list(ev.FailureKind))
    ),
    "ToolInputValidated": st.builds(
        ev.ToolInputValidated, call_id=CALL_IDS, ok=st.booleans(), concurrency_safe=st.booleans()
    ),
    "ToolCallFinished": st.builds(ev.ToolCallFinished, call_id=CALL_IDS, is_error=st.booleans()),
    "ToolProgressReported": st.builds(ev.ToolProgressReported, call_id=CALL_IDS, text=st.just("p")),
    "SubagentStarted": st.builds(
        ev.SubagentStarted, call_id=CALL_IDS, agent=st.just("a"), run_id=st.just("r")
    ),
    "HooksFinished": st.builds(ev.HooksFinished, effect_id=IDS, outcome=OUTCOMES),
    "PermissionPromptShown": st.builds(ev.PermissionPromptShown, effect_id=IDS),
    "PermissionDecided": st.builds(
        ev.PermissionDecided,
        effect_id=IDS,
        behavior=st.sampled_from(list(ev.PermissionBehavior)),
        source=st.sampled_from(list(ev.DecisionSource)),
        abort_turn=st.booleans(),
    ),
    "CompactionFinished": st.builds(
        ev.CompactionFinished, effect_id=IDS, ok=st.booleans(), messages=MESSAGES
    ),
    "CollapseDrained": st.builds(
        ev.CollapseDrained, effect_id=IDS, committed=st.integers(0, 2), messages=MESSAGES
    ),
    "CollapseStaged": st.builds(
        ev.CollapseStaged,
        effect_id=IDS,
        through_uuid=st.sampled_from(["u1", "m1"]),
        ok=st.booleans(),
        summary=MESSAGES,
    ),
    "ToolResultsPersisted": st.builds(
        ev.ToolResultsPersisted,
        effect_id=IDS,
        results=st.sampled_from(
            [(), (ev.PersistedResult(tool_use_id="toolu_001", content="<persisted-output>"),)]
        ),
    ),
    "TokensCounted": st.builds(
        ev.TokensCounted,
        effect_id=IDS,
        input_tokens=st.one_of(st.none(), st.integers(-1, 10**6)),
        error=st.sampled_from(["", "down"]),
    ),
    "AttachmentsReady": st.builds(ev.AttachmentsReady, effect_id=IDS, messages=MESSAGES),
    "AbortRequested": st.builds(ev.AbortRequested, reason=st.sampled_from(["user", "interrupt"])),
}


def test_every_event_type_has_a_strategy() -> None:
    """The matrix covers every event class."""
    assert set(EVENTS) == {t.__name__ for t in ev.EVENT_TYPES}


def _fresh(config: LoopConfig) -> AgentCore:
    return AgentCore(config=config, tools=TOOLS)


def _streaming(config: LoopConfig) -> AgentCore:
    core = _fresh(config)
    core.feed(ev.TurnStarted(messages=prompt("hi")))
    return core


def _tools_running(config: LoopConfig) -> AgentCore:
    core = _fresh(config)
    steps = [{"content": [{"tool_use": {"name": "Read", "input": {}}},
                          {"tool_use": {"name": "Bash", "input": {}}}]}]  # fmt: skip
    run = WorldRun(core.feed, World(scenario=parse_scenario({"steps": steps})), prompt("hi"))
    for _ in range(100):
        if core.tool_calls and all(c.state == "running" for c in core.tool_calls):
            break
        run.advance()
    return core


CONTEXTS: dict[str, Callable[[LoopConfig], AgentCore]] = {
    "fresh": _fresh,
    "streaming": _streaming,
    "tools_running": _tools_running,
}
CONFIGS = st.builds(
    LoopConfig,
    context_collapse=st.booleans(),
    token_budget=st.none() | st.just(1_000),
    fallback_model=st.none() | st.just("fb"),
    streaming_tool_execution=st.booleans(),
)


def _feed_one(core: AgentCore, event: Any) -> None:
    try:
        step = core.feed(event)
    except (IllegalTransition, UsageError):
        assert core.poisoned
        with pytest.raises(CorePoisoned):
            core.feed(ev.AbortRequested())
        return
    assert isinstance(step, Step)
    assert not core.poisoned


@pytest.mark.parametrize("state", LOOP_STATES)
@settings(max_examples=max(5, settings.default.max_examples // 3))
@given(data=st.data(), context=st.sampled_from(sorted(CONTEXTS)), config=CONFIGS)
def test_loop_state_event_matrix(
    state: str, data: st.DataObject, context: str, config: LoopConfig
) -> None:
    """Any event in any loop state gives a Step or a not-legal error, then poisons the core."""
    awaiting = data.draw(st.sampled_from([None, "e1", "e2"]), label="awaiting")
    for event_type in sorted(EVENTS):
        core = CONTEXTS[context](config)
        core._machine_model.state = state
        core._awaiting = awaiting
        _feed_one(core, data.draw(EVENTS[event_type], label=event_type))


class _Sink:
    """A loop stand-in for driving a ToolExecutor by hand."""

    def __init__(self) -> None:
        self._n = itertools.count(100)
        self.tool_context: dict[str, Any] = {}

    def new_effect_id(self) -> str:
        return f"e{next(self._n)}"

    def new_uuid(self) -> str:
        return f"u{next(self._n)}"

    def add_effect(self, effect: fx.Effect) -> None:
        del effect

    def add_transition(self, transition: Any) -> None:
        del transition

    def hand_back(self, call: ToolCall, messages: list[Any]) -> None:
        del call, messages

    def request_abort(self, reason: str) -> None:
        del reason

    def apply_context_update(self, update: dict[str, Any]) -> None:
        self.tool_context.update(update)


TOOL_EVENT_TYPES = [
    "ToolInputValidated", "ToolCallFinished", "ToolProgressReported", "SubagentStarted",
    "HooksFinished", "PermissionDecided", "PermissionPromptShown", "AbortRequested",
    "CompactionFinished",
]  # fmt: skip


@pytest.mark.parametrize("state", [s.value for s in CallState])
@given(data=st.data(), batch=st.booleans(), safe=st.booleans(), shell=st.booleans())
def test_tool_state_event_matrix(
    state: str, data: st.DataObject, batch: bool, safe: bool, shell: bool
) -> None:
    """Any event for a call in any tool state is handled or refused with IllegalTransition."""
    spec = TOOLS[1] if shell else TOOLS[0]
    for event_type in TOOL_EVENT_TYPES:
        executor = ToolExecutor(_Sink(), {s.name: s for s in TOOLS}, batch_mode=batch,
                                max_concurrency=2)  # fmt: skip
        call = ToolCall(call_id="c1", tool_name=spec.name, input={}, index=0, spec=spec)
        call.state = state
        call.validated = state != CallState.QUEUED.value
        call.safe = safe
        call.awaiting = "e1"
        executor.calls["c1"] = call
        executor.order.append(call)
        executor._by_effect["e1"] = call
        event = data.draw(EVENTS[event_type], label=event_type)
        try:
            executor.handle(event)
        except IllegalTransition:
            continue
