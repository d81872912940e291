"""Options of ``AnthropicModel`` and server tools, as the requests on the wire show them."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from fsm_agent.core.config import LoopConfig
from fsm_agent.errors import ConfigError
from fsm_agent.runtime.agent import Agent
from fsm_agent.runtime.models import AnthropicModel, Thinking
from fsm_agent.runtime.server_tools import ServerTool
from fsm_agent.runtime.tool import Tool, tool
from fsm_agent.testing.fake_server import FakeAnthropicServer
from fsm_agent.testing.scenario import parse_scenario

MODEL = "claude-options"


@tool(concurrency_safe=True, read_only=True)
async def shout(text: str) -> str:
    """Say it louder."""
    return text.upper()


def _run(model: AnthropicModel, *tools: Tool[Any] | ServerTool) -> None:
    agent = Agent(model=model, tools=tools, config=LoopConfig(max_retries=0), trace=False)
    result = asyncio.run(asyncio.wait_for(agent.run("Hello?"), 20))
    assert result.terminal == "completed"


def _server() -> FakeAnthropicServer:
    return FakeAnthropicServer(parse_scenario({"steps": [{"content": [{"text": "Hi."}]}]}))


def test_an_existing_client_is_used_and_left_open() -> None:
    """AnthropicModel(client=...) sends through that client, and aclose leaves it open."""
    import anthropic

    with _server() as server:
        client = anthropic.AsyncAnthropic(api_key="sk-own", base_url=server.base_url, max_retries=0)
        model = AnthropicModel(name=MODEL, client=client)
        _run(model)
        asyncio.run(model.aclose())
        assert not client.is_closed()
        assert server.message_requests[0].headers["authorization"] == "[redacted]"


def test_thinking_headers_and_betas_reach_the_request() -> None:
    """Thinking settings go into the body; extra headers and beta flags into the headers."""
    with _server() as server:
        model = AnthropicModel(
            name=MODEL,
            api_key="sk-test",
            base_url=server.base_url,
            thinking=Thinking.enabled(2048),
            extra_headers={"x-team": "fsm"},
            betas=["web-fetch-2025-09-10", "code-execution-2025-08-25"],
        )
        _run(model)
        request = server.message_requests[0]
    assert request.body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert request.headers["x-team"] == "fsm"
    assert request.headers["anthropic-beta"] == "web-fetch-2025-09-10,code-execution-2025-08-25"


def test_adaptive_thinking_is_sent_as_such() -> None:
    """Thinking.adaptive() sends {"type": "adaptive"}."""
    assert Thinking.adaptive().to_api() == {"type": "adaptive"}


def test_server_tools_are_declared_next_to_local_tools() -> None:
    """A ServerTool in Agent(tools=...) is sent in the request's tools, after the local ones."""
    with _server() as server:
        model = AnthropicModel(name=MODEL, api_key="sk-test", base_url=server.base_url)
        _run(model, shout, ServerTool.web_search(max_uses=2), ServerTool.code_execution())
        tools = server.message_requests[0].body["tools"]
    # The last tool may carry the prompt-cache breakpoint; that is not part of the declaration.
    declared = [{k: v for k, v in t.items() if k != "cache_control"} for t in tools]
    assert [t["name"] for t in declared] == ["shout", "web_search", "code_execution"]
    assert declared[1] == {"type": "web_search_20250305", "name": "web_search", "max_uses": 2}
    assert declared[2] == {"type": "code_execution_20250825", "name": "code_execution"}


def test_bad_options_are_refused_with_a_clear_error() -> None:
    """A client together with a key, or a thinking budget under the minimum, is a ConfigError."""
    with pytest.raises(ConfigError, match="client"):
        AnthropicModel(name=MODEL, client=object(), api_key="sk-x")
    with pytest.raises(ConfigError, match="budget_tokens"):
        Thinking.enabled(10)
