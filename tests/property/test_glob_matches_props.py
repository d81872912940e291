"""The paths a glob word becomes, against what a real Bash makes of it.

The safety check judges a glob word by the paths it matches (``glob_matches``): every path Bash
would give the command must be among them, or a protected one could slip by unjudged. Each
example draws a small tree of files and folders (dot names, odd characters, names differing
only in case) and a pattern (stars, question marks, bracket expressions, quoted pieces, a
leading dot, several components), and asks Bash for its expansion with its default options.
The oracle is Bash itself: no model of the shell is shared with the matcher.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fsm_agent.core.shell_commands import analyse_command
from fsm_agent.toolbox.glob_matches import glob_matches

BASH = shutil.which("bash")
pytestmark = pytest.mark.skipif(BASH is None, reason="bash is not installed")

NAMES = ["a", "b", "A", "ab", ".a", ".b", "a.py", ".git", "a b", "x*y", "x[y", "-r", "é", "ß.py"]
PIECES = ["*", "?", "a", "b", ".", "[ab]", "[!a]", "[^.]", "[a-c]", "[]a]", "py", "'*'", '"?"',
          "\\*", "[", "]", "x", " "]  # fmt: skip


@st.composite
def trees(draw: st.DrawFn) -> list[tuple[str, bool]]:
    """Paths to make, each with whether it is a folder: a few names at the top, some inside."""
    top = draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=6, unique=True))
    folders = draw(st.lists(st.sampled_from(top), max_size=3, unique=True))
    made = [(name, name in folders) for name in top]
    for folder in folders:
        inner = draw(st.lists(st.sampled_from(NAMES), max_size=4, unique=True))
        made += [(f"{folder}/{name}", False) for name in inner]
    return made


@st.composite
def patterns(draw: st.DrawFn) -> str:
    """A glob word as a model types it: one or two components of pieces."""
    components = draw(
        st.lists(
            st.lists(st.sampled_from(PIECES), min_size=1, max_size=4).map("".join),
            min_size=1,
            max_size=2,
        )
    )
    return "/".join(components)


def bash_expansion(word: str, folder: Path) -> list[str] | None:
    """What Bash gives ``printf`` for ``word`` in ``folder`` (None: it did not run it)."""
    done = subprocess.run(
        [BASH or "bash", "--norc", "--noprofile", "-c", f"printf '%s\\0' {word}"],
        cwd=folder,
        capture_output=True,
        env={"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"},
        check=False,
        timeout=10,
    )
    if done.returncode != 0:
        return None
    return done.stdout.decode("utf-8", "surrogateescape").split("\0")[:-1]


def through_dots(word: str) -> bool:
    """Whether a path goes through ``.`` or ``..``, which a leading-dot component gives in a
    Bash before 5.2 (``globskipdots``) and not in a later one."""
    return any(component in (".", "..") for component in word.split("/"))


@given(tree=trees(), word=patterns())
def test_every_path_bash_gives_is_matched(tree: list[tuple[str, bool]], word: str) -> None:
    analysis = analyse_command(f"rm {word}")
    if analysis.problem is not None or len(analysis.parts) != 1:
        return
    part = analysis.parts[0]
    globs = dict(analysis.globs)
    if len(part.argv) != 2 or part.argv[1] not in globs:
        return  # no glob word (quoted away, split into several words)
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        for path, is_folder in tree:
            if is_folder:
                (folder / path).mkdir(exist_ok=True)
            elif (folder / path).parent.is_dir():
                (folder / path).touch()
        expected = bash_expansion(word, folder)
        if expected is None:
            return
        matched = glob_matches(globs[part.argv[1]], folder)
        if matched is None:
            return  # a word it cannot tell stays computed: the command asks
        given_words = matched or [part.argv[1]]
        if all(through_dots(w) for w in matched):
            given_words.append(part.argv[1])  # a Bash that skips . and .. leaves the word
        missing = set(expected) - set(given_words)
        assert not missing, (word, tree, expected, given_words)
        # More only where Bash versions differ: a leading-dot component giving . or ..
        extra = {w for w in set(given_words) - set(expected) if not through_dots(w)}
        assert not extra, (word, tree, expected, given_words)
