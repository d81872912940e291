"""The pytest plugin: ``--fsm-replay`` turns traces into test items with readable failures."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from test_trace_support import lines_of, record_run, write_lines

pytest_plugins = ["pytester"]

# When the package is installed, the entry point loads the plugin; otherwise load it by name.
_INSTALLED = bool(entry_points(group="pytest11", name="fsm_agent_replay"))
PLUGIN_ARGS = () if _INSTALLED else ("-p", "fsm_agent.testing.pytest_plugin")


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """Run pytest in-process with the plugin loaded."""
    return pytester.runpytest("-p", "no:cacheprovider", *PLUGIN_ARGS, *args)


def test_a_good_trace_passes(pytester: pytest.Pytester, tmp_path: Path) -> None:
    """A trace that replays is one passing item."""
    good = record_run(tmp_path / "good.jsonl")
    result = run(pytester, "--fsm-replay", str(good))
    result.assert_outcomes(passed=1)


def test_a_folder_of_traces(pytester: pytest.Pytester, tmp_path: Path) -> None:
    """A folder given to --fsm-replay yields one item per .jsonl inside it."""
    folder = tmp_path / "traces"
    folder.mkdir()
    record_run(folder / "a.jsonl")
    record_run(folder / "b.jsonl", "text_reply")
    (folder / "notes.txt").write_text("not a trace")
    result = run(pytester, "--fsm-replay", str(folder), "-v")
    result.assert_outcomes(passed=2)


def test_a_divergence_is_reported_readably(pytester: pytest.Pytester, tmp_path: Path) -> None:
    """A diverging trace fails with seq, the differing field, recorded and replayed records,
    and no traceback."""
    records = lines_of(record_run(tmp_path / "good.jsonl"))
    records[2]["name"] = "teleported"
    bad = write_lines(tmp_path / "bad.jsonl", records)
    result = run(pytester, "--fsm-replay", str(bad))
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*replay diverged at seq 2 (line 2)",  # the event on line 2 carries it
            "*first difference: $.name",
            '*recorded: {*"name":"teleported"*',
            "*replayed: {*",
            "*around it (recorded):*",
        ]
    )
    assert "Traceback" not in result.stdout.str()


def test_a_broken_file_is_reported_by_line(pytester: pytest.Pytester, tmp_path: Path) -> None:
    """A malformed trace fails with the reader's line-and-path message."""
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"record": "event"}\n')
    result = run(pytester, "--fsm-replay", str(bad))
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*line 1: $.record: missing header*"])


def test_without_the_option_nothing_is_added(pytester: pytest.Pytester) -> None:
    """Without --fsm-replay the plugin adds no items."""
    pytester.makepyfile("def test_one():\n    assert True\n")
    run(pytester).assert_outcomes(passed=1)


def test_the_plugin_does_not_import_anthropic() -> None:
    """Loading the plugin (and replaying) never imports the anthropic SDK."""
    code = (
        "import sys, fsm_agent.testing.pytest_plugin, fsm_agent.trace.replay;"
        "assert 'anthropic' not in sys.modules, 'anthropic imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
