"""The command line's debugging workflow: clear one-line errors, fork, resume, truncated
traces, folders, the shared divergence report, and exit statuses."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fsm_agent import __version__
from fsm_agent.cli import main
from fsm_agent.trace.divergence import first_difference
from fsm_agent.trace.reader import read_trace

ROOT = Path(__file__).resolve().parents[2]
TRACES = ROOT / "traces"


def scenario(tmp_path: Path, steps: list[dict[str, Any]]) -> str:
    """A scenario file for ``--model scripted:FILE``."""
    path = tmp_path / "scenario.json"
    path.write_text(json.dumps({"steps": steps}), encoding="utf-8")
    return f"scripted:{path}"


@pytest.mark.parametrize(
    "argv",
    [
        ["replay", "missing.jsonl"],
        ["show", "missing.jsonl"],
        ["diff", "missing.jsonl", str(TRACES / "max_turns.jsonl")],
        ["diagram", "--trace", "missing.jsonl"],
        ["run", "hi", "--model", "scripted:missing.json"],
        ["fork", "missing.jsonl", "--at", "3", "--model", "scripted:x.json"],
        ["resume", "missing.jsonl", "--model", "scripted:x.json"],
    ],
)
def test_a_missing_path_is_one_clear_line(
    argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    """Every command given a missing file exits 2 with one line naming it, no traceback."""
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("fsm-agent: ") and "missing" in err
    assert len(err.strip().splitlines()) == 1
    assert "Traceback" not in err


def test_a_folder_where_a_file_is_needed_is_named(tmp_path: Path, capsys: Any) -> None:
    """diff and diagram --trace given a folder say so instead of raising IsADirectoryError."""
    assert main(["diff", str(tmp_path), str(TRACES / "max_turns.jsonl")]) == 2
    assert main(["diagram", "--trace", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("is a folder") == 2 and "Traceback" not in err


def test_show_on_a_folder_lists_its_traces(capsys: Any) -> None:
    """`show FOLDER` prints one line per trace with its terminal reason."""
    assert main(["show", str(TRACES)]) == 0
    out = capsys.readouterr().out
    assert "traces in" in out
    assert "max_turns.jsonl" in out and "model_error.jsonl" in out
    assert " max_turns" in out.split("max_turns.jsonl", 1)[1].splitlines()[0]


def test_version(capsys: Any) -> None:
    """`--version` prints the library version."""
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"fsm-agent {__version__}"


def test_every_argument_has_help(capsys: Any) -> None:
    """Each command's --help gives a description for every argument and option."""
    for command in ("run", "fork", "resume", "replay", "show", "diff", "diagram", "demo"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        text = capsys.readouterr().out
        lines = text.split("\n\n", 1)[1].splitlines()
        entries = 0
        for index, line in enumerate(lines):
            if not line.startswith("  ") or line.startswith("   "):
                continue  # not an argument's first line
            entries += 1
            _, _, description = line.strip().partition("  ")
            following = lines[index + 1] if index + 1 < len(lines) else ""
            assert description.strip() or following.startswith("     "), (command, line)
        assert entries, text


def test_a_run_ending_in_an_error_terminal_exits_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    """A run that ends model_error exits 1 and shows the failure live, not only in the trace."""
    monkeypatch.chdir(tmp_path)
    model = scenario(tmp_path, [{"error": {"kind": "other", "message": "bad request here"}}])
    assert main(["run", "hi", "--model", model, "--trace", "t.jsonl"]) == 1
    out = capsys.readouterr().out
    assert "model request failed" in out and "bad request here" in out
    assert "ended: model_error" in out


def test_without_a_terminal_an_ask_is_denied_saying_no_one_was_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no terminal and no --yes, a Write that needs permission is denied as 'no one to
    ask', not recorded as a user's denial."""
    monkeypatch.chdir(tmp_path)
    write = {"tool_use": {"name": "Write", "input": {"file_path": "x.txt", "content": "x"}}}
    model = scenario(tmp_path, [{"content": [write]}, {"content": [{"text": "ok"}]}])
    main(["run", "write it", "--model", model, "--trace", "t.jsonl"])
    decided = [
        r.data["event"]
        for r in read_trace(tmp_path / "t.jsonl").of_kind("event")
        if r.data["event"]["type"] == "PermissionDecided"
    ]
    assert [(d["behavior"], d["reason"]) for d in decided] == [("deny", "no one to ask")]
    assert not (tmp_path / "x.txt").exists()


def test_fork_on_the_command_line_records_its_parent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`fork TRACE --at SEQ` replays the prefix, carries on live, and names the parent."""
    monkeypatch.chdir(tmp_path)
    first = scenario(tmp_path, [{"content": [{"text": "one"}]}])
    assert main(["run", "hi", "--model", first, "--trace", "a.jsonl"]) == 0
    again = scenario(tmp_path, [{"content": [{"text": "two"}]}])
    argv = ["fork", "a.jsonl", "--at", "1", "--model", again, "--trace", "b.jsonl"]
    assert main(argv) == 0
    header = read_trace(tmp_path / "b.jsonl").header
    parent_id = read_trace(tmp_path / "a.jsonl").header.meta["run_id"]
    assert header.meta["parent"] == {
        "kind": "fork",
        "trace": "a.jsonl",
        "seq": 1,
        "run_id": parent_id,
    }
    assert header.meta["run_id"] != parent_id
    assert main(["replay", "b.jsonl"]) == 0


def test_resume_or_fork_of_a_run_that_ended_is_refused_writing_no_trace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    """`resume` of a run that ended, and `fork --at` its end record, exit 2 with one line
    saying the run ended and what to do instead, and write no trace (they copied the run
    into a new trace and printed ``ended: completed``, as if something had been carried on)."""
    monkeypatch.chdir(tmp_path)
    answer = scenario(tmp_path, [{"content": [{"text": "one"}]}])
    assert main(["run", "hi", "--model", answer, "--trace", "a.jsonl"]) == 0
    records = len(read_trace(tmp_path / "a.jsonl").records)
    capsys.readouterr()
    argv = ["resume", "a.jsonl", "--model", answer, "--trace", "r.jsonl"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "the recorded run ended (completed): there is nothing to resume" in err
    assert "fsm-agent run --resume" in err
    argv = ["fork", "a.jsonl", "--at", str(records), "--model", answer, "--trace", "f.jsonl"]
    assert main(argv) == 2
    assert f"--at {records}: the recorded run ended (completed)" in capsys.readouterr().err
    assert not (tmp_path / "r.jsonl").exists()
    assert not (tmp_path / "f.jsonl").exists()


def test_truncated_traces_replay_resume_and_need_the_flag(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    """A cut-off trace fails `replay` with a hint, passes `replay --allow-truncated`, and
    `resume` carries it on to an end."""
    monkeypatch.chdir(tmp_path)
    text = (TRACES / "retry_then_success.jsonl").read_bytes()
    lines = text.splitlines(keepends=True)
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(b"".join(lines[:6]) + lines[6][:20])
    assert main(["replay", "cut.jsonl"]) == 1
    assert "--allow-truncated" in capsys.readouterr().out
    assert main(["replay", "--allow-truncated", "cut.jsonl"]) == 0
    assert "truncated: accepted" in capsys.readouterr().out
    answer = scenario(tmp_path, [{"content": [{"text": "resumed"}]}] * 3)
    assert main(["resume", "cut.jsonl", "--model", answer, "--trace", "r.jsonl"]) in {0, 1}
    assert read_trace(tmp_path / "r.jsonl").header.meta["parent"]["kind"] == "resume"


def test_divergence_reports_name_the_first_differing_field(tmp_path: Path, capsys: Any) -> None:
    """`replay` and `diff` report a divergence as JSON records with the field path."""
    good = (TRACES / "model_error.jsonl").read_text(encoding="utf-8")
    bad = tmp_path / "bad.jsonl"
    bad.write_text(good.replace('"dest":"model_error"', '"dest":"completed"', 1))
    assert main(["replay", str(bad)]) == 1
    assert "first difference: $.dest" in capsys.readouterr().out
    assert main(["diff", str(TRACES / "model_error.jsonl"), str(bad)]) == 1
    out = capsys.readouterr().out
    assert "first difference: $.dest" in out and '"dest":"completed"' in out


@pytest.mark.parametrize(
    ("expected", "actual", "path"),
    [
        ({"a": 1}, {"a": 1}, None),
        ({"a": {"b": [1, 2]}}, {"a": {"b": [1, 3]}}, "$.a.b[1]"),
        ({"a": [1]}, {"a": [1, 2]}, "$.a[1]"),
        ({"a": 1}, {"a": 1, "z": 2}, "$.z"),
        ({"a": 1}, {"a": True}, "$.a"),
    ],
)
def test_first_difference_paths(expected: Any, actual: Any, path: str | None) -> None:
    """first_difference names the JSON path of the first differing value (None if equal)."""
    assert first_difference(expected, actual) == path


def test_diagram_folds_abort_edges_into_a_note(capsys: Any) -> None:
    """The mermaid diagram draws no abort edge; one note lists where aborts come from, and the
    run's path is drawn in a loud colour."""
    assert main(["diagram", "--trace", str(TRACES / "aborted_streaming.jsonl")]) == 0
    out = capsys.readouterr().out
    loop = out.split("```mermaid", 2)[1]
    assert "--> aborted_streaming: aborted_streaming on AbortRequested" not in loop
    note = next(line for line in loop.splitlines() if "note right of idle" in line)
    assert "aborted_streaming on AbortRequested from idle, session_start_hooks" in note
    assert "aborted_tools on AbortRequested from attachments, post_tools" in note
    assert "classDef taken fill:#ff922b,stroke:#c92a2a,stroke-width:3px" in loop


def test_run_and_demo_given_a_trace_folder_ending_in_a_slash_write_into_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--trace runs/` makes a folder holding one file per run, for `run` and `demo` alike;
    the next run adds a file instead of overwriting a file named `runs`."""
    monkeypatch.chdir(tmp_path)
    model = scenario(tmp_path, [{"content": [{"text": "hi"}]}])
    assert main(["run", "hi", "--model", model, "--trace", "runs/"]) == 0
    assert main(["run", "hi", "--model", model, "--trace", "runs/"]) == 0
    assert main(["demo", "--quiet", "--trace", "demos/"]) == 0
    assert (tmp_path / "runs").is_dir()
    assert len(list((tmp_path / "runs").glob("*.jsonl"))) == 2
    assert len(list((tmp_path / "demos").glob("*.jsonl"))) == 1


def test_a_trace_that_cannot_be_opened_is_one_failed_row_of_a_folder(
    tmp_path: Path, capsys: Any
) -> None:
    """`replay` and `show` of a folder holding a trace that cannot be opened (a dangling
    link, no read permission) report it on its row and go on with the others (the first
    such file ended the command, leaving the table empty)."""
    folder = tmp_path / "traces"
    folder.mkdir()
    (folder / "a.jsonl").symlink_to(folder / "gone.jsonl")
    (folder / "b.jsonl").write_bytes((TRACES / "max_turns.jsonl").read_bytes())
    assert main(["replay", str(folder)]) == 1
    out = capsys.readouterr().out
    assert "a.jsonl       -            -  FAILED: " in out
    assert "No such file or directory" in out
    assert "1 replayed identically, 1 failed" in out
    assert main(["show", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "a.jsonl  unreadable: No such file or directory" in out
    assert "b.jsonl" in out


def test_diff_compares_a_crashed_runs_trace_up_to_its_cut(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    """`diff` of a trace whose last line is cut off (a crashed run) compares what precedes
    the cut and says so (it refused, pointing at a library argument the command does not
    have); a trace cut inside its header is named as holding nothing to read."""
    monkeypatch.chdir(tmp_path)
    whole = (TRACES / "retry_then_success.jsonl").read_bytes()
    lines = whole.splitlines(keepends=True)
    (tmp_path / "whole.jsonl").write_bytes(whole)
    (tmp_path / "cut.jsonl").write_bytes(b"".join(lines) + b'{"record":"ev')
    assert main(["diff", "whole.jsonl", "cut.jsonl"]) == 0
    out = capsys.readouterr().out
    assert "(cut.jsonl: its last line is cut off; compared up to the cut)" in out
    assert "the traces agree" in out
    (tmp_path / "early.jsonl").write_bytes(b"".join(lines[:4]) + lines[4][:10])
    assert main(["diff", "whole.jsonl", "early.jsonl"]) == 1
    assert "first difference at seq" in capsys.readouterr().out
    (tmp_path / "header.jsonl").write_bytes(lines[0][:30])
    assert main(["show", "header.jsonl"]) == 1
    err = capsys.readouterr().err
    assert "the header, the only line, is cut off" in err
    assert "allow_truncated" not in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run", "hi", "--max-turns", "0"], "argument --max-turns: expected 1 or more, got 0"),
        (
            ["chat", "--full-transcript-every", "-2"],
            "argument --full-transcript-every: expected 1 or more, got -2",
        ),
        (["fork", "t.jsonl", "--at", "0"], "argument --at: expected 1 or more, got 0"),
        (["runs", "--limit", "-1"], "argument --limit: expected 0 or more, got -1"),
        (["runs", "--since", "yesterday"], "--since 'yesterday': expected an ISO date"),
        (["runs", "--transition", "next_turn:x"], "MIN must be a whole number"),
    ],
)
def test_an_option_value_out_of_range_is_a_usage_error(
    argv: list[str], message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    """A number or filter an option cannot take exits 2 with one line naming the option, as
    argparse does for a malformed one (they exited 1, as if a run had failed)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("FSM_AGENT_STORE", str(tmp_path / "store.sqlite3"))
    try:
        status = main(argv)
    except SystemExit as exit_:  # argparse's own refusal
        status = exit_.code
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err
    assert status == 2
