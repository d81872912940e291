"""``CoreCheckpoint``: what a core must carry to go on in another process, as plain data.

A durable driver cannot keep one core alive for ever: Temporal bounds a workflow's history,
so a long session continues as a new run, and the new run needs the core exactly as it was.
Rebuilding it by feeding every past event again would carry the whole session along; a
checkpoint carries only the state, whose size follows the current context, not the session.

A checkpoint is taken at a *request boundary* only: the core has just asked for a model
response (``CallModel``) and nothing else is outstanding, so the per-iteration containers are
empty and the stream assembler and the tool executor are new (they are rebuilt, not carried).
A core restored from it produces, for the same later events, the same transitions, effects
and ids as the core it was taken from; a property test holds it to that.

What is not carried: the transcript before the checkpoint (it is in the trace, as the ``Emit``
effects that showed it; :attr:`CoreCheckpoint.shown` counts it) and the request-history cache
(rebuilt on the first request; it is equal to a full normalization by construction).
"""

from __future__ import annotations

from typing import Any, Final

import attrs

from fsm_agent.core.context_collapse import CollapsedSpan
from fsm_agent.core.loop_state import LoopState
from fsm_agent.core.messages import Usage

__all__ = ["CARRIED", "NOT_CARRIED", "CoreCheckpoint"]


@attrs.frozen(kw_only=True)
class CoreCheckpoint:
    """The state of an ``AgentCore`` at a request boundary (see the module docstring).

    Attributes:
        state: the carried loop state (SPEC §1.1), the history included.
        model: the model requests go to (after any ``model_fallback``).
        usage: token usage summed so far.
        effect_counter: the last effect id's number.
        uuid_counter: the last message id's number.
        request_counter: the last request id's number.
        request_id: the request in flight (its ``CallModel`` is the driver's to perform).
        attempt: that request's attempt number.
        max_output_tokens: the output cap it was sent with.
        output_cap: SPEC §8.3 overflow cap of this iteration, if set.
        consecutive_overloaded: 529 answers in a row (SPEC §3 fallback).
        abort_reason: why the turn is being aborted, once it is.
        tool_context: context that tools' updates changed.
        session_rules: allow rules added by "allow always" answers.
        answered: tool_use ids that have their tool_result.
        collapse_staged: the staged collapse span (SPEC §7.4), if any.
        collapse_committed: the committed collapse span, if any.
        collapse_staging: the ``StageCollapse`` effect in flight, if any.
        collapse_staging_through: the last message of the span it summarises.
        collapse_staging_failed: whether staging failed (it is not asked again).
        compacted_this_iteration: an autocompact ran in this iteration.
        collapse_drain_attempted: a collapse drain was tried in this recovery chain.
        budget_checked: the tool-result budget was checked in this iteration.
        compactions_this_turn: compactions in this user turn (the refill breaker).
        compaction_refilled: whether the last compaction refilled at once.
        wall_now: the latest wall time an event carried (SPEC §7.3).
        last_response_at: when the last response arrived.
        microcompacted_at: the response time the last microcompact was for.
        turn_output_tokens: output tokens in this user turn (SPEC §7.6).
        budget_continuations: token-budget continues in this user turn.
        budget_last_delta: the token-budget tracker's last delta.
        budget_last_total: the token-budget tracker's last total.
        estimate_anchor: the response part whose reported usage the estimate adjusts
            (SPEC §7.5), if any.
        estimate_freed: the tokens rewrites took out of what that figure covered.
        snipped: uuids snip removed (SPEC §7.2), so naming one again is refused as such.
        shown: messages shown before the checkpoint (the transcript not carried).
    """

    state: LoopState
    model: str
    usage: Usage
    effect_counter: int
    uuid_counter: int
    request_counter: int
    request_id: str
    attempt: int
    max_output_tokens: int
    output_cap: int | None = None
    consecutive_overloaded: int = 0
    abort_reason: str | None = None
    tool_context: dict[str, Any] = attrs.field(factory=dict)
    session_rules: tuple[str, ...] = ()
    answered: tuple[str, ...] = ()
    collapse_staged: CollapsedSpan | None = None
    collapse_committed: CollapsedSpan | None = None
    collapse_staging: str | None = None
    collapse_staging_through: str | None = None
    collapse_staging_failed: bool = False
    compacted_this_iteration: bool = False
    collapse_drain_attempted: bool = False
    budget_checked: bool = False
    compactions_this_turn: int = 0
    compaction_refilled: bool = False
    wall_now: float | None = None
    last_response_at: float | None = None
    microcompacted_at: float | None = None
    turn_output_tokens: int = 0
    budget_continuations: int = 0
    budget_last_delta: int = 0
    budget_last_total: int = 0
    estimate_anchor: str | None = None
    estimate_freed: int = 0
    snipped: tuple[str, ...] = ()
    shown: int = 0


CARRIED: Final = frozenset(
    {
        "_state",
        "_model_name",
        "_usage",
        "_effect_counter",
        "_uuid_counter",
        "_request_counter",
        "_request_id",
        "_attempt",
        "_output_cap",
        "_consecutive_overloaded",
        "_abort_reason",
        "_tool_context",
        "_session_rules",
        "_answered",
        "_budget",
        "_collapse",
        "_compacted_this_iteration",
        "_collapse_drain_attempted",
        "_budget_checked",
        "_compactions_this_turn",
        "_compaction_refilled",
        "_wall_now",
        "_last_response_at",
        "_microcompacted_at",
        "_turn_output_tokens",
        "_budget_continuations",
        "_budget_last_delta",
        "_budget_last_total",
        "_token_estimate",
        "_snipped",
        "_transcript",
    }
)
"""The core's attributes a checkpoint carries (``_transcript`` as a count, ``_collapse`` as its
spans, ``_budget`` as the history: at a request boundary every result in the history has just
been sent, and results no longer in it are never asked about again; ``_token_estimate`` as its
adjustment: its exact count is forgotten when the next iteration starts, and nothing reads it
before)."""

NOT_CARRIED: Final = frozenset(
    {
        # given again to the restored core, or derived from what is
        "config",
        "tools",
        "_specs",
        "_unbounded_tools",
        "_compactable_tools",
        "_machine_model",
        # empty, None or new at a request boundary (checked when the checkpoint is taken)
        "_assistant",
        "_tool_results",
        "_executor",
        "_assembler",
        "_stream_error",
        "_terminal",
        "_poisoned",
        "_awaiting",
        "_hot_request",
        "_snip_requests",
        # asked once per iteration, and reset when the next one starts: nothing reads it
        # between a request boundary and that reset
        "_token_count_asked",
        # rebuilt from ``answered``: at a request boundary every tool_use seen has its result
        "_tool_ids",
        # the step being built, and a cache equal to its recomputation
        "_event",
        "_transitions",
        "_effects",
        "_request_history",
    }
)
"""The core's attributes a checkpoint leaves out, with the reason in the comment above each
group. A test requires every attribute of a core to be in exactly one of the two sets, so a
new attribute cannot be forgotten."""
