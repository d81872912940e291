"""Where traces go (folders, the default folder), their timing metadata and their lineage."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from fsm_agent.errors import ConfigError
from fsm_agent.runtime.agent import Agent, RunFinished
from fsm_agent.testing.scenario import ScriptedModel, parse_scenario
from fsm_agent.toolbox import default_tools
from fsm_agent.trace.location import TRACE_DIR_ENV, default_trace_folder
from fsm_agent.trace.reader import read_trace
from fsm_agent.trace.records import ELAPSED
from fsm_agent.trace.replay import diff_traces, fork, replay

GLOB_TRACES_THEN_ANSWER = {
    "steps": [
        {"content": [{"tool_use": {"name": "Glob", "input": {"pattern": "**/*.jsonl"}}}]},
        {"content": [{"text": "done"}]},
    ]
}


def agent_in(cwd: Path, trace: Any) -> Agent:
    """An agent that globs for trace files, then answers."""
    model = ScriptedModel(parse_scenario(GLOB_TRACES_THEN_ANSWER))
    return Agent(model=model, tools=default_tools(), cwd=cwd, trace=trace)


def test_a_target_ending_in_a_slash_is_a_folder_with_one_file_per_run(tmp_path: Path) -> None:
    """trace="traces/" creates the folder and each run writes a new file in it."""
    target = f"{tmp_path}/traces/"
    first = agent_in(tmp_path, target).run_sync("look").trace_path
    second = agent_in(tmp_path, target).run_sync("look").trace_path
    assert first is not None and second is not None and first != second
    assert first.parent == second.parent == tmp_path / "traces"
    assert first.is_file() and second.is_file()


def test_an_existing_folder_is_a_folder_and_a_plain_path_a_file(tmp_path: Path) -> None:
    """An existing folder gets a run file inside it; any other path is the file itself."""
    (tmp_path / "kept").mkdir()
    inside = agent_in(tmp_path, tmp_path / "kept").run_sync("look").trace_path
    assert inside is not None and inside.parent == tmp_path / "kept"
    exact = agent_in(tmp_path, tmp_path / "deep" / "one.jsonl").run_sync("look").trace_path
    assert exact == tmp_path / "deep" / "one.jsonl" and exact.is_file()


def test_a_file_in_the_way_of_the_trace_folder_is_a_config_error(tmp_path: Path) -> None:
    """A trace folder that cannot be created is refused by name, before the run starts."""
    (tmp_path / "traces").write_text("not a folder")
    with pytest.raises(ConfigError, match="traces"):
        agent_in(tmp_path, f"{tmp_path}/traces/").run_sync("look")


def test_the_default_folder_is_the_user_state_folder_outside_the_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a target, traces go to the user's state folder, not the working folder."""
    monkeypatch.delenv(TRACE_DIR_ENV, raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    work = tmp_path / "work"
    work.mkdir()
    path = agent_in(work, None).run_sync("look").trace_path
    assert path is not None and path.parent == default_trace_folder()
    assert path.is_relative_to(tmp_path / "state") and not path.is_relative_to(work)
    assert default_trace_folder({TRACE_DIR_ENV: "/elsewhere"}) == Path("/elsewhere")


def test_the_agent_never_lists_its_own_trace_folder(tmp_path: Path) -> None:
    """Glob inside the working folder does not see the traces of this or earlier runs."""
    target = f"{tmp_path}/traces/"
    agent_in(tmp_path, target).run_sync("look")
    result = agent_in(tmp_path, target).run_sync("look")
    answered = [
        block
        for message in result.messages
        for block in getattr(message, "content", ())
        if type(block).__name__ == "ToolResultBlock"
    ]
    assert [str(block.content) for block in answered] == ["No files found"]


def test_events_carry_elapsed_time_that_replay_and_diff_ignore(tmp_path: Path) -> None:
    """Agent traces time their events (not stream deltas); replay and diff pay no attention."""
    work = tmp_path / "work"
    work.mkdir()
    first = agent_in(work, tmp_path / "a.jsonl").run_sync("look").trace_path
    second = agent_in(work, tmp_path / "b.jsonl").run_sync("look").trace_path
    assert first is not None and second is not None
    events = list(read_trace(first).of_kind("event"))
    timed = [r.data[ELAPSED] for r in events if ELAPSED in r.data]
    assert timed and timed == sorted(timed) and all(t >= 0 for t in timed)
    assert all(
        ELAPSED not in r.data for r in events if r.data["event"]["type"] == "ModelStreamEvent"
    )
    assert replay(first).ended
    assert diff_traces(first, second) is None


def test_a_continued_fork_names_its_parent_and_point(tmp_path: Path) -> None:
    """The header of a trace continued from a fork records the parent trace and the seq."""
    original = agent_in(tmp_path, tmp_path / "original.jsonl").run_sync("look").trace_path
    assert original is not None
    point = fork(original, 3)

    async def go() -> Path:
        agent = agent_in(tmp_path, tmp_path / "forked.jsonl")
        updates = [update async for update in agent.continue_from(point)]
        finished = updates[-1]
        assert isinstance(finished, RunFinished) and finished.result.trace_path is not None
        return finished.result.trace_path

    forked = asyncio.run(go())
    parent = read_trace(forked).header.meta["parent"]
    parent_id = read_trace(original).header.meta["run_id"]
    assert parent == {"kind": "fork", "trace": str(original), "seq": 3, "run_id": parent_id}
