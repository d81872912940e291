"""Attachment providers and tool providers: what the driver answers FetchAttachments with."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from fsm_agent.core import texts
from fsm_agent.core.messages import AttachmentKind
from fsm_agent.errors import ConfigError
from fsm_agent.runtime.agent import Agent
from fsm_agent.runtime.attachments import Attachment, AttachmentRequest, AttachmentTiming
from fsm_agent.runtime.prefetch_providers import RelevantMemory, SkillDiscovery
from fsm_agent.runtime.tool import Tool, tool
from fsm_agent.testing.scenario import ScriptedModel, parse_scenario
from fsm_agent.trace.reader import read_trace
from fsm_agent.trace.replay import replay


def scripted(*steps: dict[str, Any]) -> ScriptedModel:
    return ScriptedModel(parse_scenario({"steps": list(steps)}))


def calls(name: str) -> dict[str, Any]:
    return {"content": [{"tool_use": {"name": name, "input": {}}}]}


def says(text: str) -> dict[str, Any]:
    return {"content": [{"text": text}]}


@tool(name="Noop", description="Does nothing.", read_only=True)
async def noop() -> str:
    return "nothing done"


def attachments_ready(trace: Path) -> list[dict[str, Any]]:
    return [
        r.data["event"]
        for r in read_trace(trace).of_kind("event")
        if r.data["event"]["type"] == "AttachmentsReady"
    ]


class Fixed:
    """A provider that attaches the same note at each attachment phase."""

    name = "note"

    def __init__(self, timing: AttachmentTiming = AttachmentTiming.EACH_PHASE) -> None:
        self.timing = timing
        self.requests: list[AttachmentRequest] = []

    async def collect(self, request: AttachmentRequest) -> Sequence[Attachment]:
        self.requests.append(request)
        return [Attachment(text=f"note for iteration {request.iteration}")]


def test_a_user_provider_reaches_the_request_after_the_tool_result(tmp_path: Path) -> None:
    """A provider's attachment is recorded and sent as a reminder after the tool_result."""
    model = scripted(calls("Noop"), says("done"))
    trace = tmp_path / "run.jsonl"
    agent = Agent(model=model, tools=[noop], cwd=tmp_path, trace=trace, attachments=[Fixed()])
    assert agent.run_sync("go").terminal == "completed"
    (ready,) = attachments_ready(trace)
    assert [m["uuid"].split(".")[0] for m in ready["messages"]] == ["1:note"]
    last = model.requests[1].messages[-1]
    assert last["content"][0]["type"] == "tool_result"
    assert last["content"][-1]["text"] == texts.system_reminder("note for iteration 1")
    assert replay(trace).terminal == "completed"


def test_a_turn_prefetch_is_consumed_only_once_settled(tmp_path: Path) -> None:
    """A memory-style prefetch is not waited for: it lands at the first phase after it settled."""
    gate = asyncio.Event()

    class Slow:
        name = "memory"
        timing = AttachmentTiming.TURN_PREFETCH

        async def collect(self, request: AttachmentRequest) -> Sequence[Attachment]:
            await gate.wait()
            return [Attachment(kind=AttachmentKind.MEMORY, text="remembered")]

    @tool(name="Open", description="Lets the prefetch finish.", read_only=True)
    async def open_gate() -> str:
        gate.set()
        await asyncio.sleep(0.01)
        return "opened"

    model = scripted(calls("Noop"), calls("Open"), calls("Noop"), says("done"))
    trace = tmp_path / "run.jsonl"
    agent = Agent(
        model=model, tools=[noop, open_gate], cwd=tmp_path, trace=trace, attachments=[Slow()]
    )
    assert agent.run_sync("go").terminal == "completed"
    texts_per_phase = [[m["text"] for m in r["messages"]] for r in attachments_ready(trace)]
    assert texts_per_phase == [[], ["remembered"], []]


def test_an_iteration_prefetch_is_waited_for_each_iteration(tmp_path: Path) -> None:
    """A skill-style prefetch starts as each iteration starts and lands at its attachment phase."""
    provider = Fixed(AttachmentTiming.ITERATION_PREFETCH)
    model = scripted(calls("Noop"), calls("Noop"), says("done"))
    trace = tmp_path / "run.jsonl"
    agent = Agent(model=model, tools=[noop], cwd=tmp_path, trace=trace, attachments=[provider])
    assert agent.run_sync("go").terminal == "completed"
    texts_per_phase = [[m["text"] for m in r["messages"]] for r in attachments_ready(trace)]
    assert texts_per_phase == [["note for iteration 1"], ["note for iteration 2"]]
    assert [r.iteration for r in provider.requests] == [1, 2, 3]  # the third is not consumed


@pytest.mark.parametrize(
    ("providers", "problem"),
    [([object()], "is not an AttachmentProvider"), ([Fixed(), Fixed()], "two providers")],
)
def test_bad_providers_are_refused_when_the_agent_is_built(
    providers: list[Any], problem: str, tmp_path: Path
) -> None:
    """Something that is not a provider, or two of one name, is a ConfigError."""
    with pytest.raises(ConfigError, match=problem):
        Agent(model=scripted(says("x")), cwd=tmp_path, trace=False, attachments=providers)


def test_relevant_memory_picks_the_notes_that_share_words(tmp_path: Path) -> None:
    """The note sharing the prompt's words is attached, once, and the unrelated one never."""
    notes = tmp_path / "memory"
    notes.mkdir()
    (notes / "deploy.md").write_text("Deploy with the staging pipeline first.", encoding="utf-8")
    (notes / "lunch.md").write_text("Lunch is at noon.", encoding="utf-8")
    memory = RelevantMemory(notes)
    request = AttachmentRequest(cwd=tmp_path, messages=(_prompt("How do I deploy staging?"),))
    (found,) = asyncio.run(memory.collect(request))
    assert found.kind is AttachmentKind.MEMORY and "deploy.md" in found.text
    assert asyncio.run(memory.collect(request)) == []


def test_skill_discovery_announces_a_fitting_skill_once(tmp_path: Path) -> None:
    """A skill whose description shares a word with the prompt is listed, then not again."""
    skill = tmp_path / "skills" / "pdf"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: pdf-tools\ndescription: Fill and merge PDF forms\n---\nSteps...",
        encoding="utf-8",
    )
    discovery = SkillDiscovery(tmp_path / "skills")
    request = AttachmentRequest(cwd=tmp_path, messages=(_prompt("merge these forms"),))
    (found,) = asyncio.run(discovery.collect(request))
    assert "pdf-tools: Fill and merge PDF forms" in found.text
    assert asyncio.run(discovery.collect(request)) == []


def _prompt(text: str) -> Any:
    from fsm_agent.core.messages import TextBlock, UserMessage

    return UserMessage(uuid="p", content=(TextBlock(text=text),))


@tool(name="Greet", description="Greets.", read_only=True)
async def greet() -> str:
    return "hello"


class Plugins:
    """A tool provider whose tools are given per call, in turn."""

    def __init__(self, *answers: list[Tool[Any]]) -> None:
        self.answers = list(answers)

    async def tools(self) -> Sequence[Tool[Any]]:
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


def test_a_tool_added_between_iterations_is_offered_and_runs(tmp_path: Path) -> None:
    """A provider's new tool is in the next request and callable; its removal is as well."""
    model = scripted(calls("Noop"), calls("Greet"), calls("Noop"), says("done"))
    trace = tmp_path / "run.jsonl"
    agent = Agent(
        model=model,
        tools=[noop],
        cwd=tmp_path,
        trace=trace,
        tool_providers=[Plugins([], [greet], [])],
    )
    result = agent.run_sync("go")
    assert result.terminal == "completed"
    offered = [[t["name"] for t in request.tools] for request in model.requests]
    assert offered == [["Noop"], ["Noop", "Greet"], ["Noop"], ["Noop"]]
    refreshed = [r.get("tools") for r in attachments_ready(trace)]
    names = [None if tools is None else [t["name"] for t in tools] for tools in refreshed]
    assert names == [["Noop", "Greet"], ["Noop"], None]  # recorded when the list changed
    assert "hello" in str(result.messages)
    assert replay(trace).terminal == "completed"


def test_a_tool_provider_that_gives_no_tool_is_refused(tmp_path: Path) -> None:
    """A provider answering with something that is not a Tool ends the run loudly."""

    class Broken:
        async def tools(self) -> Sequence[Any]:
            return ["not a tool"]

    agent = Agent(model=scripted(says("x")), cwd=tmp_path, trace=False, tool_providers=[Broken()])
    with pytest.raises(ConfigError, match="not a Tool"):
        agent.run_sync("go")
