"""``fsm-agent runs``: import traces, then list and filter them as a table or JSON."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from fsm_agent.cli import main

GOLDEN = Path(__file__).parents[2] / "traces"


def test_import_then_filter_as_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``runs import`` indexes a folder; ``runs --denied --json`` prints the matching runs."""
    store = str(tmp_path / "index.sqlite3")
    assert main(["runs", "--store", store, "import", str(GOLDEN)]) == 0
    assert f"indexed {len(list(GOLDEN.glob('*.jsonl')))} runs" in capsys.readouterr().out
    assert main(["runs", "--store", store, "--denied", "--json"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "rejected_and_denied" in [orjson.loads(line)["run_id"] for line in lines]
    assert "sibling_cancel" not in [orjson.loads(line)["run_id"] for line in lines]


def test_table_lists_runs_and_their_count(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without --json, a table with one row per run and the count; FSM_AGENT_STORE is used."""
    monkeypatch.setenv("FSM_AGENT_STORE", str(tmp_path / "index.sqlite3"))
    assert main(["runs", "import", str(GOLDEN / "prompt_too_long.jsonl")]) == 0
    capsys.readouterr()
    assert main(["runs", "--terminal", "prompt_too_long", "--transition", "request_sent:1"]) == 0
    out = capsys.readouterr().out
    assert "prompt_too_long" in out
    assert out.rstrip().endswith("1 runs")


def test_bad_filter_and_missing_folder_are_clear_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A bad --transition and an import of a missing folder fail with one-line messages."""
    store = str(tmp_path / "index.sqlite3")
    assert main(["runs", "--store", store, "--transition", "next_turn:0"]) == 1
    assert "MIN must be a whole number" in capsys.readouterr().err
    assert main(["runs", "--store", store, "import", str(tmp_path / "nowhere")]) == 2
    assert "no such trace file or folder" in capsys.readouterr().err
