"""A secret the model streams in pieces, through the real SDK against the fake server.

A model streams a few characters per delta, so a token it writes (read from a file, say)
arrives split: found, each piece was redacted on its own, none held the secret whole, and the
trace held it in parts that replay (and anyone) joined again; the trace did not replay either,
for its effects held the message redacted. The writer now holds back the end of a piece that
may begin a secret until the next piece says whether it does.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from fsm_agent.core.config import LoopConfig
from fsm_agent.runtime.agent import Agent, RunResult
from fsm_agent.runtime.models import AnthropicModel
from fsm_agent.runtime.tool import tool
from fsm_agent.testing.fake_server import FakeAnthropicServer
from fsm_agent.trace.redact import mask
from fsm_agent.trace.replay import replay

ServeFn = Callable[[Any], FakeAnthropicServer]
SECRET = "ghp_configured0secret0value"
KEY = "sk-ant-api03-streamed_in-pieces-0123456789"
SAID = f"the token is {SECRET}, the key {KEY}"


@tool(description="Remember a note.")
async def note(text: str) -> str:
    return "noted"


def _steps(kind: str) -> list[dict[str, Any]]:
    if kind == "text":
        return [{"content": [{"text": SAID}]}]
    if kind == "thinking":
        return [{"content": [{"thinking": SAID}, {"text": "done"}]}]
    return [
        {"content": [{"tool_use": {"name": "note", "input": {"text": SAID}}}]},
        {"content": [{"text": "done"}]},
    ]


def _run(server: FakeAnthropicServer, tmp_path: Path, secret: str) -> RunResult:
    """The agent with ``note`` and ``secret``, through the real SDK, traced in ``tmp_path``."""

    async def go() -> RunResult:
        async with AnthropicModel(
            name="claude-test", api_key="sk-test", base_url=server.base_url, timeout=5.0
        ) as model:
            agent = Agent(
                model=model,
                tools=[note],
                config=LoopConfig(model="claude-test"),
                trace=tmp_path / "trace.jsonl",
                cwd=tmp_path,
                secrets=[secret],
                store=False,
            )
            return await agent.run("go")

    return asyncio.run(go())


def _joined_pieces(trace: Path) -> str:
    """Every streamed piece of text in the trace, joined in order."""
    pieces = []
    for line in trace.read_bytes().splitlines()[1:]:
        raw = orjson.loads(line).get("event", {}).get("event")
        if isinstance(raw, dict) and raw.get("type") == "content_block_delta":
            delta = raw["delta"]
            pieces.append(delta.get("text") or delta.get("thinking") or delta.get("partial_json"))
    return "".join(piece for piece in pieces if piece)


@pytest.mark.parametrize("chunk", [1, 3, 7])
@pytest.mark.parametrize("kind", ["text", "thinking", "tool input"])
def test_a_secret_streamed_in_pieces_is_never_written(
    serve: ServeFn, tmp_path: Path, kind: str, chunk: int
) -> None:
    steps = [{**step, "chunk": chunk} for step in _steps(kind)]
    server = serve({"steps": steps})

    result = _run(server, tmp_path, SECRET)
    assert result.terminal == "completed"
    assert result.trace_path is not None
    joined = _joined_pieces(result.trace_path)
    assert f"the token is {mask(len(SECRET))}, the key {mask(len(KEY))}" in joined
    content = result.trace_path.read_bytes()
    for secret in (SECRET, KEY):
        assert secret.encode() not in content
        assert secret not in joined
    assert replay(result.trace_path).terminal == "completed"


ODD = 'pa"ss\\word-0123'
"""A secret with a quote and a backslash: a tool input's JSON text spells it ``pa\\"ss\\\\word``."""


@pytest.mark.parametrize("chunk", [None, 1, 4])
def test_a_secret_a_tool_input_spells_escaped_is_never_written(
    serve: ServeFn, tmp_path: Path, chunk: int | None
) -> None:
    """Found: such a secret was written in clear in the tool input's pieces (the redactor
    looked for it as it is, the pieces hold it escaped), and the trace did not replay (its
    effects hold the parsed input, redacted)."""
    step: dict[str, Any] = {"content": [{"tool_use": {"name": "note", "input": {"text": ODD}}}]}
    if chunk is not None:
        step["chunk"] = chunk
    server = serve({"steps": [step, {"content": [{"text": "done"}]}]})

    result = _run(server, tmp_path, ODD)
    assert result.terminal == "completed"
    assert result.trace_path is not None
    content = result.trace_path.read_bytes()
    for spelling in ("ss\\word", "ss\\\\word"):  # as in a string, and as in JSON text
        assert orjson.dumps(spelling)[1:-1] not in content
    assert f'{{"text": "{mask(len(ODD))}"}}' in _joined_pieces(result.trace_path)
    assert replay(result.trace_path).terminal == "completed"
