"""Conformance with the real wire: every recorded stream in ``../shared/real-streams/``.

Each recording is served byte for byte by ``FakeAnthropicServer`` on 127.0.0.1, read by the
real ``anthropic`` SDK, and run through ``Agent``; the same bytes are then read by the SDK's
own ``messages.stream`` helper. The run must not fail, and the message the loop assembled must
equal the one the SDK's accumulator built: block types, text, citations, tool inputs, thinking
and signatures, opaque blocks, stop reason and details, usage.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from fsm_agent.core.config import LoopConfig
from fsm_agent.core.messages import AssistantMessage, Message
from fsm_agent.core.normalize import assistant_block_to_api
from fsm_agent.runtime.agent import Agent, RunResult
from fsm_agent.runtime.models import AnthropicModel
from fsm_agent.testing.fake_server import FakeAnthropicServer
from fsm_agent.testing.scenario import parse_scenario

# Beside the checkout (as CI lays it out), or where FSM_AGENT_REAL_STREAMS points.
STREAMS = Path(
    os.environ.get("FSM_AGENT_REAL_STREAMS")
    or Path(__file__).resolve().parents[2].parent / "shared" / "real-streams"
)
RECORDINGS = sorted(STREAMS.glob("*.sse")) if STREAMS.is_dir() else []
MODEL = "claude-recorded"
API_KEY = "sk-test-conformance"
# Terminal reasons of a run that did not fail: one model response, then the turn limit.
NOT_FAILED = {"completed", "max_turns", "refusal"}

pytestmark = pytest.mark.skipif(
    not RECORDINGS,
    reason=f"the recorded real streams are not here ({STREAMS} is absent or empty)",
)


def _run_agent(base_url: str) -> RunResult:
    agent = Agent(
        model=AnthropicModel(name=MODEL, api_key=API_KEY, base_url=base_url),
        config=LoopConfig(model=MODEL, max_turns=1, max_retries=0),
        trace=False,
    )
    return asyncio.run(asyncio.wait_for(agent.run("Replay the recording."), 20))


async def _sdk_message(base_url: str) -> dict[str, Any]:
    import anthropic

    client = anthropic.AsyncAnthropic(api_key=API_KEY, base_url=base_url, max_retries=0)
    try:
        async with client.messages.stream(
            model=MODEL,
            max_tokens=1024,
            messages=[{"role": "user", "content": "Replay the recording."}],
        ) as stream:
            message = await stream.get_final_message()
    finally:
        await client.close()
    # warnings=False: the SDK's models warn when they dump a block type they do not know.
    dumped: dict[str, Any] = message.model_dump(mode="json", warnings=False)
    return dumped


def _assembled(messages: tuple[Message, ...]) -> list[AssistantMessage]:
    return [m for m in messages if isinstance(m, AssistantMessage)]


def _without_nulls(value: Any) -> Any:
    """A JSON value with null-valued keys removed (the SDK's models add a null for every
    optional field the wire left out)."""
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def _sdk_block(block: dict[str, Any]) -> dict[str, Any]:
    kept = _without_nulls(block)
    if kept.get("type") == "text" and not kept.get("citations"):
        kept.pop("citations", None)  # [] and absent mean the same: no citations
    kept.pop("parsed_output", None)  # the SDK's own field for structured output
    return kept


def _our_blocks(assistant: list[AssistantMessage]) -> list[dict[str, Any]]:
    # Each block in the API's shape, the shape in which it goes back in the next request.
    blocks = [assistant_block_to_api(block) for m in assistant for block in m.content]
    return [_without_nulls(block) for block in blocks if block is not None]


@pytest.mark.parametrize("recording", RECORDINGS, ids=[path.stem for path in RECORDINGS])
def test_recording_assembles_as_the_sdk_does(recording: Path) -> None:
    """A real recorded stream runs without failing and assembles exactly as the SDK does."""
    body = recording.read_text(encoding="utf-8")
    scenario = parse_scenario({"steps": [{"sse": body}, {"sse": body}]})
    with FakeAnthropicServer(scenario) as server:
        result = _run_agent(server.base_url)
        sdk = asyncio.run(_sdk_message(server.base_url))

    assert result.terminal in NOT_FAILED, result.terminal
    assistant = _assembled(result.messages)
    assert {m.message_id for m in assistant} == {sdk["id"]}
    last = assistant[-1]
    assert last.stop_reason == sdk["stop_reason"]
    assert last.stop_details == sdk.get("stop_details")

    sdk_blocks = [_sdk_block(block) for block in sdk["content"]]
    ours = _our_blocks(assistant)
    assert [b["type"] for b in ours] == [b["type"] for b in sdk_blocks]
    for our, theirs in zip(ours, sdk_blocks, strict=True):
        # Everything the SDK kept, we kept; ours may hold more (the SDK ignores the deltas
        # of block types it does not know, such as compaction_delta).
        assert {key: our.get(key) for key in theirs} == theirs

    usage = sdk["usage"]
    ours_usage = last.usage
    assert ours_usage.input_tokens == usage["input_tokens"]
    assert ours_usage.output_tokens == usage["output_tokens"]
    assert ours_usage.cache_creation_input_tokens == (usage.get("cache_creation_input_tokens") or 0)
    assert ours_usage.cache_read_input_tokens == (usage.get("cache_read_input_tokens") or 0)
    assert ours_usage.service_tier == usage.get("service_tier")
    assert ours_usage.server_tool_use == _without_nulls(usage.get("server_tool_use"))
    assert ours_usage.cache_creation == _without_nulls(usage.get("cache_creation"))


def test_recordings_cover_the_wire() -> None:
    """The recordings used here include server tools, citations, thinking and opaque blocks."""
    manifest = json.loads((STREAMS / "MANIFEST.json").read_text(encoding="utf-8"))
    blocks = {kind for entry in manifest for kind in entry["blocks"]}
    assert {"server_tool_use", "web_search_tool_result", "thinking", "tool_use"} <= blocks
    assert {"compaction", "fallback"} <= blocks


def _split_span(body: str) -> tuple[str, int] | None:
    """Text of a block that real deltas split: the characters on both sides of the first cut
    between two pieces of a text, thinking or tool-input block (8 each at most, 6 at least in
    all; letters, digits and inner spaces only, so that in a tool input's JSON it lies in a
    string, as a credential would), and the index of the block; None when the recording has
    no such cut."""
    from fsm_agent.testing.scenario import sse_frames
    from fsm_agent.trace.stream_text_holdback import text_key

    last: dict[int, str] = {}
    for _name, data in sse_frames(body):
        raw = json.loads(data) if data.startswith("{") else None
        shape = text_key(raw)
        if raw is None or shape is None:
            continue
        piece = raw["delta"][shape[2]]
        before = last.get(shape[0])
        if before and piece:
            span = before[-8:] + piece[:8]
            if len(span) >= 6 and span.strip() == span and _PLAIN.fullmatch(span):
                return span, shape[0]
        last[shape[0]] = piece
    return None


_PLAIN = re.compile(r"[A-Za-z0-9 ]+")
SPLIT = [(path, _split_span(path.read_text(encoding="utf-8"))) for path in RECORDINGS]


@pytest.mark.parametrize(
    ("recording", "split"),
    [(path, split) for path, split in SPLIT if split is not None],
    ids=[path.stem for path, split in SPLIT if split is not None],
)
def test_a_secret_split_by_real_deltas_is_not_written(
    recording: Path, split: tuple[str, int], tmp_path: Path
) -> None:
    """Text the real wire cut between two deltas, taken as a secret: the trace holds it in
    neither piece nor in both, and still replays."""
    from fsm_agent.trace.replay import replay

    secret, _index = split
    body = recording.read_text(encoding="utf-8")
    with FakeAnthropicServer(parse_scenario({"steps": [{"sse": body}]})) as server:
        agent = Agent(
            model=AnthropicModel(name=MODEL, api_key=API_KEY, base_url=server.base_url),
            config=LoopConfig(model=MODEL, max_turns=1, max_retries=0),
            trace=tmp_path / "trace.jsonl",
            secrets=[secret],
            store=False,
        )
        result = asyncio.run(asyncio.wait_for(agent.run("Replay the recording."), 20))
    assert result.terminal in NOT_FAILED, result.terminal
    assert result.trace_path is not None
    content = result.trace_path.read_bytes()
    assert json.dumps(secret)[1:-1].encode() not in content
    pieces: list[str] = []
    for line in content.splitlines()[1:]:
        raw = json.loads(line).get("event", {}).get("event")
        if isinstance(raw, dict) and raw.get("type") == "content_block_delta":
            pieces.extend(str(value) for key, value in raw["delta"].items() if key != "type")
    assert secret not in "".join(pieces)
    assert replay(result.trace_path).terminal == result.terminal
