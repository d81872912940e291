"""How a run and the child agents its tool calls start know of each other.

A child agent (a subagent, started by the ``Task`` tool) is a run of its own: its own core,
tools, permission policy, limits and trace file. Two small records tie it to its parent:

* :class:`ParentRun`, which the driver puts in the ``ToolContext`` of every tool call: the
  run the call belongs to (its agent, run id and trace), the call's id, how deep in the tree
  of subagents the run sits, the budget the whole tree shares, how to record that a child
  started (an event in the parent's trace), and — when a crashed run is resumed — the trace
  of the child that call had started;
* :class:`SubagentSeat`, which the child agent is built with: its definition's name, its
  depth, the shared budget, and the parent run and call. The child's trace header names them
  (``meta.subagent_of``) and its SubagentStop hooks are told its name, id and trace.

The links go both ways: the parent's ``SubagentStarted`` event names the child's run id and
trace, the child's header names the parent's run id, trace and call id.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from fsm_agent.core.events import SubagentStarted

if TYPE_CHECKING:
    from fsm_agent.runtime.agent import Agent

SUBAGENT_META = "subagent_of"
"""The header ``meta`` key of a child's trace: ``run_id``, ``trace`` and ``call_id`` of the
parent, and ``agent``, the name of the child's definition."""


@attrs.define(kw_only=True)
class SubagentBudget:
    """What the subagents of one run tree have used so far (shared by the whole tree).

    Attributes:
        runs: child runs started.
        tokens: input and output tokens of the children's responses so far.
    """

    runs: int = 0
    tokens: int = 0


@attrs.frozen(kw_only=True)
class SubagentSeat:
    """Where a child agent sits: what it was started as, and by which run and call.

    Attributes:
        name: the name of the child's definition (``subagent_type``).
        depth: 1 for a child of the top-level agent, 2 for a grandchild, ...
        budget: the budget the whole tree shares.
        parent_run_id: the run id of the parent.
        parent_trace: the parent's trace file (None when it is not traced).
        call_id: the parent's tool call that runs this child.
        hidden: what the parent's Glob and Grep never list (its traces); the child's never
            list them either.
    """

    name: str
    depth: int
    budget: SubagentBudget
    parent_run_id: str
    parent_trace: Path | None
    call_id: str
    hidden: tuple[Path, ...] = ()

    def run_id(self) -> str:
        """The child's run id: unique in the tree, since a call id is unique in its run."""
        return f"{self.parent_run_id}.{self.call_id}"

    def header_meta(self) -> dict[str, Any]:
        """What the child's trace header records about the child (``meta``)."""
        return {
            "run_id": self.run_id(),
            SUBAGENT_META: {
                "agent": self.name,
                "run_id": self.parent_run_id,
                "trace": (
                    str(self.parent_trace.absolute()) if self.parent_trace is not None else None
                ),
                "call_id": self.call_id,
            },
        }

    def hook_payload(self, trace: Path | None) -> dict[str, Any]:
        """What the child's SubagentStop hooks are told besides the stop fields (SPEC §6.3):
        the agent's name (their matchers test it), its run id and its trace."""
        return {
            "agent_type": self.name,
            "agent_id": self.run_id(),
            "agent_transcript_path": str(trace) if trace is not None else None,
        }


@attrs.frozen(kw_only=True)
class ParentRun:
    """What a tool call knows of the run it belongs to (``ToolContext.parent``).

    Attributes:
        agent: the agent of the run (its model, hooks, permissions, working folder, trace
            and store settings are what a child starts from).
        run_id: the run's id (its trace file's stem, or a fresh id when it is not traced).
        trace_path: the run's trace file, None when it is not traced.
        call_id: the tool call.
        depth: 0 for the top-level agent, 1 inside a subagent, ...
        budget: the budget the whole run tree shares.
        announce: records that the call started a child (a ``SubagentStarted`` event in the
            run's trace); it returns once the event is on file, before the child runs.
        resume_from: when a crashed run is resumed, the trace of the child this call had
            started: the child is picked up from it rather than run again.
        hidden: what the run's Glob and Grep never list (its traces).
    """

    agent: Agent
    run_id: str
    trace_path: Path | None
    call_id: str
    depth: int
    budget: SubagentBudget
    announce: Callable[[SubagentStarted], Awaitable[None]]
    resume_from: Path | None = None
    hidden: tuple[Path, ...] = ()

    def seat_for(self, name: str) -> SubagentSeat:
        """The seat of a child started by this call under definition ``name``."""
        return SubagentSeat(
            name=name,
            depth=self.depth + 1,
            budget=self.budget,
            parent_run_id=self.run_id,
            parent_trace=self.trace_path,
            call_id=self.call_id,
            hidden=self.hidden,
        )

    def child_trace(self) -> Path | None:
        """Where the child's trace goes: ``<run trace stem>.subagents/<call id>.jsonl`` beside
        the run's trace (None when the run is not traced, so neither is the child)."""
        if self.trace_path is None:
            return None
        folder = self.trace_path.parent / f"{self.trace_path.stem}.subagents"
        # A call id comes from the model's response: keep it to one plain file name.
        return folder / f"{re.sub(r'[^A-Za-z0-9_-]', '_', self.call_id)}.jsonl"
