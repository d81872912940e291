"""The enumerations a run is configured in: hook events, hook and permission decisions, who
decided, and kinds of attachment.

They live apart from the event, effect and message classes (which re-export them) so that
configuring hooks, permissions and attachments, and building an ``Agent``, does not build
every event and effect class (issue 10: ``from fsm_agent import Agent`` within 150 ms).
"""

from __future__ import annotations

import enum

__all__ = ["AttachmentKind", "DecisionSource", "HookDecision", "HookEvent", "PermissionBehavior"]


class HookEvent(enum.Enum):
    """Hook points the loop runs (SPEC §6); the values are the settings files' event names."""

    PRE_TOOL_USE = "PreToolUse"
    POST_TOOL_USE = "PostToolUse"
    POST_TOOL_USE_FAILURE = "PostToolUseFailure"
    USER_PROMPT_SUBMIT = "UserPromptSubmit"
    STOP = "Stop"
    SUBAGENT_STOP = "SubagentStop"  # replaces Stop in a subagent (LoopConfig.is_subagent)
    STOP_FAILURE = "StopFailure"
    PRE_COMPACT = "PreCompact"
    SESSION_START = "SessionStart"
    SESSION_END = "SessionEnd"
    NOTIFICATION = "Notification"


class HookDecision(enum.Enum):
    """A PreToolUse hook's permission decision (SPEC §6.1)."""

    ALLOW = "allow"
    DENY = "deny"
    ASK = "ask"


class PermissionBehavior(enum.Enum):
    """The final permission answer for one tool call."""

    ALLOW = "allow"
    DENY = "deny"


class DecisionSource(enum.Enum):
    """Who decided a permission question (DESIGN §3: the reason goes into the trace).

    ``NO_ONE_TO_ASK`` is a question that needed a person when there was none (no ``ask``
    callback): the call is refused, and the trace never claims that a user denied it.
    """

    RULE = "rule"
    MODE = "mode"
    HOOK = "hook"
    CLASSIFIER = "classifier"
    SAFETY_CHECK = "safety_check"
    TOOL = "tool"
    USER = "user"
    NO_ONE_TO_ASK = "no_one_to_ask"
    POLICY = "policy"


class AttachmentKind(enum.Enum):
    """Kinds of attachment the loop produces (SPEC §6, §2.2)."""

    HOOK_BLOCKING_ERROR = "hook_blocking_error"
    HOOK_ADDITIONAL_CONTEXT = "hook_additional_context"
    HOOK_STOPPED_CONTINUATION = "hook_stopped_continuation"
    HOOK_SYSTEM_MESSAGE = "hook_system_message"
    MAX_TURNS_REACHED = "max_turns_reached"
    QUEUED_COMMAND = "queued_command"
    FILE = "file"
    MEMORY = "memory"
    OTHER = "other"
