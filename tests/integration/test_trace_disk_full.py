"""A disk that fills while a run writes its trace.

A file-size limit (``RLIMIT_FSIZE``) stands in for the full disk: the kernel takes the bytes up
to the limit, then refuses the rest, so a line is cut in the middle exactly as it is when a
disk fills (Python ignores ``SIGXFSZ``, so the write fails with ``EFBIG``). The run is cut at
every line of a recorded run in turn: each time the file keeps the whole lines before the
refused one, nothing is performed that the file lacks (DESIGN §5), and the run resumes.
"""

from __future__ import annotations

import asyncio
import resource
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson
import pytest

from fsm_agent import Agent
from fsm_agent.cli import main
from fsm_agent.core.config import LoopConfig
from fsm_agent.core.events import TurnStarted
from fsm_agent.core.messages import TextBlock, Usage, UserMessage
from fsm_agent.errors import TraceWriteFailed
from fsm_agent.runtime.agent import RunFinished, RunResult
from fsm_agent.runtime.tool import tool
from fsm_agent.testing.scenario import ScriptedModel, parse_scenario
from fsm_agent.trace.message_dumps import TranscriptJson
from fsm_agent.trace.reader import read_trace
from fsm_agent.trace.replay import replay, resume
from fsm_agent.trace.writer import TraceWriter

CALL = {
    "content": [{"text": "Appending."}, {"tool_use": {"name": "append", "input": {"line": "once"}}}]
}
ANSWER = {"content": [{"text": "Done."}]}


def build(work: Path, trace: Path, *steps: dict[str, Any]) -> Agent:
    """An agent whose one tool appends a line to ``work/side.txt`` (the side effect counted)."""

    @tool()
    async def append(line: str) -> str:
        """Append a line to side.txt."""
        with (work / "side.txt").open("a", encoding="utf-8") as file:
            file.write(line + "\n")
        return "appended"

    return Agent(
        model=ScriptedModel(parse_scenario({"steps": list(steps)})),
        tools=[append],
        cwd=work,
        trace=trace,
        store=False,
        clock=lambda: 0.0,  # elapsed times are the same in every run, so lines compare as bytes
    )


@contextmanager
def file_size_limit(limit: int) -> Iterator[None]:
    """Files of this process cannot grow past ``limit`` bytes while inside."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))


def line_spans(data: bytes) -> list[tuple[int, int]]:
    """(start, end) of each line of ``data``, its newline included."""
    spans, start = [], 0
    while start < len(data):
        end = data.index(b"\n", start) + 1
        spans.append((start, end))
        start = end
    return spans


def calls_append(line: bytes) -> bool:
    """Whether the line asks for the tool's call step (the one that has the side effect)."""
    record = orjson.loads(line)
    return any(
        effect.get("tool_name") == "append" and effect.get("step") == "call"
        for effect in record.get("effects", ())
    )


def test_a_full_disk_at_any_line_leaves_whole_lines_and_performs_nothing_unrecorded(
    tmp_path: Path,
) -> None:
    whole = tmp_path / "whole"
    whole.mkdir()
    assert build(whole, whole / "t.jsonl", CALL, ANSWER).run_sync("append").terminal == "completed"
    data = (whole / "t.jsonl").read_bytes()
    spans = line_spans(data)
    (call_line,) = [i for i, (a, b) in enumerate(spans) if calls_append(data[a:b])]
    for i, (start, end) in enumerate(spans):
        work = tmp_path / f"cut-{i}"
        work.mkdir()
        agent = build(work, work / "t.jsonl", CALL, ANSWER)
        with file_size_limit((start + end) // 2), pytest.raises(TraceWriteFailed) as failed:
            agent.run_sync("append")
        kept = (work / "t.jsonl").read_bytes()
        assert failed.value.cut_back
        assert failed.value.path == str(work / "t.jsonl")
        assert len(kept) == start, f"line {i + 1}: the file keeps exactly the lines before it"
        if i == 0:
            continue
        # The same records as the whole run's (the header differs in its run id and start).
        assert kept.split(b"\n")[1:] == data[:start].split(b"\n")[1:]
        assert failed.value.seq == orjson.loads(data[start:end])["seq"]
        assert not read_trace(work / "t.jsonl").truncated  # read strictly: no cut line
        # Write-ahead: the tool ran only if the line that asked for it is on file.
        ran = (work / "side.txt").exists()
        assert ran == (i > call_line), f"line {i + 1}: tool ran={ran}"


def test_a_run_stopped_by_a_full_disk_resumes_without_running_its_call_again(
    tmp_path: Path,
) -> None:
    whole = tmp_path / "whole"
    whole.mkdir()
    build(whole, whole / "t.jsonl", CALL, ANSWER).run_sync("append")
    data = (whole / "t.jsonl").read_bytes()
    spans = line_spans(data)
    (call_line,) = [i for i, (a, b) in enumerate(spans) if calls_append(data[a:b])]
    start, end = spans[call_line + 1]  # the line after the call: the tool has run
    work = tmp_path / "cut"
    work.mkdir()
    with file_size_limit((start + end) // 2), pytest.raises(TraceWriteFailed):
        build(work, work / "t.jsonl", CALL, ANSWER).run_sync("append")
    assert (work / "side.txt").read_text(encoding="utf-8") == "once\n"

    agent = build(work, work / "resumed.jsonl", ANSWER)

    async def go() -> RunResult:
        async for update in agent.continue_from(resume(work / "t.jsonl")):
            if isinstance(update, RunFinished):
                return update.result
        raise AssertionError("the resumed run never finished")

    result = asyncio.run(go())
    assert result.terminal == "completed"
    assert (work / "side.txt").read_text(encoding="utf-8") == "once\n"
    assert replay(work / "resumed.jsonl").terminal == "completed"


def test_the_command_line_names_the_file_and_how_to_go_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = Path(__file__).parents[2] / "fsm_agent" / "scenarios" / "tool_then_reply.json"
    monkeypatch.chdir(tmp_path)
    argv = ["run", "hi", "--model", f"scripted:{scenario}", "--yes", "--trace"]
    assert main([*argv, "whole.jsonl"]) == 0
    with file_size_limit((tmp_path / "whole.jsonl").stat().st_size * 3 // 4):
        status = main([*argv, "t.jsonl"])
    err = capsys.readouterr().err
    assert status == 1
    assert "t.jsonl: record seq" in err
    assert "could not be written" in err
    assert "fsm-agent resume t.jsonl" in err
    assert "Traceback" not in err
    read_trace(tmp_path / "t.jsonl")  # whole lines only


@pytest.mark.parametrize("buffered", [False, True])
def test_a_handed_file_is_cut_back_only_when_no_buffer_can_hold_the_refused_line(
    tmp_path: Path, buffered: bool
) -> None:
    prompt = TurnStarted(messages=(UserMessage(uuid="u", content=(TextBlock(text="x" * 4000),)),))
    path = tmp_path / "t.jsonl"
    with path.open("wb", buffering=-1 if buffered else 0) as file:
        writer = TraceWriter(file, config=LoopConfig(model="m"))
        header = path.stat().st_size
        with file_size_limit(header + 100), pytest.raises(TraceWriteFailed) as failed:
            writer.write_event(prompt)
        assert (failed.value.seq, failed.value.cut_back) == (1, not buffered)
        assert failed.value.path == str(path)
        if buffered:  # part of the line may sit in the file's buffer: no cutting back
            assert "may be cut off" in str(failed.value)
        else:
            assert path.read_bytes().endswith(b"\n")
            assert path.stat().st_size == header
        with pytest.raises(TraceWriteFailed):  # every later record is refused the same way
            writer.write_end(None, Usage())
        writer.close()


def test_a_turn_after_a_refused_one_writes_its_whole_transcript(tmp_path: Path) -> None:
    """A conversation's turn whose trace refused its first event (the disk filled) holds no
    transcript a later turn may begin in: the next turn writes its own whole."""
    kept = TranscriptJson(full_every=8)
    first = (UserMessage(uuid="1:prompt.1", content=(TextBlock(text="question " * 50),)),)
    with TraceWriter(tmp_path / "one.jsonl", config=LoopConfig(), transcript=kept) as writer:
        writer.write_event(TurnStarted(messages=first))
    second = (*first, UserMessage(uuid="2:prompt.1", content=(TextBlock(text="more"),)))
    refused = TraceWriter(tmp_path / "two.jsonl", config=LoopConfig(), transcript=kept)
    limit = (tmp_path / "two.jsonl").stat().st_size + 100
    with file_size_limit(limit), pytest.raises(TraceWriteFailed):
        refused.write_event(TurnStarted(messages=second))
    third = (*second, UserMessage(uuid="3:prompt.1", content=(TextBlock(text="again"),)))
    with TraceWriter(tmp_path / "three.jsonl", config=LoopConfig(), transcript=kept) as writer:
        writer.write_event(TurnStarted(messages=third))
    line = (tmp_path / "three.jsonl").read_bytes().splitlines()[1]
    assert b"transcript_from" not in line
    started = read_trace(tmp_path / "three.jsonl").of_kind("event")[0].data["event"]
    assert len(started["messages"]) == 3
