"""Events: past-tense facts fed to the core (DESIGN §4).

The driver turns everything that happens outside the core (a stream event, a finished tool
step, a hook result, a user's permission answer, a compaction, an abort) into one of these and
feeds it to ``AgentCore.feed``. Result events carry the id of the effect that asked for them.
Time, where a decision needs it, arrives inside an event; the core reads no clock.
"""

from __future__ import annotations

import enum
from typing import Any, TypeAlias

import attrs

from fsm_agent.core import kinds
from fsm_agent.core.messages import Message, ToolResultContent
from fsm_agent.core.tool_spec import ToolSpec

# Defined in :mod:`fsm_agent.core.kinds` (loaded without the classes here); named here too,
# where they were first defined.
DecisionSource = kinds.DecisionSource
HookDecision = kinds.HookDecision
PermissionBehavior = kinds.PermissionBehavior


@attrs.frozen(kw_only=True)
class TurnStarted:
    """A user turn begins with this transcript (the new prompt is its last message).

    ``wall_time`` is when (epoch seconds), and ``last_response_wall_time`` when the last
    response of ``messages`` was made, if the driver knows; time-based microcompact reads
    them (SPEC §7.3). Drivers stamp them only when that is on.
    """

    messages: tuple[Message, ...]
    wall_time: float | None = None
    last_response_wall_time: float | None = None


@attrs.frozen(kw_only=True)
class ModelStreamEvent:
    """One raw Messages-API stream event, as a dict in the shape the SDK yields."""

    request_id: str
    event: dict[str, Any]


@attrs.frozen(kw_only=True)
class ModelStreamClosed:
    """The model's stream iterator finished without raising (it may still be truncated).

    ``wall_time``: when, in epoch seconds (stamped for time-based microcompact, SPEC §7.3).
    """

    request_id: str
    wall_time: float | None = None


class FailureKind(enum.Enum):
    """How a model request failed; each kind maps to a named transition (DESIGN §8)."""

    PROMPT_TOO_LONG = "prompt_too_long"  # 400 "prompt is too long", or 413
    MEDIA_TOO_LARGE = "media_too_large"  # 400 naming an image/PDF size limit
    IMAGE_INVALID = "image_invalid"  # an image could not be sent at all (client-side)
    OUTPUT_OVERFLOW = "output_overflow"  # 400: input + max_tokens > the context limit
    OVERLOADED = "overloaded"  # 529, or an overloaded_error SSE event
    RATE_LIMITED = "rate_limited"  # 429
    SERVER_ERROR = "server_error"  # other 5xx
    CONNECTION = "connection"  # could not connect, or the connection dropped
    TIMEOUT = "timeout"  # read timeout or idle stream
    OTHER = "other"  # anything else: not retried

    @property
    def retryable(self) -> bool:
        """Whether the loop retries this kind (SPEC §8.3)."""
        return self in _RETRYABLE


_RETRYABLE = frozenset(
    {
        FailureKind.OVERLOADED,
        FailureKind.RATE_LIMITED,
        FailureKind.SERVER_ERROR,
        FailureKind.CONNECTION,
        FailureKind.TIMEOUT,
    }
)


@attrs.frozen(kw_only=True)
class ModelStreamFailed:
    """The model request raised; ``status`` is the HTTP status when there was one."""

    request_id: str
    kind: FailureKind
    message: str = ""
    status: int | None = None
    retry_after_ms: int | None = None
    input_tokens: int | None = None  # OUTPUT_OVERFLOW: the numbers the API named
    context_limit: int | None = None


@attrs.frozen(kw_only=True)
class ToolInputValidated:
    """The tool checked a call's input (schema and ``validate_input``) and classified it."""

    call_id: str
    ok: bool
    error: str = ""
    concurrency_safe: bool = False
    read_only: bool = False


@attrs.frozen(kw_only=True)
class ToolCallFinished:
    """The tool's ``call`` returned (or raised: then ``is_error`` and the formatted error)."""

    call_id: str
    content: ToolResultContent = ""
    is_error: bool = False
    context_update: dict[str, Any] | None = None


@attrs.frozen(kw_only=True)
class ToolProgressReported:
    """A running tool reported progress; shown to the user, never sent to the model."""

    call_id: str
    text: str


@attrs.frozen(kw_only=True)
class SubagentStarted:
    """A tool call started a child agent, whose trace is a file of its own.

    A fact for the trace (it links the parent's call to the child's run, both ways with the
    child's header); the machines take no transition for it, and the model never sees it.
    Resume reads it to pick the child up from its own trace instead of running it again.

    Attributes:
        call_id: the parent's tool call that runs the child.
        agent: the name of the child's definition.
        run_id: the child's run id.
        trace: the child's trace file, or None when the run is not traced.
    """

    call_id: str
    agent: str
    run_id: str
    trace: str | None = None


@attrs.frozen(kw_only=True)
class HookOutcome:
    """The aggregate of every hook that ran for one hook event (SPEC §6.1)."""

    blocking_errors: tuple[str, ...] = ()
    prevent_continuation: bool = False
    stop_reason: str = ""
    decision: HookDecision | None = None
    decision_reason: str = ""
    updated_input: dict[str, Any] | None = None
    additional_context: tuple[str, ...] = ()
    system_messages: tuple[str, ...] = ()


@attrs.frozen(kw_only=True)
class HooksFinished:
    """The hooks asked for by a ``RunHooks`` effect have all finished."""

    effect_id: str
    outcome: HookOutcome = attrs.field(factory=HookOutcome)


@attrs.frozen(kw_only=True)
class PermissionPromptShown:
    """A person is being asked the question of the ``AskPermission`` effect ``effect_id``.

    The driver reports it as the question goes out (before the answer); the core then runs the
    Notification hooks (SPEC §9.6: the dialog is when the user is told the agent waits).
    """

    effect_id: str


@attrs.frozen(kw_only=True)
class PermissionDecided:
    """The answer to an ``AskPermission`` effect, with why it was given.

    Attributes:
        source: the kind of reason (a rule, the mode, a hook, a safety check, the tool, the
            user, no one to ask, a classifier).
        reason: the reason in words.
        step: the step of the permission chain that decided (``1a`` … ``3`` of SPEC §9.3,
            ``hook`` for SPEC §9.5, ``plan`` or ``dontAsk`` for the modes, ``user``).
        rule: the rule that decided, as written, when a rule did.
        rule_source: where that rule came from (``userSettings``, ``session``, …).
        mode: the permission mode in force.
        added_rules: allow rules the user added for the rest of the session ("allow
            always"); recorded here so that replay and resume see them.
    """

    effect_id: str
    behavior: PermissionBehavior
    source: DecisionSource
    reason: str = ""
    message: str = ""
    updated_input: dict[str, Any] | None = None
    abort_turn: bool = False
    step: str = ""
    rule: str = ""
    rule_source: str = ""
    mode: str = ""
    added_rules: tuple[str, ...] = ()


@attrs.frozen(kw_only=True)
class CompactionFinished:
    """An autocompact or reactive compact finished; ``messages`` replace the history on success."""

    effect_id: str
    ok: bool
    messages: tuple[Message, ...] = ()
    error: str = ""


@attrs.frozen(kw_only=True)
class CollapseDrained:
    """Staged context collapses were committed; ``messages`` is the drained view."""

    effect_id: str
    committed: int
    messages: tuple[Message, ...] = ()


@attrs.frozen(kw_only=True)
class CollapseStaged:
    """The summary asked for by ``StageCollapse`` (``ok`` False: none could be made). It may
    arrive in any phase; the core keeps it until a refusal commits it (SPEC §7.4)."""

    effect_id: str
    through_uuid: str
    ok: bool
    summary: tuple[Message, ...] = ()


@attrs.frozen(kw_only=True)
class PersistedResult:
    """What the model sees of a tool_result saved to a file: a preview and the path."""

    tool_use_id: str
    content: str


@attrs.frozen(kw_only=True)
class ToolResultsPersisted:
    """The answer to ``PersistToolResults``: the results that were saved (one that could not
    be is left out, and keeps its content)."""

    effect_id: str
    results: tuple[PersistedResult, ...] = ()


@attrs.frozen(kw_only=True)
class TokensCounted:
    """The answer to ``CountTokens``: the exact input size, or why there is none (the count
    failed or timed out, or the model cannot count); the core then uses its estimate."""

    effect_id: str
    input_tokens: int | None = None
    error: str = ""


@attrs.frozen(kw_only=True)
class AttachmentsReady:
    """Attachments, prefetch results and queued commands for the next turn.

    ``tools``, when given, is the refreshed tool list (SPEC §1.2 S7: tools are refreshed
    between turns, for example an MCP server's); None keeps the tools as they are.
    ``wall_time``: when the next iteration starts, in epoch seconds (SPEC §7.3).
    """

    effect_id: str
    messages: tuple[Message, ...] = ()
    tools: tuple[ToolSpec, ...] | None = None
    wall_time: float | None = None


@attrs.frozen(kw_only=True)
class AbortRequested:
    """The user (or the caller) asked to stop; ``reason`` ``interrupt`` means a new prompt waits."""

    reason: str = "user"


Event: TypeAlias = (
    TurnStarted
    | ModelStreamEvent
    | ModelStreamClosed
    | ModelStreamFailed
    | ToolInputValidated
    | ToolCallFinished
    | ToolProgressReported
    | SubagentStarted
    | HooksFinished
    | PermissionPromptShown
    | PermissionDecided
    | CompactionFinished
    | CollapseDrained
    | CollapseStaged
    | ToolResultsPersisted
    | TokensCounted
    | AttachmentsReady
    | AbortRequested
)

EVENT_TYPES: tuple[type, ...] = (
    TurnStarted,
    ModelStreamEvent,
    ModelStreamClosed,
    ModelStreamFailed,
    ToolInputValidated,
    ToolCallFinished,
    ToolProgressReported,
    SubagentStarted,
    HooksFinished,
    PermissionPromptShown,
    PermissionDecided,
    CompactionFinished,
    CollapseDrained,
    CollapseStaged,
    ToolResultsPersisted,
    TokensCounted,
    AttachmentsReady,
    AbortRequested,
)
