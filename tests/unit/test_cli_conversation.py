"""The command line's conversations: chat, run --continue and --resume, and replaying or
showing a turn of a session."""

from __future__ import annotations

import fcntl
import io
import json
import os
import pty
import select
import subprocess
import sys
import termios
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from fsm_agent.cli import main
from fsm_agent.trace.conversation import conversation_turns, header_meta
from fsm_agent.trace.reader import read_trace, trace_files


def scenario(tmp_path: Path, steps: list[dict[str, Any]]) -> str:
    """A scenario file for ``--model scripted:FILE``."""
    path = tmp_path / "scenario.json"
    path.write_text(json.dumps({"steps": steps}), encoding="utf-8")
    return f"scripted:{path}"


def says(text: str) -> dict[str, Any]:
    return {"content": [{"text": text}]}


def turns_in(folder: Path) -> list[Path]:
    """The folder's traces, first turn first."""
    return sorted(trace_files([folder]), key=lambda path: header_meta(path)["turn"])


def chat(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, typed: str) -> int:
    """``fsm-agent chat`` reading ``typed`` from a pipe."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "stdin", io.StringIO(typed))
    model = scenario(tmp_path, [says("first answer"), says("second answer")])
    return main(["chat", "--model", model, "--trace", f"{tmp_path}/traces/"])


def test_chat_asks_each_piped_line_in_turn(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each line of piped input is one turn of one conversation, its traces linked."""
    assert chat(tmp_path, monkeypatch, "first question\n\nsecond question\n") == 0
    first, second = turns_in(tmp_path / "traces")
    assert header_meta(second)["previous"] == first.name
    assert header_meta(first)["session"] == header_meta(second)["session"]
    prompts = [
        event["event"]["messages"][-1]["content"][0]["text"]
        for event in (r.data for r in read_trace(second).of_kind("event"))
        if event["event"]["type"] == "TurnStarted"
    ]
    assert prompts == ["second question"]


def test_chat_without_input_ends_quietly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    """Empty input starts no turn and exits 0."""
    assert chat(tmp_path, monkeypatch, "") == 0
    assert "no prompt was given" in capsys.readouterr().out


def test_run_continue_carries_on_the_latest_conversation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``run --continue`` is the next turn of the newest trace of the folder."""
    monkeypatch.chdir(tmp_path)
    folder = f"{tmp_path}/traces/"
    assert main(["run", "one", "--model", scenario(tmp_path, [says("1")]), "--trace", folder]) == 0
    model = scenario(tmp_path, [says("2")])
    assert main(["run", "two", "--continue", "--model", model, "--trace", folder]) == 0
    first, second = turns_in(tmp_path / "traces")
    assert header_meta(second)["turn"] == 2
    assert conversation_turns(second) == [first, second]


def test_run_continue_passes_over_empty_and_subagent_traces(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A newer empty trace (a run killed as it began) or a newer subagent trace does not hide
    the conversation ``run --continue`` carries on."""
    monkeypatch.chdir(tmp_path)
    folder = f"{tmp_path}/traces/"
    assert main(["run", "one", "--model", scenario(tmp_path, [says("1")]), "--trace", folder]) == 0
    (first,) = trace_files([tmp_path / "traces"])
    child = tmp_path / "traces" / f"{first.stem}.subagents" / "toolu_1.jsonl"
    child.parent.mkdir()
    header = orjson.loads(first.read_bytes().splitlines()[0])
    header["meta"] = {**header["meta"], "subagent_of": {"call_id": "toolu_1"}}
    child.write_bytes(orjson.dumps(header) + b"\n")
    (tmp_path / "traces" / "zz-killed.jsonl").write_bytes(b"")
    model = scenario(tmp_path, [says("2")])
    assert main(["run", "two", "--continue", "--model", model, "--trace", folder]) == 0
    newest = max(trace_files([tmp_path / "traces"]), key=lambda p: p.stat().st_mtime_ns)
    assert header_meta(newest)["previous"] == first.name


def test_run_resume_names_the_turn_to_carry_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``run --resume FILE`` starts from that trace's transcript, whichever is newest."""
    monkeypatch.chdir(tmp_path)
    folder = f"{tmp_path}/traces/"
    assert main(["run", "a", "--model", scenario(tmp_path, [says("A")]), "--trace", folder]) == 0
    (older,) = trace_files([tmp_path / "traces"])
    assert main(["run", "b", "--model", scenario(tmp_path, [says("B")]), "--trace", folder]) == 0
    model = scenario(tmp_path, [says("C")])
    assert main(["run", "c", "--resume", str(older), "--model", model, "--trace", folder]) == 0
    newest = max(trace_files([tmp_path / "traces"]), key=lambda p: p.stat().st_mtime_ns)
    assert header_meta(newest)["previous"] == older.name


def test_continue_with_no_conversation_is_one_clear_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    """``--continue`` in an empty trace folder exits 2 naming the folder."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "traces").mkdir()
    model = scenario(tmp_path, [says("x")])
    argv = ["run", "x", "--continue", "--model", model, "--trace", f"{tmp_path}/traces/"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "no earlier conversation" in err and len(err.strip().splitlines()) == 1


def two_turns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> list[Path]:
    """The traces of a two-turn chat (its output consumed)."""
    assert chat(tmp_path, monkeypatch, "first question\nsecond question\n") == 0
    capsys.readouterr()
    return turns_in(tmp_path / "traces")


def test_replay_of_a_turn_replays_its_conversation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    """``replay LAST_TURN`` checks every turn of the conversation, first to last."""
    first, second = two_turns(tmp_path, monkeypatch, capsys)
    assert main(["replay", str(second)]) == 0
    out = capsys.readouterr().out
    assert out.index(first.name) < out.index(second.name)
    assert "2 replayed identically, 0 failed" in out


def test_show_names_the_turn_and_the_one_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    """``show`` of a later turn says which turn of which session it is, and what it follows."""
    first, second = two_turns(tmp_path, monkeypatch, capsys)
    assert main(["show", str(second)]) == 0
    head = capsys.readouterr().out.splitlines()[0]
    assert "turn 2 of session" in head and first.name in head


def _read_until(fd: int, wanted: bytes, seen: bytearray, *, within_s: float = 30.0) -> None:
    """Read the terminal's output into ``seen`` until ``wanted`` shows (or fail)."""
    deadline = time.monotonic() + within_s
    while wanted not in seen:
        left = deadline - time.monotonic()
        assert left > 0, f"{wanted!r} never showed; the terminal said: {bytes(seen)[-800:]!r}"
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            try:
                seen.extend(os.read(fd, 4096))
            except OSError:  # the child closed the terminal
                return


def _chat_at_a_terminal(
    tmp_path: Path,
    model: str,
    script: list[tuple[bytes, bytes]],
    *options: str,
) -> None:
    """Run ``fsm-agent chat`` on a pseudo-terminal (its controlling terminal, so Ctrl-C
    interrupts it): for each (shown, typed) step, wait until the terminal shows ``shown``, then
    type ``typed``; then end the input (Ctrl-D) and expect a clean exit."""
    argv = [sys.executable, "-m", "fsm_agent.cli", "chat", "--model", model, *options]
    main_fd, child_fd = pty.openpty()
    child = subprocess.Popen(
        [*argv, "--trace", f"{tmp_path}/traces/"],
        stdin=child_fd,
        stdout=child_fd,
        stderr=child_fd,
        cwd=tmp_path,
        env={**os.environ, "COLUMNS": "200", "TERM": "dumb"},
        start_new_session=True,
        preexec_fn=_take_the_terminal,  # noqa: PLW1509 - one ioctl, no lock taken after fork
    )
    os.close(child_fd)
    seen = bytearray()
    try:
        for shown, typed in script:
            _read_until(main_fd, shown, seen)
            del seen[: seen.index(shown) + len(shown)]  # later steps look past this point
            os.write(main_fd, typed)
        os.write(main_fd, b"\x04")  # Ctrl-D: the input ends
        assert child.wait(timeout=30) == 0
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        os.close(main_fd)


def _take_the_terminal() -> None:
    """In the child, after ``setsid``: make standard input the controlling terminal."""
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_ctrl_c_mid_turn_aborts_the_turn_and_the_chat_goes_on(tmp_path: Path) -> None:
    """Ctrl-C while a tool runs aborts that turn through the core (its trace ends
    ``aborted_tools``), the chat asks for the next prompt, and the next turn starts from the
    aborted turn's transcript; Ctrl-D then ends the chat normally."""
    model = scenario(
        tmp_path,
        [
            {"content": [{"tool_use": {"name": "Bash", "input": {"command": "sleep 30"}}}]},
            says("carried on"),
        ],
    )
    script = [(b"> ", b"wait\n"), (b"sleep 30", b"\x03"), (b"> ", b"go on\n"), (b"carried on", b"")]
    _chat_at_a_terminal(tmp_path, model, script, "--yes")
    first, second = turns_in(tmp_path / "traces")
    assert read_trace(first).records[-1].data["terminal"] == "aborted_tools"
    assert header_meta(second)["previous"] == first.name
    started = next(
        r.data["event"]
        for r in read_trace(second).of_kind("event")
        if r.data["event"]["type"] == "TurnStarted"
    )
    assert "sleep 30" in json.dumps(started["messages"])


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_typing_while_the_agent_works_queues_the_line(tmp_path: Path) -> None:
    """At a terminal, a line typed while a tool runs reaches that turn's attachment phase."""
    model = scenario(
        tmp_path,
        [
            {"content": [{"tool_use": {"name": "Bash", "input": {"command": "sleep 3"}}}]},
            says("done"),
        ],
    )
    script = [
        (b"> ", b"wait a bit\n"),
        (b"sleep 3", b"also say hello\n"),  # typed while the tool works
        (b"done", b""),
        (b"> ", b""),
    ]
    _chat_at_a_terminal(tmp_path, model, script, "--yes")
    (trace,) = trace_files([tmp_path / "traces"])
    ready = [
        r.data["event"]
        for r in read_trace(trace).of_kind("event")
        if r.data["event"]["type"] == "AttachmentsReady"
    ]
    assert "also say hello" in ready[0]["messages"][0]["text"]


def test_show_of_a_folder_numbers_the_turns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    """``show FOLDER`` says which turn each trace of a conversation is."""
    two_turns(tmp_path, monkeypatch, capsys)
    assert main(["show", str(tmp_path / "traces")]) == 0
    listed = capsys.readouterr().out.splitlines()[1:]
    assert sorted(line.rsplit("  ", 1)[1] for line in listed) == ["turn 1", "turn 2"]


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_a_permission_question_in_a_chat_takes_the_next_line(tmp_path: Path) -> None:
    """At a terminal, the line typed after a permission question answers it (not queued)."""
    write = {"file_path": "out.txt", "content": "hi\n"}
    model = scenario(
        tmp_path, [{"content": [{"tool_use": {"name": "Write", "input": write}}]}, says("done")]
    )
    script = [(b"> ", b"write the file\n"), (b"Allow?", b"y\n"), (b"done", b"")]
    _chat_at_a_terminal(tmp_path, model, script)
    assert (tmp_path / "out.txt").read_text(encoding="utf-8") == "hi\n"


def test_with_standard_input_closed_chat_ends_and_run_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    """With standard input closed (``<&-``: ``sys.stdin`` is None) nobody can be asked:
    `chat` ends with no prompt and `run` runs, the mode deciding (both crashed on
    ``sys.stdin.isatty()``)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "stdin", None)
    model = scenario(tmp_path, [says("answer")])
    assert main(["chat", "--model", model, "--trace", f"{tmp_path}/traces/"]) == 0
    assert "no prompt was given" in capsys.readouterr().out
    assert main(["run", "hi", "--model", model, "--trace", f"{tmp_path}/traces/"]) == 0
    assert "ended: completed" in capsys.readouterr().out


def test_run_continue_names_a_newer_trace_it_cannot_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    """A newer trace that is not empty but cannot be read is passed over by ``run
    --continue`` saying so on stderr, naming the file and why (the turns it may hold are not
    in the conversation carried on; it was passed over without a word)."""
    monkeypatch.chdir(tmp_path)
    folder = f"{tmp_path}/traces/"
    assert main(["run", "one", "--model", scenario(tmp_path, [says("1")]), "--trace", folder]) == 0
    (first,) = trace_files([tmp_path / "traces"])
    (tmp_path / "traces" / "zz-damaged.jsonl").write_bytes(b"not a trace\n")
    (tmp_path / "traces" / "zz-killed.jsonl").write_bytes(b"")
    capsys.readouterr()
    model = scenario(tmp_path, [says("2")])
    assert main(["run", "two", "--continue", "--model", model, "--trace", folder]) == 0
    err = capsys.readouterr().err
    assert "--continue passes over" in err
    assert "zz-damaged.jsonl: line 1: $: invalid JSON" in err
    assert "zz-killed" not in err
    newest = max(trace_files([tmp_path / "traces"]), key=lambda p: p.stat().st_mtime_ns)
    assert header_meta(newest)["previous"] == first.name


def test_a_turn_written_over_by_another_session_is_not_taken_for_the_turn_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    """When a later run given the same ``--trace FILE`` writes over a conversation's first
    turn (deleted to reuse its name: a run never writes over a trace), `replay` of the second
    turn does not replay the other session's run as its turn before (it did, and said both
    replayed identically)."""
    monkeypatch.chdir(tmp_path)
    model = scenario(tmp_path, [says("1"), says("2")])
    assert main(["run", "one", "--model", model, "--trace", "t.jsonl"]) == 0
    assert main(["run", "two", "--continue", "--model", model, "--trace", "t.jsonl"]) == 0
    assert main(["run", "other", "--model", model, "--trace", "t.jsonl"]) == 1  # refused
    (tmp_path / "t.jsonl").unlink()
    assert main(["run", "other", "--model", model, "--trace", "t.jsonl"]) == 0
    assert (
        header_meta(tmp_path / "t.jsonl")["session"]
        != header_meta(tmp_path / "t.turn2.jsonl")["session"]
    )
    capsys.readouterr()
    assert main(["replay", "t.turn2.jsonl"]) == 0
    out = capsys.readouterr().out
    assert "1 replayed identically, 0 failed" in out
    assert conversation_turns(tmp_path / "t.turn2.jsonl") == [tmp_path / "t.turn2.jsonl"]
