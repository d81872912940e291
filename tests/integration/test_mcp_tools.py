"""Tools from a real MCP server (written with the ``mcp`` package, started over stdio).

The model (scripted) calls the server's tools as ``mcp__notes__<tool>``; the agent connects,
lists, calls, maps the results, treats ``readOnlyHint`` tools as concurrency-safe, and reads the
tool list again between turns.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pytest

from fsm_agent.core.messages import ImageBlock, TextBlock, ToolResultBlock, tool_results
from fsm_agent.errors import ConfigError, McpWarning
from fsm_agent.runtime.agent import Agent
from fsm_agent.runtime.mcp_tools import McpServer, mcp_tool_name
from fsm_agent.runtime.permissions import PermissionAnswer, PermissionPolicy, PermissionRequest
from fsm_agent.testing.scenario import ScriptedModel, parse_scenario
from fsm_agent.trace.reader import read_trace
from fsm_agent.trace.replay import replay

pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install '.[mcp]')")

SERVER = Path(__file__).parent / "mcp" / "notes_server.py"
SLOPPY = Path(__file__).parent / "mcp" / "sloppy_server.py"


def _call(tool: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_use": {"name": mcp_tool_name("notes", tool), "input": arguments}}


def _results(messages: Any) -> dict[str, ToolResultBlock]:
    return {block.tool_use_id: block for m in messages for block in tool_results(m)}


def test_mcp_server_tools_run_and_refresh(tmp_path: Path) -> None:
    """Calls reach the MCP server; text, image and error results map; the list refreshes."""
    steps = [
        {"content": [_call("shout", text="hi"), _call("picture")]},
        {"content": [_call("fail", reason="test"), _call("unlock")]},
        {"content": [_call("secret")]},
        {"content": [{"text": "Done."}]},
    ]
    model = ScriptedModel(parse_scenario({"steps": steps}))
    agent = Agent(
        model=model,
        mcp_servers=[McpServer.stdio("notes", sys.executable, [str(SERVER)])],
        permissions=PermissionPolicy(allow={"mcp__notes"}),
        trace=tmp_path / "run.jsonl",
    )
    result = agent.run_sync("Use the notes server.")
    assert result.terminal == "completed"

    results = _results(result.messages)
    assert results["toolu_001"].content == (TextBlock(text="HI"),)
    (image,) = results["toolu_002"].content
    assert isinstance(image, ImageBlock)
    assert image.source["media_type"] == "image/png"
    assert results["toolu_003"].is_error
    assert "failed on purpose: test" in str(results["toolu_003"].content)
    assert results["toolu_005"].content == (TextBlock(text="the secret is 42"),)

    offered = [[t["name"] for t in request.tools] for request in model.requests]
    assert mcp_tool_name("notes", "secret") not in offered[0]
    assert mcp_tool_name("notes", "secret") in offered[2]

    # readOnlyHint makes a tool concurrency-safe (SPEC §5); the others run alone.
    assert result.trace_path is not None
    validated = {
        r.data["event"]["call_id"]: r.data["event"]["concurrency_safe"]
        for r in read_trace(result.trace_path).records
        if r.kind == "event" and r.data["event"]["type"] == "ToolInputValidated"
    }
    assert validated["toolu_001"] and validated["toolu_002"]
    assert not validated["toolu_003"] and not validated["toolu_004"]
    # The refreshed tool list is in the trace, so the run replays without the server.
    replay(result.trace_path)


@pytest.fixture
def http_server(notes_over_http: tuple[str, Any]) -> str:
    """The notes server's streamable-HTTP endpoint."""
    return notes_over_http[0]


def test_mcp_tools_over_streamable_http(http_server: str) -> None:
    """The same server reached over streamable HTTP serves the same tools."""
    steps = [{"content": [_call("shout", text="over http")]}, {"content": [{"text": "Done."}]}]
    model = ScriptedModel(parse_scenario({"steps": steps}))
    agent = Agent(
        model=model,
        mcp_servers=[McpServer.http("notes", http_server)],
        permissions=PermissionPolicy(allow={"mcp__notes"}),
        trace=False,
    )
    result = agent.run_sync("Shout over HTTP.")
    assert result.terminal == "completed"
    assert _results(result.messages)["toolu_001"].content == (TextBlock(text="OVER HTTP"),)


def test_server_names_are_checked() -> None:
    """A server name that cannot be part of a tool name, or no way to reach it, is refused."""
    with pytest.raises(ConfigError, match="letters"):
        McpServer.stdio("bad name", "x")
    with pytest.raises(ConfigError, match="ASCII"):  # the API refuses other letters
        McpServer.stdio("café", "x")
    with pytest.raises(ConfigError, match="at most 32"):
        McpServer.stdio("s" * 33, "x")
    with pytest.raises(ConfigError, match="command"):
        McpServer(name="notes")


def test_permission_rules_name_the_tools_of_a_declared_mcp_server() -> None:
    """A deny rule on one MCP tool is accepted before the server is reached, and it wins."""
    steps = [
        {"content": [_call("shout", text="hi"), _call("fail", reason="never")]},
        {"content": [{"text": "Done."}]},
    ]
    agent = Agent(
        model=ScriptedModel(parse_scenario({"steps": steps})),
        mcp_servers=[McpServer.stdio("notes", sys.executable, [str(SERVER)])],
        permissions=PermissionPolicy(deny={"mcp__notes__fail"}, allow={"mcp__notes"}),
        trace=False,
    )
    results = _results(agent.run_sync("Use the notes server.").messages)
    assert results["toolu_001"].content == (TextBlock(text="HI"),)
    assert results["toolu_002"].is_error
    assert "failed on purpose" not in str(results["toolu_002"].content)


def test_a_rule_for_an_undeclared_mcp_server_is_refused() -> None:
    """A rule naming a server the agent does not declare is a ConfigError naming the server."""
    with pytest.raises(ConfigError, match="'github'"):
        Agent(
            model=ScriptedModel(parse_scenario({"steps": [{"content": [{"text": "x"}]}]})),
            mcp_servers=[McpServer.stdio("notes", sys.executable, [str(SERVER)])],
            permissions=PermissionPolicy(deny={"mcp__github__create_issue"}),
            trace=False,
        )


def test_a_servers_tools_ask_whatever_the_server_says_of_them(tmp_path: Path) -> None:
    """A server's own word (readOnlyHint included) runs nothing unasked: each call asks, a
    denied one never reaches the server, and with no one to ask the call is refused."""
    steps = [
        {"content": [_call("shout", text="hi"), _call("unlock")]},
        {"content": [{"text": "Done."}]},
    ]
    asked: list[PermissionRequest] = []

    async def ask(request: PermissionRequest) -> PermissionAnswer:
        asked.append(request)
        return PermissionAnswer(allow=request.tool_name.endswith("shout"))

    model = ScriptedModel(parse_scenario({"steps": steps}))
    agent = Agent(
        model=model,
        mcp_servers=[McpServer.stdio("notes", sys.executable, [str(SERVER)])],
        permissions=PermissionPolicy(ask=ask),
        trace=False,
    )
    results = _results(agent.run_sync("Use the notes server.").messages)
    assert sorted(request.tool_name for request in asked) == [
        mcp_tool_name("notes", "shout"),
        mcp_tool_name("notes", "unlock"),
    ]
    assert results["toolu_001"].content == (TextBlock(text="HI"),)
    assert results["toolu_002"].is_error
    # `unlock` never ran: the server did not add its secret tool.
    assert mcp_tool_name("notes", "secret") not in [t["name"] for t in model.requests[-1].tools]

    nobody = Agent(
        model=ScriptedModel(parse_scenario({"steps": steps})),
        mcp_servers=[McpServer.stdio("notes", sys.executable, [str(SERVER)])],
        trace=False,
    )
    refused = _results(nobody.run_sync("Use the notes server.").messages)
    assert refused["toolu_001"].is_error and refused["toolu_002"].is_error
    assert "no one to ask" in str(refused["toolu_001"].content)


def test_a_server_whose_tool_names_the_api_refuses_still_serves_them(serve: Any) -> None:
    """Through the real SDK against the fake server (which refuses what the API refuses): a
    server listing `github.search`, `has space`, `résumé`, an 80-character name and one name
    twice has its tools offered under names the API takes, and a call reaches the tool."""
    from fsm_agent.runtime.models import AnthropicModel

    search = mcp_tool_name("sloppy", "github.search")
    server = serve(
        {
            "steps": [
                {"content": [{"tool_use": {"name": search, "input": {"q": "fsm"}}}]},
                {"content": [{"text": "Found it."}]},
            ]
        }
    )
    agent = Agent(
        model=AnthropicModel(name="claude-sonnet-4-6", api_key="sk-test", base_url=server.base_url),
        mcp_servers=[McpServer.stdio("sloppy", sys.executable, [str(SLOPPY)])],
        permissions=PermissionPolicy(allow={"mcp__sloppy"}),
        trace=False,
    )
    with pytest.warns(McpWarning, match="'twice' left out"):
        result = agent.run_sync("Search.")
    assert result.terminal == "completed"
    assert _results(result.messages)["toolu_001"].content == (TextBlock(text="ran github.search"),)
    (request, _) = server.requests
    assert request.body is not None
    names = [tool["name"] for tool in request.body["tools"]]
    assert search in names and len(names) == 5
    assert all(len(name) <= 64 for name in names)


def test_offered_names_are_what_the_api_takes_and_stay_distinct() -> None:
    """Any tool name becomes one the API takes, the same each time, and two names stay two."""
    odd = ["a.b", "a b", "a_b", "ü", "\u0000", "x" * 200, "x" * 201, "", "Z-9_ok"]
    offered = [mcp_tool_name("srv", name) for name in odd]
    assert all(re.fullmatch(r"[A-Za-z0-9_-]{1,64}", name) for name in offered)
    assert len(set(offered)) == len(odd)
    assert offered == [mcp_tool_name("srv", name) for name in odd]
    assert mcp_tool_name("srv", "Z-9_ok") == "mcp__srv__Z-9_ok"  # a good name is kept as is


def test_a_tool_whose_schema_is_not_an_object_schema_is_left_out() -> None:
    """A server (not written with the ``mcp`` package, which refuses it) listing a tool whose
    input schema is not an object schema: that tool is left out with a warning, the rest kept."""
    import asyncio
    from types import SimpleNamespace

    from fsm_agent.runtime.mcp_tools import McpConnection

    listed = SimpleNamespace(
        tools=[
            SimpleNamespace(name="ok", description="", input_schema={}, annotations=None),
            SimpleNamespace(
                name="stringly", description="", input_schema={"type": "string"}, annotations=None
            ),
        ]
    )

    class Session:
        async def list_tools(self) -> Any:
            return listed

    connection = McpConnection(McpServer.stdio("odd", "true"))
    connection._session = Session()  # type: ignore[assignment]
    with pytest.warns(McpWarning, match="'stringly' left out: its input schema"):
        tools = asyncio.run(connection.tools())
    assert [tool.name for tool in tools] == ["mcp__odd__ok"]
    assert tools[0].input_schema() == {"type": "object", "properties": {}}


def test_a_tool_left_out_is_warned_about_once_however_many_turns() -> None:
    """The list is read again every turn: the same warning is given once per run, not once
    per turn (3,000 turns would repeat it 3,000 times)."""
    import asyncio
    import warnings
    from types import SimpleNamespace

    from fsm_agent.runtime.mcp_tools import McpConnection

    bad = SimpleNamespace(
        name="s", description="", input_schema={"type": "string"}, annotations=None
    )

    class Session:
        async def list_tools(self) -> Any:
            return SimpleNamespace(tools=[bad], next_cursor=None)

    connection = McpConnection(McpServer.stdio("odd", "true"))
    connection._session = Session()  # type: ignore[assignment]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(50):
            asyncio.run(connection.tools())
    assert len([w for w in caught if issubclass(w.category, McpWarning)]) == 1


def test_one_answer_that_does_not_parse_leaves_the_server_in_the_run() -> None:
    """A call whose answer fails validation is an error result; the next call still reaches
    the server (only a closed connection takes it out of the run)."""
    import asyncio

    from fsm_agent.runtime.mcp_tools import McpConnection

    answers: list[Any] = [ValueError("1 validation error for CallToolResult"), "fine"]

    class Session:
        async def call_tool(self, name: str, arguments: Any) -> Any:
            answer = answers.pop(0)
            if isinstance(answer, Exception):
                raise answer
            return SimpleNamespace(content=[SimpleNamespace(type="text", text=answer)])

    from types import SimpleNamespace

    connection = McpConnection(McpServer.stdio("odd", "true"))
    connection._session = Session()  # type: ignore[assignment]
    first = asyncio.run(connection.call("t", {}))
    second = asyncio.run(connection.call("t", {}))
    assert first.is_error and connection.failure is None
    assert not second.is_error
