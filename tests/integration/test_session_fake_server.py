"""A session over the real anthropic SDK and the fake server: what the wire carries between
turns (the earlier turns, a changed file's reminder, a queued message)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fsm_agent.runtime.agent import Agent, RunResult
from fsm_agent.runtime.models import AnthropicModel
from fsm_agent.testing.fake_server import FakeAnthropicServer
from fsm_agent.toolbox import default_tools
from fsm_agent.trace.replay import replay

ServeFn = Callable[[Any], FakeAnthropicServer]  # the ``serve`` fixture (conftest.py)


def reads(path: str) -> dict[str, Any]:
    return {"content": [{"tool_use": {"name": "Read", "input": {"file_path": path}}}]}


def says(text: str) -> dict[str, Any]:
    return {"content": [{"text": text}]}


def converse(server: FakeAnthropicServer, work: Path, traces: Path) -> list[RunResult]:
    """Three turns: read a file; edit it on disk, ask again; queue a message, ask again."""

    async def go() -> list[RunResult]:
        async with AnthropicModel(
            name="claude-primary", api_key="sk-test", base_url=server.base_url, timeout=5.0
        ) as model:
            agent = Agent(model=model, tools=default_tools(), cwd=work, trace=f"{traces}/")
            async with agent.session() as chat:
                first = await chat.ask("What does notes.txt say?")
                (work / "notes.txt").write_text("buy milk\nbuy bread\n", encoding="utf-8")
                second = await chat.ask("Anything else?")
                chat.send("Answer in one word.")
                third = await chat.ask("Thanks.")
        return [first, second, third]

    return asyncio.run(go())


def test_a_conversation_over_the_wire(serve: ServeFn, tmp_path: Path) -> None:
    """The second request of a turn holds the earlier turns; the file change is a reminder
    in the new prompt's user message; every turn's trace replays."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("buy milk\n", encoding="utf-8")
    server = serve({"steps": [reads("notes.txt"), says("Milk."), says("Bread."), says("Yes.")]})
    results = converse(server, work, tmp_path / "traces")
    assert [r.terminal for r in results] == ["completed"] * 3
    bodies = [request.body for request in server.message_requests]
    second_turn = bodies[2]["messages"]
    assert [m["role"] for m in second_turn] == ["user", "assistant", "user", "assistant", "user"]
    reminder, prompt = second_turn[-1]["content"][0], second_turn[-1]["content"][-1]
    assert reminder["text"].startswith("<system-reminder>")
    assert "notes.txt was changed on disk" in reminder["text"] and "+buy bread" in reminder["text"]
    assert prompt["text"] == "Anything else?"
    third_turn = bodies[3]["messages"][-1]["content"]
    assert [block["text"] for block in third_turn] == ["Answer in one word.", "Thanks."]
    assert "notes.txt was changed" not in str(bodies[3]["messages"][-1])
    for result in results:
        assert result.trace_path is not None
        assert replay(result.trace_path).terminal == "completed"
