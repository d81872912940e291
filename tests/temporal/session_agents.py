"""Agent factories for the Temporal tests: importable by worker processes by module name.

Each factory takes the session's params as keyword arguments (JSON values), so a test starts a
session with exactly the world it wants, and any worker builds the same agent for it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import attrs
from temporalio.api.common.v1 import Payload
from temporalio.converter import DataConverter, PayloadCodec

from fsm_agent.core.config import LoopConfig
from fsm_agent.core.events import HookOutcome
from fsm_agent.runtime.agent import Agent
from fsm_agent.runtime.attachments import Attachment, AttachmentRequest, AttachmentTiming
from fsm_agent.runtime.hooks import HookInput, Hooks
from fsm_agent.runtime.mcp_tools import McpServer
from fsm_agent.runtime.models import Model, ModelRequest
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
    a dying worker may leave done, with no result recorded. With ``echo_chunk``, it reports
    the line first, in pieces of that many characters (as a command reports its output)."""

    name = "Append"
    description = "Append a line to the ledger."
    input_type = AppendInput

    def __init__(self, linger_s: float = 0.0, echo_chunk: int | None = None) -> None:
        super().__init__()
        self.linger_s = linger_s
        self.echo_chunk = echo_chunk

    async def call(
        self, data: AppendInput, ctx: ToolContext, progress: ProgressCallback
    ) -> ToolOutput:
        if self.echo_chunk is not None:
            for start in range(0, len(data.line), self.echo_chunk):
                progress(data.line[start : start + self.echo_chunk])
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


REQUESTS_LOG = "requests.jsonl"


class RecordingModel:
    """A scripted model that appends each request's messages to :data:`REQUESTS_LOG` in a
    folder (the folder's path written as ``CWD``), so a test compares what the model was
    asked by the in-process driver and by a Temporal session, whichever worker asked."""

    def __init__(self, scripted: ScriptedModel, folder: Path) -> None:
        self.scripted = scripted
        self.name = scripted.name
        self.folder = folder

    def seek(self, requests_before: int) -> None:
        """Play on from the given request, as the scripted model does."""
        self.scripted.seek(requests_before)

    async def count_tokens(self, messages: list[dict[str, Any]], **request: Any) -> int:
        """Count as the scripted model does."""
        return await self.scripted.count_tokens(messages, **request)

    def stream(self, request: ModelRequest) -> AsyncIterator[dict[str, Any]]:
        """Record the request's messages, then stream the scripted answer."""
        line = json.dumps(request.messages, sort_keys=True).replace(str(self.folder), "CWD")
        with (self.folder / REQUESTS_LOG).open("a", encoding="utf-8") as log:
            log.write(line + "\n")
        return self.scripted.stream(request)


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
    echo_chunk: int | None = None,
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
    record_requests: bool = False,
) -> Agent:
    """An agent playing ``steps`` with Read, Write and Append in ``cwd`` (``echo_chunk``: see
    :class:`Append`; ``count_tokens``:
    the exact count is asked before each request; ``snip``: the model may snip old turns;
    ``telemetry``: from a test's own factory, not from JSON params; ``notes``: with the
    :data:`NOTES` providers; ``unsupported``: with a part Temporal refuses, see
    :func:`_unsupported`; ``secrets``: strings the trace must never hold;
    ``record_requests``: each request's messages go to :data:`REQUESTS_LOG` in ``cwd``)."""
    folder = Path(cwd)
    hooks = Hooks(stop=[_stop_once(folder)]) if stop_hook else Hooks()
    options = _unsupported(unsupported)
    model: Model = ScriptedModel(parse_scenario({"steps": steps}), name=MODEL)
    if record_requests:
        model = RecordingModel(model, folder)
    return Agent(
        model=model,
        tools=[Read(), Write(), Append(linger_s, echo_chunk), *options.pop("tools", ())],
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


class SealingCodec(PayloadCodec):
    """Stands in for an encrypting payload codec (``--data-converter session_agents:sealed``):
    each payload is serialized and its bytes flipped, so none of its text is left readable in
    the history, and only a client or worker with this codec reads it back."""

    ENCODING = b"binary/sealed-for-tests"

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [
            Payload(metadata={"encoding": self.ENCODING}, data=_flipped(p.SerializeToString()))
            for p in payloads
        ]

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        opened = []
        for payload in payloads:
            if payload.metadata.get("encoding") != self.ENCODING:
                opened.append(payload)
                continue
            inner = Payload()
            inner.ParseFromString(_flipped(payload.data))
            opened.append(inner)
        return opened


def _flipped(data: bytes) -> bytes:
    return bytes(byte ^ 0xA5 for byte in data)


def sealed() -> DataConverter:
    """The default data converter with :class:`SealingCodec` (a function, as the option allows)."""
    return dataclasses.replace(DataConverter.default, payload_codec=SealingCodec())
