"""Every hook event fires where SPEC §6 says, once per occurrence, and the run's trace replays.

Runs an ``Agent`` on a scripted model with a recording Python hook on every event.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from fsm_agent.core.config import LoopConfig
from fsm_agent.core.effects import HookEvent
from fsm_agent.core.events import HookOutcome
from fsm_agent.core.messages import SystemMessage
from fsm_agent.runtime.agent import Agent, RunResult
from fsm_agent.runtime.hooks import HookInput, Hooks
from fsm_agent.runtime.permissions import PermissionPolicy, PermissionRequest
from fsm_agent.runtime.tool import Tool, tool
from fsm_agent.testing.scenario import ScriptedModel, parse_scenario
from fsm_agent.toolbox import Read, Write
from fsm_agent.trace.replay import replay

MODEL = "scripted-model"
READ_OK = {"content": [{"tool_use": {"name": "Read", "input": {"file_path": "a.txt"}}}]}
FAILING = {"content": [{"tool_use": {"name": "flaky", "input": {"path": "nope.txt"}}}]}


@tool(concurrency_safe=True, read_only=True)
async def flaky(path: str) -> str:
    """A tool whose every call fails."""
    raise OSError(f"cannot reach {path}")


DONE = {"content": [{"text": "Done."}]}


class Recorder:
    """A hook for every event that notes what it was told and answers ``answers[event]``."""

    def __init__(self, answers: dict[HookEvent, HookOutcome] | None = None) -> None:
        self.seen: list[HookInput] = []
        self.answers = answers or {}

    def __call__(self, hook_input: HookInput) -> HookOutcome | None:
        self.seen.append(hook_input)
        return self.answers.get(hook_input.hook_event)

    @property
    def events(self) -> list[str]:
        return [h.hook_event.value for h in self.seen]

    def hooks(self) -> Hooks:
        every = [self]
        return Hooks(
            pre_tool_use=every,
            post_tool_use=every,
            post_tool_use_failure=every,
            user_prompt_submit=every,
            stop=every,
            subagent_stop=every,
            stop_failure=every,
            pre_compact=every,
            session_start=every,
            session_end=every,
            notification=every,
        )


def run_agent(
    tmp_path: Path,
    steps: list[dict[str, Any]],
    recorder: Recorder,
    *,
    tools: list[Tool[Any]] | None = None,
    permissions: PermissionPolicy | None = None,
    **config: Any,
) -> tuple[RunResult, ScriptedModel]:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    (work / "a.txt").write_text("alpha\n", encoding="utf-8")
    model = ScriptedModel(parse_scenario({"steps": steps}), name=MODEL)
    agent = Agent(
        model=model,
        tools=tools if tools is not None else [Read(), flaky],
        permissions=permissions,
        config=LoopConfig(model=MODEL, **config),
        hooks=recorder.hooks(),
        trace=tmp_path / "trace.jsonl",
        cwd=work,
    )
    return asyncio.run(agent.run("Read a.txt, then nope.txt.")), model


def test_every_event_of_a_run_fires_once_where_it_belongs(tmp_path: Path) -> None:
    """SessionStart, UserPromptSubmit, tool hooks per call, Stop, SessionEnd: in order, once."""
    recorder = Recorder()
    result, _ = run_agent(tmp_path, [READ_OK, FAILING, DONE], recorder)
    assert result.terminal == "completed"
    assert recorder.events == [
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse",
        "PreToolUse",
        "PostToolUseFailure",
        "Stop",
        "SessionEnd",
    ]
    by_event = {h.hook_event: h for h in recorder.seen}
    assert by_event[HookEvent.SESSION_START].payload == {"source": "startup"}
    assert by_event[HookEvent.USER_PROMPT_SUBMIT].payload == {
        "prompt": "Read a.txt, then nope.txt."
    }
    failure = by_event[HookEvent.POST_TOOL_USE_FAILURE]
    assert failure.tool_name == "flaky"
    assert failure.tool_input == {"path": "nope.txt"}
    assert "cannot reach nope.txt" in failure.payload["error"]
    assert by_event[HookEvent.SESSION_END].payload == {"reason": "completed"}
    assert {h.session_id for h in recorder.seen} == {recorder.seen[0].session_id}
    assert result.trace_path is not None
    replay(result.trace_path)


def test_session_start_context_reaches_the_first_request(tmp_path: Path) -> None:
    """SessionStart additional context is in the first request; its notice is shown, not sent."""
    start = HookOutcome(additional_context=("branch: main",), system_messages=("loaded",))
    recorder = Recorder({HookEvent.SESSION_START: start})
    result, model = run_agent(tmp_path, [DONE], recorder)
    first = json.dumps(model.requests[0].messages)
    assert "branch: main" in first
    assert "loaded" not in first
    assert any(isinstance(m, SystemMessage) and m.text == "loaded" for m in result.messages)


def test_failure_hook_context_reaches_the_model(tmp_path: Path) -> None:
    """PostToolUseFailure additional context goes to the model beside the failed call's result."""
    hint = HookOutcome(additional_context=("list the folder before reading",))
    recorder = Recorder({HookEvent.POST_TOOL_USE_FAILURE: hint})
    result, model = run_agent(tmp_path, [FAILING, DONE], recorder)
    assert result.terminal == "completed"
    assert "list the folder before reading" in json.dumps(model.requests[1].messages)


def test_pre_compact_runs_before_the_summary_and_shapes_it(tmp_path: Path) -> None:
    """PreCompact fires before a compaction; its context becomes the summary's instructions."""
    keep = HookOutcome(additional_context=("keep the list of files touched",))
    recorder = Recorder({HookEvent.PRE_COMPACT: keep})
    steps = [
        {"error": {"kind": "prompt_too_long"}},
        {"content": [{"text": "A summary."}]},  # the compaction's own request
        DONE,
    ]
    result, model = run_agent(tmp_path, steps, recorder)
    assert result.terminal == "completed"
    assert recorder.events.count("PreCompact") == 1
    assert recorder.events.index("PreCompact") < recorder.events.index("Stop")
    assert "keep the list of files touched" in json.dumps(model.requests[1].messages)
    assert result.trace_path is not None
    replay(result.trace_path)


def test_a_subagent_runs_subagent_stop_instead_of_stop(tmp_path: Path) -> None:
    """In a subagent's loop (is_subagent) the stop point fires SubagentStop, not Stop."""
    recorder = Recorder()
    result, _ = run_agent(tmp_path, [DONE], recorder, is_subagent=True)
    assert result.terminal == "completed"
    assert "SubagentStop" in recorder.events
    assert "Stop" not in recorder.events


def test_stop_failure_fires_when_the_run_ends_on_an_api_error(tmp_path: Path) -> None:
    """A run ending on an API error fires StopFailure (not Stop), then SessionEnd."""
    recorder = Recorder()
    result, _ = run_agent(tmp_path, [{"error": {"kind": "other"}}], recorder)
    assert result.terminal == "model_error"
    assert recorder.events[-1] == "SessionEnd"
    assert "Stop" not in recorder.events


def test_notification_fires_when_a_person_is_asked(tmp_path: Path) -> None:
    """A question to a person fires Notification once (permission_prompt, naming the tool)."""
    recorder = Recorder()
    asked: list[str] = []

    def ask(request: PermissionRequest) -> bool:
        asked.append(request.tool_name)
        return False

    write = {
        "content": [
            {"tool_use": {"name": "Write", "input": {"file_path": "n.txt", "content": "x"}}}
        ]
    }
    result, _ = run_agent(
        tmp_path, [write, DONE], recorder, tools=[Write()], permissions=PermissionPolicy(ask=ask)
    )
    assert result.terminal == "completed"
    assert recorder.events.count("Notification") == 1
    [note] = [h for h in recorder.seen if h.hook_event is HookEvent.NOTIFICATION]
    assert note.payload["notification_type"] == "permission_prompt"
    assert "Write" in note.payload["message"]
    assert asked == ["Write"]
    assert result.trace_path is not None
    replay(result.trace_path)


def test_no_notification_when_no_one_is_asked(tmp_path: Path) -> None:
    """Without an ask callback nobody is prompted, so Notification does not fire."""
    recorder = Recorder()
    write = {
        "content": [
            {"tool_use": {"name": "Write", "input": {"file_path": "n.txt", "content": "x"}}}
        ]
    }
    result, _ = run_agent(tmp_path, [write, DONE], recorder, tools=[Write()])
    assert result.terminal == "completed"
    assert "Notification" not in recorder.events
