"""Issue 10: per step against Burr and LangGraph, running the loop shape our core runs.

The peers are installed in the benchmark's own virtualenv (``bench/.peers-venv``, made once and
kept; git ignores it) from the package index, never in fsm_agent's environment, and measured
there by ``peers_loop.py``. Without the index (no network) the figures are printed as skipped,
with the reason.

The shape: a session of ``TURNS`` model turns, each asking for one tool call, then an answer.
Our core runs it from recorded events, traced into memory (every record written counted).
The peers run it at two granularities, each with as many steps per run as ours and the same
history (the prompt, then one message per model answer and per tool result):

* **per transition**: one peer step per transition our core takes (loop and tool-call rows),
  each node named after the row's destination; this is the figure DESIGN §7's goals speak of
  (a traced transition ≤ 0.5× a Burr step, ≤ 0.1× a LangGraph step);
* **per loop step**: one peer step per model call, per tool call and the stop; ours is then
  the whole traced run divided by the same number of steps.
"""

from __future__ import annotations

import io
import json
import shutil
import statistics
import subprocess
import sys
import time
import venv
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from fsm_agent.core.agent_core import AgentCore
from fsm_agent.core.events import Event
from fsm_agent.testing.catalogue import TOOLS, Entry, run_entry
from fsm_agent.trace.writer import TraceWriter, TracingCore

HERE = Path(__file__).resolve().parent
PEERS_VENV = HERE / ".peers-venv"
# Pinned so that figures from different days compare; bump both lines together.
PEER_REQUIREMENTS = ("apache-burr==0.43.0", "langgraph==1.2.24")
_PIP_INSTALL = ("-m", "pip", "install", "--quiet", "--retries", "1", "--timeout", "30")
_INSTALLED_MARK = "fsm-agent-peers.txt"  # written last: a venv without it is rebuilt
TURNS = 10
GOALS = {"Burr": 0.5, "LangGraph": 0.1}  # ours traced ÷ theirs untraced, per step (DESIGN §7)

Row = Callable[[str, str, str], None]
PathStep = tuple[str, dict[str, Any] | None]


def peers_python() -> tuple[Path | None, str]:
    """The peers' interpreter, installing them on first use; or None and why not."""
    python = PEERS_VENV / "bin" / "python"
    mark = PEERS_VENV / _INSTALLED_MARK
    wanted = "\n".join(PEER_REQUIREMENTS) + "\n"
    if mark.is_file() and mark.read_text(encoding="utf-8") == wanted and python.exists():
        return python, ""
    if PEERS_VENV.exists():  # a half-made or outdated environment: start again
        shutil.rmtree(PEERS_VENV)
    try:
        venv.EnvBuilder(with_pip=True, clear=True).create(PEERS_VENV)
    except (OSError, subprocess.CalledProcessError) as error:
        return None, f"cannot make the peers' virtualenv: {error}"
    try:
        installed = subprocess.run(
            [str(python), *_PIP_INSTALL, *PEER_REQUIREMENTS],
            capture_output=True,
            text=True,
            check=False,
            timeout=900,
        )
    except subprocess.TimeoutExpired:
        return None, "pip install of the peers took over 15 minutes"
    if installed.returncode != 0:
        lines = [line for line in installed.stderr.splitlines() if line.strip()]
        return None, f"pip install failed: {lines[-1] if lines else installed.returncode}"
    mark.write_text(wanted, encoding="utf-8")
    return python, ""


def loop_entry(turns: int = TURNS) -> Entry:
    """``turns`` model turns that each ask for one Read, then an answer."""
    read = {"tool_use": {"name": "Read", "input": {"file_path": "a.txt"}}}
    asking = {"content": [{"text": "Checking."}, read]}
    return Entry(
        name=f"peer_loop_{turns}",
        description="the loop shape measured against the peers",
        steps=(*[asking] * turns, {"content": [{"text": "done"}]}),
        terminal="completed",
    )


def _answer(turn: int) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": "Checking."}]
    content.append(
        {"type": "tool_use", "id": f"toolu_{turn}", "name": "Read", "input": {"file_path": "a"}}
    )
    return {"role": "assistant", "content": content}


def _result(turn: int) -> dict[str, Any]:
    result = {"type": "tool_result", "tool_use_id": f"toolu_{turn}", "content": "alpha\n"}
    return {"role": "user", "content": [result]}


def transition_path(entry: Entry) -> tuple[list[PathStep], list[Event]]:
    """One peer node per transition the entry's run takes (named ``<machine>_<destination>``),
    the message each appends (a model answer where the stream ends, a tool result where it is
    handed to the loop), and the run's events for our core."""
    _core, run = run_entry(entry)
    path: list[PathStep] = []
    turn = 0
    final = {"role": "assistant", "content": [{"type": "text", "text": "done"}]}
    for _event, step in run.steps:
        for taken in step.transitions:
            message = None
            if taken.name == "stream_ended":
                turn += 1
                message = _answer(turn) if turn < len(entry.steps) else final
            elif taken.name == "result_yielded":
                message = _result(turn)
            path.append((f"{taken.machine}_{taken.dest}", message))
    return path, [event for event, _step in run.steps]


def loop_path(transitions: list[PathStep]) -> list[PathStep]:
    """One peer node per model call and per tool call (with the messages the transition path
    appends there), then the stop."""
    path: list[PathStep] = []
    for _name, message in transitions:
        if message is not None:
            path.append(("model" if message["role"] == "assistant" else "tools", message))
    return [*path, ("stop", None)]


def our_run_seconds(entry: Entry, events: list[Event], *, runs: int) -> float:
    """CPU seconds of one run of ``events`` through a fresh core traced into memory (the mean
    of ``runs`` runs); the core and the trace's header are made before the clock starts, as
    the peers' graphs are built before theirs."""
    spent = 0.0
    for _ in range(runs):
        writer = TraceWriter(io.BytesIO(), config=entry.config, tools=TOOLS)
        feed = TracingCore(AgentCore(config=entry.config, tools=TOOLS), writer).feed
        start = time.process_time()
        for event in events:
            feed(event)
        spent += time.process_time() - start
    return spent / runs


def peer_seconds(
    python: Path, path: list[PathStep], *, runs: int, repeat: int
) -> dict[str, dict[str, Any]]:
    """The peers' report for ``path``, from ``peers_loop.py`` in their environment."""
    prompt = {"role": "user", "content": "go"}
    request = {"steps": path, "prompt": prompt, "runs": runs, "repeat": repeat}
    done = subprocess.run(
        [str(python), str(HERE / "peers_loop.py")],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        check=False,
        timeout=1_800,
    )
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines() or [f"exit status {done.returncode}"]
        failed = {"error": f"peers_loop.py failed: {lines[-1]}"}
        return {"burr": failed, "langgraph": failed}
    report: dict[str, dict[str, Any]] = json.loads(done.stdout)
    return report


def interleaved_seconds(
    python: Path, entry: Entry, events: list[Event], path: list[PathStep], *, runs: int, repeat: int
) -> tuple[float, dict[str, dict[str, Any]]]:
    """Ours and the peers' seconds per step of ``path``, measured in turns (a batch of ours,
    then a batch of theirs, ``repeat`` times) so that a shared machine's load weighs on both
    sides alike; the medians of the batches."""
    ours: list[float] = []
    theirs: dict[str, list[float]] = {"burr": [], "langgraph": []}
    reports: dict[str, dict[str, Any]] = {}
    for _ in range(repeat):
        ours.append(our_run_seconds(entry, events, runs=runs) / len(path))
        reports = peer_seconds(python, path, runs=runs, repeat=1)
        for key, samples in theirs.items():
            if "seconds_per_step" in reports.get(key, {}):
                samples.append(reports[key]["seconds_per_step"])
    for key, samples in theirs.items():
        if samples and key in reports and "error" not in reports[key]:
            reports[key] = {**reports[key], "seconds_per_step": statistics.median(samples)}
    return statistics.median(ours), reports


def _compared(
    ours: float, peers: dict[str, dict[str, Any]], *, unit: str, goals: bool
) -> Iterator[tuple[str, str, str]]:
    """The rows of one granularity: each peer's µs per ``unit`` and ours as a ratio to it."""
    for name, key in (("Burr", "burr"), ("LangGraph", "langgraph")):
        label = f"  {name}, per {unit}"
        figures = peers.get(key, {"error": "not measured"})
        if "error" in figures:
            yield label, "skipped", str(figures["error"])
            continue
        theirs = figures["seconds_per_step"]
        ratio = ours / theirs
        note = f"ours traced = {ratio:.2f}× {name} {figures['version']}, untraced"
        if goals:
            reached = ratio <= GOALS[name]
            note += f"; goal ≤ {GOALS[name]}×" + ("" if reached else " (goal not reached)")
        yield label, f"{theirs * 1e6:8.1f} µs", note


def report(row: Row, *, quick: bool) -> None:
    """Print the peer figures (or why they were skipped) with ``row``."""
    python, why = peers_python()
    if python is None:
        row("Burr / LangGraph, per step", "skipped", why)
        return
    runs, repeat = (10, 3) if quick else (20, 5)
    entry = loop_entry()
    transitions, events = transition_path(entry)
    coarse = loop_path(transitions)
    row(
        "peer loop shape",
        f"{TURNS:8d} turns",
        f"one tool call each, then the answer; {len(transitions)} transitions, {len(coarse)} loop"
        f" steps, {len(events)} events a run; CPU time",
    )
    granularities = (
        ("transition", transitions, "the whole traced run ÷ its transitions", True),
        ("loop step", coarse, "the same run ÷ its model calls, tool calls and stop", False),
    )
    for unit, path, how, goals in granularities:
        ours, peers = interleaved_seconds(python, entry, events, path, runs=runs, repeat=repeat)
        row(f"ours traced, per {unit}", f"{ours * 1e6:8.1f} µs", f"{how} (every record counted)")
        for label, value, note in _compared(ours, peers, unit=unit, goals=goals):
            row(label, value, note)


if __name__ == "__main__":  # this part alone: python bench/peer_comparison.py [--quick]

    def _row(label: str, value: str, note: str) -> None:
        print(f"{label:<36} {value:>12}   {note}")

    report(_row, quick="--quick" in sys.argv)
