"""Model events must belong to the request in flight; a mix-up is a driver bug, said loudly."""

from __future__ import annotations

import pytest

from fsm_agent.core import events as ev
from fsm_agent.core.agent_core import AgentCore
from fsm_agent.errors import CorePoisoned, UsageError
from fsm_agent.testing.world import open_turn, prompt


def streaming_core() -> tuple[AgentCore, str]:
    core = AgentCore()
    step = open_turn(core.feed, prompt("hi"))
    (call,) = [e for e in step.effects if type(e).__name__ == "CallModel"]
    return core, call.request_id  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "event",
    [
        ev.ModelStreamClosed(request_id="r-old"),
        ev.ModelStreamFailed(request_id="r-old", kind=ev.FailureKind.OVERLOADED),
        ev.ModelStreamEvent(request_id="r-old", event={"type": "message_stop"}),
    ],
)
def test_an_event_for_another_request_is_refused(event: ev.Event) -> None:
    """A stale request's event raises UsageError naming both requests, and poisons the core."""
    core, current = streaming_core()
    with pytest.raises(UsageError, match=f"r-old.*{current}"):
        core.feed(event)
    with pytest.raises(CorePoisoned):
        core.feed(ev.ModelStreamClosed(request_id=current))


def test_feed_stream_refuses_the_same_way() -> None:
    """The fast entry for deltas applies the same rule as feed()."""
    core, _current = streaming_core()
    with pytest.raises(UsageError):
        core.feed_stream("r-old", {"type": "ping"})
