"""Task: hand a sub-task to a child agent and return its answer (issue 14).

The model picks one of the named :class:`~fsm_agent.runtime.subagents.SubagentDefinition`
entries (``subagent_type``) and gives it a prompt; the child runs with its own core, tools,
permission policy and limits (:func:`~fsm_agent.runtime.subagents.run_subagent`), and its
final text is the call's result. A child that ends any other way than ``completed`` gives an
error result naming how it ended. A call runs beside other calls exactly when every tool of
its child is read-only.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from fsm_agent.core.messages import ApiErrorMessage
from fsm_agent.errors import ConfigError
from fsm_agent.runtime.subagents import (
    SubagentDefinition,
    SubagentLimits,
    refusal,
    run_subagent,
)
from fsm_agent.runtime.tool import ProgressCallback, Tool, ToolContext, ToolOutput


@attrs.frozen(kw_only=True)
class TaskInput:
    """Parameters of Task."""

    description: str = attrs.field(
        metadata={"description": "A short (3 to 5 words) description of the task."}
    )
    prompt: str = attrs.field(
        metadata={"description": "The task for the subagent, with everything it needs to know."}
    )
    subagent_type: str = attrs.field(
        metadata={"description": "The name of the subagent to hand the task to."}
    )


class Task(Tool[TaskInput]):
    """Runs a child agent on a sub-task; its final text is the result.

    Args:
        agents: the subagents the model may start, by name.
        limits: how deep subagents nest and what the whole run tree may spend on them.

    Raises:
        ConfigError: no subagent is given, or a name is empty.
    """

    name = "Task"
    input_type = TaskInput

    def __init__(
        self,
        agents: Mapping[str, SubagentDefinition],
        *,
        limits: SubagentLimits | None = None,
    ) -> None:
        if not agents:
            raise ConfigError("Task needs at least one subagent definition in agents={...}")
        for key, definition in agents.items():
            if not isinstance(key, str) or not key.strip():
                raise ConfigError(f"Task: a subagent name must be a non-empty string, got {key!r}")
            if not isinstance(definition, SubagentDefinition):
                raise ConfigError(
                    f"Task: subagent {key!r} must be a SubagentDefinition, "
                    f"got {type(definition).__name__}"
                )
        self.agents = dict(agents)
        self.limits = limits if limits is not None else SubagentLimits()
        listed = "\n".join(f"- {key}: {d.description}" for key, d in self.agents.items())
        self.description = (
            "Hand a self-contained task to a subagent, which works on it with its own tools "
            "and returns its final answer. Give it everything it needs in the prompt: it sees "
            f"nothing of this conversation. Subagents (subagent_type):\n{listed}"
        )
        super().__init__()

    def inner_tool_names(self) -> tuple[str, ...]:
        """Every tool any of the subagents has (and the tools those reach in turn)."""
        names: dict[str, None] = {}
        for definition in self.agents.values():
            for inner in definition.tools:
                if isinstance(inner, Tool):
                    names.update(dict.fromkeys((inner.name, *inner.aliases)))
                    names.update(dict.fromkeys(inner.inner_tool_names()))
        return tuple(names)

    async def validate_input(self, data: TaskInput, ctx: ToolContext) -> str | None:
        """An unknown subagent is refused, listing the known ones."""
        if data.subagent_type not in self.agents:
            known = ", ".join(sorted(self.agents))
            return f"no subagent named {data.subagent_type!r}; the subagents are: {known}"
        if not data.prompt.strip():
            return "the prompt is empty: say what the subagent should do"
        return None

    def is_concurrency_safe(self, data: TaskInput) -> bool:
        """Safe exactly when every tool of the child is read-only."""
        return self.is_read_only(data)

    def is_read_only(self, data: TaskInput) -> bool:
        """Read-only exactly when every tool of the child is."""
        definition = self.agents.get(data.subagent_type)
        return definition is not None and definition.read_only

    async def call(
        self, data: TaskInput, ctx: ToolContext, progress: ProgressCallback
    ) -> ToolOutput:
        """Run the child; its final text, or an error naming how it ended."""
        parent = ctx.parent
        if parent is None:
            return ToolOutput(content="Task runs only inside an Agent run", is_error=True)
        refused = refusal(parent, self.limits)
        if refused is not None:
            return ToolOutput(content=refused, is_error=True)
        name = data.subagent_type
        result = await run_subagent(
            parent, name, self.agents[name], data.prompt, progress, limits=self.limits
        )
        if result.terminal != "completed":
            # A child that ended on an API error (or on a refusal of the token budget) says
            # why in its last message, which is no assistant text.
            last = result.messages[-1] if result.messages else None
            words = last.text if isinstance(last, ApiErrorMessage) else result.text
            said = f"; its last words: {words}" if words else ""
            return ToolOutput(
                content=f"the subagent {name!r} ended with {result.terminal}{said}",
                is_error=True,
            )
        return ToolOutput(content=result.text or f"(the subagent {name!r} gave no answer)")
