"""Subagents: the Task tool runs a child agent with its own core, tools, policy, limits and
trace, linked to the parent's call both ways (issue 14)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from fsm_agent.cli import main
from fsm_agent.core.config import LoopConfig
from fsm_agent.core.events import HookOutcome
from fsm_agent.core.messages import ToolResultBlock, UserMessage
from fsm_agent.errors import ConfigError
from fsm_agent.runtime.agent import Agent, RunResult
from fsm_agent.runtime.hooks import HookInput, HookMatcher, Hooks
from fsm_agent.runtime.permissions import PermissionMode, PermissionPolicy, PermissionRequest
from fsm_agent.runtime.subagents import SubagentDefinition, SubagentLimits
from fsm_agent.runtime.tool import ToolContext, tool
from fsm_agent.testing.scenario import ScriptedModel, parse_scenario
from fsm_agent.toolbox import Glob, Read, Write
from fsm_agent.toolbox.task import Task, TaskInput
from fsm_agent.trace.reader import read_trace
from fsm_agent.trace.replay import replay


def scripted(*steps: dict[str, Any]) -> ScriptedModel:
    return ScriptedModel(parse_scenario({"steps": list(steps)}))


def calls(*uses: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    return {"content": [{"tool_use": {"name": name, "input": data}} for name, data in uses]}


def text(words: str) -> dict[str, Any]:
    return {"content": [{"text": words}]}


def task(agent: str = "reader", prompt: str = "read a.txt") -> tuple[str, dict[str, Any]]:
    return ("Task", {"description": "a sub-task", "prompt": prompt, "subagent_type": agent})


def reader(*steps: dict[str, Any], **options: Any) -> SubagentDefinition:
    return SubagentDefinition(
        description="reads files", tools=[Read()], model=scripted(*steps), **options
    )


CHILD_READS = (calls(("Read", {"file_path": "a.txt"})), text("a.txt says hello"))


def run_parent(
    tmp_path: Path, parent_steps: list[dict[str, Any]], task_tool: Task, **options: Any
) -> RunResult:
    (tmp_path / "a.txt").write_text("hello\n", encoding="utf-8")
    options.setdefault("trace", tmp_path / "parent.jsonl")
    agent = Agent(
        model=scripted(*parent_steps), tools=[task_tool], cwd=tmp_path, store=False, **options
    )
    return agent.run_sync("go")


def task_results(result: RunResult) -> list[ToolResultBlock]:
    return [
        block
        for message in result.messages
        if isinstance(message, UserMessage)
        for block in message.content
        if isinstance(block, ToolResultBlock)
    ]


def test_the_child_answer_is_the_result_and_both_traces_replay(tmp_path: Path) -> None:
    """The child's final text is the Task result; parent and child traces each replay alone
    and name each other (parent: child run id and trace; child header: parent run and call)."""
    result = run_parent(
        tmp_path, [calls(task()), text("done")], Task({"reader": reader(*CHILD_READS)})
    )
    assert result.terminal == "completed"
    (answer,) = task_results(result)
    assert answer.content == "a.txt says hello" and not answer.is_error

    parent = tmp_path / "parent.jsonl"
    (started,) = [
        r.data["event"]
        for r in read_trace(parent).of_kind("event")
        if r.data["event"]["type"] == "SubagentStarted"
    ]
    child = Path(started["trace"])
    assert child == tmp_path / "parent.subagents" / f"{started['call_id']}.jsonl"
    header = read_trace(child).header
    assert header.config.is_subagent
    assert header.meta["run_id"] == started["run_id"]
    assert header.meta["subagent_of"] == {
        "agent": "reader",
        "run_id": read_trace(parent).header.meta["run_id"],
        "trace": str(parent),
        "call_id": started["call_id"],
    }
    assert replay(parent).terminal == "completed"
    assert replay(child).terminal == "completed"


def test_a_child_that_does_not_complete_gives_an_error_naming_its_end(tmp_path: Path) -> None:
    """A child stopped by its own max_turns gives an error result naming max_turns."""
    looping = reader(*CHILD_READS, config=LoopConfig(max_turns=1))
    result = run_parent(tmp_path, [calls(task()), text("done")], Task({"reader": looping}))
    (answer,) = task_results(result)
    assert answer.is_error
    assert "'reader' ended with max_turns" in str(answer.content)


def test_an_unknown_subagent_is_refused_naming_the_known_ones(tmp_path: Path) -> None:
    """A subagent_type no definition has is an input error listing the names."""
    result = run_parent(
        tmp_path, [calls(task("writer")), text("done")], Task({"reader": reader(*CHILD_READS)})
    )
    (answer,) = task_results(result)
    assert answer.is_error and "the subagents are: reader" in str(answer.content)


def test_nesting_is_bounded_by_max_depth(tmp_path: Path) -> None:
    """A child whose own Task would nest past max_depth gets an error result; the grandchild
    never runs (its model is never asked)."""
    grandchild_model = scripted(text("never"))
    inner = Task({"deep": SubagentDefinition(description="deeper", model=grandchild_model)})
    middle = SubagentDefinition(
        description="delegates",
        tools=[inner],
        model=scripted(calls(task("deep", "go deeper")), text("could not nest")),
    )
    result = run_parent(
        tmp_path,
        [calls(task("middle", "delegate")), text("done")],
        Task({"middle": middle}, limits=SubagentLimits(max_depth=1)),
    )
    (answer,) = task_results(result)
    assert answer.content == "could not nest"
    child = next((tmp_path / "parent.subagents").iterdir())
    refused = [
        r.data["event"]
        for r in read_trace(child).of_kind("event")
        if r.data["event"]["type"] == "ToolCallFinished"
    ]
    assert refused[0]["is_error"] and "max_depth" in refused[0]["content"]
    assert not (tmp_path / "parent.subagents" / f"{child.stem}.subagents").exists()


def test_the_run_wide_budget_of_child_runs_is_respected(tmp_path: Path) -> None:
    """With max_runs=1, a second Task call in the same run is refused naming the limit."""
    definition = reader(*CHILD_READS)
    result = run_parent(
        tmp_path,
        [calls(task()), calls(task()), text("done")],
        Task({"reader": definition}, limits=SubagentLimits(max_runs=1)),
    )
    first, second = task_results(result)
    assert not first.is_error
    assert second.is_error and "max_runs" in str(second.content)


def test_the_run_wide_token_budget_stops_a_running_child_and_later_starts(
    tmp_path: Path,
) -> None:
    """Once the children's tokens pass max_tokens, the running child's next request fails
    (it ends model_error, naming the limit) and a later Task call is refused."""
    definition = reader(*CHILD_READS)
    result = run_parent(
        tmp_path,
        [calls(task()), calls(task()), text("done")],
        Task({"reader": definition}, limits=SubagentLimits(max_tokens=5)),
    )
    first, second = task_results(result)
    assert first.is_error and "'reader' ended with model_error" in str(first.content)
    assert "SubagentLimits.max_tokens" in str(first.content)
    assert second.is_error and "SubagentLimits.max_tokens" in str(second.content)
    assert "do the task yourself" in str(second.content)


def test_a_deny_rule_of_the_parent_wins_in_the_child(tmp_path: Path) -> None:
    """The parent denies Write; a child that may write (bypass mode) is still refused, and
    the file is not written."""
    writer = SubagentDefinition(
        description="writes",
        tools=[Write()],
        permissions=PermissionPolicy(mode=PermissionMode.BYPASS),
        model=scripted(calls(("Write", {"file_path": "out.txt", "content": "x"})), text("tried")),
    )
    result = run_parent(
        tmp_path,
        [calls(task("writer", "write out.txt")), text("done")],
        Task({"writer": writer}),
        permissions=PermissionPolicy(deny=["Write"]),
    )
    assert result.terminal == "completed"
    assert not (tmp_path / "out.txt").exists()
    child = next((tmp_path / "parent.subagents").iterdir())
    denied = [
        r.data["event"]
        for r in read_trace(child).of_kind("event")
        if r.data["event"]["type"] == "PermissionDecided"
    ]
    assert denied[0]["behavior"] == "deny"


def test_the_child_asks_the_parent_callback(tmp_path: Path) -> None:
    """A child without an ask callback of its own puts its question to the parent's."""
    asked: list[PermissionRequest] = []

    def ask(request: PermissionRequest) -> bool:
        asked.append(request)
        return True

    writer = SubagentDefinition(
        description="writes",
        tools=[Write()],
        model=scripted(calls(("Write", {"file_path": "out.txt", "content": "x"})), text("ok")),
    )
    run_parent(
        tmp_path,
        [calls(task("writer", "write out.txt")), text("done")],
        Task({"writer": writer}),
        permissions=PermissionPolicy(ask=ask),
    )
    assert [request.tool_name for request in asked] == ["Write"]
    assert (tmp_path / "out.txt").read_text(encoding="utf-8") == "x"


def test_subagent_stop_hooks_fire_with_the_agent_name_as_matched_value(tmp_path: Path) -> None:
    """The parent's SubagentStop hooks run when the child ends, matched on its name, and are
    told its run id and trace; Stop hooks run only for the parent."""
    seen: list[HookInput] = []
    stops: list[HookInput] = []

    def note(hook_input: HookInput) -> HookOutcome | None:
        seen.append(hook_input)
        return None

    def note_stop(hook_input: HookInput) -> None:
        stops.append(hook_input)

    hooks = Hooks(
        subagent_stop=[HookMatcher(matcher="reader", hooks=[note]), HookMatcher(matcher="other")],
        stop=[note_stop],
    )
    run_parent(
        tmp_path,
        [calls(task()), text("done")],
        Task({"reader": reader(*CHILD_READS)}),
        hooks=hooks,
    )
    (stopped,) = seen
    assert stopped.payload["agent_type"] == "reader"
    parent_id = read_trace(tmp_path / "parent.jsonl").header.meta["run_id"]
    assert stopped.payload["agent_id"].startswith(f"{parent_id}.")
    assert Path(stopped.payload["agent_transcript_path"]).parent.name == "parent.subagents"
    assert len(stops) == 1


def test_a_task_runs_beside_other_calls_only_when_the_child_only_reads() -> None:
    """Concurrency-safe exactly when every tool of the child is read-only."""
    task_tool = Task(
        {
            "looker": SubagentDefinition(description="looks", tools=[Read(), Glob()]),
            "writer": SubagentDefinition(description="writes", tools=[Read(), Write()]),
        }
    )
    looking = TaskInput(description="d", prompt="p", subagent_type="looker")
    writing = TaskInput(description="d", prompt="p", subagent_type="writer")
    assert task_tool.is_concurrency_safe(looking) and task_tool.is_read_only(looking)
    assert not task_tool.is_concurrency_safe(writing)


def test_bad_definitions_are_config_errors() -> None:
    """No subagents, an empty name or a wrong definition type is a ConfigError naming it."""
    with pytest.raises(ConfigError, match="at least one"):
        Task({})
    with pytest.raises(ConfigError, match="non-empty"):
        Task({" ": SubagentDefinition(description="x")})
    with pytest.raises(ConfigError, match="'x' must be a SubagentDefinition"):
        Task({"x": "a prompt"})  # type: ignore[dict-item]
    with pytest.raises(ConfigError, match="max_depth"):
        SubagentLimits(max_depth=0)


def test_a_task_outside_an_agent_run_is_an_error() -> None:
    """Called without a parent run in its context, Task answers with an error."""
    task_tool = Task({"reader": reader(text("x"))})
    data = TaskInput(description="d", prompt="p", subagent_type="reader")
    output = asyncio.run(task_tool.call(data, ToolContext(cwd=Path()), lambda _text: None))
    assert output.is_error


def test_aborting_the_parent_aborts_the_child(tmp_path: Path) -> None:
    """Cancelling the parent while the child's tool runs ends both traces aborted (whether
    the cancel lands while the responses still stream or after they closed)."""
    waiting = asyncio.Event()

    @tool()
    async def wait_forever() -> str:
        """A tool that says it started, then never returns."""
        waiting.set()
        await asyncio.Event().wait()
        return "never"

    stuck = SubagentDefinition(
        description="waits",
        tools=[wait_forever],
        model=scripted(calls(("wait_forever", {})), text("never")),
    )
    parent = Agent(
        model=scripted(calls(task("stuck", "wait")), text("done")),
        tools=[Task({"stuck": stuck})],
        cwd=tmp_path,
        trace=tmp_path / "parent.jsonl",
        store=False,
    )

    async def go() -> None:
        running = asyncio.create_task(parent.run("go"))
        async with asyncio.timeout(30):
            await waiting.wait()
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running

    asyncio.run(go())
    (child,) = (tmp_path / "parent.subagents").iterdir()
    aborted = {"aborted_streaming", "aborted_tools"}
    assert replay(child).terminal in aborted
    assert replay(tmp_path / "parent.jsonl").terminal in aborted


def test_show_and_the_html_pages_link_parent_and_child(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`fsm-agent show` names the child on the parent's call and the parent on the child;
    --html writes both pages, the call linking to the child's page and back."""
    run_parent(tmp_path, [calls(task()), text("done")], Task({"reader": reader(*CHILD_READS)}))
    (child,) = (tmp_path / "parent.subagents").iterdir()
    page = tmp_path / "page.html"
    assert main(["show", str(tmp_path / "parent.jsonl"), "--html", str(page)]) == 0
    shown = capsys.readouterr().out
    parent_id = read_trace(tmp_path / "parent.jsonl").header.meta["run_id"]
    assert f"started subagent 'reader': run {parent_id}.{child.stem}, trace {child}" in shown
    child_page = tmp_path / f"page.{child.stem}.html"
    assert f'href="{child_page.name}"' in page.read_text(encoding="utf-8")
    back = child_page.read_text(encoding="utf-8")
    assert f'href="page.html#call-{child.stem}"' in back
    assert f'id="call-{child.stem}"' in page.read_text(encoding="utf-8")

    assert main(["show", str(child)]) == 0
    shown = capsys.readouterr().out
    assert f"subagent 'reader' of run {parent_id}, for its call {child.stem}" in shown


def test_the_child_does_not_list_the_parents_traces(tmp_path: Path) -> None:
    """With the parent's trace a file in the working folder, the child's Glob lists neither
    it nor the subagents' traces."""
    lister = SubagentDefinition(
        description="lists",
        tools=[Glob()],
        model=scripted(calls(("Glob", {"pattern": "**/*"})), text("listed")),
    )
    run_parent(tmp_path, [calls(task("lister", "list")), text("done")], Task({"lister": lister}))
    (child,) = (tmp_path / "parent.subagents").iterdir()
    (listing,) = [
        r.data["event"]["content"]
        for r in read_trace(child).of_kind("event")
        if r.data["event"]["type"] == "ToolCallFinished"
    ]
    assert "a.txt" in listing
    assert "parent.jsonl" not in listing and ".subagents" not in listing
