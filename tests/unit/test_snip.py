"""Snip (SPEC §7.2, our design): whole old turns leave what is sent, pairs never parted, and
every hostile request refused with a reason the model is told."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from fsm_agent.core import texts
from fsm_agent.core.agent_core import AgentCore
from fsm_agent.core.config import LoopConfig
from fsm_agent.core.messages import (
    AssistantMessage,
    AttachmentKind,
    AttachmentMessage,
    Message,
    SystemMessage,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
    text_of,
)
from fsm_agent.core.normalize import api_invariant_violations, normalize_for_api
from fsm_agent.core.snip import MAX_SNIP_IDS, plan_snip, snip_ids
from fsm_agent.core.tool_spec import ToolSpec
from fsm_agent.runtime.agent import Agent
from fsm_agent.runtime.tool import tool
from fsm_agent.testing.scenario import ScriptedModel, parse_scenario
from fsm_agent.testing.world import ToolScript, World, WorldRun, prompt
from fsm_agent.toolbox.snip import Snip, SnipInput
from fsm_agent.trace.replay import replay, resume


def _user(uuid: str, text: str = "note", *, meta: bool = False) -> UserMessage:
    return UserMessage(uuid=uuid, content=(TextBlock(text=text),), is_meta=meta)


def _call(uuid: str, response: str, call_id: str) -> AssistantMessage:
    block = ToolUseBlock(id=call_id, name="Read")
    return AssistantMessage(uuid=uuid, message_id=response, content=(block,))


def _result(uuid: str, call_id: str) -> UserMessage:
    return UserMessage(uuid=uuid, content=(ToolResultBlock(tool_use_id=call_id, content="r"),))


def _say(uuid: str, response: str, text: str = "ok") -> AssistantMessage:
    return AssistantMessage(uuid=uuid, message_id=response, content=(TextBlock(text=text),))


def _history() -> list[Message]:
    """Two turns; the first has a response in two parts with a result between them."""
    return [
        _user("p1", "first task"),
        _call("a1", "r1", "t1"),
        _result("u1", "t1"),
        _call("a2", "r1", "t2"),
        _result("u2", "t2"),
        _say("a3", "r2", "done"),
        _user("p2", "second task"),
        _call("a4", "r3", "t3"),
        _result("u3", "t3"),
        _call("a5", "r4", "t4"),
        _result("u4", "t4"),
    ]


def _kept(history: list[Message], removed: tuple[str, ...]) -> list[Message]:
    return [m for m in history if m.uuid not in removed]


def test_a_tool_use_id_removes_its_whole_response_and_results() -> None:
    """Naming one call of a split response removes every part and every result of it."""
    history = _history()
    outcome = plan_snip(history, ["t2"])
    assert outcome.removed == ("a1", "u1", "a2", "u2")
    assert outcome.snipped == ("t2",)
    assert api_invariant_violations(normalize_for_api(_kept(history, outcome.removed))) == []


def test_a_result_message_names_its_response() -> None:
    """A tool_result message's uuid removes its response too: the pair goes together."""
    assert plan_snip(_history(), ["u3"]).removed == ("a4", "u3")


def test_a_tagged_message_removes_its_exchange() -> None:
    """A tagged user message removes itself and everything up to the next tagged message."""
    history = [_user("p0", "start"), _say("a0", "r0"), *_history()]
    outcome = plan_snip(history, ["p1"])
    assert outcome.removed == ("p1", "a1", "u1", "a2", "u2", "a3")
    assert api_invariant_violations(normalize_for_api(_kept(history, outcome.removed))) == []


def test_hostile_ids_are_refused_each_with_its_reason() -> None:
    """Unknown ids, the first message, the latest response and prompt, a notice and a repeat
    are refused; what is allowed still goes."""
    history = [*_history()[:6], SystemMessage(uuid="n1", subtype="notice"), *_history()[6:]]
    outcome = plan_snip(
        history, ["nope", "p1", "t4", "p2", "n1", "t1", "t2"], snipped_before={"gone"}
    )
    reasons = dict(outcome.refused)
    assert reasons["nope"] == "no message or tool call has that id in what is sent"
    assert reasons["p1"] == "the first message is where the conversation starts"
    assert reasons["t4"] == "it is part of the latest turn, still being worked on"
    assert reasons["p2"] == "it is part of the latest turn, still being worked on"
    assert reasons["n1"] == "it is a notice, which is never sent"
    assert reasons["t2"] == "an earlier id of this request removes it already"
    assert outcome.snipped == ("t1",)
    again = plan_snip(_kept(history, outcome.removed), ["t1", "gone"], snipped_before={"gone"})
    assert dict(again.refused)["gone"] == "it was snipped already"


def test_a_span_being_summarised_is_refused() -> None:
    """While a background collapse summarises up to a message, nothing up to it may go."""
    outcome = plan_snip(_history(), ["t1", "t3"], pinned_through="a3")
    assert dict(outcome.refused)["t1"] == "a summary of that part of the conversation is being made"
    assert outcome.snipped == ("t3",)


def test_a_removal_that_joins_two_responses_is_refused() -> None:
    """An attachment alone between two responses stays: removing it would put them side by
    side."""
    note = AttachmentMessage(uuid="x1", kind=AttachmentKind.HOOK_ADDITIONAL_CONTEXT, text="n")
    history = [_user("p1"), _say("a1", "r1"), note, _say("a2", "r2"), _user("p2"), _say("a3", "r3")]
    outcome = plan_snip(history, ["x1"])
    assert dict(outcome.refused)["x1"] == "removing it would leave two responses side by side"
    assert outcome.removed == ()


def test_malformed_requests_are_refused_whole() -> None:
    """Not a list of strings, or too many ids: the request is refused with the reason."""
    assert snip_ids("t1")[1] == "a snip request must be a list of ids"
    assert snip_ids([1, 2])[1] == "a snip request must be a list of ids"
    too_many = [f"t{n}" for n in range(MAX_SNIP_IDS + 1)]
    assert snip_ids(too_many)[1] == f"a snip request may name at most {MAX_SNIP_IDS} ids, not 51"
    assert snip_ids(["t1", " t1 ", "t2"]) == (("t1", "t2"), None)


READ = {"content": [{"tool_use": {"name": "Read", "input": {"path": "a"}}}]}
SNIP = {"content": [{"tool_use": {"name": "Snip", "input": {"ids": ["toolu_001"]}}}]}
TEXT = {"content": [{"text": "done"}]}


def _snip_run(config: LoopConfig, request: Any) -> tuple[AgentCore, WorldRun]:
    core = AgentCore(config=config, tools=(ToolSpec(name="Read"), ToolSpec(name="Snip")))
    world = World(
        scenario=parse_scenario({"steps": [READ, READ, SNIP, TEXT]}),
        tools={
            "Read": ToolScript(content="r" * 4_000),
            "Snip": ToolScript(safe=False, context_update={"snip": request}),
        },
    )
    run = WorldRun(core.feed, world, prompt("hi"))
    run.run()
    return core, run


def _names(run: WorldRun) -> list[str]:
    return [t.name for _, step in run.steps for t in step.transitions if t.machine == "loop"]


def test_a_snip_leaves_what_is_sent_and_the_model_is_told() -> None:
    """The first Read round leaves the request, the transcript keeps it, the estimate drops
    by about its size, and a note tells the model what went and what did not."""
    core, run = _snip_run(LoopConfig(snip=True), ["toolu_001", "nope"])
    assert run.terminal == "completed"
    assert _names(run).count("history_snipped") == 1
    sent = [m.uuid for m in core.messages_for_query()]
    assert "m1" not in sent and "m2" not in sent
    assert any(m.uuid == "m2" for m in core.transcript)
    note = text_of(core.messages_for_query()[-1])
    assert note.startswith("Snipped toolu_001: 2 messages left the conversation")
    assert "Not snipped nope: no message or tool call has that id" in note
    assert api_invariant_violations(core.api_messages()) == []


def test_tags_are_sent_only_with_snip_on() -> None:
    """With snip on, each user message that is not a result ends with its [id:...] tag."""
    on, _ = _snip_run(LoopConfig(snip=True), [])
    off, _ = _snip_run(LoopConfig(), [])
    assert on.api_messages()[0]["content"][-1] == {"type": "text", "text": "[id:prompt]"}
    assert "[id:" not in str(off.api_messages())


def test_with_snip_off_a_request_removes_nothing() -> None:
    """The switch is off: every id is refused, saying so."""
    core, _ = _snip_run(LoopConfig(), ["toolu_001"])
    assert "m1" in [m.uuid for m in core.messages_for_query()]
    assert f"Not snipped toolu_001: {texts.SNIP_OFF}." in text_of(core.messages_for_query()[-1])


def test_a_malformed_request_from_a_tool_is_refused() -> None:
    """A tool that hands the loop something other than a list of ids removes nothing."""
    core, run = _snip_run(LoopConfig(snip=True), {"ids": "toolu_001"})
    assert run.terminal == "completed"
    note = text_of(core.messages_for_query()[-1])
    assert note == "Snip request refused: a snip request must be a list of ids."


@tool(name="Read", description="Read a file.", concurrency_safe=True, read_only=True)
async def read(path: str) -> str:
    del path
    return "file text " * 100


def test_the_agent_offers_snip_and_replay_removes_the_same(tmp_path: Path) -> None:
    """With snip on, Agent offers the Snip tool; the model's request removes the round from
    the next request, and the trace replays it without the model."""
    model = ScriptedModel(parse_scenario({"steps": [READ, READ, SNIP, TEXT]}))
    trace = tmp_path / "run.jsonl"
    agent = Agent(
        model=model, tools=[read], cwd=tmp_path, trace=trace, config=LoopConfig(snip=True)
    )
    assert asyncio.run(agent.run("look")).terminal == "completed"
    last = model.requests[-1]
    assert "Snip" in [t["name"] for t in last.tools]
    calls = [b["id"] for m in last.messages for b in m["content"] if b["type"] == "tool_use"]
    assert calls == ["toolu_002", "toolu_003"]
    assert replay(trace).terminal == "completed"


def test_a_run_cut_after_the_snip_call_still_snips_when_resumed(tmp_path: Path) -> None:
    """A crash right after the Snip call's result was recorded: the resumed run applies the
    request before its next request, as the uncut run did."""

    original = tmp_path / "original.jsonl"
    config = LoopConfig(snip=True)
    steps = {"steps": [READ, READ, SNIP, TEXT]}
    Agent(
        model=ScriptedModel(parse_scenario(steps)),
        tools=[read],
        cwd=tmp_path,
        trace=original,
        config=config,
    ).run_sync("look")
    lines = original.read_bytes().splitlines(keepends=True)
    finished = next(
        i
        for i, line in enumerate(lines)
        if b'"type":"ToolCallFinished"' in line and b"Asked to snip" in line
    )
    crashed = tmp_path / "crashed.jsonl"
    crashed.write_bytes(b"".join(lines[: finished + 1]))
    model = ScriptedModel(parse_scenario({"steps": [TEXT]}))
    agent = Agent(
        model=model, tools=[read], cwd=tmp_path, trace=tmp_path / "resumed.jsonl", config=config
    )

    async def go() -> Any:
        return [u async for u in agent.continue_from(resume(crashed))][-1].result

    assert asyncio.run(go()).terminal == "completed"
    (last,) = model.requests
    calls = [b["id"] for m in last.messages for b in m["content"] if b["type"] == "tool_use"]
    assert calls == ["toolu_002", "toolu_003"]
    assert replay(tmp_path / "resumed.jsonl").terminal == "completed"


def test_the_snip_tool_refuses_hostile_input_before_it_runs() -> None:
    """No ids, more than fifty, or a blank id: validation says so and nothing is asked."""

    snip = Snip()

    def check(ids: list[str]) -> str | None:
        return asyncio.run(snip.validate_input(SnipInput(ids=ids), None))  # type: ignore[arg-type]

    assert check([]) == "name at least one id"
    assert check(["t"] * (MAX_SNIP_IDS + 1)) == f"name at most {MAX_SNIP_IDS} ids at a time"
    assert check(["t1", "  "]) == "every id must be a non-empty string"
    assert check(["t1"]) is None
