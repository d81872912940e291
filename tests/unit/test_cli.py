"""The fsm-agent command line: clear messages, exit statuses, and the offline demo."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from fsm_agent import Agent
from fsm_agent.cli import main
from fsm_agent.testing.scenario import ScriptedModel, parse_scenario

ROOT = Path(__file__).resolve().parents[2]


def test_run_without_api_key_explains_instead_of_crashing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`run` without ANTHROPIC_API_KEY prints what to do and exits 2, with no traceback."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    assert main(["run", "hello"]) == 2
    err = capsys.readouterr().err
    assert "ANTHROPIC_API_KEY" in err
    assert "scripted:FILE" in err
    assert "demo" in err
    assert "Traceback" not in err


def test_run_with_a_scripted_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`run --model scripted:FILE` plays a scenario offline and writes a trace."""
    scenario = ROOT / "fsm_agent" / "scenarios" / "text_reply.json"
    monkeypatch.chdir(tmp_path)
    assert main(["run", "hi", "--model", f"scripted:{scenario}", "--trace", "t.jsonl"]) == 0
    assert main(["replay", "t.jsonl"]) == 0


def test_replay_reports_divergence_with_exit_status_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`replay` exits 1 and names the file when a trace does not replay."""
    bad = tmp_path / "bad.jsonl"
    good = (ROOT / "traces" / "model_error.jsonl").read_text(encoding="utf-8")
    bad.write_text(good.replace('"dest":"model_error"', '"dest":"completed"', 1), encoding="utf-8")
    assert main(["replay", str(bad), str(ROOT / "traces" / "max_turns.jsonl")]) == 1
    out = capsys.readouterr().out
    assert "FAILED" in out
    assert "1 replayed identically, 1 failed" in out


def test_replay_of_an_empty_folder_is_a_usage_error(tmp_path: Path) -> None:
    """`replay` on a folder without traces exits 2 rather than passing vacuously."""
    assert main(["replay", str(tmp_path)]) == 2


def test_show_and_html(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`show` prints a timeline with transition names; --html writes a standalone page."""
    page = tmp_path / "t.html"
    trace = ROOT / "traces" / "stop_hook_blocking.jsonl"
    assert main(["show", str(trace), "--html", str(page)]) == 0
    assert "stop_hook_blocking" in capsys.readouterr().out
    html = page.read_text(encoding="utf-8")
    assert html.lstrip().lower().startswith("<!doctype html")
    assert "stop_hook_blocking" in html


def test_html_writes_over_its_own_page_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Found: ``show t.jsonl --html t.jsonl`` (or ``--html README.md``) wrote the page over the
    file. A page is written over, an empty file too; anything else is refused and kept."""
    trace = tmp_path / "t.jsonl"
    trace.write_bytes((ROOT / "traces" / "stop_hook_blocking.jsonl").read_bytes())
    notes = tmp_path / "README.md"
    notes.write_text("# notes\n", encoding="utf-8")
    for target in (trace, notes):
        kept = target.read_bytes()
        assert main(["show", str(trace), "--html", str(target)]) != 0
        assert "not a run's page, so it was not overwritten" in capsys.readouterr().err
        assert target.read_bytes() == kept
    page = tmp_path / "t.html"
    page.write_text("", encoding="utf-8")
    for _ in range(2):  # empty, then its own page: written over both times
        assert main(["show", str(trace), "--html", str(page)]) == 0
    assert "stop_hook_blocking" in page.read_text(encoding="utf-8")


def test_diff_finds_the_first_difference(capsys: pytest.CaptureFixture[str]) -> None:
    """`diff` agrees on a trace and itself, and reports a seq for two different runs."""
    a = str(ROOT / "traces" / "model_error.jsonl")
    b = str(ROOT / "traces" / "max_turns.jsonl")
    assert main(["diff", a, a]) == 0
    assert main(["diff", a, b]) == 1
    assert "first difference at seq" in capsys.readouterr().out


def test_diagram_highlights_a_trace(capsys: pytest.CaptureFixture[str]) -> None:
    """`diagram --trace` marks the transitions that trace took."""
    assert main(["diagram", "--trace", str(ROOT / "traces" / "max_turns.jsonl")]) == 0
    out = capsys.readouterr().out
    assert "TAKEN max_turns" in out
    assert "classDef taken" in out


def test_python_dash_m_diagram() -> None:
    """`python -m fsm_agent diagram` works (the entry point is kept)."""
    done = subprocess.run(
        [sys.executable, "-m", "fsm_agent", "diagram"],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0
    assert "stateDiagram-v2" in done.stdout


def test_demo_runs_offline_and_replays(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`demo` completes through the fake server, takes the advertised recoveries, replays."""
    from fsm_agent.demo import run_demo_sync

    monkeypatch.chdir(tmp_path)
    outcome = run_demo_sync(trace_path=tmp_path / "demo.jsonl")
    assert outcome.result.terminal == "completed"
    assert outcome.replayed_records > 100
    assert outcome.permission_questions == ("Write(NOTES.md)",)
    text = (tmp_path / "demo.jsonl").read_text(encoding="utf-8")
    for name in ("max_output_tokens_recovery", "reactive_compact_retry", "stop_hook_blocking"):
        assert f'"name":"{name}"' in text


def test_run_against_the_fake_server_with_an_api_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`run` with ANTHROPIC_API_KEY talks to Claude's API through the SDK (here the fake
    server on 127.0.0.1, via ANTHROPIC_BASE_URL) and keeps the key out of the trace."""
    from fsm_agent.testing.fake_server import FakeAnthropicServer
    from fsm_agent.testing.scenario import parse_scenario

    scenario = parse_scenario({"steps": [{"content": [{"text": "Hello from the server."}]}]})
    monkeypatch.chdir(tmp_path)
    with FakeAnthropicServer(scenario) as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-cli-secret-value")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        assert main(["run", "hi", "--trace", "run.jsonl"]) == 0
        assert len(server.message_requests) == 1
    trace = (tmp_path / "run.jsonl").read_text(encoding="utf-8")
    assert "Hello from the server." in trace
    assert "sk-cli-secret-value" not in trace


def test_what_a_model_said_is_printed_spelled_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A model's text that would clear the screen and print over it shows as written, in the
    live run and in `show`, `show FOLDER` and `replay`'s output."""
    scenario = tmp_path / "hostile.json"
    hostile = "done\x1b[2J\x1b[H\u202e all good"
    steps = [{"content": [{"text": hostile}], "usage": {"input_tokens": 1, "output_tokens": 1}}]
    scenario.write_text(json.dumps({"steps": steps}), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert main(["run", "hi", "--model", f"scripted:{scenario}", "--trace", "t.jsonl"]) == 0
    assert main(["show", "t.jsonl"]) == 0
    assert main(["show", "."]) == 0
    head, _, tail = (tmp_path / "t.jsonl").read_text(encoding="utf-8").rpartition("done")
    bad = head + "gone\\u001b[8m" + tail  # the last record that holds the text differs
    (tmp_path / "bad.jsonl").write_text(bad, encoding="utf-8")
    assert main(["replay", "bad.jsonl"]) == 1
    out, err = capsys.readouterr()
    for text in (out, err):
        assert "\x1b" not in text and "\u202e" not in text
    assert "done\\x1b[2J\\x1b[H\\u202e all good" in out
    assert "FAILED" in out


def _long_reply_trace(path: Path, text: str) -> str:
    """A trace of a run whose model answers ``text`` (written with the library)."""
    model = ScriptedModel(parse_scenario({"steps": [{"content": [{"text": text}]}]}))
    assert Agent(model=model, trace=path).run_sync("hi").terminal == "completed"
    return str(path)


def test_diff_of_records_megabytes_long_stays_a_few_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`diff` of traces whose records differ at the end of a long text shows each long
    record around the first differing character, with the count of characters left out,
    not whole (the report was as long as the records; `replay` prints the same report)."""
    long = "y" * 300_000
    a = _long_reply_trace(tmp_path / "a.jsonl", long + "ENDA")
    b = _long_reply_trace(tmp_path / "b.jsonl", long + "ENDB")
    capsys.readouterr()
    assert main(["diff", a, b]) == 1
    out = capsys.readouterr().out
    assert len(out) < 20_000
    assert "ENDA" in out
    assert "ENDB" in out
    assert "characters …]" in out


def _ascii_stream(data: bytes = b"") -> io.TextIOWrapper:
    """A standard stream in ASCII, strict, as PYTHONIOENCODING=ascii makes it."""
    return io.TextIOWrapper(io.BytesIO(data), encoding="ascii", errors="strict", write_through=True)


def test_an_output_encoding_without_the_arrows_gets_them_as_escapes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With standard output in ASCII (PYTHONIOENCODING=ascii, a latin-1 locale, LC_ALL=C
    with UTF-8 mode off) `show` prints what ASCII lacks as backslash escapes (the first
    arrow raised UnicodeEncodeError; during `run`, mid-run)."""
    stdout = _ascii_stream()
    monkeypatch.setattr(sys, "stdout", stdout)
    assert main(["show", str(ROOT / "traces" / "max_turns.jsonl")]) == 0
    assert isinstance(stdout.buffer, io.BytesIO)
    assert b"phase idle \\u2192 session_start_hooks" in stdout.buffer.getvalue()


def test_a_chat_line_its_input_encoding_cannot_decode_is_asked_with_escapes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A piped line holding bytes an ASCII standard input cannot decode is asked, its bytes
    as escapes, and the chat ends with its input (the reader died on UnicodeDecodeError and
    the chat waited for ever: the join below would time out)."""
    monkeypatch.setattr(sys, "stdin", _ascii_stream("h\u00e9llo\n".encode()))
    monkeypatch.setattr(sys, "stdout", _ascii_stream())
    scenario = tmp_path / "scenario.json"
    scenario.write_text(json.dumps({"steps": [{"content": [{"text": "hi"}]}]}), "utf-8")
    argv = ["chat", "--model", f"scripted:{scenario}", "--trace", f"{tmp_path}/traces/"]
    statuses: list[int] = []
    chat = threading.Thread(target=lambda: statuses.append(main(argv)), daemon=True)
    chat.start()
    chat.join(timeout=60)  # generous: it ends at once, or never
    assert statuses == [0]
    (trace,) = (tmp_path / "traces").glob("*.jsonl")
    assert "h\\\\udcc3\\\\udca9llo" in trace.read_text(encoding="utf-8")
