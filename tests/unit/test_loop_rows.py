"""Example runs that take every row of LOOP_ROWS, each asserting the behaviour the row stands for.

Every run adds the (machine, name, source, dest) triples it took to ``TAKEN``; the meta-test in
``test_tool_rows.py`` re-runs both files' examples and fails naming any row nobody takes.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest

from fsm_agent.core import effects as fx
from fsm_agent.core import events as ev
from fsm_agent.core import texts
from fsm_agent.core.agent_core import AgentCore
from fsm_agent.core.config import LoopConfig
from fsm_agent.core.messages import (
    ApiErrorKind,
    ApiErrorMessage,
    AssistantMessage,
    AttachmentKind,
    AttachmentMessage,
    SystemMessage,
    text_of,
    tool_results,
)
from fsm_agent.core.step import Step
from fsm_agent.core.tables import Phase
from fsm_agent.core.tool_spec import ToolSpec
from fsm_agent.runtime.response_clock import ResponseClock
from fsm_agent.testing.invariants import check_run
from fsm_agent.testing.scenario import parse_scenario, render_events
from fsm_agent.testing.world import ToolScript, World, WorldRun, open_turn, prompt

TAKEN: set[tuple[str, str, str, str]] = set()
TOOLS = [ToolSpec(name="Read"), ToolSpec(name="Write"), ToolSpec(name="Bash", is_shell=True)]
TEXT = {"content": [{"text": "done"}]}
READ = {"content": [{"tool_use": {"name": "Read", "input": {"path": "a"}}}]}
PTL = {"error": {"kind": "prompt_too_long"}}
MEDIA = {"error": {"kind": "media_too_large"}}
CUT = {"content": [{"text": "partial"}], "stop_reason": "max_tokens"}


def record(steps: list[tuple[ev.Event, Step]]) -> None:
    """Add the rows a run took to ``TAKEN``."""
    for _, step in steps:
        for t in step.transitions:
            TAKEN.add((t.machine, t.name, t.source, t.dest))


def loop_names(run: WorldRun) -> list[str]:
    """The loop transitions of a run, by name, in order."""
    return [t.name for _, s in run.steps for t in s.transitions if t.machine == "loop"]


def effects_of(run: WorldRun, kind: type) -> list[Any]:
    """Every effect of one type a run produced."""
    return [e for _, s in run.steps for e in s.effects if isinstance(e, kind)]


def start(
    steps: list[dict[str, Any]],
    *,
    config: LoopConfig | None = None,
    specs: list[ToolSpec] | None = None,
    **world: Any,
) -> tuple[AgentCore, WorldRun]:
    """Build a core and a run against a scripted world (not yet advanced)."""
    core = AgentCore(config=config or LoopConfig(), tools=TOOLS if specs is None else specs)
    scripted = World(scenario=parse_scenario({"steps": steps}), **world)
    return core, WorldRun(core.feed, scripted, prompt("hi"))


def finish(core: AgentCore, run: WorldRun, choices: Callable[[], int] | None = None) -> str:
    """Run to the end, record the rows, check the invariants; return the terminal."""
    terminal = run.run(choices)
    record(run.steps)
    assert check_run(core, run.steps, core.config) == []
    return terminal


def play(steps: list[dict[str, Any]], **kwargs: Any) -> tuple[AgentCore, WorldRun, str]:
    """Build and run a scripted world to its end."""
    core, run = start(steps, **kwargs)
    return core, run, finish(core, run)


def stream(step: dict[str, Any], request_id: str) -> list[ev.ModelStreamEvent]:
    """The raw stream events of one scripted step, for hand-fed runs."""
    scripted = parse_scenario({"steps": [step]}).steps[0]
    return [
        ev.ModelStreamEvent(request_id=request_id, event=raw) for raw in render_events(scripted)
    ]


class Feeder:
    """Feeds events by hand and records the rows taken."""

    def __init__(self, config: LoopConfig | None = None) -> None:
        self.core = AgentCore(config=config or LoopConfig(), tools=TOOLS)
        self.steps: list[tuple[ev.Event, Step]] = []

    def feed(self, event: ev.Event) -> Step:
        step = self.core.feed(event)
        self.steps.append((event, step))
        record(self.steps[-1:])
        return step

    def effects(self, kind: type) -> list[Any]:
        return [e for _, s in self.steps for e in s.effects if isinstance(e, kind)]


# --- the plain path ---------------------------------------------------------------------------


def test_text_reply_runs_stop_hooks_and_completes() -> None:
    """A text reply goes through stop hooks and ends completed."""
    _, run, terminal = play([TEXT])
    assert terminal == "completed"
    assert loop_names(run) == [
        "run_started", "session_started", "prompt_submitted", "iteration_started",
        "context_prepared", "request_sent", "stream_ended", "no_tools", "stop_hooks_started",
        "completed",
    ]  # fmt: skip


def test_tool_turn_fetches_attachments_then_next_turn() -> None:
    """A tool_use response runs tools, fetches attachments and starts the next turn."""
    core, run, terminal = play([READ, TEXT])
    assert terminal == "completed"
    names = loop_names(run)
    assert names[6:11] == [
        "stream_ended",
        "tools_requested",
        "tools_finished",
        "attachments_ready",
        "next_turn",
    ]
    assert core.state.turn_count == 2


def test_max_turns_ends_after_tools() -> None:
    """With max_turns=1 a tool turn ends in max_turns with a max_turns_reached attachment."""
    core, _, terminal = play([READ, TEXT], config=LoopConfig(max_turns=1))
    assert terminal == "max_turns"
    last = core.transcript[-1]
    assert isinstance(last, AttachmentMessage) and last.kind is AttachmentKind.MAX_TURNS_REACHED


# --- compaction and blocking ------------------------------------------------------------------


def test_autocompact_done_replaces_history() -> None:
    """Over the autocompact threshold, a successful compaction replaces the messages."""
    core, run, terminal = play([TEXT], config=LoopConfig(context_window=33_000))
    assert terminal == "completed"
    assert "autocompact_done" in loop_names(run)
    assert core.state.auto_compact is not None and core.state.auto_compact.compacted


def test_autocompact_circuit_breaker_after_three_failures() -> None:
    """Failed autocompacts count up; after 3 the breaker stops asking for compaction."""
    config = LoopConfig(context_window=33_000, max_turns=5)
    core, run, terminal = play(
        [READ, READ, READ, READ, TEXT], config=config, compactions=(False,) * 5
    )
    assert terminal == "completed"
    names = loop_names(run)
    assert names.count("autocompact_failed") == 3
    assert "autocompact_done" not in names
    assert core.state.auto_compact is not None
    assert core.state.auto_compact.consecutive_failures == 3


def test_blocking_limit_without_reactive_compact() -> None:
    """A small window with reactive compact and autocompact off refuses the request."""
    config = LoopConfig(context_window=23_000, reactive_compact=False, autocompact=False)
    core, run, terminal = play([TEXT], config=config)
    assert terminal == "blocking_limit"
    assert not effects_of(run, fx.CallModel)
    assert isinstance(core.transcript[-1], ApiErrorMessage)


# --- stream failures, retries, fallback -------------------------------------------------------


def test_retries_bounded_by_max_retries_then_model_error() -> None:
    """Retryable failures are retried max_retries times, then the run ends in model_error."""
    config = LoopConfig(max_retries=2)
    _, run, terminal = play([{"error": {"kind": "server_error"}}] * 4, config=config)
    assert terminal == "model_error"
    assert loop_names(run).count("request_retried") == 2
    assert [c.attempt for c in effects_of(run, fx.CallModel)] == [1, 2, 3]


def test_truncated_stream_is_retried_then_model_error() -> None:
    """A stream closing without message_stop is retried, and with no retries left fails."""
    truncated = {"content": [{"text": "cut"}], "error": {"kind": "truncated"}}
    _, run, terminal = play([truncated, TEXT])
    assert terminal == "completed"
    assert "request_retried" in loop_names(run)
    _, run, terminal = play([truncated], config=LoopConfig(max_retries=0))
    assert terminal == "model_error"


def test_other_failure_is_not_retried() -> None:
    """A non-retryable failure ends the run in model_error at once."""
    _, run, terminal = play([{"error": {"kind": "other"}}, TEXT])
    assert terminal == "model_error"
    assert "request_retried" not in loop_names(run)


def test_output_overflow_asks_again_for_what_fits() -> None:
    """A 400 "input + max_tokens > limit" retries once with the room that is left (SPEC §8.3):
    200 000 − 188 000 − 1 000 = 11 000 output tokens, for that iteration only."""
    overflow = {"error": {"kind": "output_overflow"}}
    _, run, terminal = play([overflow, TEXT])
    assert terminal == "completed"
    assert loop_names(run).count("max_tokens_reduced") == 1
    sizes = [e.max_output_tokens for e in effects_of(run, fx.CallModel)]
    assert sizes == [32_000, 11_000]


def test_output_overflow_below_the_floor_is_a_model_error() -> None:
    """When less than 3 000 tokens would be left, the overflow ends the run model_error."""
    message = "input length and `max_tokens` exceed context limit: 198000 + 32000 > 200000"
    overflow = {"error": {"kind": "output_overflow", "message": message}}
    _, run, terminal = play([overflow])
    assert terminal == "model_error"
    assert "max_tokens_reduced" not in loop_names(run)


def test_model_fallback_after_three_overloaded() -> None:
    """Three overloaded in a row with a fallback model switch core.model and retry."""
    config = LoopConfig(fallback_model="fb")
    overloaded = {"error": {"kind": "overloaded"}}
    core, run, terminal = play([overloaded] * 3 + [TEXT], config=config)
    assert terminal == "completed"
    assert loop_names(run).count("model_fallback") == 1
    assert core.model == "fb"
    assert effects_of(run, fx.CallModel)[-1].model == "fb"


def test_model_fallback_answers_streamed_tool_uses_by_withdrawal() -> None:
    """A fallback mid-stream tombstones the attempt's tool_use; no orphan result remains."""
    config = LoopConfig(fallback_model="fb", overloaded_before_fallback=1)
    failing = {"content": [{"tool_use": {"name": "Read", "input": {}}}, {"text": "x"}],
               "error": {"kind": "overloaded", "mid_stream_after": 6}}  # fmt: skip
    _, run, terminal = play([failing, TEXT], config=config)
    assert terminal == "completed"
    assert "model_fallback" in loop_names(run)


def test_stream_protocol_error_is_model_error() -> None:
    """A malformed stream event ends the run in model_error, not an exception."""
    f = Feeder()
    call = open_turn(f.feed, prompt("hi")).effects[-1]
    assert isinstance(call, fx.CallModel)
    bad = {"type": "content_block_stop", "index": 0}  # before message_start
    step = f.feed(ev.ModelStreamEvent(request_id=call.request_id, event=bad))
    assert step.terminal == "model_error"


def test_image_invalid_is_image_error() -> None:
    """An image that cannot be sent ends the run in image_error."""
    f = Feeder()
    call = open_turn(f.feed, prompt("hi")).effects[-1]
    failed = ev.ModelStreamFailed(
        request_id=call.request_id, kind=ev.FailureKind.IMAGE_INVALID, message="bad image"
    )
    assert f.feed(failed).terminal == "image_error"


# --- no-tools recovery chain ------------------------------------------------------------------


def test_reactive_compact_retry_then_second_ptl_ends_prompt_too_long() -> None:
    """Reactive compact runs once (flag set); a second prompt-too-long ends prompt_too_long."""
    core, run = start([PTL, PTL, TEXT])
    for _ in range(200):
        if "reactive_compact_retry" in loop_names(run):
            break
        run.advance()
    assert core.state.has_attempted_reactive_compact
    terminal = finish(core, run)
    assert terminal == "prompt_too_long"
    assert loop_names(run).count("reactive_compact_retry") == 1
    hooks = effects_of(run, fx.RunHooks)
    assert all(h.hook_event is not fx.HookEvent.STOP for h in hooks)


def test_failed_reactive_compact_ends_prompt_too_long() -> None:
    """When reactive compaction fails, the withheld error surfaces: prompt_too_long."""
    _, _, terminal = play([PTL, TEXT], compactions=(False,))
    assert terminal == "prompt_too_long"


def test_media_error_reactive_compact_failure_is_image_error() -> None:
    """A media error whose compaction fails ends image_error."""
    _, _, terminal = play([MEDIA, TEXT], compactions=(False,))
    assert terminal == "image_error"


def test_second_media_error_is_image_error() -> None:
    """A media error after reactive compact was used ends image_error from finalizing."""
    _, run, terminal = play([MEDIA, MEDIA, TEXT])
    assert terminal == "image_error"
    assert "reactive_compact_retry" in loop_names(run)


def test_prompt_too_long_without_recovery_completes() -> None:
    """With no reactive compact nor collapse, prompt-too-long is shown and the run completes."""
    config = LoopConfig(reactive_compact=False)
    core, run, terminal = play([PTL, TEXT], config=config)
    assert terminal == "completed"
    assert "stop_hooks_started" not in loop_names(run)
    assert isinstance(core.transcript[-1], ApiErrorMessage)


def test_results_over_the_budget_are_saved_before_the_next_request() -> None:
    """Two results over the message budget: the larger is saved, then the request goes."""
    reads = {"content": [{"tool_use": {"name": "Read", "input": {"path": p}}} for p in "ab"]}
    config = LoopConfig(tool_result_budget_chars=1_000)
    core, run, terminal = play(
        [reads, TEXT], config=config, tools={"Read": ToolScript(content="r" * 600)}
    )
    assert terminal == "completed"
    (asked,) = effects_of(run, fx.PersistToolResults)
    assert [r.tool_use_id for r in asked.results] == ["toolu_001"]
    names = loop_names(run)
    after = names[names.index("tool_results_persisted") :]
    assert after[:3] == ["tool_results_persisted", "context_prepared", "request_sent"]
    results = [r for m in core.messages_for_query() for r in tool_results(m)]
    assert [str(r.content)[:18] for r in results] == ["<persisted-output>", "r" * 18]


def test_old_tool_results_are_cleared_after_a_long_pause() -> None:
    """Every event an hour after the last: before the third request the first result is
    cleared, and the pairing holds (SPEC §7.3)."""
    hours = itertools.count(start=0.0, step=3_600.0)
    clock = ResponseClock(lambda: next(hours))
    config = LoopConfig(time_based_microcompact=True, microcompact_keep_recent=1)
    core = AgentCore(config=config, tools=TOOLS)
    world = World(scenario=parse_scenario({"steps": [READ, READ, TEXT]}))
    run = WorldRun(lambda event: core.feed(clock.stamp(event)), world, prompt("hi"))
    assert finish(core, run) == "completed"
    assert loop_names(run).count("old_tool_results_cleared") == 1
    results = [r.content for m in core.messages_for_query() for r in tool_results(m)]
    assert results == [texts.OLD_TOOL_RESULT_CLEARED, "ok"]


def test_abort_while_results_are_saved_is_aborted_streaming() -> None:
    """An abort while the driver saves results ends aborted_streaming."""
    reads = {"content": [{"tool_use": {"name": "Read", "input": {"path": p}}} for p in "ab"]}
    config = LoopConfig(tool_result_budget_chars=1_000)
    core, run = start([reads, TEXT], config=config, tools={"Read": ToolScript(content="r" * 600)})
    while core.phase != Phase.PERSISTING_RESULTS.value:
        run.advance()
    run.abort()
    assert finish(core, run) == "aborted_streaming"


def test_a_collapse_staged_near_the_window_is_committed_by_a_refusal() -> None:
    """Over 90% of the window a span is staged without waiting; the refusal commits it, and
    requests are projected through its summary while the history is kept (SPEC §7.4)."""
    big = {**READ, "usage": {"input_tokens": 19_000, "output_tokens": 1}}
    config = LoopConfig(context_collapse=True, context_window=40_000)
    core, run, terminal = play([big, PTL, TEXT], config=config)
    assert terminal == "completed"
    names = loop_names(run)
    assert names.index("collapse_staging_started") < names.index("collapse_drain_retry")
    (drain,) = effects_of(run, fx.DrainCollapse)
    assert drain.staged == 1
    assert "collapse" in core.messages_for_query()[0].uuid
    assert core.state.messages[0].uuid == "prompt"


def test_collapse_drain_retry_when_committed() -> None:
    """With context collapse on, a committed drain retries the request."""
    config = LoopConfig(context_collapse=True)
    _, run, terminal = play([PTL, TEXT], config=config, collapses=(2,))
    assert terminal == "completed"
    assert "collapse_drain_retry" in loop_names(run)


def test_empty_collapse_drain_falls_to_reactive_compact() -> None:
    """An empty drain goes back to finalizing, where reactive compact takes over."""
    config = LoopConfig(context_collapse=True)
    _, run, terminal = play([PTL, TEXT], config=config, collapses=(0,))
    assert terminal == "completed"
    names = loop_names(run)
    assert names.index("collapse_drain_empty") < names.index("reactive_compact_retry")


def test_max_output_tokens_recovery_at_most_three_then_error_surfaces() -> None:
    """Truncation is recovered 3 times; the 4th surfaces the error and the run completes."""
    core, run, terminal = play([CUT] * 5)
    assert terminal == "completed"
    names = loop_names(run)
    assert names.count("max_output_tokens_recovery") == 3
    assert "stop_hooks_started" not in names
    last = core.transcript[-1]
    assert isinstance(last, ApiErrorMessage) and last.kind is ApiErrorKind.MAX_OUTPUT_TOKENS


def test_escalate_fires_once_with_override_64000() -> None:
    """With escalation on, truncation first escalates once to 64000 output tokens."""
    config = LoopConfig(escalate_output_tokens=True)
    core, run = start([CUT, TEXT], config=config)
    while "max_output_tokens_escalate" not in loop_names(run):
        run.advance()
    assert core.state.max_output_tokens_override == 64_000
    assert finish(core, run) == "completed"
    assert loop_names(run).count("max_output_tokens_escalate") == 1
    assert effects_of(run, fx.CallModel)[-1].max_output_tokens == 64_000


def test_escalate_never_with_env_override() -> None:
    """An explicit output-token override disables escalation."""
    config = LoopConfig(escalate_output_tokens=True, max_output_tokens_override=8_000)
    _, run, _ = play([CUT, TEXT], config=config)
    assert "max_output_tokens_escalate" not in loop_names(run)


# --- stop hooks and token budget --------------------------------------------------------------


def test_stop_hook_blocking_continues_with_feedback() -> None:
    """A blocking stop hook feeds its text back and continues with stop_hook_active."""
    blocked = ev.HookOutcome(blocking_errors=("fix it",))
    _, run, terminal = play([TEXT, TEXT], stop_hooks=(blocked,))
    assert terminal == "completed"
    assert "stop_hook_blocking" in loop_names(run)
    stops = [h for h in effects_of(run, fx.RunHooks) if h.hook_event is fx.HookEvent.STOP]
    assert [h.payload["stop_hook_active"] for h in stops] == [False, True]


def test_stop_hook_block_cap_ends_stop_hook_prevented() -> None:
    """An always-blocking stop hook ends in stop_hook_prevented at the cap."""
    blocked = ev.HookOutcome(blocking_errors=("again",))
    config = LoopConfig(stop_hook_block_cap=2)
    _, run, terminal = play([TEXT] * 5, config=config, stop_hooks=(blocked,) * 5)
    assert terminal == "stop_hook_prevented"
    assert loop_names(run).count("stop_hook_blocking") == 2


def test_stop_hook_prevent_continuation() -> None:
    """A stop hook's continue:false ends the run in stop_hook_prevented."""
    stop = ev.HookOutcome(prevent_continuation=True, stop_reason="enough")
    core, _, terminal = play([TEXT], stop_hooks=(stop,))
    assert terminal == "stop_hook_prevented"
    last = core.transcript[-1]
    assert isinstance(last, AttachmentMessage)
    assert last.kind is AttachmentKind.HOOK_STOPPED_CONTINUATION


def test_always_blocking_stop_hook_plus_prompt_too_long_ends() -> None:
    """Prompt-too-long with an always-blocking stop hook still ends (no death loop)."""
    blocked = ev.HookOutcome(blocking_errors=("no",))
    steps = [PTL, TEXT, PTL, TEXT, PTL, TEXT]
    _, run, terminal = play(steps, stop_hooks=(blocked,) * 6)
    assert terminal in {"prompt_too_long", "stop_hook_prevented"}
    assert loop_names(run).count("reactive_compact_retry") == 1


def test_token_budget_continuation_nudges() -> None:
    """Under 90% of the token budget, the run continues with a nudge."""
    config = LoopConfig(token_budget=10_000)
    small = {"content": [{"text": "a"}], "usage": {"output_tokens": 100}}
    _, run, terminal = play([small] * 6, config=config)
    assert terminal == "completed"
    assert 1 <= loop_names(run).count("token_budget_continuation") <= 3


def test_token_budget_keeps_going_while_output_grows() -> None:
    """Continuations that each add ≥500 output tokens are not diminishing (SPEC §7.6): the
    run goes on until 90% of the budget is used."""
    config = LoopConfig(token_budget=10_000)
    big = {"content": [{"text": "a"}], "usage": {"output_tokens": 2_000}}
    _, run, terminal = play([big] * 5, config=config)
    assert terminal == "completed"
    assert loop_names(run).count("token_budget_continuation") == 4


def test_token_budget_stops_on_diminishing_returns() -> None:
    """After 3 continuations, two small deltas in a row end the run (SPEC §7.6)."""
    config = LoopConfig(token_budget=100_000)
    big = {"content": [{"text": "a"}], "usage": {"output_tokens": 2_000}}
    small = {"content": [{"text": "a"}], "usage": {"output_tokens": 100}}
    _, run, terminal = play([big, big, big, small, small], config=config)
    assert terminal == "completed"
    assert loop_names(run).count("token_budget_continuation") == 4


# --- stop reasons with rows of their own: refusal, pause_turn ------------------------------------


def test_refusal_ends_in_the_refusal_terminal_and_says_why() -> None:
    """A refusal stop ends the run in refusal, tells the caller the category, runs no Stop hook."""
    details = {"type": "refusal", "category": "cyber", "explanation": "Not this."}
    refused = {"content": [{"text": ""}], "stop_reason": "refusal", "stop_details": details}
    core, run, terminal = play([refused])
    assert terminal == "refusal"
    notes = [m for m in core.transcript if isinstance(m, SystemMessage) and m.subtype == "refusal"]
    assert len(notes) == 1
    assert "cyber" in notes[0].text
    assert "Not this." in notes[0].text
    fired = {e.hook_event for e in effects_of(run, fx.RunHooks)}
    assert fx.HookEvent.STOP not in fired
    last = [m for m in core.transcript if isinstance(m, AssistantMessage)][-1]
    assert last.stop_details == details


def test_pause_turn_sends_the_paused_answer_back() -> None:
    """A pause_turn stop continues the turn with the paused assistant message last."""
    paused = {"content": [{"text": "Searching."}], "stop_reason": "pause_turn"}
    core, run, terminal = play([paused, TEXT])
    assert terminal == "completed"
    assert loop_names(run).count("pause_turn") == 1
    second = core.api_messages()
    assert [m["role"] for m in second][:2] == ["user", "assistant"]
    assert second[1]["content"] == [{"type": "text", "text": "Searching."}]


def test_pause_turn_is_bounded_per_turn() -> None:
    """Past pause_turn_limit a paused turn finishes as it stands (stop hooks, completed)."""
    paused = {"content": [{"text": "Searching."}], "stop_reason": "pause_turn"}
    _, run, terminal = play([paused] * 4, config=LoopConfig(pause_turn_limit=2))
    assert terminal == "completed"
    assert loop_names(run).count("pause_turn") == 2


# --- tools: abort, hook stop --------------------------------------------------------------------


def test_hook_prevent_continuation_after_tools_is_hook_stopped() -> None:
    """A PreToolUse hook's continue:false ends the run in hook_stopped after the tools."""
    stop = ev.HookOutcome(prevent_continuation=True, stop_reason="halt")
    _, _, terminal = play([READ, TEXT], pre_hooks=(stop,))
    assert terminal == "hook_stopped"


def test_abort_while_tools_run_is_aborted_tools() -> None:
    """An abort while a tool runs cancels it, answers it and ends aborted_tools."""
    core, run = start([READ, TEXT])
    while not any(c.state == "running" for c in core.tool_calls):
        run.advance()
    run.abort()
    assert finish(core, run) == "aborted_tools"
    assert any(tool_results(m) for m in core.transcript)


def test_abort_in_attachments_is_aborted_tools() -> None:
    """An abort while attachments are fetched ends aborted_tools."""
    core, run = start([READ, TEXT])
    while core.phase != Phase.ATTACHMENTS.value:
        run.advance()
    run.abort()
    assert finish(core, run) == "aborted_tools"


def test_abort_during_stop_hooks_is_stop_hook_prevented() -> None:
    """An abort while Stop hooks run ends stop_hook_prevented."""
    core, run = start([TEXT])
    while core.phase != Phase.STOP_HOOKS.value:
        run.advance()
    run.abort()
    assert finish(core, run) == "stop_hook_prevented"


@pytest.mark.parametrize(
    "phase",
    [Phase.STREAMING, Phase.AUTOCOMPACTING, Phase.COLLAPSE_DRAINING, Phase.REACTIVE_COMPACTING],
)
def test_abort_in_waiting_phase_is_aborted_streaming(phase: Phase) -> None:
    """An abort while waiting on the model or a compaction ends aborted_streaming."""
    config = LoopConfig(
        context_window=33_000 if phase is Phase.AUTOCOMPACTING else 200_000,
        context_collapse=phase is Phase.COLLAPSE_DRAINING,
    )
    core, run = start([PTL, TEXT], config=config)
    while core.phase != phase.value:
        run.advance()
    run.abort()
    assert finish(core, run) == "aborted_streaming"


def test_abort_mid_stream_answers_streamed_tool_use() -> None:
    """An abort after a tool_use streamed answers that tool_use before ending."""
    core, run = start([{"content": [{"tool_use": {"name": "Write", "input": {}}}, {"text": "x"}]}])
    while not core.tool_calls:
        run.advance()
    run.abort()
    assert finish(core, run) == "aborted_streaming"


@pytest.mark.parametrize("phase", [Phase.SESSION_START_HOOKS, Phase.PROMPT_HOOKS])
def test_abort_while_prompt_time_hooks_run_is_aborted_streaming(phase: Phase) -> None:
    """An abort while SessionStart or UserPromptSubmit hooks run ends aborted_streaming."""
    core, run = start([TEXT])
    while core.phase != phase.value:
        run.advance()
    run.abort()
    assert finish(core, run) == "aborted_streaming"
    assert effects_of(run, fx.CallModel) == []


@pytest.mark.parametrize(
    "case",
    [
        (ev.HookOutcome(blocking_errors=("[./guard.sh]: no secrets",)), "no secrets"),
        (ev.HookOutcome(prevent_continuation=True, stop_reason="office hours"), "office hours"),
    ],
)
def test_a_refused_prompt_ends_prompt_blocked(case: tuple[ev.HookOutcome, str]) -> None:
    """A UserPromptSubmit block or stop ends prompt_blocked, says why, and sends no request."""
    outcome, shown = case
    core, run, terminal = play([TEXT], prompt_hooks=(outcome,))
    assert terminal == "prompt_blocked"
    assert effects_of(run, fx.CallModel) == []
    assert shown in text_of(core.transcript[-1])


def test_prompt_hook_context_reaches_the_first_request() -> None:
    """UserPromptSubmit additional context is part of the first request's messages."""
    outcome = ev.HookOutcome(
        additional_context=("the user is on call",), system_messages=("for-the-user",)
    )
    core, run = start([TEXT], prompt_hooks=(outcome,))
    while not effects_of(run, fx.CallModel):
        run.advance()
    sent = str(core.api_messages())
    assert "the user is on call" in sent
    assert "for-the-user" not in sent  # a notice is for the user, never for the model
    assert finish(core, run) == "completed"


def test_abort_when_idle_is_aborted_streaming() -> None:
    """An abort before the run starts ends it aborted_streaming."""
    f = Feeder()
    assert f.feed(ev.AbortRequested()).terminal == "aborted_streaming"


@pytest.mark.parametrize(
    "phase",
    [Phase.ITER_INIT, Phase.PREPROCESS, Phase.SETUP, Phase.POST_STREAM, Phase.FINALIZING],
)
def test_abort_in_passing_phase_is_aborted_streaming(phase: Phase) -> None:
    """An abort landing in a phase the core only passes through ends aborted_streaming."""
    f = Feeder()
    f.feed(ev.TurnStarted(messages=prompt("hi")))
    f.core._machine_model.state = phase.value
    assert f.feed(ev.AbortRequested()).terminal == "aborted_streaming"


def test_abort_in_post_tools_is_aborted_tools() -> None:
    """An abort landing in post_tools ends aborted_tools."""
    f = Feeder()
    f.feed(ev.TurnStarted(messages=prompt("hi")))
    f.core._machine_model.state = Phase.POST_TOOLS.value
    assert f.feed(ev.AbortRequested()).terminal == "aborted_tools"


def test_permission_rejection_mid_stream_aborts_streaming() -> None:
    """A permission answer that aborts the turn while streaming ends aborted_streaming."""
    f = Feeder()
    call = open_turn(f.feed, prompt("hi")).effects[-1]
    events = stream({"content": [{"tool_use": {"name": "Read", "input": {}}}, {"text": "x"}]},
                    call.request_id)  # fmt: skip
    for event in events:  # message_start, the tool_use block, up to its stop
        f.feed(event)
        if event.event["type"] == "content_block_stop":
            break
    validate = f.effects(fx.RunToolStep)[-1]
    # Only a read-only call starts before the response has ended (SPEC §5.2 "Ours").
    f.feed(ev.ToolInputValidated(call_id=validate.call_id, ok=True, read_only=True))
    hook = f.effects(fx.RunHooks)[-1]
    f.feed(ev.HooksFinished(effect_id=hook.effect_id))
    ask = f.effects(fx.AskPermission)[-1]
    step = f.feed(
        ev.PermissionDecided(
            effect_id=ask.effect_id,
            behavior=ev.PermissionBehavior.DENY,
            source=ev.DecisionSource.USER,
            abort_turn=True,
        )
    )
    assert step.terminal == "aborted_streaming"
    assert check_run(f.core, f.steps, f.core.config) == []


def test_denied_tool_still_next_turn() -> None:
    """A denied tool gets an error result and the loop goes on to the next turn."""
    _, run, terminal = play([READ, TEXT], deny_tools=frozenset({"Read"}))
    assert terminal == "completed"
    assert "next_turn" in loop_names(run)


def test_an_exact_count_decides_the_autocompact_check() -> None:
    """With count_tokens on, the count is asked before the checks and its figure decides:
    12,000 tokens is past a 10,000-token threshold (SPEC §7.5)."""
    config = LoopConfig(count_tokens=True, context_window=43_000)
    core, run, terminal = play([TEXT], config=config, token_counts=(12_000,))
    assert terminal == "completed"
    names = loop_names(run)
    assert names[names.index("token_count_requested") :][:3] == [
        "token_count_requested",
        "tokens_counted",
        "autocompact_started",
    ]
    (asked,) = effects_of(run, fx.CountTokens)
    assert asked.model == core.model


def test_abort_while_tokens_are_counted_is_aborted_streaming() -> None:
    """An abort while the count is out ends aborted_streaming."""
    core, run = start([TEXT], config=LoopConfig(count_tokens=True), token_counts=(5,))
    while core.phase != Phase.COUNTING_TOKENS.value:
        run.advance()
    run.abort()
    assert finish(core, run) == "aborted_streaming"


def test_a_snip_request_is_applied_before_the_next_request() -> None:
    """A Snip call's request is applied in preprocess, after the budget and before
    microcompact, and the first Read round leaves what is sent (SPEC §7.2)."""
    snip = {"content": [{"tool_use": {"name": "Snip", "input": {"ids": ["toolu_001"]}}}]}
    scripts = {"Snip": ToolScript(safe=False, context_update={"snip": ["toolu_001"]})}
    specs = [*TOOLS, ToolSpec(name="Snip")]
    core, run, terminal = play(
        [READ, snip, TEXT], config=LoopConfig(snip=True), specs=specs, tools=scripts
    )
    assert terminal == "completed"
    names = loop_names(run)
    assert names[names.index("history_snipped") - 1] == "iteration_started"
    assert names[names.index("history_snipped") + 1] == "context_prepared"
    assert "toolu_001" not in [
        b.id
        for m in core.messages_for_query()
        if isinstance(m, AssistantMessage)
        for b in m.content
    ]
