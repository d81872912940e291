"""Helpers shared by the trace tests: recording real runs, and a tiny fake core.

The other ``test_trace_*`` modules import from here (pytest puts this folder on ``sys.path``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from trace_layouts import dump_lines, expand_line

from fsm_agent.core import effects as fx
from fsm_agent.core import events as ev
from fsm_agent.core.agent_core import AgentCore
from fsm_agent.core.config import LoopConfig
from fsm_agent.core.messages import Message, Usage
from fsm_agent.core.step import Step, TransitionTaken
from fsm_agent.core.tool_spec import ToolSpec
from fsm_agent.errors import IllegalTransition
from fsm_agent.testing.scenario import load_shipped_scenario, parse_scenario
from fsm_agent.testing.world import World, WorldRun, prompt
from fsm_agent.trace.records import as_lines
from fsm_agent.trace.writer import TraceWriter, TracingCore

CONFIG = LoopConfig()
TOOLS = (ToolSpec(name="Read"),)


def record_run(
    path: Path,
    scenario: str | dict[str, Any] = "tool_then_reply",
    *,
    text: str = "hello",
    secrets: tuple[str, ...] = (),
    world: dict[str, Any] | None = None,
) -> Path:
    """Record one run of the real core against a scripted world into ``path``."""
    loaded = (
        load_shipped_scenario(scenario) if isinstance(scenario, str) else parse_scenario(scenario)
    )
    core = AgentCore(config=CONFIG, tools=TOOLS)
    with TraceWriter(path, config=CONFIG, tools=TOOLS, secrets=secrets) as writer:
        run = WorldRun(
            TracingCore(core, writer).feed, World(scenario=loaded, **(world or {})), prompt(text)
        )
        run.run()
    return path


def lines_of(path: Path) -> list[dict[str, Any]]:
    """Every record of a trace, parsed: the header, then one dict per record (the
    transitions and effects of a line each on their own)."""
    out: list[dict[str, Any]] = []
    for number, line in enumerate(path.read_bytes().splitlines(), start=1):
        out.extend(expand_line(orjson.loads(line), number))
    return out


def write_lines(path: Path, records: list[dict[str, Any]]) -> Path:
    """Write record dicts as a trace file laid out as the writer lays it out (sorted keys;
    a feed's transitions and effects on its event's line)."""
    return dump_lines(path, as_lines(records))


class FakeCore:
    """A tiny deterministic core: a turn calls the model, ``tool_use`` starts a tool call.

    Enough machinery to test replay, fork and resume without the real tables.
    """

    def __init__(self, config: LoopConfig, tools: tuple[ToolSpec, ...]) -> None:
        self.config = config
        self.tools = tools
        self._phase = "idle"
        self._terminal: str | None = None
        self._requests = 0
        self._effects = 0
        self._calls: list[str] = []
        self._running: set[str] = set()
        self._usage = Usage()

    @property
    def phase(self) -> str:
        """The current phase."""
        return self._phase

    @property
    def terminal(self) -> str | None:
        """The terminal reason, once reached."""
        return self._terminal

    @property
    def transcript(self) -> tuple[Message, ...]:
        """No transcript is kept."""
        return ()

    @property
    def usage(self) -> Usage:
        """Output tokens counted from ``message_delta`` events."""
        return self._usage

    def _move(self, name: str, dest: str) -> TransitionTaken:
        taken = TransitionTaken(machine="loop", name=name, source=self._phase, dest=dest)
        self._phase = dest
        return taken

    def _call_model(self) -> fx.CallModel:
        self._requests += 1
        self._effects += 1
        return fx.CallModel(
            effect_id=f"e{self._effects}",
            request_id=f"r{self._requests}",
            model=self.config.model,
            max_output_tokens=self.config.max_output_tokens,
        )

    def feed(self, event: ev.Event) -> Step:
        """Process one event."""
        if self._terminal is not None:
            raise IllegalTransition(phase=self._phase, event=type(event).__name__, legal=())
        if isinstance(event, ev.TurnStarted) and self._phase == "idle":
            moved = self._move("request_sent", "streaming")
            return Step(transitions=(moved,), effects=(self._call_model(),))
        if isinstance(event, ev.ModelStreamEvent) and self._phase == "streaming":
            block = event.event.get("content_block") or {}
            if block.get("type") == "tool_use":
                self._calls.append(str(block["id"]))
            usage = event.event.get("usage") or {}
            if event.event.get("type") == "message_delta" and usage:
                self._usage = self._usage + Usage(output_tokens=usage.get("output_tokens", 0))
            return Step()
        if isinstance(event, ev.ModelStreamClosed) and self._phase == "streaming":
            if not self._calls:
                moved = self._move("completed", "completed")
                self._terminal = "completed"
                return Step(transitions=(moved,), terminal="completed")
            moved = self._move("tools_requested", "tool_exec")
            runs = []
            for call in self._calls:
                self._effects += 1
                self._running.add(call)
                runs.append(
                    fx.RunToolStep(
                        effect_id=f"e{self._effects}",
                        call_id=call,
                        step=fx.ToolStep.CALL,
                        tool_name="Read",
                        input={"file_path": "README.md"},
                    )
                )
            self._calls = []
            return Step(transitions=(moved,), effects=tuple(runs))
        if isinstance(event, ev.ToolCallFinished) and event.call_id in self._running:
            self._running.discard(event.call_id)
            done = TransitionTaken(
                machine="tool",
                name="call_returned",
                source="running",
                dest="completed",
                call_id=event.call_id,
            )
            if self._running:
                return Step(transitions=(done,))
            moved = self._move("next_turn", "streaming")
            return Step(transitions=(done, moved), effects=(self._call_model(),))
        if isinstance(event, ev.AbortRequested):
            moved = self._move("aborted_streaming", "aborted_streaming")
            self._terminal = "aborted_streaming"
            return Step(transitions=(moved,), terminal="aborted_streaming")
        raise IllegalTransition(phase=self._phase, event=type(event).__name__, legal=())


FAKE_DIGEST = "fake-tables"


def fake_events() -> list[ev.Event]:
    """A fake run: one tool call, then a text answer."""
    tool_start = {
        "type": "content_block_start",
        "index": 0,
        "content_block": {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {}},
    }
    delta = {
        "type": "message_delta",
        "delta": {"stop_reason": "end_turn"},
        "usage": {"output_tokens": 7},
    }
    return [
        ev.TurnStarted(messages=prompt("hi")),
        ev.ModelStreamEvent(request_id="r1", event=tool_start),
        ev.ModelStreamClosed(request_id="r1"),
        ev.ToolCallFinished(call_id="toolu_1", content="file text"),
        ev.ModelStreamEvent(request_id="r2", event=delta),
        ev.ModelStreamClosed(request_id="r2"),
    ]


def record_fake(path: Path, events: list[ev.Event] | None = None) -> Path:
    """Record the fake core over ``events`` (default :func:`fake_events`)."""
    core = FakeCore(CONFIG, TOOLS)
    with TraceWriter(path, config=CONFIG, tools=TOOLS, table_digest=FAKE_DIGEST) as writer:
        tracing = TracingCore(core, writer)
        for event in events if events is not None else fake_events():
            tracing.feed(event)
    return path


def test_fake_core_is_deterministic(tmp_path: Path) -> None:
    """Two recordings of the fake core over the same events are byte-identical."""
    first = record_fake(tmp_path / "a.jsonl").read_bytes()
    second = record_fake(tmp_path / "b.jsonl").read_bytes()
    assert first == second
    assert lines_of(tmp_path / "a.jsonl")[-1]["terminal"] == "completed"


def test_real_recording_ends_completed(tmp_path: Path) -> None:
    """The shipped tool_then_reply scenario records a completed run with an end record."""
    records = lines_of(record_run(tmp_path / "t.jsonl"))
    assert records[0]["record"] == "header"
    assert records[-1] == {**records[-1], "record": "end", "terminal": "completed"}
