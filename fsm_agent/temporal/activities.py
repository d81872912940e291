"""The activities of a Temporal-hosted session: the outside world, performed on a worker.

Each activity performs one kind of effect with the code the in-process driver uses
(:mod:`fsm_agent.runtime.performing`) and returns the events that answer it, as JSON (the
codec's tagged dicts), for the workflow to feed to the core. The agent — model, tools, hooks,
permission policy — lives on the worker: :class:`SessionActivities` builds it with the user's
factory, once per session and worker, from the ``params`` the session was started with.

A worker may die and another may pick the session up; nothing here keeps state a session
needs except as a cache: a scripted model is told where the session is in its script
(:meth:`~fsm_agent.testing.scenario.ScriptedModel.seek`), tool contexts are rebuilt from what
the workflow sends, and the trace file is written at a byte offset, only where it does not
hold those bytes yet, so writing it twice, or late, is harmless.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Any

import attrs
import orjson
from temporalio import activity
from temporalio.exceptions import ApplicationError

from fsm_agent.core import codec
from fsm_agent.core import effects as fx
from fsm_agent.core import events as ev
from fsm_agent.errors import ConfigError, TraceWriteConflict
from fsm_agent.runtime.agent import Agent, results_folder
from fsm_agent.runtime.attachments import AttachmentCollector, AttachmentRequest
from fsm_agent.runtime.compaction import SummaryCompactor
from fsm_agent.runtime.performing import (
    collapse,
    compaction,
    count_request_tokens,
    grant,
    hook_input,
    model_request,
    permission_facts,
    permission_failed,
    persist_results,
    seconds,
    stage_collapse,
    stream_model,
    tool_step,
)
from fsm_agent.runtime.permissions import PermissionAnswer, PermissionRequest
from fsm_agent.runtime.tool import ToolContext
from fsm_agent.store.recording import index_run
from fsm_agent.temporal.named_objects import load_named
from fsm_agent.temporal.workflow import REQUEST_NOT_HELD
from fsm_agent.trace import records
from fsm_agent.trace.placing import TraceOwner, place_chunk
from fsm_agent.trace.redact import Redactor
from fsm_agent.trace.stream_text_holdback import held_back_lines

TELEMETRY_LOGGER = logging.getLogger("fsm_agent.telemetry")
"""Where a session's failed span export is reported (as the in-process driver does)."""

AgentFactory = Callable[..., Agent]
"""Builds the agent of a session; called with the session's ``params`` as keyword arguments."""

_AGENTS_KEPT = 256
"""How many sessions' agents one worker keeps built (the oldest is dropped, and rebuilt if
its session comes back)."""


_RUNS_HELD = 256
"""How many session runs' latest model requests one worker keeps for the next to build on."""


class _Asked(Exception):
    """Raised by the worker's stand-in ``ask`` callback: a person must answer."""

    def __init__(self, request: PermissionRequest) -> None:
        super().__init__(request.tool_name)
        self.request = request


class SessionActivities:
    """The activities of sessions whose agents ``factory`` builds.

    Args:
        factory: returns the agent for a session's ``params`` (keyword arguments); a
            function taking no arguments serves sessions started without params.
        heartbeat_s: how often a running activity tells the server it is alive.
    """

    def __init__(self, factory: AgentFactory, *, heartbeat_s: float = 1.0) -> None:
        self._factory = factory
        self._heartbeat_s = heartbeat_s
        self._agents: collections.OrderedDict[str, Agent] = collections.OrderedDict()
        self._compactor = SummaryCompactor()
        # The latest model request of each session run served here, by workflow run id:
        # its number and messages, which the next request's job may build on.
        self._requests_held: collections.OrderedDict[str, tuple[int, list[dict[str, Any]]]] = (
            collections.OrderedDict()
        )

    def all(self) -> list[Callable[..., Any]]:
        """The activity functions, to register with a worker."""
        return [
            self.describe,
            self.call_model,
            self.tool_step,
            self.run_hooks,
            self.decide_permission,
            self.compact,
            self.count_tokens,
            self.persist_results,
            self.write_trace,
            self.export_spans,
            self.attachments,
        ]

    def agent(self, session: Mapping[str, Any]) -> Agent:
        """The agent of ``session`` (its id and params), built on first use on this worker."""
        key = str(session["id"])
        agent = self._agents.get(key)
        if agent is None:
            params = dict(session.get("params") or {})
            agent = self._factory(**params)
            if not isinstance(agent, Agent):
                raise ConfigError(
                    f"the agent factory returned {type(agent).__name__}, not an Agent"
                )
            if session.get("trace"):
                # The session names its trace (a file or a folder): it overrides the
                # factory's, and decides what tools keep out of, as in-process.
                agent.trace = str(session["trace"])
            refuse_unsupported(agent)
            self._agents[key] = agent
            while len(self._agents) > _AGENTS_KEPT:
                self._agents.popitem(last=False)
        else:
            self._agents.move_to_end(key)
        return agent

    @contextlib.asynccontextmanager
    async def _beating(self) -> AsyncIterator[None]:
        """Heartbeat while the body runs, so a dead worker is noticed (and a cancel heard)."""

        async def beat() -> None:
            while True:
                activity.heartbeat()
                await asyncio.sleep(self._heartbeat_s)

        beater = asyncio.get_running_loop().create_task(beat())
        try:
            yield
        finally:
            beater.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await beater

    # --- the activities --------------------------------------------------------------------

    @activity.defn(name="fsm_agent.describe")
    async def describe(self, session: dict[str, Any]) -> dict[str, Any]:
        """What the workflow needs to build the core: config, tools, the trace file, and the
        hook events some hook is configured for.

        An agent the Temporal driver cannot run fails the session at once (not retried),
        with the ``ConfigError`` naming what it cannot run.
        """
        try:
            agent = self.agent(session)
            path = agent.trace_path()
            if agent.tracer is not None and path is None:
                raise ConfigError(
                    "an agent with telemetry needs a trace on Temporal: the session's spans "
                    "are built from its trace file when it ends (give the agent or the "
                    "session a trace)"
                )
        except ConfigError as exc:
            raise ApplicationError(str(exc), type="ConfigError", non_retryable=True) from exc
        return {
            "config": _plain(agent.config),
            "tools": [_plain(tool.spec()) for tool in agent.tools],
            "trace": str(path) if path is not None else None,
            "hooked": [event.value for event in fx.HookEvent if agent.hooks.matchers(event)],
            "spans": agent.tracer is not None,
            "price": agent.price.to_meta() if agent.price is not None else None,
            "attachments": bool(agent.attachments),
        }

    @activity.defn(name="fsm_agent.call_model")
    async def call_model(self, job: dict[str, Any]) -> list[dict[str, Any]]:
        """Stream one response (``CallModel``); its events, closed or failed at the end."""
        agent = self.agent(job["session"])
        effect = codec.load_effect(job["effect"])
        assert isinstance(effect, fx.CallModel)
        seek = getattr(agent.model, "seek", None)
        if callable(seek):
            seek(int(job["requests_before"]))
        request = model_request(
            effect,
            system=agent.system,
            tool_definitions=agent.tool_definitions,
            messages=self._request_messages(job),
            prompt_caching=agent.prompt_caching,
        )
        found: list[ev.Event] = []
        async with self._beating():
            await stream_model(
                agent.model,
                request,
                request_id=effect.request_id,
                idle_timeout_s=agent.config.stream_idle_timeout_ms / 1000,
                report=found.append,
            )
        return [codec.dump_event(event) for event in found]

    def _request_messages(self, job: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The messages of a model call's request, rebuilt from the request it builds on when
        the job carries only what changed (``base``); kept for the next request of the run.

        Raises:
            ApplicationError: (``RequestNotHeld``, not retried) this worker does not hold the
                request the job builds on; the workflow then sends the request whole.
        """
        run = activity.info().workflow_run_id or str(job["session"]["id"])
        number = int(job["requests_before"])
        base = job.get("base")
        if base is None:
            messages = list(job["messages"])
        else:
            held = self._requests_held.get(run)
            keep = int(base["keep"])
            if held is None or held[0] != int(base["request"]) or len(held[1]) < keep:
                raise ApplicationError(
                    f"this worker does not hold request {base['request']} of the session, "
                    f"which request {number} builds on",
                    type=REQUEST_NOT_HELD,
                    non_retryable=True,
                )
            messages = [*held[1][:keep], *job["messages"]]
        self._requests_held[run] = (number, messages)
        self._requests_held.move_to_end(run)
        while len(self._requests_held) > _RUNS_HELD:
            self._requests_held.popitem(last=False)
        return messages

    def _context(self, agent: Agent, job: Mapping[str, Any]) -> ToolContext:
        trace = job["session"].get("trace_path")
        context = agent.tool_context(Path(trace) if trace else None, extra=job["tool_context"])
        allowed = job.get("grant") or {}
        checked = allowed.get("checked_path")
        context.checked_path = Path(checked) if checked else None
        context.allow_outside = bool(allowed.get("allow_outside"))
        return context

    @activity.defn(name="fsm_agent.tool_step")
    async def tool_step(self, job: dict[str, Any]) -> list[dict[str, Any]]:
        """Validate or run one tool call (``RunToolStep``); progress first, then the result."""
        agent = self.agent(job["session"])
        effect = codec.load_effect(job["effect"])
        assert isinstance(effect, fx.RunToolStep)
        found: list[ev.Event] = []
        async with self._beating():
            done = await tool_step(
                agent.tool(effect.tool_name),
                effect,
                self._context(agent, job),
                timeout_s=seconds(agent.config.tool_timeout_ms),
                report=found.append,
            )
        return [codec.dump_event(event) for event in (*found, done)]

    @activity.defn(name="fsm_agent.run_hooks")
    async def run_hooks(self, job: dict[str, Any]) -> dict[str, Any]:
        """Run the hooks of a ``RunHooks`` effect; ``HooksFinished`` with their combined outcome."""
        agent = self.agent(job["session"])
        effect = codec.load_effect(job["effect"])
        assert isinstance(effect, fx.RunHooks)
        if not agent.hooks.matchers(effect.hook_event):
            return codec.dump_event(ev.HooksFinished(effect_id=effect.effect_id))
        trace = job["session"].get("trace_path")
        told = hook_input(
            effect,
            session_id=str(job["session"]["id"]),
            cwd=agent.cwd,
            trace_path=Path(trace) if trace else None,
        )
        async with self._beating():
            outcome = await agent.hooks.run(
                told, default_timeout_s=seconds(agent.config.hook_timeout_ms)
            )
        return codec.dump_event(ev.HooksFinished(effect_id=effect.effect_id, outcome=outcome))

    @activity.defn(name="fsm_agent.decide_permission")
    async def decide_permission(self, job: dict[str, Any]) -> dict[str, Any]:
        """Run the permission chain for an ``AskPermission`` effect.

        Returns ``{"question": ...}`` when a person must answer and ``job`` holds no
        ``answer`` yet; otherwise ``{"decided": event, "grant": ...}``. The chain is pure
        given the same facts, so asking it again with the answer reaches the same question.
        """
        agent = self.agent(job["session"])
        effect = codec.load_effect(job["effect"])
        assert isinstance(effect, fx.AskPermission)
        tool = agent.tool(effect.tool_name)
        context = self._context(agent, job)
        check, facts = permission_facts(tool, effect, context, tuple(job["session_rules"]))
        answer = job.get("answer")

        def ask(request: PermissionRequest) -> PermissionAnswer:
            if answer is None:
                raise _Asked(request)
            return PermissionAnswer(
                allow=bool(answer["allow"]),
                message=str(answer.get("message") or ""),
                always=bool(answer.get("always")),
            )

        policy = attrs.evolve(agent.permissions, ask=ask)
        try:
            decided = await policy.decide(effect, check, facts)
        except _Asked as asked:
            request = asked.request
            return {
                "question": {
                    "call_id": effect.call_id,
                    "tool_name": request.tool_name,
                    "input": request.input,
                    "message": request.message,
                    "reason": request.reason,
                }
            }
        except Exception as exc:  # SPEC §9.6: an exception cancels the call and aborts the turn
            decided = permission_failed(effect, exc)
        grant(context, tool, check, facts, decided)
        checked = context.checked_path
        return {
            "decided": codec.dump_event(decided),
            "grant": {
                "checked_path": str(checked) if checked is not None else None,
                "allow_outside": context.allow_outside,
            },
        }

    @activity.defn(name="fsm_agent.attachments")
    async def attachments(self, job: dict[str, Any]) -> dict[str, Any]:
        """Ask the agent's attachment providers (``FetchAttachments``); ``AttachmentsReady``.

        Every provider is asked now and waited for (prefetches included: nothing runs
        between phases here). Providers are told the history the next request is built from.
        """
        agent = self.agent(job["session"])
        effect = codec.load_effect(job["effect"])
        assert isinstance(effect, fx.FetchAttachments)
        collector = AttachmentCollector(agent.attachments, numbered=int(job["numbered"]))
        request = AttachmentRequest(
            cwd=agent.cwd,
            messages=tuple(codec.load_message(message) for message in job["messages"]),
            iteration=effect.turn,
        )
        async with self._beating():
            found = await collector.collect_at_once(
                request, turn_prefetch=bool(job["turn_prefetch"])
            )
        return codec.dump_event(
            ev.AttachmentsReady(effect_id=effect.effect_id, messages=tuple(found))
        )

    @activity.defn(name="fsm_agent.compact")
    async def compact(self, job: dict[str, Any]) -> dict[str, Any]:
        """Summarise the history for a ``Compact``, ``DrainCollapse`` or ``StageCollapse``."""
        agent = self.agent(job["session"])
        effect = codec.load_effect(job["effect"])
        history = [codec.load_message(message) for message in job["messages"]]
        async with self._beating():
            if isinstance(effect, fx.Compact):
                done: ev.Event = await compaction(
                    effect, self._compactor, history, agent.model, job["model"]
                )
            elif isinstance(effect, fx.StageCollapse):
                done = await stage_collapse(
                    effect, self._compactor, history, agent.model, job["model"]
                )
            else:
                assert isinstance(effect, fx.DrainCollapse)
                done = await collapse(effect, self._compactor, history, agent.model, job["model"])
        return codec.dump_event(done)

    @activity.defn(name="fsm_agent.count_tokens")
    async def count_tokens(self, job: dict[str, Any]) -> dict[str, Any]:
        """Count the input tokens of the request about to be sent (``CountTokens``)."""
        agent = self.agent(job["session"])
        effect = codec.load_effect(job["effect"])
        assert isinstance(effect, fx.CountTokens)
        counted = await count_request_tokens(
            effect,
            agent.model,
            system=agent.system,
            tool_definitions=agent.tool_definitions,
            messages=job["messages"],
            timeout_s=agent.config.count_tokens_timeout_ms / 1000,
        )
        return codec.dump_event(counted)

    @activity.defn(name="fsm_agent.persist_results")
    async def persist_results(self, job: dict[str, Any]) -> dict[str, Any]:
        """Save the tool results the budget chose beside the trace (``PersistToolResults``)."""
        effect = codec.load_effect(job["effect"])
        assert isinstance(effect, fx.PersistToolResults)
        trace = job["session"].get("trace_path")
        messages = [codec.load_message(message) for message in job["messages"]]
        folder = results_folder(Path(trace) if trace else None)
        return codec.dump_event(persist_results(effect, messages, folder))

    @activity.defn(name="fsm_agent.write_trace")
    async def write_trace(self, job: dict[str, Any]) -> int:
        """Write trace bytes at an offset and return where the file now ends; index when ended.

        The lines were made by the workflow; the agent's secrets, which the workflow never
        sees, are redacted here, so a chunk may take more or fewer bytes in the file than in
        the workflow: the workflow starts its next chunk where this one ended.

        Writing is idempotent and never cuts the file (see :mod:`fsm_agent.trace.placing`):
        an attempt of a local activity may still be running, or be retried, after later
        chunks landed, and then finds its bytes in place and changes nothing. A chunk
        that does not fit (an earlier chunk missing, other bytes at its offset) fails the
        write for good, naming the trace and the offset: retrying cannot make it fit. A run
        made by a workflow reset (``superseding``), or a write that finds this session's own
        trace going on differently (written by a workflow task that failed and was retried,
        whose local activities ran), instead keeps the file's bytes beside it and writes its
        own from where the two part.
        """
        agent = self.agent(job["session"])
        path = Path(job["path"])
        redactor = Redactor(agent.secrets)
        data = bytearray()
        lines = str(job["data"]).encode().splitlines(keepends=True)
        # A secret the model streamed over several pieces is made whole in one first.
        for line in held_back_lines(lines, redactor.spellings):
            if redactor.holds_secret(line):
                line = records.dumps(redactor.value(orjson.loads(line))) + b"\n"  # noqa: PLW2901
            data += line
        ended = bool(job.get("ended"))
        superseding = bool(job.get("superseding"))
        owner = job.get("owner") or {}
        try:
            end = place_chunk(
                path,
                int(job["offset"]),
                bytes(data),
                ended=ended,
                superseding=superseding,
                owner=TraceOwner(run_id=str(owner["run_id"]), started=str(owner["started"]))
                if owner
                else None,
            )
        except TraceWriteConflict as exc:
            raise ApplicationError(str(exc), type="TraceWriteConflict", non_retryable=True) from exc
        if ended:
            store = agent.store_target()
            if store is not None:
                index_run(path, store, agent.secrets)
        return end

    @activity.defn(name="fsm_agent.export_spans")
    async def export_spans(self, job: dict[str, Any]) -> None:
        """Build the OpenTelemetry spans of the ended session from its trace file, with the
        agent's tracer: the spans the in-process driver gives, once for the whole session
        (every run of it). A failure is logged, never raised: telemetry never fails a run."""
        agent = self.agent(job["session"])
        if agent.tracer is None:
            return
        from fsm_agent.telemetry.export import build_trace_spans  # noqa: PLC0415 - optional SDK

        try:
            build_trace_spans(Path(job["path"]), agent.tracer)
        except Exception as exc:  # the session has ended well; only its spans are lost
            TELEMETRY_LOGGER.warning(
                "the spans of session %s were not exported (%s: %s); its trace is unaffected",
                job["session"]["id"],
                type(exc).__name__,
                exc,
            )


def refuse_unsupported(agent: Agent) -> None:
    """Refuse an agent with parts the Temporal driver cannot run, naming them and why.

    Raises:
        ConfigError: the agent has MCP servers, tool providers or subagents (a ``Task`` tool).
    """
    from fsm_agent.toolbox.task import Task  # noqa: PLC0415 - only this check needs it

    if agent.mcp_servers:
        raise ConfigError(
            "an agent with MCP servers cannot run on Temporal yet: an MCP connection lives in "
            "one process, and a session's tool calls run on any worker"
        )
    if agent.tool_providers:
        raise ConfigError(
            "an agent with tool providers cannot run on Temporal yet: the tools a provider "
            "gives live in one worker's process, and a session's calls run on any worker"
        )
    if any(isinstance(tool, Task) for tool in agent.tools):
        raise ConfigError(
            "an agent with subagents (the Task tool) cannot run on Temporal yet: a child "
            "agent would run inside one tool activity, neither durable nor resumable, where "
            "it should be a child workflow"
        )


def load_factory(spec: str) -> AgentFactory:
    """The factory named ``module:function`` (``fsm-agent worker --factory``).

    Raises:
        ConfigError: the spec is malformed, the module cannot be imported, or the name is
            missing or not callable.
    """
    factory = load_named(spec, option="--factory", kind="function", example="mypkg.agents:make")
    if not callable(factory):
        module_name, _, name = spec.partition(":")
        raise ConfigError(f"--factory {spec!r}: {module_name} has no function {name!r}")
    return factory  # type: ignore[no-any-return]


def default_factory(*, cwd: str | None = None) -> Agent:
    """The built-in coding agent: Claude (``ANTHROPIC_API_KEY``, ``FSM_AGENT_MODEL``) with the
    built-in tools, in ``cwd`` (default: the worker's folder)."""
    from fsm_agent.runtime.models import AnthropicModel  # noqa: PLC0415 - the SDK is slow
    from fsm_agent.toolbox import default_tools  # noqa: PLC0415

    key = os.environ.get("ANTHROPIC_API_KEY")
    if not key:
        raise ConfigError("ANTHROPIC_API_KEY is not set on the worker, so Claude cannot be reached")
    model = AnthropicModel(name=os.environ.get("FSM_AGENT_MODEL", "claude-sonnet-4-6"), api_key=key)
    return Agent(model=model, tools=default_tools(), cwd=cwd)


def _plain(value: object) -> dict[str, Any]:
    """An attrs value (config, tool spec, hook outcome) as the codec's JSON dict."""
    data: dict[str, Any] = codec.converter().unstructure(value)
    return data
