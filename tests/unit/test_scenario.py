"""The scenario format: parsing, rendering to raw stream events, ScriptedModel, bad files."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fsm_agent.core.events import FailureKind
from fsm_agent.errors import ConfigError, DefinitionError
from fsm_agent.runtime.models import AnthropicModel, Model, ModelFailure, ModelRequest
from fsm_agent.testing import scenario as scenario_module
from fsm_agent.testing.scenario import (
    ErrorKind,
    Scenario,
    ScenarioError,
    ScriptedModel,
    TextSpec,
    ThinkingSpec,
    ToolUseSpec,
    load_scenario,
    load_shipped_scenario,
    parse_scenario,
    render_events,
    render_message,
    scripted_failure,
    shipped_scenario_names,
)

REQUEST = ModelRequest(
    model="claude-test", max_output_tokens=1000, messages=[{"role": "user", "content": "hi"}]
)


def one_step(step: dict[str, Any]) -> Scenario:
    return parse_scenario({"steps": [step]})


def types_of(events: list[dict[str, Any]]) -> list[str]:
    return [event["type"] for event in events]


def deltas(events: list[dict[str, Any]], index: int, key: str) -> str:
    return "".join(
        event["delta"][key]
        for event in events
        if event["type"] == "content_block_delta"
        and event["index"] == index
        and key in event["delta"]
    )


async def play(model: ScriptedModel) -> tuple[list[dict[str, Any]], ModelFailure | None]:
    events: list[dict[str, Any]] = []
    try:
        async for event in model.stream(REQUEST):
            events.append(event)
    except ModelFailure as failure:
        return events, failure
    return events, None


# --- parsing -------------------------------------------------------------------------------


def test_parse_builds_typed_blocks() -> None:
    """Each block shape parses into its spec class, in order."""
    scenario = one_step(
        {
            "content": [
                {"thinking": "hmm", "signature": "sig"},
                {"text": "hello"},
                {"tool_use": {"name": "Read", "input": {"file_path": "a.txt"}}},
            ]
        }
    )
    content = scenario.steps[0].content
    assert content[0] == ThinkingSpec(thinking="hmm", signature="sig")
    assert content[1] == TextSpec(text="hello")
    assert isinstance(content[2], ToolUseSpec)
    assert content[2].input == {"file_path": "a.txt"}


def test_ids_come_from_counters() -> None:
    """Message ids count steps and tool ids count tool_uses across the scenario."""
    scenario = parse_scenario(
        {
            "steps": [
                {"content": [{"tool_use": {"name": "A"}}, {"tool_use": {"name": "B"}}]},
                {"content": [{"tool_use": {"name": "C", "id": "toolu_mine"}}]},
                {"content": [{"tool_use": {"name": "D"}}]},
            ]
        }
    )
    assert [s.message_id for s in scenario.steps] == ["msg_001", "msg_002", "msg_003"]
    ids = [b.id for s in scenario.steps for b in s.content if isinstance(b, ToolUseSpec)]
    assert ids == ["toolu_001", "toolu_002", "toolu_mine", "toolu_004"]


def test_parsing_twice_gives_equal_scenarios() -> None:
    """Parsing is deterministic: the same JSON gives equal scenarios and events."""
    data = {"steps": [{"content": [{"text": "x"}, {"tool_use": {"name": "Read"}}]}]}
    first, second = parse_scenario(data), parse_scenario(data)
    assert first == second
    assert render_events(first.steps[0]) == render_events(second.steps[0])


def test_stop_reason_defaults() -> None:
    """Stop reason is tool_use with a tool_use block, end_turn otherwise, or as given."""
    scenario = parse_scenario(
        {
            "steps": [
                {"content": [{"text": "x"}]},
                {"content": [{"tool_use": {"name": "Read"}}]},
                {"content": [{"text": "x"}], "stop_reason": "max_tokens"},
            ]
        }
    )
    reasons = [s.resolved_stop_reason for s in scenario.steps]
    assert reasons == ["end_turn", "tool_use", "max_tokens"]


def test_every_shipped_scenario_parses() -> None:
    """Every JSON file in fsm_agent/scenarios/ is a valid scenario."""
    names = shipped_scenario_names()
    assert "text_reply" in names
    assert "tool_then_reply" in names
    for name in names:
        assert load_shipped_scenario(name).steps


def test_documented_example_parses() -> None:
    """The example in the module docstring is a valid scenario."""
    doc = scenario_module.__doc__ or ""
    example = doc.split("::", 1)[1].split("A step:", 1)[0]
    scenario = parse_scenario(json.loads(example))
    assert len(scenario.steps) == 5


def test_models_satisfy_the_protocol() -> None:
    """ScriptedModel and AnthropicModel both fit where a Model is expected."""
    models: list[Model] = [ScriptedModel(Scenario(steps=())), AnthropicModel(name="m")]
    assert [model.name for model in models] == ["scripted-model", "m"]


def test_load_scenario_reads_a_file(tmp_path: Path) -> None:
    """``load_scenario`` reads a JSON file from disk."""
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"description": "d", "steps": [{"content": [{"text": "x"}]}]}))
    scenario = load_scenario(path)
    assert scenario.description == "d"
    assert scenario.steps[0].content == (TextSpec(text="x"),)


# --- bad scenarios -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"steps": [{}, {"chunk": 0}]}, "step 2: chunk must be >= 1"),
        ({"steps": [{"error": {"kind": "overload"}}]}, "step 1: error.kind: 'overload' is not"),
        ({"steps": [{"content": [{"txt": "x"}]}]}, "step 1: content[0]: a content block must"),
        ({"steps": [{"usage": {"input_tokens": "5"}}]}, "step 1: usage.input_tokens: expected an"),
        ({"steps": [{"stop_reason": "done"}]}, "step 1: stop_reason 'done' is not one of"),
        ({"steps": [{"bogus": 1}]}, "step 1: extra fields found (bogus)"),
        (
            {"steps": [{"error": {"kind": "connection", "status": 500}}]},
            "step 1: error: status applies only to HTTP error kinds",
        ),
        (
            {"steps": [{"content": [{"tool_use": {"name": "R", "input": [1]}}]}]},
            "step 1: content[0]: tool_use.input must be a JSON object",
        ),
        ({"steps": [{"error": {"kind": "overloaded", "status": 200}}]}, "status must be an HTTP"),
        ({"steps": [{"error": {"kind": "timeout", "mid_stream_after": -1}}]}, "mid_stream_after"),
        ({"stepz": []}, "steps: required field missing"),
        ([1, 2], "must be a JSON object with steps"),
    ],
)
def test_bad_scenario_names_step_and_field(data: Any, expected: str) -> None:
    """A bad scenario raises ScenarioError naming the step and the field at fault."""
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(data, source="bad.json")
    assert str(caught.value).startswith("bad.json: invalid scenario:")
    assert any(expected in problem for problem in caught.value.problems), caught.value.problems


def test_scenario_error_is_a_definition_error() -> None:
    """ScenarioError sits under DefinitionError in the exception tree."""
    assert issubclass(ScenarioError, DefinitionError)


def test_every_problem_is_reported_at_once() -> None:
    """All problems in a scenario are listed, not only the first."""
    with pytest.raises(ScenarioError) as caught:
        parse_scenario({"steps": [{"chunk": 0}, {"delay_ms": -1}]})
    assert len(caught.value.problems) == 2


def test_invalid_json_file_names_the_line(tmp_path: Path) -> None:
    """A file that is not JSON gives a ScenarioError naming the file and line."""
    path = tmp_path / "broken.json"
    path.write_text('{\n  "steps": [\n')
    with pytest.raises(ScenarioError, match=r"broken\.json: invalid scenario:\n  not valid JSON"):
        load_scenario(path)


def test_unknown_shipped_scenario_lists_the_known_ones() -> None:
    """Asking for a shipped scenario that does not exist lists those that do."""
    with pytest.raises(ScenarioError, match="text_reply"):
        load_shipped_scenario("no_such_scenario")


# --- rendering -----------------------------------------------------------------------------


def test_text_step_renders_the_wire_sequence() -> None:
    """A text step renders message_start, one block, message_delta, message_stop."""
    events = render_events(one_step({"content": [{"text": "hello"}]}).steps[0], model="m")
    assert types_of(events) == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    start = events[0]["message"]
    assert start["id"] == "msg_001"
    assert start["model"] == "m"
    assert start["stop_reason"] is None
    assert events[1]["content_block"] == {"type": "text", "text": ""}
    assert events[2]["delta"] == {"type": "text_delta", "text": "hello"}
    assert events[4]["delta"] == {
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "stop_details": None,
    }


def test_chunk_splits_text_and_tool_json() -> None:
    """With ``chunk``, text and tool input arrive in pieces that join back to the whole."""
    step = one_step(
        {
            "content": [
                {"text": "abcdefghij"},
                {"tool_use": {"name": "Read", "input": {"file_path": "/tmp/x"}}},
            ],
            "chunk": 3,
        }
    ).steps[0]
    events = render_events(step)
    text_deltas = [e for e in events if e["type"] == "content_block_delta" and e["index"] == 0]
    assert [d["delta"]["text"] for d in text_deltas] == ["abc", "def", "ghi", "j"]
    assert json.loads(deltas(events, 1, "partial_json")) == {"file_path": "/tmp/x"}
    tool_start = events[len(text_deltas) + 3]
    assert tool_start["content_block"] == {
        "type": "tool_use",
        "id": "toolu_001",
        "name": "Read",
        "input": {},
        "caller": {"type": "direct"},
    }
    # As on the real wire, the input starts with an empty piece.
    assert events[len(text_deltas) + 4]["delta"] == {"type": "input_json_delta", "partial_json": ""}


def test_thinking_ends_with_a_signature_delta() -> None:
    """A thinking block streams thinking deltas, an empty one, then one signature delta."""
    step = one_step({"content": [{"thinking": "ponder"}]}).steps[0]
    events = render_events(step)
    block = [e for e in events if e["type"] == "content_block_delta"]
    assert block[0]["delta"] == {"type": "thinking_delta", "thinking": "ponder"}
    assert block[-2]["delta"] == {"type": "thinking_delta", "thinking": ""}
    assert block[-1]["delta"]["type"] == "signature_delta"
    assert block[-1]["delta"]["signature"] == "sig_msg_001_0"


def test_usage_is_reported_cumulatively() -> None:
    """message_delta carries the whole usage; output tokens default to characters / 4."""
    step = one_step(
        {
            "content": [{"text": "x" * 40}],
            "usage": {"input_tokens": 7, "cache_read_input_tokens": 3},
        }
    ).steps[0]
    events = render_events(step)
    assert events[0]["message"]["usage"]["input_tokens"] == 7
    assert events[-2]["usage"] == {
        "input_tokens": 7,
        "output_tokens": 10,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 3,
    }


def test_render_message_matches_the_streamed_content() -> None:
    """The non-streamed Message has the same blocks, ids and stop reason as the stream."""
    step = one_step(
        {"content": [{"text": "a"}, {"tool_use": {"name": "Read", "input": {"p": 1}}}]}
    ).steps[0]
    message = render_message(step, model="m")
    assert message["id"] == "msg_001"
    assert message["content"] == [
        {"type": "text", "text": "a"},
        {
            "type": "tool_use",
            "id": "toolu_001",
            "name": "Read",
            "input": {"p": 1},
            "caller": {"type": "direct"},
        },
    ]
    assert message["stop_reason"] == "tool_use"


@pytest.mark.parametrize(
    ("error", "count"),
    [
        ({"kind": "overloaded"}, 0),
        ({"kind": "overloaded", "mid_stream_after": 2}, 2),
        ({"kind": "connection", "mid_stream_after": 3}, 3),
        ({"kind": "timeout"}, 0),
        ({"kind": "truncated"}, 5),
        ({"kind": "truncated", "mid_stream_after": 1}, 1),
        ({"kind": "truncated", "mid_stream_after": 99}, 5),
    ],
)
def test_render_events_stops_where_the_error_strikes(error: dict[str, Any], count: int) -> None:
    """Events end where the error strikes; a truncated stream always lacks message_stop."""
    step = one_step({"content": [{"text": "hi"}], "error": error}).steps[0]
    events = render_events(step)
    assert len(events) == count
    assert events == render_events(step, complete=True)[:count]
    assert "message_stop" not in types_of(events)


# --- failures ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "kind", "status", "retry_after_ms"),
    [
        ({"kind": "overloaded"}, FailureKind.OVERLOADED, 529, None),
        ({"kind": "overloaded", "mid_stream_after": 1}, FailureKind.OVERLOADED, 200, None),
        ({"kind": "rate_limited"}, FailureKind.RATE_LIMITED, 429, 1000),
        ({"kind": "rate_limited", "retry_after": 2.5}, FailureKind.RATE_LIMITED, 429, 2500),
        ({"kind": "server_error"}, FailureKind.SERVER_ERROR, 500, None),
        ({"kind": "server_error", "status": 503}, FailureKind.SERVER_ERROR, 503, None),
        ({"kind": "prompt_too_long"}, FailureKind.PROMPT_TOO_LONG, 400, None),
        ({"kind": "request_too_large"}, FailureKind.PROMPT_TOO_LONG, 413, None),
        ({"kind": "media_too_large"}, FailureKind.MEDIA_TOO_LARGE, 400, None),
        ({"kind": "other"}, FailureKind.OTHER, 400, None),
        ({"kind": "connection"}, FailureKind.CONNECTION, None, None),
        ({"kind": "timeout", "mid_stream_after": 2}, FailureKind.TIMEOUT, None, None),
    ],
)
def test_scripted_model_raises_the_classified_failure(
    error: dict[str, Any], kind: FailureKind, status: int | None, retry_after_ms: int | None
) -> None:
    """ScriptedModel yields the events before the error, then raises the matching failure."""
    step = one_step({"content": [{"text": "hi"}], "error": error}).steps[0]
    model = ScriptedModel(Scenario(steps=(step,)))
    events, failure = asyncio.run(play(model))
    assert events == render_events(step, model=REQUEST.model)
    assert failure is not None
    assert (failure.kind, failure.status, failure.retry_after_ms) == (kind, status, retry_after_ms)
    assert step.error is not None
    assert scripted_failure(step.error) is not None


def test_scripted_truncated_stream_raises_nothing() -> None:
    """A truncated step yields events without message_stop and ends without an exception."""
    model = ScriptedModel(one_step({"content": [{"text": "hi"}], "error": {"kind": "truncated"}}))
    events, failure = asyncio.run(play(model))
    assert failure is None
    assert events
    assert types_of(events)[-1] == "message_delta"


def test_scripted_model_plays_steps_in_order_and_records_requests() -> None:
    """Each stream() call takes the next step; every request is recorded."""
    model = ScriptedModel(load_shipped_scenario("overloaded_then_reply"))

    async def run() -> list[tuple[int, ModelFailure | None]]:
        outcomes = []
        for _ in range(3):
            events, failure = await play(model)
            outcomes.append((len(events), failure))
        return outcomes

    outcomes = asyncio.run(run())
    assert [f.kind if f else None for _, f in outcomes] == [
        FailureKind.OVERLOADED,
        FailureKind.OVERLOADED,
        None,
    ]
    assert outcomes[2][0] == 6
    assert model.requests == [REQUEST, REQUEST, REQUEST]
    assert model.remaining == 0


def test_exhausted_script_fails_clearly() -> None:
    """A request past the end of the script raises OTHER naming how many requests it had."""
    model = ScriptedModel(one_step({"content": [{"text": "hi"}]}))

    async def run() -> ModelFailure | None:
        await play(model)
        return (await play(model))[1]

    failure = asyncio.run(run())
    assert failure is not None
    assert failure.kind is FailureKind.OTHER
    assert failure.message == "scenario exhausted after 1 requests"
    assert len(model.requests) == 2


def test_delay_ms_waits_before_each_event() -> None:
    """``delay_ms`` awaits the injected sleep once per event."""
    waits: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        waits.append(seconds)

    model = ScriptedModel(one_step({"content": [{"text": "hi"}], "delay_ms": 25}), sleep=fake_sleep)
    events, _ = asyncio.run(play(model))
    assert waits == [0.025] * len(events)


def test_error_kinds_cover_the_documented_list() -> None:
    """The error kinds are exactly the ones the module docstring documents."""
    assert {k.value for k in ErrorKind} == {
        "overloaded",
        "rate_limited",
        "server_error",
        "prompt_too_long",
        "media_too_large",
        "request_too_large",
        "output_overflow",
        "connection",
        "timeout",
        "truncated",
        "other",
    }


def test_importing_models_and_scenarios_does_not_load_the_sdk() -> None:
    """Importing the model and scenario modules loads neither anthropic nor httpx2."""
    code = (
        "import sys\n"
        "import fsm_agent.runtime.models, fsm_agent.testing.scenario\n"
        "import fsm_agent.testing.fake_server\n"
        "print(sorted(m for m in ('anthropic', 'httpx2') if m in sys.modules))\n"
    )
    root = Path(__file__).resolve().parents[2]
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root
    )
    assert result.stdout.strip() == "[]"


def test_only_the_latest_requests_are_kept() -> None:
    """A long session keeps a request count and the last few requests, not every request."""
    model = ScriptedModel(
        parse_scenario({"steps": [{"content": [{"text": "hi"}]}] * 5}), keep_requests=2
    )

    async def run() -> None:
        for _ in range(5):
            await play(model)

    asyncio.run(run())
    assert model.request_count == 5
    assert model.requests == [REQUEST, REQUEST]
    assert model.remaining == 0


def test_keeping_no_request_is_refused() -> None:
    """keep_requests below one is a ConfigError naming the option."""
    with pytest.raises(ConfigError, match="keep_requests"):
        ScriptedModel(one_step({"content": [{"text": "hi"}]}), keep_requests=0)
