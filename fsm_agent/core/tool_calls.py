"""Tool calls: one small machine per call, and the scheduler that decides which may start.

Each call walks the tool table (``tables.TOOL_ROWS``): queued → validating → pre_hooks →
permission → running → post_hooks → completed → yielded, or leaves early through rejected,
denied, cancelled or errored — and every exit is followed by ``result_yielded`` too, so each
call hands exactly one tool_result back to the loop, whatever happens.

``validating`` covers both the validation effect and the wait for a slot: a call can only be
scheduled once its concurrency safety is known, and safety is a function of the parsed input
(SPEC §5.1: "schema-parse input; if parse fails → unsafe"), which validation reports.

Scheduling has two modes:

* streaming (SPEC §5.2): calls are added as their tool_use blocks complete; a safe call starts
  when nothing unsafe runs, an unsafe one only when nothing runs; the queue scan stops at the
  first unsafe call that cannot start. Results are handed back in model order except that a
  running *safe* call does not hold back later finished ones. Only unsafe calls' context
  updates apply. A failing shell call cancels its running siblings. Ours (SPEC §5.2 "side
  effects wait"): a call that is not read-only starts only once the response that asked for
  it has ended (``end_response``), so a retried or fallen-back attempt has run nothing but
  reads. ``discard`` answers every call of a withdrawn attempt and reports which ones ran.
* batch (SPEC §5.1): all calls are known at once and partitioned into batches; a safe batch
  runs up to ``max_tool_concurrency`` at once and its context updates apply after the batch in
  model order; batches run strictly one after another.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterator
from typing import Any, Protocol, cast

import attrs

from fsm_agent.core import effects as fx
from fsm_agent.core import events as ev
from fsm_agent.core import texts
from fsm_agent.core.hook_results import context_and_notices
from fsm_agent.core.messages import (
    AttachmentKind,
    AttachmentMessage,
    Message,
    ToolResultBlock,
    ToolResultContent,
    ToolUseBlock,
    UserMessage,
)
from fsm_agent.core.record_builder import record_builder
from fsm_agent.core.step import TransitionTaken
from fsm_agent.core.tables import (
    EXECUTING_STATES,
    RESULT_STATES,
    TOOL_MACHINE,
    TOOL_ROWS,
    CallState,
    Row,
    RowEvent,
)
from fsm_agent.core.tool_spec import ToolSpec
from fsm_agent.errors import DefinitionError, IllegalTransition

_EXECUTING = EXECUTING_STATES
_RESULT_READY = RESULT_STATES
_YIELDED = CallState.YIELDED.value
_VALIDATING = CallState.VALIDATING.value
_PERMISSION = CallState.PERMISSION.value
_NOT_STARTED = frozenset({CallState.QUEUED.value, _VALIDATING})
_ENDED = _RESULT_READY | {_YIELDED}
# Tool events that name the effect they answer, not the call; and those that only report.
# (Tuples, not ``A | B``: a union written in the check would be built on every event.)
_ANSWERS_EFFECT = (ev.HooksFinished, ev.PermissionDecided, ev.PermissionPromptShown)
_FACTS_ONLY = (ev.ToolProgressReported, ev.SubagentStarted)
# Built on every tool-machine move and call, without attrs' __init__ (record_builder says why).
_new_transition = record_builder(TransitionTaken)
_new_run_hooks = record_builder(fx.RunHooks)
_new_run_tool_step = record_builder(fx.RunToolStep)
_new_ask_permission = record_builder(fx.AskPermission)
_new_tool_result = record_builder(ToolResultBlock)
_new_user_message = record_builder(UserMessage)


class ToolSink(Protocol):
    """What the scheduler needs from the loop core."""

    def new_effect_id(self) -> str: ...
    def new_uuid(self) -> str: ...
    def add_effect(self, effect: fx.Effect) -> None: ...
    def add_transition(self, transition: TransitionTaken) -> None: ...
    def hand_back(self, call: ToolCall, messages: list[Message]) -> None: ...
    def request_abort(self, reason: str) -> None: ...
    @property
    def tool_context(self) -> dict[str, Any]: ...
    def apply_context_update(self, update: dict[str, Any]) -> None: ...
    def remember_permission_rules(self, rules: tuple[str, ...]) -> None: ...


@attrs.define(slots=True, kw_only=True, eq=False)
class ToolCall:
    """One tool call; ``state`` is driven by the shared ``transitions`` tool machine."""

    call_id: str
    tool_name: str
    input: dict[str, Any]
    index: int
    spec: ToolSpec | None
    state: str = CallState.QUEUED.value
    validated: bool = False
    safe: bool = False
    read_only: bool = False
    awaiting: str | None = None
    content: ToolResultContent = ""
    is_error: bool = False
    context_update: dict[str, Any] | None = None
    cancel_reason: fx.CancelReason | None = None
    hook_stopped: bool = False
    hook_stop_reason: str = ""
    extra: list[Message] = attrs.field(factory=list)
    handed_back: bool = False
    called: bool = False
    messages: tuple[Message, ...] = ()

    @property
    def executing(self) -> bool:
        """Started and not yet finished (holds a slot)."""
        return self.state in _EXECUTING

    @property
    def result_ready(self) -> bool:
        """Its tool_result is decided but not yet handed back."""
        return self.state in _RESULT_READY

    @property
    def main_argument(self) -> str:
        """The first string argument (shown in sibling-cancel texts, SPEC §5.2)."""
        for value in self.input.values():
            if isinstance(value, str):
                return value
        return ""


def _index_rows(rows: tuple[Row, ...]) -> dict[tuple[str, type | None], tuple[Row, ...]]:
    index: dict[tuple[str, type | None], list[Row]] = {}
    for row in rows:
        for source in row.source:
            index.setdefault((source, row.on), []).append(row)
    return {key: tuple(value) for key, value in index.items()}


_TOOL_INDEX = _index_rows(TOOL_ROWS)
_TOOL_EVENTS = {
    name: cast(RowEvent, TOOL_MACHINE.events[name]) for name in {row.name for row in TOOL_ROWS}
}


class ToolExecutor:
    """Schedules the tool calls of one model response and hands their results back."""

    __slots__ = (
        "_batch_done",
        "_batch_index",
        "_batch_mode",
        "_batch_number",
        "_batch_started",
        "_batches",
        "_by_effect",
        "_deferred_updates",
        "_discarded",
        "_event",
        "_executing",
        "_executing_unsafe",
        "_first_open",
        "_first_waiting",
        "_holding",
        "_hook_stopped",
        "_max_concurrency",
        "_ready",
        "_response_ended",
        "_sibling_error",
        "_sink",
        "_specs",
        "calls",
        "order",
    )

    def __init__(
        self,
        sink: ToolSink,
        specs: dict[str, ToolSpec],
        *,
        batch_mode: bool,
        max_concurrency: int,
    ) -> None:
        self._sink = sink
        self._specs = specs
        self._batch_mode = batch_mode
        self._max_concurrency = max_concurrency
        self.calls: dict[str, ToolCall] = {}
        self.order: list[ToolCall] = []
        self._by_effect: dict[str, ToolCall] = {}
        self._event: Any = None
        self._sibling_error: ToolCall | None = None
        self._discarded = False
        self._response_ended = batch_mode
        self._batches: list[list[ToolCall]] | None = None
        self._batch_index = 0
        self._deferred_updates: list[tuple[int, dict[str, Any]]] = []
        # Scheduling without rescanning every call on every event (issue 10, DESIGN §7): call
        # states only move forward, so the calls before ``_first_open`` stay handed back and
        # those before ``_first_waiting`` stay past validation; the calls holding a slot are
        # counted as they start and finish.
        self._first_open = 0
        self._first_waiting = 0
        self._executing = 0
        self._executing_unsafe = 0
        # Hand-back without a scan: the indexes of calls whose result is decided and not yet
        # handed back, and of calls that may hold back the ones after them (each re-checked
        # when it comes to the top: a call stops holding back as its state moves on).
        self._ready: list[int] = []
        self._holding: list[int] = []
        # Batch mode (SPEC §5.1): each call's batch number (by index) once the batches are
        # formed; in the current batch, the calls before ``_batch_started`` have started and
        # those before ``_batch_done`` have their result (both only move forward).
        self._batch_number: list[int] = []
        self._batch_started = 0
        self._batch_done = 0
        self._hook_stopped = False

    # --- queries -----------------------------------------------------------------------------

    @property
    def all_yielded(self) -> bool:
        """Every call has handed back its result."""
        return self._open_calls() == len(self.order)

    @property
    def hook_stopped(self) -> bool:
        """A hook asked the loop not to continue after these tools (SPEC §4 step 10)."""
        return self._hook_stopped

    def _open_calls(self) -> int:
        """The index of the first call not yet handed back (``len(order)`` when none)."""
        order, first = self.order, self._first_open
        while first < len(order) and order[first].state == _YIELDED:
            first += 1
        self._first_open = first
        return first

    def _waiting_calls(self) -> int:
        """The index of the first call still queued or validating (``len(order)`` when none)."""
        order, first = self.order, self._first_waiting
        while first < len(order) and order[first].state not in _NOT_STARTED:
            first += 1
        self._first_waiting = first
        return first

    def owns(self, event: ev.Event) -> ToolCall | None:
        """The call an event is about, or None when it is not one of this executor's."""
        if isinstance(event, _ANSWERS_EFFECT):
            return self._by_effect.get(event.effect_id)
        call_id = getattr(event, "call_id", None)
        return self.calls.get(call_id) if isinstance(call_id, str) else None

    # --- adding calls ------------------------------------------------------------------------

    def add(self, block: ToolUseBlock, input_error: str | None) -> None:
        """Register a tool_use block and ask for its validation (or reject it at once)."""
        spec = self._specs.get(block.name)
        call = ToolCall(
            call_id=block.id,
            tool_name=spec.name if spec is not None else block.name,
            input=dict(block.input),
            index=len(self.order),
            spec=spec,
        )
        self.calls[call.call_id] = call
        self.order.append(call)
        self._fire(call, "validation_requested")
        if self._discarded or self._sibling_error is not None:
            reason = (
                fx.CancelReason.STREAMING_FALLBACK
                if self._discarded
                else fx.CancelReason.SIBLING_ERROR
            )
            self._cancel(call, reason, message="")
            return
        if spec is None:
            # SPEC §5.2 addTool: an unknown tool completes at once with an error (treated safe).
            error = f"<tool_use_error>Error: No such tool available: {block.name}</tool_use_error>"
            self._deliver(call, ev.ToolInputValidated(call_id=call.call_id, ok=False, error=error))
            return
        if input_error is not None:
            self._deliver(
                call, ev.ToolInputValidated(call_id=call.call_id, ok=False, error=input_error)
            )
            return
        self._request_step(call, fx.ToolStep.VALIDATE)

    def _request_step(self, call: ToolCall, step: fx.ToolStep) -> None:
        """Ask the driver to validate or call; the call awaits that effect."""
        effect_id = self._sink.new_effect_id()
        call.awaiting = effect_id
        context = dict(self._sink.tool_context) if step is fx.ToolStep.CALL else {}
        self._sink.add_effect(
            _new_run_tool_step(
                effect_id=effect_id,
                call_id=call.call_id,
                step=step,
                tool_name=call.tool_name,
                input=call.input,
                context=context,
            )
        )

    # --- events ------------------------------------------------------------------------------

    def handle(self, event: ev.Event) -> None:
        """Feed a tool event (validation, hooks, permission, call result, progress)."""
        call = self.owns(event)
        if call is None:
            raise IllegalTransition(
                phase="tool calls",
                event=f"{type(event).__name__} for an unknown call or effect",
                legal=[f"events for {', '.join(self.calls) or 'no calls'}"],
            )
        self.handle_owned(call, event)

    def handle_owned(self, call: ToolCall, event: ev.Event) -> None:
        """:meth:`handle` for an event already known to be about ``call`` (``owns``)."""
        if isinstance(event, _FACTS_ONLY):
            return  # facts for the user and the trace; no transition (DESIGN §2)
        if isinstance(event, ev.PermissionPromptShown):
            if call.state == _PERMISSION:
                # Notification hooks run beside the question; nothing waits for them.
                self._sink.add_effect(
                    fx.RunHooks(
                        effect_id=self._sink.new_effect_id(),
                        hook_event=fx.HookEvent.NOTIFICATION,
                        call_id=call.call_id,
                        tool_name=call.tool_name,
                        payload={
                            "message": texts.permission_notification(call.tool_name),
                            "notification_type": "permission_prompt",
                        },
                    )
                )
            return
        if call.state in _RESULT_READY or call.state == _YIELDED:
            return  # a late answer for a call that was cancelled: already decided
        self._deliver(call, event)
        self.pump()

    def _deliver(self, call: ToolCall, event: ev.Event) -> None:
        rows = _TOOL_INDEX.get((call.state, type(event)))
        if rows is None:
            raise IllegalTransition(
                phase=f"tool call {call.call_id} in {call.state}",
                event=type(event).__name__,
                legal=sorted(
                    on.__name__ for (source, on) in _TOOL_INDEX if source == call.state and on
                ),
            )
        self._event = event
        try:
            for row in rows:
                if row.guard is None or _TOOL_GUARDS[row.guard](self, call):
                    self._fire(call, row.name)
                    return
        finally:
            self._event = None
        raise DefinitionError(f"no tool row fired for {type(event).__name__} in {call.state}")

    def _fire(self, call: ToolCall, name: str) -> None:
        source = call.state
        firing = _TOOL_FIRINGS.get((name, source))
        if firing is None:  # no such row: the machine raises, as for any illegal trigger
            _TOOL_EVENTS[name].trigger(call)
            raise DefinitionError(f"tool row {name} moved a call out of {source}")
        trigger, slots, action = firing
        trigger(call)
        if slots:  # it took a slot or gave one back (``safe`` is fixed by then)
            self._executing += slots
            if not call.safe:
                self._executing_unsafe += slots
        state = call.state
        if state in _RESULT_READY:
            heapq.heappush(self._ready, call.index)
        elif _holds_back(call):
            heapq.heappush(self._holding, call.index)
        self._sink.add_transition(
            _new_transition(
                machine="tool", name=name, source=source, dest=state, call_id=call.call_id
            )
        )
        if action is not None:
            action(self, call)

    # --- guards (read, never write) ----------------------------------------------------------

    def _guard_input_invalid(self, call: ToolCall) -> bool:
        return not self._event.ok

    def _guard_slot_free(self, call: ToolCall) -> bool:
        return self._can_start(call)

    def _guard_pre_hook_denied(self, call: ToolCall) -> bool:
        outcome: ev.HookOutcome = self._event.outcome
        return outcome.decision is ev.HookDecision.DENY or bool(outcome.blocking_errors)

    def _guard_permission_allowed(self, call: ToolCall) -> bool:
        return bool(self._event.behavior is ev.PermissionBehavior.ALLOW)

    def _guard_call_errored(self, call: ToolCall) -> bool:
        return bool(self._event.is_error)

    def _guard_call_failed_before(self, call: ToolCall) -> bool:
        return call.is_error

    # --- row actions -------------------------------------------------------------------------

    def _on_input_rejected(self, call: ToolCall) -> None:
        call.content = self._event.error
        call.is_error = True
        call.safe = True

    def _on_input_accepted(self, call: ToolCall) -> None:
        event: ev.ToolInputValidated = self._event
        call.validated = True
        call.safe = event.concurrency_safe
        call.read_only = event.read_only
        call.awaiting = None

    def _on_started(self, call: ToolCall) -> None:
        self._request_hooks(call, fx.HookEvent.PRE_TOOL_USE, {"tool_input": call.input})

    def _request_hooks(
        self, call: ToolCall, hook_event: fx.HookEvent, payload: dict[str, Any]
    ) -> None:
        """Ask the driver to run a tool hook point; the call awaits its outcome."""
        effect_id = self._sink.new_effect_id()
        call.awaiting = effect_id
        self._by_effect[effect_id] = call
        self._sink.add_effect(
            _new_run_hooks(
                effect_id=effect_id,
                hook_event=hook_event,
                call_id=call.call_id,
                tool_name=call.tool_name,
                payload=payload,
            )
        )

    def _on_hook_denied(self, call: ToolCall) -> None:
        outcome: ev.HookOutcome = self._event.outcome
        if outcome.blocking_errors:
            text = texts.pre_tool_hook_error(call.tool_name, "\n".join(outcome.blocking_errors))
        else:
            text = texts.hook_denied(outcome.decision_reason)
        call.content = text
        call.is_error = True
        self._note_hook_outcome(call, outcome)

    def _on_permission_requested(self, call: ToolCall) -> None:
        outcome: ev.HookOutcome = self._event.outcome
        if outcome.updated_input is not None:
            call.input = dict(outcome.updated_input)
        self._note_hook_outcome(call, outcome)
        effect_id = self._sink.new_effect_id()
        call.awaiting = effect_id
        self._by_effect[effect_id] = call
        self._sink.add_effect(
            _new_ask_permission(
                effect_id=effect_id,
                call_id=call.call_id,
                tool_name=call.tool_name,
                input=call.input,
                read_only=call.read_only,
                hook_decision=outcome.decision.value if outcome.decision is not None else None,
                hook_reason=outcome.decision_reason,
            )
        )

    def _on_permission_granted(self, call: ToolCall) -> None:
        event: ev.PermissionDecided = self._event
        if event.updated_input is not None:
            call.input = dict(event.updated_input)
        if event.added_rules:
            self._sink.remember_permission_rules(event.added_rules)
        call.called = True  # from here on the call may have had its effect
        self._request_step(call, fx.ToolStep.CALL)

    def _on_permission_denied(self, call: ToolCall) -> None:
        event: ev.PermissionDecided = self._event
        call.content = texts.permission_denied(call.tool_name, event.message)
        call.is_error = True
        if event.abort_turn:
            # SPEC §9.6: a main-thread rejection without feedback ends the turn.
            self._sink.request_abort("user")

    def _on_call_failed(self, call: ToolCall) -> None:
        event: ev.ToolCallFinished = self._event
        call.content = event.content
        call.is_error = True
        if call.spec is not None and call.spec.is_shell and self._sibling_error is None:
            # SPEC §5.2: only a shell tool's error cancels its running siblings.
            self._sibling_error = call
            for other in self.order:
                if other is not call and (other.executing or other.state == _VALIDATING):
                    self._cancel(other, fx.CancelReason.SIBLING_ERROR, message="")
        # SPEC §4 "exception" row: PostToolUseFailure hooks run for a call that failed.
        payload = {"tool_input": call.input, "error": _as_text(call.content)}
        self._request_hooks(call, fx.HookEvent.POST_TOOL_USE_FAILURE, payload)

    def _on_call_returned(self, call: ToolCall) -> None:
        event: ev.ToolCallFinished = self._event
        call.content = event.content
        call.context_update = event.context_update
        payload = {"tool_input": call.input, "tool_response": _as_text(call.content)}
        self._request_hooks(call, fx.HookEvent.POST_TOOL_USE, payload)

    def _on_failure_hooks_done(self, call: ToolCall) -> None:
        self._note_after_call_hooks(call)

    def _on_post_hooks_done(self, call: ToolCall) -> None:
        self._note_after_call_hooks(call)
        if call.context_update is not None:
            if self._batch_mode and call.safe:
                self._deferred_updates.append((call.index, call.context_update))
            elif not call.safe:
                self._sink.apply_context_update(call.context_update)
            # SPEC §5.2: in the streaming executor, safe calls' updates are dropped.

    def _note_after_call_hooks(self, call: ToolCall) -> None:
        outcome: ev.HookOutcome = self._event.outcome
        for text in outcome.blocking_errors:
            # SPEC §6.1: a PostToolUse blocking error is fed to the model, not a denial.
            call.extra.append(self._attachment(AttachmentKind.HOOK_BLOCKING_ERROR, text))
        self._note_hook_outcome(call, outcome)

    def _note_hook_outcome(self, call: ToolCall, outcome: ev.HookOutcome) -> None:
        call.extra.extend(context_and_notices(outcome, self._sink.new_uuid))
        if outcome.prevent_continuation and not call.hook_stopped:
            call.hook_stopped = True
            self._hook_stopped = True
            call.hook_stop_reason = outcome.stop_reason
            call.extra.append(
                self._attachment(
                    AttachmentKind.HOOK_STOPPED_CONTINUATION,
                    texts.hook_stopped(outcome.stop_reason),
                )
            )

    def _attachment(self, kind: AttachmentKind, text: str) -> AttachmentMessage:
        return AttachmentMessage(uuid=self._sink.new_uuid(), kind=kind, text=text)

    def _on_result_yielded(self, call: ToolCall) -> None:
        # Also for a discarded attempt: every tool_use handed to the caller gets its one
        # tool_result (SPEC §5.2 synthetic texts); the core decides which ones stay visible.
        call.handed_back = True
        result = _new_tool_result(
            tool_use_id=call.call_id, content=call.content, is_error=call.is_error
        )
        call.messages = (
            _new_user_message(uuid=self._sink.new_uuid(), content=(result,)),
            *call.extra,
        )
        self._sink.hand_back(call, list(call.messages))

    # --- cancellation ------------------------------------------------------------------------

    def cancel_all(
        self, reason: fx.CancelReason, *, message: str = "", only_interruptible: bool = False
    ) -> None:
        """Cancel every call that has not finished (abort, model error)."""
        for call in self.order:
            if call.result_ready or call.state == _YIELDED:
                continue
            if only_interruptible and not (call.spec is not None and call.spec.interrupt_cancels):
                continue
            self._cancel(call, reason, message=message)

    def end_response(self) -> None:
        """The response that asked for these calls has ended: side effects may start now."""
        self._response_ended = True

    def discard(self) -> list[ToolCall]:
        """Withdraw this attempt: a fallback or retry re-requests the response (SPEC §5.2).

        Calls that have not finished are cancelled; every call hands back its one result
        at once, and queued calls never start.

        Returns:
            The calls that were called (their effect may have happened), in model order: the
            core keeps them visible to the model.
        """
        self._discarded = True
        self.cancel_all(fx.CancelReason.STREAMING_FALLBACK)
        self.flush()
        return [call for call in self.order if call.called]

    def _cancel(self, call: ToolCall, reason: fx.CancelReason, *, message: str) -> None:
        was_waiting = call.awaiting is not None or call.executing
        self._fire(call, "cancelled")
        call.cancel_reason = reason
        call.is_error = True
        call.content = self._cancel_text(call, reason, message)
        if was_waiting:
            self._sink.add_effect(
                fx.CancelTool(
                    effect_id=self._sink.new_effect_id(), call_id=call.call_id, reason=reason
                )
            )
        call.awaiting = None

    def _cancel_text(self, call: ToolCall, reason: fx.CancelReason, message: str) -> str:
        if reason is fx.CancelReason.SIBLING_ERROR and self._sibling_error is not None:
            return texts.sibling_error(
                self._sibling_error.tool_name, self._sibling_error.main_argument
            )
        if reason is fx.CancelReason.STREAMING_FALLBACK:
            return texts.STOPPED_BY_FALLBACK if call.called else texts.DISCARDED_BY_FALLBACK
        if reason is fx.CancelReason.MODEL_ERROR:
            return texts.model_error_result(message)
        # SPEC §5.2 synthetic texts: an interruption, never worded as the user's refusal.
        return texts.INTERRUPTED_WHILE_RUNNING if call.called else texts.INTERRUPTED_BEFORE_START

    # --- scheduling --------------------------------------------------------------------------

    def pump(self) -> None:
        """Start what may start, then hand back what may be handed back (SPEC §5.2:
        processQueue runs before the completed results are collected).

        One round is the fixed point. Each pass does all it can: a start only takes a slot,
        which lets no later call start, and handing back stops only at a call that holds
        the rest back. Handing a result back moves a call from its result state to
        ``yielded``, and nothing that decides a start or a hold (slots, safety, validation,
        the response's end, a batch's ended calls) tells those states apart.
        """
        self._start_ready()
        self._hand_back_ready()

    def flush(self) -> None:
        """Hand back every decided result in model order (used when the loop ends)."""
        for call in self.order:
            if call.result_ready:
                self._fire(call, "result_yielded")

    def _hand_back_ready(self) -> bool:
        """Hand back, in model order, every decided result that no earlier call holds back;
        linear in the calls over a whole response, not a scan of them per event."""
        ready = self._ready
        if not ready:
            return False
        order = self.order
        limit = len(order) if self._batch_mode else self._first_holding()
        changed = False
        while ready and ready[0] < limit:
            call = order[heapq.heappop(ready)]
            if call.result_ready:  # not already handed back (``flush``)
                self._fire(call, "result_yielded")
                changed = True
        return changed

    def _first_holding(self) -> int:
        """The index of the first call that holds back the results after it, or
        ``len(order)``: a running unsafe call (SPEC §5.2), or one whose safety is not known
        yet (in the reference it would already be running: validation is synchronous
        there)."""
        holding, order = self._holding, self.order
        while holding:
            call = order[holding[0]]
            if _holds_back(call):
                return call.index
            heapq.heappop(holding)
        return len(order)

    def _start_ready(self) -> bool:
        if self._discarded:
            return False
        if self._batch_mode:
            return self._start_batch()
        changed = False
        for call in itertools.islice(self.order, self._waiting_calls(), None):
            if call.state != _VALIDATING:
                continue
            if not call.validated:
                break  # safety unknown yet: keep model order
            if self._can_start(call):
                self._fire(call, "started")
                changed = True
            elif not call.safe:
                break  # SPEC §5.2 processQueue: stop at the first unsafe call that must wait
        return changed

    def _can_start(self, call: ToolCall) -> bool:
        if self._batch_mode:
            numbers = self._batch_number
            if call.index >= len(numbers) or numbers[call.index] != self._batch_index:
                return False
            # Only the current batch's calls ever run: the earlier ones all have results.
            return self._executing < (self._max_concurrency if call.safe else 1)
        if not (self._response_ended or call.read_only):
            return False  # SPEC §5.2 "Ours": side effects wait for the whole response
        return self._executing == 0 or (call.safe and self._executing_unsafe == 0)

    def _start_batch(self) -> bool:
        if self._batches is None:
            # Before the batches are formed nothing runs, so a call holding back the others
            # is one whose safety is not known yet.
            if self._first_holding() < len(self.order):
                return False
            self._batches = _partition(self.order)
            self._batch_number = [n for n, batch in enumerate(self._batches) for _ in batch]
        changed = False
        while self._batch_index < len(self._batches):
            batch = self._batches[self._batch_index]
            # The batch's calls start in model order until its slots are taken.
            while self._batch_started < len(batch):
                call = batch[self._batch_started]
                if call.state != _VALIDATING:
                    self._batch_started += 1
                elif self._can_start(call):
                    self._fire(call, "started")
                    changed = True
                else:
                    break
            while self._batch_done < len(batch) and batch[self._batch_done].state in _ENDED:
                self._batch_done += 1
            if self._batch_done < len(batch):
                return changed
            # SPEC §5.1: a safe batch's context updates apply after it, in model order.
            for _, update in sorted(self._deferred_updates, key=lambda item: item[0]):
                self._sink.apply_context_update(update)
            self._deferred_updates.clear()
            self._batch_index += 1
            self._batch_started = self._batch_done = 0
            changed = True
        return changed

    def __iter__(self) -> Iterator[ToolCall]:
        return iter(self.order)


def _holds_back(call: ToolCall) -> bool:
    """Whether ``call`` keeps the results after it from being handed back (see
    :meth:`ToolExecutor._first_holding`)."""
    state = call.state
    if state == _VALIDATING:
        return not call.validated
    return state in _EXECUTING and not call.safe


def _partition(calls: list[ToolCall]) -> list[list[ToolCall]]:
    """SPEC §5.1: a safe call joins the previous batch iff that batch is safe."""
    batches: list[list[ToolCall]] = []
    last_safe = False  # whether every call of the last batch is safe
    for call in calls:
        safe = call.safe and call.validated
        if batches and safe and last_safe:
            batches[-1].append(call)
        else:
            batches.append([call])
            last_safe = safe
    return batches


def _as_text(content: ToolResultContent) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(getattr(part, "text", "") for part in content)


def _resolve(prefix: str, names: set[str]) -> dict[str, Callable[..., Any]]:
    found = {}
    for name in names:
        method = getattr(ToolExecutor, f"{prefix}{name}", None)
        if method is not None:
            found[name] = method
    return found


_TOOL_GUARDS: dict[str, Callable[[ToolExecutor, ToolCall], bool]] = {}
for _row_ in TOOL_ROWS:
    if _row_.guard is not None:
        _guard = getattr(ToolExecutor, f"_guard_{_row_.guard}", None)
        if _guard is None:
            raise DefinitionError(f"tool row {_row_.name}: no ToolExecutor._guard_{_row_.guard}")
        _TOOL_GUARDS[_row_.guard] = _guard
_TOOL_ACTIONS: dict[str, Callable[[ToolExecutor, ToolCall], None]] = _resolve(
    "_on_", {row.name for row in TOOL_ROWS}
)
# A tool row from one source, resolved once: the trigger of its ``transitions`` event, the
# change in slots held (a call holds one while executing) and its action (None: none).
_TOOL_FIRINGS: dict[
    tuple[str, str],
    tuple[Callable[[ToolCall], bool], int, Callable[[ToolExecutor, ToolCall], None] | None],
] = {
    (row.name, source): (
        _TOOL_EVENTS[row.name].move,
        (row.dest in _EXECUTING) - (source in _EXECUTING),
        _TOOL_ACTIONS.get(row.name),
    )
    for row in TOOL_ROWS
    for source in row.source
}
