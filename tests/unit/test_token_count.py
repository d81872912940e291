"""The optional exact count (SPEC §7.5): asked before the context checks, recorded, and
never fatal when it fails."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import orjson
import pytest

from fsm_agent.core import effects as fx
from fsm_agent.core.agent_core import AgentCore
from fsm_agent.core.config import LoopConfig
from fsm_agent.errors import ConfigError
from fsm_agent.runtime.agent import Agent
from fsm_agent.testing.invariants import check_run
from fsm_agent.testing.scenario import ScriptedModel, parse_scenario
from fsm_agent.testing.world import World, WorldRun, prompt
from fsm_agent.trace.replay import replay, resume

TEXT = {"content": [{"text": "done"}]}
# An autocompact threshold of 10,000 tokens: a prompt of a few characters is far below it.
SMALL_WINDOW = LoopConfig(context_window=43_000, count_tokens=True)


def _run(config: LoopConfig, counts: tuple[int | None, ...]) -> WorldRun:
    core = AgentCore(config=config)
    world = World(scenario=parse_scenario({"steps": [TEXT]}), token_counts=counts)
    run = WorldRun(core.feed, world, prompt("hi"))
    run.run()
    return run


def _names(run: WorldRun) -> list[str]:
    return [t.name for _, step in run.steps for t in step.transitions if t.machine == "loop"]


def test_the_count_is_asked_before_the_autocompact_decision() -> None:
    """With the switch on, each iteration counts once, between preprocessing and the checks."""
    run = _run(SMALL_WINDOW, (40,))
    names = _names(run)
    assert names.index("token_count_requested") < names.index("tokens_counted")
    assert names.index("tokens_counted") < names.index("context_prepared")
    assert names.count("token_count_requested") == 1
    assert run.terminal == "completed"


def test_a_count_over_the_threshold_compacts_where_the_estimate_would_not() -> None:
    """The exact figure decides: a count past the threshold starts autocompact although the
    estimate of a two-character prompt is tiny."""
    run = _run(SMALL_WINDOW, (12_000,))
    assert "autocompact_started" in _names(run)
    assert "autocompact_started" not in _names(_run(SMALL_WINDOW, (40,)))


def test_a_count_over_the_blocking_limit_ends_the_run_before_sending() -> None:
    """With compaction off, a count past the blocking limit is the blocking_limit terminal."""
    config = LoopConfig(
        context_window=43_000, count_tokens=True, autocompact=False, reactive_compact=False
    )
    run = _run(config, (30_000,))
    assert run.terminal == "blocking_limit"


def test_a_failed_count_falls_back_to_the_estimate() -> None:
    """A count that fails is recorded and the run goes on as if it had not been asked."""
    run = _run(SMALL_WINDOW, (None,))
    assert run.terminal == "completed"
    assert "autocompact_started" not in _names(run)
    (counted,) = [e for e, _ in run.steps if type(e).__name__ == "TokensCounted"]
    assert counted.error


def test_the_switch_is_off_by_default() -> None:
    """No count is asked unless the config says so."""
    run = _run(LoopConfig(context_window=43_000), ())
    assert "token_count_requested" not in _names(run)


def test_a_bad_timeout_is_a_config_error() -> None:
    """A timeout of zero or a wrong type is refused, naming the field."""
    with pytest.raises(ConfigError, match="count_tokens_timeout_ms"):
        LoopConfig(count_tokens_timeout_ms=0)
    with pytest.raises(ConfigError, match="count_tokens"):
        LoopConfig(count_tokens="yes")  # type: ignore[arg-type]


def _trace_events(path: Path, kind: str) -> list[dict[str, Any]]:
    records = [orjson.loads(line) for line in path.read_bytes().splitlines()]
    return [
        r["event"] for r in records if r.get("record") == "event" and r["event"]["type"] == kind
    ]


def test_the_driver_counts_with_the_model_and_replay_needs_no_model(tmp_path: Path) -> None:
    """ScriptedModel answers the count; the trace holds it and replays identically."""
    model = ScriptedModel(parse_scenario({"steps": [TEXT]}))
    trace = tmp_path / "run.jsonl"
    agent = Agent(model=model, trace=trace, cwd=tmp_path, config=LoopConfig(count_tokens=True))
    assert agent.run_sync("hello").terminal == "completed"
    (counted,) = _trace_events(trace, "TokensCounted")
    assert counted["input_tokens"] > 0
    assert counted["error"] == ""
    assert replay(trace).terminal == "completed"


class _Broken(ScriptedModel):
    """A scripted model whose count fails in the way ``how`` names."""

    def __init__(self, how: str) -> None:
        super().__init__(parse_scenario({"steps": [TEXT]}))
        self.how = how

    async def count_tokens(self, messages: list[dict[str, Any]], **_: Any) -> int:  # type: ignore[override]
        if self.how == "raise":
            raise ConnectionError("the count endpoint is down")
        if self.how == "hang":
            await asyncio.sleep(60)
        if self.how == "garbage":
            return "many"  # type: ignore[return-value]
        return -5


@pytest.mark.parametrize(
    ("how", "reason"),
    [
        ("raise", "ConnectionError: the count endpoint is down"),
        ("hang", "no answer within 0.05 s"),
        ("garbage", "not a number of tokens"),
        ("negative", "not a number of tokens"),
    ],
)
def test_a_failing_count_never_kills_the_run(tmp_path: Path, how: str, reason: str) -> None:
    """An error, a hang past the timeout or a nonsense answer is recorded with its reason,
    and the run completes on the estimate."""
    trace = tmp_path / "run.jsonl"
    config = LoopConfig(count_tokens=True, count_tokens_timeout_ms=50)
    agent = Agent(model=_Broken(how), trace=trace, cwd=tmp_path, config=config)
    assert agent.run_sync("hello").terminal == "completed"
    (counted,) = _trace_events(trace, "TokensCounted")
    assert counted["input_tokens"] is None
    assert reason in counted["error"]


def test_a_model_that_cannot_count_is_recorded_as_such(tmp_path: Path) -> None:
    """A model without count_tokens: the reason is recorded and the estimate is used."""

    class Plain:
        name = "plain"

        def __init__(self) -> None:
            self.inner = ScriptedModel(parse_scenario({"steps": [TEXT]}))

        def stream(self, request: Any) -> Any:
            return self.inner.stream(request)

    trace = tmp_path / "run.jsonl"
    agent = Agent(model=Plain(), trace=trace, cwd=tmp_path, config=LoopConfig(count_tokens=True))
    assert agent.run_sync("hello").terminal == "completed"
    (counted,) = _trace_events(trace, "TokensCounted")
    assert counted["error"] == "Plain cannot count tokens"


def test_the_effect_names_the_model_and_history_length() -> None:
    """CountTokens carries the model the request goes to and how many messages it holds."""
    core = AgentCore(config=LoopConfig(count_tokens=True))
    world = World(scenario=parse_scenario({"steps": [TEXT]}), token_counts=(5,))
    run = WorldRun(core.feed, world, prompt("hi"))
    run.run()
    (asked,) = [e for _, s in run.steps for e in s.effects if isinstance(e, fx.CountTokens)]
    assert asked.model == core.config.model
    assert asked.message_count == 1


def test_a_run_cut_while_the_count_is_out_resumes_and_counts_again(tmp_path: Path) -> None:
    """A crash after CountTokens was recorded and before its answer: resume asks again, and
    the run finishes and replays."""

    original = tmp_path / "original.jsonl"
    config = LoopConfig(count_tokens=True)
    model = ScriptedModel(parse_scenario({"steps": [TEXT]}))
    Agent(model=model, trace=original, cwd=tmp_path, config=config).run_sync("hello")
    lines = original.read_bytes().splitlines(keepends=True)
    asked = next(i for i, line in enumerate(lines) if b'"type":"CountTokens"' in line)
    crashed = tmp_path / "crashed.jsonl"
    crashed.write_bytes(b"".join(lines[: asked + 1]))
    point = resume(crashed)
    assert [type(item.effect).__name__ for item in point.in_flight] == ["CountTokens"]
    agent = Agent(
        model=ScriptedModel(parse_scenario({"steps": [TEXT]})),
        trace=tmp_path / "resumed.jsonl",
        cwd=tmp_path,
        config=config,
    )

    async def go() -> Any:
        return [u async for u in agent.continue_from(point)][-1].result

    assert asyncio.run(go()).terminal == "completed"
    assert len(_trace_events(tmp_path / "resumed.jsonl", "TokensCounted")) == 1
    assert replay(tmp_path / "resumed.jsonl").terminal == "completed"


def test_a_count_still_over_after_a_compaction_stops_compacting() -> None:
    """Autocompact, a refusal, reactive compact, then a count still over the threshold: the
    compaction refilled at once, so the run does not compact a third time without a
    response (the refill breaker, with the exact figure)."""
    core = AgentCore(config=SMALL_WINDOW)
    steps = [{"error": {"kind": "prompt_too_long"}}, TEXT]
    world = World(scenario=parse_scenario({"steps": steps}), token_counts=(12_000, 12_000))
    run = WorldRun(core.feed, world, prompt("hi"))
    run.run()
    names = _names(run)
    assert names.count("autocompact_done") + names.count("reactive_compact_retry") == 2
    assert check_run(core, run.steps, SMALL_WINDOW, model_steps=2) == []
