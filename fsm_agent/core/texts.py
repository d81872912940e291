"""Every text the loop shows to the model or to the user, in one place.

SPEC §0 asks for our own wording, kept in one module: recovery nudges, placeholders that keep a
transcript valid for the API, synthetic error results and the notices about truncated output
all live here as constants or small functions, so a reviewer can read (and a translator can
change) them without hunting through the machine. Nothing here decides anything.

Tags such as ``<system-reminder>`` and ``<tool_use_error>`` are protocol markers the model is
trained to recognise, not prose; they are kept as the conventions require.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# --- stream assembly (SPEC §3) --------------------------------------------------------------


def max_output_tokens_reached(limit: int) -> str:
    """The notice for a response cut off by ``stop_reason == "max_tokens"`` (SPEC §3).

    Args:
        limit: The output-token cap the request was sent with; 0 when unknown.

    Returns:
        A sentence naming the cap (when known) and the setting that raises it.
    """
    cap = f"the {limit}-token output limit" if limit > 0 else "its output-token limit"
    return (
        f"The model stopped mid-response because it used up {cap}. "
        "To allow longer responses, raise max_output_tokens in the agent config "
        "(or set FSM_AGENT_MAX_OUTPUT_TOKENS)."
    )


CONTEXT_WINDOW_EXCEEDED = (
    "The model stopped mid-response because the conversation filled its whole context "
    "window. Compact the conversation or start a new one to continue."
)
"""Notice for ``stop_reason == "model_context_window_exceeded"`` (SPEC §3)."""


def invalid_tool_input(tool_name: str, problem: str) -> str:
    """The error result for a tool call whose streamed input was not a JSON object (SPEC §4 step 1).

    Args:
        tool_name: The name of the tool the model asked for.
        problem: What was wrong with the input, in a few words.

    Returns:
        A ``<tool_use_error>`` text the model can read and correct itself from.
    """
    return (
        f"<tool_use_error>InputValidationError: the input sent for {tool_name} could not be "
        f"used ({problem}). Send the arguments again as one JSON object."
        "</tool_use_error>"
    )


STREAM_NO_MESSAGE_START = "the stream never sent message_start"
"""Why a stream is incomplete: nothing describing the response arrived (SPEC §3 empty stream)."""


def stream_block_left_open(index: int) -> str:
    """Why a stream is incomplete: a content block was started but never stopped."""
    return f"content block {index} was started but never closed"


STREAM_NO_MESSAGE_STOP = "the stream ended before message_stop"
"""Why a stream is incomplete: the body ended early (NOTES: stop_reason stays None)."""


def stream_delta_skipped(delta_type: str, block_type: str, index: int) -> str:
    """A note in the transcript: a delta the block could not take was skipped (SPEC §3)."""
    return f"skipped a {delta_type} that a {block_type} block (index {index}) cannot take"


def stream_event_skipped(event_type: str) -> str:
    """A note in the transcript: a stream event of a type we do not know was skipped."""
    return f"skipped a stream event of unknown type {event_type!r}"


def stream_block_closed_by_message_stop(index: int) -> str:
    """A note in the transcript: message_stop arrived with a block still open, and closed it."""
    return f"content block {index} was still open at message_stop and was closed there"


def refusal(details: Mapping[str, Any] | None) -> str:
    """What the caller is told when the model declined to answer (stop_reason ``refusal``)."""
    text = "The model declined to answer this request"
    if details:
        category = details.get("category")
        explanation = details.get("explanation")
        if category:
            text += f" (category: {category})"
        if explanation:
            text += f": {explanation}"
    return text + "."


STREAM_EMPTY = "the stream was empty: no content block completed and no stop_reason arrived"
"""Why a stream is incomplete: it carried nothing usable (SPEC §3 empty stream)."""


# --- normalization for the API (SPEC §8.1, §8.2) --------------------------------------------


def system_reminder(text: str) -> str:
    """Wrap attachment text so the model reads it as loop context, not the user's words."""
    return f"<system-reminder>\n{text}\n</system-reminder>"


MISSING_TOOL_RESULT = (
    "[No result was recorded for this tool call: it was interrupted or lost before it "
    "finished. Do not assume it ran.]"
)
"""Synthetic ``is_error`` result for a tool_use that nothing answered (SPEC §8.2)."""

ORPHANED_TOOL_RESULT_REMOVED = (
    "[A tool result whose call is no longer in the conversation was removed]"
)
"""Placeholder for a first user message emptied by dropping orphaned results (SPEC §8.2)."""

EMPTY_USER_PLACEHOLDER = "(empty message)"
"""Placeholder for a user message left with nothing in it, so roles keep alternating."""

CONVERSATION_START_PLACEHOLDER = "(conversation resumed)"
"""Leading user message added when a transcript would otherwise start with the assistant."""

EMPTY_ASSISTANT_PLACEHOLDER = "(empty response)"
"""Text for an assistant message with no visible content (SPEC §8.1 steps 8 and 10)."""


def media_omitted(kind: str) -> str:
    """Stands in for an image or document dropped to respect the per-request media cap."""
    return f"[{kind} omitted: the request already carried the most media items allowed]"


# --- the loop: interruptions, cancellations, recovery nudges, hooks -----------------------

INTERRUPTED = "[Request interrupted by user]"
INTERRUPTED_FOR_TOOL_USE = "[Request interrupted by user for tool use]"


def queued_message(text: str) -> str:
    """Attachment text for a message the user sent while the agent worked (SPEC §1.2 S7)."""
    return (
        f"The user sent this message while you were working:\n{text}\n\n"
        "Take it into account, then carry on with the task."
    )


INTERRUPTED_BEFORE_START = (
    "The user interrupted the request before this tool call started, so it did not run. "
    "Wait for the user's next instruction."
)
"""Result for a call an interrupt (Esc, Ctrl-C) cancelled before it ran (SPEC §5.2)."""

INTERRUPTED_WHILE_RUNNING = (
    "The user interrupted the request while this tool call was running. It was stopped "
    "part-way, so its effects may be partial: check what it changed before relying on it "
    "or running it again, and wait for the user's next instruction."
)
"""Result for a call an interrupt stopped while it ran: not a refusal, and not a no-op."""

DISCARDED_BY_FALLBACK = (
    "<tool_use_error>This call was discarded because the response was re-requested after "
    "a streaming failure. It did not run.</tool_use_error>"
)
"""Result for a call of a withdrawn attempt that never started (SPEC §5.2)."""

STOPPED_BY_FALLBACK = (
    "<tool_use_error>This call was stopped while it ran, because the response that asked "
    "for it failed and was re-requested. Its effects may be partial.</tool_use_error>"
)
"""Result for a call of a withdrawn attempt that had started: it stays visible (SPEC §5.2)."""
RESUME_AFTER_TRUNCATION = (
    "Your last response was cut off at the output limit. Continue exactly where it stopped, "
    "without apologising or repeating anything, and break the remaining work into smaller "
    "pieces."
)
PROMPT_TOO_LONG = "Prompt is too long"

OLD_TOOL_RESULT_CLEARED = "[Old tool result content cleared]"

SNIP_OFF = "snip is off for this run (LoopConfig.snip)"
"""Why every id of a snip request is refused when the switch is off (SPEC §7.2)."""


def snip_tag(uuid: str) -> str:
    """The tag that lets the model name a message to snip (SPEC §8.1 step 13)."""
    return f"[id:{uuid}]"


def snip_outcome(
    *,
    removed: int,
    snipped: tuple[str, ...],
    refused: tuple[tuple[str, str], ...],
    malformed: tuple[str, ...],
    tokens_freed: int,
) -> str:
    """What the model is told after a snip request (SPEC §7.2): what went, what stayed and
    why, and about how many tokens that freed."""
    lines = []
    if snipped:
        lines.append(
            f"Snipped {', '.join(snipped)}: {removed} messages left the conversation, "
            f"about {tokens_freed} tokens freed."
        )
    lines.extend(f"Not snipped {name}: {reason}." for name, reason in refused)
    lines.extend(f"Snip request refused: {problem}." for problem in malformed)
    return "\n".join(lines) if lines else "Snip: nothing was named."


"""What an old tool result says once time-based microcompact cleared it (SPEC §7.3)."""


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


def permission_notification(tool_name: str) -> str:
    """What Notification hooks are told while a person is asked about a call (SPEC §9.6)."""
    return f"The agent needs your permission to use {tool_name}."


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


def hook_failed(event: str, name: str, error: str) -> str:
    """Warning when a hook raised: it does not block (SPEC §6.3 "Hook crash")."""
    return f"{event} hook {name} failed: {error}"


def hook_wrong_type(event: str, name: str, got: str) -> str:
    """Warning when a Python hook returned something other than a HookOutcome or None."""
    return (
        f"{event} hook {name} returned a {got}; a hook must return a HookOutcome or None, "
        "so its answer was ignored."
    )


def hook_timed_out(event: str, name: str, seconds: float) -> str:
    """Warning when a hook ran past its time limit and was stopped (a non-blocking error)."""
    return f"{event} hook {name} timed out after {seconds:g} s and was stopped."


def command_hook_blocking(command: str, stderr: str) -> str:
    """A command hook's blocking error, exit code 2 (SPEC §6.1)."""
    return f"[{command}]: {stderr.strip() or 'No stderr output'}"


def command_hook_failed(event: str, command: str, exit_code: int, stderr: str) -> str:
    """A command hook's non-blocking error: any exit code but 0 and 2 (SPEC §6.1)."""
    detail = stderr.strip() or "no stderr output"
    return f"{event} hook [{command}] failed with exit code {exit_code}: {detail}"


def command_hook_output_ignored(event: str, command: str, problem: str) -> str:
    """Warning when a command hook printed a JSON object that breaks the output protocol."""
    return f"{event} hook [{command}] printed JSON that was ignored: {problem}"


def hook_output_truncated(dropped: int) -> str:
    """Marker appended to hook output cut at the capture limit."""
    return f"\n[hook output truncated: {dropped} more bytes were dropped]"


BLOCKED_BY_HOOK = "Blocked by hook"


def hook_blocked_prompt(reason: str) -> str:
    """Notice when a UserPromptSubmit hook refused the prompt (it never reaches the model)."""
    return f"A UserPromptSubmit hook blocked this prompt: {reason or BLOCKED_BY_HOOK}"


def not_rerun(tool_name: str) -> str:
    """Result for a call that may have run before a crash and is not run again."""
    return (
        f"<tool_use_error>The {tool_name} call was in progress when the run stopped, and may "
        "or may not have taken effect. It was not run again; check its effect before "
        "repeating it.</tool_use_error>"
    )


# --- the runtime: compaction and permission answers -------------------------------------

SUMMARY_REQUEST = (
    "Write a summary of the conversation so far for your own later use: the user's goal, "
    "decisions made, files touched, and what remains to do. Plain text, no preamble."
)


def summary_request(instructions: str) -> str:
    """The summary request, with what PreCompact hooks asked it to keep (SPEC §7.5)."""
    if not instructions.strip():
        return SUMMARY_REQUEST
    return f"{SUMMARY_REQUEST}\n\nInstructions for this summary:\n{instructions.strip()}"


SUMMARY_PREFIX = "This session continues from an earlier conversation, summarised here:\n\n"


def denied_by_rule(tool_name: str) -> str:
    """Denial text when a deny rule names the tool."""
    return f"Permission to use {tool_name} was denied by a rule."


def denied_in_plan_mode(tool_name: str) -> str:
    """Denial text for a call that is not read-only while planning (SPEC §9.1 plan mode)."""
    return (
        f"Permission to use {tool_name} was denied: the agent is in plan mode, where only "
        "read-only tools run. Finish the plan; changes come after it is approved."
    )


def not_granted(tool_name: str, why: str) -> str:
    """Denial text when nobody may be asked (headless, or dontAsk mode)."""
    return f"Permission to use {tool_name} was not granted ({why})."


def permission_not_asked(tool_name: str) -> str:
    """Denial text when asking for permission failed."""
    return f"Permission to use {tool_name} could not be asked."


PERMISSION_TIMED_OUT = "permission callback timed out"
"""The recorded reason of a denial because the permission callback did not answer in time."""


def permission_timed_out(tool_name: str, seconds: float) -> str:
    """Denial text when the permission callback did not answer within its bound."""
    return f"Permission to use {tool_name} was not granted: no answer came within {seconds:g} s."


def tool_timed_out(tool_name: str, seconds: float) -> str:
    """Error result of a tool call that ran past the loop's ``tool_timeout_ms`` bound."""
    return (
        f"{tool_name} did not finish within {seconds:g} s and was cancelled "
        "(tool_timeout_ms); try a smaller task, or a command that finishes sooner."
    )


def persisted_output(size: int, path: str, preview: str, *, more: bool) -> str:
    """What the model sees of a tool result too large to send whole (SPEC §7.1)."""
    ellipsis = "\n..." if more else ""
    return (
        f"<persisted-output>\n"
        f"This result was {size:,} characters long, too large to show here. It was saved to "
        f"{path}; read that file for the rest.\n\n"
        f"Preview (first {len(preview):,} characters):\n{preview}{ellipsis}\n"
        f"</persisted-output>"
    )
