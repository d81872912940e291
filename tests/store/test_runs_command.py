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
    """A bad --transition and an import of a missing folder fail with one-line messages,
    both usage errors (exit 2)."""
    store = str(tmp_path / "index.sqlite3")
    assert main(["runs", "--store", store, "--transition", "next_turn:0"]) == 2
    assert "MIN must be a whole number" in capsys.readouterr().err
    assert main(["runs", "--store", store, "import", str(tmp_path / "nowhere")]) == 2
    assert "no such trace file or folder" in capsys.readouterr().err


def test_show_replay_and_diff_take_a_run_id(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An indexed run's id stands for its trace file in show, replay and diff."""
    monkeypatch.setenv("FSM_AGENT_STORE", str(tmp_path / "index.sqlite3"))
    monkeypatch.chdir(tmp_path)
    assert main(["runs", "import", str(GOLDEN / "max_turns.jsonl")]) == 0
    assert main(["show", "max_turns"]) == 0
    assert main(["replay", "max_turns"]) == 0
    assert "1 replayed identically, 0 failed" in capsys.readouterr().out
    assert main(["diff", "max_turns", "max_turns"]) == 0
    assert "the traces agree" in capsys.readouterr().out
    assert main(["show", "no_such_run"]) == 2
    assert "no such trace file or indexed run: no_such_run" in capsys.readouterr().err


def test_a_run_with_a_price_is_listed_with_its_cost(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run given a price records it; the store fills cost_usd and the table shows it."""
    from fsm_agent.core.pricing import ModelPrice
    from fsm_agent.runtime.agent import Agent
    from fsm_agent.store.background import wait_for_store_writes
    from fsm_agent.testing.scenario import ScriptedModel, parse_scenario

    store = str(tmp_path / "index.sqlite3")
    steps = [{"content": [{"text": "done"}], "usage": {"input_tokens": 1000, "output_tokens": 200}}]
    agent = Agent(
        model=ScriptedModel(parse_scenario({"steps": steps})),
        cwd=tmp_path,
        trace=tmp_path / "run.jsonl",
        store=store,
        price=ModelPrice(input=3.0, output=15.0),
    )
    result = agent.run_sync("hello")
    assert wait_for_store_writes(60)
    assert result.cost_usd == pytest.approx(0.006)
    assert main(["runs", "--store", store, "--json"]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    assert orjson.loads(line)["cost_usd"] == pytest.approx(0.006)
    assert main(["runs", "--store", store]) == 0
    assert "$0.0060" in capsys.readouterr().out


def test_runs_get_unique_ids_that_name_their_trace_and_stand_for_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two runs into one folder (same second) get distinct ids, their files are named after
    them, and show and replay accept such an id once the run is indexed."""
    from fsm_agent.runtime.agent import Agent
    from fsm_agent.store.background import wait_for_store_writes
    from fsm_agent.testing.scenario import ScriptedModel, parse_scenario
    from fsm_agent.trace.reader import read_header

    monkeypatch.setenv("FSM_AGENT_STORE", str(tmp_path / "index.sqlite3"))
    monkeypatch.chdir(tmp_path)
    traces = []
    for _ in range(2):
        agent = Agent(
            model=ScriptedModel(parse_scenario({"steps": [{"content": [{"text": "done"}]}]})),
            cwd=tmp_path,
            trace=f"{tmp_path / 'runs'}/",
        )
        result = agent.run_sync("hello")
        assert result.trace_path is not None
        traces.append(result.trace_path)
    assert wait_for_store_writes(60)
    ids = [read_header(trace).meta["run_id"] for trace in traces]
    assert ids[0] != ids[1]
    assert [trace.name for trace in traces] == [f"{run_id}.jsonl" for run_id in ids]
    assert main(["show", ids[1]]) == 0
    assert main(["replay", ids[0]]) == 0
    assert "1 replayed identically, 0 failed" in capsys.readouterr().out


def test_listing_a_store_file_that_does_not_exist_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`runs --store FILE` with no such file exits 2 naming it and makes no store (a typo
    made an empty store and printed "0 runs", as if the runs were gone)."""
    missing = tmp_path / "indx.sqlite3"
    assert main(["runs", "--store", str(missing)]) == 2
    assert f"--store {missing}: no such run store" in capsys.readouterr().err
    assert not missing.exists()
