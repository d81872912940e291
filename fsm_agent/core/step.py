"""What one ``AgentCore.feed`` call returns: the transitions taken and the effects to perform."""

from __future__ import annotations

import attrs

from fsm_agent.core.effects import Effect


@attrs.frozen(kw_only=True)
class TransitionTaken:
    """One row of a table that fired.

    ``machine`` is ``"loop"`` or ``"tool"``; ``call_id`` names the tool call for tool rows.
    """

    machine: str
    name: str
    source: str
    dest: str
    call_id: str | None = None


@attrs.frozen(kw_only=True)
class Step:
    """The outcome of feeding one event.

    Attributes:
        transitions: rows taken, in order (loop and tool-call machines interleaved).
        effects: commands for the driver, in the order they were decided.
        terminal: the terminal reason once the run has ended, else None.
    """

    transitions: tuple[TransitionTaken, ...] = ()
    effects: tuple[Effect, ...] = ()
    terminal: str | None = None
