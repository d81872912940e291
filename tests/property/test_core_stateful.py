"""Generated runs against generated worlds keep every DESIGN §6 invariant, step by step.

The state machine test explores interleavings (which pending answer comes next, an abort at
any point) and checks ``check_step`` after every step and ``check_run`` at the end; the plain
``@given`` test runs whole generated runs to their end.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from fsm_agent.core import events as ev
from fsm_agent.core.agent_core import AgentCore
from fsm_agent.core.config import LoopConfig
from fsm_agent.core.step import Step
from fsm_agent.testing.invariants import check_run, check_step, transition_bound
from fsm_agent.testing.scenario import ToolUseSpec
from fsm_agent.testing.strategies import loop_configs, tool_specs, worlds
from fsm_agent.testing.world import World, WorldRun, prompt
from fsm_agent.trace.writer import TraceWriter, TracingCore

EVENT_CAP = 2_000
FAILURES = Path(".hypothesis") / "failing-traces"


def _scripted(world: World) -> dict[str, int]:
    steps = world.scenario.steps
    calls = sum(isinstance(b, ToolUseSpec) for step in steps for b in step.content)
    return {"model_steps": len(steps), "tool_calls": calls}


class CoreMachine(RuleBasedStateMachine):
    """Drives one generated run, one event per rule, checking invariants after each."""

    def __init__(self) -> None:
        super().__init__()
        self.core: AgentCore | None = None
        self.run: WorldRun | None = None
        self.world: World | None = None
        self.steps: list[tuple[ev.Event, Step]] = []

    @initialize(config=loop_configs(), specs=tool_specs(), world=worlds())
    def build(self, config: LoopConfig, specs: Any, world: World) -> None:
        """Build the core and the run."""
        self.core = AgentCore(config=config, tools=specs)
        self.world = world
        self.run = WorldRun(self.core.feed, world, prompt("hi"))
        self.steps = self.run.steps

    @rule(choice=st.integers(min_value=0, max_value=7))
    def advance(self, choice: int) -> None:
        """Feed the next answer of one pending effect (nothing once the run has ended)."""
        assert self.run is not None
        self.run.advance(choice)

    @precondition(lambda self: self.run is not None and not self.run.done)
    @rule(reason=st.sampled_from(["user", "user", "interrupt"]))
    def abort(self, reason: str) -> None:
        """Ask the run to stop."""
        assert self.run is not None
        self.run.abort(reason)

    @invariant()
    def step_invariants_hold(self) -> None:
        """check_step finds nothing after every step."""
        if self.core is None or self.world is None:
            return
        assert check_step(self.core, self.steps, self.core.config, **_scripted(self.world)) == []

    def teardown(self) -> None:
        """Finish the run in FIFO order and check the whole run."""
        if self.core is None or self.run is None or self.world is None:
            return
        self.run.run(limit=EVENT_CAP)
        assert check_run(self.core, self.steps, self.core.config, **_scripted(self.world)) == []


CoreMachine.TestCase.settings = settings(
    max_examples=max(10, settings.default.max_examples // 2),
    stateful_step_count=30,
    deadline=None,
)
TestCoreMachine = CoreMachine.TestCase


@given(
    config=loop_configs(),
    specs=tool_specs(),
    world=worlds(),
    choices=st.lists(st.integers(min_value=0, max_value=7), max_size=64),
)
def test_generated_runs_end_and_keep_invariants(
    config: LoopConfig, specs: Any, world: World, choices: list[int]
) -> None:
    """Any generated run ends within the transition bound and keeps every invariant."""
    core = AgentCore(config=config, tools=specs)
    buffer = io.BytesIO()
    writer = TraceWriter(buffer, config=config, tools=specs)
    run = WorldRun(TracingCore(core, writer).feed, world, prompt("hi"))
    picks = iter(choices)
    terminal = run.run(lambda: next(picks, 0), limit=EVENT_CAP)
    scripted = _scripted(world)
    problems = check_run(core, run.steps, config, **scripted)
    transitions = sum(len(step.transitions) for _, step in run.steps)
    if transitions > transition_bound(config, **scripted):
        problems.append(f"{transitions} transitions exceed the bound")
    if terminal != core.terminal:
        problems.append(f"the run says {terminal}, the core {core.terminal}")
    if problems:
        # DESIGN §6: the failing scenario is kept as a trace; the last one written is the
        # shrunk example Hypothesis reports.
        FAILURES.mkdir(parents=True, exist_ok=True)
        saved = FAILURES / "latest-failure.jsonl"
        saved.write_bytes(buffer.getvalue())
        raise AssertionError(f"{problems}; trace saved to {saved} (fsm-agent show it)")
