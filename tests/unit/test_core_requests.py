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


def _response(request_id: str) -> list[ev.ModelStreamEvent]:
    raws: list[dict[str, object]] = [
        {"type": "message_start", "message": {"id": "msg_1", "model": "m", "usage": {}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text"}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "ok"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {}},
        {"type": "content_block_delta", "index": 9, "delta": {"type": "text_delta", "text": "x"}},
    ]
    return [ev.ModelStreamEvent(request_id=request_id, event=raw) for raw in raws]


def test_stream_events_give_the_same_steps_by_every_entry() -> None:
    """feed(event), feed_stream(parts) and feed_stream(parts, event=event) take each delta
    alike, a malformed one (the model_error row) included."""
    steps = []
    for entry in ("feed", "parts", "parts and event"):
        core, current = streaming_core()
        taken = []
        for event in _response(current):
            if entry == "feed":
                taken.append(core.feed(event))
            elif entry == "parts":
                taken.append(core.feed_stream(event.request_id, event.event))
            else:
                taken.append(core.feed_stream(event.request_id, event.event, event=event))
        assert core.terminal == "model_error"
        steps.append(taken)
    assert steps[0] == steps[1] == steps[2]
