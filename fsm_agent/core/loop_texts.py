"""Texts the loop writes into the transcript (recovery nudges, cancellations, interruptions).

Our own wording; SPEC §0 asks for one module of message texts so that a change of wording is
one diff (and re-records the golden traces).
"""

from __future__ import annotations

INTERRUPTED = "[Request interrupted by user]"
INTERRUPTED_FOR_TOOL_USE = "[Request interrupted by user for tool use]"

USER_REJECTED_TOOL = (
    "The user does not want this tool call to run, and it did nothing. Stop here and wait "
    "for the user's next instruction."
)
DISCARDED_BY_FALLBACK = (
    "<tool_use_error>This call was discarded because the response was re-requested after "
    "a streaming failure.</tool_use_error>"
)
RESUME_AFTER_TRUNCATION = (
    "Your last response was cut off at the output limit. Continue exactly where it stopped, "
    "without apologising or repeating anything, and break the remaining work into smaller "
    "pieces."
)
PROMPT_TOO_LONG = "Prompt is too long"


def sibling_error(tool_name: str, main_argument: str) -> str:
    """Result for a call cancelled because a parallel shell call failed (SPEC §5.2)."""
    shown = main_argument[:40]
    label = f"{tool_name}({shown})" if shown else tool_name
    return (
        f"<tool_use_error>Cancelled: the parallel call {label} failed, so this one was "
        "stopped.</tool_use_error>"
    )


def model_error_result(message: str) -> str:
    """Result for a tool_use whose response ended in a model error (SPEC §2.2)."""
    return f"<tool_use_error>{message}</tool_use_error>"


def stop_hook_feedback(text: str) -> str:
    """Meta user message carrying one Stop hook's blocking error (SPEC §6.2)."""
    return f"Stop hook feedback:\n{text}"


def pre_tool_hook_error(tool_name: str, text: str) -> str:
    """Denial text when a PreToolUse hook reported a blocking error (SPEC §6.1)."""
    return f"PreToolUse:{tool_name} hook error: {text}"


def hook_denied(reason: str) -> str:
    """Denial text when a PreToolUse hook denied the call."""
    return reason or "A PreToolUse hook denied this tool call."


def permission_denied(tool_name: str, message: str) -> str:
    """Denial text for a permission decision without a message of its own."""
    return message or f"Permission to use {tool_name} was denied."


def token_budget_nudge(percent: int, used: int, budget: int) -> str:
    """Meta message asking the model to keep going under a token budget (SPEC §7.6)."""
    return (
        f"You have used {percent}% of the token target ({used:,} of {budget:,}). "
        "Keep working; do not summarise yet."
    )


def model_fallback_notice(new_model: str, old_model: str) -> str:
    """Warning shown when the loop switches to the fallback model (SPEC §8.3)."""
    return f"{old_model} is overloaded; switched to {new_model} for the rest of this run."


def max_turns_reached(max_turns: int) -> str:
    """Attachment text when the turn limit ends the run."""
    return f"Reached the maximum of {max_turns} turns."


def stop_hook_block_cap(cap: int) -> str:
    """Attachment text when Stop hooks blocked too many times in a row (our addition)."""
    return f"Stop hooks blocked {cap} times in a row; ending the run instead of looping."


def hook_stopped(reason: str) -> str:
    """Attachment text when a hook asked the loop not to continue."""
    return reason or "A hook stopped the run."
