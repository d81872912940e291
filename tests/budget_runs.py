"""A run whose one tool returns a secret after some padding, under a tool-result budget: the
shape in which a redacted length decides what the core does (shared by tests)."""

from __future__ import annotations

from pathlib import Path

from fsm_agent.core.config import LoopConfig
from fsm_agent.runtime.agent import Agent
from fsm_agent.runtime.tool import tool
from fsm_agent.testing.scenario import ScriptedModel, parse_scenario


def echoing_run(tmp_path: Path, *, secret: str, padding: int, budget: int) -> Path:
    """A run whose one tool returns ``padding`` characters and then ``secret``, with a tool
    result budget of ``budget`` characters; the path of its trace."""

    @tool(description="Echo.")
    async def echo(text: str) -> str:
        return "a" * padding + secret

    steps = {
        "steps": [
            {"content": [{"tool_use": {"name": "echo", "input": {"text": "hi"}}}]},
            {"content": [{"text": "done"}]},
        ]
    }
    trace = tmp_path / "run.jsonl"
    agent = Agent(
        model=ScriptedModel(parse_scenario(steps)),
        tools=[echo],
        config=LoopConfig(model="m", tool_result_budget_chars=budget),
        trace=trace,
        cwd=tmp_path,
        secrets=[secret],
    )
    assert agent.run_sync("go").terminal == "completed"
    return trace
