"""The words a command's shell computes that the checks tell beforehand, against a real Bash.

``KnownWords`` puts in, for a ``for`` loop's variable, for a variable one assignment sets, and
for ``$HOME`` at the start of a word, what the shell will give the program (the safety check
then judges those paths). Each example draws such a command, runs it in Bash with the program
printing its words, and compares: every word Bash gives must be one the check was told (the
loop's words, the value, the home folder), and where the check tells a word, no other.
The oracle is Bash itself: no model of the shell is shared with the check.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fsm_agent.core.shell_commands import analyse_command
from fsm_agent.toolbox.known_words import KnownWords

BASH = shutil.which("bash")
pytestmark = pytest.mark.skipif(BASH is None, reason="bash is not installed")

FILES = ["a.py", "b.py", "c.txt", ".hidden.py", "d"]
LIST_WORDS = ["a.py", "*.py", "*.txt", "x", "'q r'", '"s t"', "*.none", "d", ".*.py", "?.py"]
VALUES = ["build", '"my dir"', "'x y'", "a.py", "", '"$(mktemp -d)"', "$(mktemp -d)"]
READS = ['"$v"', '"${v}"', '"$v.bak"', '"$v"/x', '"${v}/y z"']
HOMES = ['"$HOME/.cache"', "$HOME", "--prefix=$HOME/.local", '"${HOME}"/x']
PRINT = "printf '%s\\n'"


@st.composite
def commands(draw: st.DrawFn) -> str:
    """A command whose last program is ``P``, given a word the checks can tell."""
    kind = draw(st.sampled_from(["loop", "setting", "home"]))
    if kind == "loop":
        listed = " ".join(draw(st.lists(st.sampled_from(LIST_WORDS), min_size=1, max_size=4)))
        return f"for v in {listed}; do P {draw(st.sampled_from(READS))}; done"
    if kind == "setting":
        value = draw(st.sampled_from(VALUES))
        return f"v={value}; P {draw(st.sampled_from(READS))}"
    return f"P {draw(st.sampled_from(HOMES))}"


def told_words(command: str, folder: Path) -> list[str] | None:
    """What the checks are told the program ``rm`` standing for ``P`` is given, or None
    when they cannot tell."""
    analysis = analyse_command(command.replace("P ", "rm "))
    known = KnownWords.of(analysis, [folder])
    parts = [part for part in analysis.parts if part.argv[:1] == ("rm",)]
    if analysis.problem is not None or len(parts) != 1:
        return None
    part = known.put_in(parts[0])
    return None if part.expanded else list(part.argv[1:])


@given(command=commands())
def test_a_told_word_is_what_bash_gives(command: str) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        folder, home, temporary = root / "work", root / "home", root / "tmp"
        for each in (folder, home, temporary):
            each.mkdir()
        for name in FILES:
            (folder / name).write_text("")
        environment = {"PATH": os.defpath, "HOME": str(home), "TMPDIR": str(temporary)}
        saved = {name: os.environ.get(name) for name in environment}
        os.environ.update(HOME=str(home), TMPDIR=str(temporary))
        try:
            told = told_words(command, folder)
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
        if told is None:
            return  # the word stays computed: the command asks
        done = subprocess.run(
            [BASH or "bash", "--norc", "--noprofile", "-c", command.replace("P ", f"{PRINT} ")],
            cwd=folder,
            env={**environment, "LC_ALL": "C.UTF-8"},
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
        given_words = set(done.stdout.splitlines())
        # mktemp's folder has a random name; the checks name it by its template
        made = re.compile(re.escape(f"{temporary}/tmp.") + "[A-Za-z0-9]{10}")
        expected = {made.sub(f"{temporary}/tmp.XXXXXXXXXX", w) for w in given_words}
        assert expected <= set(told), (command, sorted(given_words), told)
        # More only where Bash versions differ: a leading-dot pattern giving . or ..
        extra = set(told) - expected - {".", ".."}
        assert not extra, (command, sorted(given_words), told)
