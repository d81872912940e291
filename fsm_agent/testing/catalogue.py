"""A catalogue of scripted runs, one or more for every named transition.

Each entry is data: a loop config, the tools the core knows, a scripted ``World`` and what the
run must show (its terminal reason and transitions it must take). ``tools/record_traces.py``
records every entry into ``traces/`` (the golden corpus the tests replay); the benchmarks and
tests reuse the same runs. ``record`` checks each run against its expectations, so the corpus
is what it claims to be.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import attrs

from fsm_agent.core.agent_core import AgentCore
from fsm_agent.core.config import LoopConfig
from fsm_agent.core.events import HookDecision, HookOutcome
from fsm_agent.core.tool_spec import ToolSpec
from fsm_agent.errors import UsageError
from fsm_agent.runtime.response_clock import ResponseClock
from fsm_agent.testing.scenario import parse_scenario
from fsm_agent.testing.world import ToolScript, World, WorldRun, prompt

TOOLS = (
    ToolSpec(name="Read", description="Read a file"),
    ToolSpec(name="Glob", description="Find files"),
    ToolSpec(name="Write", description="Write a file"),
    ToolSpec(name="Bash", description="Run a command", is_shell=True),
    ToolSpec(name="Snip", description="Remove old turns from the context"),
)
SAFE = ToolScript(safe=True, content="file contents")
UNSAFE = ToolScript(safe=False, content="written")


@attrs.frozen(kw_only=True)
class Entry:
    """One catalogued run."""

    name: str
    description: str
    steps: tuple[dict[str, Any], ...]
    terminal: str
    must_take: tuple[str, ...] = ()
    config: LoopConfig = attrs.field(factory=LoopConfig)
    tools: dict[str, ToolScript] = attrs.field(factory=lambda: {"Read": SAFE, "Glob": SAFE})
    pre_hooks: tuple[HookOutcome, ...] = ()
    post_hooks: tuple[HookOutcome, ...] = ()
    stop_hooks: tuple[HookOutcome, ...] = ()
    prompt_hooks: tuple[HookOutcome, ...] = ()
    deny_tools: frozenset[str] = frozenset()
    compactions: tuple[bool, ...] = ()
    collapses: tuple[int, ...] = ()
    token_counts: tuple[int | None, ...] = ()
    abort_after: int | None = None
    abort_reason: str = "user"
    prompt_text: str = "Please look at the project."
    # Seconds of wall time between events, stamped as the driver does (SPEC §7.3); None
    # leaves every event unstamped.
    seconds_between_events: float | None = None

    def world(self) -> World:
        """The scripted outside world of this run."""
        return World(
            scenario=parse_scenario({"steps": list(self.steps)}, source=self.name),
            tools=self.tools,
            pre_hooks=self.pre_hooks,
            post_hooks=self.post_hooks,
            stop_hooks=self.stop_hooks,
            prompt_hooks=self.prompt_hooks,
            deny_tools=self.deny_tools,
            compactions=self.compactions,
            collapses=self.collapses,
            token_counts=self.token_counts,
            abort_after=self.abort_after,
            abort_reason=self.abort_reason,
        )


def _text(text: str, **extra: Any) -> dict[str, Any]:
    return {"content": [{"text": text}], **extra}


def _tools(*calls: tuple[str, dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"content": [{"tool_use": {"name": n, "input": i}} for n, i in calls], **extra}


def _error(kind: str, **extra: Any) -> dict[str, Any]:
    return {"error": {"kind": kind, **extra}}


_READ = ("Read", {"file_path": "README.md"})
_GLOB = ("Glob", {"pattern": "*.py"})
_WRITE = ("Write", {"file_path": "NOTES.md", "content": "notes"})
_BLOCK = HookOutcome(blocking_errors=("Run the tests before you stop.",))
_QUIET = LoopConfig(retry_base_ms=10, retry_cap_ms=40)

ENTRIES: tuple[Entry, ...] = (
    Entry(
        name="concurrent_reads_next_turn",
        description="Two safe reads run together, then the model answers.",
        steps=(_tools(_READ, _GLOB), _text("Both files read.")),
        terminal="completed",
        must_take=("tools_requested", "next_turn", "completed"),
    ),
    Entry(
        name="sibling_cancel",
        description="A failing shell call cancels the read running beside it.",
        steps=(_tools(("Bash", {"command": "ls missing"}), _READ), _text("The listing failed.")),
        tools={"Bash": ToolScript(safe=True, is_error=True, content="no such file"), "Read": SAFE},
        terminal="completed",
        must_take=("cancelled", "call_failed"),
    ),
    Entry(
        name="batch_partition",
        description="Without streaming execution, [R, R, W, R] runs as [R, R] [W] [R].",
        steps=(_tools(_READ, _GLOB, _WRITE, _READ), _text("Done.")),
        tools={"Read": SAFE, "Glob": SAFE, "Write": UNSAFE},
        config=LoopConfig(streaming_tool_execution=False),
        terminal="completed",
        must_take=("started", "next_turn"),
    ),
    Entry(
        name="rejected_and_denied",
        description="Bad input, an unknown tool, a deny rule and a hook denial: four errors.",
        steps=(
            _tools(_READ, ("Nope", {}), _GLOB, _WRITE),
            _text("I could not do those."),
        ),
        tools={"Read": ToolScript(valid=False), "Glob": SAFE, "Write": UNSAFE},
        deny_tools=frozenset({"Write"}),
        pre_hooks=(HookOutcome(decision=HookDecision.DENY, decision_reason="globs are off"),),
        terminal="completed",
        must_take=("input_rejected", "permission_denied", "hook_denied"),
    ),
    Entry(
        name="max_output_tokens_recovery",
        description="Three truncated answers recover; the fourth surfaces the error.",
        steps=tuple(_text(f"part {n}", stop_reason="max_tokens") for n in range(4)),
        terminal="completed",
        must_take=("max_output_tokens_recovery", "completed"),
    ),
    Entry(
        name="max_output_tokens_escalate",
        description="A truncated answer is retried once with the escalated output size.",
        steps=(_text("cut", stop_reason="max_tokens"), _text("Whole answer.")),
        config=LoopConfig(escalate_output_tokens=True),
        terminal="completed",
        must_take=("max_output_tokens_escalate",),
    ),
    Entry(
        name="reactive_compact_retry",
        description="Prompt too long: compact, then the retry succeeds.",
        steps=(_error("prompt_too_long"), _text("Answer after compaction.")),
        terminal="completed",
        must_take=("api_error_received", "reactive_compact_started", "reactive_compact_retry"),
    ),
    Entry(
        name="prompt_too_long",
        description="Prompt too long and compaction fails: the run ends prompt_too_long.",
        steps=(_error("prompt_too_long"),),
        compactions=(False,),
        terminal="prompt_too_long",
    ),
    Entry(
        name="collapse_drain_retry",
        description="With context collapse, a drain that commits retries the request.",
        steps=(_error("prompt_too_long"), _text("Fits now.")),
        config=LoopConfig(context_collapse=True, reactive_compact=False),
        collapses=(2,),
        terminal="completed",
        must_take=("collapse_drain_started", "collapse_drain_retry"),
    ),
    Entry(
        name="staged_collapse",
        description="Near the window the oldest span is summarised in the background; the "
        "refusal that follows commits it, and the retry sends the projected history.",
        steps=(
            _tools(_READ, usage={"input_tokens": 19_000, "output_tokens": 10}),
            _error("prompt_too_long"),
            _text("Fits now."),
        ),
        config=LoopConfig(context_collapse=True, reactive_compact=False, context_window=40_000),
        terminal="completed",
        must_take=("collapse_staging_started", "collapse_drain_started", "collapse_drain_retry"),
    ),
    Entry(
        name="counted_tokens",
        description="With count_tokens on, the API's count (12,000, past the 10,000-token "
        "threshold) starts autocompact where the estimate would not; the next count fails, "
        "and the estimate decides.",
        steps=(_tools(_READ), _text("Done.")),
        config=LoopConfig(count_tokens=True, context_window=43_000),
        token_counts=(12_000, None),
        terminal="completed",
        must_take=("token_count_requested", "tokens_counted", "autocompact_started"),
    ),
    Entry(
        name="history_snipped",
        description="With snip on, the model asks for the first Read round to go, names an "
        "unknown id and its own call; the round leaves what is sent, the rest is refused, "
        "and a note tells the model.",
        steps=(
            _tools(_READ),
            _tools(_READ),
            _tools(("Snip", {"ids": ["toolu_001", "nope", "toolu_003"]})),
            _text("Done."),
        ),
        config=LoopConfig(snip=True),
        tools={
            "Read": SAFE,
            "Snip": ToolScript(
                safe=False, context_update={"snip": ["toolu_001", "nope", "toolu_003"]}
            ),
        },
        terminal="completed",
        must_take=("history_snipped",),
    ),
    Entry(
        name="collapse_drain_empty",
        description="A drain that commits nothing and no reactive compact: prompt_too_long.",
        steps=(_error("prompt_too_long"),),
        config=LoopConfig(context_collapse=True, reactive_compact=False),
        collapses=(0,),
        terminal="prompt_too_long",
        must_take=("collapse_drain_empty",),
    ),
    Entry(
        name="image_error",
        description="A media error that compaction cannot fix ends the run image_error.",
        steps=(_error("media_too_large"),),
        compactions=(False,),
        terminal="image_error",
    ),
    Entry(
        name="image_error_after_compact",
        description="A second media error after a reactive compact: no second compact.",
        steps=(_error("media_too_large"), _error("media_too_large")),
        terminal="image_error",
        must_take=("reactive_compact_retry",),
    ),
    Entry(
        name="refusal",
        description="The model declines to answer: the run ends refusal, and says why.",
        steps=(
            _text(
                "",
                stop_reason="refusal",
                stop_details={"type": "refusal", "category": "cyber"},
            ),
        ),
        terminal="refusal",
    ),
    Entry(
        name="server_tool_and_citations",
        description="A web search the API runs itself, its result and a cited answer.",
        steps=(
            {
                "content": [
                    {
                        "server_tool_use": {
                            "id": "srvtoolu_001",
                            "name": "web_search",
                            "input": {"query": "project status"},
                        }
                    },
                    {
                        "block": {
                            "type": "web_search_tool_result",
                            "tool_use_id": "srvtoolu_001",
                            "content": [
                                {
                                    "type": "web_search_result",
                                    "url": "https://example.com/status",
                                    "title": "Status",
                                    "encrypted_content": "EqQBCioIBxgC",
                                    "page_age": None,
                                }
                            ],
                        }
                    },
                    {"redacted_thinking": "EmwKAhgBEgy3va3pzix"},
                    {
                        "text": "The project is on track.",
                        "citations": [
                            {
                                "type": "web_search_result_location",
                                "cited_text": "On track.",
                                "url": "https://example.com/status",
                                "title": "Status",
                                "encrypted_index": "Eo8BCioIBxgC",
                            }
                        ],
                    },
                ]
            },
        ),
        terminal="completed",
    ),
    Entry(
        name="pause_turn",
        description="The API pauses a long server-tool turn; the paused answer is sent back.",
        steps=(_text("Searching the web.", stop_reason="pause_turn"), _text("Found it.")),
        terminal="completed",
        must_take=("pause_turn", "completed"),
    ),
    Entry(
        name="pause_turn_limit",
        description="Past pause_turn_limit a paused turn finishes as it stands.",
        steps=(
            _text("Still searching.", stop_reason="pause_turn"),
            _text("Still searching.", stop_reason="pause_turn"),
        ),
        config=LoopConfig(pause_turn_limit=1),
        terminal="completed",
        must_take=("pause_turn", "stop_hooks_started", "completed"),
    ),
    Entry(
        name="stop_hook_blocking",
        description="A Stop hook blocks once; the model answers again and the run completes.",
        steps=(_text("Done."), _text("Tests pass. Done.")),
        stop_hooks=(_BLOCK,),
        terminal="completed",
        must_take=("stop_hook_blocking",),
    ),
    Entry(
        name="stop_hook_prevented",
        description="A Stop hook says do not continue.",
        steps=(_text("Done."),),
        stop_hooks=(HookOutcome(prevent_continuation=True, stop_reason="policy says stop"),),
        terminal="stop_hook_prevented",
    ),
    Entry(
        name="stop_hook_block_cap",
        description="A Stop hook that always blocks ends the run at the cap, not in a loop.",
        steps=tuple(_text(f"Try {n}.") for n in range(4)),
        stop_hooks=(_BLOCK,) * 4,
        config=LoopConfig(stop_hook_block_cap=2),
        terminal="stop_hook_prevented",
        must_take=("stop_hook_blocking",),
    ),
    Entry(
        name="token_budget_continuation",
        description="Under a token budget the model is nudged on until 90% is used.",
        steps=tuple(_text(f"Work {n}.", usage={"output_tokens": 400}) for n in range(3)),
        config=LoopConfig(token_budget=1000),
        terminal="completed",
        must_take=("token_budget_continuation",),
    ),
    Entry(
        name="blocking_limit",
        description="A prompt over the blocking limit, with no compaction to rescue it.",
        steps=(_text("never sent"),),
        config=LoopConfig(context_window=25_000, autocompact=False, reactive_compact=False),
        prompt_text="x" * 12_000,
        terminal="blocking_limit",
    ),
    Entry(
        name="autocompact",
        description="A prompt over the autocompact threshold is compacted before sending.",
        steps=(_text("Answer."),),
        config=LoopConfig(context_window=40_000),
        prompt_text="y" * 32_000,
        terminal="completed",
        must_take=("autocompact_started", "autocompact_done"),
    ),
    Entry(
        name="autocompact_failed",
        description="A failed autocompact is counted and the request still goes out.",
        steps=(_text("Answer."),),
        config=LoopConfig(context_window=40_000),
        prompt_text="y" * 32_000,
        compactions=(False,),
        terminal="completed",
        must_take=("autocompact_failed",),
    ),
    Entry(
        name="tool_result_budget",
        description="Three results over the per-message budget: the largest fresh ones are "
        "saved to files and the model sees a preview and the path.",
        steps=(
            _tools(("Glob", {"pattern": "*.py"}), ("Glob", {"pattern": "*.md"}), _READ),
            _text("Read the saved listing."),
        ),
        tools={"Glob": ToolScript(content="g" * 450), "Read": ToolScript(content="r" * 300)},
        config=LoopConfig(tool_result_budget_chars=1_000),
        terminal="completed",
        must_take=("tool_results_over_budget", "tool_results_persisted"),
    ),
    Entry(
        name="time_based_microcompact",
        description="Each event comes an hour after the last: before the third request the "
        "oldest tool result is cleared.",
        steps=(_tools(_READ), _tools(_GLOB), _text("Done.")),
        config=LoopConfig(time_based_microcompact=True, microcompact_keep_recent=1),
        seconds_between_events=3_600.0,
        terminal="completed",
        must_take=("old_tool_results_cleared",),
    ),
    Entry(
        name="retry_then_success",
        description="Overloaded once, a rate limit, a dropped connection, then an answer.",
        steps=(
            _error("overloaded"),
            _error("rate_limited"),
            {
                **_text("Lost halfway", chunk=4),
                "error": {"kind": "connection", "mid_stream_after": 3},
            },
            _text("Answer."),
        ),
        config=_QUIET,
        terminal="completed",
        must_take=("request_retried",),
    ),
    Entry(
        name="truncated_stream_retried",
        description="A stream that ends without message_stop is retried, not accepted.",
        steps=({**_text("half an answer"), "error": {"kind": "truncated"}}, _text("Answer.")),
        config=_QUIET,
        terminal="completed",
        must_take=("request_retried",),
    ),
    Entry(
        name="max_tokens_reduced",
        description="Input plus max_tokens over the context limit: ask again for what fits.",
        steps=(_error("output_overflow"), _text("A shorter answer.")),
        terminal="completed",
        must_take=("max_tokens_reduced",),
    ),
    Entry(
        name="model_fallback",
        description="Three overloads in a row switch to the fallback model.",
        steps=(*(_error("overloaded") for _ in range(3)), _text("Answer from the fallback.")),
        config=attrs.evolve(_QUIET, fallback_model="claude-haiku-4-5"),
        terminal="completed",
        must_take=("model_fallback",),
    ),
    Entry(
        name="model_error",
        description="An error that is not retried ends the run model_error.",
        steps=(_error("other"),),
        terminal="model_error",
    ),
    Entry(
        name="model_error_retries_exhausted",
        description="Retries are bounded: always overloaded and no fallback ends model_error.",
        steps=tuple(_error("overloaded") for _ in range(3)),
        config=attrs.evolve(_QUIET, max_retries=2),
        terminal="model_error",
        must_take=("request_retried",),
    ),
    Entry(
        name="aborted_streaming",
        description="The user aborts while the answer streams.",
        steps=(_text("A long answer that will be interrupted.", chunk=4),),
        abort_after=8,
        terminal="aborted_streaming",
    ),
    Entry(
        name="aborted_streaming_with_tools",
        description="Abort mid-stream while a tool started from the stream is running.",
        steps=(
            {
                "content": [
                    {"tool_use": {"name": "Read", "input": {"file_path": "a"}}},
                    {
                        "text": "and more text to come",
                    },
                ],
                "chunk": 3,
            },
        ),
        abort_after=14,
        terminal="aborted_streaming",
    ),
    Entry(
        name="aborted_tools",
        description="The user aborts while tools run; each call still gets its result.",
        steps=(_tools(_READ, _GLOB), _text("never reached")),
        abort_after=16,
        terminal="aborted_tools",
    ),
    Entry(
        name="hook_stopped",
        description="A PostToolUse hook says do not continue: the run ends after the tools.",
        steps=(_tools(_READ), _text("never reached")),
        post_hooks=(HookOutcome(prevent_continuation=True, stop_reason="enough"),),
        terminal="hook_stopped",
    ),
    Entry(
        name="prompt_blocked",
        description="A UserPromptSubmit hook refuses the prompt: no request is ever sent.",
        steps=(_text("never reached"),),
        prompt_hooks=(HookOutcome(blocking_errors=("[./check-prompt.sh]: no secrets, please",)),),
        terminal="prompt_blocked",
    ),
    Entry(
        name="max_turns",
        description="The turn limit ends the run after the tools of the last allowed turn.",
        steps=(_tools(_READ), _text("never reached")),
        config=LoopConfig(max_turns=1),
        terminal="max_turns",
    ),
)


def by_name(name: str) -> Entry:
    """The entry called ``name``."""
    for entry in ENTRIES:
        if entry.name == name:
            return entry
    raise UsageError(f"no catalogue entry {name!r}; known: {', '.join(e.name for e in ENTRIES)}")


def run_entry(
    entry: Entry, feed: Callable[[AgentCore], Callable[..., Any]] | None = None
) -> tuple[AgentCore, WorldRun]:
    """Run an entry to its end; ``feed`` may wrap the core's feed (for tracing)."""
    core = AgentCore(config=entry.config, tools=TOOLS)
    feeder = feed(core) if feed is not None else core.feed
    if entry.seconds_between_events is not None:
        feeder = _stamping(feeder, entry.seconds_between_events)
    run = WorldRun(feeder, entry.world(), prompt(entry.prompt_text))
    run.run()
    _check(entry, run)
    return core, run


def _stamping(feed: Callable[[Any], Any], seconds: float) -> Callable[[Any], Any]:
    """``feed`` with each event stamped ``seconds`` after the one before (SPEC §7.3)."""
    ticks = itertools.count(start=0.0, step=seconds)
    clock = ResponseClock(lambda: next(ticks))

    def stamped(event: Any) -> Any:
        return feed(clock.stamp(event))

    return stamped


def record(entry: Entry, target: str | Path | IO[bytes]) -> tuple[AgentCore, WorldRun]:
    """Run an entry and write its trace to ``target``."""
    from fsm_agent.trace.writer import TraceWriter, TracingCore  # noqa: PLC0415

    writer = TraceWriter(target, config=entry.config, tools=TOOLS, meta={"entry": entry.name})
    try:
        return run_entry(entry, lambda core: TracingCore(core, writer).feed)
    finally:
        writer.close()


def taken_names(run: WorldRun) -> Iterator[str]:
    """Names of every transition a run took."""
    for _event, step in run.steps:
        for transition in step.transitions:
            yield transition.name


def _check(entry: Entry, run: WorldRun) -> None:
    if run.terminal != entry.terminal:
        raise UsageError(f"{entry.name}: ended {run.terminal}, expected {entry.terminal}")
    taken = set(taken_names(run))
    missing = [name for name in entry.must_take if name not in taken]
    if missing:
        raise UsageError(f"{entry.name}: did not take {', '.join(missing)}")
