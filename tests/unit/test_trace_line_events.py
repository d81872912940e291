"""Replay structures the event of a line once per distinct line (issue 10): the same bytes
give the same event object, the memo stays bounded, and a line that does not structure is
never kept, so replay still names what is wrong with it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from fsm_agent.core.codec import load_event
from fsm_agent.errors import TraceDivergence, TraceFormatError
from fsm_agent.trace import line_events
from fsm_agent.trace.line_events import event_of_line
from fsm_agent.trace.replay import replay

ROOT = Path(__file__).resolve().parents[2]
_MEMO = line_events._memo


@pytest.fixture(autouse=True)
def empty_memo() -> Iterator[None]:
    _MEMO.events.clear()
    _MEMO.held = 0
    yield
    _MEMO.events.clear()
    _MEMO.held = 0


def _line(effect_id: str, pad: str = "") -> bytes:
    event = {"effect_id": effect_id, "type": "HooksFinished"}
    return orjson.dumps({"event": event, "pad": pad, "record": "event", "seq": 1})


def _event_of(content: bytes) -> object:
    return event_of_line(content, orjson.loads(content)["event"])


def test_the_same_line_gives_the_same_event() -> None:
    line = _line("e1")
    first = _event_of(line)
    assert first == load_event(orjson.loads(line)["event"])
    assert _event_of(bytes(line)) is first
    assert _event_of(_line("e2")) != first


def test_a_line_that_does_not_structure_is_not_kept() -> None:
    line = orjson.dumps({"event": {"effect_id": 1, "type": "HooksFinished"}})
    assert _event_of(line) is None
    assert line not in _MEMO.events


def test_a_long_line_is_not_kept() -> None:
    line = _line("e1", pad="x" * line_events.LINE_LIMIT)
    assert _event_of(line) is not None
    assert line not in _MEMO.events


def test_the_memo_is_emptied_when_full() -> None:
    pad = "x" * (line_events.LINE_LIMIT - 100)
    lines = [_line(f"e{index}", pad) for index in range(line_events.HELD_LIMIT // len(pad) + 2)]
    for line in lines:
        _event_of(line)
        assert _MEMO.held <= line_events.HELD_LIMIT
        assert _MEMO.held == sum(len(key) for key in _MEMO.events)
    assert len(_MEMO.events) < len(lines)
    assert lines[-1] in _MEMO.events


def _with_line(tmp_path: Path, source: Path, number: int, old: bytes, new: bytes) -> Path:
    lines = source.read_bytes().split(b"\n")
    assert old in lines[number - 1]
    lines[number - 1] = lines[number - 1].replace(old, new, 1)
    target = tmp_path / f"{len(list(tmp_path.iterdir()))}.jsonl"
    target.write_bytes(b"\n".join(lines))
    return target


def test_replays_that_share_lines_are_each_checked(tmp_path: Path) -> None:
    """A corpus replayed twice feeds kept events the second time; a changed copy of a line
    is its own bytes: a malformed event is still named, a different one still diverges."""
    for _ in range(2):
        for path in sorted((ROOT / "traces").glob("*.jsonl")):
            replay(path)
    assert _MEMO.events
    source = ROOT / "traces" / "hook_stopped.jsonl"
    lines = source.read_bytes().split(b"\n")
    number = 1 + next(i for i, line in enumerate(lines) if b'"type":"HooksFinished"' in line)
    old = b'"event":{"effect_id":"e'
    for _ in range(2):
        bad = _with_line(tmp_path, source, number, old, b'"event":{"effect_id":0,"x":"e')
        with pytest.raises(TraceFormatError) as error:
            replay(bad)
        assert (error.value.line, error.value.path) == (number, "$.event.effect_id")
        assert "expected string, got integer" in str(error.value)
        changed = _with_line(tmp_path, source, number, old, b'"event":{"effect_id":"z')
        with pytest.raises(TraceDivergence) as divergence:
            replay(changed)
        assert divergence.value.line == number
        assert divergence.value.actual is not None
        assert divergence.value.actual["record"] == "error"
