"""Tool calls a continuation must not run: their input is known only as the trace holds it.

A fork or resume rebuilds its core from the trace (DESIGN §5), whose records are redacted
(DESIGN §8): a credential in a tool call's input reads as its mask there (``[REDACTED]``,
padded with ``*`` to the credential's length), and so does it in the rebuilt core's call. Run
again from the trace, such a call would run with the mask where its argument was, so
carrying the run on refuses instead, before anything is performed: the caller learns which
calls and why, and nothing has run.

A call counts when the continuation would run its tool: it has not been called yet (queued,
validating, in its pre-hooks or permission check), or its call was in flight and is run again
(``rerun``). A call that is answered with the "not run again" error is not run, nor are the
calls of a half-received response, which the core retries, cancelling them. Any
``[REDACTED]`` in a string of the input counts (every mask begins with it, padded or not), a
value under a credential's key name or a configured secret replaced inside a longer string
alike; an input that held that text from the start is refused as well (the trace cannot tell
the two apart).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from fsm_agent.core import effects as fx
from fsm_agent.core.tables import CallState
from fsm_agent.trace.redact import REDACTED

if TYPE_CHECKING:
    from fsm_agent.core.tool_calls import ToolCall
    from fsm_agent.trace.replay import ForkPoint, InFlight, ResumePoint

_NOT_CALLED: Final = frozenset(
    state.value
    for state in (CallState.QUEUED, CallState.VALIDATING, CallState.PRE_HOOKS, CallState.PERMISSION)
)
_CALLING: Final = CallState.RUNNING.value


def calls_with_redacted_input(
    point: ForkPoint | ResumePoint,
    in_flight: tuple[InFlight, ...],
    rerun: Callable[[InFlight], bool],
    answered_elsewhere: Callable[[InFlight], bool],
) -> tuple[ToolCall, ...]:
    """The calls of ``point``'s core that carrying it on would run with an input holding
    ``[REDACTED]``, in call order.

    Args:
        point: the fork or resume point.
        in_flight: its effects that no event answered.
        rerun: whether an in-flight call that may have run is run again.
        answered_elsewhere: whether an in-flight call that may have run is picked up some
            other way than by running it (a child agent's call, resumed from its own trace);
            ``rerun`` is not asked about it.
    """
    core: Any = point.core
    if core.terminal is not None:
        return ()
    not_rerun: set[str] = set()
    for item in in_flight:
        effect = item.effect
        if isinstance(effect, fx.CallModel) and core.stream_started(effect.request_id):
            if not core.stream_complete(effect.request_id):
                return ()  # the response is retried: its calls are cancelled, none runs
        elif (
            isinstance(effect, fx.RunToolStep)
            and item.maybe_side_effects
            and not answered_elsewhere(item)
            and not rerun(item)
        ):
            not_rerun.add(effect.call_id)
    return tuple(
        call
        for call in core.tool_calls
        if (call.state in _NOT_CALLED or (call.state == _CALLING and call.call_id not in not_rerun))
        and _holds_redacted(call.input)
    )


def refusal(calls: tuple[ToolCall, ...]) -> str:
    """Why carrying the run on is refused, naming ``calls``."""
    named = ", ".join(f"{call.tool_name} ({call.call_id})" for call in calls)
    return (
        f"not carried on: the tool call {named} would run with an input the trace holds "
        f"redacted ({REDACTED} where a credential was), not with its real arguments; "
        "nothing was run"
    )


def _holds_redacted(value: object) -> bool:
    """Whether a string anywhere in a JSON-like value holds :data:`REDACTED` (the start of
    every mask, :func:`~fsm_agent.trace.redact.mask`), a key included."""
    pending = [value]
    while pending:
        current = pending.pop()
        if isinstance(current, str):
            if REDACTED in current:
                return True
        elif isinstance(current, dict):
            pending += current.keys()
            pending += current.values()
        elif isinstance(current, list | tuple):
            pending += current
    return False
