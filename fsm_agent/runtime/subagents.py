"""Child agents: what a subagent is, and running one for a tool call (issue 14).

A :class:`SubagentDefinition` names a kind of child: its system prompt, tools, permission
policy, loop limits and model. :func:`run_subagent` runs one for a tool call of a parent run
(the ``Task`` tool calls it): a fresh :class:`~fsm_agent.runtime.agent.Agent` with its own
core, whose loop runs SubagentStop hooks where a main loop runs Stop (SPEC §6.3), and whose
trace is a file of its own beside the parent's, linked both ways
(:mod:`fsm_agent.runtime.subagent_link`).

* Permissions: the child's questions go to the parent's ``ask`` callback unless its own
  policy has one; the parent's deny rules are added to the child's, so they still win there.
* Limits: :class:`SubagentLimits` bounds how deep subagents nest and what the whole run tree
  may spend (child runs started, tokens used); a refused start is an error result naming the
  limit. Tokens are counted as the children's responses stream in, and a child whose next
  request would start past the token budget fails it (``model_error``, naming the limit).
  The parent's abort cancels the call, which aborts the child through its own core.
* Resume: when the parent's trace shows the call had started a child, the child is picked
  up from its own trace (``Agent.continue_from(resume(...))``), so a side-effecting call the
  child already made is not made again. The tree's budget is read back from the parent's
  and the children's traces (:mod:`fsm_agent.runtime.subagent_spending`), so a resumed run
  keeps its limits.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import attrs

from fsm_agent.core.config import LoopConfig
from fsm_agent.core.events import FailureKind, SubagentStarted
from fsm_agent.core.messages import AssistantMessage, ToolUseBlock
from fsm_agent.core.permission_rules import RuleBehavior
from fsm_agent.core.tables import Phase
from fsm_agent.errors import ConfigError
from fsm_agent.runtime.agent import Agent, MessageUpdate, RunFinished, RunResult, Update
from fsm_agent.runtime.models import Model, ModelFailure, ModelRequest
from fsm_agent.runtime.permissions import PermissionPolicy
from fsm_agent.runtime.server_tools import ServerTool
from fsm_agent.runtime.subagent_link import ParentRun, SubagentBudget
from fsm_agent.runtime.subagent_spending import ResponseTokens
from fsm_agent.runtime.tool import Tool
from fsm_agent.trace.replay import resume


def _positive(_instance: object, attribute: attrs.Attribute[Any], value: int | None) -> None:
    if value is not None and value < 1:
        raise ConfigError(f"SubagentLimits.{attribute.name} must be at least 1, got {value}")


@attrs.frozen(kw_only=True)
class SubagentLimits:
    """Bounds on subagents, checked before a child starts (our addition; SPEC has none).

    Attributes:
        max_depth: how deep subagents may nest: 1 lets the top-level agent start children
            but a child start none; 2 lets children start children, ...
        max_runs: child runs the whole run tree may start.
        max_tokens: input and output tokens the children of the whole tree may use; once
            spent, no further child starts, and a running child's next model request fails.
    """

    max_depth: int = attrs.field(default=1, validator=_positive)
    max_runs: int = attrs.field(default=16, validator=_positive)
    max_tokens: int | None = attrs.field(default=None, validator=_positive)


@attrs.frozen(kw_only=True)
class SubagentDefinition:
    """A kind of child agent the ``Task`` tool may start.

    Attributes:
        description: when to use it, for the model (listed in the ``Task`` tool's description).
        prompt: the child's system prompt.
        tools: the child's tools (none by default: a child that only thinks).
        permissions: the child's own rules and mode; None uses the parent's. Either way the
            parent's deny rules are added, and without an ``ask`` of its own the child asks
            the parent's callback.
        config: the child's loop limits (``max_turns``, timeouts...); None uses the parent's.
        model: the child's model; None uses the parent's.
    """

    description: str
    prompt: str = ""
    tools: Sequence[Tool[Any] | ServerTool] = attrs.field(default=(), converter=tuple)
    permissions: PermissionPolicy | None = None
    config: LoopConfig | None = None
    model: Model | None = None

    @property
    def read_only(self) -> bool:
        """Every tool of the child is read-only whatever its input (``Tool.read_only``)."""
        return all(isinstance(t, Tool) and t.read_only for t in self.tools)


class BudgetedModel:
    """A child's model that counts the tokens of its responses into the tree's budget and
    refuses to start a request once the budget is spent (a ``ModelFailure`` that is not
    retried, so the child ends ``model_error`` with the reason as its last words).

    Args:
        model: the model that answers (its name is this model's name).
        budget: the budget the run tree shares.
        max_tokens: the tree's token budget (None: count only).
    """

    def __init__(
        self, model: Model, *, budget: SubagentBudget, max_tokens: int | None = None
    ) -> None:
        self.model = model
        self.name = model.name
        self.budget = budget
        self.max_tokens = max_tokens

    async def stream(self, request: ModelRequest) -> AsyncIterator[dict[str, Any]]:
        """The answering model's stream, counted; a failure before it once the budget is spent."""
        if self.max_tokens is not None and self.budget.tokens >= self.max_tokens:
            raise ModelFailure(
                kind=FailureKind.OTHER,
                message=(
                    f"the subagents of this run have used {self.budget.tokens} tokens of the "
                    f"{self.max_tokens} they may (SubagentLimits.max_tokens)"
                ),
            )
        counted = ResponseTokens()
        async for event in self.model.stream(request):
            self.budget.tokens += counted.add(event)
            yield event


def refusal(parent: ParentRun, limits: SubagentLimits) -> str | None:
    """Why a child may not start now (a limit, named), or None when it may."""
    if parent.depth + 1 > limits.max_depth:
        return (
            f"subagents may nest {limits.max_depth} level(s) deep (SubagentLimits.max_depth); "
            "this agent is already at that depth: do the task yourself"
        )
    if parent.resume_from is not None:
        # The call's child had started before the crash and is picked up, not started: the
        # budget read back counts it already (its next request still stops at the limit).
        return None
    budget = parent.budget
    if budget.runs >= limits.max_runs:
        return (
            f"this run has started {budget.runs} subagent(s), the most it may "
            "(SubagentLimits.max_runs): do the task yourself"
        )
    if limits.max_tokens is not None and budget.tokens >= limits.max_tokens:
        return (
            f"the subagents of this run have used {budget.tokens} tokens of the "
            f"{limits.max_tokens} they may (SubagentLimits.max_tokens): do the task yourself"
        )
    return None


def child_policy(parent: PermissionPolicy, definition: SubagentDefinition) -> PermissionPolicy:
    """The child's permission policy: its own (or the parent's), with the parent's deny rules
    and, failing one of its own, the parent's ``ask`` callback.

    Rules naming a tool the child lacks are left out (they could never match it, and an
    agent refuses such rules), except a child's own.
    """
    own = definition.permissions
    names = {
        name
        for tool in definition.tools
        if isinstance(tool, Tool)
        for name in (tool.name, *tool.aliases, *tool.inner_tool_names())
    }

    def fits(tool: str) -> bool:
        return tool in names or tool.startswith("mcp__")

    if own is None:
        rules = tuple(rule for rule in parent.rule_set.rules if fits(rule.tool))
        return attrs.evolve(
            parent,
            allow=frozenset(),
            deny=frozenset(),
            ask_rules=frozenset(),
            rules=rules,
        )
    denied = tuple(
        rule
        for rule in parent.rule_set.rules
        if rule.behavior is RuleBehavior.DENY and fits(rule.tool)
    )
    return attrs.evolve(
        own,
        rules=(*own.rules, *denied),
        ask=own.ask if own.ask is not None else parent.ask,
        additional_directories=(*own.additional_directories, *parent.additional_directories),
    )


def child_agent(
    parent: ParentRun, name: str, definition: SubagentDefinition, limits: SubagentLimits
) -> Agent:
    """The agent that runs a child of ``parent`` under definition ``name``."""
    host = parent.agent
    config = definition.config if definition.config is not None else host.config
    trace = parent.child_trace()
    if trace is not None:
        trace.parent.mkdir(parents=True, exist_ok=True)
    store = host.store_target()
    answering = definition.model if definition.model is not None else host.model
    return Agent(
        model=BudgetedModel(answering, budget=parent.budget, max_tokens=limits.max_tokens),
        tools=definition.tools,
        config=attrs.evolve(config, is_subagent=True),  # SPEC §6.3: SubagentStop, not Stop
        hooks=host.hooks,
        permissions=child_policy(host.permissions, definition),
        trace=trace if trace is not None else False,
        cwd=host.cwd,
        system=definition.prompt,
        secrets=host.secrets,
        sleep=host.sleep,
        clock=host.clock,
        price=host.price,
        prompt_caching=host.prompt_caching,
        store=store if store is not None else False,
        subagent=parent.seat_for(name),
        telemetry=host.telemetry,  # its run span nests under the parent's Task call
    )


async def run_subagent(
    parent: ParentRun,
    name: str,
    definition: SubagentDefinition,
    prompt: str,
    progress: Callable[[str], None],
    *,
    limits: SubagentLimits,
) -> RunResult:
    """Run (or, on resume, pick up) the child of one tool call; return how it ended.

    The parent's trace records the child's run id and trace before the child runs. The
    child's tool calls are reported as progress of the parent's call. Cancelling this
    coroutine (the parent's abort) aborts the child through its core, so its trace ends too.
    """
    child = child_agent(parent, name, definition, limits)
    trace = parent.child_trace()
    seat = parent.seat_for(name)
    await parent.announce(
        SubagentStarted(
            call_id=parent.call_id,
            agent=name,
            run_id=seat.run_id(),
            trace=str(trace.absolute()) if trace is not None else None,
        )
    )
    if parent.resume_from is None:  # a picked-up child is counted in the budget read back
        parent.budget.runs += 1
    result: RunResult | None = None
    async for update in _updates(child, parent, prompt):
        if isinstance(update, RunFinished):
            result = update.result
        elif isinstance(update, MessageUpdate) and isinstance(update.message, AssistantMessage):
            for block in update.message.content:
                if isinstance(block, ToolUseBlock):
                    progress(f"{name}: {block.name}")
    assert result is not None  # a run always ends with RunFinished
    return result


def _updates(child: Agent, parent: ParentRun, prompt: str) -> AsyncIterator[Update]:
    """The child's run: picked up from the trace it left when the parent is resumed (unless
    that trace ends before the child's run began), else started from ``prompt``."""
    recorded = parent.resume_from
    if recorded is not None and recorded.is_file() and recorded.stat().st_size > 0:
        point = resume(recorded)
        if point.core.phase != Phase.IDLE.value:
            return child.continue_from(point)
    return child.stream(prompt)
