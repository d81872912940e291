"""The writer's holdback of a streamed piece that may begin a secret: when the held end goes on
in the next piece, when a piece is written whole, and what a run that stops leaves."""

from __future__ import annotations

import io
from typing import Any

import orjson
import pytest

from fsm_agent.core import effects as fx
from fsm_agent.core.config import LoopConfig
from fsm_agent.core.events import (
    ModelStreamClosed,
    ModelStreamEvent,
    ToolCallFinished,
    ToolInputValidated,
    ToolProgressReported,
)
from fsm_agent.core.messages import Usage
from fsm_agent.core.step import Step, TransitionTaken
from fsm_agent.trace.redact import Redactor, mask, spellings
from fsm_agent.trace.stream_text_holdback import StreamTextHoldback, text_key
from fsm_agent.trace.writer import TraceWriter

SECRET = "hunter2-configured"


def _text(piece: str, index: int = 0, request_id: str = "r1") -> ModelStreamEvent:
    delta = {"type": "text_delta", "text": piece}
    raw = {"type": "content_block_delta", "index": index, "delta": delta}
    return ModelStreamEvent(request_id=request_id, event=raw)


def _lines(buffer: io.BytesIO) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in buffer.getvalue().splitlines()[1:]]


def _pieces(buffer: io.BytesIO) -> list[str]:
    return [
        line["event"]["event"]["delta"]["text"]
        for line in _lines(buffer)
        if line.get("event", {}).get("event", {}).get("type") == "content_block_delta"
    ]


def _writer(buffer: io.BytesIO) -> TraceWriter:
    return TraceWriter(buffer, config=LoopConfig(model="m"), secrets=[SECRET])


def test_the_end_that_may_begin_a_secret_goes_on_in_the_next_piece() -> None:
    buffer = io.BytesIO()
    writer = _writer(buffer)
    for piece in ("use hun", "ter2-conf", "igured now"):
        writer.write_event(_text(piece), Step())
    writer.close()
    assert _pieces(buffer) == ["use ", "", f"{mask(len(SECRET))} now"]
    assert [line["seq"] for line in _lines(buffer)] == [1, 2, 3]


@pytest.mark.parametrize(
    "following",
    [
        ModelStreamEvent(request_id="r1", event={"type": "content_block_stop", "index": 0}),
        _text("ter2-configured", index=1),  # another block
        _text("ter2-configured", request_id="r2"),  # another request
        ToolProgressReported(call_id="toolu_1", text="half"),  # any other event
    ],
    ids=["block stop", "other block", "other request", "other event"],
)
def test_a_piece_is_written_whole_when_its_block_does_not_go_on(following: Any) -> None:
    buffer = io.BytesIO()
    writer = _writer(buffer)
    writer.write_event(_text("use hun"), Step())
    writer.write_event(following, Step())
    writer.close()
    assert _pieces(buffer)[0] == "use hun"
    assert [line["seq"] for line in _lines(buffer)] == [1, 2]


def test_a_ping_between_two_pieces_leaves_the_held_end_going_on() -> None:
    """The API sends a ping between two pieces of a block (seen in recorded streams): the
    ping's line waits with the held one, and the lines keep their order and seqs."""
    buffer = io.BytesIO()
    writer = _writer(buffer)
    ping = ModelStreamEvent(request_id="r1", event={"type": "ping"})
    for event in (_text("use hun"), ping, ping, _text("ter2-configured now")):
        writer.write_event(event, Step())
    writer.close()
    lines = _lines(buffer)
    assert [line["event"]["event"]["type"] for line in lines] == [
        "content_block_delta",
        "ping",
        "ping",
        "content_block_delta",
    ]
    assert [line["seq"] for line in lines] == [1, 2, 3, 4]
    assert _pieces(buffer) == ["use ", f"{mask(len(SECRET))} now"]


def test_the_end_record_and_close_write_a_held_piece_first() -> None:
    buffer = io.BytesIO()
    writer = _writer(buffer)
    writer.write_event(_text("ends with hunter2"), Step())
    assert writer.next_seq == 2  # the held line has its seq
    writer.write_end("completed", Usage())
    lines = _lines(buffer)
    assert [line["record"] for line in lines] == ["event", "end"]
    assert [line["seq"] for line in lines] == [1, 2]
    assert _pieces(buffer) == ["ends with hunter2"]

    buffer = io.BytesIO()
    writer = _writer(buffer)
    writer.write_event(_text("ends with hunter2"), Step())
    writer.close()
    assert _pieces(buffer) == ["ends with hunter2"]


def test_a_run_killed_while_a_piece_is_held_loses_only_that_piece() -> None:
    """The file reads as a run that stopped one delta earlier: no partial line, no secret."""
    buffer = io.BytesIO()
    writer = _writer(buffer)
    writer.write_event(_text("first "), Step())
    writer.write_event(_text("then hunter2-con"), Step())
    # No close: the process died here.
    assert _pieces(buffer) == ["first "]


def test_a_key_is_held_while_it_runs_and_written_redacted_when_it_ends() -> None:
    buffer = io.BytesIO()
    writer = _writer(buffer)
    key = "sk-ant-api03-" + "a1_-" * 20
    text = f"key: {key} done"
    for start in range(0, len(text), 5):
        writer.write_event(_text(text[start : start + 5]), Step())
    writer.close()
    assert "".join(_pieces(buffer)) == f"key: {mask(len(key))} done"


def test_a_run_of_key_characters_longer_than_a_key_is_not_held_without_end() -> None:
    holdback = StreamTextHoldback(())
    held = "sk-ant-" + "a" * 600
    text, cut = holdback.piece(("r1", 0, "text_delta"), held)
    assert (text, cut) == (held, 0)
    text, cut = holdback.piece(("r1", 0, "text_delta"), "sk-ant-abc")
    assert cut == len("sk-ant-abc")


def test_the_longest_beginning_is_held() -> None:
    holdback = StreamTextHoldback(("abcd", "abcdefgh"))
    assert holdback.piece(("r", 0, "text_delta"), "xxabcd") == ("xxabcd", 4)
    assert holdback.piece(("r", 0, "text_delta"), "xxab") == ("xxab", 2)
    assert holdback.piece(("r", 0, "text_delta"), "plain.") == ("plain.", 0)
    holdback.hold(("r", 0, "text_delta"), "abcd")
    assert holdback.piece(("r", 0, "text_delta"), "efgh!") == ("abcdefgh!", 0)
    holdback.hold(("r", 0, "text_delta"), "ab")
    assert holdback.piece(("r", 1, "text_delta"), "cd") == ("cd", 0)  # another block's


def _block_delta(index: Any, delta: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": delta}


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (_block_delta(0, {"type": "text_delta", "text": "a"}), (0, "text_delta", "text")),
        (
            _block_delta(2, {"type": "input_json_delta", "partial_json": "{"}),
            (2, "input_json_delta", "partial_json"),
        ),
        (
            _block_delta(0, {"type": "thinking_delta", "thinking": "a"}),
            (0, "thinking_delta", "thinking"),
        ),
        (_block_delta(0, {"type": "signature_delta", "signature": "x"}), None),
        (_block_delta("0", {"type": "text_delta", "text": "a"}), None),
        (_block_delta(0, {"type": "text_delta", "text": 3}), None),
        ({"type": "content_block_stop", "index": 0}, None),
        ("not an object", None),
    ],
)
def test_which_events_add_text(raw: Any, expected: Any) -> None:
    assert text_key(raw) == expected


def test_a_secret_is_looked_for_as_json_text_spells_it_too() -> None:
    odd = 'pa"ss\\word'
    assert spellings(odd) == (odd, 'pa\\"ss\\\\word')
    assert spellings("plain-secret") == ("plain-secret",)
    redactor = Redactor([odd])
    assert redactor.text('{"text": "pa\\"ss\\\\word"}') == '{"text": "[REDACTED]"}'
    assert redactor.text(f"said {odd}") == "said [REDACTED]"
    assert redactor.holds_secret(orjson.dumps({"partial_json": '{"t": "pa\\"ss\\\\word"}'}))


def test_a_held_end_that_begins_no_secret_after_all_stays_in_its_piece() -> None:
    """Most held ends are a letter that begins a secret by chance: when the next piece shows
    that none begins there, both pieces are written as they came."""
    buffer = io.BytesIO()
    writer = _writer(buffer)
    for piece in ("the cats s", "at on the h", "unting mat"):
        writer.write_event(_text(piece), Step())
    writer.close()
    assert _pieces(buffer) == ["the cats s", "at on the h", "unting mat"]
    holdback = StreamTextHoldback(["hunter2"])
    assert holdback.goes_on("h", "unt")
    assert holdback.goes_on("hun", "ter2 and more")  # the whole secret runs on from it
    assert not holdback.goes_on("h", "ello")
    assert holdback.goes_on("s", "k-a")  # an API key may begin
    assert not holdback.goes_on("s", "ky")


_CALLED = Step(
    transitions=(
        TransitionTaken(
            machine="tool", name="validated", source="validating", dest="permission", call_id="t1"
        ),
    ),
    effects=(
        fx.RunToolStep(effect_id="e2", call_id="t1", step=fx.ToolStep.CALL, tool_name="read"),
    ),
)
"""The step of a tool's event while the model streams: the tool's machine moves on, and an
effect is performed at once (its line cannot wait behind a held piece)."""
_ABORTED = Step(
    transitions=(
        TransitionTaken(machine="loop", name="aborted_streaming", source="streaming", dest="x"),
    ),
)
"""A step that ends the stream: no piece of the block comes after it."""


def _validated() -> ToolInputValidated:
    return ToolInputValidated(call_id="t1", ok=True, read_only=True)


def _kinds(buffer: io.BytesIO) -> list[str]:
    kinds = []
    for line in _lines(buffer):
        event = line.get("event", {"type": line["record"]})
        kinds.append(
            event["event"]["type"] if event["type"] == "ModelStreamEvent" else event["type"]
        )
    return kinds


def test_a_tool_event_with_no_step_between_two_pieces_passes_over() -> None:
    """A tool's progress between two pieces: its step has nothing to perform, so its line
    waits with the held one, as a ping's does."""
    buffer = io.BytesIO()
    writer = _writer(buffer)
    progress = ToolProgressReported(call_id="t1", text="reading")
    for event in (_text("use hun"), progress, _text("ter2-configured now")):
        writer.write_event(event, Step())
    writer.close()
    assert _pieces(buffer) == ["use ", f"{mask(len(SECRET))} now"]
    assert _kinds(buffer) == ["content_block_delta", "ToolProgressReported", "content_block_delta"]
    assert [line["seq"] for line in _lines(buffer)] == [1, 2, 3]


def test_an_event_with_effects_between_two_pieces_keeps_the_held_end_for_the_next() -> None:
    """Its line is written at once (before its effect is performed): the held piece goes
    before it without its held end, which the block's next piece is given in front."""
    buffer = io.BytesIO()
    writer = _writer(buffer)
    writer.write_event(_text("use hun"), Step())
    writer.write_event(_validated(), _CALLED)
    assert _pieces(buffer) == ["use "]  # both lines are on file before the effect runs
    assert _kinds(buffer) == ["content_block_delta", "ToolInputValidated"]
    writer.write_event(_validated(), _CALLED)  # a second one changes nothing
    writer.write_event(_text("ter2-configured now"), Step())
    writer.close()
    assert _pieces(buffer) == ["use ", f"{mask(len(SECRET))} now"]
    assert [line["seq"] for line in _lines(buffer)] == [1, 2, 5, 8]


@pytest.mark.parametrize(
    "following",
    [
        ModelStreamEvent(request_id="r1", event={"type": "content_block_stop", "index": 0}),
        _text("more", index=1),
        None,  # the run ends
    ],
    ids=["block stop", "other block", "end"],
)
def test_a_held_end_whose_block_does_not_go_on_is_a_piece_of_its_own(following: Any) -> None:
    """The block's text ends with the held characters: they are written as one more piece
    of the block, just before what follows it, so the pieces still join to the text."""
    buffer = io.BytesIO()
    writer = _writer(buffer)
    writer.write_event(_text("use hun"), Step())
    writer.write_event(_validated(), _CALLED)
    if following is None:
        writer.write_end("completed", Usage())
    else:
        writer.write_event(following, Step())
        writer.close()
    lines = _lines(buffer)
    assert [line["seq"] for line in lines] == [1, 2, 5, 6]
    assert [
        line["event"]["event"]["delta"]["text"]
        for line in lines
        if line.get("event", {}).get("event", {}).get("index") == 0
        and line["event"]["event"]["type"] == "content_block_delta"
    ] == ["use ", "hun"]
    assert _kinds(buffer)[:3] == [
        "content_block_delta",
        "ToolInputValidated",
        "content_block_delta",
    ]


def test_a_step_that_ends_the_stream_writes_the_held_piece_whole() -> None:
    buffer = io.BytesIO()
    writer = _writer(buffer)
    writer.write_event(_text("use hun"), Step())
    writer.write_event(_validated(), _ABORTED)
    writer.close()
    assert _pieces(buffer) == ["use hun"]
    assert [line["seq"] for line in _lines(buffer)] == [1, 2]


def test_a_held_end_goes_out_before_a_later_step_that_ends_the_stream() -> None:
    """The end was kept for a next piece; an event that ends the stream comes instead: the
    end is written before that event's line, which takes the next seq."""
    buffer = io.BytesIO()
    writer = _writer(buffer)
    writer.write_event(_text("use hun"), Step())
    writer.write_event(_validated(), _CALLED)
    writer.write_event(_validated(), _ABORTED)
    writer.close()
    assert _pieces(buffer) == ["use ", "hun"]
    assert _kinds(buffer) == [
        "content_block_delta",
        "ToolInputValidated",
        "content_block_delta",
        "ToolInputValidated",
    ]
    assert [line["seq"] for line in _lines(buffer)] == [1, 2, 5, 6]


def _progress_texts(buffer: io.BytesIO) -> list[str]:
    return [
        line["event"]["text"]
        for line in _lines(buffer)
        if line["event"]["type"] == "ToolProgressReported"
    ]


def test_a_secret_split_over_two_progress_texts_of_a_call_is_whole_in_one() -> None:
    buffer = io.BytesIO()
    writer = _writer(buffer)
    for text in ("TOKEN=hun", "ter2-conf", "igured\nHOME=/"):
        writer.write_event(ToolProgressReported(call_id="t1", text=text), Step())
    writer.close()
    assert _progress_texts(buffer) == ["TOKEN=", "", f"{mask(len(SECRET))}\nHOME=/"]
    assert [line["seq"] for line in _lines(buffer)] == [1, 2, 3]


def test_a_progress_text_is_written_whole_when_its_call_says_no_more() -> None:
    buffer = io.BytesIO()
    writer = _writer(buffer)
    writer.write_event(ToolProgressReported(call_id="t1", text="TOKEN=hun"), Step())
    writer.write_event(ToolProgressReported(call_id="t2", text="ter2-configured"), Step())
    writer.write_event(ToolCallFinished(call_id="t1", content="done"), _CALLED)
    writer.close()
    assert _progress_texts(buffer) == ["TOKEN=hun", "ter2-configured"]
    assert [line["seq"] for line in _lines(buffer)] == [1, 2, 3]


def test_a_progress_text_keeps_its_held_end_over_another_calls_event() -> None:
    """Another call moves on between two texts of a call: the held text goes before it
    without its held end, which the call's next text is given in front."""
    buffer = io.BytesIO()
    writer = _writer(buffer)
    writer.write_event(ToolProgressReported(call_id="t2", text="TOKEN=hun"), Step())
    writer.write_event(_validated(), _CALLED)  # call t1
    writer.write_event(ToolProgressReported(call_id="t2", text="ter2-configured"), Step())
    writer.close()
    assert _progress_texts(buffer) == ["TOKEN=", mask(len(SECRET))]


def test_a_kept_progress_end_goes_out_before_its_call_moves_on() -> None:
    buffer = io.BytesIO()
    writer = _writer(buffer)
    writer.write_event(ToolProgressReported(call_id="t1", text="TOKEN=hun"), Step())
    writer.write_event(ToolInputValidated(call_id="t2", ok=True), _CALLED)  # t1's machine moves
    writer.close()
    assert _progress_texts(buffer) == ["TOKEN=hun"]  # moved with the call's own step: whole

    buffer = io.BytesIO()
    writer = _writer(buffer)
    writer.write_event(ToolProgressReported(call_id="t2", text="TOKEN=hun"), Step())
    writer.write_event(_validated(), _CALLED)  # call t1: t2's end is kept
    writer.write_event(ToolCallFinished(call_id="t1", content="done"), _CALLED)
    assert _progress_texts(buffer) == ["TOKEN="]
    finished = Step(
        transitions=(
            TransitionTaken(
                machine="tool", name="finished", source="executing", dest="done", call_id="t2"
            ),
        )
    )
    writer.write_event(ToolCallFinished(call_id="t2", content="done"), finished)
    writer.close()
    assert _progress_texts(buffer) == ["TOKEN=", "hun"]
    assert _kinds(buffer) == [
        "ToolProgressReported",
        "ToolInputValidated",
        "ToolCallFinished",
        "ToolProgressReported",
        "ToolCallFinished",
    ]
    assert [line["seq"] for line in _lines(buffer)] == [1, 2, 5, 8, 9]


def test_a_kept_end_written_while_a_line_is_held_waits_behind_it() -> None:
    """Lines are written in seq order: the block's end, written as its block stops, waits
    behind the progress text held since."""
    buffer = io.BytesIO()
    writer = _writer(buffer)
    writer.write_event(_text("use hun"), Step())
    writer.write_event(ToolProgressReported(call_id="t1", text="TOKEN=hun"), Step())
    writer.write_event(
        ModelStreamEvent(request_id="r1", event={"type": "content_block_stop"}), Step()
    )
    writer.close()
    assert _pieces(buffer) == ["use ", "hun"]
    assert _progress_texts(buffer) == ["TOKEN=hun"]
    assert [line["seq"] for line in _lines(buffer)] == [1, 2, 3, 4]


def test_a_progress_text_keeps_its_held_end_when_the_stream_ends() -> None:
    """A call started mid-stream runs on when the stream ends: the loop's step does not end
    its text."""
    buffer = io.BytesIO()
    writer = _writer(buffer)
    writer.write_event(ToolProgressReported(call_id="t1", text="TOKEN=hun"), Step())
    writer.write_event(ModelStreamClosed(request_id="r1"), _ABORTED)
    writer.write_event(ToolProgressReported(call_id="t1", text="ter2-configured"), Step())
    writer.close()
    assert _progress_texts(buffer) == ["TOKEN=", mask(len(SECRET))]
