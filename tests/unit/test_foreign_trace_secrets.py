"""A trace another program wrote, or one edited by hand, may hold credentials in clear
(DESIGN §8): ``fsm-agent show`` (its text and its HTML page), ``replay`` and ``diff`` show
it redacted by the key rules, as the trace writer would have written it."""

from __future__ import annotations

from pathlib import Path

import pytest

from fsm_agent.cli import main
from fsm_agent.errors import TraceDivergence
from fsm_agent.trace.divergence import format_divergence
from fsm_agent.trace.reader import read_trace
from fsm_agent.trace.redact import REDACTED

ROOT = Path(__file__).resolve().parents[2]
KEY_SHAPED = "sk-ant-api03-PLANTED0123456789abcdef"
PASSWORD = "hunter2-plain"
LEAKS = (KEY_SHAPED, PASSWORD)


@pytest.fixture
def foreign(tmp_path: Path) -> Path:
    """A recorded trace with an API-key-shaped string in a hook's reason (an event only: it
    replays to other effects) and a password in a tool's input (in the effects only)."""
    text = (ROOT / "traces" / "rejected_and_denied.jsonl").read_text(encoding="utf-8")
    reason = '"decision_reason":"globs are off"'
    path = '"file_path":"NOTES.md"'
    assert reason in text
    assert path in text
    text = text.replace(reason, f'"decision_reason":"globs are off {KEY_SHAPED}"')
    text = text.replace(path, f'{path},"password":"{PASSWORD}"')
    out = tmp_path / "foreign.jsonl"
    out.write_text(text, encoding="utf-8")
    return out


def _clean(what: str, text: str) -> None:
    leaked = [secret for secret in LEAKS if secret in text]
    assert not leaked, f"{what} shows {leaked}"


def test_show_and_its_page_hide_what_the_trace_holds(
    foreign: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "page.html"
    assert main(["show", str(foreign), "--html", str(page)]) == 0
    out = capsys.readouterr().out
    _clean("fsm-agent show", out)
    assert f"globs are off {REDACTED}" in out
    html = page.read_text(encoding="utf-8")
    _clean("the page", html)
    assert REDACTED in html


@pytest.mark.parametrize("command", ["replay", "diff"])
def test_replay_and_diff_show_the_records_redacted(
    foreign: Path, command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The recorded and the replayed record, and the records around them, are redacted; the
    first difference is still named where it is."""
    recorded = str(ROOT / "traces" / "rejected_and_denied.jsonl")
    args = ["replay", str(foreign)] if command == "replay" else ["diff", recorded, str(foreign)]
    assert main(args) == 1
    out = capsys.readouterr().out
    _clean(f"fsm-agent {command}", out)
    assert REDACTED in out
    assert "first difference" in out


def test_a_divergence_message_is_redacted_and_its_records_kept() -> None:
    """The message (what a traceback or a log shows) hides them; the attributes hold the
    records as they were, for a program to compare."""
    expected = {"record": "effect", "seq": 3, "effect": {"password": PASSWORD}}
    actual = {"record": "effect", "seq": 3, "effect": {"note": KEY_SHAPED}}
    error = TraceDivergence(seq=3, expected=expected, actual=actual)
    _clean("the message", str(error))
    assert error.expected == expected
    assert error.actual == actual


def test_a_secret_written_as_a_key_is_hidden_in_the_report_and_its_path() -> None:
    """A key that is an API key is redacted in the records shown and in the path of the
    first difference, which names it."""
    expected = {"record": "event", "seq": 3, "event": {KEY_SHAPED: 1}}
    actual = {"record": "event", "seq": 3, "event": {KEY_SHAPED: 2}}
    report = format_divergence(TraceDivergence(seq=3, expected=expected, actual=actual))
    _clean("the report", report)
    assert f"first difference: $.event.{REDACTED}" in report


def test_a_trace_with_nothing_to_hide_is_shown_as_read() -> None:
    """Redacting a trace this library wrote changes nothing: the same records come back."""
    trace = read_trace(ROOT / "traces" / "rejected_and_denied.jsonl")
    shown = trace.redacted()
    assert all(a is b for a, b in zip(shown.records, trace.records, strict=True))
    assert shown.header is trace.header
