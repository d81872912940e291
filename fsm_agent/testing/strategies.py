"""Hypothesis strategies for scripted agent runs: model behaviour, tools, hooks, configs.

These are public: a user can combine them with their own tools and policies and check the
DESIGN §6 invariants with :mod:`fsm_agent.testing.invariants`. Generated runs are kept small
(at most eight model steps by default) so that many of them fit in a test run, and every
generated value is a plain scenario dict, a ``World``, a ``LoopConfig`` or ``ToolSpec`` list,
so a failing example prints as something a person can paste into a unit test.

Example::

    @given(config=loop_configs(), world=worlds())
    def test_pairing(config, world):
        core = AgentCore(config=config, tools=tool_specs_for(DEFAULT_TOOLS))
        run = WorldRun(core.feed, world, prompt("hi"))
        run.run()
        assert check_run(core, run.steps, config) == []
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st

from fsm_agent.core import events as ev
from fsm_agent.core.config import LoopConfig
from fsm_agent.core.tool_spec import ToolSpec
from fsm_agent.testing.scenario import parse_scenario, render_events
from fsm_agent.testing.world import ToolScript, World

__all__ = [
    "DEFAULT_TOOLS",
    "SHELL_TOOL",
    "UNKNOWN_TOOL",
    "error_specs",
    "events_through_first_block",
    "hook_outcomes",
    "loop_configs",
    "scenario_steps",
    "tool_scripts",
    "tool_specs",
    "tool_specs_for",
    "worlds",
]

SHELL_TOOL = "Bash"
"""The shell tool of the default tool set: its errors cancel running siblings."""

DEFAULT_TOOLS: tuple[str, ...] = ("Read", "Grep", "Write", SHELL_TOOL)
"""Tool names the strategies use unless told otherwise."""

UNKNOWN_TOOL = "NoSuchTool"
"""A name no tool has; the model sometimes asks for it."""

_ERROR_KINDS = (
    "prompt_too_long",
    "media_too_large",
    "overloaded",
    "rate_limited",
    "server_error",
    "connection",
    "truncated",
    "output_overflow",
    "timeout",
    "other",
)
_WORDS = st.sampled_from(["ok", "done", "look", "a", "file", "hello world", "x" * 40])


def error_specs() -> st.SearchStrategy[dict[str, Any]]:
    """Scripted model failures: every kind, sometimes part-way through the response."""
    plain = st.sampled_from(_ERROR_KINDS).map(lambda kind: {"kind": kind})
    mid_stream = st.builds(
        lambda kind, after: {"kind": kind, "mid_stream_after": after},
        st.sampled_from(_MID_STREAM_KINDS),
        st.integers(min_value=0, max_value=6),
    )
    return st.one_of(plain, plain, mid_stream)


_MID_STREAM_KINDS = ("overloaded", "connection", "server_error", "truncated")
# Kinds the loop retries (or falls back on): most failures should let the run go on.
_RETRIED_KINDS = ("overloaded", "rate_limited", "server_error", "connection", "timeout")


def _recoverable_errors() -> st.SearchStrategy[dict[str, Any]]:
    return st.sampled_from(_RETRIED_KINDS).map(lambda kind: {"kind": kind})


def _tool_use(tool_names: Sequence[str]) -> st.SearchStrategy[dict[str, Any]]:
    return st.builds(
        lambda name, arg: {"tool_use": {"name": name, "input": {"arg": arg}}},
        st.sampled_from([*tool_names, *tool_names, UNKNOWN_TOOL]),
        _WORDS,
    )


def _blocks(tool_names: Sequence[str]) -> st.SearchStrategy[list[dict[str, Any]]]:
    text = _WORDS.map(lambda words: {"text": words})
    thinking = _WORDS.map(lambda words: {"thinking": words})
    tool_use = _tool_use(tool_names)
    return st.lists(st.one_of(text, thinking, tool_use, tool_use), min_size=1, max_size=4)


def _tool_blocks(tool_names: Sequence[str]) -> st.SearchStrategy[list[dict[str, Any]]]:
    """Blocks that start with a tool_use (a failure can then strike right after it)."""
    return st.builds(lambda first, rest: [first, *rest], _tool_use(tool_names), _blocks(tool_names))


def events_through_first_block(content: list[dict[str, Any]]) -> int:
    """How many stream events a response with ``content`` sends up to and including the
    stop of its first content block (for a ``mid_stream_after`` that follows a whole block)."""
    step = parse_scenario({"steps": [{"content": content}]}).steps[0]
    types = [event["type"] for event in render_events(step)]
    return types.index("content_block_stop") + 1


def _failing_after_tools(tool_names: Sequence[str]) -> st.SearchStrategy[dict[str, Any]]:
    """A response that fails mid-stream after its first tool_use block has closed, so retries
    and fallbacks meet calls that were already handed to the executor (SPEC §5.2 "Ours")."""
    return st.builds(
        lambda content, kind, later: {
            "content": content,
            "error": {
                "kind": kind,
                "mid_stream_after": events_through_first_block(content) + later,
            },
        },
        _tool_blocks(tool_names),
        st.sampled_from(_MID_STREAM_KINDS),
        st.integers(min_value=0, max_value=8),
    )


def _reply(blocks: st.SearchStrategy[list[dict[str, Any]]]) -> st.SearchStrategy[dict[str, Any]]:
    return st.builds(
        lambda content, stop, output: {
            "content": content,
            **({"stop_reason": stop} if stop is not None else {}),
            **(
                {"usage": {"input_tokens": 50, "output_tokens": output}}
                if output is not None
                else {}
            ),
        },
        blocks,
        st.sampled_from([*[None] * 8, "max_tokens", "max_tokens", "pause_turn", "refusal"]),
        st.none() | st.integers(min_value=0, max_value=3000),
    )


def _weighted(choices: Sequence[tuple[int, st.SearchStrategy[Any]]]) -> st.SearchStrategy[Any]:
    """Pick one of ``choices`` with the given weights (``one_of`` flattens nested
    alternatives into equal shares, so repeating a branch does not weigh it)."""
    labels = [index for index, (weight, _) in enumerate(choices) for _ in range(weight)]
    return st.sampled_from(labels).flatmap(lambda index: choices[index][1])


def _step(
    tool_names: Sequence[str], *, tools: int = 6, failing_after_tools: int = 2
) -> st.SearchStrategy[dict[str, Any]]:
    # Weights: most steps ask for tools and most failures are retried, so that most runs
    # reach tool execution and many meet a retry or fallback after a tool block; every kind
    # of failure and reply still comes up.
    failing_reply = st.builds(
        lambda content, error: {"content": content, "error": error},
        _blocks(tool_names),
        error_specs(),
    )
    return _weighted(
        [
            (tools, _reply(_tool_blocks(tool_names))),
            (2, _reply(_blocks(tool_names))),
            (failing_after_tools, _failing_after_tools(tool_names)),
            (1, _recoverable_errors().map(lambda error: {"error": error})),
            (1, error_specs().map(lambda error: {"error": error})),
            (1, failing_reply),
        ]
    )


def scenario_steps(
    tool_names: Sequence[str] = DEFAULT_TOOLS, *, max_steps: int = 8
) -> st.SearchStrategy[list[dict[str, Any]]]:
    """Lists of scenario step dicts (the format of ``fsm_agent.testing.scenario``).

    Steps answer with text, thinking and tool_use blocks (tools from ``tool_names`` plus an
    unknown one), sometimes stop at ``max_tokens``, ``pause_turn`` or ``refusal``, or fail with
    any scripted error kind, plainly or mid-stream (often right after a tool_use block). Most
    steps ask for tools and most failures are ones the loop retries, so most runs go deep.

    Args:
        tool_names: the tools the model may ask for.
        max_steps: most steps in one scenario.

    Returns:
        A strategy of step lists, ready for ``parse_scenario({"steps": ...})``.
    """
    done = [{"content": [{"text": "done"}]}]
    closing = st.sampled_from([[], done, done, done])
    # The first step mostly asks for tools (plainly or failing after a tool block), so that
    # most runs get past their first response.
    first = _step(tool_names, tools=16, failing_after_tools=4)
    return st.builds(
        lambda head, rest, end: ([head, *rest][: max(max_steps - len(end), 1)] + end)[:max_steps],
        first,
        st.lists(_step(tool_names), max_size=max_steps - 1),
        closing,
    )


def tool_scripts() -> st.SearchStrategy[ToolScript]:
    """How a scripted tool behaves: safe or unsafe, erroring, rejecting its input."""
    return st.builds(
        ToolScript,
        safe=st.booleans(),
        valid=st.sampled_from([True, True, True, False]),
        is_error=st.sampled_from([False, False, True]),
        content=_WORDS,
        context_update=st.none() | st.just({"cwd": "/tmp"}),
    )


def hook_outcomes(*, tool_hook: bool = True) -> st.SearchStrategy[ev.HookOutcome]:
    """Hook answers: nothing, blocking errors, a stop, a deny (tool hooks), extra context."""
    nothing = st.just(ev.HookOutcome())
    blocking = _WORDS.map(lambda text: ev.HookOutcome(blocking_errors=(text,)))
    stop = _WORDS.map(lambda text: ev.HookOutcome(prevent_continuation=True, stop_reason=text))
    context = _WORDS.map(lambda text: ev.HookOutcome(additional_context=(text,)))
    choices = [nothing, nothing, nothing, blocking, stop, context]
    if tool_hook:
        choices.append(
            _WORDS.map(
                lambda text: ev.HookOutcome(decision=ev.HookDecision.DENY, decision_reason=text)
            )
        )
    return st.one_of(*choices)


def worlds(
    tool_names: Sequence[str] = DEFAULT_TOOLS, *, max_steps: int = 8
) -> st.SearchStrategy[World]:
    """Scripted outside worlds: a model scenario, tools, hooks, permissions, compaction.

    Args:
        tool_names: the tools the model may ask for (each gets a generated ``ToolScript``).
        max_steps: most model steps in the scenario.

    Returns:
        A strategy of ``World`` values.
    """
    names = list(tool_names)
    return st.builds(
        lambda steps, tools, pre, post, stop, deny, compactions, collapses, abort_after: World(
            scenario=parse_scenario({"steps": steps}),
            tools=dict(zip(names, tools, strict=True)),
            pre_hooks=tuple(pre),
            post_hooks=tuple(post),
            stop_hooks=tuple(stop),
            deny_tools=frozenset(deny),
            compactions=tuple(compactions),
            collapses=tuple(collapses),
            abort_after=abort_after,
        ),
        scenario_steps(tool_names, max_steps=max_steps),
        st.lists(tool_scripts(), min_size=len(names), max_size=len(names)),
        st.lists(hook_outcomes(), max_size=4),
        st.lists(hook_outcomes(), max_size=4),
        st.lists(hook_outcomes(tool_hook=False), max_size=4),
        st.sets(st.sampled_from(names)) if names else st.just(set[str]()),
        st.lists(st.booleans(), max_size=4),
        st.lists(st.integers(min_value=0, max_value=2), max_size=3),
        _weighted([(5, st.none()), (1, st.integers(min_value=1, max_value=60))]),
    )


def loop_configs() -> st.SearchStrategy[LoopConfig]:
    """Loop configurations with small bounds, so every bound is reached in small runs."""
    return st.builds(
        LoopConfig,
        fallback_model=st.none() | st.just("fallback-model"),
        max_turns=st.none() | st.integers(min_value=1, max_value=3),
        escalate_output_tokens=st.booleans(),
        max_output_tokens_override=st.none() | st.none() | st.just(16_000),
        max_output_tokens_recoveries=st.integers(min_value=0, max_value=3),
        stop_hook_block_cap=st.integers(min_value=1, max_value=3),
        autocompact=st.booleans(),
        reactive_compact=st.booleans(),
        context_collapse=st.sampled_from([False, False, True]),
        autocompact_failure_limit=st.integers(min_value=1, max_value=3),
        max_compactions_per_turn=st.integers(min_value=1, max_value=3),
        context_window=st.sampled_from([200_000, 200_000, 33_050, 23_030]),
        max_retries=st.sampled_from([0, 1, 2, 2, 3, 3]),
        overloaded_before_fallback=st.integers(min_value=1, max_value=3),
        streaming_tool_execution=st.booleans(),
        max_tool_concurrency=st.integers(min_value=1, max_value=3),
        token_budget=st.none() | st.none() | st.sampled_from([100, 5_000]),
    )


def tool_specs_for(names: Sequence[str] = DEFAULT_TOOLS) -> list[ToolSpec]:
    """Plain specs for ``names``; ``Bash`` is the shell tool."""
    return [ToolSpec(name=name, is_shell=name == SHELL_TOOL) for name in names]


def tool_specs(names: Sequence[str] = DEFAULT_TOOLS) -> st.SearchStrategy[list[ToolSpec]]:
    """Specs for ``names`` with generated flags (shell, cancelled by an interrupt)."""
    return st.lists(
        st.tuples(st.booleans(), st.booleans()), min_size=len(names), max_size=len(names)
    ).map(
        lambda flags: [
            ToolSpec(name=name, is_shell=name == SHELL_TOOL or shell, interrupt_cancels=cancels)
            for name, (shell, cancels) in zip(names, flags, strict=True)
        ]
    )
