"""What users get from ``fsm_agent``: every exported name resolves, and the run result and
updates carry what a caller needs (turns, duration, cost; each transition's own destination;
a retry backoff that can be replaced)."""

from __future__ import annotations

import ast
import asyncio
import importlib
import inspect
import re
import textwrap
from pathlib import Path

import fsm_agent
from fsm_agent import (
    Agent,
    HookOutcome,
    ModelPrice,
    PermissionAnswer,
    PermissionRequest,
    RetryScheduled,
    RunFinished,
    TransitionUpdate,
    Update,
    errors,
)
from fsm_agent.core.effects import EFFECT_TYPES
from fsm_agent.core.events import EVENT_TYPES
from fsm_agent.core.messages import Usage
from fsm_agent.testing.scenario import ScriptedModel, parse_scenario
from fsm_agent.toolbox import default_tools

OVERLOADED_TWICE = {
    "steps": [
        {"error": {"kind": "overloaded"}},
        {"error": {"kind": "overloaded"}},
        {"content": [{"text": "fine"}], "usage": {"input_tokens": 1000, "output_tokens": 200}},
    ]
}


def test_every_public_name_resolves() -> None:
    """Each name in __all__ loads, including the types users return or receive."""
    for name in fsm_agent.__all__:
        assert getattr(fsm_agent, name) is not None, name
    for needed in (HookOutcome, PermissionAnswer, PermissionRequest, Update):
        assert needed is not None


def test_the_export_table_and_all_list_the_same_names() -> None:
    """Every name in ``__all__`` has a row in the lazy table and every row is in ``__all__``."""
    assert set(fsm_agent._PUBLIC) == set(fsm_agent.__all__) - {"__version__"}


def test_every_event_effect_and_error_is_exported() -> None:
    """What ``AgentCore.feed`` takes, what its steps ask for and every error fsm_agent raises
    can be imported from ``fsm_agent`` itself, as the very classes the core uses."""
    raised = [
        value
        for value in vars(errors).values()
        if inspect.isclass(value) and issubclass(value, (errors.FsmAgentError, Warning))
    ]
    assert len(raised) > 5
    for public in (*EVENT_TYPES, *EFFECT_TYPES, *raised):
        assert getattr(fsm_agent, public.__name__) is public, public.__name__


def _readme_imports() -> list[tuple[str, str]]:
    """(module, name) of every ``from fsm_agent... import name`` in the README's Python."""
    readme = Path(__file__).parents[2].joinpath("README.md").read_text(encoding="utf-8")
    imported = []
    for block in re.findall(r"```python\n(.+?)```", readme, re.DOTALL):
        for node in ast.walk(ast.parse(textwrap.dedent(block))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("fsm_agent"):
                imported += [(node.module or "", alias.name) for alias in node.names]
    return imported


def test_every_name_the_readme_imports_resolves() -> None:
    """Each name a README example imports from fsm_agent (or one of its modules) exists there."""
    imported = _readme_imports()
    assert ("fsm_agent", "Agent") in imported
    missing = [
        f"{module}.{name}"
        for module, name in imported
        if not hasattr(importlib.import_module(module), name)
    ]
    assert missing == []


def test_the_readme_drives_the_core_by_hand_with_exported_names() -> None:
    """The README's hand-driven core example runs and reaches the first model request."""
    readme = Path(__file__).parents[2].joinpath("README.md").read_text(encoding="utf-8")
    section = readme.split("**Driving the core by hand.**", 1)[1]
    code = re.search(r"```python\n(.+?)\n```", section, re.DOTALL)
    assert code is not None
    namespace: dict[str, object] = {"print": lambda *_args: None}
    exec(compile(code.group(1), "README.md", "exec"), namespace)
    step = namespace["step"]
    assert isinstance(step, fsm_agent.Step)
    assert isinstance(step.effects[-1], fsm_agent.CallModel)
    assert step.transitions[-1].name == "request_sent"


def test_sleep_and_clock_are_replaceable_and_the_result_counts(tmp_path: Path) -> None:
    """Backoff goes through the given sleep; the result has turns, duration and cost."""
    slept: list[float] = []
    ticks = iter(range(1000))

    async def fake_sleep(seconds: float) -> None:
        slept.append(seconds)

    agent = Agent(
        model=ScriptedModel(parse_scenario(OVERLOADED_TWICE)),
        tools=default_tools(),
        cwd=tmp_path,
        trace=False,
        sleep=fake_sleep,
        clock=lambda: float(next(ticks)),
        price=ModelPrice(input=3.0, output=15.0),
    )

    async def go() -> list[Update]:
        return [update async for update in agent.stream("hi")]

    seen = asyncio.run(go())
    finished = seen[-1]
    assert isinstance(finished, RunFinished)
    result = finished.result
    assert len(slept) == 2 and all(seconds > 0 for seconds in slept)
    retries = [u for u in seen if isinstance(u, RetryScheduled)]
    assert [r.attempt for r in retries] == [2, 3]
    assert [r.delay_ms / 1000 for r in retries] == slept[:2]
    assert result.terminal == "completed" and result.turns == 1
    assert result.duration_s > 0
    assert result.cost_usd == ModelPrice(input=3.0, output=15.0).cost(result.usage)
    assert (
        ModelPrice(input=3.0, output=15.0).cost(
            Usage(input_tokens=1_000_000, output_tokens=1_000_000)
        )
        == 18.0
    )


def test_a_transition_update_carries_its_own_destination(tmp_path: Path) -> None:
    """Within a step of several transitions, each update names where its own transition went."""
    agent = Agent(
        model=ScriptedModel(parse_scenario({"steps": [{"content": [{"text": "hi"}]}]})),
        cwd=tmp_path,
        trace=False,
    )

    async def go() -> list[TransitionUpdate]:
        return [u async for u in agent.stream("hi") if isinstance(u, TransitionUpdate)]

    updates = asyncio.run(go())
    started = next(u for u in updates if u.transition.name == "iteration_started")
    assert started.dest == "preprocess"
    assert started.phase != "preprocess"  # the step went on; phase is where it ended
