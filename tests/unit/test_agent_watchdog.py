"""The driver's idle watchdog (SPEC §3): a stream that goes silent is abandoned and retried."""

from __future__ import annotations

from pathlib import Path

from fsm_agent.core.config import LoopConfig
from fsm_agent.runtime.agent import Agent
from fsm_agent.testing.scenario import ScriptedModel, parse_scenario
from fsm_agent.trace.reader import read_trace


def test_a_silent_stream_times_out_and_is_retried(tmp_path: Path) -> None:
    """Events 300 ms apart against a 50 ms watchdog: the first attempt fails as a timeout,
    the retry gets the answer, and the trace records why."""
    scenario = parse_scenario(
        {
            "steps": [
                {"content": [{"text": "slow"}], "delay_ms": 300},
                {"content": [{"text": "Fast answer."}]},
            ]
        }
    )
    trace = tmp_path / "t.jsonl"
    agent = Agent(
        model=ScriptedModel(scenario),
        config=LoopConfig(stream_idle_timeout_ms=50, retry_base_ms=1, retry_cap_ms=1),
        cwd=tmp_path,
        trace=trace,
    )
    result = agent.run_sync("hi")
    assert result.terminal == "completed"
    assert result.text == "Fast answer."
    failed = [
        r.data["event"]
        for r in read_trace(trace).of_kind("event")
        if r.data["event"]["type"] == "ModelStreamFailed"
    ]
    assert [f["kind"] for f in failed] == ["timeout"]
    assert "idle watchdog" in failed[0]["message"]
