"""Effects: imperative commands the core hands to the driver (DESIGN §4).

An effect says what to do, never how. Ids come from a counter in the core; the event that
answers an effect carries its id. Effects carry no transcript: the driver reads the request
messages from ``AgentCore.api_messages()`` when it performs ``CallModel`` or a compaction, so
a trace stays linear in the run's length.
"""

from __future__ import annotations

import enum
from typing import Any, TypeAlias

import attrs

from fsm_agent.core import kinds
from fsm_agent.core.messages import Message

# Defined in :mod:`fsm_agent.core.kinds` (loaded without the classes here); named here too,
# where they were first defined.
HookEvent = kinds.HookEvent


@attrs.frozen(kw_only=True)
class CallModel:
    """Stream one model response for the current request messages.

    ``delay_ms`` is the backoff to wait before sending (0 for a first attempt).
    """

    effect_id: str
    request_id: str
    model: str
    max_output_tokens: int
    attempt: int = 1
    delay_ms: int = 0
    message_count: int = 0


class ToolStep(enum.Enum):
    """The steps of a tool call the driver performs (the rest are decided in the core)."""

    VALIDATE = "validate"
    CALL = "call"


@attrs.frozen(kw_only=True)
class RunToolStep:
    """Validate a tool call's input, or call the tool."""

    effect_id: str
    call_id: str
    step: ToolStep
    tool_name: str
    input: dict[str, Any] = attrs.field(factory=dict)
    context: dict[str, Any] = attrs.field(factory=dict)


DETACHED_HOOK_EVENTS = frozenset(
    {HookEvent.STOP_FAILURE, HookEvent.SESSION_END, HookEvent.NOTIFICATION}
)
"""Hook events nothing waits for and no event answers: they run as the run ends, or (for
Notification) beside a question a person is being asked."""


@attrs.frozen(kw_only=True)
class RunHooks:
    """Run every hook registered for ``hook_event``; the answer is ``HooksFinished`` (none for
    ``DETACHED_HOOK_EVENTS``)."""

    effect_id: str
    hook_event: HookEvent
    call_id: str | None = None
    tool_name: str | None = None
    payload: dict[str, Any] = attrs.field(factory=dict)


@attrs.frozen(kw_only=True)
class AskPermission:
    """Decide whether a tool call may run; ``hook_decision`` is a PreToolUse hook's say."""

    effect_id: str
    call_id: str
    tool_name: str
    input: dict[str, Any] = attrs.field(factory=dict)
    read_only: bool = False
    hook_decision: str | None = None
    hook_reason: str = ""


class CompactKind(enum.Enum):
    """Why a compaction is asked for."""

    AUTO = "auto"
    REACTIVE = "reactive"


@attrs.frozen(kw_only=True)
class Compact:
    """Compact the current history (``AgentCore.messages_for_query()``)."""

    effect_id: str
    kind: CompactKind
    trigger: str = ""
    instructions: str = ""  # what PreCompact hooks asked the summary to keep (SPEC §7.5)


@attrs.frozen(kw_only=True)
class DrainCollapse:
    """Commit staged context collapses (SPEC §7.4); ``staged`` spans are ready to commit, and
    with none the driver collapses the oldest half on demand."""

    effect_id: str
    staged: int = 0


@attrs.frozen(kw_only=True)
class StageCollapse:
    """Summarise the oldest span of what is sent now, in the background (SPEC §7.4): the
    first ``message_count`` messages of ``AgentCore.messages_for_query()``, the last of them
    ``through_uuid``. Nothing waits for the answer, ``CollapseStaged``."""

    effect_id: str
    message_count: int
    through_uuid: str


@attrs.frozen(kw_only=True)
class OversizedResult:
    """A tool_result chosen to be saved to a file, and its size in characters."""

    tool_use_id: str
    chars: int


@attrs.frozen(kw_only=True)
class PersistToolResults:
    """Save these tool_results of the current history to files; answer with the text the
    model sees instead of each (SPEC §7.1 tool-result budget)."""

    effect_id: str
    results: tuple[OversizedResult, ...]


@attrs.frozen(kw_only=True)
class CountTokens:
    """Ask the API how many input tokens the request about to be sent takes (SPEC §7.5, the
    optional exact count): the messages of ``AgentCore.api_messages()``, ``message_count`` of
    them in the history, with the system prompt and tools the driver sends. The answer,
    ``TokensCounted``, may carry an error: the core then goes on with its estimate."""

    effect_id: str
    model: str
    message_count: int = 0


class CancelReason(enum.Enum):
    """Why a tool call was cancelled (SPEC §5.2); each has its own synthetic result."""

    SIBLING_ERROR = "sibling_error"
    USER_INTERRUPTED = "user_interrupted"
    STREAMING_FALLBACK = "streaming_fallback"
    MODEL_ERROR = "model_error"  # ours: the response failed while its calls were running


@attrs.frozen(kw_only=True)
class CancelTool:
    """Stop a running tool call (kill its subprocess); its result is already decided."""

    effect_id: str
    call_id: str
    reason: CancelReason


@attrs.frozen(kw_only=True)
class FetchAttachments:
    """Collect attachments, prefetch results and queued commands for the next turn."""

    effect_id: str
    turn: int


@attrs.frozen(kw_only=True)
class Emit:
    """A message was added to the transcript; show it to the consumer."""

    message: Message


Effect: TypeAlias = (
    CallModel
    | RunToolStep
    | RunHooks
    | AskPermission
    | Compact
    | DrainCollapse
    | StageCollapse
    | PersistToolResults
    | CountTokens
    | CancelTool
    | FetchAttachments
    | Emit
)

EFFECT_TYPES: tuple[type, ...] = (
    CallModel,
    RunToolStep,
    RunHooks,
    AskPermission,
    Compact,
    DrainCollapse,
    StageCollapse,
    PersistToolResults,
    CountTokens,
    CancelTool,
    FetchAttachments,
    Emit,
)
