"""Per-step cost of Burr and LangGraph running the loop shape that ``run.py`` gives them.

This script runs in its own virtualenv (``run.py`` makes it, with apache-burr and langgraph
from the package index), never in fsm_agent's, and imports nothing of fsm_agent. It reads
one JSON object on standard input:

    {"steps": [["loop_iter_init", null], ["loop_post_stream", {"role": "assistant", ...}], ...],
     "prompt": {"role": "user", ...}, "runs": 20, "repeat": 5}

``steps`` is the path of one run: one graph node per step, named after the transition our core
took there, with the message (if any) that the step appends to the history. Both peers get a
graph whose nodes are those names and whose edges are the successions the path shows; each node
is a trivial in-memory action (move a cursor, name the next node, append its message) and
every edge is conditional on the node named next, as our guards are. Nothing is traced,
persisted or checkpointed: the peers run untraced.

It prints one JSON object: for each peer its version and the median CPU seconds per step (the
median over ``repeat`` batches of ``runs`` whole runs, each run timed from its first step to
its last, the graph built beforehand), or the error that kept it from running.
"""

from __future__ import annotations

import importlib.metadata
import itertools
import json
import operator
import statistics
import sys
import time
from collections.abc import Callable
from typing import Annotated, Any, TypedDict

Path = list[tuple[str, dict[str, Any] | None]]


def successors(path: Path) -> dict[str, list[str]]:
    """Each node's distinct successors in the path, in the order they first follow it."""
    following: dict[str, list[str]] = {name: [] for name, _message in path}
    for (name, _message), (after, _next_message) in itertools.pairwise(path):
        if after not in following[name]:
            following[name].append(after)
    return following


def per_step(run_once: Callable[[], int], *, steps: int, runs: int, repeat: int) -> float:
    """Median seconds per step over ``repeat`` batches of ``runs`` runs of ``steps`` steps;
    ``run_once`` does one whole run and returns the nanoseconds its steps took (set-up
    excluded)."""
    samples = []
    for _ in range(repeat):
        spent = 0
        for _ in range(runs):
            spent += run_once()
        samples.append(spent)
    return statistics.median(samples) / 1e9 / runs / steps


def burr_seconds(path: Path, prompt: dict[str, Any], *, runs: int, repeat: int) -> float:
    """Burr: one function-based action per node, ``when(next=...)`` transitions, ``run``
    until the last node (no tracker, no persister)."""
    from burr.core import ApplicationBuilder, State, action, when

    names = [name for name, _message in path]
    messages = {index: message for index, (_name, message) in enumerate(path)}

    def node(name: str) -> Callable[..., State]:
        @action(reads=["cursor", "messages"], writes=["cursor", "next", "messages"])
        def step(state: State) -> State:
            cursor = state["cursor"] + 1
            following = names[cursor + 1] if cursor + 1 < len(names) else ""
            message = messages[cursor]
            state = state.update(cursor=cursor, next=following)
            return state.append(messages=message) if message is not None else state

        step.__name__ = name
        return step

    transitions = [
        (name, after, when(next=after))
        for name, afters in successors(path).items()
        for after in afters
    ]

    def run_once() -> int:
        app = (
            ApplicationBuilder()
            .with_actions(**{name: node(name) for name in dict.fromkeys(names)})
            .with_transitions(*transitions)
            .with_state(cursor=-1, next=names[0], messages=[prompt])
            .with_entrypoint(names[0])
            .build()
        )
        start = time.process_time_ns()
        _action, _result, state = app.run(halt_after=[names[-1]])
        spent = time.process_time_ns() - start
        if state["cursor"] != len(names) - 1:
            raise RuntimeError(f"Burr stopped at step {state['cursor']} of {len(names)}")
        return spent

    return per_step(run_once, steps=len(names), runs=runs, repeat=repeat)


class LoopState(TypedDict):
    """LangGraph's state: the cursor, the node named next and the history (appended to)."""

    cursor: int
    next: str
    messages: Annotated[list[dict[str, Any]], operator.add]


def langgraph_seconds(path: Path, prompt: dict[str, Any], *, runs: int, repeat: int) -> float:
    """LangGraph: a ``StateGraph`` with one node per name and a conditional edge out of each,
    compiled once (no checkpointer) and invoked per run."""
    from langgraph.graph import END, START, StateGraph

    names = [name for name, _message in path]
    messages = {index: message for index, (_name, message) in enumerate(path)}
    graph = StateGraph(LoopState)

    def node(state: LoopState) -> dict[str, Any]:
        cursor = state["cursor"] + 1
        following = names[cursor + 1] if cursor + 1 < len(names) else END
        message = messages[cursor]
        return {
            "cursor": cursor,
            "next": following,
            "messages": [message] if message is not None else [],
        }

    def route(state: LoopState) -> str:
        return state["next"]

    for name, afters in successors(path).items():
        graph.add_node(name, node)
        graph.add_conditional_edges(name, route, [*afters] if afters else [END])
    graph.add_edge(START, names[0])
    compiled = graph.compile()
    limit = {"recursion_limit": len(names) + 10}

    def run_once() -> int:
        start = time.process_time_ns()
        state = compiled.invoke({"cursor": -1, "next": names[0], "messages": [prompt]}, limit)
        spent = time.process_time_ns() - start
        if state["cursor"] != len(names) - 1:
            raise RuntimeError(f"LangGraph stopped at step {state['cursor']} of {len(names)}")
        return spent

    return per_step(run_once, steps=len(names), runs=runs, repeat=repeat)


def main() -> int:
    request = json.load(sys.stdin)
    path: Path = [(name, message) for name, message in request["steps"]]
    names = [name for name, _message in path]
    if names.count(names[-1]) != 1:
        raise SystemExit(f"the last node {names[-1]!r} must occur once in the path")
    runs, repeat = request["runs"], request["repeat"]
    report: dict[str, Any] = {"steps": len(path)}
    for peer, package, measure in (
        ("burr", "apache-burr", burr_seconds),
        ("langgraph", "langgraph", langgraph_seconds),
    ):
        try:
            seconds = measure(path, request["prompt"], runs=runs, repeat=repeat)
        except Exception as error:  # a peer that fails is reported, the other still measured
            report[peer] = {"error": f"{type(error).__name__}: {error}"}
        else:
            version = importlib.metadata.version(package)
            report[peer] = {"version": version, "seconds_per_step": seconds}
    json.dump(report, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
