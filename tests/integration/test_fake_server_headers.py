"""The fake server's responses carry what real API responses carry: rate-limit headers,
``x-should-retry`` on errors, and gzip for a JSON answer when the client accepts it."""

from __future__ import annotations

import gzip
import json
import urllib.error
import urllib.request
from typing import Any

from fsm_agent.testing.fake_server import RATE_LIMIT_HEADERS, FakeAnthropicServer
from fsm_agent.testing.scenario import parse_scenario


def _post(server: FakeAnthropicServer, *, stream: bool, **headers: str) -> Any:
    body = {"model": "m", "max_tokens": 10, "messages": [], "stream": stream}
    request = urllib.request.Request(
        f"{server.base_url}/v1/messages",
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json", **headers},
        method="POST",
    )
    return urllib.request.urlopen(request, timeout=10)


def test_responses_carry_rate_limit_headers() -> None:
    """Streamed and plain answers both carry the anthropic-ratelimit-* headers."""
    steps = [{"content": [{"text": "a"}]}, {"content": [{"text": "b"}]}]
    with FakeAnthropicServer(parse_scenario({"steps": steps})) as server:
        for stream in (True, False):
            with _post(server, stream=stream) as response:
                for name, value in RATE_LIMIT_HEADERS.items():
                    assert response.headers[name] == value


def test_overloaded_says_a_retry_may_help() -> None:
    """A 529 carries x-should-retry: true; a plain 400 carries false."""
    steps = [{"error": {"kind": "overloaded"}}, {"error": {"kind": "other"}}]
    with FakeAnthropicServer(parse_scenario({"steps": steps})) as server:
        answers = []
        for _ in steps:
            try:
                _post(server, stream=True)
            except urllib.error.HTTPError as error:
                answers.append((error.code, error.headers["x-should-retry"]))
                error.close()
    assert answers == [(529, "true"), (400, "false")]


def test_json_answer_is_gzipped_when_accepted() -> None:
    """With Accept-Encoding: gzip a non-streamed answer comes compressed, and decompresses to
    the message."""
    scenario = parse_scenario({"steps": [{"content": [{"text": "zip"}]}]})
    with (
        FakeAnthropicServer(scenario) as server,
        _post(server, stream=False, **{"accept-encoding": "gzip"}) as response,
    ):
        assert response.headers["content-encoding"] == "gzip"
        message = json.loads(gzip.decompress(response.read()))
    assert message["content"] == [{"type": "text", "text": "zip"}]
