"""The real anthropic SDK, through AnthropicModel, against the fake server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import anthropic
import httpx2
import pytest

from fsm_agent.core.events import FailureKind
from fsm_agent.runtime.models import (
    AnthropicModel,
    ModelFailure,
    ModelRequest,
    classify_failure,
    is_prompt_too_long_message,
    parse_retry_after_ms,
)
from fsm_agent.testing.fake_server import FakeAnthropicServer
from fsm_agent.testing.scenario import (
    load_shipped_scenario,
    parse_scenario,
    render_events,
    render_message,
    scripted_failure,
)

ServeFn = Callable[[Any], FakeAnthropicServer]  # the ``serve`` fixture (conftest.py)
API_KEY = "test-key-do-not-leak"
MODEL = "claude-test"
REQUEST = ModelRequest(
    model=MODEL,
    max_output_tokens=256,
    messages=[{"role": "user", "content": "Say hello."}],
    system="Be brief.",
    tools=[
        {
            "name": "Read",
            "description": "Read a file.",
            "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}}},
        }
    ],
)
Outcome = tuple[list[dict[str, Any]], ModelFailure | None]


async def collect(base_url: str, *, timeout: float = 5.0) -> Outcome:
    """Stream REQUEST through a fresh AnthropicModel; return the events and any failure."""
    events: list[dict[str, Any]] = []
    async with AnthropicModel(
        name=MODEL, api_key=API_KEY, base_url=base_url, timeout=timeout
    ) as model:
        try:
            async for event in model.stream(REQUEST):
                events.append(event)
        except ModelFailure as failure:
            return events, failure
    return events, None


def stream_once(server: FakeAnthropicServer, *, timeout: float = 5.0) -> Outcome:
    return asyncio.run(collect(server.base_url, timeout=timeout))


# --- successful responses ------------------------------------------------------------------


def test_text_response_streams_the_raw_events(serve: ServeFn) -> None:
    """A text answer arrives as exactly the rendered wire events, ending with message_stop."""
    scenario = load_shipped_scenario("text_reply")
    server = serve(scenario)
    events, failure = stream_once(server)
    assert failure is None
    assert events == render_events(scenario.steps[0], model=MODEL)
    assert events[-1] == {"type": "message_stop"}
    assert all(event["type"] != "ping" for event in events)


def test_tool_use_response_streams_tool_input_json(serve: ServeFn) -> None:
    """A tool_use answer streams thinking, text and tool input deltas, stop_reason tool_use."""
    scenario = load_shipped_scenario("tool_then_reply")
    server = serve(scenario)
    events, failure = stream_once(server)
    assert failure is None
    assert events == render_events(scenario.steps[0], model=MODEL)
    starts = [e["content_block"] for e in events if e["type"] == "content_block_start"]
    assert [b["type"] for b in starts] == ["thinking", "text", "tool_use"]
    assert starts[2]["id"] == "toolu_001"
    partial = "".join(
        e["delta"]["partial_json"]
        for e in events
        if e["type"] == "content_block_delta" and e["delta"]["type"] == "input_json_delta"
    )
    assert json.loads(partial) == {"file_path": "README.md"}
    assert events[-2]["delta"]["stop_reason"] == "tool_use"


def test_steps_are_taken_in_order_across_requests(serve: ServeFn) -> None:
    """Successive requests get successive steps: a failure, then the answer."""
    server = serve(load_shipped_scenario("prompt_too_long_then_reply"))
    _, first = stream_once(server)
    events, second = stream_once(server)
    assert first is not None
    assert first.kind is FailureKind.PROMPT_TOO_LONG
    assert second is None
    assert events[0]["message"]["id"] == "msg_002"


def test_non_streaming_request_gets_the_same_message(serve: ServeFn) -> None:
    """Without stream, the server answers with a Message built from the same step."""
    scenario = load_shipped_scenario("tool_then_reply")
    server = serve(scenario)

    async def create() -> dict[str, Any]:
        async with anthropic.AsyncAnthropic(
            api_key=API_KEY, base_url=server.base_url, max_retries=0
        ) as client:
            message = await client.messages.create(
                model=MODEL, max_tokens=100, messages=[{"role": "user", "content": "hi"}]
            )
        return message.model_dump(mode="json", exclude_unset=True)

    assert asyncio.run(create()) == render_message(scenario.steps[0], model=MODEL)


def test_server_runs_on_the_current_loop_with_async_with() -> None:
    """``async with`` serves from the running event loop and stops cleanly."""
    scenario = load_shipped_scenario("text_reply")

    async def run() -> Outcome:
        async with FakeAnthropicServer(scenario) as server:
            assert server.base_url.startswith("http://127.0.0.1:")
            return await collect(server.base_url)

    events, failure = asyncio.run(run())
    assert failure is None
    assert events[-1]["type"] == "message_stop"


# --- failures ------------------------------------------------------------------------------

TEXT = [{"text": "partial answer that will not finish"}]


@pytest.mark.parametrize(
    ("step", "kind", "status", "retry_after_ms"),
    [
        pytest.param(
            {"error": {"kind": "overloaded"}}, FailureKind.OVERLOADED, 529, None, id="529"
        ),
        pytest.param(
            {"content": TEXT, "chunk": 5, "error": {"kind": "overloaded", "mid_stream_after": 3}},
            FailureKind.OVERLOADED,
            200,
            None,
            id="sse-overloaded",
        ),
        pytest.param(
            {"error": {"kind": "rate_limited", "retry_after": 2}},
            FailureKind.RATE_LIMITED,
            429,
            2000,
            id="429",
        ),
        pytest.param(
            {"error": {"kind": "server_error"}}, FailureKind.SERVER_ERROR, 500, None, id="500"
        ),
        pytest.param(
            {"error": {"kind": "server_error", "mid_stream_after": 1}},
            FailureKind.SERVER_ERROR,
            200,
            None,
            id="sse-api-error",
        ),
        pytest.param(
            {"error": {"kind": "request_too_large"}},
            FailureKind.PROMPT_TOO_LONG,
            413,
            None,
            id="413",
        ),
        pytest.param(
            {"error": {"kind": "prompt_too_long"}},
            FailureKind.PROMPT_TOO_LONG,
            400,
            None,
            id="400-prompt-too-long",
        ),
        pytest.param(
            {"error": {"kind": "media_too_large"}},
            FailureKind.MEDIA_TOO_LARGE,
            400,
            None,
            id="400-media",
        ),
        pytest.param(
            {
                "error": {
                    "kind": "media_too_large",
                    "message": "A maximum of 100 PDF pages may be provided.",
                }
            },
            FailureKind.MEDIA_TOO_LARGE,
            400,
            None,
            id="400-pdf-pages",
        ),
        pytest.param(
            {"error": {"kind": "output_overflow"}},
            FailureKind.OUTPUT_OVERFLOW,
            400,
            None,
            id="400-output-overflow",
        ),
        pytest.param({"error": {"kind": "other"}}, FailureKind.OTHER, 400, None, id="400-other"),
        pytest.param(
            {"error": {"kind": "connection"}},
            FailureKind.CONNECTION,
            None,
            None,
            id="dropped-before-response",
        ),
        pytest.param(
            {"content": TEXT, "chunk": 5, "error": {"kind": "connection", "mid_stream_after": 4}},
            FailureKind.CONNECTION,
            None,
            None,
            id="dropped-mid-stream",
        ),
    ],
)
def test_error_maps_to_failure_kind(
    serve: ServeFn,
    step: dict[str, Any],
    kind: FailureKind,
    status: int | None,
    retry_after_ms: int | None,
) -> None:
    """Each injected fault reaches AnthropicModel.stream as the right ModelFailure."""
    scenario = parse_scenario({"steps": [step]})
    server = serve(scenario)
    events, failure = stream_once(server)
    assert failure is not None
    assert (failure.kind, failure.status, failure.retry_after_ms) == (kind, status, retry_after_ms)
    assert isinstance(failure.__cause__, Exception)
    # The events before the fault are the ones ScriptedModel would yield.
    assert events == render_events(scenario.steps[0], model=MODEL)
    # And ScriptedModel raises the same failure.
    error = scenario.steps[0].error
    assert error is not None
    scripted = scripted_failure(error)
    assert scripted is not None
    assert (scripted.kind, scripted.status, scripted.retry_after_ms) == (
        failure.kind,
        failure.status,
        failure.retry_after_ms,
    )


def test_mid_stream_sse_error_is_a_status_200_api_error(serve: ServeFn) -> None:
    """A mid-stream overloaded_error arrives as the SDK's plain APIStatusError with status 200."""
    server = serve(load_shipped_scenario("mid_stream_overloaded"))
    events, failure = stream_once(server)
    assert failure is not None
    cause = failure.__cause__
    assert type(cause) is anthropic.APIStatusError
    assert cause.status_code == 200
    assert cause.type == "overloaded_error"
    assert len(events) == 4


@pytest.mark.parametrize("after", [None, 2], ids=["before-response", "mid-stream"])
def test_stall_times_out_the_client(serve: ServeFn, after: int | None) -> None:
    """A stalled server trips the client's read timeout: TIMEOUT, with the events sent so far."""
    server = serve(
        {"steps": [{"content": TEXT, "error": {"kind": "timeout", "mid_stream_after": after}}]}
    )
    events, failure = stream_once(server, timeout=0.2)
    assert failure is not None
    assert failure.kind is FailureKind.TIMEOUT
    assert len(events) == (after or 0)


def test_truncated_stream_yields_events_and_raises_nothing(serve: ServeFn) -> None:
    """A body that ends before message_stop yields what arrived and ends quietly."""
    scenario = parse_scenario({"steps": [{"content": TEXT, "error": {"kind": "truncated"}}]})
    server = serve(scenario)
    events, failure = stream_once(server)
    assert failure is None
    assert events == render_events(scenario.steps[0], model=MODEL)
    assert events[-1]["type"] == "message_delta"
    assert all(event["type"] != "message_stop" for event in events)


def test_exhausted_scenario_is_an_other_failure(serve: ServeFn) -> None:
    """A request past the end of the scenario gets a 400 that classifies as OTHER."""
    server = serve({"steps": []})
    _, failure = stream_once(server)
    assert failure is not None
    assert failure.kind is FailureKind.OTHER
    assert "scenario exhausted after 0 requests" in failure.message


# --- what the server records ---------------------------------------------------------------


def test_recorded_request_has_no_api_key(serve: ServeFn) -> None:
    """The server records the request body and headers with the credentials redacted."""
    server = serve(load_shipped_scenario("text_reply"))
    stream_once(server)
    [recorded] = server.requests
    assert recorded.method == "POST"
    assert recorded.path == "/v1/messages"
    assert API_KEY not in json.dumps([recorded.headers, recorded.body])
    assert recorded.headers["authorization"] == "[redacted]"
    assert "anthropic-version" in recorded.headers
    assert recorded.body["stream"] is True
    assert recorded.body["system"] == "Be brief."
    assert recorded.body["tools"][0]["name"] == "Read"
    assert recorded.body["max_tokens"] == 256


def test_count_tokens_estimates_and_takes_no_step(serve: ServeFn) -> None:
    """count_tokens returns a characters/4 estimate and leaves the scenario untouched."""
    server = serve(load_shipped_scenario("text_reply"))

    async def run() -> tuple[int, Outcome]:
        async with AnthropicModel(name=MODEL, api_key=API_KEY, base_url=server.base_url) as model:
            counted = await model.count_tokens(REQUEST.messages, system="Be brief.")
        return counted, await collect(server.base_url)

    counted, (events, failure) = asyncio.run(run())
    assert counted > 0
    assert failure is None
    assert events[0]["message"]["id"] == "msg_001"
    assert [r.path for r in server.requests] == ["/v1/messages/count_tokens", "/v1/messages"]


def test_server_listens_only_on_loopback(serve: ServeFn) -> None:
    """The base URL is 127.0.0.1 with an OS-chosen port."""
    server = serve({"steps": []})
    assert server.base_url.startswith("http://127.0.0.1:")
    assert int(server.base_url.rsplit(":", 1)[1]) > 0


# --- classification without the network ----------------------------------------------------


def status_error(
    status: int, body: dict[str, Any], *, headers: dict[str, str] | None = None
) -> anthropic.APIStatusError:
    request = httpx2.Request("POST", "http://127.0.0.1/v1/messages")
    response = httpx2.Response(status, json=body, headers=headers, request=request)
    return anthropic.APIStatusError(f"Error code: {status} - {body}", response=response, body=body)


def error_body(error_type: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": error_type, "message": message}}


@pytest.mark.parametrize(
    ("exc", "kind"),
    [
        (status_error(200, error_body("overloaded_error", "Overloaded")), FailureKind.OVERLOADED),
        (status_error(200, error_body("rate_limit_error", "slow")), FailureKind.RATE_LIMITED),
        (
            status_error(200, error_body("invalid_request_error", "prompt is too long: 3 > 2")),
            FailureKind.PROMPT_TOO_LONG,
        ),
        (
            status_error(400, error_body("invalid_request_error", "image dimensions exceed max")),
            FailureKind.MEDIA_TOO_LARGE,
        ),
        (status_error(503, error_body("api_error", "down")), FailureKind.SERVER_ERROR),
        (status_error(401, error_body("authentication_error", "bad key")), FailureKind.OTHER),
        (
            httpx2.ReadTimeout("slow", request=httpx2.Request("GET", "http://127.0.0.1")),
            FailureKind.TIMEOUT,
        ),
        (httpx2.RemoteProtocolError("peer closed"), FailureKind.CONNECTION),
        (httpx2.ConnectError("refused"), FailureKind.CONNECTION),
        (
            anthropic.APITimeoutError(request=httpx2.Request("GET", "http://127.0.0.1")),
            FailureKind.TIMEOUT,
        ),
        (
            anthropic.APIConnectionError(request=httpx2.Request("GET", "http://127.0.0.1")),
            FailureKind.CONNECTION,
        ),
        (TimeoutError(), FailureKind.TIMEOUT),
        (ConnectionResetError(), FailureKind.CONNECTION),
        (ValueError("odd"), FailureKind.OTHER),
    ],
)
def test_classify_failure(exc: BaseException, kind: FailureKind) -> None:
    """classify_failure maps SDK, httpx2 and builtin exceptions to the right FailureKind."""
    assert classify_failure(exc).kind is kind


def test_classify_failure_reads_retry_after_and_keeps_failures() -> None:
    """A 429's retry-after becomes milliseconds; a ModelFailure passes through unchanged."""
    exc = status_error(429, error_body("rate_limit_error", "slow"), headers={"retry-after": "3"})
    failure = classify_failure(exc)
    assert (failure.kind, failure.status, failure.retry_after_ms) == (
        FailureKind.RATE_LIMITED,
        429,
        3000,
    )
    assert failure.message == "slow"
    assert classify_failure(failure) is failure


def test_retry_after_parsing() -> None:
    """retry-after-ms wins over retry-after; dates and garbage give None."""
    assert parse_retry_after_ms({"retry-after-ms": "250", "retry-after": "9"}) == 250
    assert parse_retry_after_ms({"Retry-After": "1.5"}) == 1500
    assert parse_retry_after_ms({"retry-after": "Wed, 21 Oct 2026 07:28:00 GMT"}) is None
    assert parse_retry_after_ms({}) is None


def test_prompt_too_long_text_check() -> None:
    """Only the API's "prompt is too long" wording counts as prompt too long."""
    assert is_prompt_too_long_message("prompt is too long: 210000 tokens > 200000 maximum")
    assert not is_prompt_too_long_message("max_tokens: 99999 > 64000, which is the maximum")


def test_output_overflow_carries_the_numbers(serve: ServeFn) -> None:
    """The overflow 400 reaches the core with the input size and the context limit, from the
    real client and from the scripted model alike."""
    scenario = parse_scenario({"steps": [{"error": {"kind": "output_overflow"}}]})
    _events, failure = stream_once(serve(scenario))
    assert failure is not None
    assert (failure.input_tokens, failure.context_limit) == (188_000, 200_000)
    error = scenario.steps[0].error
    assert error is not None
    scripted = scripted_failure(error)
    assert scripted is not None
    assert (scripted.input_tokens, scripted.context_limit) == (188_000, 200_000)
    event = failure.to_event("r1")
    assert (event.kind, event.input_tokens, event.context_limit) == (
        FailureKind.OUTPUT_OVERFLOW,
        188_000,
        200_000,
    )
