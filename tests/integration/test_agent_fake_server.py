"""A whole Agent run through the real anthropic SDK against the fake server, one fault at a time.

Each test plays a scenario on ``FakeAnthropicServer`` (127.0.0.1), drives ``Agent`` with
``AnthropicModel`` and the built-in tools in ``tmp_path``, and checks the named transitions
(DESIGN §8), the requests the server saw, and the trace the run wrote.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fsm_agent.core.config import LoopConfig
from fsm_agent.core.messages import (
    ApiErrorMessage,
    AssistantMessage,
    Message,
    TombstoneMessage,
    text_of,
    tool_results,
    tool_uses,
)
from fsm_agent.core.texts import SUMMARY_PREFIX, SUMMARY_REQUEST
from fsm_agent.runtime.agent import Agent, RunResult
from fsm_agent.runtime.models import AnthropicModel
from fsm_agent.testing.fake_server import FakeAnthropicServer
from fsm_agent.testing.token_count import estimated_input_tokens
from fsm_agent.toolbox import default_tools
from fsm_agent.trace.reader import read_trace
from fsm_agent.trace.replay import replay

ServeFn = Callable[[Any], FakeAnthropicServer]  # the ``serve`` fixture (conftest.py)
API_KEY = "sk-test-secret"
MODEL = "claude-primary"
FALLBACK = "claude-fallback"
REPLY = "All done here."
SUMMARY = "The user asked for a tour; nothing else happened yet."


def fast_config(**overrides: Any) -> LoopConfig:
    """A config whose backoff does not slow the tests down."""
    values: dict[str, Any] = {"model": MODEL, "retry_base_ms": 1, "retry_cap_ms": 5}
    values.update(overrides)
    return LoopConfig(**values)


def run_agent(
    server: FakeAnthropicServer,
    tmp_path: Path,
    *,
    config: LoopConfig | None = None,
    timeout: float = 5.0,
    prompt: str = "Tell me about this project.",
) -> RunResult:
    """Run an Agent on the server's scenario; the trace goes to ``tmp_path/trace.jsonl``."""
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    (work / "README.md").write_text("# Demo\n\nA small project.\n", encoding="utf-8")

    async def go() -> RunResult:
        async with AnthropicModel(
            name=MODEL, api_key=API_KEY, base_url=server.base_url, timeout=timeout
        ) as model:
            agent = Agent(
                model=model,
                tools=default_tools(),
                config=config if config is not None else fast_config(),
                trace=tmp_path / "trace.jsonl",
                cwd=work,
            )
            return await agent.run(prompt)

    return asyncio.run(go())


def loop_transitions(result: RunResult) -> list[str]:
    """The loop machine's transition names, in order, read back from the run's trace."""
    assert result.trace_path is not None
    trace = read_trace(result.trace_path)
    return [r.data["name"] for r in trace.of_kind("transition") if r.data["machine"] == "loop"]


def call_model_effects(result: RunResult) -> list[dict[str, Any]]:
    """Every CallModel effect of the run, from its trace."""
    assert result.trace_path is not None
    trace = read_trace(result.trace_path)
    effects = [r.data["effect"] for r in trace.of_kind("effect")]
    return [e for e in effects if e["type"] == "CallModel"]


def live_answers(messages: tuple[Message, ...]) -> list[str]:
    """Texts of the assistant messages not withdrawn by a tombstone (what the model sees)."""
    withdrawn = {m.target_uuid for m in messages if isinstance(m, TombstoneMessage)}
    return [
        text_of(m)
        for m in messages
        if isinstance(m, AssistantMessage) and m.uuid not in withdrawn and text_of(m)
    ]


def assert_paired(messages: tuple[Message, ...]) -> None:
    """Every tool_use in the transcript has exactly one tool_result, and no result is orphan."""
    used = [block.id for message in messages for block in tool_uses(message)]
    answered = [block.tool_use_id for message in messages for block in tool_results(message)]
    assert sorted(used) == sorted(answered)
    assert len(set(used)) == len(used)


def assert_replays(result: RunResult) -> None:
    """The run's trace replays against a fresh core to the same terminal, end record included."""
    assert result.trace_path is not None
    replayed = replay(result.trace_path)
    assert replayed.terminal == result.terminal
    assert replayed.ended


def message_models(server: FakeAnthropicServer) -> list[str]:
    """The ``model`` of every Messages request the server received."""
    return [r.body["model"] for r in server.message_requests]


def is_summary_request(body: dict[str, Any]) -> bool:
    """Whether a request body is the compaction's summary request."""
    last = body["messages"][-1]
    return SUMMARY_REQUEST in json.dumps(last["content"]) and "tools" not in body


# --- context overflow: reactive compaction ------------------------------------------------------


@pytest.mark.parametrize("kind", ["prompt_too_long", "request_too_large", "media_too_large"])
def test_refused_request_is_compacted_and_retried(
    serve: ServeFn, tmp_path: Path, kind: str
) -> None:
    """A 400 prompt-too-long, a 413 or a media-size 400 → reactive compact, then the answer."""
    server = serve(
        {
            "steps": [
                {"error": {"kind": kind}},
                {"content": [{"text": SUMMARY}]},
                {"content": [{"text": REPLY}]},
            ]
        }
    )
    result = run_agent(server, tmp_path)
    assert result.terminal == "completed"
    assert result.text == REPLY
    names = loop_transitions(result)
    assert names.count("api_error_received") == 1
    assert names.count("reactive_compact_started") == 1
    assert names.count("reactive_compact_retry") == 1
    bodies = [r.body for r in server.message_requests]
    assert len(bodies) == 3
    assert is_summary_request(bodies[1])
    # The retried request starts from the summary, not from the refused history.
    assert bodies[2]["messages"][0]["content"][0]["text"] == SUMMARY_PREFIX + SUMMARY
    assert_replays(result)


def test_media_error_without_reactive_compact_ends_completed(
    serve: ServeFn, tmp_path: Path
) -> None:
    """With reactive compact off a media-size 400 is shown at once and the run ends completed."""
    server = serve({"steps": [{"error": {"kind": "media_too_large"}}]})
    result = run_agent(server, tmp_path, config=fast_config(reactive_compact=False))
    # SPEC §2.2 completed (a): the last message is an API error that nothing can recover.
    assert result.terminal == "completed"
    last = result.messages[-1]
    assert isinstance(last, ApiErrorMessage)
    assert "image exceeds" in last.text
    assert not last.withheld
    names = loop_transitions(result)
    assert "reactive_compact_started" not in names
    assert "stop_hooks_started" not in names  # SPEC §2.3 step 4: no Stop hooks after an API error
    assert len(server.message_requests) == 1
    assert_replays(result)


def test_prompt_too_long_when_the_summary_fails_is_terminal(serve: ServeFn, tmp_path: Path) -> None:
    """If the reactive compact's summary request fails too, the run ends prompt_too_long."""
    server = serve(
        {"steps": [{"error": {"kind": "prompt_too_long"}}, {"error": {"kind": "prompt_too_long"}}]}
    )
    result = run_agent(server, tmp_path)
    assert result.terminal == "prompt_too_long"
    names = loop_transitions(result)
    assert names[-1] == "prompt_too_long"
    assert "reactive_compact_retry" not in names
    assert len(server.message_requests) == 2
    assert_replays(result)


# --- retried failures -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("failing_step", "failure"),
    [
        pytest.param({"error": {"kind": "overloaded"}}, ("overloaded", 529), id="529"),
        pytest.param(
            {
                "content": [{"text": "This answer will be cut off part-way."}],
                "chunk": 6,
                "error": {"kind": "overloaded", "mid_stream_after": 4},
            },
            ("overloaded", 200),
            id="sse-overloaded-on-200",
        ),
        pytest.param({"error": {"kind": "server_error"}}, ("server_error", 500), id="500"),
        pytest.param(
            {"error": {"kind": "connection"}}, ("connection", None), id="dropped-before-response"
        ),
        pytest.param(
            {
                "content": [{"text": "Lost halfway through"}],
                "chunk": 4,
                "error": {"kind": "connection", "mid_stream_after": 3},
            },
            ("connection", None),
            id="dropped-mid-stream",
        ),
        pytest.param(
            {"content": [{"text": "A stream that never finishes"}], "error": {"kind": "truncated"}},
            None,  # no failure at all: the core notices the missing message_stop
            id="truncated-no-message-stop",
        ),
    ],
)
def test_transient_failure_is_retried_then_answered(
    serve: ServeFn,
    tmp_path: Path,
    failing_step: dict[str, Any],
    failure: tuple[str, int | None] | None,
) -> None:
    """A retryable failure → request_retried once, then the full answer completes the run."""
    server = serve({"steps": [failing_step, {"content": [{"text": REPLY}]}]})
    result = run_agent(server, tmp_path)
    assert result.terminal == "completed"
    assert result.text == REPLY
    names = loop_transitions(result)
    assert names.count("request_retried") == 1
    assert names.count("request_sent") == 1  # the retry stays inside the same iteration
    assert len(server.message_requests) == 2
    # Nothing of the failed attempt survives as an answer: the retry resends the same history.
    assert live_answers(result.messages) == [REPLY]
    first, second = (r.body for r in server.message_requests)
    assert second["messages"] == first["messages"]
    attempts = [(e["attempt"], e["delay_ms"]) for e in call_model_effects(result)]
    assert attempts == [(1, 0), (2, 1)]
    assert result.trace_path is not None
    failed = [
        (r.data["event"]["kind"], r.data["event"]["status"])
        for r in read_trace(result.trace_path).of_kind("event")
        if r.data["event"]["type"] == "ModelStreamFailed"
    ]
    assert failed == ([] if failure is None else [failure])
    assert_replays(result)


def test_two_overloaded_then_reply_is_retried_with_bounded_backoff(
    serve: ServeFn, tmp_path: Path
) -> None:
    """Two 529s are retried with doubling backoff, capped by retry_cap_ms, then answered."""
    server = serve(
        {
            "steps": [
                {"error": {"kind": "overloaded"}},
                {"error": {"kind": "overloaded"}},
                {"content": [{"text": REPLY}]},
            ]
        }
    )
    result = run_agent(server, tmp_path, config=fast_config(retry_base_ms=3, retry_cap_ms=5))
    assert result.terminal == "completed"
    assert loop_transitions(result).count("request_retried") == 2
    delays = [e["delay_ms"] for e in call_model_effects(result)]
    assert delays == [0, 3, 5]  # 3·2^0, then 3·2^1 = 6 capped at 5
    assert message_models(server) == [MODEL, MODEL, MODEL]


def test_stalled_server_times_out_and_is_retried(serve: ServeFn, tmp_path: Path) -> None:
    """A server that stalls trips the client's read timeout; the loop retries and completes."""
    server = serve(
        {
            "steps": [
                {"content": [{"text": "slow"}], "error": {"kind": "timeout", "stall_ms": 3000}},
                {"content": [{"text": REPLY}]},
            ]
        }
    )
    started = time.monotonic()
    result = run_agent(server, tmp_path, timeout=0.3)
    assert time.monotonic() - started < 2.5
    assert result.terminal == "completed"
    assert result.text == REPLY
    assert loop_transitions(result).count("request_retried") == 1
    assert len(server.message_requests) == 2
    assert_replays(result)


def test_stall_mid_stream_times_out_and_is_retried(serve: ServeFn, tmp_path: Path) -> None:
    """A stream that stalls after some events times out and is retried, not accepted half-done."""
    server = serve(
        {
            "steps": [
                {
                    "content": [{"text": "half an answer then silence"}],
                    "chunk": 5,
                    "error": {"kind": "timeout", "mid_stream_after": 3, "stall_ms": 3000},
                },
                {"content": [{"text": REPLY}]},
            ]
        }
    )
    result = run_agent(server, tmp_path, timeout=0.3)
    assert result.terminal == "completed"
    assert live_answers(result.messages) == [REPLY]
    assert loop_transitions(result).count("request_retried") == 1


def test_rate_limit_retry_waits_for_retry_after(serve: ServeFn, tmp_path: Path) -> None:
    """A 429's retry-after sets the retry's delay (within retry_cap_ms), and the loop waits it."""
    server = serve(
        {
            "steps": [
                {"error": {"kind": "rate_limited", "retry_after": 0.25}},
                {"content": [{"text": REPLY}]},
            ]
        }
    )
    started = time.monotonic()
    result = run_agent(server, tmp_path, config=fast_config(retry_cap_ms=5_000))
    elapsed = time.monotonic() - started
    assert result.terminal == "completed"
    assert loop_transitions(result).count("request_retried") == 1
    effects = call_model_effects(result)
    assert [(e["attempt"], e["delay_ms"]) for e in effects] == [(1, 0), (2, 250)]
    assert elapsed >= 0.25
    assert_replays(result)


def test_rate_limit_retry_after_is_capped(serve: ServeFn, tmp_path: Path) -> None:
    """A retry-after longer than retry_cap_ms waits only the cap (the loop bounds every wait)."""
    server = serve(
        {
            "steps": [
                {"error": {"kind": "rate_limited", "retry_after": 30}},
                {"content": [{"text": REPLY}]},
            ]
        }
    )
    started = time.monotonic()
    result = run_agent(server, tmp_path)
    assert time.monotonic() - started < 5
    assert result.terminal == "completed"
    assert [e["delay_ms"] for e in call_model_effects(result)] == [0, 5]


# --- bounds and fallback ----------------------------------------------------------------------


def test_three_overloaded_switch_to_the_fallback_model(serve: ServeFn, tmp_path: Path) -> None:
    """After 3 consecutive 529s with a fallback set → model_fallback; later requests use it."""
    server = serve(
        {
            "steps": [
                {"error": {"kind": "overloaded"}},
                {"error": {"kind": "overloaded"}},
                {"error": {"kind": "overloaded"}},
                {"content": [{"text": REPLY}]},
            ]
        }
    )
    result = run_agent(server, tmp_path, config=fast_config(fallback_model=FALLBACK))
    assert result.terminal == "completed"
    assert result.text == REPLY
    names = loop_transitions(result)
    assert names.count("request_retried") == 2
    assert names.count("model_fallback") == 1
    assert names.index("model_fallback") > max(
        i for i, name in enumerate(names) if name == "request_retried"
    )
    assert message_models(server) == [MODEL, MODEL, MODEL, FALLBACK]
    assert [e["model"] for e in call_model_effects(result)] == [MODEL, MODEL, MODEL, FALLBACK]
    assert_replays(result)


def test_fallback_model_is_kept_for_the_next_turn(serve: ServeFn, tmp_path: Path) -> None:
    """Once switched, a later iteration (after a tool call) still asks the fallback model."""
    server = serve(
        {
            "steps": [
                {"error": {"kind": "overloaded"}},
                {"error": {"kind": "overloaded"}},
                {"error": {"kind": "overloaded"}},
                {"content": [{"tool_use": {"name": "Read", "input": {"file_path": "README.md"}}}]},
                {"content": [{"text": REPLY}]},
            ]
        }
    )
    result = run_agent(server, tmp_path, config=fast_config(fallback_model=FALLBACK))
    assert result.terminal == "completed"
    assert message_models(server) == [MODEL, MODEL, MODEL, FALLBACK, FALLBACK]
    assert_paired(result.messages)


def test_always_overloaded_ends_model_error_after_bounded_retries(
    serve: ServeFn, tmp_path: Path
) -> None:
    """With max_retries=2 and no fallback, endless 529s end model_error after exactly 3 requests."""
    server = serve({"steps": [{"error": {"kind": "overloaded"}}] * 6})
    result = run_agent(server, tmp_path, config=fast_config(max_retries=2))
    assert result.terminal == "model_error"
    names = loop_transitions(result)
    assert names.count("request_retried") == 2
    assert names[-1] == "model_error"
    assert len(server.message_requests) == 3
    last = result.messages[-1]
    assert isinstance(last, ApiErrorMessage)
    assert_replays(result)


def test_non_retryable_error_is_model_error_at_once(serve: ServeFn, tmp_path: Path) -> None:
    """A 400 that matches no recovery is not retried: model_error after one request."""
    server = serve({"steps": [{"error": {"kind": "other"}}, {"content": [{"text": REPLY}]}]})
    result = run_agent(server, tmp_path)
    assert result.terminal == "model_error"
    assert "request_retried" not in loop_transitions(result)
    assert len(server.message_requests) == 1


def test_model_error_answers_streamed_tool_uses(serve: ServeFn, tmp_path: Path) -> None:
    """A stream that fails for good after a tool_use still leaves that tool_use answered."""
    server = serve(
        {
            "steps": [
                {
                    "content": [
                        {"tool_use": {"name": "Read", "input": {"file_path": "README.md"}}},
                        {"text": "and then more"},
                    ],
                    "error": {"kind": "other", "mid_stream_after": 5},
                }
            ]
        }
    )
    result = run_agent(server, tmp_path, config=fast_config(max_retries=0))
    assert result.terminal == "model_error"
    assert_paired(result.messages)


# --- output cap -------------------------------------------------------------------------------


def test_max_tokens_is_recovered(serve: ServeFn, tmp_path: Path) -> None:
    """stop_reason max_tokens → max_output_tokens_recovery, then the rest of the answer."""
    server = serve(
        {
            "steps": [
                {"content": [{"text": "The first half"}], "stop_reason": "max_tokens"},
                {"content": [{"text": " and the second half."}]},
            ]
        }
    )
    result = run_agent(server, tmp_path)
    assert result.terminal == "completed"
    names = loop_transitions(result)
    assert names.count("max_output_tokens_recovery") == 1
    assert len(server.message_requests) == 2
    # The second request carries the partial answer and the nudge to continue.
    second = server.message_requests[1].body["messages"]
    assert "The first half" in json.dumps(second)
    assert second[-1]["role"] == "user"
    assert_replays(result)


# --- a tool round trip, trace and secrets ------------------------------------------------------


def test_tool_round_trip_trace_replays_and_holds_no_secret(serve: ServeFn, tmp_path: Path) -> None:
    """A Read round trip: the trace replays identically; the key is in no trace or request."""
    server = serve(
        {
            "steps": [
                {
                    "content": [
                        {"text": "Let me read it."},
                        {"tool_use": {"name": "Read", "input": {"file_path": "README.md"}}},
                    ],
                    "chunk": 7,
                },
                {"error": {"kind": "overloaded"}},
                {"content": [{"text": REPLY}]},
            ]
        }
    )
    result = run_agent(server, tmp_path)
    assert result.terminal == "completed"
    assert_paired(result.messages)
    names = loop_transitions(result)
    assert "tools_requested" in names
    assert "next_turn" in names
    # The tool result reached the model in the next request.
    assert "A small project." in json.dumps(server.message_requests[1].body["messages"])
    assert_replays(result)

    assert result.trace_path is not None
    assert b"sk-test-secret" not in result.trace_path.read_bytes()
    recorded = json.dumps([[r.headers, r.body] for r in server.requests])
    assert API_KEY not in recorded
    assert all(r.headers["authorization"] == "[redacted]" for r in server.requests)


def test_count_tokens_goes_through_the_sdk_before_the_request(
    serve: ServeFn, tmp_path: Path
) -> None:
    """With ``count_tokens`` on, the real client counts the request first; the figure the
    server gave is in the trace, and the run replays without the server."""
    server = serve({"steps": [{"content": [{"text": REPLY}]}]})
    result = run_agent(server, tmp_path, config=fast_config(count_tokens=True))
    assert result.terminal == "completed"
    assert [r.path for r in server.requests] == ["/v1/messages/count_tokens", "/v1/messages"]
    counted_body = server.requests[0].body
    sent = server.requests[1].body["messages"]
    # the same messages, without the prompt-cache marks (they change no count)
    assert counted_body["messages"] == [
        {
            **m,
            "content": [{k: v for k, v in b.items() if k != "cache_control"} for b in m["content"]],
        }
        for m in sent
    ]
    assert result.trace_path is not None
    trace = read_trace(result.trace_path)
    (counted,) = [
        r.data["event"]
        for r in trace.of_kind("event")
        if r.data["event"]["type"] == "TokensCounted"
    ]
    assert counted["input_tokens"] == estimated_input_tokens(counted_body)
    assert "tokens_counted" in loop_transitions(result)
    assert replay(result.trace_path).terminal == "completed"
