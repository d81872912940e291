"""The async driver: performs the core's effects and feeds their results back as events.

The driver decides nothing the core could decide. For every effect it starts a task (stream a
model response, validate or call a tool, run hooks, answer a permission question, compact);
each task puts the events it produces into one queue, and the driver feeds them to the core
one at a time, in arrival order — that order is what the trace records, so a replay needs
none of the tasks. Cancellation is structured: ``CancelTool`` cancels the call's task (a
shell subprocess is killed by the tool) and later reports about that call are dropped; a
cancelled ``run``/``stream`` (Ctrl-C) is fed to the core as ``AbortRequested`` first, so every
tool_use still gets its result and the trace ends with an ``end`` record.

:class:`~fsm_agent.runtime.agent.Agent` loads this module when its first run starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import datetime as dt
import functools
import uuid
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from fsm_agent.core import effects as fx
from fsm_agent.core import events as ev
from fsm_agent.core import texts
from fsm_agent.core.agent_core import AgentCore
from fsm_agent.core.messages import Message
from fsm_agent.core.step import Step
from fsm_agent.core.tables import Phase
from fsm_agent.core.tool_spec import ToolSpec
from fsm_agent.errors import UsageError
from fsm_agent.runtime.agent import (
    Agent,
    MessageUpdate,
    ModelFailed,
    RetryScheduled,
    RunFinished,
    RunResult,
    TextDelta,
    ToolProgress,
    TransitionUpdate,
    Update,
    results_folder,
)
from fsm_agent.runtime.attachments import AttachmentCollector, AttachmentRequest
from fsm_agent.runtime.compaction import SummaryCompactor
from fsm_agent.runtime.models import ModelRequest
from fsm_agent.runtime.performing import (
    collapse,
    compaction,
    count_request_tokens,
    grant,
    hook_input,
    is_stale,
    model_request,
    permission_facts,
    permission_failed,
    permission_timed_out,
    persist_results,
    seconds,
    stage_collapse,
    stream_model,
    tool_step,
)
from fsm_agent.runtime.permissions import AskCallback, PermissionRequest
from fsm_agent.runtime.subagent_link import ParentRun, SubagentBudget
from fsm_agent.runtime.subagent_spending import spent_before
from fsm_agent.runtime.tool import Tool, ToolContext
from fsm_agent.runtime.tool_providers import provided_tools
from fsm_agent.trace.location import new_run_id
from fsm_agent.trace.writer import TraceWriter, TracingCore

if TYPE_CHECKING:
    # Imported where they are used: a plain run loads no MCP client, no replay and no store
    # module until it needs one (issue 10).
    from fsm_agent.runtime.conversation_memo import ConversationMemo
    from fsm_agent.runtime.mcp_tools import McpConnection, McpServer, McpTool
    from fsm_agent.telemetry.live import RunTelemetry
    from fsm_agent.trace.replay import ForkPoint, InFlight, ResumePoint


ABORT_ON_FAULT = "fault"
"""``AbortRequested.reason`` fed when the driver itself fails (the ``end`` record names it)."""
_QUESTION: contextvars.ContextVar[fx.AskPermission] = contextvars.ContextVar("fsm_agent_question")
"""The permission question a permission task is answering (each task has its own)."""
_CLOSING_HOOKS_WAIT_S = 5.0
"""How long a finished run waits for its SessionEnd and StopFailure hooks at most."""


async def run_turn(
    agent: Agent,
    messages: Sequence[Message],
    *,
    collector: AttachmentCollector | None = None,
    link: Mapping[str, Any] | None = None,
    memo: ConversationMemo | None = None,
) -> AsyncIterator[Update]:
    """One run of ``agent``'s loop on ``messages`` (``Agent.stream_turn`` explains the
    arguments): connect its MCP servers, ask its tool providers, then drive the core."""
    async with contextlib.AsyncExitStack() as stack:
        connections = await _connect_mcp(agent.mcp_servers, stack)
        run = _Run(
            agent,
            tuple(messages),
            mcp=connections,
            extra_tools=[
                *await _list_mcp_tools(agent, connections),
                *await provided_tools(agent.tool_providers),
            ],
            collector=collector,
            link=link,
            memo=memo,
        )
        async for update in run.run():
            yield update


async def continue_run(
    agent: Agent,
    point: ForkPoint | ResumePoint,
    *,
    rerun: Callable[[InFlight], bool] | None = None,
    carry_session_rules: bool = True,
) -> AsyncIterator[Update]:
    """Carry a recorded run on live from ``point`` (see ``Agent.continue_from``)."""
    run = _Run(agent, (), start=point, rerun=rerun, carry_session_rules=carry_session_rules)
    async for update in run.run():
        yield update


async def _connect_mcp(
    servers: Sequence[McpServer], stack: contextlib.AsyncExitStack
) -> list[McpConnection]:
    """Connect to the run's MCP servers (the MCP client is loaded only when there are any)."""
    if not servers:
        return []
    from fsm_agent.runtime.mcp_tools import connect_all  # noqa: PLC0415 - lazy, see the imports

    return await connect_all(servers, stack)


async def _list_mcp_tools(agent: Agent, connections: Sequence[McpConnection]) -> list[McpTool]:
    """The tools the connected MCP servers offer (none without a connection), less those
    whose names are the agent's own tools'."""
    if not connections:
        return []
    from fsm_agent.runtime.mcp_tools import list_all  # noqa: PLC0415 - lazy, see the imports

    own = {definition["name"] for definition in agent.tool_definitions}
    own.update(alias for tool in agent.tools for alias in tool.aliases)
    return await list_all(connections, reserved=own)


def child_trace(start: ForkPoint | ResumePoint, item: InFlight) -> Path | None:
    """The trace of the child agent an in-flight call had started, if the recording says so
    (a resume only: a fork continues differently, so its children start afresh)."""
    effect = item.effect
    from fsm_agent.trace.replay import ResumePoint  # noqa: PLC0415 - lazy, see the imports

    if not isinstance(start, ResumePoint) or not isinstance(effect, fx.RunToolStep):
        return None
    found: Path | None = None
    for record in start.records:
        event = record.get("event") if record.get("record") == "event" else None
        if (
            isinstance(event, dict)
            and event.get("type") == "SubagentStarted"
            and event.get("call_id") == effect.call_id
            and isinstance(event.get("trace"), str)
        ):
            found = Path(event["trace"])
    return found


class _QueuedMessage:
    """Put in a run's event queue when the user queues a message (not an event: the driver
    looks at it and may feed ``AbortRequested("interrupt")``)."""


_MESSAGE_QUEUED = _QueuedMessage()


class _Run:
    """One run: the core, its trace, the tasks performing effects, and the event queue."""

    def __init__(
        self,
        agent: Agent,
        messages: tuple[Message, ...],
        *,
        start: ForkPoint | ResumePoint | None = None,
        rerun: Callable[[InFlight], bool] | None = None,
        carry_session_rules: bool = True,
        mcp: Sequence[McpConnection] = (),
        extra_tools: Sequence[Tool[Any]] = (),
        collector: AttachmentCollector | None = None,
        link: Mapping[str, Any] | None = None,
        memo: ConversationMemo | None = None,
    ) -> None:
        self.agent = agent
        self.collector = collector or AttachmentCollector(agent.attachments)
        self.interrupted = False
        self.look_at_queue = False
        self.mcp = tuple(mcp)
        self._use_tools(extra_tools)
        self.messages = messages
        self.start = start
        self.rerun = rerun
        # Issue 13: an id unique across folders and machines (a child's is unique in its tree);
        # issue 14: the calls of this run that start child agents share and record it.
        self.run_id = agent.subagent.run_id() if agent.subagent is not None else new_run_id()
        self.trace_path = agent.trace_path(self.run_id, user_turn=self.collector.user_turn)
        self.writer: TraceWriter | None = None
        meta: dict[str, Any] = {
            "started": dt.datetime.now(dt.UTC).isoformat(),
            "model": agent.model.name,
            "run_id": self.run_id,
        }
        if agent.price is not None:
            # The trace carries the price, so the store can tell the run's cost (issue 13).
            meta["price"] = agent.price.to_meta()
        if agent.subagent is not None:
            meta.update(agent.subagent.header_meta())
        meta.update(link or {})  # a turn of a session names its session and previous turn
        if start is not None:
            # Continue a recorded run: its core, and a trace that repeats its prefix.
            if not isinstance(start.core, AgentCore):
                raise UsageError("a fork or resume point must hold an AgentCore")
            self.core = start.core
            if self.trace_path is not None:
                self.writer = start.writer_for(
                    self.trace_path, secrets=agent.secrets, meta=meta, clock=agent.clock
                )
        else:
            self.core = AgentCore(
                config=agent.config,
                tools=self.tool_specs(),
                request_history=memo.request_history if memo is not None else None,
            )
            if self.trace_path is not None:
                self.writer = TraceWriter(
                    self.trace_path,
                    config=agent.config,
                    tools=self.tool_specs(),
                    secrets=agent.secrets,
                    meta=meta,
                    clock=agent.clock,
                    transcript=memo.transcript if memo is not None else None,
                    overwrite=False,  # an earlier run's record is never lost to a new one
                )
        self.feeder: AgentCore | TracingCore = (
            TracingCore(self.core, self.writer) if self.writer is not None else self.core
        )
        self.fault: str | None = None
        # The "allow always" rules of a recorded run (a fork or resume point) are honoured only
        # when the caller carries them over; one given again by a live answer is honoured.
        self.dropped_rules: set[str] = set()
        if start is not None and not carry_session_rules:
            self.dropped_rules = set(self.core.session_permission_rules)
        self.telemetry: RunTelemetry | None = None
        if agent.tracer is not None:
            from fsm_agent.telemetry.live import RunTelemetry  # noqa: PLC0415 - the SDK is optional

            lineage = {} if start is None else {"parent": start.lineage()}
            self.telemetry = RunTelemetry(
                agent.tracer, meta={**meta, **lineage}, secrets=agent.secrets
            )
        self.queue: asyncio.Queue[ev.Event | BaseException | _QueuedMessage] = asyncio.Queue()
        self.tasks: set[asyncio.Task[None]] = set()
        self.call_tasks: dict[str, set[asyncio.Task[None]]] = {}
        self.call_contexts: dict[str, ToolContext] = {}
        self.cancelled_calls: set[str] = set()
        self.effect_calls: dict[str, str] = {}
        self.compactor = SummaryCompactor()
        self.started = agent.clock()
        # SPEC §7.3: wall times ride on events only when time-based microcompact reads them.
        stamping = agent.config.time_based_microcompact
        self.stamp = agent.response_clock.stamp if stamping else None
        self.turns = 0
        self.session_id = uuid.uuid4().hex  # what hooks are told; never part of the trace
        seat = agent.subagent
        if seat is not None:
            self.subagent_budget = seat.budget  # the tree's, counted by the top-level run
        elif start is not None:
            # A continued recording keeps what its children had spent (SubagentLimits).
            self.subagent_budget = spent_before(start.records)
        else:
            self.subagent_budget = SubagentBudget()
        self.resumed_children: dict[str, Path] = {}
        self.announced: dict[str, asyncio.Future[None]] = {}
        self.closing_hooks: set[asyncio.Task[ev.HookOutcome]] = set()
        # The policy whose ``ask`` callback first tells the core a person is being asked.
        policy = agent.permissions
        ask = policy.ask
        self.permissions = policy if ask is None else attrs.evolve(policy, ask=self._telling(ask))

    def _use_tools(self, extra_tools: Sequence[Tool[Any]]) -> None:
        """Take the MCP servers' and tool providers' tools (at the start, and again at each
        refresh)."""
        self.extra_tools = {tool.name: tool for tool in extra_tools}
        self.tool_definitions = [
            *self.agent.tool_definitions,
            *(
                {"name": t.name, "description": t.description, "input_schema": t.input_schema()}
                for t in extra_tools
            ),
        ]

    def tool_specs(self) -> list[ToolSpec]:
        """What the core knows of every tool of this run (local, then MCP)."""
        return [t.spec() for t in (*self.agent.tools, *self.extra_tools.values())]

    def tool(self, name: str) -> Tool[Any] | None:
        """The tool called ``name``: one of the agent's, or an MCP server's."""
        return self.agent.tool(name) or self.extra_tools.get(name)

    def attachment_request(self, iteration: int) -> AttachmentRequest:
        """What attachment providers are told now."""
        return AttachmentRequest(
            cwd=self.agent.cwd,
            messages=self.core.transcript,
            user_turn=self.collector.user_turn,
            iteration=iteration,
        )

    async def _attachments(self, effect: fx.FetchAttachments) -> None:
        # SPEC §1.2 S7: attachments, prefetches and queued messages, then the tool refresh
        # (tools are refreshed between turns; the core is told the new list).
        found = await self.collector.collect(self.attachment_request(effect.turn))
        tools: tuple[ToolSpec, ...] | None = None
        if self.mcp or self.agent.tool_providers:
            before = self.tool_specs()
            self._use_tools(
                [
                    *await _list_mcp_tools(self.agent, self.mcp),
                    *await provided_tools(self.agent.tool_providers),
                ]
            )
            # An MCP list is always recorded (as it always was); a provider's, when it changed.
            if self.mcp or self.tool_specs() != before:
                tools = tuple(self.tool_specs())
        self.queue.put_nowait(
            ev.AttachmentsReady(effect_id=effect.effect_id, messages=tuple(found), tools=tools)
        )

    def _message_queued(self) -> list[Update]:
        """A message was queued: SPEC §2.2 ``interrupt`` stops the tools an interrupt may cancel
        (the others finish); otherwise the message waits for the next attachment phase."""
        queue = self.collector.queue
        if queue is not None and queue.take_stop() and self.core.terminal is None:
            return self._abort("user")  # Session.interrupt: the turn ends, the session goes on
        if self.interrupted or self.core.terminal is not None or not queue:
            return []
        if self.core.phase != Phase.TOOL_EXEC.value:
            return []
        cancellable = any(
            call.spec is not None and call.spec.interrupt_cancels and not call.handed_back
            for call in self.core.tool_calls
        )
        if not cancellable:
            return []
        self.interrupted = True
        return self._abort("interrupt")

    async def run(self) -> AsyncIterator[Update]:
        queue = self.collector.queue
        if queue is not None:
            loop = asyncio.get_running_loop()
            queue.wake = lambda: loop.call_soon_threadsafe(self.queue.put_nowait, _MESSAGE_QUEUED)
        try:
            try:
                if self.start is None:
                    started = ev.TurnStarted(messages=self.messages)
                    for update in self._feed(self.stamp(started) if self.stamp else started):
                        yield update
                else:
                    for update in self._pick_up(self.start):
                        yield update
                while self.core.terminal is None:
                    try:
                        item = await self.queue.get()
                    except asyncio.CancelledError:
                        # Ctrl-C or a cancelled task: abort through the core, then re-raise.
                        for update in self._abort("user"):
                            yield update
                        raise
                    if isinstance(item, BaseException):
                        raise item  # a task failed: handled below, like a fault of our own
                    if isinstance(item, _QueuedMessage):
                        for update in self._message_queued():
                            yield update
                        continue
                    if is_stale(item, self.cancelled_calls, self.effect_calls):
                        continue
                    if self.stamp is not None:
                        item = self.stamp(item)
                    for update in self._feed(item):
                        yield update
                    if isinstance(item, ev.SubagentStarted):
                        recorded = self.announced.pop(item.call_id, None)
                        if recorded is not None and not recorded.done():
                            recorded.set_result(None)
                    if self.look_at_queue:
                        self.look_at_queue = False
                        for update in self._message_queued():
                            yield update
            except Exception as exc:
                # A bug in the driver, the trace writer or a user's callable: abort through
                # the core, so every tool_use is answered, end the trace naming the fault,
                # then raise it.
                for update in self._end_after_fault(exc):
                    yield update
                raise
        finally:
            if queue is not None:
                queue.wake = None
            await self.collector.close()
            await self._stop_tasks()
            if self.telemetry is not None:
                self.telemetry.finish(self.core.terminal, self.core.usage, fault=self.fault)
            if self.writer is not None:
                self.writer.close()
                # Issue 13: the trace is complete before the index hears of it, and the
                # write happens on the store writer's thread: a slow, full or down store
                # never holds the run up, and its failure is logged there.
                store = self.agent.store_target()
                if store is not None and self.trace_path is not None:
                    from fsm_agent.store.background import index_later  # noqa: PLC0415 - lazy

                    index_later(self.trace_path, store, self.agent.secrets)
        self.agent.response_clock.run_ended(self.core.transcript)
        price = self.agent.price
        result = RunResult(
            terminal=self.core.terminal or "",
            messages=self.core.transcript,
            usage=self.core.usage,
            trace_path=self.trace_path,
            turns=self.turns,
            duration_s=self.agent.clock() - self.started,
            cost_usd=price.cost(self.core.usage) if price is not None else None,
        )
        yield RunFinished(result=result)

    def _pick_up(self, start: ForkPoint | ResumePoint) -> list[Update]:
        """Perform what the recorded run left unanswered, then carry on live.

        The order works for a run cut at any line (DESIGN §5 resume): first the calls that may
        have run are answered (never re-run without ``rerun``), then a half-recorded response
        is closed (all of it was recorded) or failed (the core retries it, which withdraws its
        attempt and cancels its calls), and only then is the rest performed — except the
        tool steps that withdrawal has cancelled meanwhile.
        """
        if self.core.terminal is not None:
            recorded_end = any(record.get("record") == "end" for record in start.records)
            if self.writer is not None and not recorded_end:
                # Cut between the step that ended the run and its end record.
                self.writer.write_end(self.core.terminal, self.core.usage)
            return []
        from fsm_agent.trace.replay import ForkPoint  # noqa: PLC0415 - lazy, see the imports

        in_flight = start.outstanding_effects if isinstance(start, ForkPoint) else start.in_flight
        updates: list[Update] = []
        lost_stream: fx.CallModel | None = None
        later: list[fx.Effect] = []
        for item in in_flight:
            effect = item.effect
            if isinstance(effect, fx.CallModel) and self.core.stream_started(effect.request_id):
                lost_stream = effect
            elif item.maybe_side_effects and (child := child_trace(start, item)) is not None:
                # Issue 14: the call had started a child agent, which has a trace of its own:
                # the call is performed again, and picks the child up from that trace.
                assert isinstance(effect, fx.RunToolStep)
                self.resumed_children[effect.call_id] = child
                later.append(effect)
            elif item.maybe_side_effects and not (self.rerun and self.rerun(item)):
                # A call that may have run already is not run again unless the caller says so.
                assert isinstance(effect, fx.RunToolStep)
                not_rerun = ev.ToolCallFinished(
                    call_id=effect.call_id, content=texts.not_rerun(effect.tool_name), is_error=True
                )
                updates.extend(self._feed(not_rerun))
            else:
                later.append(effect)
        if lost_stream is not None:
            updates.extend(self._feed(self._end_of_recorded_stream(lost_stream.request_id)))
        for effect in later:
            stale = isinstance(effect, fx.RunToolStep) and effect.call_id in self.cancelled_calls
            if not stale and self.core.terminal is None:
                if isinstance(effect, fx.CallModel) and effect.attempt == 1:
                    self.turns += 1  # a request sent now, its request_sent in the recording
                self._perform(effect)
        return updates

    def _end_of_recorded_stream(self, request_id: str) -> ev.Event:
        """How a response cut off by the end of the recording ends: closed if it was whole."""
        if self.core.stream_complete(request_id):
            return ev.ModelStreamClosed(request_id=request_id)
        return ev.ModelStreamFailed(
            request_id=request_id,
            kind=ev.FailureKind.CONNECTION,
            message="the stream was cut where the run was picked up",
        )

    def _abort(self, reason: str) -> list[Update]:
        if self.core.terminal is not None or self.core.poisoned:
            return []
        return self._feed(ev.AbortRequested(reason=reason))

    def _end_after_fault(self, exc: Exception) -> list[Update]:
        """Abort through the core and write the ``end`` record naming ``exc``.

        Whatever still fails here is swallowed: ``exc`` is what the caller must see.
        """
        fault = f"{type(exc).__name__}: {exc}"
        self.fault = fault
        if isinstance(self.feeder, TracingCore):
            self.feeder.fault = fault
        updates: list[Update] = []
        with contextlib.suppress(Exception):
            updates = self._abort(ABORT_ON_FAULT)
        writer = self.writer
        if writer is not None and not writer.ended:
            with contextlib.suppress(Exception):
                writer.write_end(self.core.terminal, self.core.usage, fault=fault)
        return updates

    def _feed(self, event: ev.Event) -> list[Update]:
        step: Step = self.feeder.feed(event)
        if self.telemetry is not None:
            self.telemetry.observe(event, step)
        updates: list[Update] = []
        if (
            isinstance(event, ev.ModelStreamEvent)
            and event.event.get("type") == "content_block_delta"
        ):
            delta = event.event.get("delta") or {}
            if delta.get("type") == "text_delta":
                updates.append(TextDelta(text=str(delta.get("text", ""))))
            elif delta.get("type") == "thinking_delta":
                updates.append(TextDelta(text=str(delta.get("thinking", "")), thinking=True))
        elif isinstance(event, ev.ToolProgressReported):
            updates.append(ToolProgress(call_id=event.call_id, text=event.text))
        elif isinstance(event, ev.ModelStreamFailed):
            updates.append(
                ModelFailed(
                    request_id=event.request_id,
                    kind=event.kind.value,
                    message=event.message,
                    status=event.status,
                )
            )
        for transition in step.transitions:
            if transition.name == "result_yielded":
                # The call is over (its result handed to the loop): no step of it reads its
                # context again, and a long session keeps none (issue 10).
                self.call_contexts.pop(transition.call_id or "", None)
            elif transition.name == "request_sent":
                self.turns += 1
            elif transition.name == "tools_requested":
                # A message queued while the response streamed may interrupt these tools.
                self.look_at_queue = True
            elif transition.name == "run_started" and self.collector.providers:
                self.collector.turn_started(self.attachment_request(1))
            elif transition.name == "iteration_started" and self.collector.providers:
                self.collector.iteration_started(
                    self.attachment_request(self.core.state.turn_count)
                )
            updates.append(TransitionUpdate(transition=transition, phase=self.core.phase))
        for effect in step.effects:
            if isinstance(effect, fx.Emit):
                updates.append(MessageUpdate(message=effect.message))
                continue
            if isinstance(effect, fx.CallModel) and effect.attempt > 1:
                updates.append(
                    RetryScheduled(
                        request_id=effect.request_id,
                        attempt=effect.attempt,
                        delay_ms=effect.delay_ms,
                    )
                )
            self._perform(effect)
        return updates

    # --- performing effects ---------------------------------------------------------------------

    def _spawn(self, coro: Any, *, call_id: str | None = None) -> None:
        # Issue 13: a tool call's tasks run with its span current, so a child agent nests.
        context = None
        if call_id is not None and self.telemetry is not None:
            context = self.telemetry.task_context(call_id)
        # The task owns the coroutine: cancelled before it starts, it is closed, not leaked.
        task: asyncio.Task[None] = asyncio.get_running_loop().create_task(coro, context=context)
        self.tasks.add(task)
        task.add_done_callback(self._task_done)
        if call_id is not None:
            self.call_tasks.setdefault(call_id, set()).add(task)
            task.add_done_callback(functools.partial(self._call_task_done, call_id))

    def _task_done(self, task: asyncio.Task[None]) -> None:
        self.tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            # Effects turn every expected failure into an event; anything else is a bug in
            # the driver or in a user's callable, and ends the run loudly (after an abort).
            self.queue.put_nowait(task.exception())  # type: ignore[arg-type]

    def _call_task_done(self, call_id: str, task: asyncio.Task[None]) -> None:
        """Forget a finished task of a tool call, and the call's entry with its last task: a
        long session keeps no finished task (issue 10)."""
        tasks = self.call_tasks.get(call_id)
        if tasks is not None:
            tasks.discard(task)
            if not tasks:
                del self.call_tasks[call_id]

    def _perform(self, effect: fx.Effect) -> None:
        if isinstance(effect, fx.CallModel):
            request = model_request(
                effect,
                system=self.agent.system,
                tool_definitions=self.tool_definitions,
                messages=self.core.api_messages(),
                prompt_caching=self.agent.prompt_caching,
            )
            self._spawn(self._call_model(effect, request))
        elif isinstance(effect, fx.RunToolStep):
            self._spawn(self._tool_step(effect), call_id=effect.call_id)
        elif isinstance(effect, fx.RunHooks):
            if effect.call_id is not None:
                self.effect_calls[effect.effect_id] = effect.call_id
            if effect.hook_event in fx.DETACHED_HOOK_EVENTS:
                if not self.agent.hooks.matchers(effect.hook_event):
                    return
                # The run is ending: nothing waits for these, but they finish before it returns.
                closing = asyncio.get_running_loop().create_task(self._run_hooks(effect))
                self.closing_hooks.add(closing)
            else:
                self._spawn(self._hooks(effect), call_id=effect.call_id)
        elif isinstance(effect, fx.AskPermission):
            self.effect_calls[effect.effect_id] = effect.call_id
            self._spawn(self._permission(effect), call_id=effect.call_id)
        elif isinstance(effect, fx.Compact):
            self._spawn(self._compact(effect))
        elif isinstance(effect, fx.DrainCollapse):
            self._spawn(self._collapse(effect))
        elif isinstance(effect, fx.StageCollapse):
            # The span is read now: the core goes on while it is summarised (SPEC §7.4).
            self._spawn(self._stage_collapse(effect, self.core.messages_for_query()))
        elif isinstance(effect, fx.PersistToolResults):
            messages = self.core.messages_for_query()
            self.queue.put_nowait(
                persist_results(effect, messages, results_folder(self.trace_path))
            )
        elif isinstance(effect, fx.CountTokens):
            self._spawn(self._count_tokens(effect, self.core.api_messages()))
        elif isinstance(effect, fx.FetchAttachments):
            if self.mcp or self.agent.tool_providers or not self.collector.idle:
                self._spawn(self._attachments(effect))
            else:
                self.queue.put_nowait(ev.AttachmentsReady(effect_id=effect.effect_id))
        elif isinstance(effect, fx.CancelTool):
            self.cancelled_calls.add(effect.call_id)
            context = self.call_contexts.get(effect.call_id)
            if context is not None:
                context.abort.set()
            for task in self.call_tasks.pop(effect.call_id, set()):
                task.cancel()

    async def _call_model(self, effect: fx.CallModel, request: ModelRequest) -> None:
        if effect.delay_ms:
            await self.agent.sleep(effect.delay_ms / 1000)
        await stream_model(
            self.agent.model,
            request,
            request_id=effect.request_id,
            idle_timeout_s=self.agent.config.stream_idle_timeout_ms / 1000,
            report=self.queue.put_nowait,
        )

    def _context(self, call_id: str) -> ToolContext:
        context = self.call_contexts.get(call_id)
        if context is None:
            context = self.agent.tool_context(
                self.trace_path,
                extra=self.core.tool_context,
                call_id=call_id,
                parent=ParentRun(
                    agent=self.agent,
                    run_id=self.run_id,
                    trace_path=self.trace_path,
                    call_id=call_id,
                    depth=self.agent.subagent.depth if self.agent.subagent is not None else 0,
                    budget=self.subagent_budget,
                    announce=self._announce,
                    resume_from=self.resumed_children.get(call_id),
                    hidden=self.agent.hidden_paths(self.trace_path),
                ),
            )
            self.call_contexts[call_id] = context
        return context

    async def _announce(self, event: ev.SubagentStarted) -> None:
        """Record that a call started a child; return once the event is in the trace."""
        recorded = asyncio.get_running_loop().create_future()
        self.announced[event.call_id] = recorded
        self.queue.put_nowait(event)
        await recorded

    async def _tool_step(self, effect: fx.RunToolStep) -> None:
        finished = await tool_step(
            self.tool(effect.tool_name),
            effect,
            self._context(effect.call_id),
            timeout_s=seconds(self.agent.config.tool_timeout_ms),
            report=self.queue.put_nowait,
        )
        self.queue.put_nowait(finished)

    async def _hooks(self, effect: fx.RunHooks) -> None:
        outcome = await self._run_hooks(effect)
        self.queue.put_nowait(ev.HooksFinished(effect_id=effect.effect_id, outcome=outcome))

    async def _run_hooks(self, effect: fx.RunHooks) -> ev.HookOutcome:
        told = hook_input(
            effect, session_id=self.session_id, cwd=self.agent.cwd, trace_path=self.trace_path
        )
        seat = self.agent.subagent
        if seat is not None and effect.hook_event is fx.HookEvent.SUBAGENT_STOP:
            # Issue 14: a child's SubagentStop hooks learn its name, run id and trace.
            extra = seat.hook_payload(self.trace_path)
            told = attrs.evolve(told, payload={**told.payload, **extra})
        return await self.agent.hooks.run(
            told, default_timeout_s=seconds(self.agent.config.hook_timeout_ms)
        )

    def _telling(self, ask: AskCallback) -> AskCallback:
        """``ask``, reporting ``PermissionPromptShown`` first (Notification hooks, SPEC §9.6)."""

        def telling(request: PermissionRequest) -> Any:
            effect = _QUESTION.get(None)
            if effect is not None:  # set by the permission task that is asking
                self.queue.put_nowait(ev.PermissionPromptShown(effect_id=effect.effect_id))
            return ask(request)

        return telling

    async def _permission(self, effect: fx.AskPermission) -> None:
        tool = self.tool(effect.tool_name)
        context = self._context(effect.call_id)
        rules = self.core.session_permission_rules
        if self.dropped_rules:
            rules = tuple(rule for rule in rules if rule not in self.dropped_rules)
        check, facts = permission_facts(tool, effect, context, rules)
        limit = seconds(self.agent.config.permission_timeout_ms)
        try:
            async with asyncio.timeout(limit):
                _QUESTION.set(effect)
                decided = await self.permissions.decide(effect, check, facts)
            grant(context, tool, check, facts, decided)
        except TimeoutError:
            assert limit is not None
            # Our bound (LoopConfig.permission_timeout_ms): nobody answered, so no grant.
            decided = permission_timed_out(effect, limit)
        except Exception as exc:  # SPEC §9.6: an exception cancels the call and aborts the turn
            decided = permission_failed(effect, exc)
        self.dropped_rules.difference_update(decided.added_rules)  # given again, live
        self.queue.put_nowait(decided)

    async def _compact(self, effect: fx.Compact) -> None:
        finished = await compaction(
            effect,
            self.compactor,
            self.core.messages_for_query(),
            self.agent.model,
            self.core.model,
        )
        self.queue.put_nowait(finished)

    async def _collapse(self, effect: fx.DrainCollapse) -> None:
        drained = await collapse(
            effect,
            self.compactor,
            self.core.messages_for_query(),
            self.agent.model,
            self.core.model,
        )
        self.queue.put_nowait(drained)

    async def _stage_collapse(
        self, effect: fx.StageCollapse, messages: tuple[Message, ...]
    ) -> None:
        staged = await stage_collapse(
            effect, self.compactor, messages, self.agent.model, self.core.model
        )
        self.queue.put_nowait(staged)

    async def _count_tokens(self, effect: fx.CountTokens, messages: list[dict[str, Any]]) -> None:
        counted = await count_request_tokens(
            effect,
            self.agent.model,
            system=self.agent.system,
            tool_definitions=self.tool_definitions,
            messages=messages,
            timeout_s=self.agent.config.count_tokens_timeout_ms / 1000,
        )
        self.queue.put_nowait(counted)

    async def _stop_tasks(self) -> None:
        pending = [task for task in self.tasks if not task.done()]
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)
        if self.closing_hooks:
            # SessionEnd and StopFailure hooks: each has its own time limit; this bounds the
            # rest (a Python hook that never returns). Their answers change nothing now.
            _, late = await asyncio.wait(self.closing_hooks, timeout=_CLOSING_HOOKS_WAIT_S)
            for overdue in late:
                overdue.cancel()
            await asyncio.gather(*self.closing_hooks, return_exceptions=True)
