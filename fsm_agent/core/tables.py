"""The two machine tables: every legal phase change of the loop and of a tool call is a row here.

Rules of this module:

* A row is ``(name, on, source, dest, guard)``. ``on`` is the event type that can fire it, or
  ``None`` for an automatic row, tried when the machine settles after an event.
* Rows sharing a source and an ``on`` are tried top to bottom; the first whose guard holds
  wins. Every such group ends with an unguarded row, unless the event may also be consumed
  inside the phase without a transition (``INTERNAL_EVENTS``).
* Guards read, never write. They are methods ``_guard_<predicate>`` of the core; the names are
  resolved when the machines are built, so a typo fails at import, not when the edge fires.
* What a row does to the loop state lives in the core's ``_on_<name>`` method (SPEC §2.1 says
  what each continue resets and keeps).
* Stream deltas and tool progress are handled inside a phase without a transition: a
  transition per delta would cost a trigger each for nothing (DESIGN §2).

The ``transitions`` machines are built once per process from these rows, without models; a
core fires a row with ``machine.events[name].trigger(model)`` on its own slotted state object,
which is cheaper than ``add_model`` and leaves nothing registered to leak. Our rows carry no
conditions and no callbacks (the core checks guards and runs actions itself), so the machines use
:class:`RowEvent`, whose trigger moves the model's state without the per-trigger ``EventData``,
callback lists and debug logging a general ``transitions`` event goes through (issue 10).
"""

from __future__ import annotations

import enum
import functools
import hashlib
from collections.abc import Iterable
from typing import Any

import attrs
from transitions import Event, Machine

from fsm_agent.core import events as ev
from fsm_agent.errors import DefinitionError


class Phase(enum.Enum):
    """Non-final states of the loop machine (DESIGN §2, SPEC §1.2)."""

    IDLE = "idle"
    SESSION_START_HOOKS = "session_start_hooks"
    PROMPT_HOOKS = "prompt_hooks"
    ITER_INIT = "iter_init"
    PREPROCESS = "preprocess"
    PERSISTING_RESULTS = "persisting_results"
    COUNTING_TOKENS = "counting_tokens"
    AUTOCOMPACTING = "autocompacting"
    SETUP = "setup"
    STREAMING = "streaming"
    POST_STREAM = "post_stream"
    FINALIZING = "finalizing"
    COLLAPSE_DRAINING = "collapse_draining"
    REACTIVE_COMPACTING = "reactive_compacting"
    STOP_HOOKS = "stop_hooks"
    TOOL_EXEC = "tool_exec"
    ATTACHMENTS = "attachments"
    POST_TOOLS = "post_tools"


class Terminal(enum.Enum):
    """Why a run ended; each is a final state of the same name (SPEC §2.2)."""

    COMPLETED = "completed"
    BLOCKING_LIMIT = "blocking_limit"
    IMAGE_ERROR = "image_error"
    MODEL_ERROR = "model_error"
    ABORTED_STREAMING = "aborted_streaming"
    ABORTED_TOOLS = "aborted_tools"
    PROMPT_TOO_LONG = "prompt_too_long"
    STOP_HOOK_PREVENTED = "stop_hook_prevented"
    HOOK_STOPPED = "hook_stopped"
    MAX_TURNS = "max_turns"
    REFUSAL = "refusal"
    PROMPT_BLOCKED = "prompt_blocked"  # ours: a UserPromptSubmit hook refused the prompt


class ContinueReason(enum.Enum):
    """Transitions that start another iteration (SPEC §2.1)."""

    NEXT_TURN = "next_turn"
    REACTIVE_COMPACT_RETRY = "reactive_compact_retry"
    COLLAPSE_DRAIN_RETRY = "collapse_drain_retry"
    MAX_OUTPUT_TOKENS_ESCALATE = "max_output_tokens_escalate"
    MAX_OUTPUT_TOKENS_RECOVERY = "max_output_tokens_recovery"
    STOP_HOOK_BLOCKING = "stop_hook_blocking"
    TOKEN_BUDGET_CONTINUATION = "token_budget_continuation"
    PAUSE_TURN = "pause_turn"


class CallState(enum.Enum):
    """States of one tool call (DESIGN §3)."""

    QUEUED = "queued"
    VALIDATING = "validating"
    PRE_HOOKS = "pre_hooks"
    PERMISSION = "permission"
    RUNNING = "running"
    POST_HOOKS = "post_hooks"
    COMPLETED = "completed"
    REJECTED = "rejected"
    DENIED = "denied"
    CANCELLED = "cancelled"
    ERRORED = "errored"
    YIELDED = "yielded"


@attrs.frozen
class Row:
    """One row of a machine table."""

    name: str
    on: type | None
    source: tuple[str, ...]
    dest: str
    guard: str | None = None


def _row(
    name: str,
    on: type | None,
    source: enum.Enum | Iterable[enum.Enum],
    dest: enum.Enum,
    guard: str | None = None,
) -> Row:
    sources = (source,) if isinstance(source, enum.Enum) else tuple(source)
    return Row(name, on, tuple(s.value for s in sources), dest.value, guard)


P, T, C = Phase, Terminal, CallState
_NOT_WAITING_ON_TOOLS = (
    P.IDLE,
    P.SESSION_START_HOOKS,
    P.PROMPT_HOOKS,
    P.ITER_INIT,
    P.PREPROCESS,
    P.PERSISTING_RESULTS,
    P.COUNTING_TOKENS,
    P.AUTOCOMPACTING,
    P.SETUP,
    P.STREAMING,
    P.POST_STREAM,
    P.FINALIZING,
    P.COLLAPSE_DRAINING,
    P.REACTIVE_COMPACTING,
)
_AFTER_TOOLS = (P.TOOL_EXEC, P.ATTACHMENTS, P.POST_TOOLS)

# fmt: off
LOOP_ROWS: tuple[Row, ...] = (
    # name                         on                     source                  dest                       guard
    _row("run_started",            ev.TurnStarted,        P.IDLE,                 P.SESSION_START_HOOKS),
    # SessionStart, then UserPromptSubmit hooks, before the first iteration (SPEC §6)
    _row("session_started",        ev.HooksFinished,      P.SESSION_START_HOOKS,  P.PROMPT_HOOKS),
    _row("prompt_blocked",         ev.HooksFinished,      P.PROMPT_HOOKS,         T.PROMPT_BLOCKED,         "prompt_refused"),
    _row("prompt_submitted",       ev.HooksFinished,      P.PROMPT_HOOKS,         P.ITER_INIT),
    # S0 → S1 → S2 (SPEC §1.2, §7.5)
    _row("iteration_started",      None,                  P.ITER_INIT,            P.PREPROCESS),
    # SPEC §7.1: the tool-result budget first; the driver saves the chosen results to files
    _row("tool_results_over_budget", None,                P.PREPROCESS,           P.PERSISTING_RESULTS,     "results_over_budget"),
    _row("tool_results_persisted", ev.ToolResultsPersisted, P.PERSISTING_RESULTS, P.PREPROCESS),
    # SPEC §7.2 (ours): old turns the model asked to snip leave what is sent
    _row("history_snipped",        None,                  P.PREPROCESS,           P.PREPROCESS,             "snip_requested"),
    # SPEC §7.3: after a long pause, old tool results are cleared (time from the events)
    _row("old_tool_results_cleared", None,                P.PREPROCESS,           P.PREPROCESS,             "microcompact_due"),
    # SPEC §7.4 (ours): near the window, the oldest span is summarised in the background
    _row("collapse_staging_started", None,                P.PREPROCESS,           P.PREPROCESS,             "collapse_stage_due"),
    # SPEC §7.5 (optional): the API counts the request exactly before the checks that use it
    _row("token_count_requested",  None,                  P.PREPROCESS,           P.COUNTING_TOKENS,        "token_count_due"),
    _row("tokens_counted",         ev.TokensCounted,      P.COUNTING_TOKENS,      P.PREPROCESS),
    _row("autocompact_started",    None,                  P.PREPROCESS,           P.AUTOCOMPACTING,         "should_autocompact"),
    # PreCompact hooks run first; their answer asks for the compaction itself (SPEC §7.5)
    _row("pre_compact_done",       ev.HooksFinished,      P.AUTOCOMPACTING,       P.AUTOCOMPACTING),
    _row("context_prepared",       None,                  P.PREPROCESS,           P.SETUP),
    _row("autocompact_done",       ev.CompactionFinished, P.AUTOCOMPACTING,       P.SETUP,                  "compaction_succeeded"),
    _row("autocompact_failed",     ev.CompactionFinished, P.AUTOCOMPACTING,       P.SETUP),
    _row("blocking_limit",         None,                  P.SETUP,                T.BLOCKING_LIMIT,         "at_blocking_limit"),
    _row("request_sent",           None,                  P.SETUP,                P.STREAMING),
    # S3: the stream and its failures (SPEC §3, §8.3)
    _row("model_error",            ev.ModelStreamEvent,   P.STREAMING,            T.MODEL_ERROR,            "stream_broken"),
    _row("aborted_streaming",      None,                  P.STREAMING,            T.ABORTED_STREAMING,      "abort_pending"),
    _row("stream_ended",           ev.ModelStreamClosed,  P.STREAMING,            P.POST_STREAM,            "stream_finished"),
    _row("request_retried",        ev.ModelStreamClosed,  P.STREAMING,            P.STREAMING,              "retry_allowed"),
    _row("model_error",            ev.ModelStreamClosed,  P.STREAMING,            T.MODEL_ERROR),
    _row("api_error_received",     ev.ModelStreamFailed,  P.STREAMING,            P.POST_STREAM,            "request_refused"),
    _row("image_error",            ev.ModelStreamFailed,  P.STREAMING,            T.IMAGE_ERROR,            "image_invalid"),
    _row("max_tokens_reduced",     ev.ModelStreamFailed,  P.STREAMING,            P.STREAMING,              "output_reducible"),
    _row("model_fallback",         ev.ModelStreamFailed,  P.STREAMING,            P.STREAMING,              "fallback_due"),
    _row("request_retried",        ev.ModelStreamFailed,  P.STREAMING,            P.STREAMING,              "retry_allowed"),
    _row("model_error",            ev.ModelStreamFailed,  P.STREAMING,            T.MODEL_ERROR),
    # S4
    _row("tools_requested",        None,                  P.POST_STREAM,          P.TOOL_EXEC,              "tool_use_seen"),
    _row("no_tools",               None,                  P.POST_STREAM,          P.FINALIZING),
    # S5: the no-tools decision order (SPEC §2.3)
    _row("collapse_drain_started", None,                  P.FINALIZING,           P.COLLAPSE_DRAINING,      "collapse_drain_applicable"),
    _row("reactive_compact_started", None,                P.FINALIZING,           P.REACTIVE_COMPACTING,    "reactive_compact_applicable"),
    _row("prompt_too_long",        None,                  P.FINALIZING,           T.PROMPT_TOO_LONG,        "withheld_prompt_too_long"),
    _row("image_error",            None,                  P.FINALIZING,           T.IMAGE_ERROR,            "withheld_media_error"),
    _row("max_output_tokens_escalate", None,              P.FINALIZING,           P.ITER_INIT,              "escalation_applicable"),
    _row("max_output_tokens_recovery", None,              P.FINALIZING,           P.ITER_INIT,              "recovery_applicable"),
    _row("refusal",                None,                  P.FINALIZING,           T.REFUSAL,                "response_refused"),
    _row("pause_turn",             None,                  P.FINALIZING,           P.ITER_INIT,              "pause_turn_applicable"),
    _row("completed",              None,                  P.FINALIZING,           T.COMPLETED,              "last_is_api_error"),
    _row("stop_hooks_started",     None,                  P.FINALIZING,           P.STOP_HOOKS),
    _row("collapse_drain_retry",   ev.CollapseDrained,    P.COLLAPSE_DRAINING,    P.ITER_INIT,              "collapse_committed"),
    _row("collapse_drain_empty",   ev.CollapseDrained,    P.COLLAPSE_DRAINING,    P.FINALIZING),
    _row("pre_compact_done",       ev.HooksFinished,      P.REACTIVE_COMPACTING,  P.REACTIVE_COMPACTING),
    _row("reactive_compact_retry", ev.CompactionFinished, P.REACTIVE_COMPACTING,  P.ITER_INIT,              "compaction_succeeded"),
    _row("prompt_too_long",        ev.CompactionFinished, P.REACTIVE_COMPACTING,  T.PROMPT_TOO_LONG,        "withheld_prompt_too_long"),
    _row("image_error",            ev.CompactionFinished, P.REACTIVE_COMPACTING,  T.IMAGE_ERROR),
    _row("stop_hook_prevented",    ev.HooksFinished,      P.STOP_HOOKS,           T.STOP_HOOK_PREVENTED,    "hook_prevented_continuation"),
    _row("stop_hook_prevented",    ev.HooksFinished,      P.STOP_HOOKS,           T.STOP_HOOK_PREVENTED,    "stop_hook_block_cap_reached"),
    _row("stop_hook_blocking",     ev.HooksFinished,      P.STOP_HOOKS,           P.ITER_INIT,              "stop_hook_blocked"),
    _row("token_budget_continuation", ev.HooksFinished,   P.STOP_HOOKS,           P.ITER_INIT,              "token_budget_continues"),
    _row("completed",              ev.HooksFinished,      P.STOP_HOOKS,           T.COMPLETED),
    # S6, S7
    _row("aborted_tools",          None,                  P.TOOL_EXEC,            T.ABORTED_TOOLS,          "tools_done_after_abort"),
    _row("hook_stopped",           None,                  P.TOOL_EXEC,            T.HOOK_STOPPED,           "tools_done_hook_stopped"),
    _row("tools_finished",         None,                  P.TOOL_EXEC,            P.ATTACHMENTS,            "tools_done"),
    _row("attachments_ready",      ev.AttachmentsReady,   P.ATTACHMENTS,          P.POST_TOOLS),
    _row("max_turns",              None,                  P.POST_TOOLS,           T.MAX_TURNS,              "turn_limit_reached"),
    _row("next_turn",              None,                  P.POST_TOOLS,           P.ITER_INIT),
    # Abort is legal in every non-final phase (SPEC §2.2).
    _row("stop_hook_prevented",    ev.AbortRequested,     P.STOP_HOOKS,           T.STOP_HOOK_PREVENTED),
    _row("aborted_streaming",      ev.AbortRequested,     _NOT_WAITING_ON_TOOLS,  T.ABORTED_STREAMING),
    _row("aborted_tools",          ev.AbortRequested,     (P.ATTACHMENTS, P.POST_TOOLS), T.ABORTED_TOOLS),
)
# fmt: on

_TOOL_ACTIVE = (C.QUEUED, C.VALIDATING, C.PRE_HOOKS, C.PERMISSION, C.RUNNING, C.POST_HOOKS)

# fmt: off
TOOL_ROWS: tuple[Row, ...] = (
    # name                     on                         source          dest           guard
    _row("validation_requested", None,                    C.QUEUED,       C.VALIDATING),
    _row("input_rejected",     ev.ToolInputValidated,     C.VALIDATING,   C.REJECTED,    "input_invalid"),
    _row("input_accepted",     ev.ToolInputValidated,     C.VALIDATING,   C.VALIDATING),
    _row("started",            None,                      C.VALIDATING,   C.PRE_HOOKS,   "slot_free"),
    _row("hook_denied",        ev.HooksFinished,          C.PRE_HOOKS,    C.DENIED,      "pre_hook_denied"),
    _row("permission_requested", ev.HooksFinished,        C.PRE_HOOKS,    C.PERMISSION),
    _row("permission_granted", ev.PermissionDecided,      C.PERMISSION,   C.RUNNING,     "permission_allowed"),
    _row("permission_denied",  ev.PermissionDecided,      C.PERMISSION,   C.DENIED),
    _row("call_failed",        ev.ToolCallFinished,       C.RUNNING,      C.POST_HOOKS,  "call_errored"),
    _row("call_returned",      ev.ToolCallFinished,       C.RUNNING,      C.POST_HOOKS),
    _row("failure_hooks_done", ev.HooksFinished,          C.POST_HOOKS,   C.ERRORED,     "call_failed_before"),
    _row("post_hooks_done",    ev.HooksFinished,          C.POST_HOOKS,   C.COMPLETED),
    _row("cancelled",          None,                      _TOOL_ACTIVE,   C.CANCELLED),
    _row("result_yielded",     None,                      (C.COMPLETED, C.REJECTED, C.DENIED, C.CANCELLED, C.ERRORED), C.YIELDED),
)
# fmt: on

EXECUTING_STATES = frozenset(
    s.value
    for s in (CallState.PRE_HOOKS, CallState.PERMISSION, CallState.RUNNING, CallState.POST_HOOKS)
)
"""A call in one of these holds a slot (it has started and not finished)."""
RESULT_STATES = frozenset(
    s.value for s in (C.COMPLETED, C.REJECTED, C.DENIED, C.CANCELLED, C.ERRORED)
)
"""A call in one of these has its tool_result decided, not yet handed back."""

LOOP_INITIAL = Phase.IDLE.value
TOOL_INITIAL = CallState.QUEUED.value
FINAL_STATES = frozenset(t.value for t in Terminal)
CONTINUE_NAMES = frozenset(c.value for c in ContinueReason)


class RowEvent(Event):
    """A ``transitions`` event whose rows are plain moves: no conditions, no callbacks.

    ``trigger`` sets the model's state to the destination of the row leaving its current
    state, as ``Transition.execute`` would when there is nothing to call (DESIGN §7: the
    general path costs a bare trigger each time, and most of a transition's price). The moves
    are fixed by :meth:`seal` once the machine is built; a machine that gained conditions,
    callbacks or a queue by then keeps the general path, and so does any state without a row
    (which raises ``MachineError`` there).
    """

    def __init__(self, name: str, machine: Machine) -> None:
        super().__init__(name, machine)
        self._moves: dict[str, str] = {}

    def seal(self) -> None:
        """Fix the plain moves of this event (call when its machine is complete)."""
        machine = self.machine
        hooks = (
            machine.prepare_event,
            machine.finalize_event,
            machine.before_state_change,
            machine.after_state_change,
            machine.on_exception,
            machine.on_final,
        )
        if machine.has_queue or any(hooks):
            self._moves = {}
            return
        moves: dict[str, str] = {}
        for source, transitions in self.transitions.items():
            if len(transitions) != 1:
                continue
            (transition,) = transitions
            dest = transition.dest
            plain = dest is not None and not (
                transition.conditions or transition.prepare or transition.before or transition.after
            )
            if not plain or dest is None:
                continue
            states = (machine.get_state(source), machine.get_state(dest))
            if not any(s.on_enter or s.on_exit or s.final for s in states):
                moves[source] = dest
        self._moves = moves

    def add_transition(self, transition: Any) -> None:
        """Add a row; the event takes the general path until :meth:`seal` runs again."""
        super().add_transition(transition)
        self._moves = {}

    def trigger(self, model: Any, *args: Any, **kwargs: Any) -> bool:
        """Move ``model`` along this event's row from its current state."""
        dest = self._moves.get(model.state)
        if dest is None or args or kwargs:
            result: bool = super().trigger(model, *args, **kwargs)
            return result
        model.state = dest
        return True

    def move(self, model: Any) -> bool:
        """``trigger(model)``, for the cores, which pass no arguments: a call taking none
        is cheaper (``trigger`` makes a keyword dict on every call, DESIGN §7)."""
        dest = self._moves.get(model.state)
        if dest is None:
            result: bool = super().trigger(model)
            return result
        model.state = dest
        return True


class _TableMachine(Machine):
    """A flat machine whose events are :class:`RowEvent` (its documented ``event_cls`` hook)."""

    event_cls = RowEvent


def _build_machine(rows: tuple[Row, ...], states: list[str], initial: str) -> Machine:
    seen: dict[tuple[str, str], str] = {}
    unique: list[dict[str, object]] = []
    for row in rows:
        for source in row.source:
            if source not in states or row.dest not in states:
                raise DefinitionError(f"row {row.name}: unknown state {source} or {row.dest}")
            key = (row.name, source)
            if key in seen:
                if seen[key] != row.dest:
                    raise DefinitionError(
                        f"row {row.name} from {source} leads to both {seen[key]} and {row.dest}"
                    )
                continue
            seen[key] = row.dest
            unique.append({"trigger": row.name, "source": source, "dest": row.dest})
    machine = _TableMachine(
        model=None,
        states=states,
        transitions=unique,
        initial=initial,
        auto_transitions=False,
        send_event=False,
    )
    for event in machine.events.values():
        assert isinstance(event, RowEvent)  # event_cls above
        event.seal()
    return machine


def check_table(
    rows: tuple[Row, ...], owner: type, *, internal: frozenset[tuple[str, type]]
) -> None:
    """Fail at build time when a guard or an ``_on_`` method is missing, or a group is open.

    A group of rows sharing (source, on) must end with an unguarded row, unless the event is
    consumed inside the phase (``internal``) or the rows are automatic (settling may rest).
    """
    groups: dict[tuple[str, type | None], list[Row]] = {}
    for row in rows:
        if row.guard is not None and not callable(getattr(owner, f"_guard_{row.guard}", None)):
            raise DefinitionError(f"row {row.name}: {owner.__name__} has no _guard_{row.guard}")
        for source in row.source:
            groups.setdefault((source, row.on), []).append(row)
    for (source, on), group in groups.items():
        if on is None or (source, on) in internal:
            continue
        if group[-1].guard is not None:
            raise DefinitionError(
                f"rows from {source} on {on.__name__} end with a guarded row ({group[-1].name})"
            )


LOOP_MACHINE = _build_machine(
    LOOP_ROWS, [p.value for p in Phase] + [t.value for t in Terminal], LOOP_INITIAL
)
TOOL_MACHINE = _build_machine(TOOL_ROWS, [c.value for c in CallState], TOOL_INITIAL)


def rows_digest_text(rows: tuple[Row, ...]) -> str:
    """A stable text form of a table (what the digest covers)."""
    lines = []
    for row in rows:
        on = row.on.__name__ if row.on is not None else "-"
        lines.append(f"{row.name}|{on}|{','.join(row.source)}|{row.dest}|{row.guard or ''}")
    return "\n".join(lines)


@functools.cache
def table_digest() -> str:
    """A short digest of both tables; a trace recorded against other tables is refused."""
    text = rows_digest_text(LOOP_ROWS) + "\n--\n" + rows_digest_text(TOOL_ROWS)
    return hashlib.sha256(text.encode()).hexdigest()[:16]
