"""An oversized tool result is saved beside the trace, and the model may read it back."""

from __future__ import annotations

import asyncio
from pathlib import Path

from fsm_agent.runtime.agent import Agent
from fsm_agent.runtime.tool import tool
from fsm_agent.testing.scenario import ScriptedModel, parse_scenario
from fsm_agent.toolbox import default_tools

BIG = "\n".join(f"row {i:06d}" for i in range(8_000))


@tool(name="Dump", description="Print a lot.", concurrency_safe=True, read_only=True)
async def dump() -> str:
    return BIG


def test_a_saved_result_is_readable_without_asking(tmp_path: Path) -> None:
    """The preview names a file holding the whole result, and Read reads it unasked."""
    work = tmp_path / "work"
    work.mkdir()
    saved = tmp_path / "run.tool-results" / "toolu_001.txt"
    steps = [
        {"content": [{"tool_use": {"name": "Dump", "input": {}}}]},
        {"content": [{"tool_use": {"name": "Read", "input": {"file_path": str(saved)}}}]},
        {"content": [{"text": "ok"}]},
    ]
    model = ScriptedModel(parse_scenario({"steps": steps}))
    tools = [dump, *default_tools()]
    agent = Agent(model=model, tools=tools, cwd=work, trace=tmp_path / "run.jsonl")
    result = asyncio.run(agent.run("go"))
    assert result.terminal == "completed"
    assert saved.read_text(encoding="utf-8") == BIG
    preview = model.requests[1].messages[-1]["content"][0]["content"]
    assert "<persisted-output>" in preview
    assert str(saved) in preview
    read_back = str(model.requests[2].messages[-1]["content"][0]["content"])
    assert "row 001999" in read_back  # Read pages long files; it was allowed, not refused
