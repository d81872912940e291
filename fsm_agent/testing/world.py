"""A scripted outside world that answers a core's effects synchronously, one event at a time.

``World`` says how everything outside the core behaves: the model (a ``Scenario``), each
tool, the hooks, the permission answers, compaction and abort. ``WorldRun`` keeps the effects
that await an answer, each as a queue of the events that will answer it, and feeds them to the
core in an order the caller picks — so property tests can explore interleavings (a tool that
finishes while the model still streams, a permission answer after a sibling failed) without
threads, clocks or I/O. This is the engine of the stateful property tests, of the golden trace
recorder and of the benchmarks; the async driver does the same job against the real world.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import attrs

from fsm_agent.core import effects as fx
from fsm_agent.core import events as ev
from fsm_agent.core import texts
from fsm_agent.core.messages import Message, TextBlock, UserMessage
from fsm_agent.core.step import Step
from fsm_agent.errors import UsageError
from fsm_agent.testing.scenario import Scenario, render_events, scripted_failure

Feed = Callable[[ev.Event], Step]


@attrs.frozen(kw_only=True)
class ToolScript:
    """How one scripted tool behaves for every call.

    Attributes:
        safe: what validation reports as concurrency safety.
        valid: whether validation accepts the input.
        is_error: the call returns an error result.
        content: the result text.
        context_update: a context modifier the call returns.
    """

    safe: bool = True
    valid: bool = True
    is_error: bool = False
    content: str = "ok"
    context_update: dict[str, Any] | None = None


@attrs.frozen(kw_only=True)
class World:
    """Everything outside the core, scripted.

    Hook and permission answers are consumed in order; when a list runs out the default
    applies (hooks: nothing to say; permission: allow). ``deny_tools`` are denied by rule.
    """

    scenario: Scenario
    tools: dict[str, ToolScript] = attrs.field(factory=dict)
    pre_hooks: tuple[ev.HookOutcome, ...] = ()
    post_hooks: tuple[ev.HookOutcome, ...] = ()
    stop_hooks: tuple[ev.HookOutcome, ...] = ()
    prompt_hooks: tuple[ev.HookOutcome, ...] = ()
    deny_tools: frozenset[str] = frozenset()
    compactions: tuple[bool, ...] = ()
    collapses: tuple[int, ...] = ()
    token_counts: tuple[int | None, ...] = ()
    abort_after: int | None = None
    abort_reason: str = "user"


def prompt(text: str) -> tuple[Message, ...]:
    """A one-message transcript holding a user prompt."""
    return (UserMessage(uuid="prompt", content=(TextBlock(text=text),)),)


def open_turn(feed: Feed, messages: Sequence[Message]) -> Step:
    """Feed ``TurnStarted`` and answer its SessionStart and UserPromptSubmit hooks with nothing.

    Returns the step that asks for the first model response (its last effect is that
    ``CallModel``): where a test starts when the hooks before the first request do not matter.
    """
    step = feed(ev.TurnStarted(messages=tuple(messages)))
    for _ in range(2):
        (hooks,) = [e for e in step.effects if isinstance(e, fx.RunHooks)]
        step = feed(ev.HooksFinished(effect_id=hooks.effect_id))
    return step


@attrs.define
class _Pending:
    key: str
    events: Iterator[ev.Event]


class WorldRun:
    """Drives one run of a core against a ``World``; pick the next answer with ``advance``."""

    def __init__(self, feed: Feed, world: World, messages: Sequence[Message]) -> None:
        self._feed = feed
        self.world = world
        self.pending: list[_Pending] = []
        self.steps: list[tuple[ev.Event, Step]] = []
        self.terminal: str | None = None
        self._model_steps = iter(world.scenario.steps)
        self._pre = iter(world.pre_hooks)
        self._post = iter(world.post_hooks)
        self._stop = iter(world.stop_hooks)
        self._prompt = iter(world.prompt_hooks)
        self._compactions = iter(world.compactions)
        self._collapses = iter(world.collapses)
        self._token_counts = iter(world.token_counts)
        self._summaries = 0
        self._aborted = False
        self._send(ev.TurnStarted(messages=tuple(messages)))

    @property
    def done(self) -> bool:
        """The run reached a terminal state."""
        return self.terminal is not None

    def advance(self, choice: int = 0) -> None:
        """Feed the next event of the pending answer number ``choice`` (modulo their count)."""
        if self.done:
            return
        if (
            self.world.abort_after is not None
            and not self._aborted
            and len(self.steps) >= self.world.abort_after
        ):
            self.abort(self.world.abort_reason)
            return
        if not self.pending:
            raise UsageError(f"the core waits in {self.steps[-1][1]} but nothing is pending")
        item = self.pending[choice % len(self.pending)]
        event = next(item.events, None)
        if event is None:
            self.pending.remove(item)
            return
        self._send(event)

    def abort(self, reason: str = "user") -> None:
        """Feed an ``AbortRequested`` now."""
        if not self.done:
            self._aborted = True
            self._send(ev.AbortRequested(reason=reason))

    def run(self, choices: Callable[[], int] | None = None, *, limit: int = 100_000) -> str:
        """Advance until the run ends; ``choices`` picks among pending answers (default FIFO)."""
        for _ in range(limit):
            if self.done:
                return self.terminal or ""
            self.advance(choices() if choices is not None else 0)
        raise UsageError(f"the run did not end within {limit} events")

    # --- internals ------------------------------------------------------------------------------

    def _send(self, event: ev.Event) -> None:
        step = self._feed(event)
        self.steps.append((event, step))
        self.terminal = step.terminal
        for effect in step.effects:
            self._schedule(effect)
        self.pending = [p for p in self.pending if p.events is not None]

    def _schedule(self, effect: fx.Effect) -> None:
        if isinstance(effect, fx.Emit):
            return
        if isinstance(effect, fx.CancelTool):
            # The driver never reports on a call after cancelling it.
            self.pending = [p for p in self.pending if p.key != effect.call_id]
            return
        if isinstance(effect, fx.RunHooks) and effect.hook_event in fx.DETACHED_HOOK_EVENTS:
            return  # fire and forget (SPEC §2.2, §6)
        key, events = self._answer(effect)
        self.pending.append(_Pending(key=key, events=iter(events)))

    def _answer(self, effect: fx.Effect) -> tuple[str, list[ev.Event]]:
        if isinstance(effect, fx.CallModel):
            return effect.request_id, self._model_events(effect)
        if isinstance(effect, fx.RunToolStep):
            script = self.world.tools.get(effect.tool_name, ToolScript())
            if effect.step is fx.ToolStep.VALIDATE:
                error = (
                    "" if script.valid else "<tool_use_error>InputValidationError</tool_use_error>"
                )
                validated = ev.ToolInputValidated(
                    call_id=effect.call_id,
                    ok=script.valid,
                    error=error,
                    concurrency_safe=script.safe,
                    read_only=script.safe,
                )
                return effect.call_id, [validated]
            finished = ev.ToolCallFinished(
                call_id=effect.call_id,
                content=script.content,
                is_error=script.is_error,
                context_update=script.context_update,
            )
            return effect.call_id, [finished]
        if isinstance(effect, fx.RunHooks):
            source = {
                fx.HookEvent.PRE_TOOL_USE: self._pre,
                fx.HookEvent.POST_TOOL_USE: self._post,
                fx.HookEvent.STOP: self._stop,
                fx.HookEvent.USER_PROMPT_SUBMIT: self._prompt,
            }.get(effect.hook_event)
            # Hook events the world scripts no answers for have nothing to say.
            outcome = next(source, ev.HookOutcome()) if source is not None else ev.HookOutcome()
            key = effect.call_id or effect.effect_id
            return key, [ev.HooksFinished(effect_id=effect.effect_id, outcome=outcome)]
        if isinstance(effect, fx.AskPermission):
            denied = effect.tool_name in self.world.deny_tools
            decision = ev.PermissionDecided(
                effect_id=effect.effect_id,
                behavior=ev.PermissionBehavior.DENY if denied else ev.PermissionBehavior.ALLOW,
                source=ev.DecisionSource.RULE if denied else ev.DecisionSource.POLICY,
                reason=f"deny rule {effect.tool_name}" if denied else "scripted policy",
            )
            return effect.call_id, [decision]
        if isinstance(effect, fx.Compact):
            ok = next(self._compactions, True)
            self._summaries += 1
            summary = UserMessage(
                uuid=f"summary{self._summaries}",
                content=(TextBlock(text="Summary of the earlier conversation."),),
                is_meta=True,
            )
            done = ev.CompactionFinished(
                effect_id=effect.effect_id,
                ok=ok,
                messages=(summary,) if ok else (),
                error="" if ok else "compaction failed (scripted)",
            )
            return effect.effect_id, [done]
        if isinstance(effect, fx.StageCollapse):
            self._summaries += 1
            summary = UserMessage(
                uuid=f"collapse{self._summaries}",
                content=(TextBlock(text="Summary of the oldest turns."),),
                is_meta=True,
            )
            staged = ev.CollapseStaged(
                effect_id=effect.effect_id,
                through_uuid=effect.through_uuid,
                ok=True,
                summary=(summary,),
            )
            return effect.effect_id, [staged]
        if isinstance(effect, fx.DrainCollapse):
            # A staged span is committed as it is; else the scripted on-demand answer.
            committed = effect.staged or next(self._collapses, 0)
            drained = ev.CollapseDrained(effect_id=effect.effect_id, committed=committed)
            return effect.effect_id, [drained]
        if isinstance(effect, fx.FetchAttachments):
            return effect.effect_id, [ev.AttachmentsReady(effect_id=effect.effect_id)]
        if isinstance(effect, fx.CountTokens):
            # Scripted counts in order (None: the count fails); when they run out, it fails.
            tokens = next(self._token_counts, None)
            error = "" if tokens is not None else "no count scripted"
            counted = ev.TokensCounted(effect_id=effect.effect_id, input_tokens=tokens, error=error)
            return effect.effect_id, [counted]
        if isinstance(effect, fx.PersistToolResults):
            # Nothing is written: the preview names where a driver would have saved it.
            saved = tuple(
                ev.PersistedResult(
                    tool_use_id=result.tool_use_id,
                    content=texts.persisted_output(
                        result.chars, f"tool-results/{result.tool_use_id}.txt", "", more=True
                    ),
                )
                for result in effect.results
            )
            persisted = ev.ToolResultsPersisted(effect_id=effect.effect_id, results=saved)
            return effect.effect_id, [persisted]
        raise UsageError(f"the scripted world cannot answer {type(effect).__name__}")

    def _model_events(self, effect: fx.CallModel) -> list[ev.Event]:
        rid = effect.request_id
        step = next(self._model_steps, None)
        if step is None:
            return [
                ev.ModelStreamFailed(
                    request_id=rid, kind=ev.FailureKind.OTHER, message="scenario exhausted"
                )
            ]
        answer: list[ev.Event] = [
            ev.ModelStreamEvent(request_id=rid, event=raw)
            for raw in render_events(step, model=effect.model)
        ]
        failure = scripted_failure(step.error) if step.error is not None else None
        if failure is None:
            answer.append(ev.ModelStreamClosed(request_id=rid))
        else:
            answer.append(failure.to_event(rid))
        return answer
