"""Text that was not UTF-8 reaching a request, through the real SDK against the fake server.

Bytes pasted or piped into a prompt that are not UTF-8 reach Python as lone surrogates
(``"\\udcff"``), which no request body can carry: found, such a prompt ended the run
``model_error`` (``UnicodeEncodeError``) before a byte was sent, and a conversation holding it
failed every turn after. A person's text is written with ``\\uXXXX`` escapes as it enters (as
the trace holds it, so a replay reads what the run saw); text from anywhere else (messages
given whole, a hook's) is escaped in the request when the SDK cannot encode it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from fsm_agent.core.config import LoopConfig
from fsm_agent.core.messages import Message, TextBlock, UserMessage
from fsm_agent.runtime.agent import Agent, RunResult
from fsm_agent.runtime.models import AnthropicModel
from fsm_agent.testing.fake_server import FakeAnthropicServer
from fsm_agent.trace.replay import replay

ServeFn = Callable[[Any], FakeAnthropicServer]
PASTED = "look at caf\udce9 \udcff\udcfe"  # latin-1 and binary bytes, decoded as os.fsdecode does
ESCAPED = "look at caf\\udce9 \\udcff\\udcfe"


def agent_run(
    server: FakeAnthropicServer, tmp_path: Path, prompt: str | Sequence[Message]
) -> RunResult:
    async def go() -> RunResult:
        async with AnthropicModel(
            name="claude-test", api_key="sk-test", base_url=server.base_url, timeout=5.0
        ) as model:
            agent = Agent(
                model=model,
                config=LoopConfig(model="claude-test", count_tokens=True),
                trace=tmp_path / "trace.jsonl",
                cwd=tmp_path,
                store=False,
            )
            return await agent.run(prompt)

    return asyncio.run(go())


def sent_texts(server: FakeAnthropicServer) -> list[str]:
    """The first message's text in every request the server saw (counting and sending)."""
    return [request.body["messages"][0]["content"][0]["text"] for request in server.requests]


@pytest.mark.parametrize(
    "prompt",
    [PASTED, [UserMessage(uuid="u1", content=(TextBlock(text=PASTED),))]],
    ids=["typed", "messages given whole"],
)
def test_text_that_was_not_utf8_is_sent_escaped(
    serve: ServeFn, tmp_path: Path, prompt: str | list[Message]
) -> None:
    server = serve({"steps": [{"content": [{"text": "done"}]}]})
    result = agent_run(server, tmp_path, prompt)
    assert result.terminal == "completed"
    assert [request.path for request in server.requests] == [
        "/v1/messages/count_tokens",
        "/v1/messages",
    ]
    assert sent_texts(server) == [ESCAPED, ESCAPED]
    assert result.trace_path is not None
    assert replay(result.trace_path).terminal == "completed"


def test_a_conversation_goes_on_after_such_a_prompt(serve: ServeFn, tmp_path: Path) -> None:
    """A session's prompt and a message sent to it: every later turn still reaches the model."""
    server = serve({"steps": [{"content": [{"text": "one"}]}, {"content": [{"text": "two"}]}]})

    async def talk() -> list[RunResult]:
        async with AnthropicModel(
            name="claude-test", api_key="sk-test", base_url=server.base_url, timeout=5.0
        ) as model:
            agent = Agent(model=model, trace=f"{tmp_path}/t/", cwd=tmp_path, store=False)
            session = agent.session(changed_files=False)
            first = await session.ask(PASTED)
            session.send("and \udcff again")
            return [first, await session.ask()]

    results = asyncio.run(talk())
    assert [result.terminal for result in results] == ["completed", "completed"]
    last = server.requests[-1].body["messages"]
    assert last[0]["content"][0]["text"] == ESCAPED
    assert last[-1]["content"][0]["text"] == "and \\udcff again"
