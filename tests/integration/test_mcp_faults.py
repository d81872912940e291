"""MCP servers that crash, hang, fail to start, answer too much, leak or collide.

Each server is ``mcp/broken_server.py`` in one of its modes (started over stdio by the agent).
The promises kept: no run dies because of a server (a failing one is left out with an
``McpWarning`` naming it), every tool_use is answered exactly once (an abort included), a
large result is saved to a file with a preview, secrets never reach the trace and a result's
terminal controls are spelled out on the terminal.
"""

from __future__ import annotations

import asyncio
import io
import os
import socket
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from fsm_agent.core.config import LoopConfig
from fsm_agent.core.messages import (
    ImageBlock,
    Message,
    TextBlock,
    ToolResultBlock,
    tool_results,
    tool_uses,
)
from fsm_agent.errors import McpWarning
from fsm_agent.runtime.agent import Agent, RunResult
from fsm_agent.runtime.mcp_tools import (
    CONTENT_LIMIT,
    DESCRIPTION_LIMIT,
    IMAGE_LIMIT,
    IMAGES_PER_RESULT,
    PAGE_LIMIT,
    SCHEMA_LIMIT,
    McpServer,
    mcp_tool_name,
)
from fsm_agent.runtime.permissions import PermissionPolicy
from fsm_agent.runtime.tool import tool
from fsm_agent.terminal_view import LiveView
from fsm_agent.testing.scenario import ScriptedModel, parse_scenario
from fsm_agent.trace.redact import mask
from fsm_agent.trace.replay import replay

pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install '.[mcp]')")

BROKEN = Path(__file__).parent / "mcp" / "broken_server.py"
TOKEN = "ghp_" + "Zq8" * 12
CONFIGURED = "configured-secret-value"
API_KEY = "sk-ant-api03-" + "Q" * 90
STARTS = 10
"""A ``timeout_s`` a server written in Python starts within, even on a busy machine."""


def _server(mode: str, *more: str, name: str = "b", **options: Any) -> McpServer:
    return McpServer.stdio(name, sys.executable, [str(BROKEN), mode, *more], **options)


def _call(tool_name: str, server: str = "b", **arguments: Any) -> dict[str, Any]:
    return {"tool_use": {"name": mcp_tool_name(server, tool_name), "input": arguments}}


def _agent(
    servers: list[McpServer],
    *turns: list[dict[str, Any]],
    trace: Path | bool = False,
    allow: frozenset[str] | set[str] = frozenset(),
    **kw: Any,
) -> tuple[Agent, ScriptedModel]:
    """An agent allowed to call the servers' tools (and ``allow``), whose model makes each
    turn's calls in turn, then says it is done."""
    steps = [{"content": calls} for calls in turns] + [{"content": [{"text": "Done."}]}]
    model = ScriptedModel(parse_scenario({"steps": steps}))
    policy = PermissionPolicy(allow={*(f"mcp__{server.name}" for server in servers), *allow})
    return Agent(model=model, mcp_servers=servers, permissions=policy, trace=trace, **kw), model


def _results(messages: tuple[Message, ...]) -> dict[str, ToolResultBlock]:
    return {block.tool_use_id: block for m in messages for block in tool_results(m)}


def _only_text(block: ToolResultBlock) -> str:
    """The text of a result made of one text block."""
    assert not isinstance(block.content, str)
    (part,) = block.content
    assert isinstance(part, TextBlock)
    return part.text


def _answered_once(messages: tuple[Message, ...]) -> None:
    """Every tool_use has exactly one tool_result, and no result answers nothing."""
    asked = [use.id for m in messages for use in tool_uses(m)]
    answered = [block.tool_use_id for m in messages for block in tool_results(m)]
    assert sorted(asked) == sorted(answered)
    assert len(set(asked)) == len(asked)


def test_a_server_that_exits_mid_call_fails_that_call_and_no_more(tmp_path: Path) -> None:
    """The call it dies in and the calls after it are error results naming the server; its
    tools are gone from the next request; the run completes and replays."""
    agent, model = _agent(
        [_server("ok")],
        [_call("echo", text="before")],
        [_call("crash"), _call("echo", text="after")],
        [_call("echo", text="later")],
        trace=tmp_path / "run.jsonl",
    )
    with pytest.warns(McpWarning, match="MCP server 'b' left out of this run: the call of 'crash'"):
        result = agent.run_sync("Go.")
    assert result.terminal == "completed"
    results = _results(result.messages)
    assert not results["toolu_001"].is_error
    assert results["toolu_002"].is_error
    assert "MCP server 'b'" in str(results["toolu_002"].content)
    assert results["toolu_003"].is_error
    assert "MCP server 'b' is unavailable" in str(results["toolu_003"].content)
    assert results["toolu_004"].is_error  # no longer offered: no such tool
    assert [t["name"] for t in model.requests[-1].tools] == []
    _answered_once(result.messages)
    assert result.trace_path is not None
    replay(result.trace_path)


@pytest.mark.parametrize(
    ("mode", "why"),
    [("die-on-relist", "Connection closed"), ("hang-on-relist", "did not answer within 10 s")],
)
def test_a_server_that_fails_its_next_listing_is_left_out(mode: str, why: str) -> None:
    """A server that exits, or never answers, when its tools are listed again between turns:
    the run goes on without its tools (bounded by ``timeout_s``)."""
    agent, model = _agent(
        [_server(mode, timeout_s=STARTS), _server("ok", name="good")],
        [_call("echo", text="one")],
        [_call("echo", server="good", text="two")],
    )
    with pytest.warns(McpWarning, match=f"MCP server 'b' left out.*listing its tools.*{why}"):
        result = agent.run_sync("Go.")
    assert result.terminal == "completed"
    results = _results(result.messages)
    assert not results["toolu_001"].is_error and not results["toolu_002"].is_error
    offered = [t["name"] for t in model.requests[-1].tools]
    assert mcp_tool_name("good", "echo") in offered
    assert all(name.startswith("mcp__good__") for name in offered)


@pytest.mark.parametrize(
    ("server", "why"),
    [
        (McpServer.stdio("b", "no-such-program-anywhere", timeout_s=5), "FileNotFoundError"),
        (_server("exit", timeout_s=STARTS), "it did not start: MCPError: Connection closed"),
        (_server("hang-start", timeout_s=STARTS), "did not answer within 10 s"),
    ],
    ids=["bad-command", "exits", "hangs"],
)
def test_a_server_that_does_not_start_is_left_out_with_a_warning(
    server: McpServer, why: str
) -> None:
    """A warning names the server and the reason (not an anyio task group's traceback); the
    other servers serve and the run completes."""
    agent, model = _agent([server, _server("ok", name="good")], [_call("echo", "good", text="hi")])
    with pytest.warns(McpWarning, match=f"MCP server 'b' left out of this run: .*{why}"):
        result = agent.run_sync("Go.")
    assert result.terminal == "completed"
    assert not _results(result.messages)["toolu_001"].is_error
    assert all(t["name"].startswith("mcp__good__") for t in model.requests[0].tools)


def test_a_tool_list_the_client_cannot_read_is_said_at_once() -> None:
    """A tool list nested deeper than the client reads: the listing fails at once with a
    warning saying so (not after ``timeout_s``), and the other servers serve."""
    agent, model = _agent(
        [_server("deep", timeout_s=60), _server("ok", name="good")],
        [_call("echo", "good", text="hi")],
    )
    started = time.monotonic()
    with pytest.warns(McpWarning, match="MCP server 'b': listing its tools failed .*could not be"):
        result = agent.run_sync("Go.")
    assert time.monotonic() - started < 45
    assert result.terminal == "completed"
    assert not _results(result.messages)["toolu_001"].is_error
    assert all(t["name"].startswith("mcp__good__") for t in model.requests[0].tools)


def test_garbage_on_stdout_does_not_stop_a_server() -> None:
    """Lines that are not JSON-RPC are skipped; the server's answers still arrive."""
    agent, _ = _agent([_server("garbage")], [_call("echo", text="through")])
    result = agent.run_sync("Go.")
    assert result.terminal == "completed"
    assert "through" in str(_results(result.messages)["toolu_001"].content)


def test_a_call_that_never_returns_is_bounded_and_can_be_interrupted() -> None:
    """A hanging call ends at ``tool_timeout_ms`` with an error saying so; interrupted, the
    turn ends with every tool_use answered and the session goes on."""
    agent, _ = _agent(
        [_server("ok")],
        [_call("echo", text="a"), _call("hang")],
        config=LoopConfig(tool_timeout_ms=1_500),
    )
    result = agent.run_sync("Go.")
    assert result.terminal == "completed"
    hung = _results(result.messages)["toolu_002"]
    assert hung.is_error and "tool_timeout_ms" in str(hung.content)
    _answered_once(result.messages)

    async def interrupted() -> RunResult:
        agent, _ = _agent([_server("ok")], [_call("echo", text="a"), _call("hang")])
        async with agent.session() as session:

            async def stop_when_hanging() -> None:
                await asyncio.sleep(4)
                session.interrupt()

            stopper = asyncio.create_task(stop_when_hanging())
            result = await session.ask("Go.")
            await stopper
            return result

    result = asyncio.run(interrupted())
    assert result.terminal == "aborted_tools"
    _answered_once(result.messages)


def test_huge_answers_are_bounded(tmp_path: Path) -> None:
    """A large text result is saved to a file with a preview; an image the API would refuse
    (too large, or a type it does not take) is a note instead, lest every later request fail;
    10,000 tools are offered; a megabyte description is cut to ``DESCRIPTION_LIMIT``."""
    agent, _ = _agent(
        [_server("ok")], [_call("huge", size=2_000_000)], trace=tmp_path / "run.jsonl"
    )
    result = agent.run_sync("Go.")
    text = _only_text(_results(result.messages)["toolu_001"])
    assert "<persisted-output>" in text and len(text) < 5_000
    saved = tmp_path / "run.tool-results" / "toolu_001.txt"
    assert saved.stat().st_size == 2_000_000
    assert result.trace_path is not None and result.trace_path.stat().st_size < 100_000

    agent, _ = _agent(
        [_server("ok")],
        [
            _call("picture", type="image/png", size=8),
            _call("picture", type="image/png", size=IMAGE_LIMIT + 4),
            _call("picture", type="image/svg+xml", size=8),
        ],
    )
    results = _results(agent.run_sync("Go.").messages)
    assert isinstance(results["toolu_001"].content[0], ImageBlock)
    for call_id, what in [("toolu_002", "image/png"), ("toolu_003", "image/svg+xml")]:
        assert f"an image ({what}" in _only_text(results[call_id])

    agent, model = _agent([_server("many")], [_call("t9999")])
    result = agent.run_sync("Go.")
    assert len(model.requests[0].tools) == 10_000
    assert not _results(result.messages)["toolu_001"].is_error

    agent, model = _agent([_server("long-description")], [_call("echo", text="x")])
    agent.run_sync("Go.")
    (echo,) = (t for t in model.requests[0].tools if t["name"] == "mcp__b__echo")
    assert len(echo["description"]) == DESCRIPTION_LIMIT
    assert echo["description"].endswith("(cut from 1,000,000 characters)")


def test_secrets_in_results_stay_out_of_the_trace_and_controls_are_spelled_out(
    tmp_path: Path,
) -> None:
    """A result holding a server's token, a configured secret or an API key: redacted in
    the trace and on the terminal; its escape sequences are spelled out there."""
    hostile = f"title \x1b]0;owned\x07 clear \x1b[2J flip \u202e key {API_KEY}"
    agent, _ = _agent(
        [_server("ok", env={"GITHUB_TOKEN": TOKEN, "OTHER": CONFIGURED})],
        [
            _call("env", name="GITHUB_TOKEN"),
            _call("env", name="OTHER"),
            _call("echo", text=hostile),
        ],
        trace=tmp_path / "run.jsonl",
        secrets=[CONFIGURED],
    )
    console = Console(file=io.StringIO(), width=400, force_terminal=False)
    view = LiveView(console=console, secrets=agent.secrets)

    async def go() -> RunResult | None:
        found = None
        with view:
            async for update in agent.stream("Go."):
                found = view.show(update) or found
        return found

    result = asyncio.run(go())
    assert result is not None and result.trace_path is not None
    trace = result.trace_path.read_text()
    shown = console.file.getvalue()  # type: ignore[attr-defined]
    for secret in (TOKEN, CONFIGURED, API_KEY):
        assert secret not in trace and secret not in shown
    assert "\x1b" not in shown and "\u202e" not in shown
    assert "\\x1b]0;owned\\x07" in shown


def test_tool_names_that_collide_are_left_out_not_sent_twice() -> None:
    """An MCP tool named as one of the agent's own, or as another server's once normalized
    (``mcp__a___x`` is server ``a_``'s ``x`` and server ``a``'s ``_x``): the first keeps the
    name, the other is left out with a warning, and every request names each tool once."""

    @tool(name=mcp_tool_name("a", "mine"), description="The agent's own.")
    async def own(text: str) -> str:
        return "own"

    agent, model = _agent(
        [_server("named", "x", name="a_"), _server("named", "_x", "mine", "ok", name="a")],
        [{"tool_use": {"name": "mcp__a___x", "input": {}}}, _call("mine", "a", text="t")],
        tools=[own],
    )
    with pytest.warns(McpWarning) as warned:
        result = agent.run_sync("Go.")
    said = [str(w.message) for w in warned]
    assert any("'_x' left out" in text and "server 'a_'" in text for text in said)
    assert any("'mine' left out" in text and "agent's own" in text for text in said)
    names = [t["name"] for t in model.requests[0].tools]
    assert len(names) == len(set(names))
    assert "mcp__a__ok" in names
    results = _results(result.messages)
    assert "ran x" in str(results["toolu_001"].content)  # the first server's
    assert "own" in str(results["toolu_002"].content)


def test_an_http_server_that_cannot_be_reached_is_left_out() -> None:
    """Nothing listening at the URL: a warning naming the server, not a cancelled run (the
    transport's failure cancels the task that entered its task group)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # free, and closed again: nothing listens there
    agent, _ = _agent([McpServer.http("b", f"http://127.0.0.1:{port}/mcp")], [])
    with pytest.warns(McpWarning, match="MCP server 'b' left out of this run: it did not start"):
        result = agent.run_sync("Go.")
    assert result.terminal == "completed"


def test_an_http_server_that_goes_away_mid_run_is_left_out(
    notes_over_http: tuple[str, subprocess.Popen[bytes]],
) -> None:
    """The server is killed between two calls: the run completes, its tools are gone."""
    url, process = notes_over_http

    @tool(name="Kill", description="Stop the server.")
    async def kill() -> str:
        process.kill()
        process.wait(10)
        return "stopped"

    shout = {"tool_use": {"name": mcp_tool_name("notes", "shout"), "input": {"text": "x"}}}
    agent, model = _agent(
        [McpServer.http("notes", url)],
        [shout],
        [{"tool_use": {"name": "Kill", "input": {}}}],
        [shout],
        tools=[kill],
        allow={"Kill"},
    )
    with pytest.warns(McpWarning, match="MCP server 'notes' left out of this run"):
        result = agent.run_sync("Go.")
    assert result.terminal == "completed"
    results = _results(result.messages)
    assert not results["toolu_001"].is_error and results["toolu_003"].is_error
    assert [t["name"] for t in model.requests[-1].tools] == ["Kill"]
    _answered_once(result.messages)


def test_a_paged_tool_list_is_read_whole_and_an_endless_one_is_bounded() -> None:
    """Every page of a tool list is read; a server that always has a next page is read up to
    ``PAGE_LIMIT`` pages, with a warning."""
    agent, model = _agent([_server("pages")], [_call("p2")])
    result = agent.run_sync("Go.")
    assert [t["name"] for t in model.requests[0].tools] == [
        "mcp__b__p0",
        "mcp__b__p1",
        "mcp__b__p2",
    ]
    assert "ran p2" in str(_results(result.messages)["toolu_001"].content)

    agent, model = _agent([_server("endless")], [])
    with pytest.warns(McpWarning, match=f"only the first {PAGE_LIMIT} pages"):
        agent.run_sync("Go.")
    assert len(model.requests[0].tools) == PAGE_LIMIT


def test_what_a_warning_repeats_of_an_error_hides_credentials_and_controls() -> None:
    """An error quoting the server's URL shows ``***`` for its credentials; its terminal
    controls are spelled out (a warning is printed as it is) and a long one is cut."""
    from fsm_agent.runtime.mcp_tools import _reason

    server = McpServer.http("h", "https://user:hunter2pass@example.com/mcp?token=sekrit1234")
    error = RuntimeError(
        "GET https://user:hunter2pass@example.com/mcp?token=sekrit1234 failed \x1b]0;x\x07"
        + "!" * 2_000
    )
    said = _reason(error, server)
    assert "hunter2pass" not in said and "sekrit1234" not in said and "***" in said
    assert "\x1b" not in said and "\\x1b]0;x\\x07" in said
    assert len(said) < 700


def test_what_a_warning_repeats_of_a_servers_answer_hides_an_api_key() -> None:
    """A server's error text holding an API key (its answer to ``initialize``, say): the
    warning that repeats it shows its mask (``[REDACTED]`` padded to its length)."""
    from fsm_agent.runtime.mcp_tools import _reason

    said = _reason(RuntimeError(f"bad key {API_KEY} given"), _server("ok"))
    assert API_KEY[:20] not in said and f"bad key {mask(len(API_KEY))} given" in said


def test_a_run_cancelled_while_a_server_starts_stops_the_server(tmp_path: Path) -> None:
    """Ctrl-C while a server has not answered ``initialize``: the run is cancelled at once
    (not after ``timeout_s``) and the server's process is stopped."""
    pid_file = tmp_path / "pid"
    agent, _ = _agent([_server("hang-start", env={"PID_FILE": str(pid_file)}, timeout_s=60)])

    async def cancelled() -> float:
        task = asyncio.create_task(agent.run("Go."))
        for _ in range(200):
            if pid_file.exists():
                break
            await asyncio.sleep(0.1)
        task.cancel()
        began = time.monotonic()
        with pytest.raises(asyncio.CancelledError):
            await task
        return time.monotonic() - began

    assert asyncio.run(cancelled()) < 20
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def _offered(model: ScriptedModel, request: int = -1) -> list[str]:
    return [t["name"] for t in model.requests[request].tools]


def test_servers_that_hang_cost_one_timeout_together_and_tools_keep_their_order() -> None:
    """Four servers that never answer ``initialize`` are started alongside the others, not
    one after another: the run waits about one ``timeout_s``, not four. The tools come in the
    configured order whatever the order the servers answered in (``slow`` lists its tools
    two seconds after ``fast``), and the warnings too."""
    hung = [_server("hang-start", name=f"h{i}", timeout_s=6) for i in range(4)]
    slow = _server("named", "first", name="slow", env={"LIST_DELAY": "2"})
    fast = _server("named", "second", name="fast")
    agent, model = _agent([slow, *hung, fast], [_call("second", "fast")])
    began = time.monotonic()
    with pytest.warns(McpWarning) as warned:
        result = agent.run_sync("Go.")
    waited = time.monotonic() - began
    assert result.terminal == "completed"
    # One after another, the four would take 24 s at least; together about 6 s, and 11 s on a
    # machine loaded four times over: the bound leaves room for a slow machine either way.
    assert waited < 22, f"{waited:.1f} s: the hung servers were waited for one after another"
    said = [str(w.message) for w in warned if "did not start" in str(w.message)]
    assert [text.split("'")[1] for text in said] == ["h0", "h1", "h2", "h3"]
    assert _offered(model, 0) == ["mcp__slow__first", "mcp__fast__second"]
    assert "ran second" in str(_results(result.messages)["toolu_001"].content)


def test_listings_that_hang_cost_one_timeout_together() -> None:
    """Three servers that never answer their second listing: listed all at once, the run
    waits one ``timeout_s`` for them, not three, and goes on without them."""
    servers = [_server("hang-on-relist", name=f"r{i}", timeout_s=STARTS) for i in range(3)]
    agent, model = _agent(servers, [_call("echo", "r0", text="one")])
    began = time.monotonic()
    with pytest.warns(McpWarning, match="listing its tools failed"):
        result = agent.run_sync("Go.")
    waited = time.monotonic() - began
    assert result.terminal == "completed"
    # One after another, the three would take 30 s at least (40 s as measured).
    assert waited < 28, f"{waited:.1f} s: the listings were waited for one after another"
    assert not _results(result.messages)["toolu_001"].is_error
    assert _offered(model) == []


def _refuse(code: int, server: str = "b") -> dict[str, Any]:
    return _call("refuse", server, code=code)


def test_an_error_answer_is_that_calls_error_and_the_server_stays() -> None:
    """A server that answers a call with a JSON-RPC error (-32000, the code the ``mcp``
    client also gives a closed connection, an internal error, an application's own code)
    gives an error result for that call; it stays in the run, its tools offered and
    called, without a warning."""
    agent, model = _agent(
        [_server("ok")],
        [_refuse(-32000), _refuse(-32603), _refuse(42)],
        [_call("echo", text="still here")],
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", McpWarning)
        result = agent.run_sync("Go.")
    assert result.terminal == "completed"
    results = _results(result.messages)
    for call_id in ("toolu_001", "toolu_002", "toolu_003"):
        assert results[call_id].is_error
        assert "refused on purpose" in str(results[call_id].content)
    assert _only_text(results["toolu_004"]) == "still here"
    assert mcp_tool_name("b", "echo") in _offered(model)


def test_a_listing_answered_with_an_error_keeps_the_tools_last_listed() -> None:
    """A server whose next listing is answered with an error is still there: a warning says
    so, its tools as listed before are offered, and its calls still run."""
    agent, model = _agent(
        [_server("refuse-relist")],
        [_call("echo", text="one")],
        [_call("echo", text="two")],
    )
    with pytest.warns(McpWarning, match="listing its tools failed.*as last listed"):
        result = agent.run_sync("Go.")
    assert result.terminal == "completed"
    assert _only_text(_results(result.messages)["toolu_002"]) == "two"
    assert _offered(model) == _offered(model, 0)
    assert mcp_tool_name("b", "echo") in _offered(model)


def test_http_errors_fail_one_call_and_a_forgotten_session_ends_the_server(
    notes_over_http: tuple[str, subprocess.Popen[bytes]],
) -> None:
    """Over streamable HTTP, a 500, a 400 or a 429 answering one request, or a JSON-RPC
    error, is that call's error result, and the server serves on; once it no longer knows
    the session (a 404 to a request naming it), it is left out."""
    url, _ = notes_over_http

    def call(tool_name: str, **arguments: Any) -> dict[str, Any]:
        return _call(tool_name, "notes", **arguments)

    agent, model = _agent(
        [McpServer.http("notes", url)],
        [call("status", code=500), call("status", code=400), call("status", code=429)],
        [call("refuse", code=-32000), call("shout", text="alive")],
        [call("forget")],
        [call("shout", text="gone")],
    )
    with pytest.warns(McpWarning) as warned:
        result = agent.run_sync("Go.")
    assert result.terminal == "completed"
    results = _results(result.messages)
    for call_id in ("toolu_001", "toolu_002", "toolu_003", "toolu_004"):
        assert results[call_id].is_error
    assert "refused on purpose" in str(results["toolu_004"].content)
    assert _only_text(results["toolu_005"]) == "ALIVE"
    assert not results["toolu_006"].is_error
    assert results["toolu_007"].is_error
    left_out = [str(w.message) for w in warned if "left out of this run" in str(w.message)]
    assert len(left_out) == 1 and "'notes'" in left_out[0]
    assert mcp_tool_name("notes", "shout") in _offered(model, 2)
    assert _offered(model) == []
    _answered_once(result.messages)


def test_a_result_of_many_items_is_bounded(tmp_path: Path) -> None:
    """10,000 text items become ``CONTENT_LIMIT`` blocks (the text of the rest joined);
    10,000 images become ``IMAGES_PER_RESULT`` and a note; a 50 MB text is saved to a file,
    the model gets a preview, and the run goes on."""
    agent, _ = _agent(
        [_server("ok")],
        [
            _call("items", kind="text", count=10_000),
            _call("items", kind="image", count=10_000),
            _call("huge", size=50_000_000),
        ],
        [_call("echo", text="after")],
        trace=tmp_path / "run.jsonl",
    )
    result = agent.run_sync("Go.")
    assert result.terminal == "completed"
    results = _results(result.messages)
    texts = results["toolu_001"].content
    assert len(texts) == CONTENT_LIMIT
    joined = "\n".join(part.text for part in texts if isinstance(part, TextBlock))
    assert joined.count("i") == 10_000
    images = results["toolu_002"].content
    assert sum(isinstance(part, ImageBlock) for part in images) == IMAGES_PER_RESULT
    assert f"[{10_000 - IMAGES_PER_RESULT:,} more images left out" in str(images)
    huge = _only_text(results["toolu_003"])
    assert "<persisted-output>" in huge and len(huge) < 5_000
    assert (tmp_path / "run.tool-results" / "toolu_003.txt").stat().st_size == 50_000_000
    assert _only_text(results["toolu_004"]) == "after"


def test_requests_and_notifications_the_client_did_not_announce_are_refused_or_ignored() -> None:
    """A server that asks the client for a completion, a form or its roots mid-call gets an
    error for each (the client announced none of them) and its call still answers; tools
    said to have changed, a log line and progress for nothing are taken in stride."""
    agent, model = _agent([_server("ok")], [_call("ask")], [_call("echo", text="after")])
    with warnings.catch_warnings():
        warnings.simplefilter("error", McpWarning)
        result = agent.run_sync("Go.")
    assert result.terminal == "completed"
    results = _results(result.messages)
    said = _only_text(results["toolu_001"]).splitlines()
    assert said == [
        "sampling/createMessage: refused (Sampling not supported)",
        "elicitation/create: refused (Elicitation not supported)",
        "roots/list: refused (List roots not supported)",
    ]
    assert _only_text(results["toolu_002"]) == "after"
    assert mcp_tool_name("b", "ask") in _offered(model)


def test_a_tool_whose_input_schema_is_huge_is_left_out() -> None:
    """An input schema of two megabytes (it would ride on every request) leaves its tool
    out with a warning; the server's other tools are offered."""
    agent, model = _agent([_server("big-schema")], [_call("ask")])
    with pytest.warns(McpWarning, match=f"'echo' left out: its input schema .* {SCHEMA_LIMIT:,}"):
        agent.run_sync("Go.")
    offered = _offered(model, 0)
    assert mcp_tool_name("b", "echo") not in offered
    assert mcp_tool_name("b", "huge") in offered


@pytest.mark.parametrize("shape", ["result", "truncated"])
def test_an_answer_the_client_cannot_read_fails_that_call_at_once(shape: str) -> None:
    """A line the client cannot read as JSON-RPC, answering a call (its id is there): that
    call's error at once, not a wait for ``tool_timeout_ms``; the server stays."""
    agent, _ = _agent(
        [_server("ok")],
        [_call("garble", shape=shape)],
        [_call("echo", text="after")],
        config=LoopConfig(tool_timeout_ms=120_000),
    )
    started = time.monotonic()
    result = agent.run_sync("Go.")
    assert time.monotonic() - started < 60
    assert result.terminal == "completed"
    results = _results(result.messages)
    assert results["toolu_001"].is_error
    assert "could not be read" in str(results["toolu_001"].content)
    assert "after" in str(results["toolu_002"].content)


def test_what_a_warning_repeats_hides_every_configured_value_of_the_server() -> None:
    """A server's error may quote its configuration: the values of its environment variables
    and headers, under any name, and its URL's user info and query values show as ``***``
    (a token may hide under a name no rule knows); a short value is left."""
    from fsm_agent.runtime.mcp_tools import _reason

    http = McpServer.http(
        "h",
        "https://alice:pw-0123456@example.com/mcp?key=query-key-0123&sig=abc%2Fsig-0123",
        headers={"X-Goog-Key": "Token header-token-0123", "X-Mode": "on"},
    )
    error = RuntimeError(
        "GET https://alice:pw-0123456@example.com/mcp?key=query-key-0123&sig=abc/sig-0123: "
        "header-token-0123 refused (mode on)"
    )
    said = _reason(error, http)
    for value in ("alice", "pw-0123456", "query-key-0123", "abc/sig-0123", "header-token-0123"):
        assert value not in said, value
    assert "(mode on)" in said
    stdio = _server("ok", env={"SLACK_BOT": "xoxb-slack-0123", "DEBUG": "1"})
    said = _reason(RuntimeError("bot xoxb-slack-0123 refused, DEBUG=1"), stdio)
    assert "xoxb-slack-0123" not in said and "DEBUG=1" in said


def test_an_error_quoting_the_servers_environment_hides_it(tmp_path: Path) -> None:
    """A server answers a call with an error that quotes a value of the environment it was
    given under a name no rule knows: the call's error result, and so the trace, shows
    ``***`` in its place."""
    server = _server("ok", env={"SLACK_BOT": "xoxb-slack-0123456"})
    trace = tmp_path / "t.jsonl"
    agent, _ = _agent([server], [_call("refuse", quote="SLACK_BOT")], trace=trace)
    result = agent.run_sync("Go.")
    refused = _results(result.messages)["toolu_001"]
    assert refused.is_error and "refused on purpose ***" in str(refused.content)
    assert b"xoxb-slack-0123456" not in trace.read_bytes()
