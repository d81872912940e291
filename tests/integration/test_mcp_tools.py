"""Tools from a real MCP server (written with the ``mcp`` package, started over stdio).

The model (scripted) calls the server's tools as ``mcp__notes__<tool>``; the agent connects,
lists, calls, maps the results, treats ``readOnlyHint`` tools as concurrency-safe, and reads the
tool list again between turns.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fsm_agent.core.messages import ImageBlock, TextBlock, ToolResultBlock, tool_results
from fsm_agent.errors import ConfigError
from fsm_agent.runtime.agent import Agent
from fsm_agent.runtime.mcp_tools import McpServer, mcp_tool_name
from fsm_agent.runtime.permissions import PermissionPolicy
from fsm_agent.testing.scenario import ScriptedModel, parse_scenario
from fsm_agent.trace.reader import read_trace
from fsm_agent.trace.replay import replay

pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install '.[mcp]')")

SERVER = Path(__file__).parent / "mcp" / "notes_server.py"


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
def http_server() -> Iterator[str]:
    """The notes server on streamable HTTP (127.0.0.1, a free port); yields its endpoint."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, str(SERVER), "http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    pytest.fail("the MCP HTTP server did not start")
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(10)


def test_mcp_tools_over_streamable_http(http_server: str) -> None:
    """The same server reached over streamable HTTP serves the same tools."""
    steps = [{"content": [_call("shout", text="over http")]}, {"content": [{"text": "Done."}]}]
    model = ScriptedModel(parse_scenario({"steps": steps}))
    agent = Agent(model=model, mcp_servers=[McpServer.http("notes", http_server)], trace=False)
    result = agent.run_sync("Shout over HTTP.")
    assert result.terminal == "completed"
    assert _results(result.messages)["toolu_001"].content == (TextBlock(text="OVER HTTP"),)


def test_server_names_are_checked() -> None:
    """A server name that cannot be part of a tool name, or no way to reach it, is refused."""
    with pytest.raises(ConfigError, match="letters"):
        McpServer.stdio("bad name", "x")
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
