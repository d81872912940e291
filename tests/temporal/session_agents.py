"""Agent factories for the Temporal tests: importable by worker processes by module name.

Each factory takes the session's params as keyword arguments (JSON values), so a test starts a
session with exactly the world it wants, and any worker builds the same agent for it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from fsm_agent.core.config import LoopConfig
from fsm_agent.core.events import HookOutcome
from fsm_agent.runtime.agent import Agent
from fsm_agent.runtime.attachments import Attachment, AttachmentRequest, AttachmentTiming
from fsm_agent.runtime.hooks import HookInput, Hooks
from fsm_agent.runtime.mcp_tools import McpServer
from fsm_agent.runtime.permissions import PermissionPolicy
from fsm_agent.runtime.subagents import SubagentDefinition
from fsm_agent.runtime.tool import ProgressCallback, Tool, ToolContext, ToolOutput
from fsm_agent.telemetry.config import Telemetry
from fsm_agent.testing.scenario import ScriptedModel, parse_scenario
from fsm_agent.toolbox import Read, Write
from fsm_agent.toolbox.task import Task

MODEL = "scripted-model"
STOP_MARK = "stop-hook-blocked-once"


@attrs.frozen(kw_only=True)
class AppendInput:
    """Parameters of Append."""

    line: str


class Append(Tool[AppendInput]):
    """Appends a line to ``ledger.txt`` and then takes ``linger_s`` seconds: a side effect that
    a dying worker may leave done, with no result recorded."""

    name = "Append"
    description = "Append a line to the ledger."
    input_type = AppendInput

    def __init__(self, linger_s: float = 0.0) -> None:
        super().__init__()
        self.linger_s = linger_s

    async def call(
        self, data: AppendInput, ctx: ToolContext, progress: ProgressCallback
    ) -> ToolOutput:
        with (ctx.cwd / "ledger.txt").open("a", encoding="utf-8") as ledger:
            ledger.write(data.line + "\n")
        progress("appended")
        await asyncio.sleep(self.linger_s)
        return ToolOutput(content=f"appended {data.line!r}")


@attrs.frozen(kw_only=True)
class IterationNote:
    """An attachment provider that says at which iteration it was asked."""

    name: str
    timing: AttachmentTiming

    async def collect(self, request: AttachmentRequest) -> Sequence[Attachment]:
        """One note naming this provider and the iteration."""
        return (Attachment(text=f"{self.name} asked at iteration {request.iteration}"),)


class NoTools:
    """A tool provider that provides nothing (enough to be refused on Temporal)."""

    async def tools(self) -> Sequence[Tool[Any]]:
        """No tools."""
        return ()


NOTES = (
    IterationNote(name="each", timing=AttachmentTiming.EACH_PHASE),
    IterationNote(name="memory", timing=AttachmentTiming.TURN_PREFETCH),
    IterationNote(name="skills", timing=AttachmentTiming.ITERATION_PREFETCH),
)


def _unsupported(part: str | None) -> dict[str, Any]:
    """Agent options the Temporal driver refuses: ``mcp``, ``tool_provider``, ``subagent``."""
    if part == "mcp":
        return {"mcp_servers": [McpServer(name="files", command="true")]}
    if part == "tool_provider":
        return {"tool_providers": [NoTools()]}
    if part == "subagent":
        return {"tools": [Task({"helper": SubagentDefinition(description="helps")})]}
    return {}


def _stop_once(cwd: Path) -> Any:
    """A Stop hook that blocks the first stop of a session (remembered on disk)."""

    def stop(hook_input: HookInput) -> HookOutcome | None:
        del hook_input
        mark = cwd / STOP_MARK
        if mark.exists():
            return None
        mark.write_text("blocked\n", encoding="utf-8")
        return HookOutcome(blocking_errors=("please say it once more",))

    return stop


def scripted(
    *,
    steps: list[dict[str, Any]],
    cwd: str,
    linger_s: float = 0.0,
    stop_hook: bool = False,
    allow: list[str] | None = None,
    deny: list[str] | None = None,
    trace: str | None = None,
    count_tokens: bool = False,
    snip: bool = False,
    telemetry: Telemetry | None = None,
    notes: bool = False,
    unsupported: str | None = None,
    secrets: list[str] | None = None,
) -> Agent:
    """An agent playing ``steps`` with Read, Write and Append in ``cwd`` (``count_tokens``:
    the exact count is asked before each request; ``snip``: the model may snip old turns;
    ``telemetry``: from a test's own factory, not from JSON params; ``notes``: with the
    :data:`NOTES` providers; ``unsupported``: with a part Temporal refuses, see
    :func:`_unsupported`; ``secrets``: strings the trace must never hold)."""
    folder = Path(cwd)
    hooks = Hooks(stop=[_stop_once(folder)]) if stop_hook else Hooks()
    options = _unsupported(unsupported)
    return Agent(
        model=ScriptedModel(parse_scenario({"steps": steps}), name=MODEL),
        tools=[Read(), Write(), Append(linger_s), *options.pop("tools", ())],
        config=LoopConfig(
            model=MODEL, retry_base_ms=1, retry_cap_ms=5, count_tokens=count_tokens, snip=snip
        ),
        hooks=hooks,
        permissions=PermissionPolicy(allow=tuple(allow or ()), deny=tuple(deny or ())),
        cwd=folder,
        trace=trace if trace is not None else False,
        store=False,
        telemetry=telemetry or False,
        attachments=NOTES if notes else (),
        secrets=tuple(secrets or ()),
        **options,
    )
