"""Checks of the DESIGN §6 invariants over a core and the steps it returned.

``check_step`` is cheap enough to call after every ``feed``; ``check_run`` adds the checks that
only hold once a run has ended. Both return a list of readable violations (empty when all is
well), so a property test can ``assert check_run(...) == []`` and see every problem at once.

The checks read the steps a run produced (transitions, effects, the events that caused them)
and, where the steps alone cannot tell, the core's private state: this module is part of the
testing package and knows how the core is built.

Invariant numbers follow DESIGN §6: 1 (tool_use/tool_result pairing: every tool_use ever
emitted, withdrawn ones included, gets exactly one tool_result), 2 (bounded transitions), 3 (no
reactive-compact death loop), 4 (bounded output-token recovery), 5 (no Stop hooks after an API
error), 6 (unsafe tools run alone, in model order), 8 (valid API messages), 9 (every transition
is a table row). Two more come from SPEC §5.2 "Ours: side effects wait": 11 (no call that is not
read-only is called in an attempt that is then withdrawn) and 12 (no call id is called twice).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence

from fsm_agent.core import effects as fx
from fsm_agent.core import events as ev
from fsm_agent.core.agent_core import AgentCore
from fsm_agent.core.config import LoopConfig
from fsm_agent.core.messages import (
    ApiErrorMessage,
    Message,
    tool_results,
    tool_uses,
)
from fsm_agent.core.normalize import api_invariant_violations, normalize_for_api
from fsm_agent.core.step import Step, TransitionTaken
from fsm_agent.core.tables import (
    LOOP_ROWS,
    RESULT_STATES,
    TOOL_ROWS,
    CallState,
    ContinueReason,
)

__all__ = [
    "StepLog",
    "check_run",
    "check_step",
    "checked_feed",
    "continue_bound",
    "transition_bound",
]

StepLog = Sequence[tuple[ev.Event, Step]]
"""What a run produced: each event fed and the step it returned (``WorldRun.steps``)."""

_ROW_TRIPLES: dict[str, frozenset[tuple[str, str, str]]] = {
    "loop": frozenset((r.name, s, r.dest) for r in LOOP_ROWS for s in r.source),
    "tool": frozenset((r.name, s, r.dest) for r in TOOL_ROWS for s in r.source),
}
_CHAIN_RESETS = frozenset({"next_turn", "stop_hook_blocking", "token_budget_continuation"})
_OVERRIDE_RESETS = frozenset(c.value for c in ContinueReason) - {"max_output_tokens_escalate"}
_CONTINUES = frozenset(c.value for c in ContinueReason)
_CALL_DONE = RESULT_STATES | {CallState.YIELDED.value}
# Loop rows that withdraw the attempt in flight (the core's ``_discard_attempt``).
_WITHDRAWING = frozenset(
    {"request_retried", "model_fallback", "max_tokens_reduced", "api_error_received"}
)
# Loop rows one iteration can take besides retries: start, preprocess (the tool-result budget
# and its answer, snip, microcompact, collapse staging, the exact token count and its answer),
# compaction, setup, request, stream end, the no-tools or tools branch, finalizing and its
# waits, one continue.
_LOOP_ROWS_PER_ITERATION = 23
_LOOP_ROWS_PER_REQUEST = 2
_TOOL_ROWS_PER_CALL = 10


# --- bounds (invariant 2) -----------------------------------------------------------------


def continue_bound(config: LoopConfig) -> int:
    """Most continues a run may take between two ``next_turn`` transitions under ``config``.

    Within one stop-hook segment output-token recovery takes at most ``R`` recoveries and
    ``R + 1`` escalations, reactive compact at most one retry per turn, and a collapse drain
    never twice in a row; the stop-hook cap bounds the segments. Token-budget continuations: at
    most three unconditionally, then each needs a delta of ≥ 500 tokens in one of every two
    rounds (else diminishing returns stop it) and the total stays under 90% of the budget.
    ``pause_turn`` continues are capped per turn by ``pause_turn_limit``.

    Args:
        config: the loop configuration of the run.

    Returns:
        A generous but finite bound.
    """
    recoveries = config.max_output_tokens_recoveries
    per_segment = 2 * (2 * recoveries + 1 + 1) + 2
    segments = config.stop_hook_block_cap + 1
    budget = config.token_budget
    budget_rounds = 1 if budget is None else 4 + 2 * (math.ceil(0.9 * budget / 500) + 1)
    return per_segment * segments * budget_rounds + budget_rounds + config.pause_turn_limit


def transition_bound(config: LoopConfig, *, model_steps: int, tool_calls: int) -> int:
    """Most transitions a run may take (DESIGN §6 invariant 2).

    Every model request consumes one scripted model step (an exhausted script fails the
    request in a way that is not retried), each iteration makes at least one request unless
    it ends in ``blocking_limit``, and each tool call walks at most ten tool rows.

    Args:
        config: the loop configuration of the run.
        model_steps: how many model steps the world scripts.
        tool_calls: how many tool_use blocks those steps hold in all.

    Returns:
        A generous but finite bound on the number of ``TransitionTaken`` in the whole run.
    """
    requests = model_steps + 1
    iterations = requests + 1
    if config.max_turns is not None:
        turns_bound = config.max_turns * (continue_bound(config) + 1) + 1
        iterations = min(iterations, turns_bound)
    loop = _LOOP_ROWS_PER_ITERATION * iterations + _LOOP_ROWS_PER_REQUEST * requests + 1
    return loop + _TOOL_ROWS_PER_CALL * tool_calls


# --- helpers ------------------------------------------------------------------------------


def _transitions(steps: StepLog) -> list[TransitionTaken]:
    return [t for _, step in steps for t in step.transitions]


# --- single invariants --------------------------------------------------------------------


def _pairing(transcript: Sequence[Message], *, terminal: bool) -> list[str]:
    """Invariant 1: each emitted tool_use, withdrawn or not, has one tool_result (at most one
    while the run goes on): SPEC §5.2 answers the calls of a withdrawn attempt too."""
    call_ids = [block.id for message in transcript for block in tool_uses(message)]
    all_ids = set(call_ids)
    answers = Counter(block.tool_use_id for m in transcript for block in tool_results(m))
    problems: list[str] = []
    for call_id in call_ids:
        count = answers.get(call_id, 0)
        if count > 1:
            problems.append(f"inv1: tool_use {call_id} has {count} tool_results")
        elif terminal and count == 0:
            problems.append(f"inv1: tool_use {call_id} has no tool_result at the end of the run")
    problems.extend(
        f"inv1: tool_result for {call_id}, which no tool_use in the transcript has"
        for call_id in answers
        if call_id not in all_ids
    )
    return problems


def _side_effects(steps: StepLog) -> list[str]:
    """Invariants 11 and 12: no side effect in a withdrawn attempt; no call called twice.

    A call is *called* when the core asks the driver to run it (``RunToolStep`` with step
    ``call``); whether it is read-only comes from its validation.
    """
    read_only: dict[str, bool] = {}
    called: Counter[str] = Counter()
    attempt: list[str] = []
    problems: list[str] = []
    for event, step in steps:
        if isinstance(event, ev.ToolInputValidated):
            read_only[event.call_id] = event.ok and event.read_only
        for t in step.transitions:
            if t.machine != "loop":
                continue
            if t.name in _WITHDRAWING:
                problems.extend(
                    f"inv11: {call} has side effects and was called in an attempt that "
                    f"{t.name} withdrew"
                    for call in attempt
                    if not read_only.get(call, False)
                )
            if t.name in _WITHDRAWING or t.name in ("request_sent", "stream_ended"):
                attempt = []
        for effect in step.effects:
            if isinstance(effect, fx.RunToolStep) and effect.step is fx.ToolStep.CALL:
                called[effect.call_id] += 1
                if called[effect.call_id] == 2:
                    problems.append(f"inv12: call {effect.call_id} was called twice")
                attempt.append(effect.call_id)
    return problems


def _rows(transitions: Sequence[TransitionTaken]) -> list[str]:
    """Invariant 9: each transition is a (name, source, dest) of its machine's table."""
    problems = []
    for t in transitions:
        triples = _ROW_TRIPLES.get(t.machine)
        if triples is None:
            problems.append(f"inv9: transition {t.name} names an unknown machine {t.machine!r}")
        elif (t.name, t.source, t.dest) not in triples:
            problems.append(f"inv9: {t.machine} transition {t.name} {t.source}->{t.dest} is no row")
    return problems


def _reactive(transitions: Sequence[TransitionTaken]) -> list[str]:
    """Invariant 3: a successful model turn separates any two reactive_compact_retry."""
    problems = []
    armed = False
    for t in transitions:
        if t.machine != "loop":
            continue
        if t.name == "stream_ended":
            armed = False
        elif t.name == "reactive_compact_retry":
            if armed:
                problems.append("inv3: two reactive_compact_retry without a model turn between")
            armed = True
    return problems


_COMPACTIONS = frozenset({"autocompact_done", "reactive_compact_retry"})


def _compactions(config: LoopConfig, transitions: Sequence[TransitionTaken]) -> list[str]:
    """Invariant 3, extended (issue 10): at most ``max_compactions_per_turn`` compactions per
    user turn, and never compact → refused → compact → refused → compact: two compactions at
    most without a model response between them."""
    problems = []
    per_turn = 0
    since_response = 0
    for t in transitions:
        if t.machine != "loop":
            continue
        if t.name == "run_started":
            per_turn = 0
        elif t.name == "stream_ended":
            since_response = 0
        elif t.name in _COMPACTIONS:
            per_turn += 1
            since_response += 1
            if per_turn == config.max_compactions_per_turn + 1:
                problems.append(
                    f"inv3: {per_turn} compactions in one user turn exceed "
                    f"max_compactions_per_turn {config.max_compactions_per_turn}"
                )
            if since_response == 3:
                problems.append("inv3: three compactions without a model response between")
    return problems


def _output_recovery(config: LoopConfig, transitions: Sequence[TransitionTaken]) -> list[str]:
    """Invariant 4: recoveries per chain within the limit; escalation only without override."""
    problems = []
    recoveries = 0
    override = False
    for t in transitions:
        if t.machine != "loop":
            continue
        if t.name in _CHAIN_RESETS:
            recoveries = 0
        if t.name == "max_output_tokens_recovery":
            recoveries += 1
            if recoveries > config.max_output_tokens_recoveries:
                problems.append(
                    f"inv4: {recoveries} max_output_tokens_recovery in one chain "
                    f"(limit {config.max_output_tokens_recoveries})"
                )
        if t.name == "max_output_tokens_escalate":
            if override:
                problems.append("inv4: max_output_tokens_escalate while an override is set")
            if not config.escalate_output_tokens or config.max_output_tokens_override is not None:
                problems.append("inv4: max_output_tokens_escalate although the config forbids it")
            override = True
        elif t.name in _OVERRIDE_RESETS:
            override = False
    return problems


def _stop_hooks_after_api_error(steps: StepLog) -> list[str]:
    """Invariant 5 from the steps: no Stop hook in an iteration that received an API error."""
    problems = []
    api_error = False
    for _, step in steps:
        for t in step.transitions:
            if t.machine != "loop":
                continue
            if t.name == "iteration_started":
                api_error = False
            elif t.name in ("api_error_received", "blocking_limit"):
                api_error = True
            elif t.name == "stop_hooks_started" and api_error:
                problems.append("inv5: stop hooks started in an iteration that got an API error")
        for effect in step.effects:
            if isinstance(effect, fx.Emit) and isinstance(effect.message, ApiErrorMessage):
                api_error = True
    return problems


def _safety(steps: StepLog) -> dict[str, bool]:
    safe: dict[str, bool] = {}
    for event, _ in steps:
        if isinstance(event, ev.ToolInputValidated):
            safe[event.call_id] = event.ok and event.concurrency_safe
    return safe


def _concurrency(steps: StepLog) -> list[str]:
    """Invariant 6: an unsafe call never overlaps another; unsafe calls start in model order."""
    safe = _safety(steps)
    problems = []
    order: dict[str, int] = {}
    executing: set[str] = set()
    last_unsafe = -1
    for t in _transitions(steps):
        if t.machine == "loop" and t.name == "iteration_started":
            last_unsafe = -1
            continue
        if t.machine != "tool" or t.call_id is None:
            continue
        call = t.call_id
        if t.name == "validation_requested":
            order[call] = len(order)
        elif t.name == "started":
            unsafe = not safe.get(call, False)
            others = sorted(executing)
            if others and (unsafe or any(not safe.get(o, False) for o in others)):
                kind = "unsafe" if unsafe else "safe"
                problems.append(f"inv6: {kind} call {call} started while {others} ran")
            if unsafe:
                position = order.get(call, -1)
                if position < last_unsafe:
                    problems.append(f"inv6: unsafe call {call} started out of model order")
                last_unsafe = max(last_unsafe, position)
            executing.add(call)
        if t.dest in _CALL_DONE:
            executing.discard(call)
    return problems


def _stop_hooks_now(core: AgentCore, step: Step) -> list[str]:
    """Invariant 5 from the core: the step that starts Stop hooks has no API error last."""
    starts = any(t.machine == "loop" and t.name == "stop_hooks_started" for t in step.transitions)
    if starts and isinstance(core._last_assistant(), ApiErrorMessage):
        return ["inv5: stop hooks started while the last assistant message is an API error"]
    return []


def _api_messages(core: AgentCore) -> list[str]:
    """Invariant 8: the normalized transcript and request history are valid API input."""
    problems = [
        f"inv8 (transcript): {p}"
        for p in api_invariant_violations(normalize_for_api(core.transcript))
    ]
    if core.messages_for_query():
        problems.extend(
            f"inv8 (messages_for_query): {p}"
            for p in api_invariant_violations(normalize_for_api(core.messages_for_query()))
        )
        # what a request sends: collapse projections, cleared and saved results included
        problems.extend(
            f"inv8 (request): {p}" for p in api_invariant_violations(core.api_messages())
        )
    return problems


# --- public entry points ------------------------------------------------------------------


def check_step(
    core: AgentCore,
    steps: StepLog,
    config: LoopConfig,
    *,
    model_steps: int | None = None,
    tool_calls: int | None = None,
) -> list[str]:
    """Check what must hold after every step of a run (invariants 1–6 and 9, as far as known).

    Call it right after each ``feed``: the Stop-hook check reads the core's state as it is
    after the last step in ``steps``.

    Args:
        core: the core being driven.
        steps: every (event, step) of the run so far, in order.
        config: the core's configuration.
        model_steps: the number of scripted model steps; enables the transition bound.
        tool_calls: the number of tool_use blocks scripted; used with ``model_steps``.

    Returns:
        The violations found; empty when none.
    """
    transitions = _transitions(steps)
    problems = _pairing(core.transcript, terminal=False)
    problems += _rows(transitions)
    problems += _reactive(transitions)
    problems += _compactions(config, transitions)
    problems += _output_recovery(config, transitions)
    problems += _stop_hooks_after_api_error(steps)
    problems += _concurrency(steps)
    problems += _side_effects(steps)
    if steps:
        problems += _stop_hooks_now(core, steps[-1][1])
    if config.max_turns is not None and core.state.turn_count > config.max_turns:
        problems.append(f"inv2: turn {core.state.turn_count} exceeds max_turns {config.max_turns}")
    since_turn = 0
    for t in transitions:
        if t.machine == "loop" and t.name == "next_turn":
            since_turn = 0
        elif t.machine == "loop" and t.name in _CONTINUES:
            since_turn += 1
    if since_turn > continue_bound(config):
        problems.append(f"inv2: {since_turn} continues without a next_turn")
    if model_steps is not None:
        bound = transition_bound(config, model_steps=model_steps, tool_calls=tool_calls or 0)
        if len(transitions) > bound:
            problems.append(f"inv2: {len(transitions)} transitions exceed the bound {bound}")
    return problems


def check_run(
    core: AgentCore,
    steps: StepLog,
    config: LoopConfig,
    *,
    model_steps: int | None = None,
    tool_calls: int | None = None,
) -> list[str]:
    """Check a run: everything ``check_step`` checks, plus what holds once it has ended.

    The end-of-run checks (every tool_use answered, valid API messages) apply only when the
    core has reached a terminal state; for a run still going they are skipped.

    Args:
        core: the core that was driven.
        steps: every (event, step) of the run, in order.
        config: the core's configuration.
        model_steps: the number of scripted model steps; enables the transition bound.
        tool_calls: the number of tool_use blocks scripted; used with ``model_steps``.

    Returns:
        The violations found; empty when none.
    """
    problems = check_step(core, steps, config, model_steps=model_steps, tool_calls=tool_calls)
    if core.terminal is None:
        return problems
    problems += _pairing(core.transcript, terminal=True)
    problems += _api_messages(core)
    last = steps[-1][1] if steps else None
    if last is not None and last.terminal != core.terminal:
        problems.append(f"the last step says {last.terminal!r}, the core {core.terminal!r}")
    return problems


def checked_feed(
    core: AgentCore, steps: list[tuple[ev.Event, Step]], violations: list[str]
) -> Callable[[ev.Event], Step]:
    """Wrap ``core.feed`` so every step is logged in ``steps`` and checked with ``check_step``.

    Args:
        core: the core to feed.
        steps: receives each (event, step).
        violations: receives the violations of each step (each listed once).

    Returns:
        A feed function to hand to ``WorldRun``.
    """

    def feed(event: ev.Event) -> Step:
        step = core.feed(event)
        steps.append((event, step))
        for problem in check_step(core, steps, core.config):
            if problem not in violations:
                violations.append(problem)
        return step

    return feed
