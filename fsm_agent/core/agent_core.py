"""``AgentCore``: the pure loop. Events in, a ``Step`` (transitions, effects, terminal) out.

Theory of operation. ``feed(event)`` looks up the rows of ``tables.LOOP_ROWS`` for the current
phase and the event's type; events that a phase consumes without changing phase (stream
deltas, tool-call results while tools run) go to a handler first. Then the core *settles*:
it tries the automatic rows of the phase it is in, first guard that holds wins, until it
rests in a phase that waits for an event (or a final state). Guards read, ``_on_<name>``
methods write. Any exception poisons the core: later calls raise ``CorePoisoned`` instead of
working on a half-changed state (h11's rule).

The rows are not looked up row by row at run time: when the module loads, each (phase, event
type) and each phase's automatic rows become a *plan* (``_EVENT_PLANS``, ``_AUTOMATIC_ROWS``)
holding, per row, its guard, its transition record, its ``transitions`` trigger, its action and
the final state it reaches, so firing a row is unpacking a tuple (DESIGN §7). The trigger of the
``transitions`` event still moves the state.

The core reads no clock, draws no random number and does no I/O: ids come from counters, and
everything from the outside world arrives as an event.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar, cast

import attrs

from fsm_agent.core import effects as fx
from fsm_agent.core import events as ev
from fsm_agent.core import texts
from fsm_agent.core.checkpoint import CoreCheckpoint
from fsm_agent.core.config import LoopConfig
from fsm_agent.core.context_collapse import STAGING_SHARE, CollapsedSpan, CollapseView
from fsm_agent.core.hook_results import context_and_notices
from fsm_agent.core.loop_state import AutoCompactTracking, LoopState, evolved, new_state
from fsm_agent.core.messages import (
    COMPACT_BOUNDARY,
    ApiErrorKind,
    ApiErrorMessage,
    AssistantMessage,
    AttachmentKind,
    AttachmentMessage,
    Message,
    SystemMessage,
    TextBlock,
    TombstoneMessage,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
    UserMessage,
    text_of,
)
from fsm_agent.core.microcompact import COMPACTABLE_TOOLS, clear_old_results, gap_elapsed
from fsm_agent.core.record_builder import record_builder
from fsm_agent.core.request_history import RequestHistory
from fsm_agent.core.snip import SNIP_REQUEST, SnipOutcome, plan_snip, snip_ids
from fsm_agent.core.step import Step, TransitionTaken
from fsm_agent.core.stream import StreamAssembler
from fsm_agent.core.tables import (
    FINAL_STATES,
    LOOP_MACHINE,
    LOOP_ROWS,
    Phase,
    Row,
    RowEvent,
    check_table,
)
from fsm_agent.core.token_estimate import TokenEstimate
from fsm_agent.core.tool_calls import ToolCall, ToolExecutor
from fsm_agent.core.tool_result_budget import ToolResultBudget, replace_results
from fsm_agent.core.tool_spec import ToolSpec
from fsm_agent.errors import (
    CorePoisoned,
    DefinitionError,
    FsmAgentError,
    IllegalTransition,
    UsageError,
)

_TOOL_EVENTS = (
    ev.ToolInputValidated,
    ev.ToolCallFinished,
    ev.ToolProgressReported,
    ev.SubagentStarted,
    ev.HooksFinished,
    ev.PermissionPromptShown,
    ev.PermissionDecided,
)
_P = Phase
_M = TypeVar("_M")

# Events a phase consumes without (necessarily) a transition; rows for the same pair run after.
INTERNAL_EVENTS: frozenset[tuple[str, type]] = frozenset(
    {(_P.STREAMING.value, ev.ModelStreamEvent)}
    # SPEC §7.4: a staged collapse is answered while the run goes on, in any phase
    | {(p.value, ev.CollapseStaged) for p in _P if p is not _P.IDLE}
    | {(_P.STREAMING.value, t) for t in _TOOL_EVENTS}
    | {(_P.TOOL_EXEC.value, t) for t in _TOOL_EVENTS}
    | {(_P.TOOL_EXEC.value, ev.AbortRequested)}
)

# Phases that wait for the answer to one effect (the event must carry that effect's id).
_AWAITING_PHASES = frozenset(
    p.value
    for p in (
        _P.SESSION_START_HOOKS,
        _P.PROMPT_HOOKS,
        _P.AUTOCOMPACTING,
        _P.REACTIVE_COMPACTING,
        _P.COLLAPSE_DRAINING,
        _P.PERSISTING_RESULTS,
        _P.COUNTING_TOKENS,
        _P.STOP_HOOKS,
        _P.ATTACHMENTS,
    )
)


def _index(rows: tuple[Row, ...]) -> dict[tuple[str, type | None], tuple[Row, ...]]:
    index: dict[tuple[str, type | None], list[Row]] = {}
    for row in rows:
        for source in row.source:
            index.setdefault((source, row.on), []).append(row)
    return {key: tuple(value) for key, value in index.items()}


_LOOP_INDEX = _index(LOOP_ROWS)
_STREAMING = Phase.STREAMING.value
_OVERFLOW_BUFFER = 1_000  # SPEC §8.3 / §10: output floor on overflow retry, and its buffer
_OUTPUT_FLOOR = 3_000
_QUIET_STEP = Step()
# Frozen values a new core starts from (shared: built once, never changed).
_NO_STATE = LoopState()
_NO_USAGE = Usage()
# The records built on most events, built without attrs' __init__ (record_builder says why).
_new_step = record_builder(Step)
_new_emit = record_builder(fx.Emit)
_new_run_hooks = record_builder(fx.RunHooks)
_new_call_model = record_builder(fx.CallModel)


@attrs.define(slots=True)
class _LoopModel:
    """The object the ``transitions`` loop machine moves (only its ``state``)."""

    state: str = Phase.IDLE.value


class AgentCore:
    """The pure agent loop (DESIGN §1–4).

    Args:
        config: bounds and options of the loop.
        tools: what the core knows of each tool (names, schemas, flags).

    Example:
        >>> core = AgentCore(config=LoopConfig(), tools=())
        >>> core.phase
        'idle'
    """

    # Slots: a core has many fields, read on every event; slots make each read and the
    # construction of a core cheaper than an instance dict would (DESIGN §7).
    __slots__ = (
        "_abort_reason",
        "_answered",
        "_assembler",
        "_assistant",
        "_attempt",
        "_awaiting",
        "_budget",
        "_budget_checked",
        "_budget_continuations",
        "_budget_last_delta",
        "_budget_last_total",
        "_collapse",
        "_collapse_drain_attempted",
        "_compactable_tools",
        "_compacted_this_iteration",
        "_compaction_refilled",
        "_compactions_this_turn",
        "_consecutive_overloaded",
        "_effect_counter",
        "_effects",
        "_event",
        "_executor",
        "_hot_request",
        "_last_response_at",
        "_machine_model",
        "_microcompacted_at",
        "_model_name",
        "_output_cap",
        "_poisoned",
        "_request_counter",
        "_request_history",
        "_request_id",
        "_session_rules",
        "_snip_requests",
        "_snipped",
        "_specs",
        "_state",
        "_stream_error",
        "_terminal",
        "_token_count_asked",
        "_token_estimate",
        "_tool_context",
        "_tool_ids",
        "_tool_results",
        "_transcript",
        "_transitions",
        "_turn_output_tokens",
        "_unbounded_tools",
        "_usage",
        "_uuid_counter",
        "_wall_now",
        "config",
        "tools",
    )

    def __init__(
        self,
        *,
        config: LoopConfig | None = None,
        tools: Sequence[ToolSpec] = (),
        request_history: RequestHistory | None = None,
    ) -> None:
        self.config = config if config is not None else LoopConfig()
        self._set_tools(tools)
        self._machine_model = _LoopModel()
        self._state = _NO_STATE
        self._model_name = self.config.model
        self._poisoned: BaseException | None = None
        self._terminal: str | None = None
        self._event: Any = None
        self._transitions: list[TransitionTaken] = []
        self._effects: list[fx.Effect] = []
        self._transcript: list[Message] = []
        self._usage = _NO_USAGE
        self._effect_counter = 0
        self._uuid_counter = 0
        self._request_counter = 0
        self._tool_context: dict[str, Any] = {}
        self._session_rules: list[str] = []
        # per-iteration containers (SPEC §1.1 "Per iteration")
        self._assistant: list[Message] = []
        self._tool_results: list[Message] = []
        self._executor: ToolExecutor | None = None
        self._assembler: StreamAssembler | None = None
        self._tool_ids: set[str] = set()  # every tool_use id of the run, withdrawn ones too
        self._request_id = ""
        self._hot_request: str | None = None
        self._output_cap: int | None = None  # SPEC §8.3 overflow retry, this iteration only
        self._attempt = 0
        self._consecutive_overloaded = 0
        self._stream_error: str | None = None
        self._abort_reason: str | None = None
        self._awaiting: str | None = None
        self._compacted_this_iteration = False
        self._collapse_drain_attempted = False
        # the refill breaker (issue 10): compactions this user turn, and whether one refilled
        self._compactions_this_turn = 0
        self._compaction_refilled = False
        self._answered: set[str] = set()
        # A session hands each turn its conversation's history (DESIGN §7), if it fits; else
        # one is made when a request is first normalized (a core fed by replay never is).
        if request_history is not None and request_history.tag_ids != self.config.snip:
            request_history = None
        self._request_history = request_history
        # SPEC §7.1 tool-result budget: what the model has seen; checked once per iteration
        self._budget = ToolResultBudget(limit=self.config.tool_result_budget_chars)
        self._budget_checked = False
        self._collapse = CollapseView()  # SPEC §7.4: staged and committed collapses
        self._token_estimate = TokenEstimate()  # SPEC §7.5, over the projected history
        self._token_count_asked = False  # the optional exact count, once per iteration
        # SPEC §7.2 snip: requests not yet applied, and every uuid removed so far
        self._snip_requests: list[object] = []
        self._snipped: set[str] = set()
        # SPEC §7.3 time-based microcompact: wall times from events; once per pause
        self._wall_now: float | None = None
        self._last_response_at: float | None = None
        self._microcompacted_at: float | None = None
        # token budget tracking (SPEC §7.6)
        self._turn_output_tokens = 0
        self._budget_continuations = 0
        self._budget_last_delta = 0
        self._budget_last_total = 0

    # --- public queries ------------------------------------------------------------------------

    @property
    def phase(self) -> str:
        """The current state of the loop machine (a phase or a terminal reason)."""
        return self._machine_model.state

    @property
    def terminal(self) -> str | None:
        """The terminal reason once the run has ended."""
        return self._terminal

    @property
    def poisoned(self) -> bool:
        """True once any call raised; the core then refuses further events."""
        return self._poisoned is not None

    @property
    def state(self) -> LoopState:
        """The carried loop state (SPEC §1.1)."""
        return self._state

    @property
    def transcript(self) -> tuple[Message, ...]:
        """Every message the run has shown, in order (prompt first)."""
        return tuple(self._transcript)

    @property
    def usage(self) -> Usage:
        """Token usage summed over completed model responses."""
        return self._usage

    @property
    def model(self) -> str:
        """The model requests go to (changes after ``model_fallback``)."""
        return self._model_name

    @property
    def tool_context(self) -> dict[str, Any]:
        """Context that tools' updates have changed (SPEC §5 context modifiers)."""
        return self._tool_context

    @property
    def session_permission_rules(self) -> tuple[str, ...]:
        """Allow rules the user added while running ("allow always"), in the order given."""
        return tuple(self._session_rules)

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        """The tool calls of the current iteration."""
        return tuple(self._executor.order) if self._executor is not None else ()

    def stream_started(self, request_id: str) -> bool:
        """Whether any event of this request's stream has been fed (for picking a run up)."""
        return (
            request_id == self._request_id
            and self._assembler is not None
            and self._assembler.started
        )

    def stream_complete(self, request_id: str) -> bool:
        """Whether this request's response has arrived whole (``message_stop`` included)."""
        return (
            self.stream_started(request_id)
            and self._assembler is not None
            and self._assembler.truncated_reason() is None
        )

    def messages_for_query(self) -> tuple[Message, ...]:
        """What the current or next request is built from: the history, with a committed
        context collapse projected over it (SPEC §7.4)."""
        return self._collapse.project(self._state.messages)

    def api_messages(self) -> list[dict[str, Any]]:
        """The current request's messages, normalized for the Messages API (SPEC §8.1).

        Only what changed since the previous request is normalized (DESIGN §7); the message
        dicts are shared between requests, so treat them as read-only.
        """
        history = self._request_history
        if history is None:
            history = self._request_history = RequestHistory(tag_ids=self.config.snip)
        return history.normalize(self.messages_for_query())

    def estimated_tokens(self) -> int:
        """The size of the next request as the context checks see it (SPEC §7.5): the API's
        exact count when it counted this very history, else the estimate over what is sent
        (the last reported usage, less what rewrites took out before it, plus characters / 4
        of what came after it)."""
        return self._token_estimate.tokens(self.messages_for_query())

    def legal_events(self) -> tuple[str, ...]:
        """Names of the event types the current phase accepts."""
        phase = self.phase
        names = {on.__name__ for (source, on) in _LOOP_INDEX if source == phase and on is not None}
        names |= {t.__name__ for (source, t) in INTERNAL_EVENTS if source == phase}
        return tuple(sorted(names))

    # --- checkpoints (continuing in another process) --------------------------------------------

    @property
    def at_request_boundary(self) -> bool:
        """Whether a :meth:`checkpoint` may be taken now: a model response was just asked for
        and nothing of it, nor anything else of this iteration, has arrived."""
        executor = self._executor
        return (
            self._poisoned is None
            and self._terminal is None
            and self._machine_model.state == _STREAMING
            and self._assembler is not None
            and not self._assembler.started
            and self._stream_error is None
            and not self._assistant
            and not self._tool_results
            and not self._snip_requests
            and (executor is None or not executor.order)
        )

    def checkpoint(self) -> CoreCheckpoint:
        """The core's state as plain data, for :meth:`restore` in another process.

        Raises:
            UsageError: the core is not at a request boundary (:attr:`at_request_boundary`).
        """
        if not self.at_request_boundary:
            raise UsageError(
                f"a checkpoint is taken right after a model request is asked for; the core "
                f"is in phase {self.phase!r} with that request's answer or other work pending"
            )
        assert self._assembler is not None
        collapse = self._collapse
        return CoreCheckpoint(
            state=self._state,
            model=self._model_name,
            usage=self._usage,
            effect_counter=self._effect_counter,
            uuid_counter=self._uuid_counter,
            request_counter=self._request_counter,
            request_id=self._request_id,
            attempt=self._attempt,
            max_output_tokens=self._assembler.max_output_tokens,
            output_cap=self._output_cap,
            consecutive_overloaded=self._consecutive_overloaded,
            abort_reason=self._abort_reason,
            tool_context=dict(self._tool_context),
            session_rules=tuple(self._session_rules),
            answered=tuple(sorted(self._answered)),
            collapse_staged=collapse.staged,
            collapse_committed=collapse.committed,
            collapse_staging=collapse.staging,
            collapse_staging_through=collapse.staging_through,
            collapse_staging_failed=collapse.staging_failed,
            compacted_this_iteration=self._compacted_this_iteration,
            collapse_drain_attempted=self._collapse_drain_attempted,
            budget_checked=self._budget_checked,
            compactions_this_turn=self._compactions_this_turn,
            compaction_refilled=self._compaction_refilled,
            wall_now=self._wall_now,
            last_response_at=self._last_response_at,
            microcompacted_at=self._microcompacted_at,
            turn_output_tokens=self._turn_output_tokens,
            budget_continuations=self._budget_continuations,
            budget_last_delta=self._budget_last_delta,
            budget_last_total=self._budget_last_total,
            estimate_anchor=self._token_estimate.adjustment[0],
            estimate_freed=self._token_estimate.adjustment[1],
            snipped=tuple(sorted(self._snipped)),
            shown=len(self._transcript),
        )

    @classmethod
    def restore(
        cls,
        checkpoint: CoreCheckpoint,
        *,
        config: LoopConfig | None = None,
        tools: Sequence[ToolSpec] = (),
    ) -> AgentCore:
        """A core in the state ``checkpoint`` was taken in, waiting for the answer to its
        request; ``config`` and ``tools`` must be those of the core it was taken from.

        The transcript starts empty (what was shown before is in the trace).
        """
        core = cls(config=config, tools=tools)
        core._load(checkpoint)
        return core

    def _load(self, checkpoint: CoreCheckpoint) -> None:
        """Take the state of ``checkpoint`` (a new core's, see :meth:`restore`)."""
        self._machine_model.state = _STREAMING
        self._state = checkpoint.state
        self._model_name = checkpoint.model
        self._usage = checkpoint.usage
        self._effect_counter = checkpoint.effect_counter
        self._uuid_counter = checkpoint.uuid_counter
        self._request_counter = checkpoint.request_counter
        self._request_id = checkpoint.request_id
        self._attempt = checkpoint.attempt
        self._output_cap = checkpoint.output_cap
        self._consecutive_overloaded = checkpoint.consecutive_overloaded
        self._abort_reason = checkpoint.abort_reason
        self._tool_context = dict(checkpoint.tool_context)
        self._session_rules = list(checkpoint.session_rules)
        self._answered = set(checkpoint.answered)
        # At a request boundary every tool_use seen so far has its result.
        self._tool_ids = set(checkpoint.answered)
        self._budget.mark_sent(checkpoint.state.messages)
        collapse = self._collapse
        collapse.staged = checkpoint.collapse_staged
        collapse.committed = checkpoint.collapse_committed
        collapse.staging = checkpoint.collapse_staging
        collapse.staging_through = checkpoint.collapse_staging_through
        collapse.staging_failed = checkpoint.collapse_staging_failed
        self._compacted_this_iteration = checkpoint.compacted_this_iteration
        self._collapse_drain_attempted = checkpoint.collapse_drain_attempted
        self._budget_checked = checkpoint.budget_checked
        self._compactions_this_turn = checkpoint.compactions_this_turn
        self._compaction_refilled = checkpoint.compaction_refilled
        self._wall_now = checkpoint.wall_now
        self._last_response_at = checkpoint.last_response_at
        self._microcompacted_at = checkpoint.microcompacted_at
        self._turn_output_tokens = checkpoint.turn_output_tokens
        self._budget_continuations = checkpoint.budget_continuations
        self._budget_last_delta = checkpoint.budget_last_delta
        self._budget_last_total = checkpoint.budget_last_total
        self._token_estimate.restore(checkpoint.estimate_anchor, checkpoint.estimate_freed)
        self._snipped = set(checkpoint.snipped)
        # What _start_request made for the request in flight: new, so rebuilt.
        self._assembler = StreamAssembler(
            request_id=checkpoint.request_id,
            model=checkpoint.model,
            new_uuid=self.new_uuid,
            max_output_tokens=checkpoint.max_output_tokens,
            run_tool_ids=self._tool_ids,
        )
        self._executor = None  # as _start_request leaves it
        self._refresh_hot_request()

    # --- feeding -------------------------------------------------------------------------------

    def feed(self, event: ev.Event) -> Step:
        """Apply one event; return the transitions taken and the effects to perform."""
        if self._poisoned is not None:
            raise CorePoisoned(
                "the core raised earlier and may be half-changed; build a new one "
                f"(first error: {self._poisoned!r})"
            )
        if type(event) is ev.ModelStreamEvent and self._machine_model.state == _STREAMING:
            if event.request_id == self._hot_request:
                return self.feed_stream(event.request_id, event.event, event=event)
            return self._stream_step(event.request_id, event.event, event)
        self._transitions = []
        self._effects = []
        try:
            self._dispatch(event)
            return self._settle()
        except BaseException as exc:
            self._poison(exc)
            raise

    def _poison(self, exc: BaseException) -> None:
        self._poisoned = exc
        self._hot_request = None

    def _refresh_hot_request(self) -> None:
        """Remember the request whose plain deltas ``feed_stream`` may take directly."""
        hot = (
            self._machine_model.state == _STREAMING
            and self._stream_error is None
            and self._assembler is not None
        )
        self._hot_request = self._request_id if hot else None

    def feed_stream(
        self, request_id: str, raw: dict[str, Any], *, event: ev.ModelStreamEvent | None = None
    ) -> Step:
        """The same as ``feed(ModelStreamEvent(request_id=..., event=raw))``, faster.

        Most events of a run are stream deltas; this entry builds the event object only when
        the delta completes something, and not at all when ``event`` is that object.
        Drivers and replay use it on their hot path.
        """
        if request_id == self._hot_request:
            assembler = self._assembler
            assert assembler is not None
            try:
                completed = assembler.feed(raw)
            except FsmAgentError as exc:  # a protocol error: the model_error row, below
                return self._stream_step(request_id, raw, event, refused=str(exc))
            except BaseException as exc:
                self._poison(exc)
                raise
            if not completed:
                return _QUIET_STEP
            return self._stream_step(request_id, raw, event, completed=completed)
        return self.feed(event or ev.ModelStreamEvent(request_id=request_id, event=raw))

    def _stream_step(
        self,
        request_id: str,
        raw: dict[str, Any],
        event: ev.ModelStreamEvent | None,
        *,
        completed: tuple[Message, ...] = (),
        refused: str | None = None,
    ) -> Step:
        # When the caller already fed the assembler: ``completed`` is what it returned, or
        # ``refused`` the protocol error it raised. Otherwise the event is fed here.
        self._transitions = []
        self._effects = []
        try:
            if refused is not None:
                self._stream_error = refused
            elif completed:
                self._absorb(completed)
            else:
                self._on_stream(request_id, raw)
            if not (self._effects or self._transitions or self._stream_error):
                return _QUIET_STEP
            self._event = event or ev.ModelStreamEvent(request_id=request_id, event=raw)
            self._fire_first(_STREAM_ROWS)
            return self._settle()
        except BaseException as exc:
            self._poison(exc)
            raise

    def _dispatch(self, event: ev.Event) -> None:
        phase = self._machine_model.state
        plan = _EVENT_PLANS.get((phase, type(event)))
        if plan is None:
            raise IllegalTransition(
                phase=phase, event=type(event).__name__, legal=self.legal_events()
            )
        handler, rows, answers_effect, answers_request = plan
        if answers_effect:
            effect_id = getattr(event, "effect_id", None)
            if effect_id != self._awaiting:
                raise UsageError(
                    f"{type(event).__name__} answers effect {effect_id!r}, but phase "
                    f"{phase!r} waits for {self._awaiting!r}"
                )
        if answers_request:
            # (The type as a string: a union written out would be built on every call.)
            request_id = cast("ev.ModelStreamClosed | ev.ModelStreamFailed", event).request_id
            if request_id != self._request_id:
                self._check_request(request_id)
        self._event = event
        if handler is not None:
            handler(self, event)
        if rows is not None and not self._fire_first(rows) and handler is None:
            raise DefinitionError(f"no row fired for {type(event).__name__} in {phase}")

    def _settle(self) -> Step:
        """Fire automatic rows until the loop rests in a phase that waits for an event (or a
        final state), then make the step; one call per event (DESIGN §7)."""
        model = self._machine_model
        while self._terminal is None:
            rows = _AUTOMATIC_ROWS.get(model.state)
            if rows is None or not self._fire_first(rows):
                break
        # _refresh_hot_request, inline
        hot = (
            model.state == _STREAMING and self._stream_error is None and self._assembler is not None
        )
        self._hot_request = self._request_id if hot else None
        transitions, effects = self._transitions, self._effects
        if not (transitions or effects or self._terminal is not None):
            return _QUIET_STEP
        return _new_step(
            transitions=tuple(transitions), effects=tuple(effects), terminal=self._terminal
        )

    def _fire_first(self, rows: tuple[_Firing, ...]) -> bool:
        """Fire the first row of a group whose guard holds (DESIGN §2); False if none does."""
        for guard, firing in rows:
            if guard is None or guard(self):
                taken, trigger, action, final = firing
                trigger(self._machine_model)
                self._transitions.append(taken)
                if action is not None:
                    action(self)
                if final is not None:
                    self._terminal = final
                    # SessionEnd hooks run as the session closes; nothing waits (SPEC §6).
                    self._run_hooks(fx.HookEvent.SESSION_END, {"reason": final})
                return True
        return False

    # Events a phase consumes inside itself (``INTERNAL_EVENTS``), one handler per type.

    def _internal_stream_event(self, event: ev.ModelStreamEvent) -> None:
        self._on_stream(event.request_id, event.event)

    def _internal_abort(self, event: ev.AbortRequested) -> None:
        self._abort_tools(event.reason)

    def _internal_tool_event(self, event: ev.Event) -> None:
        executor = self._executor
        call = executor.owns(event) if executor is not None else None
        if call is None:
            raise IllegalTransition(
                phase=self.phase,
                event=f"{type(event).__name__} for no current tool call",
                legal=self.legal_events(),
            )
        assert executor is not None
        executor.handle_owned(call, event)

    # --- the tool sink (what the executor calls back) -------------------------------------------

    def new_effect_id(self) -> str:
        """Next effect id (a counter: replay gives the same ids)."""
        self._effect_counter += 1
        return f"e{self._effect_counter}"

    def new_uuid(self) -> str:
        """Next message id."""
        self._uuid_counter += 1
        return f"m{self._uuid_counter}"

    def add_effect(self, effect: fx.Effect) -> None:
        """Queue an effect for the driver."""
        self._effects.append(effect)

    def add_transition(self, transition: TransitionTaken) -> None:
        """Record a tool-machine transition in the current step."""
        self._transitions.append(transition)

    def hand_back(self, call: ToolCall, messages: list[Message]) -> None:
        """A tool call's result reaches the loop (SPEC §3 tool dispatch)."""
        self._answered.add(call.call_id)
        for message in messages:
            self._tool_results.append(message)
            self._show(message)

    def request_abort(self, reason: str) -> None:
        """A permission rejection ends the turn (SPEC §9.6)."""
        if self._abort_reason is None:
            self._abort_reason = reason
        if self._executor is not None:
            self._executor.cancel_all(fx.CancelReason.USER_INTERRUPTED)

    def apply_context_update(self, update: dict[str, Any]) -> None:
        """Apply a tool's context modifier; a snip request (SPEC §7.2) is kept for the next
        ``preprocess`` instead."""
        if SNIP_REQUEST in update:
            self._snip_requests.append(update[SNIP_REQUEST])
            update = {key: value for key, value in update.items() if key != SNIP_REQUEST}
        self._tool_context.update(update)

    def remember_permission_rules(self, rules: tuple[str, ...]) -> None:
        """Keep the session rules an "allow always" answer added (SPEC §9.2 source session)."""
        self._session_rules.extend(rule for rule in rules if rule not in self._session_rules)

    # --- helpers ---------------------------------------------------------------------------------

    def _set_tools(self, tools: Sequence[ToolSpec]) -> None:
        global _last_tool_tables  # noqa: PLW0603 - a one-entry memo, replaced whole
        memo = _last_tool_tables
        if memo is not None and memo.tools is tools:
            tables = memo
        else:
            tables = _tool_tables(tools)
            if type(tools) is tuple:  # immutable, so the same object means the same tools
                _last_tool_tables = tables
        self.tools = tables.tools
        self._specs = tables.specs
        self._unbounded_tools = tables.unbounded
        self._compactable_tools = tables.compactable

    def _show(self, message: Message) -> None:
        self._transcript.append(message)
        self._effects.append(_new_emit(message=message))

    def _new_executor(self, *, batch_mode: bool) -> ToolExecutor:
        return ToolExecutor(
            self,
            self._specs,
            batch_mode=batch_mode,
            max_concurrency=self.config.max_tool_concurrency,
        )

    def _last_assistant(self) -> Message | None:
        return self._assistant[-1] if self._assistant else None

    def _withheld(self, kind: ApiErrorKind) -> bool:
        last = self._assistant[-1] if self._assistant else None
        return isinstance(last, ApiErrorMessage) and last.withheld and last.kind is kind

    def _surface_withheld(self) -> None:
        last = self._last_assistant()
        if isinstance(last, ApiErrorMessage) and last.withheld:
            surfaced = attrs.evolve(last, withheld=False)
            self._assistant[-1] = surfaced
            self._show(surfaced)

    def _stop_failure_hooks(self) -> None:
        last = self._last_assistant()
        self._run_hooks(
            fx.HookEvent.STOP_FAILURE, {"error": text_of(last) if last is not None else ""}
        )

    def _run_hooks(
        self, hook_event: fx.HookEvent, payload: dict[str, Any], *, wait: bool = False
    ) -> None:
        """Ask for the hooks of a loop-level event; ``wait``: the phase waits for their answer."""
        effect = _new_run_hooks(
            effect_id=self.new_effect_id(), hook_event=hook_event, payload=payload
        )
        if wait:
            self._await(effect)
        else:
            self._effects.append(effect)

    def _take_hook_outcome(self, outcome: ev.HookOutcome) -> None:
        """Context from a loop-level hook joins the history; its notices are shown."""
        for message in context_and_notices(outcome, self.new_uuid):
            self._show(message)
            if isinstance(message, AttachmentMessage):
                self._state = evolved(self._state, messages=(*self._state.messages, message))

    def _api_error(self, kind: ApiErrorKind, text: str, *, withheld: bool) -> None:
        message = ApiErrorMessage(uuid=self.new_uuid(), kind=kind, text=text, withheld=withheld)
        self._assistant.append(message)
        if not withheld:
            self._show(message)

    def _meta_user(self, text: str) -> UserMessage:
        message = UserMessage(uuid=self.new_uuid(), content=(TextBlock(text=text),), is_meta=True)
        self._show(message)
        return message

    def _history_rewritten(self, before: tuple[Message, ...]) -> int:
        """The projected history changed from ``before`` other than by growing: the
        estimate stops counting what left it; returns the tokens freed (SPEC §7.2, §7.5)."""
        return self._token_estimate.rewritten(before, self.messages_for_query())

    def _max_output_tokens(self) -> int:
        wanted = (
            self._state.max_output_tokens_override
            or self.config.max_output_tokens_override
            or self.config.max_output_tokens
        )
        return min(wanted, self._output_cap) if self._output_cap is not None else wanted

    def _start_request(self, *, attempt: int, delay_ms: int = 0) -> None:
        self._request_counter += 1
        self._request_id = f"r{self._request_counter}"
        self._attempt = attempt
        self._stream_error = None
        max_tokens = self._max_output_tokens()
        self._assembler = StreamAssembler(
            request_id=self._request_id,
            model=self._model_name,
            new_uuid=self.new_uuid,
            max_output_tokens=max_tokens,
            run_tool_ids=self._tool_ids,
        )
        # Made when the response's first tool_use completes (streaming, SPEC §5.2) or when
        # tools are requested (batch, SPEC §5.1): most responses ask for no tool.
        self._executor = None
        self._budget.mark_sent(self._state.messages)
        self._effects.append(
            _new_call_model(
                effect_id=self.new_effect_id(),
                request_id=self._request_id,
                model=self._model_name,
                max_output_tokens=max_tokens,
                attempt=attempt,
                delay_ms=delay_ms,
                message_count=len(self._state.messages),
            )
        )

    def _discard_attempt(self) -> None:
        """Withdraw a failed attempt (SPEC §3 streaming fallback), hiding no call that ran.

        SPEC §5.2 "Ours": every call of the attempt hands its one tool_result to the caller
        (a call that never started gets the "discarded" error result). A call that was called
        — only read-only calls can be, before the response ends — is never hidden from the
        model: its tool_use message and its result are not withdrawn but moved into the
        history the next request is built from, right before that request's answer. Every
        other message of the attempt is withdrawn by a tombstone; normalization then drops
        the withdrawn tool_uses together with their results (``normalize``).
        """
        ran = self._executor.discard() if self._executor is not None else []
        # Batch path: the calls were never handed to an executor; answer them here.
        self._answer_unanswered(self._assistant, texts.DISCARDED_BY_FALLBACK)
        ran_ids = {call.call_id for call in ran}
        kept: list[Message] = []
        for message in self._assistant:
            if isinstance(message, ApiErrorMessage) and message.withheld:
                continue  # never shown, so nothing to withdraw
            if ran_ids and _only_tool_uses_of(message, ran_ids):
                kept.append(message)
            else:
                self._show(TombstoneMessage(uuid=self.new_uuid(), target_uuid=message.uuid))
        if kept:
            results = [m for call in ran for m in call.messages]
            self._state = evolved(self._state, messages=(*self._state.messages, *kept, *results))
        self._assistant = []
        self._tool_results = []

    def _answer_everything(self, reason: fx.CancelReason, text: str) -> None:
        """Give every tool_use of this iteration its one result (SPEC §12 invariant 1)."""
        if self._executor is not None:
            self._executor.cancel_all(reason, message=text)
            self._executor.flush()
        result_text = (
            texts.model_error_result(text)
            if reason is fx.CancelReason.MODEL_ERROR
            else texts.INTERRUPTED_BEFORE_START
        )
        self._tool_results.extend(self._answer_unanswered(self._assistant, result_text))

    def _answer_unanswered(self, messages: list[Message], text: str) -> list[Message]:
        """Show an error result for each tool_use in ``messages`` that has none yet."""
        answered: list[Message] = []
        for message in messages:
            for block in message.content if isinstance(message, AssistantMessage) else ():
                if isinstance(block, ToolUseBlock) and block.id not in self._answered:
                    self._answered.add(block.id)
                    result = UserMessage(
                        uuid=self.new_uuid(),
                        content=(
                            ToolResultBlock(tool_use_id=block.id, content=text, is_error=True),
                        ),
                    )
                    self._show(result)
                    answered.append(result)
        return answered

    def _abort_tools(self, reason: str) -> None:
        if self._abort_reason is None:
            self._abort_reason = reason
        if self._executor is not None:
            self._executor.cancel_all(
                fx.CancelReason.USER_INTERRUPTED, only_interruptible=reason == "interrupt"
            )
            self._executor.pump()

    def _continue_with(self, name: str, **changes: Any) -> None:
        """Start the next iteration from the state with ``changes`` (SPEC §2.1), as ``name``."""
        self._state = evolved(self._state, transition=name, **changes)

    def _iteration_messages(self) -> tuple[Message, ...]:
        """messagesForQuery + this iteration's assistant messages (API errors left out)."""
        kept = []
        for message in self._assistant:
            if not isinstance(message, ApiErrorMessage):
                kept.append(message)
        return (*self._state.messages, *kept)

    # --- stream handling (inside `streaming`, no transition per delta) ------------------------

    def _check_request(self, request_id: str) -> None:
        """A model event must belong to the request in flight (the driver never mixes them)."""
        if request_id != self._request_id:
            raise UsageError(
                f"a model event for request {request_id!r} arrived, but the request in "
                f"flight is {self._request_id!r}"
            )

    def _on_stream(self, request_id: str, raw: dict[str, Any]) -> None:
        if request_id != self._request_id:
            self._check_request(request_id)
        if self._stream_error is not None:
            return  # the model_error row has fired already
        assert self._assembler is not None
        try:
            completed = self._assembler.feed(raw)
        except FsmAgentError as exc:  # ModelProtocolError: a named model_error, not a crash
            self._stream_error = str(exc)
            return
        if completed:
            self._absorb(completed)

    def _absorb(self, completed: tuple[Message, ...]) -> None:
        assert self._assembler is not None
        for message in completed:
            if isinstance(message, SystemMessage):  # a stream notice: shown, never sent
                self._show(message)
                continue
            self._assistant.append(message)
            if isinstance(message, ApiErrorMessage):
                if not message.withheld:
                    self._show(message)
                continue
            self._show(message)
            if not (self.config.streaming_tool_execution and isinstance(message, AssistantMessage)):
                continue
            for block in message.content:
                if isinstance(block, ToolUseBlock):
                    executor = self._executor
                    if executor is None:
                        executor = self._executor = self._new_executor(batch_mode=False)
                    executor.add(block, self._assembler.tool_input_errors.get(block.id))
        if completed and self._executor is not None:
            self._executor.pump()

    # --- guards (read, never write) -------------------------------------------------------------

    def _compaction_allowed(self) -> bool:
        """The refill breaker: a bounded number of compactions per user turn, and none after
        one that left the context over the threshold (it would only run again and again)."""
        return (
            not self._compaction_refilled
            and self._compactions_this_turn < self.config.max_compactions_per_turn
        )

    def _count_compaction(self) -> None:
        self._compactions_this_turn += 1
        if self.estimated_tokens() >= self.config.autocompact_threshold:
            self._compaction_refilled = True

    def _guard_collapse_stage_due(self) -> bool:
        collapse = self._collapse
        return (
            self.config.context_collapse
            and collapse.staging is None
            and collapse.staged is None
            and not collapse.staging_failed
            and self.estimated_tokens() >= STAGING_SHARE * self.config.effective_window
            and collapse.next_span(self._state.messages) is not None
        )

    def _guard_microcompact_due(self) -> bool:
        config = self.config
        return (
            config.time_based_microcompact
            and not config.is_subagent  # SPEC §7.3: main thread only
            and self._microcompacted_at != self._last_response_at
            and gap_elapsed(self._wall_now, self._last_response_at, config.microcompact_gap_minutes)
            and self._cleared_history() is not None
        )

    def _guard_results_over_budget(self) -> bool:
        return not self._budget_checked and bool(
            self._budget.plan(self._state.messages, unbounded_tools=self._unbounded_tools)
        )

    def _guard_snip_requested(self) -> bool:
        return bool(self._snip_requests)

    def _guard_token_count_due(self) -> bool:
        return self.config.count_tokens and not self._token_count_asked

    def _guard_should_autocompact(self) -> bool:
        tracking = self._state.auto_compact
        failures = tracking.consecutive_failures if tracking is not None else 0
        return (
            self.config.autocompact
            and not self.config.context_collapse
            and failures < self.config.autocompact_failure_limit
            and self._compaction_allowed()
            and self.estimated_tokens() >= self.config.autocompact_threshold
        )

    def _guard_compaction_succeeded(self) -> bool:
        return bool(self._event.ok)

    def _guard_at_blocking_limit(self) -> bool:
        # SPEC §2.2 blocking_limit: skipped when compaction can still rescue the request.
        if self._compacted_this_iteration or self.config.context_collapse:
            return False
        if self.config.reactive_compact and self.config.autocompact and self._compaction_allowed():
            return False
        return self.estimated_tokens() >= self.config.blocking_limit

    def _guard_stream_broken(self) -> bool:
        return self._stream_error is not None

    def _guard_abort_pending(self) -> bool:
        return self._abort_reason is not None

    def _guard_stream_finished(self) -> bool:
        return (
            self._event.request_id == self._request_id
            and self._assembler is not None
            and self._assembler.truncated_reason() is None
        )

    def _guard_retry_allowed(self) -> bool:
        event = self._event
        if isinstance(event, ev.ModelStreamFailed) and not event.kind.retryable:
            return False
        return self._attempt <= self.config.max_retries

    def _guard_request_refused(self) -> bool:
        return self._event.kind in (ev.FailureKind.PROMPT_TOO_LONG, ev.FailureKind.MEDIA_TOO_LARGE)

    def _guard_image_invalid(self) -> bool:
        return bool(self._event.kind is ev.FailureKind.IMAGE_INVALID)

    def _reduced_output_tokens(self) -> int | None:
        """SPEC §8.3: room left under the context limit, less a 1 000-token buffer."""
        event = self._event
        if event.input_tokens is None or event.context_limit is None:
            return None
        return int(event.context_limit - event.input_tokens - _OVERFLOW_BUFFER)

    def _guard_output_reducible(self) -> bool:
        if self._event.kind is not ev.FailureKind.OUTPUT_OVERFLOW:
            return False
        reduced = self._reduced_output_tokens()
        return (
            reduced is not None
            and reduced >= _OUTPUT_FLOOR
            and self._attempt <= self.config.max_retries
        )

    def _guard_fallback_due(self) -> bool:
        fallback = self.config.fallback_model
        return (
            self._event.kind is ev.FailureKind.OVERLOADED
            and fallback is not None
            and fallback != self._model_name
            and self._consecutive_overloaded + 1 >= self.config.overloaded_before_fallback
        )

    def _guard_tool_use_seen(self) -> bool:
        # SPEC §1.2: needsFollowUp comes from the content, not from stop_reason.
        for message in self._assistant:
            if isinstance(message, AssistantMessage):
                for block in message.content:
                    if isinstance(block, ToolUseBlock):
                        return True
        return False

    def _guard_collapse_drain_applicable(self) -> bool:
        return (
            self.config.context_collapse
            and self._withheld(ApiErrorKind.PROMPT_TOO_LONG)
            and self._state.transition != "collapse_drain_retry"
            and not self._collapse_drain_attempted
        )

    def _guard_collapse_committed(self) -> bool:
        return bool(self._event.committed > 0)

    def _guard_reactive_compact_applicable(self) -> bool:
        return (
            self.config.reactive_compact
            and not self._state.has_attempted_reactive_compact
            and (
                self._withheld(ApiErrorKind.PROMPT_TOO_LONG)
                or self._withheld(ApiErrorKind.MEDIA_TOO_LARGE)
            )
            and self._compaction_allowed()
        )

    def _guard_withheld_prompt_too_long(self) -> bool:
        return self._withheld(ApiErrorKind.PROMPT_TOO_LONG)

    def _guard_withheld_media_error(self) -> bool:
        return self._withheld(ApiErrorKind.MEDIA_TOO_LARGE)

    def _guard_escalation_applicable(self) -> bool:
        return (
            self._withheld(ApiErrorKind.MAX_OUTPUT_TOKENS)
            and self.config.escalate_output_tokens
            and self._state.max_output_tokens_override is None
            and self.config.max_output_tokens_override is None
        )

    def _guard_recovery_applicable(self) -> bool:
        return (
            self._withheld(ApiErrorKind.MAX_OUTPUT_TOKENS)
            and self._state.max_output_tokens_recovery_count
            < self.config.max_output_tokens_recoveries
        )

    def _stop_reason(self) -> str | None:
        """The stop reason of this iteration's response (None if it never got one)."""
        return self._assembler.stop_reason if self._assembler is not None else None

    def _guard_response_refused(self) -> bool:
        return self._stop_reason() == "refusal"

    def _guard_pause_turn_applicable(self) -> bool:
        return (
            self._stop_reason() == "pause_turn"
            and self._state.pause_turns < self.config.pause_turn_limit
        )

    def _guard_last_is_api_error(self) -> bool:
        return isinstance(self._last_assistant(), ApiErrorMessage)

    def _guard_prompt_refused(self) -> bool:
        outcome: ev.HookOutcome = self._event.outcome
        return outcome.prevent_continuation or bool(outcome.blocking_errors)

    def _guard_hook_prevented_continuation(self) -> bool:
        return bool(self._event.outcome.prevent_continuation)

    def _guard_stop_hook_blocked(self) -> bool:
        return bool(self._event.outcome.blocking_errors)

    def _guard_stop_hook_block_cap_reached(self) -> bool:
        return (
            self._guard_stop_hook_blocked()
            and self._state.stop_hook_blocks >= self.config.stop_hook_block_cap
        )

    def _guard_token_budget_continues(self) -> bool:
        budget = self.config.token_budget
        if budget is None or self.config.is_subagent:
            return False
        current_delta = self._turn_output_tokens - self._budget_last_total
        diminishing = (
            self._budget_continuations >= 3
            and current_delta < 500
            and self._budget_last_delta < 500
        )
        return not diminishing and self._turn_output_tokens < budget * 0.9

    def _guard_tools_done(self) -> bool:
        return self._executor is None or self._executor.all_yielded

    def _guard_tools_done_after_abort(self) -> bool:
        return self._abort_reason is not None and self._guard_tools_done()

    def _guard_tools_done_hook_stopped(self) -> bool:
        return (
            self._executor is not None and self._executor.hook_stopped and self._guard_tools_done()
        )

    def _guard_turn_limit_reached(self) -> bool:
        limit = self.config.max_turns
        return limit is not None and self._state.turn_count + 1 > limit

    # --- row actions ----------------------------------------------------------------------------

    def _on_run_started(self) -> None:
        event: ev.TurnStarted = self._event
        self._state = new_state(messages=tuple(event.messages))
        self._transcript.extend(event.messages)
        self._wall_now = event.wall_time
        self._last_response_at = event.last_response_wall_time
        # SPEC §7.1: a result the caller hands in was sent before; its fate is kept.
        self._budget.mark_sent(self._state.messages)
        self._compactions_this_turn = 0
        self._compaction_refilled = False
        self._turn_output_tokens = 0
        self._budget_continuations = 0
        self._budget_last_delta = 0
        self._budget_last_total = 0
        self._run_hooks(fx.HookEvent.SESSION_START, {"source": "startup"}, wait=True)

    def _on_session_started(self) -> None:
        event: ev.HooksFinished = self._event
        self._take_hook_outcome(event.outcome)
        prompt = _last_of(self._state.messages, UserMessage)
        payload = {"prompt": text_of(prompt) if prompt is not None else ""}
        self._run_hooks(fx.HookEvent.USER_PROMPT_SUBMIT, payload, wait=True)

    def _on_prompt_blocked(self) -> None:
        outcome: ev.HookOutcome = self._event.outcome
        if outcome.prevent_continuation:
            text = texts.hook_stopped(outcome.stop_reason)
        else:
            text = texts.hook_blocked_prompt("\n".join(outcome.blocking_errors))
        self._take_hook_outcome(attrs.evolve(outcome, additional_context=()))
        self._show(
            AttachmentMessage(
                uuid=self.new_uuid(), kind=AttachmentKind.HOOK_STOPPED_CONTINUATION, text=text
            )
        )

    def _on_prompt_submitted(self) -> None:
        event: ev.HooksFinished = self._event
        self._take_hook_outcome(event.outcome)

    def _on_iteration_started(self) -> None:
        self._output_cap = None
        self._assistant = []
        self._tool_results = []
        self._executor = None
        self._assembler = None
        self._compacted_this_iteration = False
        self._collapse_drain_attempted = False
        self._consecutive_overloaded = 0
        self._budget_checked = False
        self._token_count_asked = False
        self._token_estimate.forget_count()

    def _on_tool_results_over_budget(self) -> None:
        self._budget_checked = True
        results = self._budget.plan(self._state.messages, unbounded_tools=self._unbounded_tools)
        self._await(fx.PersistToolResults(effect_id=self.new_effect_id(), results=results))

    def _on_history_snipped(self) -> None:
        # SPEC §7.2 (our design, core/snip.py): decided over what is sent, applied to the
        # history; the transcript keeps what was shown.
        requests, self._snip_requests = self._snip_requests, []
        before = self.messages_for_query()
        ids: list[str] = []
        malformed: list[str] = []
        for raw in requests:
            named, problem = snip_ids(raw)
            ids.extend(named)
            if problem is not None:
                malformed.append(problem)
        if not self.config.snip:
            outcome = SnipOutcome(refused=tuple((i, texts.SNIP_OFF) for i in ids))
        else:
            outcome = plan_snip(
                before,
                dict.fromkeys(ids),
                snipped_before=self._snipped,
                pinned_through=self._collapse.staging_through,
            )
        if outcome.removed:
            gone = frozenset(outcome.removed)
            self._collapse.forget_staged_touching(before, gone)
            self._snipped |= gone
            kept = tuple(m for m in self._state.messages if m.uuid not in gone)
            self._state = evolved(self._state, messages=kept)
        freed = self._history_rewritten(before)
        report = texts.snip_outcome(
            removed=len(outcome.removed),
            snipped=outcome.snipped,
            refused=outcome.refused,
            malformed=tuple(malformed),
            tokens_freed=freed,
        )
        note = self._meta_user(report)
        self._state = evolved(self._state, messages=(*self._state.messages, note))

    def _cleared_history(self) -> tuple[Message, ...] | None:
        return clear_old_results(
            self._state.messages,
            compactable=self._compactable_tools,
            keep=self.config.microcompact_keep_recent,
        )

    def _on_old_tool_results_cleared(self) -> None:
        # SPEC §7.3: the history sent is cleared; the transcript keeps what was shown.
        self._microcompacted_at = self._last_response_at
        cleared = self._cleared_history()
        assert cleared is not None
        before = self.messages_for_query()
        self._state = evolved(self._state, messages=cleared)
        self._history_rewritten(before)

    def _on_tool_results_persisted(self) -> None:
        # SPEC §7.1: the preview and path replace the content in what is sent, and in the
        # transcript, so a later run that carries the transcript on sends the same bytes.
        event: ev.ToolResultsPersisted = self._event
        replacements = {result.tool_use_id: result.content for result in event.results}
        for tool_use_id in replacements:
            if self._budget.seen(tool_use_id):
                raise UsageError(
                    f"ToolResultsPersisted replaces {tool_use_id!r}, which the model has "
                    "seen already (SPEC §7.1: its content is frozen)"
                )
        if not replacements:
            return
        before = self.messages_for_query()
        messages = []
        for message in self._state.messages:
            replaced = replace_results(message, replacements)
            if replaced is not message:
                self._replace_in_transcript(message, replaced)
            messages.append(replaced)
        self._state = evolved(self._state, messages=tuple(messages))
        self._history_rewritten(before)

    def _on_token_count_requested(self) -> None:
        self._token_count_asked = True
        self._await(
            fx.CountTokens(
                effect_id=self.new_effect_id(),
                model=self._model_name,
                message_count=len(self._state.messages),
            )
        )

    def _on_tokens_counted(self) -> None:
        # SPEC §7.5: an exact count replaces the estimate for this request; a failed count
        # (recorded in the event) leaves the estimate in charge.
        event: ev.TokensCounted = self._event
        tokens = event.input_tokens
        if tokens is None or tokens < 0:
            return
        self._token_estimate.take_count(tokens, self.messages_for_query())
        # The refill breaker with the exact figure: the first count after a reactive
        # compaction still over the threshold means it refilled at once (the estimate that
        # judged it in _count_compaction could not see that), so nothing compacts again.
        if (
            self._state.transition == "reactive_compact_retry"
            and tokens >= self.config.autocompact_threshold
        ):
            self._compaction_refilled = True

    def _await(self, effect: fx.Effect) -> None:
        self._awaiting = getattr(effect, "effect_id", None)
        self._effects.append(effect)

    def _on_autocompact_started(self) -> None:
        self._pre_compact_hooks()

    def _pre_compact_hooks(self) -> None:
        # SPEC §7.5 "Full compaction": PreCompact hooks run before the summary is asked for.
        payload = {"trigger": "auto", "custom_instructions": ""}
        self._run_hooks(fx.HookEvent.PRE_COMPACT, payload, wait=True)

    def _on_pre_compact_done(self) -> None:
        outcome: ev.HookOutcome = self._event.outcome
        kind = (
            fx.CompactKind.AUTO
            if self.phase == Phase.AUTOCOMPACTING.value
            else fx.CompactKind.REACTIVE
        )
        self._take_hook_outcome(attrs.evolve(outcome, additional_context=()))
        self._await(
            fx.Compact(
                effect_id=self.new_effect_id(),
                kind=kind,
                instructions="\n".join(outcome.additional_context),
            )
        )

    def _adopt_compacted(self, messages: tuple[Message, ...]) -> None:
        self._show(SystemMessage(uuid=self.new_uuid(), subtype=COMPACT_BOUNDARY))
        for message in messages:
            self._show(message)
        before = self.messages_for_query()
        self._state = evolved(self._state, messages=tuple(messages))
        self._history_rewritten(before)

    def _on_autocompact_done(self) -> None:
        event: ev.CompactionFinished = self._event
        self._adopt_compacted(event.messages)
        self._count_compaction()
        self._compacted_this_iteration = True
        self._state = evolved(
            self._state,
            auto_compact=AutoCompactTracking(compacted=True, turn_id=event.effect_id),
        )

    def _on_autocompact_failed(self) -> None:
        tracking = self._state.auto_compact or AutoCompactTracking()
        self._state = evolved(
            self._state,
            auto_compact=attrs.evolve(
                tracking, consecutive_failures=tracking.consecutive_failures + 1
            ),
        )

    def _on_blocking_limit(self) -> None:
        self._api_error(ApiErrorKind.PROMPT_TOO_LONG, texts.PROMPT_TOO_LONG, withheld=False)

    def _on_request_sent(self) -> None:
        self._start_request(attempt=1)

    def _on_model_error(self) -> None:
        event = self._event
        if isinstance(event, ev.ModelStreamFailed):
            text = event.message or event.kind.value
        elif self._stream_error is not None:
            text = self._stream_error
        else:
            reason = self._assembler.truncated_reason() if self._assembler else None
            text = f"The model's response ended early: {reason or 'stream closed'}"
        self._answer_everything(fx.CancelReason.MODEL_ERROR, text)
        self._api_error(ApiErrorKind.OTHER, text, withheld=False)

    def _on_aborted_streaming(self) -> None:
        reason = self._abort_reason or getattr(self._event, "reason", "user")
        self._answer_everything(fx.CancelReason.USER_INTERRUPTED, "")
        if reason != "interrupt":
            self._show(
                UserMessage(uuid=self.new_uuid(), content=(TextBlock(text=texts.INTERRUPTED),))
            )

    def _on_stream_ended(self) -> None:
        assert self._assembler is not None
        self._last_response_at = self._event.wall_time
        if self._executor is not None:
            self._executor.end_response()  # SPEC §5.2 "Ours": side effects may start now
        usage = self._assembler.usage
        self._usage = self._usage + usage
        self._turn_output_tokens += usage.output_tokens
        # SPEC §3: message_delta's usage and stop_reason land on the last message of the response.
        for position in range(len(self._assistant) - 1, -1, -1):
            message = self._assistant[position]
            if isinstance(message, AssistantMessage):
                patched = self._assembler.finalized(message)
                self._assistant[position] = patched
                self._replace_in_transcript(message, patched)
                break

    def _replace_in_transcript(self, old: Message, new: Message) -> None:
        for position in range(len(self._transcript) - 1, -1, -1):
            if self._transcript[position] is old:
                self._transcript[position] = new
                return

    def _on_request_retried(self) -> None:
        event = self._event
        overloaded = (
            isinstance(event, ev.ModelStreamFailed) and event.kind is ev.FailureKind.OVERLOADED
        )
        self._consecutive_overloaded = self._consecutive_overloaded + 1 if overloaded else 0
        retry_after = event.retry_after_ms if isinstance(event, ev.ModelStreamFailed) else None
        self._discard_attempt()
        attempt = self._attempt + 1
        self._start_request(
            attempt=attempt, delay_ms=self.config.retry_delay_ms(attempt, retry_after)
        )

    def _on_max_tokens_reduced(self) -> None:
        # The request asked for more output than the context has room for: ask again, once
        # more, for what fits (SPEC §8.3); below the floor the failure is a model_error.
        self._discard_attempt()
        self._output_cap = self._reduced_output_tokens()
        self._start_request(attempt=self._attempt + 1)

    def _on_model_fallback(self) -> None:
        old = self._model_name
        assert self.config.fallback_model is not None
        self._discard_attempt()
        self._model_name = self.config.fallback_model
        self._consecutive_overloaded = 0
        self._show(
            SystemMessage(
                uuid=self.new_uuid(),
                subtype="model_fallback",
                text=texts.model_fallback_notice(self._model_name, old),
            )
        )
        self._start_request(attempt=1)

    def _on_api_error_received(self) -> None:
        event: ev.ModelStreamFailed = self._event
        self._discard_attempt()
        if event.kind is ev.FailureKind.PROMPT_TOO_LONG:
            kind = ApiErrorKind.PROMPT_TOO_LONG
            recoverable = self.config.reactive_compact or self.config.context_collapse
        else:
            kind = ApiErrorKind.MEDIA_TOO_LARGE
            recoverable = self.config.reactive_compact
        # SPEC §2.3: withheld while a recovery may still fix it; else shown at once.
        self._api_error(kind, event.message or texts.PROMPT_TOO_LONG, withheld=recoverable)

    def _on_image_error(self) -> None:
        if isinstance(self._event, ev.ModelStreamFailed):
            self._answer_everything(fx.CancelReason.MODEL_ERROR, self._event.message)
            self._api_error(ApiErrorKind.MEDIA_TOO_LARGE, self._event.message, withheld=False)
        else:
            self._surface_withheld()
        self._stop_failure_hooks()

    def _on_tools_requested(self) -> None:
        if self._executor is None:  # batch path (SPEC §5.1): every call is known now
            self._executor = self._new_executor(batch_mode=True)
            for message in self._assistant:
                for block in message.content if isinstance(message, AssistantMessage) else ():
                    if isinstance(block, ToolUseBlock):
                        error = (
                            self._assembler.tool_input_errors.get(block.id)
                            if self._assembler
                            else None
                        )
                        self._executor.add(block, error)
        self._executor.pump()

    def _on_collapse_staging_started(self) -> None:
        span = self._collapse.next_span(self._state.messages)
        assert span is not None
        effect_id = self.new_effect_id()
        self._collapse.staging = effect_id
        self._collapse.staging_through = span[1]
        count, through = span
        self._effects.append(
            fx.StageCollapse(effect_id=effect_id, message_count=count, through_uuid=through)
        )

    def _take_staged_collapse(self, event: ev.CollapseStaged) -> None:
        if event.effect_id != self._collapse.staging:
            raise UsageError(
                f"CollapseStaged answers {event.effect_id!r}, but the collapse being staged "
                f"is {self._collapse.staging!r}"
            )
        self._collapse.staging = None
        self._collapse.staging_through = None
        if event.ok:
            span = CollapsedSpan(through_uuid=event.through_uuid, summary=tuple(event.summary))
            self._collapse.staged = span
        else:
            self._collapse.staging_failed = True  # no second summary attempt this run

    def _on_collapse_drain_started(self) -> None:
        staged = 1 if self._collapse.staged is not None else 0
        self._await(fx.DrainCollapse(effect_id=self.new_effect_id(), staged=staged))

    def _on_collapse_drain_retry(self) -> None:
        event: ev.CollapseDrained = self._event
        before = self.messages_for_query()
        # SPEC §7.4: a staged span is committed and projected, the history kept; a collapse
        # made on demand brings the collapsed view itself.
        if event.messages or not self._collapse.commit():
            self._state = evolved(self._state, messages=tuple(event.messages))
        self._history_rewritten(before)
        self._continue_with(
            "collapse_drain_retry",
            max_output_tokens_override=None,
            stop_hook_active=None,
        )

    def _on_collapse_drain_empty(self) -> None:
        self._collapse_drain_attempted = True

    def _on_reactive_compact_started(self) -> None:
        self._pre_compact_hooks()

    def _on_reactive_compact_retry(self) -> None:
        event: ev.CompactionFinished = self._event
        self._adopt_compacted(event.messages)
        self._count_compaction()
        self._continue_with(
            "reactive_compact_retry",
            has_attempted_reactive_compact=True,
            auto_compact=None,
            max_output_tokens_override=None,
        )

    def _on_prompt_too_long(self) -> None:
        self._surface_withheld()
        self._stop_failure_hooks()

    def _on_max_output_tokens_escalate(self) -> None:
        # SPEC §2.1: same messages (the partial output is dropped), bigger output size.
        self._continue_with(
            "max_output_tokens_escalate",
            max_output_tokens_override=self.config.escalated_max_output_tokens,
        )

    def _on_max_output_tokens_recovery(self) -> None:
        nudge = self._meta_user(texts.RESUME_AFTER_TRUNCATION)
        self._continue_with(
            "max_output_tokens_recovery",
            messages=(*self._iteration_messages(), nudge),
            max_output_tokens_recovery_count=self._state.max_output_tokens_recovery_count + 1,
            max_output_tokens_override=None,
        )

    def _on_completed(self) -> None:
        from_stop_hooks = isinstance(self._event, ev.HooksFinished)
        if not from_stop_hooks and isinstance(self._last_assistant(), ApiErrorMessage):
            # SPEC §2.3 step 4: the run ends on an API error; Stop hooks are skipped.
            self._surface_withheld()
            self._stop_failure_hooks()

    def _on_stop_hooks_started(self) -> None:
        last = _last_of(self._assistant, AssistantMessage)
        # SPEC §6.3: a subagent's loop runs SubagentStop hooks where the main loop runs Stop.
        hook_event = fx.HookEvent.SUBAGENT_STOP if self.config.is_subagent else fx.HookEvent.STOP
        payload = {
            "stop_hook_active": bool(self._state.stop_hook_active),
            "last_assistant_message": text_of(last) if last is not None else "",
        }
        self._run_hooks(hook_event, payload, wait=True)

    def _on_stop_hook_prevented(self) -> None:
        event = self._event
        if isinstance(event, ev.HooksFinished):
            if event.outcome.prevent_continuation:
                text = texts.hook_stopped(event.outcome.stop_reason)
            else:
                text = texts.stop_hook_block_cap(self.config.stop_hook_block_cap)
        else:
            text = texts.INTERRUPTED
        self._show(
            AttachmentMessage(
                uuid=self.new_uuid(), kind=AttachmentKind.HOOK_STOPPED_CONTINUATION, text=text
            )
        )

    def _on_stop_hook_blocking(self) -> None:
        event: ev.HooksFinished = self._event
        feedback = [
            self._meta_user(texts.stop_hook_feedback(t)) for t in event.outcome.blocking_errors
        ]
        # SPEC §2.1: hasAttemptedReactiveCompact is kept (resetting it looped forever).
        self._continue_with(
            "stop_hook_blocking",
            messages=(*self._iteration_messages(), *feedback),
            max_output_tokens_recovery_count=0,
            max_output_tokens_override=None,
            stop_hook_active=True,
            stop_hook_blocks=self._state.stop_hook_blocks + 1,
        )

    def _on_refusal(self) -> None:
        # The model declined: the caller is told, with the API's stop_details when it sent
        # them; no Stop hook runs on a refused response (as on an API error, SPEC §2.3 step 4).
        details = self._assembler.stop_details if self._assembler is not None else None
        self._show(
            SystemMessage(uuid=self.new_uuid(), subtype="refusal", text=texts.refusal(details))
        )

    def _on_pause_turn(self) -> None:
        # The API paused a long server-tool run: the paused assistant message goes back as
        # the last message, and the API carries on from there. Bounded per turn.
        self._continue_with(
            "pause_turn",
            messages=self._iteration_messages(),
            max_output_tokens_override=None,
            pause_turns=self._state.pause_turns + 1,
        )

    def _on_token_budget_continuation(self) -> None:
        budget = self.config.token_budget or 0
        used = self._turn_output_tokens
        self._budget_last_delta = used - self._budget_last_total
        self._budget_last_total = used
        self._budget_continuations += 1
        nudge = self._meta_user(
            texts.token_budget_nudge(round(100 * used / budget) if budget else 0, used, budget)
        )
        self._continue_with(
            "token_budget_continuation",
            messages=(*self._iteration_messages(), nudge),
            max_output_tokens_recovery_count=0,
            has_attempted_reactive_compact=False,
            max_output_tokens_override=None,
            stop_hook_active=None,
        )

    def _on_aborted_tools(self) -> None:
        reason = self._abort_reason or getattr(self._event, "reason", "user")
        if self._executor is not None:
            self._executor.flush()
        if reason != "interrupt":
            self._show(
                UserMessage(
                    uuid=self.new_uuid(),
                    content=(TextBlock(text=texts.INTERRUPTED_FOR_TOOL_USE),),
                )
            )
        if self._guard_turn_limit_reached():
            self._show_max_turns_reached()

    def _on_tools_finished(self) -> None:
        self._await(
            fx.FetchAttachments(effect_id=self.new_effect_id(), turn=self._state.turn_count)
        )

    def _on_attachments_ready(self) -> None:
        event: ev.AttachmentsReady = self._event
        self._wall_now = event.wall_time
        for message in event.messages:
            self._tool_results.append(message)
            self._show(message)
        if event.tools is not None:
            self._set_tools(event.tools)

    def _on_max_turns(self) -> None:
        self._show_max_turns_reached()

    def _show_max_turns_reached(self) -> None:
        self._show(
            AttachmentMessage(
                uuid=self.new_uuid(),
                kind=AttachmentKind.MAX_TURNS_REACHED,
                text=texts.max_turns_reached(self.config.max_turns or 0),
            )
        )

    def _on_next_turn(self) -> None:
        tracking = self._state.auto_compact
        if tracking is not None and tracking.compacted:
            tracking = attrs.evolve(tracking, turn_counter=tracking.turn_counter + 1)
        # SPEC §2.1 next_turn: stopHookActive is carried; the recovery state resets.
        self._continue_with(
            "next_turn",
            messages=(*self._iteration_messages(), *self._tool_results),
            auto_compact=tracking,
            turn_count=self._state.turn_count + 1,
            max_output_tokens_recovery_count=0,
            has_attempted_reactive_compact=False,
            max_output_tokens_override=None,
            stop_hook_blocks=0,
            pause_turns=0,
        )


@attrs.frozen
class _ToolTables:
    """What the core looks tools up in, derived from the tools it was given (read-only)."""

    tools: tuple[ToolSpec, ...]
    specs: dict[str, ToolSpec]  # by name and by alias
    unbounded: frozenset[str]  # names whose results the budget never persists (SPEC §7.1)
    compactable: frozenset[str]  # names whose old results microcompact clears (SPEC §7.3)


def _tool_tables(tools: Sequence[ToolSpec]) -> _ToolTables:
    specs: dict[str, ToolSpec] = {}
    for spec in tools:
        for name in (spec.name, *spec.aliases):
            if name in specs:
                raise DefinitionError(f"two tools are called {name!r}")
            specs[name] = spec
    unbounded: set[str] = set()
    shells: set[str] = set()
    for name, spec in specs.items():
        if spec.unbounded_results:
            unbounded.add(name)
        if spec.is_shell:
            shells.add(name)
    return _ToolTables(
        tools=tools if type(tools) is tuple else tuple(tools),
        specs=specs,
        unbounded=frozenset(unbounded),
        compactable=COMPACTABLE_TOOLS | shells,
    )


# The tables of the last tools tuple a core was given: programs build a fresh core per run
# from one tuple of tools (DESIGN §7: construction is part of a run's price), and the tables
# depend on nothing else. Never changed in place, so cores may share them.
_last_tool_tables: _ToolTables | None = None


def _last_of(messages: Sequence[Message], kind: type[_M]) -> _M | None:
    """The last of ``messages`` that is a ``kind`` (a loop: no generator on the hot path)."""
    for position in range(len(messages) - 1, -1, -1):
        message = messages[position]
        if isinstance(message, kind):
            return message
    return None


def _only_tool_uses_of(message: Message, call_ids: set[str]) -> bool:
    """The message is an assistant message whose blocks are all tool_uses of ``call_ids``."""
    return (
        isinstance(message, AssistantMessage)
        and bool(message.content)
        and all(isinstance(b, ToolUseBlock) and b.id in call_ids for b in message.content)
    )


# A row as the core fires it from one source, resolved once (DESIGN §7): its guard (None:
# always), its transition record (it depends only on the row and the source), the trigger of
# its ``transitions`` event, its ``_on_<name>`` action (None: none) and the final state it
# reaches (None: not final). Firing is then unpacking a tuple, with no lookup per row; the
# guard stands apart, so a row whose guard fails costs no more than the guard.
_Firing = tuple[
    Callable[["AgentCore"], bool] | None,
    tuple[
        TransitionTaken,
        Callable[[_LoopModel], bool],
        Callable[["AgentCore"], None] | None,
        str | None,
    ],
]
# What feeding an event type in a phase does: the handler of an event the phase consumes
# (INTERNAL_EVENTS), the rows it may fire, whether it must answer the effect the phase
# waits for, and whether it must belong to the request in flight.
_EventPlan = tuple[
    Callable[["AgentCore", Any], None] | None,
    tuple[_Firing, ...] | None,
    bool,
    bool,
]

_INTERNAL_HANDLERS: dict[type, Callable[[AgentCore, Any], None]] = {
    ev.ModelStreamEvent: AgentCore._internal_stream_event,
    ev.AbortRequested: AgentCore._internal_abort,
    ev.CollapseStaged: AgentCore._take_staged_collapse,
    **dict.fromkeys(_TOOL_EVENTS, AgentCore._internal_tool_event),
}


def _firings(source: str, rows: tuple[Row, ...]) -> tuple[_Firing, ...]:
    return tuple(
        (
            getattr(AgentCore, f"_guard_{row.guard}") if row.guard is not None else None,
            (
                TransitionTaken(machine="loop", name=row.name, source=source, dest=row.dest),
                cast(RowEvent, LOOP_MACHINE.events[row.name]).move,
                getattr(AgentCore, f"_on_{row.name}", None),
                row.dest if row.dest in FINAL_STATES else None,
            ),
        )
        for row in rows
    )


def _event_plans() -> dict[tuple[str, type], _EventPlan]:
    keys = {(phase, on) for phase, on in _LOOP_INDEX if on is not None} | INTERNAL_EVENTS
    plans: dict[tuple[str, type], _EventPlan] = {}
    for phase, kind in keys:
        rows = _LOOP_INDEX.get((phase, kind))
        plans[phase, kind] = (
            _INTERNAL_HANDLERS[kind] if (phase, kind) in INTERNAL_EVENTS else None,
            _firings(phase, rows) if rows is not None else None,
            phase in _AWAITING_PHASES and kind not in (ev.AbortRequested, ev.CollapseStaged),
            kind in (ev.ModelStreamClosed, ev.ModelStreamFailed),
        )
    return plans


check_table(LOOP_ROWS, AgentCore, internal=INTERNAL_EVENTS)
_EVENT_PLANS = _event_plans()
_AUTOMATIC_ROWS = {
    phase: _firings(phase, rows) for (phase, on), rows in _LOOP_INDEX.items() if on is None
}
_STREAM_ROWS = _firings(_STREAMING, _LOOP_INDEX[_STREAMING, ev.ModelStreamEvent])
