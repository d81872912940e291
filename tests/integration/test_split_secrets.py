"""A secret the model streams in pieces, through the real SDK against the fake server.

A model streams a few characters per delta, so a token it writes (read from a file, say)
arrives split: found, each piece was redacted on its own, none held the secret whole, and the
trace held it in parts that replay (and anyone) joined again; the trace did not replay either,
for its effects held the message redacted. The writer now holds back the end of a piece that
may begin a secret until the next piece says whether it does.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

import attrs
import orjson
import pytest

from fsm_agent.core.config import LoopConfig
from fsm_agent.runtime.agent import Agent, RunResult
from fsm_agent.runtime.models import AnthropicModel, Model, ModelRequest
from fsm_agent.runtime.tool import ProgressCallback, Tool, ToolContext, ToolOutput, tool
from fsm_agent.testing.fake_server import FakeAnthropicServer
from fsm_agent.testing.scenario import Scenario, ScriptedModel, parse_scenario
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


async def _agent_run(
    model: Model, tmp_path: Path, secret: str, tools: Sequence[Tool[Any]] = (note,)
) -> RunResult:
    """The agent with ``tools`` and ``secret``, run on ``model``, traced in ``tmp_path``."""
    agent = Agent(
        model=model,
        tools=list(tools),
        config=LoopConfig(model="claude-test"),
        trace=tmp_path / "trace.jsonl",
        cwd=tmp_path,
        secrets=[secret],
        store=False,
    )
    return await agent.run("go")


def _run(server: FakeAnthropicServer, tmp_path: Path, secret: str) -> RunResult:
    """The agent with ``note`` and ``secret``, through the real SDK, traced in ``tmp_path``."""

    async def go() -> RunResult:
        async with AnthropicModel(
            name="claude-test", api_key="sk-test", base_url=server.base_url, timeout=5.0
        ) as model:
            return await _agent_run(model, tmp_path, secret)

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


OUTPUT = f"TOKEN={SECRET}\nHOME=/root\n"
"""What the tool reads, reported as progress in pieces that split the secret."""


@attrs.frozen
class _DumpInput:
    path: str


class _Dump(Tool[_DumpInput]):
    """A read-only tool (so it starts while the model still streams, SPEC §2) that reports
    what it reads in pieces of five characters, then lets the model go on."""

    name = "dump"
    description = "Print a file."
    input_type = _DumpInput

    def __init__(self) -> None:
        super().__init__()
        self.reported = asyncio.Event()

    def is_read_only(self, data: _DumpInput) -> bool:
        return True

    def is_concurrency_safe(self, data: _DumpInput) -> bool:
        return True

    async def call(
        self, data: _DumpInput, ctx: ToolContext, progress: ProgressCallback
    ) -> ToolOutput:
        for start in range(0, len(OUTPUT), 5):
            progress(OUTPUT[start : start + 5])
            await asyncio.sleep(0)
        self.reported.set()
        return ToolOutput(content=OUTPUT)


class _WaitsForTheTool(ScriptedModel):
    """Streams the text of its first answer up to the middle of the secret, then waits
    until the tool has reported its output: the tool's events come between two pieces of
    the secret."""

    def __init__(self, scenario: Scenario, tool: _Dump, *, waits_before: int) -> None:
        super().__init__(scenario, name="claude-test")
        self.tool = tool
        self.waits_before = waits_before

    async def stream(self, request: ModelRequest) -> AsyncIterator[dict[str, Any]]:
        pieces = 0
        async for event in super().stream(request):
            if event["type"] == "content_block_delta" and event["delta"]["type"] == "text_delta":
                pieces += 1
                if pieces == self.waits_before:
                    await asyncio.wait_for(self.tool.reported.wait(), timeout=5.0)
            yield event


def test_a_secret_split_by_a_tools_events_mid_stream_is_never_written(tmp_path: Path) -> None:
    """Found: a tool's events between two pieces of a block had the held piece written
    whole, so the secret went to the file in two parts; and each progress text of the
    tool's output was redacted on its own, so the secret split between two went too."""
    said = f"the token is {SECRET} ok"
    first = {
        "content": [{"tool_use": {"name": "dump", "input": {"path": ".env"}}}, {"text": said}],
        "chunk": 4,
    }
    scenario = parse_scenario({"steps": [first, {"content": [{"text": "done"}]}]})
    tool = _Dump()
    # The fifth piece of text is inside the secret: "the ", "toke", "n is", " ghp", "_con".
    model = _WaitsForTheTool(scenario, tool, waits_before=5)

    async def go() -> RunResult:
        async with asyncio.timeout(20):
            return await _agent_run(model, tmp_path, SECRET, [tool])

    result = asyncio.run(go())
    assert result.terminal == "completed"
    assert result.trace_path is not None
    content = result.trace_path.read_bytes()
    assert SECRET.encode() not in content
    events = [orjson.loads(line)["event"] for line in content.splitlines()[1:-1]]
    said_pieces = [
        place
        for place, event in enumerate(events)
        if event.get("event", {}).get("delta", {}).get("type") == "text_delta"
        and event["event"]["index"] == 1
    ]
    # The tool's events came between the fourth piece and the fifth, in the secret.
    between = {event["type"] for event in events[said_pieces[3] + 1 : said_pieces[4]]}
    assert {"ToolInputValidated", "PermissionDecided", "ToolProgressReported"} <= between
    assert f"the token is {mask(len(SECRET))} ok" in _joined_pieces(result.trace_path)
    reported = "".join(event["text"] for event in events if event["type"] == "ToolProgressReported")
    assert reported == OUTPUT.replace(SECRET, mask(len(SECRET)))
    assert replay(result.trace_path).terminal == "completed"
