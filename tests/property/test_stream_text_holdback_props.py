"""A secret a model streams over several deltas never reaches the trace, in one piece or in
parts, and the pieces still join to the block's text as the redactor gives it (DESIGN §8)."""

from __future__ import annotations

import io
import itertools
from collections.abc import Callable
from typing import Any

import orjson
from hypothesis import given
from hypothesis import strategies as st

from fsm_agent.core import effects as fx
from fsm_agent.core.agent_core import AgentCore
from fsm_agent.core.config import LoopConfig
from fsm_agent.core.events import (
    Event,
    ModelStreamEvent,
    ToolCallFinished,
    ToolInputValidated,
    ToolProgressReported,
)
from fsm_agent.core.step import Step, TransitionTaken
from fsm_agent.testing.scenario import parse_scenario
from fsm_agent.testing.strategies import tool_specs_for
from fsm_agent.testing.world import ToolScript, World, WorldRun, prompt
from fsm_agent.trace import records
from fsm_agent.trace.reader import read_trace
from fsm_agent.trace.redact import KEY_RULES_ONLY, Redactor
from fsm_agent.trace.replay import replay
from fsm_agent.trace.stream_text_holdback import held_back_lines
from fsm_agent.trace.writer import TraceWriter, TracingCore

SECRETS = ("hunter2-secret", "hunter2-secret-and-more", "zz9-plural-z-alpha")
"""The second begins with the first: the first is held until the text says which it is."""
KEY = "sk-ant-api03-Zq8x_y-0123456789abcdef"
_KINDS = {"text_delta": "text", "thinking_delta": "thinking"}
_PING = {"type": "ping"}


@st.composite
def _texts(draw: st.DrawFn) -> str:
    """Text with secrets, keys and their beginnings among ordinary words."""
    words = st.sampled_from(
        [
            *SECRETS,
            KEY,
            "sk-ant-",
            "sk-",
            "s",
            "hunter",
            "hunter2-secret-and",
            "zz9",
            "plain words",
            " ",
            ".",
            "\n",
        ]
    )
    return "".join(draw(st.lists(words, max_size=12)))


@st.composite
def _split(draw: st.DrawFn, text: str) -> list[str]:
    """``text`` cut at drawn places (empty pieces included)."""
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), max_size=len(text) // 2 + 3)))
    edges = [0, *cuts, len(text)]
    return [text[start:end] for start, end in itertools.pairwise(edges)]


def _delta(index: int, kind: str, piece: str) -> dict[str, Any]:
    return {
        "type": "content_block_delta",
        "index": index,
        "delta": {"type": kind, _KINDS[kind]: piece},
    }


_PROGRESSING = "toolu_progress"
"""The call whose progress texts come in pieces (a command's output, in chunks)."""
_OTHER = "toolu_other"
_MOVED = Step(
    transitions=(
        TransitionTaken(
            machine="tool", name="validated", source="validating", dest="permission", call_id=_OTHER
        ),
    ),
    effects=(fx.RunToolStep(effect_id="e9", call_id=_OTHER, step=fx.ToolStep.CALL, tool_name="x"),),
)
"""The step of another call's event: it cannot wait behind a held piece."""
_FINISHED = Step(
    transitions=(
        TransitionTaken(
            machine="tool", name="finished", source="executing", dest="done", call_id=_PROGRESSING
        ),
    ),
)


def _between(data: st.DataObject) -> list[tuple[Event, Step]]:
    """What comes between two pieces: nothing, a ping, another call's progress (its step
    performs nothing), another call's event whose step performs something."""
    choice = data.draw(st.integers(0, 7))
    if choice == 0:  # the API keeps a quiet stream open
        return [(ModelStreamEvent(request_id="r1", event=_PING), Step())]
    if choice == 1:
        return [(ToolProgressReported(call_id=_OTHER, text="..."), Step())]
    if choice == 2:
        return [(ToolInputValidated(call_id=_OTHER, ok=True), _MOVED)]
    return []


def _written(
    data: st.DataObject,
    writer: TraceWriter,
    redacted: Callable[[str], str],
    *,
    between: bool,
) -> tuple[list[str], str]:
    """Blocks of text written in pieces drawn by ``data``, and a call's progress text in
    pieces among them; each block's text and the progress text as ``redacted`` gives them.
    ``between``: other events are drawn between two pieces (else only pings: a Temporal
    workflow feeds a response's events, and a tool step's, one after the other)."""
    expected: list[str] = []
    progress = data.draw(_texts())
    reports = [
        (ToolProgressReported(call_id=_PROGRESSING, text=piece), Step())
        for piece in data.draw(_split(progress))
    ]
    if not between:  # a tool step's events come together: before the response
        for event, step in reports:
            writer.write_event(event, step)
        writer.write_event(ToolCallFinished(call_id=_PROGRESSING), _FINISHED)
    for index in range(data.draw(st.integers(1, 3))):
        kind = data.draw(st.sampled_from(sorted(_KINDS)))
        text = data.draw(_texts())
        expected.append(redacted(text))
        start = {"type": "content_block_start", "index": index, "content_block": {"type": "x"}}
        writer.write_event(ModelStreamEvent(request_id="r1", event=start), Step())
        for piece in data.draw(_split(text)):
            writer.write_event(
                ModelStreamEvent(request_id="r1", event=_delta(index, kind, piece)), Step()
            )
            if between:
                for event, step in _between(data):
                    writer.write_event(event, step)
                if reports and data.draw(st.booleans()):
                    writer.write_event(*reports.pop(0))
            elif data.draw(st.integers(0, 5)) == 0:
                writer.write_event(ModelStreamEvent(request_id="r1", event=_PING), Step())
        if data.draw(st.booleans()):  # a block left open where the run ends
            stop = {"type": "content_block_stop", "index": index}
            writer.write_event(ModelStreamEvent(request_id="r1", event=stop), Step())
    if between:
        for event, step in reports:
            writer.write_event(event, step)
        if data.draw(st.booleans()):  # else the call is still running where the run ends
            writer.write_event(ToolCallFinished(call_id=_PROGRESSING), _FINISHED)
    writer.close()
    return expected, redacted(progress)


def _check(content: bytes, expected: list[str], progress: str) -> None:
    for secret in (*SECRETS, KEY):
        assert secret.encode() not in content
        assert orjson.dumps(secret)[1:-1] not in content  # nor as JSON text spells it
    lines = [orjson.loads(line) for line in content.splitlines()[1:]]
    seq = 1
    for line in lines:  # each line takes one seq, and one per transition and effect
        assert line["seq"] == seq
        seq += 1 + len(line.get("transitions", ())) + len(line.get("effects", ()))
    joined: dict[int, str] = {}
    reported = ""
    for line in lines:
        event = line["event"]
        if event["type"] == "ToolProgressReported" and event["call_id"] == _PROGRESSING:
            reported += event["text"]
            continue
        raw = event.get("event", {})
        if raw.get("type") == "content_block_delta":
            delta = raw["delta"]
            joined[raw["index"]] = joined.get(raw["index"], "") + delta[_KINDS[delta["type"]]]
    assert [joined.get(index, "") for index in range(len(expected))] == expected
    assert reported == progress


@given(data=st.data())
def test_pieces_hold_no_secret_and_join_to_the_redacted_text(data: st.DataObject) -> None:
    """Other events between two pieces (a tool's, mid-stream) included."""
    buffer = io.BytesIO()
    writer = TraceWriter(buffer, config=LoopConfig(model="m"), secrets=SECRETS)
    expected, progress = _written(data, writer, Redactor(SECRETS).text, between=True)
    _check(buffer.getvalue(), expected, progress)


@given(data=st.data())
def test_lines_of_a_writer_without_the_secrets_are_moved_alike(data: st.DataObject) -> None:
    """A Temporal workflow's writer knows no secret; its lines are moved and redacted where
    they are written to the file, as the worker's ``write_trace`` does (the workflow's
    writer has redacted API keys already)."""
    buffer = io.BytesIO()
    redactor = Redactor(SECRETS)
    expected, progress = _written(
        data,
        TraceWriter(buffer, config=LoopConfig(model="m")),
        lambda text: redactor.text(KEY_RULES_ONLY.text(text)),
        between=False,
    )
    written = b""
    for line in held_back_lines(buffer.getvalue().splitlines(keepends=True), SECRETS):
        if redactor.holds_secret(line):
            line = records.dumps(redactor.value(orjson.loads(line))) + b"\n"  # noqa: PLW2901
        written += line
    _check(written, expected, progress)


SPECS = tool_specs_for(["Read"])
_SAYS_A_SECRET = st.tuples(_texts(), st.sampled_from((*SECRETS, KEY)), _texts()).map("".join)


@given(
    text=_SAYS_A_SECRET,
    output=_SAYS_A_SECRET,
    chunk=st.integers(1, 6),
    choices=st.lists(st.integers(0, 7), max_size=80),
    data=st.data(),
)
def test_a_run_with_a_tool_mid_stream_holds_no_secret_and_replays(
    text: str, output: str, chunk: int, choices: list[int], data: st.DataObject
) -> None:
    """Through a real core: a tool call starts while the model still streams a block (its
    validation, permission and result come between the block's pieces, in a drawn order)
    and reports its output in pieces cut at drawn places, some of them between the block's
    pieces too. No secret reaches the file, the pieces join to the redacted texts, and the
    trace replays."""
    step = {"content": [{"tool_use": {"name": "Read", "input": {"path": "a"}}}, {"text": text}]}
    scenario = parse_scenario({"steps": [{**step, "chunk": chunk}, {"content": [{"text": "ok"}]}]})
    config = LoopConfig(model="m")
    buffer = io.BytesIO()
    writer = TraceWriter(buffer, config=config, tools=SPECS, secrets=SECRETS)
    traced = TracingCore(AgentCore(config=config, tools=SPECS), writer).feed
    reports: dict[str, list[str]] = {}
    reported: dict[str, str] = {}

    def report(call_id: str, pieces: list[str]) -> None:
        piece = pieces.pop(0)
        reported[call_id] = reported.get(call_id, "") + piece
        traced(ToolProgressReported(call_id=call_id, text=piece))

    def feed(event: Event) -> Step:
        """Feed ``event``; a running call reports its output before it finishes, some of it
        before a stream event."""
        if isinstance(event, ToolCallFinished):
            pieces = reports.pop(event.call_id, [])
            while pieces:
                report(event.call_id, pieces)
        elif isinstance(event, ModelStreamEvent):
            for call_id, pieces in reports.items():
                if pieces and data.draw(st.booleans()):
                    report(call_id, pieces)
        step = traced(event)
        for effect in step.effects:
            if isinstance(effect, fx.RunToolStep) and effect.step is fx.ToolStep.CALL:
                reports[effect.call_id] = data.draw(_split(output))
        return step

    world = World(scenario=scenario, tools={"Read": ToolScript(safe=True)})
    picks = iter(choices)
    WorldRun(feed, world, prompt("go")).run(lambda: next(picks, 0), limit=5_000)
    writer.close()
    content = buffer.getvalue()
    for secret in (*SECRETS, KEY):
        assert secret.encode() not in content
    redacted = Redactor(SECRETS).text
    said = ""
    shown: dict[str, str] = {}
    for line in content.splitlines()[1:-1]:
        event = orjson.loads(line)["event"]
        if event["type"] == "ToolProgressReported":
            shown[event["call_id"]] = shown.get(event["call_id"], "") + event["text"]
        elif event["type"] == "ModelStreamEvent" and event["event"].get("index") == 1:
            said += event["event"].get("delta", {}).get("text", "")
    assert said == redacted(text)
    assert shown == {call_id: redacted(output) for call_id, output in reported.items()}
    assert replay(read_trace(io.BytesIO(content))).ended
