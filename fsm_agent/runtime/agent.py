"""The agent: what a run is made of, and what its caller sees (results and updates).

``Agent`` holds a model, tools, hooks and a permission policy, checked when it is built; the
async driver that performs a run (:mod:`fsm_agent.runtime.driver`) is loaded when the first
run starts, so ``from fsm_agent import Agent`` and building an agent load no core, no trace
writer and no model machinery (issue 10, DESIGN §7).
"""

from __future__ import annotations

import contextlib
import inspect
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from fsm_agent.core.config import LoopConfig
from fsm_agent.credentials import environment_credentials
from fsm_agent.errors import ConfigError, UsageError
from fsm_agent.runtime.attachments import AttachmentProvider, check_providers
from fsm_agent.runtime.hooks import Hooks
from fsm_agent.runtime.permissions import PermissionPolicy
from fsm_agent.runtime.server_tools import ServerTool
from fsm_agent.runtime.settings import Settings, load_settings, load_settings_file
from fsm_agent.runtime.tool import Tool, ToolContext
from fsm_agent.runtime.tool_providers import ToolProvider, check_tool_providers
from fsm_agent.telemetry.config import Telemetry, telemetry_credentials, tracer_for
from fsm_agent.trace.location import names_folder, prepare_trace_file

if TYPE_CHECKING:
    # Imported where they are used (issue 10): building an agent loads no core, no driver,
    # no model machinery and no trace writer; a plain run loads no MCP client, no replay and
    # no store module until it needs one.
    from fsm_agent.core.messages import Message, Usage
    from fsm_agent.core.pricing import ModelPrice
    from fsm_agent.core.step import TransitionTaken
    from fsm_agent.runtime.attachments import AttachmentCollector
    from fsm_agent.runtime.conversation_memo import ConversationMemo
    from fsm_agent.runtime.mcp_tools import McpServer
    from fsm_agent.runtime.models import Model
    from fsm_agent.runtime.response_clock import ResponseClock
    from fsm_agent.runtime.session import Session
    from fsm_agent.runtime.subagent_link import ParentRun, SubagentSeat
    from fsm_agent.store.sql_store import RunStore
    from fsm_agent.trace.replay import ForkPoint, InFlight, ResumePoint


# --- what the caller sees -----------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class RunResult:
    """How a run ended.

    Attributes:
        terminal: the terminal reason (``completed``, ``max_turns``, ``aborted_tools``...).
        messages: the whole transcript, prompt first.
        usage: tokens used over all model responses.
        trace_path: where the trace was written, if it was.
        turns: model requests sent (``request_sent``; retries of one request not counted).
        duration_s: seconds from the start to the end of the run (the agent's clock).
        cost_usd: what the usage cost at the agent's ``price``; None without a price.
    """

    terminal: str
    messages: tuple[Message, ...] = attrs.field(repr=lambda messages: f"<{len(messages)} messages>")
    """Shown by ``repr`` as a count: they hold the conversation as it was, secrets a model or
    a tool repeated included, and a result is the thing a caller prints or logs (DESIGN §8)."""
    usage: Usage
    trace_path: Path | None = None
    turns: int = 0
    duration_s: float = 0.0
    cost_usd: float | None = None

    @property
    def text(self) -> str:
        """The text of the last assistant message (the answer, for a completed run)."""
        from fsm_agent.core.messages import AssistantMessage, text_of  # noqa: PLC0415 - loaded when used, not by building an agent

        for message in reversed(self.messages):
            if isinstance(message, AssistantMessage) and text_of(message):
                return text_of(message)
        return ""


@attrs.frozen(kw_only=True)
class TransitionUpdate:
    """A row of a machine table fired.

    Attributes:
        transition: the row, with its own source and destination.
        phase: the loop machine's phase once the whole step was taken.
    """

    transition: TransitionTaken
    phase: str

    @property
    def dest(self) -> str:
        """Where this transition went (``phase`` is where the step ended)."""
        return self.transition.dest


@attrs.frozen(kw_only=True)
class ModelFailed:
    """A model request failed; the core decides what follows (a retry, a fallback or
    ``model_error``), which the next transition shows."""

    request_id: str
    kind: str
    message: str
    status: int | None = None


@attrs.frozen(kw_only=True)
class RetryScheduled:
    """The core asked for a model request again, after a backoff delay."""

    request_id: str
    attempt: int
    delay_ms: int


@attrs.frozen(kw_only=True)
class MessageUpdate:
    """A message was added to the transcript."""

    message: Message


@attrs.frozen(kw_only=True)
class TextDelta:
    """A piece of streamed text or thinking."""

    text: str
    thinking: bool = False


@attrs.frozen(kw_only=True)
class ToolProgress:
    """A running tool reported progress."""

    call_id: str
    text: str


@attrs.frozen(kw_only=True)
class RunFinished:
    """The last update of a run."""

    result: RunResult


Update = (
    TransitionUpdate
    | MessageUpdate
    | TextDelta
    | ToolProgress
    | ModelFailed
    | RetryScheduled
    | RunFinished
)
Sleep = Callable[[float], Awaitable[None]]
"""An async sleep of some seconds (``asyncio.sleep``); replaceable so tests do not wait."""


async def _asyncio_sleep(seconds: float) -> None:
    """``asyncio.sleep``, with asyncio loaded when a run first waits, not with this module."""
    import asyncio  # noqa: PLC0415 - issue 10: building an agent loads no event loop machinery

    await asyncio.sleep(seconds)


# --- the agent ----------------------------------------------------------------------------------


class Agent:
    """An agent: a model, tools, hooks and a permission policy, run by the FSM core.

    Args:
        model: what answers (``AnthropicModel``, ``ScriptedModel``, or your own ``Model``).
        tools: the tools the model may call: local tools, and ``ServerTool`` declarations of
            tools the API runs itself (web search, web fetch, code execution).
        config: the loop's bounds and options (its ``model`` is set to ``model.name``).
        hooks: Python (and command) hooks by event; the ``hooks`` of ``settings`` files
            run beside them.
        permissions: rules, mode and the ``ask`` callback (default: allow what tools allow,
            refuse what would need a question, with the reason "no one to ask").
        settings: Claude Code settings files to apply on top of ``permissions``: a path (one
            file, as ``--settings FILE``), a ``Settings`` (see ``load_settings``), or True for
            the standard files of ``cwd`` (``~/.claude/settings.json``,
            ``.claude/settings.json``, ``.claude/settings.local.json``).
        trace: where the JSONL trace goes: a folder (a path ending in ``/`` or an existing
            folder; created, one new file per run), a file, None for the default folder
            (the user's state folder, outside ``cwd``; see :mod:`fsm_agent.trace.location`),
            or False for no trace. Glob, Grep and Read never touch the trace folder.
        cwd: the working directory tools act in (default: the current one).
        system: the system prompt.
        secrets: strings that must never reach a trace or a span; the credentials the agent is
            configured with are added by themselves: the model's (its API key, wherever it
            was found), the MCP servers' (their credential headers, environment variables
            and command-line options), the store URL's password and, when telemetry is on,
            the credentials spans are exported with (a ``Telemetry`` endpoint's, the
            ``OTEL_EXPORTER_OTLP_HEADERS`` credential headers).
        environment_secrets: take the credentials in this process's environment as secrets
            too (on by default): the values of the variables under a credential's name
            (``GITHUB_TOKEN``, ``AWS_SECRET_ACCESS_KEY``) and the credentials of a URL in any
            variable, 8 characters or longer and not the path of an existing file or folder
            (see :func:`fsm_agent.credentials.environment_credentials`). The agent's tools run
            with that environment: a command that prints it (``env``) would otherwise put
            them in the trace. Read when the agent is built.
        sleep: waits out retry backoff (default ``asyncio.sleep``); pass a no-op to drive an
            agent under Hypothesis without real waiting.
        wall_clock: epoch seconds (default ``time.time``), stamped on the events that
            time-based microcompact reads, when ``config.time_based_microcompact`` is on.
        clock: monotonic seconds (default ``time.monotonic``), for trace timing and
            ``RunResult.duration_s``.
        price: the model's price, to fill ``RunResult.cost_usd``.
        prompt_caching: mark the system prompt, the tools and the end of the history as
            prompt-cache breakpoints, so each request reads what the previous one wrote
            (see :mod:`fsm_agent.core.prompt_cache`); on by default.
        mcp_servers: MCP servers whose tools the model may call, as ``mcp__<server>__<tool>``
            (``McpServer.stdio(...)`` or ``McpServer.http(...)``; needs the ``mcp`` extra).
            They are connected for each run, and their tool lists read again between turns.
        store: the run store each finished run is indexed in (see :mod:`fsm_agent.store`):
            a ``RunStore``, a store URL or SQLite path, True for the default store, False for
            none. None (the default) indexes runs when ``FSM_AGENT_STORE`` is set or the
            trace goes to the default folder. The write happens on a background thread once
            the trace is closed (``wait_for_store_writes`` waits for it); a store failure is
            logged, never raised.
        attachments: attachment providers (see :mod:`fsm_agent.runtime.attachments`): what
            they find reaches the model as ``<system-reminder>`` context at each attachment
            phase (SPEC §1.2 S7), recorded in the trace.
        tool_providers: sources of tools that may change while a run works (see
            :mod:`fsm_agent.runtime.tool_providers`); asked as each run starts and again at
            each attachment phase, a change is offered to the model from the next request.
        telemetry: OpenTelemetry export of each run's spans (see :mod:`fsm_agent.telemetry`):
            True, or a ``Telemetry`` naming a tracer provider or collector; False for none.
            None (the default) exports when the ``OTEL_*`` environment asks for it
            (``OTEL_EXPORTER_OTLP_ENDPOINT``, ``OTEL_TRACES_EXPORTER``). Needs the ``otel``
            extra; the spans are built from the run's trace records.
        subagent: set by the ``Task`` tool when it builds a child agent: the child's name, its
            place in the tree of subagents and the parent run and call it works for.
    """

    def __init__(
        self,
        *,
        model: Model,
        tools: Sequence[Tool[Any] | ServerTool] = (),
        config: LoopConfig | None = None,
        hooks: Hooks | None = None,
        permissions: PermissionPolicy | None = None,
        settings: Settings | str | os.PathLike[str] | bool | None = None,
        trace: str | os.PathLike[str] | bool | None = None,
        cwd: str | os.PathLike[str] | None = None,
        system: str = "",
        secrets: Sequence[str] = (),
        environment_secrets: bool = True,
        sleep: Sleep = _asyncio_sleep,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
        price: ModelPrice | None = None,
        prompt_caching: bool = True,
        store: RunStore | str | os.PathLike[str] | bool | None = None,
        mcp_servers: Sequence[McpServer] = (),
        attachments: Sequence[AttachmentProvider] = (),
        tool_providers: Sequence[ToolProvider] = (),
        subagent: SubagentSeat | None = None,
        telemetry: Telemetry | bool | None = None,
    ) -> None:
        self.model = model
        self.attachments = check_providers(attachments)
        self.tool_providers = check_tool_providers(tool_providers)
        self.subagent = subagent
        # Resolved now, so a missing extra or a bad OTEL_* setting is a ConfigError here.
        self.telemetry = telemetry
        self.tracer = tracer_for(telemetry)
        self.prompt_caching = prompt_caching
        self.mcp_servers = tuple(mcp_servers)
        self.sleep = sleep
        self.clock = clock
        self._wall_clock = wall_clock
        self._response_clock: ResponseClock | None = None
        self.price = price
        _check_arguments(model, tools, trace)
        _check_parts(config=config, hooks=hooks, permissions=permissions)
        # Server tools are declarations for the API; only local tools reach the core.
        self.tools = tuple(t for t in tools if not isinstance(t, ServerTool))
        self.server_tools = tuple(t for t in tools if isinstance(t, ServerTool))
        # The model object names the primary model; the config carries it into the core.
        self.config = attrs.evolve(config or LoopConfig(), model=model.name)
        if self.config.snip and not any(t.name == "Snip" for t in self.tools):
            # SPEC §7.2: with snip on, the model gets the tool that asks for it.
            from fsm_agent.toolbox.snip import Snip  # noqa: PLC0415 - only when snip is on

            self.tools = (*self.tools, Snip())
        self.trace = trace
        self.store = store
        self.cwd = Path(cwd) if cwd is not None else Path.cwd()
        if not self.cwd.is_dir():
            raise ConfigError(f"cwd {self.cwd} is not a folder")
        self.settings = _settings(settings, self.cwd)
        # Python hooks first, then each settings file's command hooks, in reading order.
        self.hooks = hooks if hooks is not None else Hooks()
        for found in self.settings.hooks:
            self.hooks = self.hooks.merged(Hooks.from_settings(found.value, source=str(found.path)))
        policy = permissions if permissions is not None else PermissionPolicy()
        # Rules may name the tools of a declared MCP server before the server is reached.
        servers = (*policy.mcp_servers, *(server.name for server in self.mcp_servers))
        policy = attrs.evolve(policy, mcp_servers=tuple(dict.fromkeys(servers)))
        self.permissions = policy.with_settings(self.settings)
        self.system = system
        self.environment_secrets = environment_secrets
        every_secret = (
            *secrets,
            *model_credentials(model),
            *_server_credentials(mcp_servers),
            *_kept(self.hooks.secrets),
            *_kept(telemetry_credentials(telemetry)),
            *store_credentials(self.store_target()),
            *(environment_credentials(os.environ) if environment_secrets else ()),
        )
        self.secrets = tuple(dict.fromkeys(every_secret))
        # What each request sends about the tools; schemas are generated once, not per request.
        self.tool_definitions = [
            {"name": t.name, "description": t.description, "input_schema": t.input_schema()}
            for t in self.tools
        ] + [t.to_api() for t in self.server_tools]
        self._by_name: dict[str, Tool[Any]] = {}
        for tool in self.tools:
            for name in (tool.name, *tool.aliases):
                if name in self._by_name:
                    raise ConfigError(f"two tools are named {name!r}: tool names must be unique")
                self._by_name[name] = tool
        # A rule naming a tool this agent lacks would never match: refuse it now (SPEC §9.2).
        # A tool its subagents have counts: the parent's deny rules reach them (issue 14).
        inner = (name for t in self.tools for name in t.inner_tool_names())
        self.permissions.check_tools({*self._by_name, *inner})

    async def run(self, prompt: str | Sequence[Message]) -> RunResult:
        """Run until a terminal reason; return the result."""
        return await final_result(self.stream(prompt))

    @property
    def response_clock(self) -> ResponseClock:
        """Wall time stamped on the events time-based microcompact reads, remembered across
        this agent's runs (made by the first run: it needs the event classes)."""
        if self._response_clock is None:
            from fsm_agent.runtime.response_clock import ResponseClock  # noqa: PLC0415 - loaded when first used

            self._response_clock = ResponseClock(self._wall_clock)
        return self._response_clock

    def run_sync(self, prompt: str | Sequence[Message]) -> RunResult:
        """``run`` in a fresh event loop; Ctrl-C aborts the run cleanly and re-raises.

        Raises:
            UsageError: called where an event loop is already running (``await run``).
        """
        import asyncio  # noqa: PLC0415 - issue 10, see _asyncio_sleep

        with contextlib.suppress(RuntimeError):  # RuntimeError: no loop runs, as it should be
            asyncio.get_running_loop()
            raise UsageError("run_sync cannot run inside an event loop: await agent.run(...)")
        return asyncio.run(self.run(prompt))

    async def stream(self, prompt: str | Sequence[Message]) -> AsyncIterator[Update]:
        """Run, yielding stream deltas, messages, transitions and tool progress as they come."""
        async for update in self.stream_turn(as_messages(prompt)):
            yield update

    async def stream_turn(
        self,
        messages: Sequence[Message],
        *,
        collector: AttachmentCollector | None = None,
        link: Mapping[str, Any] | None = None,
        memo: ConversationMemo | None = None,
    ) -> AsyncIterator[Update]:
        """One run of the loop on ``messages`` (what ``stream`` and a ``Session`` turn do).

        Args:
            messages: the transcript to start from, the new prompt last.
            collector: answers the attachment phases (a session keeps one over its turns).
            link: header metadata tying the trace to its conversation.
            memo: what the conversation's earlier turns computed (a session keeps one over
                its turns, so a turn normalizes and serializes only what it added).
        """
        from fsm_agent.runtime.driver import run_turn  # noqa: PLC0415 - loaded by the first run

        async for update in run_turn(self, messages, collector=collector, link=link, memo=memo):
            yield update

    def session(
        self,
        *,
        resume: str | os.PathLike[str] | None = None,
        changed_files: bool = True,
        full_transcript_every: int | None = None,
    ) -> Session:
        """A conversation over many user turns (see :class:`Session`).

        Args:
            resume: the trace of an earlier turn to carry on from (its transcript is the
                start of this conversation, and the next turn's trace links to it).
            changed_files: report files read earlier that changed on disk since (on by
                default in a session).
            full_transcript_every: a turn's trace holds the whole transcript the turn starts
                from once in this many turns; the turns between hold what they add to the
                transcript of the trace before them, found beside them in the same folder
                (a conversation's traces then grow with its length, not its square). 1: each
                turn's trace reads alone. None: :data:`~fsm_agent.runtime.session.
                FULL_TRANSCRIPT_EVERY`.

        Raises:
            UsageError: ``full_transcript_every`` is not a whole number of at least 1.
        """
        from fsm_agent.runtime.session import Session  # noqa: PLC0415 - it imports this module

        return Session(
            self,
            resume=resume,
            changed_files=changed_files,
            full_transcript_every=full_transcript_every,
        )

    async def continue_from(
        self,
        point: ForkPoint | ResumePoint,
        *,
        rerun: Callable[[InFlight], bool] | None = None,
        carry_session_rules: bool = True,
    ) -> AsyncIterator[Update]:
        """Carry a recorded run on live from a ``fork`` or ``resume`` point, with this agent's
        model, tools, hooks and permissions (the core and its loop state come from the trace).

        Effects the recording left unanswered are performed now, except a tool call that may
        already have run (its result was never recorded): it is answered with an error result
        saying so, unless ``rerun(in_flight)`` returns True. A half-received model response
        is re-requested through the core's retry path. The new trace repeats the prefix.

        The rules "allow always" answers added in the recording
        (``point.core.session_permission_rules``) allow calls from here on as they did there;
        with ``carry_session_rules=False`` they do not (a trace from someone else may hold
        ``Bash(*)``), and such a call asks again, unless a live answer adds the rule anew.

        Raises:
            UsageError: before anything is performed, when the trace ends before the run
                started, or when a tool call would run with an input the trace holds
                redacted (:mod:`~fsm_agent.runtime.redacted_inputs`).
        """
        from fsm_agent.core.tables import Phase  # noqa: PLC0415 - loaded by the first run
        from fsm_agent.runtime import redacted_inputs  # noqa: PLC0415
        from fsm_agent.runtime.driver import child_trace, continue_run  # noqa: PLC0415
        from fsm_agent.trace.replay import ForkPoint  # noqa: PLC0415

        # Both checks come before the run's trace is opened: a refused continuation leaves no
        # file behind.
        if getattr(point.core, "phase", None) == Phase.IDLE.value:
            raise UsageError(
                "the trace ends before the run started, so there is no prompt to continue "
                "from: start a new run instead"
            )
        in_flight = point.outstanding_effects if isinstance(point, ForkPoint) else point.in_flight
        decided = _asked_once(rerun)
        redacted = redacted_inputs.calls_with_redacted_input(
            point, in_flight, decided, lambda item: child_trace(point, item) is not None
        )
        if redacted:
            raise UsageError(redacted_inputs.refusal(redacted))
        carried = carry_session_rules
        async for update in continue_run(self, point, rerun=decided, carry_session_rules=carried):
            yield update

    def tool(self, name: str) -> Tool[Any] | None:
        """The tool called ``name`` (or one of its aliases)."""
        return self._by_name.get(name)

    def trace_path(self, run_id: str | None = None, *, user_turn: int = 1) -> Path | None:
        """A new file for the next run's trace, its folder created (None when tracing is off);
        in a folder, the file is named after ``run_id``.

        Runs traced to a folder get a new file each; when the trace is one named file, the
        later turns of a session go beside it (``NAME.turn2.jsonl``...).

        Raises:
            ConfigError: the trace folder cannot be created.
        """
        if self.trace is False:
            return None
        target = None if self.trace is True else self.trace
        path = prepare_trace_file(target, run_id=run_id)
        if user_turn > 1 and target is not None and not names_folder(target):
            path = path.with_name(f"{path.stem}.turn{user_turn}{path.suffix}")
        return path

    def store_target(self) -> RunStore | str | None:
        """The store finished runs are indexed in (a store or its URL), or None for none."""
        from fsm_agent.store.opening import STORE_ENV, default_store_url  # noqa: PLC0415 - lazy

        if self.store is False:
            return None
        if self.store is True:
            return default_store_url()
        if isinstance(self.store, str | os.PathLike):
            return os.fspath(self.store)
        if self.store is not None:
            return self.store
        if os.environ.get(STORE_ENV) or self.trace is None or self.trace is True:
            return default_store_url()
        return None

    def tool_context(
        self,
        trace_path: Path | None,
        *,
        extra: Mapping[str, Any],
        call_id: str = "",
        parent: ParentRun | None = None,
    ) -> ToolContext:
        """A fresh context for call ``call_id`` of a run whose trace is ``trace_path``
        (``parent``: what a tool that starts a child agent needs of this run)."""
        results_dir = results_folder(trace_path)
        readable = tuple(self.permissions.additional_directories)
        if results_dir is not None:
            readable = (*readable, results_dir.resolve())
        return ToolContext(
            cwd=self.cwd,
            additional_directories=readable,
            hidden_paths=self.hidden_paths(trace_path),
            results_dir=results_dir,
            extra=dict(extra),
            call_id=call_id,
            parent=parent,
        )

    def hidden_paths(self, trace_path: Path | None) -> tuple[Path, ...]:
        """What Glob and Grep must not list: the trace folder (or the trace file and the
        folder of its subagents' traces), and for a subagent what its parent hides."""
        inherited = self.subagent.hidden if self.subagent is not None else ()
        if trace_path is None:
            return inherited
        named_file = isinstance(self.trace, str | os.PathLike) and not names_folder(self.trace)
        if not named_file:
            return (*inherited, trace_path.parent.resolve())
        children = trace_path.parent / f"{trace_path.stem}.subagents"
        return (*inherited, trace_path.resolve(), children.resolve())


def results_folder(trace_path: Path | None) -> Path | None:
    """Where oversized tool results are saved (SPEC §7.1): beside the trace, readable by the
    model; None without a trace."""
    if trace_path is None:
        return None
    return trace_path.parent / f"{trace_path.stem}.tool-results"


async def final_result(updates: AsyncIterator[Update]) -> RunResult:
    """The result a run's updates end with (``RunFinished``), once they are all through."""
    result: RunResult | None = None
    async for update in updates:
        if isinstance(update, RunFinished):
            result = update.result
    assert result is not None
    return result


def as_messages(prompt: str | Sequence[Message]) -> tuple[Message, ...]:
    """A prompt as the messages a run starts from.

    Raises:
        UsageError: the prompt is empty, or is neither text nor a sequence of messages.
    """
    from fsm_agent.core.messages import Message, TextBlock, UserMessage  # noqa: PLC0415 - loaded when used, not by building an agent
    from fsm_agent.trace.json_limits import escape_surrogates  # noqa: PLC0415

    if isinstance(prompt, str):
        if not prompt.strip():
            raise UsageError("the prompt is empty")
        # Bytes that were not UTF-8 (pasted, piped) arrive as lone surrogates, which no
        # request can carry: written as escapes, as the trace holds them (a replay reads
        # what the run saw).
        text = escape_surrogates(prompt)
        return (UserMessage(uuid="prompt", content=(TextBlock(text=text),)),)
    try:
        messages = tuple(prompt)
    except TypeError:  # not iterable (None, a number)
        messages = ()
    if not messages or not all(isinstance(m, Message) for m in messages):
        raise UsageError(
            f"the prompt must be text or a non-empty sequence of messages, not {prompt!r:.80}"
        )
    return messages


def _asked_once(rerun: Callable[[InFlight], bool] | None) -> Callable[[InFlight], bool]:
    """``rerun`` asked at most once per in-flight call (it may ask a person): the check
    before a continuation and the continuation itself get the same answer."""
    answers: dict[int, bool] = {}

    def decided(item: InFlight) -> bool:
        if rerun is None:
            return False
        key = id(item)  # the point's own items, alive as long as the point
        if key not in answers:
            answers[key] = bool(rerun(item))
        return answers[key]

    return decided


def _check_arguments(model: object, tools: object, trace: object) -> None:
    """Refuse, naming it, an argument of ``Agent`` of the wrong kind (a careless call would
    otherwise fail later, deep inside a run)."""
    if not isinstance(getattr(model, "name", None), str) or not callable(
        getattr(model, "stream", None)
    ):
        raise ConfigError(
            "model must be a Model with a name and a stream method (AnthropicModel(name=...), "
            f"ScriptedModel(...)), not {type(model).__name__}"
        )
    if isinstance(tools, str | bytes) or not isinstance(tools, Iterable):
        raise ConfigError(f"tools must be a list of tools (or []), not {type(tools).__name__}")
    for index, item in enumerate(tools):
        if isinstance(item, Tool | ServerTool):
            continue
        hint = ""
        if inspect.iscoroutinefunction(item):
            hint = f"; decorate {getattr(item, '__name__', 'it')} with @tool to make it one"
        elif isinstance(item, str):
            hint = "; give the tool object itself (Read(), not 'Read')"
        name = getattr(item, "__name__", None) if callable(item) else None
        what = f"{type(item).__name__} {name or repr(item)}"
        raise ConfigError(f"tools[{index}] is not a tool: {what:.80}{hint}")
    if trace is not None and not isinstance(trace, str | os.PathLike | bool):
        raise ConfigError(f"trace must be a path, True, False or None, not {type(trace).__name__}")


def _check_parts(*, config: object, hooks: object, permissions: object) -> None:
    """Refuse, naming it, a part of ``Agent`` given as something else than its class (a dict
    of its fields, the class itself): it would fail later with an error naming neither."""
    for name, value, kind in (
        ("config", config, LoopConfig),
        ("hooks", hooks, Hooks),
        ("permissions", permissions, PermissionPolicy),
    ):
        if value is not None and not isinstance(value, kind):
            shown = "the class itself" if value is kind else type(value).__name__
            raise ConfigError(f"{name} must be a {kind.__name__}(...) or None, not {shown}")


def _settings(value: Settings | str | os.PathLike[str] | bool | None, cwd: Path) -> Settings:
    """``Agent(settings=...)``: nothing, one file, the standard files, or settings as given."""
    if value is None or value is False:
        return Settings()
    if value is True:
        return load_settings(cwd)
    if isinstance(value, Settings):
        return value
    return load_settings_file(value, cwd=cwd)


_SHORTEST_CREDENTIAL = 4
"""A credential found in the configuration shorter than this is not kept as a secret: no real
one is, and the trace's redactor refuses a secret that short (it would blank half of every
trace)."""


def _kept(found: Iterable[object]) -> tuple[str, ...]:
    """The credentials of ``found`` long enough to be kept as secrets."""
    return tuple(
        value for value in found if isinstance(value, str) and len(value) >= _SHORTEST_CREDENTIAL
    )


def _server_credentials(servers: Sequence[McpServer]) -> tuple[str, ...]:
    """The credentials MCP servers are reached with, as secrets for the agent."""
    return _kept(value for server in servers for value in server.secrets)


def store_credentials(store: RunStore | str | None) -> tuple[str, ...]:
    """The password of the store runs are indexed in (its URL's, or the ``secrets`` a store
    object names, as ``PostgresRunStore`` does), as secrets for the agent (DESIGN §8)."""
    if isinstance(store, str):
        from fsm_agent.credentials import url_passwords  # noqa: PLC0415 - loaded when used

        return _kept(url_passwords(store))
    return _kept(getattr(store, "secrets", ()))


def model_credentials(model: object) -> tuple[str, ...]:
    """The credentials ``model`` sends, as secrets for the agent (DESIGN §8): its ``secrets``
    (``AnthropicModel``: the key and token it sends, wherever the SDK finds them), else the
    ``api_key`` of a model of your own."""
    found = getattr(model, "secrets", None)
    if found is None:
        found = (getattr(model, "api_key", None),)
    return _kept((found,) if isinstance(found, str) else found)
