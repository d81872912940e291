"""A trace holding credentials in clear in a streamed tool input (written by another program,
by hand, or by an earlier version under narrower rules) is shown redacted by ``show``,
``diff`` and ``replay``'s report of a divergence: the pieces are judged in order, as the
writer judges them, not one by one (DESIGN §8)."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest

from fsm_agent.cli import main
from fsm_agent.trace.reader import read_trace

SECRET = "987654321"
CLEAR = ['{"command": "echo hi", "password": 98765', '4321, "api_keys": ["k-0987654321"]}']
"""The tool input in clear, cut so that the second piece names no credential itself."""


def _clear_trace(folder: Path) -> Path:
    """A trace of a run whose model calls Bash, with its tool input put back in clear."""
    steps = [
        {"content": [{"tool_use": {"name": "Bash", "input": {"command": "echo hi"}}}]},
        {"content": [{"text": "done"}]},
    ]
    (folder / "scenario.json").write_text(json.dumps({"steps": steps}))
    argv = ["run", "go", "--model", "scripted:scenario.json", "--trace", "t.jsonl", "--yes"]
    assert main(argv) == 0
    lines = [orjson.loads(line) for line in (folder / "t.jsonl").read_bytes().splitlines()]
    pieces = iter(CLEAR)  # into the block's first (empty) piece and the one holding the input
    for line in lines:
        delta = line.get("event", {}).get("event", {}).get("delta", {})
        if delta.get("type") == "input_json_delta":
            delta["partial_json"] = next(pieces, delta["partial_json"])
    trace = folder / "clear.jsonl"
    trace.write_bytes(b"\n".join(orjson.dumps(line) for line in lines) + b"\n")
    return trace


@pytest.fixture
def clear(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return _clear_trace(tmp_path)


def _line_of_second_piece(trace: Path) -> int:
    """The 0-based index, among the file's lines, of the record holding the second piece."""
    for record in read_trace(trace).records:
        delta = record.data.get("event", {}).get("event", {}).get("delta", {})
        if delta.get("partial_json") == CLEAR[1]:
            return record.line - 1
    raise AssertionError("no second piece")


def test_a_trace_view_judges_streamed_pieces_in_order(clear: Path) -> None:
    shown = json.dumps([record.data for record in read_trace(clear).redacted().records])
    assert "98765" not in shown and "4321" not in shown
    assert "k-0987654321" not in shown


def test_show_diff_and_replay_reports_hide_a_streamed_credential(
    clear: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``diff`` against a copy that differs at the second piece, and ``replay`` (the input
    assembled from the pieces is not the one the recorded effects hold: a divergence whose
    context holds the second piece)."""
    at = _line_of_second_piece(clear)
    lines = clear.read_text().splitlines()
    other = clear.with_name("other.jsonl")
    other.write_text("\n".join([*lines[:at], lines[at].replace("4321", "4322"), *lines[at + 1 :]]))
    capsys.readouterr()
    assert main(["show", str(clear)]) == 0
    assert main(["diff", str(clear), str(other)]) == 1
    assert main(["replay", str(clear)]) == 1
    out = capsys.readouterr()
    printed = out.out + out.err
    assert "replay diverged" in printed and "first difference at seq" in printed
    assert "4321" not in printed and "4322" not in printed and "98765" not in printed
    assert "k-0987654321" not in printed
