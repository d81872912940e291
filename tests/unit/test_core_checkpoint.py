"""Core checkpoints: every attribute accounted for, taken only at a request boundary, and a
restored core answering its request as the original would."""

from __future__ import annotations

import pytest

from fsm_agent.core import codec
from fsm_agent.core import effects as fx
from fsm_agent.core import events as ev
from fsm_agent.core.agent_core import AgentCore
from fsm_agent.core.checkpoint import CARRIED, NOT_CARRIED, CoreCheckpoint
from fsm_agent.core.config import LoopConfig
from fsm_agent.errors import UsageError
from fsm_agent.testing.world import prompt


def _asking() -> AgentCore:
    """A core that has asked for its first model response (its start hooks answered)."""
    core = AgentCore(config=LoopConfig())
    step = core.feed(ev.TurnStarted(messages=prompt("hi")))
    while not core.at_request_boundary:
        hooks = next(e for e in step.effects if isinstance(e, fx.RunHooks))
        step = core.feed(ev.HooksFinished(effect_id=hooks.effect_id))
    return core


def test_every_core_attribute_is_carried_or_left_out_on_purpose() -> None:
    """A new attribute of AgentCore must be added to CARRIED or NOT_CARRIED (with a reason)."""
    core = AgentCore()
    # The core keeps its fields in slots: every one is set by __init__, and a new one must be
    # declared there, so the slots are the full list.
    attributes = set(AgentCore.__slots__)
    assert all(hasattr(core, name) for name in attributes)
    assert not hasattr(core, "__dict__")
    assert not CARRIED & NOT_CARRIED
    assert attributes == CARRIED | NOT_CARRIED


def test_a_checkpoint_outside_a_request_boundary_is_refused() -> None:
    """Before any request, or once the response has begun, checkpoint() raises a UsageError."""
    core = AgentCore(config=LoopConfig())
    with pytest.raises(UsageError, match="right after a model request"):
        core.checkpoint()
    core = _asking()
    assert core.at_request_boundary
    start = {"type": "message_start", "message": {"id": "msg_1", "model": "m", "usage": {}}}
    core.feed(ev.ModelStreamEvent(request_id="r1", event=start))
    assert not core.at_request_boundary
    with pytest.raises(UsageError, match="phase 'streaming'"):
        core.checkpoint()


def test_a_restored_core_waits_for_the_same_request() -> None:
    """The restored core is streaming, waits for request r1, and numbers what follows on."""
    core = _asking()
    checkpoint = core.checkpoint()
    data = codec.converter().unstructure(checkpoint)
    restored = AgentCore.restore(
        codec.converter().structure(data, CoreCheckpoint), config=core.config
    )
    assert restored.phase == "streaming"
    assert restored.transcript == ()
    assert restored.state == core.state
    assert restored.api_messages() == core.api_messages()
    failed = ev.ModelStreamFailed(request_id="r1", kind=ev.FailureKind.OVERLOADED, message="x")
    ours, theirs = core.feed(failed), restored.feed(failed)
    assert ours == theirs
    assert any(isinstance(e, fx.CallModel) and e.request_id == "r2" for e in theirs.effects)
