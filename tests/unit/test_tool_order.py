"""The order in which tool results reach the loop (SPEC §5.2), in the cases that are easy to
get subtly wrong."""

from __future__ import annotations

import gc
import sys

import pytest

from fsm_agent.core.agent_core import AgentCore
from fsm_agent.core.config import LoopConfig
from fsm_agent.core.messages import tool_results
from fsm_agent.core.tool_calls import ToolExecutor
from fsm_agent.testing.catalogue import ENTRIES, TOOLS, run_entry
from fsm_agent.testing.scenario import parse_scenario
from fsm_agent.testing.world import ToolScript, World, WorldRun, prompt


def result_order(calls: list[dict[str, object]], tools: dict[str, ToolScript]) -> list[str]:
    steps = [{"content": [{"tool_use": call} for call in calls]}, {"content": [{"text": "ok"}]}]
    core = AgentCore(config=LoopConfig(), tools=TOOLS)
    run = WorldRun(
        core.feed, World(scenario=parse_scenario({"steps": steps}), tools=tools), prompt("go")
    )
    assert run.run() == "completed"
    return [r.tool_use_id for m in core.transcript for r in tool_results(m)]


def test_an_unknown_tool_waits_behind_an_earlier_unsafe_call() -> None:
    """[Write (unsafe), Nope]: the unknown tool's instant error comes after Write's result,
    as in the reference, where Write is already running when Nope arrives."""
    order = result_order(
        [
            {"name": "Write", "input": {"file_path": "a", "content": "x"}},
            {"name": "Nope", "input": {}},
        ],
        {"Write": ToolScript(safe=False)},
    )
    assert order == ["toolu_001", "toolu_002"]


def test_a_finished_safe_call_does_not_wait_for_a_running_safe_one() -> None:
    """Among safe calls results come in completion order: a later read that finishes first
    is handed back first (SPEC §5.2, §11)."""
    steps = [
        {
            "content": [
                {"tool_use": {"name": "Read", "input": {"file_path": "slow"}}},
                {"tool_use": {"name": "Glob", "input": {"pattern": "*"}}},
            ]
        },
        {"content": [{"text": "ok"}]},
    ]
    core = AgentCore(config=LoopConfig(), tools=TOOLS)
    world = World(scenario=parse_scenario({"steps": steps}))
    run = WorldRun(core.feed, world, prompt("go"))
    # Drive everything but the Read's call result: answer the Glob's pending work first.
    while not run.done:
        keys = [p.key for p in run.pending]
        pick = next((i for i, k in enumerate(keys) if k != "toolu_001"), 0)
        run.advance(pick)
    order = [r.tool_use_id for m in core.transcript for r in tool_results(m)]
    assert order == ["toolu_002", "toolu_001"]


def _calls_made(reads: int, *, batch_mode: bool = False) -> int:
    """Python function calls the core makes for a recorded turn of ``reads`` parallel reads
    (every effect answered at once), fed again to a fresh core."""
    calls = [{"tool_use": {"name": "Read", "input": {"file_path": f"f{n}"}}} for n in range(reads)]
    steps = [{"content": calls}, {"content": [{"text": "ok"}]}]
    config = LoopConfig(streaming_tool_execution=not batch_mode)
    recording = AgentCore(config=config, tools=TOOLS)
    events: list[object] = []

    def feed(event: object) -> object:
        events.append(event)
        return recording.feed(event)  # type: ignore[arg-type]

    world = World(scenario=parse_scenario({"steps": steps}), tools={})
    assert WorldRun(feed, world, prompt("go")).run() == "completed"  # type: ignore[arg-type]
    core = AgentCore(config=config, tools=TOOLS)
    count = 0

    def profile(_frame: object, event: str, _arg: object) -> None:
        nonlocal count
        count += event == "call"

    gc.disable()  # the collector's callbacks would be counted too
    sys.setprofile(profile)
    try:
        for event in events:
            core.feed(event)  # type: ignore[arg-type]
    finally:
        sys.setprofile(None)
        gc.enable()
    return count


@pytest.mark.parametrize("batch_mode", [False, True], ids=["streaming", "batches"])
def test_many_parallel_calls_cost_linear_in_calls(batch_mode: bool) -> None:
    """A response asking for 200 parallel reads makes no more calls per tool call than one
    asking for 20: scheduling does not rescan every call on every event (issue 10)."""
    small, large = _calls_made(20, batch_mode=batch_mode), _calls_made(200, batch_mode=batch_mode)
    assert large / 200 <= 1.1 * small / 20


def test_one_pump_round_leaves_nothing_to_start_or_hand_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """After every pump of every catalogue run (streaming and batch), a second round would
    start nothing and hand nothing back: one round is the fixed point."""
    rounds = 0
    pump = ToolExecutor.pump

    def checked_pump(executor: ToolExecutor) -> None:
        nonlocal rounds
        pump(executor)
        assert not executor._start_ready()
        assert not executor._hand_back_ready()
        rounds += 1

    monkeypatch.setattr(ToolExecutor, "pump", checked_pump)
    batch = 0
    for entry in ENTRIES:
        core, _run = run_entry(entry)
        assert core.terminal == entry.terminal, entry.name
        batch += not entry.config.streaming_tool_execution
    assert rounds > 50 and batch > 0
