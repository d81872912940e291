"""Example runs that take every row of TOOL_ROWS, plus the meta-test that every table row is taken.

The helpers come from ``test_loop_rows.py`` (loaded by path), so both files record into one
set of rows taken; ``test_every_table_row_is_taken`` re-runs every example of both files and
names each row of LOOP_ROWS or TOOL_ROWS that none of them takes.
"""

from __future__ import annotations

import contextlib
import importlib.util
import inspect
import itertools
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from fsm_agent.core import effects as fx
from fsm_agent.core import events as ev
from fsm_agent.core.config import LoopConfig
from fsm_agent.core.messages import AttachmentKind, AttachmentMessage, tool_results
from fsm_agent.core.tables import LOOP_ROWS, TOOL_ROWS, CallState
from fsm_agent.core.tool_calls import ToolCall, ToolExecutor
from fsm_agent.core.tool_spec import ToolSpec
from fsm_agent.testing.world import ToolScript, WorldRun, open_turn


def _load_loop_examples() -> ModuleType:
    path = Path(__file__).with_name("test_loop_rows.py")
    spec = importlib.util.spec_from_file_location("_loop_row_examples", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


LOOP = _load_loop_examples()
TEXT = LOOP.TEXT
READ = LOOP.READ


def uses(*names: str) -> dict[str, Any]:
    """A response asking for tools ``names`` in this order."""
    return {"content": [{"tool_use": {"name": n, "input": {"arg": n.lower()}}} for n in names]}


def results(core: Any) -> dict[str, Any]:
    """tool_use id → its tool_result block, over the whole transcript."""
    return {b.tool_use_id: b for m in core.transcript for b in tool_results(m)}


def tool_names(run: WorldRun) -> list[tuple[str, str]]:
    """(call id, tool transition name) of a run, in order."""
    return [
        (t.call_id or "", t.name)
        for _, s in run.steps
        for t in s.transitions
        if t.machine == "tool"
    ]


def advance_key(run: WorldRun, key: str) -> None:
    """Feed the next answer of the pending effect ``key`` (a call id or effect id)."""
    keys = [p.key for p in run.pending]
    run.advance(keys.index(key))


def fifo_until(run: WorldRun, done: Any) -> None:
    """Advance in FIFO order until ``done()`` holds."""
    for _ in range(500):
        if done():
            return
        run.advance()
    raise AssertionError("condition never held")


# --- the happy path and early exits -----------------------------------------------------------


def test_tool_call_walks_the_full_happy_path() -> None:
    """A valid, allowed call: validate, pre hooks, permission, run, post hooks, yield."""
    core, run, _ = LOOP.play([READ, TEXT])
    names = [n for _, n in tool_names(run)]
    assert names == [
        "validation_requested", "input_accepted", "started", "permission_requested",
        "permission_granted", "call_returned", "post_hooks_done", "result_yielded",
    ]  # fmt: skip
    assert results(core)["toolu_001"].is_error is False


def test_invalid_input_is_rejected() -> None:
    """A tool whose validation fails gets an error result (input_rejected)."""
    core, run, _ = LOOP.play([READ, TEXT], tools={"Read": ToolScript(valid=False)})
    assert ("toolu_001", "input_rejected") in tool_names(run)
    assert results(core)["toolu_001"].is_error


def test_unknown_tool_is_rejected_with_no_such_tool() -> None:
    """A tool_use naming no tool is rejected with 'No such tool available'."""
    core, _, _ = LOOP.play([uses("Nope"), TEXT])
    result = results(core)["toolu_001"]
    assert result.is_error and "No such tool available" in str(result.content)


def test_invalid_tool_json_is_rejected() -> None:
    """Tool input JSON that is not an object is rejected without running the tool."""
    f = LOOP.Feeder()
    call = open_turn(f.feed, LOOP.prompt("hi")).effects[-1]
    rid = call.request_id
    raw = [
        {"type": "message_start", "message": {"id": "m1", "type": "message", "role": "assistant",
         "model": "x", "content": [], "stop_reason": None, "usage": {"input_tokens": 1,
         "output_tokens": 0}}},
        {"type": "content_block_start", "index": 0,
         "content_block": {"type": "tool_use", "id": "toolu_x", "name": "Read", "input": {}}},
        {"type": "content_block_delta", "index": 0,
         "delta": {"type": "input_json_delta", "partial_json": "[1, 2"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"},
         "usage": {"output_tokens": 3}},
        {"type": "message_stop"},
    ]  # fmt: skip
    for event in raw:
        f.feed(ev.ModelStreamEvent(request_id=rid, event=event))
    f.feed(ev.ModelStreamClosed(request_id=rid))
    assert ("tool", "input_rejected", "validating", "rejected") in {
        (t.machine, t.name, t.source, t.dest) for _, s in f.steps for t in s.transitions
    }
    assert not [e for e in f.effects(fx.RunToolStep) if e.step is fx.ToolStep.CALL]


def test_permission_deny_gives_denied_result() -> None:
    """A deny rule answers the call with a denied error result; the tool never runs."""
    core, run, _ = LOOP.play([READ, TEXT], deny_tools=frozenset({"Read"}))
    assert ("toolu_001", "permission_denied") in tool_names(run)
    assert results(core)["toolu_001"].is_error
    assert not [e for e in LOOP.effects_of(run, fx.RunToolStep) if e.step is fx.ToolStep.CALL]


def test_pre_hook_deny_gives_denied_result() -> None:
    """A PreToolUse hook's deny answers the call without asking permission."""
    deny = ev.HookOutcome(decision=ev.HookDecision.DENY, decision_reason="no")
    core, run, _ = LOOP.play([READ, TEXT], pre_hooks=(deny,))
    assert ("toolu_001", "hook_denied") in tool_names(run)
    assert not LOOP.effects_of(run, fx.AskPermission)
    assert results(core)["toolu_001"].is_error


def test_tool_error_is_call_failed() -> None:
    """A tool returning an error is errored and its error result reaches the model."""
    core, run, _ = LOOP.play([READ, TEXT], tools={"Read": ToolScript(is_error=True)})
    assert ("toolu_001", "call_failed") in tool_names(run)
    assert results(core)["toolu_001"].is_error


def test_post_hook_blocking_error_becomes_attachment() -> None:
    """A PostToolUse blocking error is attached for the model, not a denial."""
    blocked = ev.HookOutcome(blocking_errors=("lint failed",))
    core, _, _ = LOOP.play([READ, TEXT], post_hooks=(blocked,))
    kinds = [m.kind for m in core.transcript if isinstance(m, AttachmentMessage)]
    assert AttachmentKind.HOOK_BLOCKING_ERROR in kinds
    assert results(core)["toolu_001"].is_error is False


# --- concurrency ------------------------------------------------------------------------------


def drive_call(run: WorldRun, core: Any, index: int, until: str) -> None:
    """Answer only call ``index``'s effects until it reaches state ``until``."""
    for _ in range(50):
        call = core.tool_calls[index]
        if call.state == until:
            return
        advance_key(run, call.call_id)
    raise AssertionError(f"call {index} never reached {until}")


def both_running(core: Any) -> bool:
    """Two calls, both running."""
    return len(core.tool_calls) == 2 and all(c.state == "running" for c in core.tool_calls)


def test_sibling_cancel_on_shell_error() -> None:
    """A failing Bash call cancels a running sibling with a sibling-error result."""
    core, run = LOOP.start([uses("Read", "Bash"), TEXT], tools={"Bash": ToolScript(is_error=True)})
    fifo_until(run, lambda: both_running(core))
    drive_call(run, core, 1, "yielded")
    assert core.tool_calls[0].state == "yielded"
    LOOP.finish(core, run)
    read_result = results(core)["toolu_001"]
    assert read_result.is_error and "Bash" in str(read_result.content)
    assert ("toolu_001", "cancelled") in tool_names(run)


def test_non_shell_error_does_not_cancel_siblings() -> None:
    """A failing non-shell call leaves its running sibling alone."""
    core, run = LOOP.start(
        [uses("Read", "Write"), TEXT], tools={"Write": ToolScript(is_error=True)}
    )
    fifo_until(run, lambda: both_running(core))
    drive_call(run, core, 1, "yielded")
    assert ("toolu_002", "call_failed") in tool_names(run)
    assert core.tool_calls[0].state == "running"
    LOOP.finish(core, run)
    assert results(core)["toolu_001"].is_error is False


def test_unsafe_calls_hold_back_and_run_alone() -> None:
    """An unsafe call starts only when nothing runs; later calls wait behind it."""
    scripts = {"Write": ToolScript(safe=False), "Read": ToolScript(safe=True)}
    core, run = LOOP.start([uses("Write", "Read"), TEXT], tools=scripts)
    fifo_until(run, lambda: len(core.tool_calls) == 2 and core.tool_calls[0].state == "running")
    assert core.tool_calls[1].state == "validating"
    LOOP.finish(core, run)


def test_safe_results_in_completion_order() -> None:
    """Among safe calls, a later call that finishes first is handed back first."""
    core, run = LOOP.start([uses("Read", "Read"), TEXT])
    fifo_until(run, lambda: both_running(core))
    drive_call(run, core, 1, "yielded")
    assert core.tool_calls[0].state == "running"
    LOOP.finish(core, run)
    order = [tool_results(m)[0].tool_use_id for m in core.transcript if tool_results(m)]
    assert order == ["toolu_002", "toolu_001"]


def test_running_unsafe_call_holds_back_later_results() -> None:
    """A running unsafe call holds back the results of calls after it (model order)."""
    scripts = {"Write": ToolScript(safe=False), "Nope": ToolScript()}
    core, run = LOOP.start([uses("Write", "Nope"), TEXT], tools=scripts)
    # The unsafe Write starts only once the response has ended (SPEC §5.2 "Ours").
    fifo_until(run, lambda: core.phase == "tool_exec")
    drive_call(run, core, 0, "running")
    assert core.tool_calls[1].state == "rejected"  # decided, but not yet handed back
    LOOP.finish(core, run)
    order = [tool_results(m)[0].tool_use_id for m in core.transcript if tool_results(m)]
    assert order == ["toolu_001", "toolu_002"]


def test_batch_mode_partitions_r_r_e_r() -> None:
    """Without streaming execution, [R, R, E, R] runs as batches [R, R] [E] [R]."""
    config = LoopConfig(streaming_tool_execution=False)
    scripts = {"Read": ToolScript(safe=True), "Write": ToolScript(safe=False)}
    _, run, _ = LOOP.play([uses("Read", "Read", "Write", "Read"), TEXT], config=config,
                             tools=scripts)  # fmt: skip
    starts = [c for c, n in tool_names(run) if n == "started"]
    assert starts == ["toolu_001", "toolu_002", "toolu_003", "toolu_004"]
    seen: set[str] = set()
    running: set[str] = set()
    for call, name in tool_names(run):
        if name == "started":
            running.add(call)
            if call == "toolu_003":
                assert running == {"toolu_003"}, "the unsafe batch runs alone"
            if call == "toolu_004":
                assert "toolu_003" not in running
            seen.add(call)
        if name in ("post_hooks_done", "call_failed", "result_yielded"):
            running.discard(call)


# --- cancellation from every active state -----------------------------------------------------


@pytest.mark.parametrize(
    "state", ["validating", "pre_hooks", "permission", "running", "post_hooks"]
)
def test_abort_cancels_call_in_each_state(state: str) -> None:
    """An abort cancels a call wherever it is, and the call still gets one result."""
    core, run = LOOP.start([uses("Write"), TEXT], tools={"Write": ToolScript(safe=False)})
    fifo_until(run, lambda: bool(core.tool_calls) and core.tool_calls[0].state == state)
    run.abort()
    terminal = LOOP.finish(core, run)
    assert terminal in {"aborted_tools", "aborted_streaming"}
    assert ("toolu_001", "cancelled") in tool_names(run)
    assert results(core)["toolu_001"].is_error


class _Sink:
    """A minimal loop stand-in for driving a ToolExecutor by hand."""

    def __init__(self) -> None:
        self.effects: list[fx.Effect] = []
        self.transitions: list[Any] = []
        self.handed: list[str] = []
        self.tool_context: dict[str, Any] = {}
        self._n = itertools.count(1)

    def new_effect_id(self) -> str:
        return f"e{next(self._n)}"

    def new_uuid(self) -> str:
        return f"u{next(self._n)}"

    def add_effect(self, effect: fx.Effect) -> None:
        self.effects.append(effect)

    def add_transition(self, transition: Any) -> None:
        self.transitions.append(transition)
        t = transition
        LOOP.TAKEN.add((t.machine, t.name, t.source, t.dest))

    def hand_back(self, call: ToolCall, messages: list[Any]) -> None:
        self.handed.append(call.call_id)

    def request_abort(self, reason: str) -> None:
        del reason

    def apply_context_update(self, update: dict[str, Any]) -> None:
        self.tool_context.update(update)


def test_queued_call_can_be_cancelled() -> None:
    """A call still queued is cancelled and yields its result."""
    sink = _Sink()
    executor = ToolExecutor(sink, {"Read": ToolSpec(name="Read")}, batch_mode=False,
                            max_concurrency=10)  # fmt: skip
    call = ToolCall(call_id="c1", tool_name="Read", input={}, index=0, spec=ToolSpec(name="Read"))
    executor.calls["c1"] = call
    executor.order.append(call)
    assert call.state == CallState.QUEUED.value
    executor.cancel_all(fx.CancelReason.USER_INTERRUPTED)
    executor.flush()
    assert [(t.name, t.source) for t in sink.transitions] == [
        ("cancelled", "queued"), ("result_yielded", "cancelled"),
    ]  # fmt: skip
    assert sink.handed == ["c1"]


# --- the meta-test ----------------------------------------------------------------------------


def _examples(module: ModuleType) -> list[tuple[str, Any, dict[str, Any]]]:
    found = []
    for name, func in inspect.getmembers(module, inspect.isfunction):
        if not name.startswith("test_") or name == "test_every_table_row_is_taken":
            continue
        if func.__module__ != module.__name__:
            continue
        params = [m for m in getattr(func, "pytestmark", []) if m.name == "parametrize"]
        if not params:
            found.append((name, func, {}))
            continue
        argname, values = params[0].args
        found.extend((name, func, {argname: value}) for value in values)
    return found


def test_every_table_row_is_taken() -> None:
    """Every (name, source, dest) of LOOP_ROWS and TOOL_ROWS is taken by some example run."""
    import sys

    LOOP.TAKEN.clear()
    here = sys.modules[__name__]
    for _name, func, kwargs in _examples(LOOP) + _examples(here):
        # A behaviour failure is reported by that test itself; here only rows count.
        with contextlib.suppress(Exception):
            func(**kwargs)
    wanted = {("loop", r.name, s, r.dest) for r in LOOP_ROWS for s in r.source}
    wanted |= {("tool", r.name, s, r.dest) for r in TOOL_ROWS for s in r.source}
    missing = sorted(wanted - LOOP.TAKEN)
    assert not missing, "rows no example takes:\n" + "\n".join(
        f"  {m} {n}: {s} -> {d}" for m, n, s, d in missing
    )
