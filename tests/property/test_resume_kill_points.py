"""Resume and continue from any kill point (DESIGN §5, SPEC §5.2 "Ours").

A run with a read-only tool (``Look``) and a side-effecting one (``Touch``) is recorded through
the async driver; then the trace is cut after every line (and once mid-line), resumed and
continued with a model that answers in text. The continued trace must replay, and a call the
resume point marks as possibly run must not run again: each ``Touch`` takes effect at most once
over the cut recording and its continuation together.

The same run laid out as schema 2 (events alone, ``step`` lines) is cut wherever the same
records are on file, and resumed: it must give the same answer (DESIGN §5: a schema 3 line,
written after the core answered and before any of its effects ran, loses in a crash exactly
what the event line of schema 2 would have lost a few µs earlier).
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from trace_layouts import expand_line, write_schema2

from fsm_agent.core import effects as fx
from fsm_agent.core.config import LoopConfig
from fsm_agent.errors import UsageError
from fsm_agent.runtime.agent import Agent, RunFinished, RunResult
from fsm_agent.runtime.tool import Tool, tool
from fsm_agent.testing.scenario import ScriptedModel, parse_scenario
from fsm_agent.testing.strategies import events_through_first_block
from fsm_agent.trace.reader import read_trace
from fsm_agent.trace.records import seqs_taken
from fsm_agent.trace.replay import ResumePoint, replay, resume

CONFIG = LoopConfig(max_retries=2, retry_base_ms=0)
ANSWER = {"steps": [{"content": [{"text": "finished"}]}] * 3}


def counting_tools(log: list[str]) -> list[Tool[Any]]:
    """A read-only tool and a side-effecting one; each appends ``Name:key`` to ``log``."""

    @tool(name="Look", description="Look at something.", concurrency_safe=True, read_only=True)
    async def look(*, key: str) -> str:
        log.append(f"Look:{key}")
        return f"saw {key}"

    @tool(name="Touch", description="Change something.")
    async def touch(*, key: str) -> str:
        log.append(f"Touch:{key}")
        return f"touched {key}"

    return [look, touch]


@st.composite
def tool_turns(draw: st.DrawFn) -> list[dict[str, Any]]:
    """One or two tool turns (each maybe failing once after its first block), then text."""
    steps: list[dict[str, Any]] = []
    keys = iter(range(100))
    for _ in range(draw(st.integers(min_value=1, max_value=2))):
        names = draw(st.lists(st.sampled_from(["Look", "Touch"]), min_size=1, max_size=3))
        content = [{"tool_use": {"name": n, "input": {"key": f"k{next(keys)}"}}} for n in names]
        turn = {"content": [*content, {"text": "and more"}], "delay_ms": 1}
        if draw(st.booleans()):
            after = events_through_first_block(turn["content"])
            steps.append({**turn, "error": {"kind": "overloaded", "mid_stream_after": after}})
        steps.append(turn)
    steps.append({"content": [{"text": "all done"}]})
    return steps


def drain(agent: Agent, point: ResumePoint) -> RunResult:
    """Continue from ``point`` to the end (never re-running a call without being asked)."""

    async def go() -> RunResult:
        updates = [u async for u in agent.continue_from(point)]
        finished = updates[-1]
        assert isinstance(finished, RunFinished)
        return finished.result

    return asyncio.run(go())


def called_touches(point: ResumePoint) -> list[str]:
    """Keys of the Touch calls whose call effect is in the cut trace (they may have run)."""
    return [
        str(record["effect"]["input"]["key"])
        for record in point.records[: len(point.records) - point.unwritten]
        if record.get("record") == "effect"
        and record["effect"]["type"] == "RunToolStep"
        and record["effect"]["step"] == "call"
        and record["effect"]["tool_name"] == "Touch"
    ]


def check_cut(tmp_path: Path, cut: bytes, name: str) -> None:
    """Resume the cut trace, continue it, and check replay and at-most-once Touch effects."""
    crashed = tmp_path / f"{name}.jsonl"
    crashed.write_bytes(cut)
    point = resume(crashed)
    marked = {
        str(item.effect.input["key"])
        for item in point.unsafe_to_rerun
        if isinstance(item.effect, fx.RunToolStep)
    }
    ran_before = called_touches(point)
    log: list[str] = []
    continued = tmp_path / f"{name}-continued.jsonl"
    agent = Agent(
        model=ScriptedModel(parse_scenario(ANSWER)),
        tools=counting_tools(log),
        config=CONFIG,
        trace=continued,
        cwd=tmp_path,
    )
    result = drain(agent, point)
    assert result.terminal == "completed", name
    assert replay(continued).terminal == "completed", name
    ran_again = [entry.split(":", 1)[1] for entry in log]
    assert not marked & set(ran_again), f"{name}: a call marked as possibly run ran again"
    touched = ran_before + [e.split(":", 1)[1] for e in log if e.startswith("Touch:")]
    assert len(touched) == len(set(touched)), f"{name}: a Touch ran twice: {touched}"


def answer(point: ResumePoint) -> tuple[object, ...]:
    """What a resume point decides: the state, what is on file, and what is in flight."""
    flying = tuple((item.effect, item.seq, item.maybe_side_effects) for item in point.in_flight)
    return point.core.phase, point.records, point.unwritten, flying, point.unsafe_to_rerun


def seq_ends(lines: list[bytes]) -> list[int]:
    """For each line count, the seq the next record would take after that many lines."""
    ends, seq = [1], 1
    for line in lines[1:]:
        seq += seqs_taken(orjson.loads(line))
        ends.append(seq)
    return ends


def check_same_as_schema_2(tmp_path: Path, lines: list[bytes], older: list[bytes]) -> None:
    """Cut the schema 3 lines after every line and in the middle of every line; resumed,
    each cut gives the answer of the schema 2 file cut where the same records are on file."""
    older_at = {end: count for count, end in enumerate(seq_ends(older), start=1)}
    for count, end in enumerate(seq_ends(lines), start=1):
        twin = tmp_path / "twin.jsonl"
        twin.write_bytes(b"".join(older[: older_at[end]]))
        expected = answer(resume(twin))
        for cut in (b"", lines[count][: len(lines[count]) // 2] if count < len(lines) else b""):
            crashed = tmp_path / "crashed.jsonl"
            crashed.write_bytes(b"".join(lines[:count]) + cut)
            assert answer(resume(crashed)) == expected, (count, cut[:40])


@settings(max_examples=3, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=tool_turns())
def test_a_run_cut_at_any_line_resumes_and_continues(tmp_path: Path, steps: Any) -> None:
    """Cut after any line (or mid-line), a recorded run resumes, continues to completed, the
    continued trace replays, and no call marked as possibly run is run again."""
    tmp_path = Path(tempfile.mkdtemp(dir=tmp_path))  # each example's files its own
    original = tmp_path / "original.jsonl"
    log: list[str] = []
    agent = Agent(
        model=ScriptedModel(parse_scenario({"steps": steps})),
        tools=counting_tools(log),
        config=CONFIG,
        trace=original,
        cwd=tmp_path,
    )
    assert agent.run_sync("go").terminal == "completed"
    touches = [e for e in log if e.startswith("Touch:")]
    assert len(touches) == len(set(touches)), "a side effect ran twice in the recording"
    lines = original.read_bytes().splitlines(keepends=True)
    assert read_trace(original).records  # the recording is readable
    assert replay(original).terminal == "completed"
    records = [r for n, line in enumerate(lines, 1) for r in expand_line(orjson.loads(line), n)]
    older = write_schema2(tmp_path / "schema2.jsonl", records)
    check_same_as_schema_2(tmp_path, lines, older.read_bytes().splitlines(keepends=True))
    for count in range(2, len(lines)):
        check_cut(tmp_path, b"".join(lines[:count]), f"cut{count}")
    middle = len(lines) // 2
    half = b"".join(lines[:middle]) + lines[middle][: len(lines[middle]) // 2]
    check_cut(tmp_path, half, "cut-mid-line")


def test_a_trace_cut_before_the_run_started_cannot_continue(tmp_path: Path) -> None:
    """A trace holding only its header names why it cannot be continued, instead of waiting
    forever, and leaves no new trace file behind."""
    original = tmp_path / "original.jsonl"
    agent = Agent(
        model=ScriptedModel(parse_scenario(ANSWER)), tools=(), config=CONFIG, trace=original
    )
    agent.run_sync("go")
    header_only = tmp_path / "header.jsonl"
    header_only.write_bytes(original.read_bytes().splitlines(keepends=True)[0])
    folder = tmp_path / "continued"
    continuing = Agent(
        model=ScriptedModel(parse_scenario(ANSWER)), tools=(), config=CONFIG, trace=f"{folder}/"
    )
    with pytest.raises(UsageError, match="before the run started"):
        drain(continuing, resume(header_only))
    assert not folder.exists() or not any(folder.iterdir())
