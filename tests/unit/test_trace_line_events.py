"""Replay reads an event line once per distinct line (issue 10): the same bytes give the same
dict and event, the memo stays bounded, kept dicts are never changed nor handed out, and a
changed or malformed line is still checked and named."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from fsm_agent.core.agent_core import AgentCore
from fsm_agent.core.codec import load_event
from fsm_agent.core.config import LoopConfig
from fsm_agent.core.events import Event, HooksFinished
from fsm_agent.core.step import Step
from fsm_agent.core.tool_spec import ToolSpec
from fsm_agent.errors import TraceDivergence, TraceFormatError
from fsm_agent.trace import line_events
from fsm_agent.trace.line_events import event_of_line, keep_line, kept_line
from fsm_agent.trace.replay import replay

ROOT = Path(__file__).resolve().parents[2]
_MEMO = line_events._memo


@pytest.fixture(autouse=True)
def empty_memo() -> Iterator[None]:
    _MEMO.lines.clear()
    _MEMO.held = 0
    yield
    _MEMO.lines.clear()
    _MEMO.held = 0


def _line(effect_id: str, pad: str = "") -> bytes:
    event = {"effect_id": effect_id, "type": "HooksFinished"}
    return orjson.dumps({"event": event, "pad": pad, "record": "event", "seq": 1})


def _kept(content: bytes) -> object:
    """Structure and keep the line, as replay's hot loop does; returns the event."""
    data = orjson.loads(content)
    event = event_of_line(content, data["event"])
    if event is not None:
        keep_line(content, data, event)
    return event


def test_the_same_line_gives_the_same_event_and_dict() -> None:
    line = _line("e1")
    first = _kept(line)
    assert first == load_event(orjson.loads(line)["event"])
    assert _kept(bytes(line)) is first
    kept = kept_line(bytes(line))
    assert kept is not None
    assert kept[0] == orjson.loads(line)
    assert kept[1] is first
    assert _kept(_line("e2")) != first


def test_a_line_that_does_not_structure_is_not_kept() -> None:
    line = orjson.dumps({"event": {"effect_id": 1, "type": "HooksFinished"}})
    assert _kept(line) is None
    assert kept_line(line) is None


def test_a_long_line_is_not_kept() -> None:
    line = _line("e1", pad="x" * line_events.LINE_LIMIT)
    assert _kept(line) is not None
    assert kept_line(line) is None


def test_the_memo_is_emptied_when_full() -> None:
    pad = "x" * (line_events.LINE_LIMIT - 100)
    lines = [_line(f"e{index}", pad) for index in range(line_events.HELD_LIMIT // len(pad) + 2)]
    for line in lines:
        _kept(line)
        assert _MEMO.held <= line_events.HELD_LIMIT
        assert _MEMO.held == sum(len(key) for key in _MEMO.lines)
    assert len(_MEMO.lines) < len(lines)
    assert kept_line(lines[-1]) is not None


def test_replay_keeps_dicts_as_they_were_parsed() -> None:
    """Replaying the corpus twice reads kept lines the second time and changes none."""
    corpus = sorted((ROOT / "traces").glob("*.jsonl"))
    for path in corpus:
        replay(path)
    kept = {content: orjson.loads(content) for content in _MEMO.lines}
    assert kept
    for path in corpus:
        replay(path)
    for content, data in kept.items():
        mine = kept_line(content)
        assert mine is not None
        assert mine[0] == data


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
    assert _MEMO.lines
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


class _Refusing:
    """An ``AgentCore`` that refuses every hook result, as a changed core would."""

    def __init__(self, config: LoopConfig, tools: tuple[ToolSpec, ...]) -> None:
        self.core = AgentCore(config=config, tools=tools)
        self.feed_stream = self.core.feed_stream

    def feed(self, event: Event) -> Step:
        if isinstance(event, HooksFinished):
            raise RuntimeError("refused")
        return self.core.feed(event)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.core, name)


def test_a_divergence_on_a_kept_line_hands_out_dicts_of_its_own() -> None:
    """A kept line that the core no longer reproduces diverges as before, and what the error
    holds is the line read again: changing it changes nothing kept."""
    source = ROOT / "traces" / "hook_stopped.jsonl"
    replay(source)
    with pytest.raises(TraceDivergence) as divergence:
        replay(source, core_factory=_Refusing)
    error = divergence.value
    assert error.actual is not None
    assert error.actual["record"] == "error"
    lines = source.read_bytes().split(b"\n")
    assert error.line is not None
    content = lines[error.line - 1]
    kept = kept_line(content)
    assert kept is not None
    _scrub([error.expected, *error.context])
    assert kept[0] == orjson.loads(content)


def _scrub(value: Any) -> None:
    """Empty every list and dict in ``value``, however deep."""
    children = value.values() if isinstance(value, dict) else value
    if isinstance(value, dict | list):
        for child in list(children):
            _scrub(child)
        value.clear()


@pytest.mark.parametrize("odd", [b"", b"{}", b"[1]", b"{ }", b"nul"])
def test_short_and_odd_lines_are_named_after_kept_lines(tmp_path: Path, odd: bytes) -> None:
    """A line too short to be looked up, or not an object, is still named, kept lines or not."""
    source = ROOT / "traces" / "hook_stopped.jsonl"
    replay(source)
    lines = source.read_bytes().split(b"\n")
    lines.insert(4, odd)
    target = tmp_path / "odd.jsonl"
    target.write_bytes(b"\n".join(lines))
    with pytest.raises(TraceFormatError) as error:
        replay(target)
    assert error.value.line == 5
