"""The session workflow: the pure core hosted by Temporal.

The core reads no clock, draws no random number and does no I/O (DESIGN §1), which is what
Temporal asks of workflow code, so the workflow holds the core itself: it feeds events one at
a time and turns every effect into an activity (:mod:`fsm_agent.temporal.activities`) whose
returned events it feeds in turn. What reaches the core is therefore in the workflow history,
and a replay of the history rebuilds the same core, the same effects and the same trace bytes.

* The trace is made here, by the ordinary :class:`~fsm_agent.trace.writer.TraceWriter`, in
  memory with ``workflow.time()`` as its clock, and written to its file through the
  ``write_trace`` activity when a person is asked something and when the run ends.
* Side-effecting tool calls are never retried (``maximum_attempts=1``): a call whose activity
  was lost (its worker died) may have run, and is answered with the same error result
  ``resume`` gives (:func:`~fsm_agent.core.texts.not_rerun`). Validation and read-only calls
  are retried. The model call is not retried by Temporal: the core's own recorded retry path
  does that (SPEC §3), so a lost stream is a ``connection`` failure.
* A permission question waits for the ``answer_permission`` Update (from any client, for as
  long as ``LoopConfig.permission_timeout_ms`` allows); ``abort`` is a signal; ``status`` and
  ``progress`` are queries.
* A model call's input carries only the messages that changed since the run's previous
  request (the worker rebuilds the rest from the request it made; one that cannot says so
  and gets the request whole), so a run's history grows with its turns, not with the
  context times the turns.
* A long session continues as a new run (same workflow id) before its history grows too
  long: when the server suggests it, past ``continue_after_events`` history events, or past
  ``continue_after_bytes`` bytes of history, at the next request boundary at which
  nothing else is in flight. The new run gets the core's checkpoint
  (:mod:`fsm_agent.core.checkpoint`, sized by the context, not the session), the request to
  perform, and where the trace file stands, and goes on writing the same trace: the
  session's trace stays one file that replays as a whole. Because no activity is in
  flight at that point, no side effect can be lost or repeated across the boundary.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
from collections.abc import Coroutine
from datetime import timedelta
from typing import Any

import orjson
from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from fsm_agent.core import codec, texts
    from fsm_agent.core import effects as fx
    from fsm_agent.core import events as ev
    from fsm_agent.core.agent_core import AgentCore
    from fsm_agent.core.checkpoint import CoreCheckpoint
    from fsm_agent.core.config import LoopConfig
    from fsm_agent.core.messages import AssistantMessage, text_of
    from fsm_agent.core.tool_spec import ToolSpec
    from fsm_agent.errors import UsageError
    from fsm_agent.runtime.agent import RunResult, as_messages
    from fsm_agent.runtime.performing import is_stale, permission_timed_out, seconds
    from fsm_agent.trace.writer import TraceWriter, TracingCore

SESSION_WORKFLOW = "fsm_agent.Session"
"""The workflow type name sessions are started under."""
ABORT_ON_FAULT = "fault"
"""``AbortRequested.reason`` when the workflow itself fails (as the in-process driver)."""

_DEFAULT_LIMIT = timedelta(hours=1)
"""start-to-close bound of an activity whose ``LoopConfig`` limit is unset."""
_MARGIN = timedelta(seconds=30)
"""Added to a ``LoopConfig`` limit: the activity enforces the limit itself, and reports it."""
_READ_ONLY_RETRIES = RetryPolicy(
    initial_interval=timedelta(milliseconds=500), backoff_coefficient=2.0, maximum_attempts=3
)
"""For steps that change nothing: validation, read-only calls, the permission chain, the
trace write (at an offset) and describing the agent."""
_AT_MOST_ONCE = RetryPolicy(maximum_attempts=1)
"""For what may change the world or cost money: tool calls, hooks, model requests."""
_CLOSING_HOOKS_WAIT = timedelta(seconds=5)
"""How long a finished session waits for its SessionEnd and StopFailure hooks at most."""
REQUEST_NOT_HELD = "RequestNotHeld"
"""The failure type of a model call sent as a delta to a worker that does not hold the
request it builds on (the workflow sends it whole then)."""
PROGRESS_CARRIED = 1_000
"""How many of the latest progress items a continued run keeps for watchers still behind."""
PROGRESS_CARRIED_BYTES = 32_768
"""And how many bytes of them (JSON) at most: the carried items are part of the next run's
history, which ``continue_after_bytes`` bounds; message texts make items of any size."""


HISTORY_BOUNDS = {
    "continue_after_events": "history events",
    "continue_after_bytes": "bytes of history",
}
"""The bounds past which a run continues as new, and what each counts."""


def history_bound_problem(name: str, value: object) -> str | None:
    """What is wrong with ``value`` as the history bound ``name`` (None: it is unset or a
    positive integer)."""
    if value is None or (type(value) is int and value >= 1):
        return None
    return f"{name} must be a positive number of {HISTORY_BOUNDS[name]}, not {value!r}"


def carried_progress(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The latest progress items a continued run keeps: at most :data:`PROGRESS_CARRIED` of
    them, and at most :data:`PROGRESS_CARRIED_BYTES` of JSON."""
    kept = 0
    size = 0
    for item in reversed(items[-PROGRESS_CARRIED:]):
        size += len(orjson.dumps(item))
        if size > PROGRESS_CARRIED_BYTES:
            break
        kept += 1
    return items[len(items) - kept :]


def _limit(milliseconds: int | None) -> timedelta:
    return (
        _DEFAULT_LIMIT if milliseconds is None else timedelta(milliseconds=milliseconds) + _MARGIN
    )


@workflow.defn(name=SESSION_WORKFLOW)
class SessionWorkflow:
    """One agent session. Started with ``{"prompt": str, "params": {...}, "trace": path?,
    "heartbeat_timeout_s": float?, "continue_after_events": int?, "continue_after_bytes":
    int?}``; returns ``{"terminal", "text", "trace", "turns", "runs", "fault"}``. A continued
    run's input also holds ``"continued"`` (see :meth:`_continue_as_new`)."""

    def __init__(self) -> None:
        self._inbox: list[ev.Event] = []
        self._aborts: list[str] = []
        self._questions: dict[str, dict[str, Any]] = {}
        self._answers: dict[str, dict[str, Any]] = {}
        self._progress: list[dict[str, Any]] = []
        self._phase = "idle"
        self._terminal: str | None = None
        self._fault: BaseException | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._call_tasks: dict[str, set[asyncio.Task[None]]] = {}
        self._closing: set[asyncio.Task[None]] = set()
        self._cancelled: set[str] = set()
        self._effect_calls: dict[str, str] = {}
        self._read_only: dict[str, bool] = {}
        self._grants: dict[str, dict[str, Any]] = {}
        self._tool_context: dict[str, dict[str, Any]] = {}
        self._hooked: frozenset[str] = frozenset()
        self._requests = 0
        self._requests_before = 0  # made by earlier runs of the session
        self._written = 0  # bytes of the buffer handed to write_trace so far
        # Where the next write starts in the trace file. Not the buffer's length: the activity
        # redacts secrets, which changes line lengths, so the file's size is its answer.
        self._file_end = 0
        self._progress_base = 0  # progress items before self._progress[0]
        self._runs = 1
        self._carried_request: fx.CallModel | None = None
        # This run's latest model request: its number and messages (the next is sent as
        # what changed since it).
        self._sent: tuple[int, list[dict[str, Any]]] | None = None
        self._continue_after: int | None = None
        self._continue_after_bytes: int | None = None
        self._attached = 0  # attachments given so far (their ids are numbered on)
        self._turn_prefetched = False  # the once-per-turn prefetches were asked
        self._flushing = asyncio.Lock()
        self._superseding = False  # set by run(): see there
        self._owner: dict[str, str] = {}  # set by run(): see there

    # --- the run ---------------------------------------------------------------------------

    @workflow.run
    async def run(self, start: dict[str, Any]) -> dict[str, Any]:
        """Run the session to a terminal reason; its result."""
        # A run made by a workflow reset re-makes the trace up to the reset point and then
        # writes its own: the replaced run's bytes after that point are set aside, not a
        # conflict (a reset run alone has an original run id other than its own).
        info = workflow.info()
        self._superseding = info.original_execution_run_id not in ("", info.run_id)
        self._session: dict[str, Any] = {
            "id": info.workflow_id,
            "params": dict(start.get("params") or {}),
            "trace": start.get("trace"),
        }
        self._heartbeat = timedelta(seconds=float(start.get("heartbeat_timeout_s") or 10.0))
        for name in HISTORY_BOUNDS:
            problem = history_bound_problem(name, start.get(name))
            if problem is not None:
                # A session started by hand with a bad bound: fail it now, naming the bound.
                raise ApplicationError(problem, type="ConfigError", non_retryable=True)
        self._continue_after = start.get("continue_after_events")
        self._continue_after_bytes = start.get("continue_after_bytes")
        continued: dict[str, Any] | None = start.get("continued")
        if continued is None:
            self._described: dict[str, Any] = await workflow.execute_local_activity(
                "fsm_agent.describe",
                self._session,
                start_to_close_timeout=timedelta(minutes=1),
                retry_policy=_READ_ONLY_RETRIES,
                result_type=dict,
            )
        else:
            self._described = continued["described"]
        described = self._described
        self._session["trace_path"] = described["trace"]
        self._hooked = frozenset(described["hooked"])
        self._config = codec.converter().structure(described["config"], LoopConfig)
        tools = codec.converter().structure(described["tools"], tuple[ToolSpec, ...])
        self._buffer = io.BytesIO()
        if continued is None:
            self._core = AgentCore(config=self._config, tools=list(tools))
            # Names this session's trace file as its own (its header's run id and start).
            self._owner = {"run_id": self._session["id"], "started": workflow.now().isoformat()}
            self._writer = TraceWriter(
                self._buffer,
                config=self._config,
                tools=tools,
                meta={
                    "started": self._owner["started"],
                    "model": self._config.model,
                    # The workflow id is unique among sessions: the run's id in the store
                    # and in its spans.
                    "run_id": self._session["id"],
                    "temporal_workflow_id": self._session["id"],
                    **({"price": described["price"]} if described.get("price") else {}),
                },
                clock=workflow.time,
            )
            self._feeder = TracingCore(self._core, self._writer)
        else:
            self._take_up(continued, tools)
        try:
            if continued is None:
                self._feed(ev.TurnStarted(messages=as_messages(str(start["prompt"]))))
            else:
                self._perform(codec.load_effect(continued["request"]))
            while self._core.terminal is None:
                if self._carried_request is not None:
                    await self._continue_as_new(start)
                await workflow.wait_condition(
                    lambda: bool(self._inbox or self._aborts or self._fault)
                )
                if self._fault is not None:
                    raise self._fault
                if self._aborts:
                    self._feed(ev.AbortRequested(reason=self._aborts.pop(0)))
                    continue
                event = self._inbox.pop(0)
                if not is_stale(event, self._cancelled, self._effect_calls):
                    self._feed(event)
        except Exception as exc:
            # A bug here or in a user's callable: abort through the core, so every tool_use is
            # answered, and end the trace naming the fault (as the in-process driver does).
            self._feeder.fault = f"{type(exc).__name__}: {exc}"
            if self._core.terminal is None and not self._core.poisoned:
                self._feed(ev.AbortRequested(reason=ABORT_ON_FAULT))
            if not self._writer.ended:
                self._writer.write_end(
                    self._core.terminal, self._core.usage, fault=self._feeder.fault
                )
        await self._finish()
        return {
            "terminal": self._core.terminal or "",
            "text": RunResult(
                terminal=self._core.terminal or "",
                messages=self._core.transcript,
                usage=self._core.usage,
            ).text,
            "trace": self._session["trace_path"],
            "turns": self._requests,
            "runs": self._runs,
            "fault": self._feeder.fault,
        }

    # --- continuing as a new run -----------------------------------------------------------

    def _continue_due(self, step_effects: tuple[fx.Effect, ...]) -> bool:
        """Whether to continue as a new run instead of performing this step's ``CallModel``.

        Only at a request boundary with nothing else in flight (no activity, no event not yet
        fed, no other effect of the step), and only once this run has made a request itself,
        so that every run moves the session on.
        """
        if self._requests == self._requests_before:
            return False
        info = workflow.info()
        full = (
            info.is_continue_as_new_suggested()
            or (
                self._continue_after is not None
                and info.get_current_history_length() >= self._continue_after
            )
            or (
                self._continue_after_bytes is not None
                and info.get_current_history_size() >= self._continue_after_bytes
            )
        )
        return (
            full
            and self._core.at_request_boundary
            and not self._inbox
            and all(isinstance(e, fx.Emit | fx.CallModel) for e in step_effects)
            and all(task.done() for task in self._tasks)
        )

    async def _continue_as_new(self, start: dict[str, Any]) -> None:
        """End this run and start the next with what it needs to go on (never returns)."""
        request = self._carried_request
        assert request is not None
        await self._flush()
        # An abort signal that arrives meanwhile is carried; no Update can be pending, since
        # no question is.
        await workflow.wait_condition(workflow.all_handlers_finished)
        total = self._progress_base + len(self._progress)
        kept = carried_progress(self._progress)
        continued = {
            "described": self._described,
            "checkpoint": codec.converter().unstructure(self._core.checkpoint()),
            "request": codec.dump_effect(request),
            "trace": {
                "written": self._file_end,
                "next_seq": self._writer.next_seq,
                "started": self._writer.started,
                "owner": self._owner,
            },
            "requests": self._requests,
            "progress": {"base": total - len(kept), "items": kept},
            "aborts": list(self._aborts),
            "attachments": {"numbered": self._attached, "turn_prefetched": self._turn_prefetched},
            "runs": self._runs + 1,
        }
        workflow.continue_as_new({**start, "continued": continued})

    def _take_up(self, continued: dict[str, Any], tools: tuple[ToolSpec, ...]) -> None:
        """Take up the session where the run before this one left it (the request it
        carried is performed next)."""
        checkpoint = codec.converter().structure(continued["checkpoint"], CoreCheckpoint)
        self._core = AgentCore.restore(checkpoint, config=self._config, tools=list(tools))
        trace = continued["trace"]
        self._file_end = int(trace["written"])
        self._owner = dict(trace.get("owner") or {})  # a run continued before it was carried
        self._writer = TraceWriter(
            self._buffer,
            config=self._config,
            tools=tools,
            clock=workflow.time,
            next_seq=int(trace["next_seq"]),
            started=float(trace["started"]),
        )
        self._feeder = TracingCore(self._core, self._writer)
        self._requests = self._requests_before = int(continued["requests"])
        self._progress_base = int(continued["progress"]["base"])
        self._progress = list(continued["progress"]["items"])
        self._aborts = list(continued["aborts"])
        self._runs = int(continued["runs"])
        self._attached = int(continued["attachments"]["numbered"])
        self._turn_prefetched = bool(continued["attachments"]["turn_prefetched"])
        self._phase = self._core.phase

    async def _finish(self) -> None:
        for task in self._tasks:
            task.cancel()
        if self._closing:
            try:
                await workflow.wait_condition(
                    lambda: all(task.done() for task in self._closing),
                    timeout=_CLOSING_HOOKS_WAIT,
                )
            except TimeoutError:
                for task in self._closing:
                    task.cancel()
        self._writer.close()
        await self._flush(ended=True)
        if self._described.get("spans") and self._session["trace_path"] is not None:
            # At most once: a lost export leaves spans missing, never doubled. The activity
            # logs what went wrong; the session's result stands either way.
            with contextlib.suppress(ActivityError):
                await workflow.execute_local_activity(
                    "fsm_agent.export_spans",
                    {"session": self._session, "path": self._session["trace_path"]},
                    start_to_close_timeout=timedelta(minutes=1),
                    retry_policy=_AT_MOST_ONCE,
                )

    async def _flush(self, *, ended: bool = False) -> None:
        """Write the trace bytes made since the last write (idempotent: at an offset)."""
        if self._session["trace_path"] is None:
            return
        async with self._flushing:
            data = self._buffer.getvalue()
            if len(data) == self._written and not ended:
                return
            chunk = data[self._written :]
            end = await workflow.execute_local_activity(
                "fsm_agent.write_trace",
                {
                    "session": self._session,
                    "path": self._session["trace_path"],
                    "offset": self._file_end,
                    "data": chunk.decode(),
                    "ended": ended,
                    "superseding": self._superseding,
                    "owner": self._owner,
                },
                start_to_close_timeout=timedelta(minutes=1),
                retry_policy=_READ_ONLY_RETRIES,
            )
            self._written = len(data)
            # A history recorded before the activity answered with the file's end has None.
            self._file_end = int(end) if end is not None else self._file_end + len(chunk)

    def _feed(self, event: ev.Event) -> None:
        step = self._feeder.feed(event)
        self._phase = self._core.phase
        self._terminal = self._core.terminal
        if isinstance(event, ev.ToolInputValidated):
            self._read_only[event.call_id] = event.read_only
        for transition in step.transitions:
            self._note(
                {
                    "kind": "transition",
                    "machine": transition.machine,
                    "name": transition.name,
                    "call_id": transition.call_id,
                    "dest": transition.dest,
                }
            )
        for effect in step.effects:
            if isinstance(effect, fx.Emit):
                self._note(
                    {
                        "kind": "message",
                        "role": "assistant"
                        if isinstance(effect.message, AssistantMessage)
                        else "user",
                        "text": text_of(effect.message),
                    }
                )
            elif isinstance(effect, fx.CallModel) and self._continue_due(step.effects):
                self._carried_request = effect  # performed by the next run
            else:
                self._perform(effect)

    def _note(self, item: dict[str, Any]) -> None:
        """Add a progress item, numbered across the runs of the session (``n``)."""
        item["n"] = self._progress_base + len(self._progress)
        self._progress.append(item)

    # --- effects as activities -------------------------------------------------------------

    def _spawn(
        self,
        work: Coroutine[Any, Any, None],
        *,
        call_id: str | None = None,
        closing: bool = False,
    ) -> None:
        async def guarded() -> None:
            try:
                await work
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # reported to the main loop, which ends the run
                self._fault = exc

        task = asyncio.get_running_loop().create_task(guarded())
        if closing:
            self._closing.add(task)
            return
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        if call_id is not None:
            self._call_tasks.setdefault(call_id, set()).add(task)

    def _job(self, effect: fx.Effect, **more: Any) -> dict[str, Any]:
        return {"session": self._session, "effect": codec.dump_effect(effect), **more}

    def _perform(self, effect: fx.Effect) -> None:
        config = self._config
        if isinstance(effect, fx.CallModel):
            messages = self._core.api_messages()
            job = self._model_job(effect, messages)
            self._requests += 1
            self._spawn(self._call_model(effect, job, messages))
        elif isinstance(effect, fx.RunToolStep):
            context = self._tool_context.setdefault(effect.call_id, dict(self._core.tool_context))
            job = self._job(effect, tool_context=context, grant=self._grants.get(effect.call_id))
            self._spawn(self._tool_step(effect, job), call_id=effect.call_id)
        elif isinstance(effect, fx.RunHooks):
            if effect.call_id is not None:
                self._effect_calls[effect.effect_id] = effect.call_id
            detached = effect.hook_event in fx.DETACHED_HOOK_EVENTS
            if effect.hook_event.value not in self._hooked:
                # No hook is configured for this event: the answer is known without asking
                # a worker (the activity would return the same empty outcome).
                if not detached:
                    self._inbox.append(ev.HooksFinished(effect_id=effect.effect_id))
                return
            # The run is ending for detached hooks: nothing waits for them, but they finish
            # (within a bound) before the session returns.
            self._spawn(
                self._hooks(effect, self._job(effect), report=not detached),
                call_id=effect.call_id,
                closing=detached,
            )
        elif isinstance(effect, fx.AskPermission):
            self._effect_calls[effect.effect_id] = effect.call_id
            context = self._tool_context.setdefault(effect.call_id, dict(self._core.tool_context))
            job = self._job(
                effect,
                tool_context=context,
                session_rules=list(self._core.session_permission_rules),
            )
            self._spawn(self._permission(effect, job), call_id=effect.call_id)
        elif isinstance(effect, fx.Compact | fx.DrainCollapse | fx.StageCollapse):
            messages = [codec.dump_message(m) for m in self._core.messages_for_query()]
            job = self._job(effect, messages=messages, model=self._core.model)
            self._spawn(self._compact(job, limit=config.hook_timeout_ms))
        elif isinstance(effect, fx.PersistToolResults):
            messages = [codec.dump_message(m) for m in self._core.messages_for_query()]
            self._spawn(self._persist(self._job(effect, messages=messages)))
        elif isinstance(effect, fx.CountTokens):
            job = self._job(effect, messages=self._core.api_messages())
            self._spawn(self._count_tokens(effect, job, limit=config.count_tokens_timeout_ms))
        elif isinstance(effect, fx.FetchAttachments):
            if not self._described.get("attachments"):
                # No providers (MCP servers and tool providers are refused on Temporal): the
                # answer is empty, as the in-process driver gives it, at once.
                self._inbox.append(ev.AttachmentsReady(effect_id=effect.effect_id))
                return
            messages = [codec.dump_message(m) for m in self._core.state.messages]
            job = self._job(
                effect,
                messages=messages,
                numbered=self._attached,
                turn_prefetch=not self._turn_prefetched,
            )
            self._turn_prefetched = True
            self._spawn(self._attach(job))
        elif isinstance(effect, fx.CancelTool):
            self._cancelled.add(effect.call_id)
            for task in self._call_tasks.pop(effect.call_id, set()):
                task.cancel()
        else:
            # A new kind of effect this driver does not know: end the run loudly (a fault),
            # rather than wait forever for an answer that will not come.
            raise UsageError(f"the Temporal driver cannot perform {type(effect).__name__}")

    async def _events(self, name: str, job: dict[str, Any], **options: Any) -> list[ev.Event]:
        found = await workflow.execute_activity(
            name, job, heartbeat_timeout=self._heartbeat, result_type=list, **options
        )
        return [codec.load_event(data) for data in found]

    def _model_job(self, effect: fx.CallModel, messages: list[dict[str, Any]]) -> dict[str, Any]:
        """The job of a model call: the request's messages, or, when this run made a request
        before, only those after the start the two share (``base`` names that request and
        how many of its messages to keep; the worker that made it rebuilds the rest).

        Each model call's input is in the workflow history, so sending the whole context
        every turn would make a run's history grow with context times turns. What is sent
        depends only on the two requests' contents, so a replay sends the same.
        """
        job = self._job(effect, requests_before=self._requests, messages=messages)
        before = self._sent
        self._sent = (self._requests, messages)
        if before is None:
            return job
        request, sent = before
        keep = shared_start(sent, messages)
        if keep == 0:
            return job
        return {**job, "messages": messages[keep:], "base": {"request": request, "keep": keep}}

    async def _call_model(
        self, effect: fx.CallModel, job: dict[str, Any], messages: list[dict[str, Any]]
    ) -> None:
        if effect.delay_ms:
            await workflow.sleep(timedelta(milliseconds=effect.delay_ms))
        options: dict[str, Any] = {
            "start_to_close_timeout": _DEFAULT_LIMIT,
            "retry_policy": _AT_MOST_ONCE,
        }
        try:
            try:
                found = await self._events("fsm_agent.call_model", job, **options)
            except ActivityError as exc:
                if "base" not in job or not _not_held(exc):
                    raise
                # Another worker made the request this one builds on: nothing was asked of
                # the model yet, so the whole request goes now.
                whole = {key: value for key, value in job.items() if key != "base"}
                found = await self._events(
                    "fsm_agent.call_model", {**whole, "messages": messages}, **options
                )
        except ActivityError as exc:
            # The core retries through its recorded path; nothing of this stream was fed.
            found = [
                ev.ModelStreamFailed(
                    request_id=effect.request_id,
                    kind=ev.FailureKind.CONNECTION,
                    message=f"the model call was lost: {_cause(exc)}",
                )
            ]
        self._inbox.extend(found)

    async def _tool_step(self, effect: fx.RunToolStep, job: dict[str, Any]) -> None:
        calling = effect.step is fx.ToolStep.CALL
        side_effecting = calling and not self._read_only.get(effect.call_id, False)
        try:
            if calling:
                found = await self._events(
                    "fsm_agent.tool_step",
                    job,
                    start_to_close_timeout=_limit(self._config.tool_timeout_ms),
                    retry_policy=_AT_MOST_ONCE if side_effecting else _READ_ONLY_RETRIES,
                )
            else:
                # Validation reads and is short: run beside the workflow, on its worker.
                validated = await workflow.execute_local_activity(
                    "fsm_agent.tool_step",
                    job,
                    start_to_close_timeout=_limit(self._config.tool_timeout_ms),
                    retry_policy=_READ_ONLY_RETRIES,
                    result_type=list,
                )
                found = [codec.load_event(data) for data in validated]
        except ActivityError as exc:
            failed: ev.Event
            if side_effecting:
                # The call may have run before its worker was lost: never run it again, and
                # say so, as resume does (DESIGN §5).
                failed = ev.ToolCallFinished(
                    call_id=effect.call_id, content=texts.not_rerun(effect.tool_name), is_error=True
                )
            elif calling:
                failed = ev.ToolCallFinished(
                    call_id=effect.call_id,
                    content=f"<tool_use_error>{_cause(exc)}</tool_use_error>",
                    is_error=True,
                )
            else:
                failed = ev.ToolInputValidated(
                    call_id=effect.call_id, ok=False, error=f"validation was lost: {_cause(exc)}"
                )
            found = [failed]
        self._inbox.extend(found)

    async def _hooks(self, effect: fx.RunHooks, job: dict[str, Any], *, report: bool) -> None:
        try:
            found = await workflow.execute_activity(
                "fsm_agent.run_hooks",
                job,
                start_to_close_timeout=_limit(self._config.hook_timeout_ms),
                heartbeat_timeout=self._heartbeat,
                retry_policy=_AT_MOST_ONCE,
                result_type=dict,
            )
            done = codec.load_event(found)
        except ActivityError as exc:
            # Hook commands may act on the world, so they are not run twice; the loop goes on
            # as after a hook that failed to run (SPEC §6.1: a non-blocking error).
            done = ev.HooksFinished(
                effect_id=effect.effect_id,
                outcome=ev.HookOutcome(system_messages=(f"hooks were lost: {_cause(exc)}",)),
            )
        if report:
            self._inbox.append(done)

    async def _permission(self, effect: fx.AskPermission, job: dict[str, Any]) -> None:
        reply = await self._decide(job)
        question = reply.get("question")
        if question is not None:
            call_id = effect.call_id
            self._questions[call_id] = question
            self._inbox.append(ev.PermissionPromptShown(effect_id=effect.effect_id))
            limit = seconds(self._config.permission_timeout_ms)
            try:
                await self._flush()  # whoever answers may take days: the trace is on disk
                await workflow.wait_condition(
                    lambda: call_id in self._answers,
                    timeout=None if limit is None else timedelta(seconds=limit),
                )
            except TimeoutError:
                assert limit is not None
                # Our bound (LoopConfig.permission_timeout_ms): nobody answered, so no grant.
                self._inbox.append(permission_timed_out(effect, limit))
                return
            finally:
                self._questions.pop(call_id, None)
            reply = await self._decide({**job, "answer": self._answers.pop(call_id)})
        self._grants[effect.call_id] = reply["grant"]
        self._inbox.append(codec.load_event(reply["decided"]))

    async def _decide(self, job: dict[str, Any]) -> dict[str, Any]:
        reply: dict[str, Any] = await workflow.execute_local_activity(
            "fsm_agent.decide_permission",
            job,
            start_to_close_timeout=timedelta(minutes=1),
            retry_policy=_READ_ONLY_RETRIES,
            result_type=dict,
        )
        return reply

    async def _attach(self, job: dict[str, Any]) -> None:
        found = await workflow.execute_activity(
            "fsm_agent.attachments",
            job,
            start_to_close_timeout=_DEFAULT_LIMIT,
            heartbeat_timeout=self._heartbeat,
            retry_policy=_READ_ONLY_RETRIES,
            result_type=dict,
        )
        ready = codec.load_event(found)
        assert isinstance(ready, ev.AttachmentsReady)
        self._attached += len(ready.messages)  # their ids go on from here
        self._inbox.append(ready)

    async def _compact(self, job: dict[str, Any], *, limit: int | None) -> None:
        found = await workflow.execute_activity(
            "fsm_agent.compact",
            job,
            start_to_close_timeout=_DEFAULT_LIMIT if limit is None else _limit(limit),
            heartbeat_timeout=self._heartbeat,
            retry_policy=_READ_ONLY_RETRIES,
            result_type=dict,
        )
        self._inbox.append(codec.load_event(found))

    async def _count_tokens(
        self, effect: fx.CountTokens, job: dict[str, Any], *, limit: int
    ) -> None:
        try:
            found = await workflow.execute_activity(
                "fsm_agent.count_tokens",
                job,
                start_to_close_timeout=_limit(limit),
                retry_policy=_AT_MOST_ONCE,
                result_type=dict,
            )
            counted = codec.load_event(found)
        except ActivityError as exc:
            # SPEC §7.5: a lost count leaves the estimate in charge; recorded, never fatal.
            counted = ev.TokensCounted(
                effect_id=effect.effect_id, error=f"the count was lost: {_cause(exc)}"
            )
        self._inbox.append(counted)

    async def _persist(self, job: dict[str, Any]) -> None:
        # Files beside the trace, written again whole if retried: a local activity.
        found = await workflow.execute_local_activity(
            "fsm_agent.persist_results",
            job,
            start_to_close_timeout=timedelta(minutes=1),
            retry_policy=_READ_ONLY_RETRIES,
            result_type=dict,
        )
        self._inbox.append(codec.load_event(found))

    # --- what clients see and say ----------------------------------------------------------

    @workflow.query(name="status")
    def status(self) -> dict[str, Any]:
        """The phase, the terminal reason (once ended) and the pending permission questions."""
        return {
            "phase": self._phase,
            "terminal": self._terminal,
            "questions": list(self._questions.values()),
            "progress": self._progress_base + len(self._progress),
            "runs": self._runs,
        }

    @workflow.query(name="progress")
    def progress(self, since: int) -> list[dict[str, Any]]:
        """What happened from position ``since`` on: transitions taken and messages added
        (each numbered ``n``; a continued run keeps the last :data:`PROGRESS_CARRIED`, within
        :data:`PROGRESS_CARRIED_BYTES`)."""
        return self._progress[max(0, since - self._progress_base) :]

    @workflow.signal(name="abort")
    def abort(self, reason: str) -> None:
        """Abort the session (``AbortRequested`` with ``reason``, e.g. ``user``)."""
        self._aborts.append(reason)

    @workflow.update(name="answer_permission")
    async def answer_permission(self, call_id: str, decision: str, message: str) -> str:
        """Answer the pending permission question of ``call_id``: ``allow`` or ``deny``."""
        self._answers[call_id] = {"allow": decision == "allow", "message": message}
        return f"{decision} {call_id}"

    @answer_permission.validator
    def _check_answer(self, call_id: str, decision: str, message: str) -> None:
        del message
        if decision not in {"allow", "deny"}:
            raise ValueError(f"the answer must be allow or deny, not {decision!r}")
        if call_id not in self._questions or call_id in self._answers:
            pending = ", ".join(sorted(self._questions)) or "none"
            raise ValueError(
                f"no permission question is pending for call {call_id!r} (pending: {pending})"
            )


def shared_start(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> int:
    """How many leading messages two requests share (the core shares unchanged message
    dicts between requests, so most compare by identity)."""
    shared = 0
    for earlier, later in zip(before, after, strict=False):
        if earlier is not later and earlier != later:
            break
        shared += 1
    return shared


def _not_held(exc: ActivityError) -> bool:
    """Whether a model call failed because its worker does not hold the request it builds on."""
    cause = exc.cause
    return isinstance(cause, ApplicationError) and cause.type == REQUEST_NOT_HELD


def _cause(exc: ActivityError) -> str:
    cause = exc.cause
    return f"{type(cause).__name__}: {cause}" if cause is not None else str(exc)
