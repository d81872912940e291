"""The writer's holdback of a streamed piece that may begin a secret: when the held end goes on
in the next piece, when a piece is written whole, and what a run that stops leaves."""

from __future__ import annotations

import io
from typing import Any

import orjson
import pytest

from fsm_agent.core.config import LoopConfig
from fsm_agent.core.events import ModelStreamEvent, ToolProgressReported
from fsm_agent.core.messages import Usage
from fsm_agent.core.step import Step
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
