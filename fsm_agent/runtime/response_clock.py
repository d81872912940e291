"""Wall time for time-based microcompact (SPEC §7.3): stamped on events, never read by the core.

The core decides from times carried by events: when a turn starts (``TurnStarted``), when a
response ended (``ModelStreamClosed``), when the next iteration starts (``AttachmentsReady``).
This stamps them as the driver feeds them, and remembers, across the runs of one agent, when
the last response of a run was made, so that a run that carries that transcript on (the same
message objects, as ``RunResult.messages`` gives them) starts knowing how long the pause was.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

import attrs

from fsm_agent.core import events as ev
from fsm_agent.core.messages import AssistantMessage, Message

__all__ = ["ResponseClock"]

E = TypeVar("E", bound=ev.Event)


def _last_response(messages: Sequence[Message]) -> AssistantMessage | None:
    return next((m for m in reversed(messages) if isinstance(m, AssistantMessage)), None)


class ResponseClock:
    """Stamps events with ``wall_clock()`` (epoch seconds) and remembers the last response.

    Example:
        >>> clock = ResponseClock(lambda: 100.0)
        >>> clock.stamp(ev.ModelStreamClosed(request_id="r1")).wall_time
        100.0
    """

    def __init__(self, wall_clock: Callable[[], float]) -> None:
        self._wall_clock = wall_clock
        self._response_ended: float | None = None
        self._last: tuple[AssistantMessage, float] | None = None

    def stamp(self, event: E) -> E:
        """``event`` with the wall time, if it is one of the events that carry it."""
        if isinstance(event, ev.ModelStreamClosed):
            self._response_ended = self._wall_clock()
            return attrs.evolve(event, wall_time=self._response_ended)
        if isinstance(event, ev.AttachmentsReady):
            return attrs.evolve(event, wall_time=self._wall_clock())
        if isinstance(event, ev.TurnStarted):
            last = _last_response(event.messages)
            known = self._last is not None and last is not None and last is self._last[0]
            return attrs.evolve(
                event,
                wall_time=self._wall_clock(),
                last_response_wall_time=self._last[1] if known and self._last else None,
            )
        return event

    def run_ended(self, transcript: Sequence[Message]) -> None:
        """Remember when the last response of a finished run's transcript was made."""
        last = _last_response(transcript)
        if last is not None and self._response_ended is not None:
            self._last = (last, self._response_ended)
