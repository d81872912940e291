"""Fault injection after a side-effecting tool block, through the real SDK and the fake server.

The model asks for ``Append`` (not read-only: it appends a line to ``effects.log``), and then
the response or the next request fails: a dropped connection, a stall past the idle watchdog,
a 413, a prompt-too-long 400, a storm of 529s, an SSE ``error`` event, a stream cut before
``message_stop``. Each test checks, by reading the file, that the side effect happened at most
once (SPEC §5.2 "Ours": a side effect waits for the whole response), and, from the requests the
server received, that the model was told what really happened: a call that ran is shown with
its result in the next request, and a call of a withdrawn response never appears as if it ran.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from fsm_agent.core.config import LoopConfig
from fsm_agent.runtime.agent import Agent, RunResult
from fsm_agent.runtime.models import AnthropicModel
from fsm_agent.runtime.tool import Tool, ToolContext, tool
from fsm_agent.testing.fake_server import FakeAnthropicServer
from fsm_agent.testing.strategies import events_through_first_block
from fsm_agent.trace.replay import replay

MODEL = "claude-primary"
FALLBACK = "claude-fallback"
LOG = "effects.log"
APPEND = {"tool_use": {"name": "Append", "input": {"line": "first"}}}
DONE = {"content": [{"text": "Appended."}]}
SUMMARY = {"content": [{"text": "The user asked for a line; Append wrote it."}]}


@tool(name="Append", description="Append a line to effects.log.")
async def append(*, line: str, ctx: ToolContext) -> str:
    """Append ``line`` to the log file in the working directory."""
    with (ctx.cwd / LOG).open("a", encoding="utf-8") as file:
        file.write(line + "\n")
    return f"appended {line}"


TOOLS: list[Tool[Any]] = [append]


def asks_then_fails(error: dict[str, Any]) -> dict[str, Any]:
    """A response asking for Append, then failing soon after the tool block has closed.

    Each event comes 60 ms after the last, and the failure follows the event after the tool
    block's stop, so the call would have had time to run if it started when its block closed.
    """
    content = [APPEND, {"text": "Now let me explain what I did."}]
    return {
        "content": content,
        "delay_ms": 60,
        "error": {**error, "mid_stream_after": events_through_first_block(content) + 1},
    }


def run(serve: Any, tmp_path: Path, steps: list[dict[str, Any]], **config: Any) -> Any:
    """Play ``steps`` on the fake server with the real SDK; return the server and the result."""
    server: FakeAnthropicServer = serve({"steps": steps})
    work = tmp_path / "work"
    work.mkdir()
    values: dict[str, Any] = {"model": MODEL, "retry_base_ms": 1, "retry_cap_ms": 5}
    values.update(config)

    async def go() -> RunResult:
        async with AnthropicModel(
            name=MODEL, api_key="sk-test", base_url=server.base_url, timeout=10.0
        ) as model:
            agent = Agent(
                model=model,
                tools=TOOLS,
                config=LoopConfig(**values),
                trace=tmp_path / "trace.jsonl",
                cwd=work,
            )
            return await agent.run("Append a line, please.")

    result = asyncio.run(go())
    assert result.trace_path is not None
    assert replay(result.trace_path).terminal == result.terminal
    return server, result, work


def appended(work: Path) -> list[str]:
    """The lines Append wrote (one per time the side effect happened)."""
    path = work / LOG
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def blocks_sent(server: FakeAnthropicServer, index: int, kind: str) -> list[dict[str, Any]]:
    """The blocks of one type in the messages of request ``index``."""
    body = server.message_requests[index].body
    assert isinstance(body, dict)
    return [
        block
        for message in body["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == kind
    ]


def assert_told_it_ran_once(server: FakeAnthropicServer, index: int) -> None:
    """Request ``index`` shows the model one Append call, answered with its real result."""
    (use,) = blocks_sent(server, index, "tool_use")
    (result,) = blocks_sent(server, index, "tool_result")
    assert use["name"] == "Append"
    assert result["tool_use_id"] == use["id"]
    assert "appended first" in str(result["content"])
    assert not result.get("is_error")


def assert_withdrawn_call_not_shown(server: FakeAnthropicServer, index: int) -> None:
    """Request ``index`` (the re-request) shows no call of the withdrawn response."""
    assert blocks_sent(server, index, "tool_use") == []
    assert blocks_sent(server, index, "tool_result") == []


def check_retried_after_tool_block(serve: Any, tmp_path: Path, error: dict[str, Any],
                                   **config: Any) -> None:  # fmt: skip
    """The failing response's Append never ran; the retry's Append ran once and was reported."""
    steps = [asks_then_fails(error), {"content": [APPEND]}, DONE]
    server, result, work = run(serve, tmp_path, steps, **config)
    assert result.terminal == "completed"
    assert appended(work) == ["first"]
    assert len(server.message_requests) == 3
    assert_withdrawn_call_not_shown(server, 1)
    assert_told_it_ran_once(server, 2)


def test_dropped_connection_after_a_side_effect_block(serve: Any, tmp_path: Path) -> None:
    """A connection dropped after the Append block: the side effect happens once, after the
    retried response, and the model is told of that one call."""
    check_retried_after_tool_block(serve, tmp_path, {"kind": "connection"})


def test_stall_past_the_idle_watchdog_after_a_side_effect_block(serve: Any, tmp_path: Path) -> None:
    """A stream that stalls after the Append block is abandoned by the idle watchdog; the
    side effect happens once, and the model is told of that one call."""
    check_retried_after_tool_block(
        serve, tmp_path, {"kind": "timeout", "stall_ms": 5_000}, stream_idle_timeout_ms=300
    )


def test_mid_stream_error_event_after_a_side_effect_block(serve: Any, tmp_path: Path) -> None:
    """An SSE error event after the Append block: once, and the model is told."""
    check_retried_after_tool_block(serve, tmp_path, {"kind": "server_error"})


def test_truncated_stream_after_a_side_effect_block(serve: Any, tmp_path: Path) -> None:
    """A stream that ends without message_stop after the Append block: once, and told."""
    check_retried_after_tool_block(serve, tmp_path, {"kind": "truncated"})


def test_overloaded_storm_after_side_effect_blocks_falls_back(serve: Any, tmp_path: Path) -> None:
    """Three responses each fail with an overloaded error event after their Append block;
    the loop falls back to another model, and Append runs once, for the fallback's answer."""
    storm = [asks_then_fails({"kind": "overloaded"}) for _ in range(3)]
    server, result, work = run(
        serve,
        tmp_path,
        [*storm, {"content": [APPEND]}, DONE],
        fallback_model=FALLBACK,
        overloaded_before_fallback=3,
    )
    assert result.terminal == "completed"
    assert appended(work) == ["first"]
    bodies = [r.body for r in server.message_requests]
    assert [b["model"] for b in bodies if isinstance(b, dict)][3:] == [FALLBACK, FALLBACK]
    for index in (1, 2, 3):
        assert_withdrawn_call_not_shown(server, index)
    assert_told_it_ran_once(server, 4)


def check_refused_after_the_call(serve: Any, tmp_path: Path, error: dict[str, Any]) -> None:
    """Append runs, the next request is refused as too large; reactive compaction summarises
    (the summary request shows the one call and its result) and Append is not run again."""
    steps = [{"content": [APPEND]}, {"error": error}, SUMMARY, DONE]
    server, result, work = run(serve, tmp_path, steps)
    assert result.terminal == "completed"
    assert appended(work) == ["first"]
    assert len(server.message_requests) == 4
    assert_told_it_ran_once(server, 1)  # the refused request
    assert_told_it_ran_once(server, 2)  # the summary request: the model is told it ran
    final = server.message_requests[3].body
    assert isinstance(final, dict)
    assert "Append wrote it" in str(final["messages"])


def test_request_too_large_413_after_a_side_effect(serve: Any, tmp_path: Path) -> None:
    """A 413 on the request after Append ran: compacted and continued, Append ran once."""
    check_refused_after_the_call(serve, tmp_path, {"kind": "request_too_large"})


def test_prompt_too_long_after_a_side_effect(serve: Any, tmp_path: Path) -> None:
    """A prompt-too-long 400 on the request after Append ran: compacted, Append ran once."""
    check_refused_after_the_call(serve, tmp_path, {"kind": "prompt_too_long"})


def test_a_retry_that_reuses_a_withdrawn_call_id_ends_in_model_error(
    serve: Any, tmp_path: Path
) -> None:
    """A retried response whose tool_use reuses the id of the withdrawn call ends in
    ``model_error`` naming the id (it used to hang), and Append never runs."""
    reused = {"tool_use": {**APPEND["tool_use"], "id": "toolu_reused"}}
    failing = asks_then_fails({"kind": "connection"})
    failing["content"] = [reused, *failing["content"][1:]]
    server, result, work = run(serve, tmp_path, [failing, {"content": [reused]}, DONE])
    assert result.terminal == "model_error"
    assert appended(work) == []
    assert len(server.message_requests) == 2
    shown = " ".join(str(m) for m in result.messages)
    assert "toolu_reused" in shown
    assert "already used in this run" in shown
