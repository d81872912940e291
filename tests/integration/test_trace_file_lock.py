"""One writer per trace file: a second run given the same file is refused, and loses nothing.

Without the lock, the second writer truncated the file while the first went on writing at its
own offset, so neither trace survived.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fsm_agent.cli import main
from fsm_agent.core.config import LoopConfig
from fsm_agent.errors import TraceFileBusy
from fsm_agent.trace.writer import TraceWriter

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = ROOT / "fsm_agent" / "scenarios" / "text_reply.json"
HOLDER = """
import sys, time
from fsm_agent.core.config import LoopConfig
from fsm_agent.trace.writer import TraceWriter
writer = TraceWriter(sys.argv[1], config=LoopConfig(model="m"))
print("holding", flush=True)
time.sleep(600)
"""


def test_a_second_writer_is_refused_and_the_first_loses_nothing(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    first = TraceWriter(path, config=LoopConfig(model="m"))
    written = path.read_bytes()
    with pytest.raises(TraceFileBusy, match="another run is writing this trace file"):
        TraceWriter(path, config=LoopConfig(model="other"))
    assert path.read_bytes() == written  # not truncated
    first.close()
    TraceWriter(path, config=LoopConfig(model="m")).close()  # free again once closed


def test_a_writer_in_another_process_holds_it_until_it_dies(tmp_path: Path) -> None:
    """The lock is the process's: SIGKILL, with no clean-up at all, frees the file."""
    path = tmp_path / "t.jsonl"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path)], stdout=subprocess.PIPE, env=env, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "holding\n"
        with pytest.raises(TraceFileBusy):
            TraceWriter(path, config=LoopConfig(model="m"))
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()
    deadline = time.monotonic() + 10
    while True:
        try:
            TraceWriter(path, config=LoopConfig(model="m")).close()
            break
        except TraceFileBusy:
            assert time.monotonic() < deadline
            time.sleep(0.05)


def test_the_command_line_says_which_file_is_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    busy = TraceWriter(tmp_path / "t.jsonl", config=LoopConfig(model="m"))
    try:
        status = main(["run", "hi", "--model", f"scripted:{SCENARIO}", "--trace", "t.jsonl"])
    finally:
        busy.close()
    err = capsys.readouterr().err
    assert status == 1
    assert "t.jsonl: another run is writing this trace file" in err
    assert "Traceback" not in err
