"""A protected name in the code a command gives a program asks in bypass mode.

Found: ``python3 -c "open('.git/config', 'a')"``, ``node -e``, ``perl -e``, ``awk '{print >
".bashrc"}'`` and ``sed -n 'w .git/config' f`` wrote a protected path unasked in bypass mode,
while ``echo x > .git/config`` asks: the name was in the program's code, not a word of its own.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_hostile_commands import safety_question


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """A working folder with a repository and a source file."""
    (tmp_path / ".git" / "hooks").mkdir(parents=True)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("")
    return tmp_path


NAMING = [
    "python3 -c \"open('.git/config', 'a').write('[core]')\"",
    'python3 -c \'import pathlib; pathlib.Path(".bashrc").write_text("x")\'',
    "node -e \"require('fs').writeFileSync('.git/hooks/pre-commit', 'x')\"",
    "perl -e 'open(F, \">.bashrc\"); print F 1'",
    'ruby -e \'File.write(".vscode/tasks.json", "{}")\'',
    'awk \'BEGIN { print "x" > ".git/config" }\'',
    "gawk '{ print > \".claude/settings.json\" }' src/a.py",
    "sed -n 'w .git/config' src/a.py",
    "sed -i 's/a/b/w .bashrc' src/a.py",
    "python3 <<'EOF'\nopen('.git/config', 'a').write('[core]')\nEOF",
    "python3 - <<< \"open('.zshrc', 'w')\"",
    "php -r \"file_put_contents('.bashrc', 'x');\"",
]


@pytest.mark.parametrize("command", NAMING)
def test_bypass_asks_when_code_names_a_protected_path(command: str, work: Path) -> None:
    assert safety_question(command, work)


ORDINARY = [
    "python3 -c \"print(open('.gitignore').read())\"",
    "python3 -c 'import os; print(os.getcwd())'",
    "node -e 'console.log(process.version)'",
    "awk '{ print $1 }' src/a.py > out.txt",
    "sed -i 's/old/new/' src/a.py",
    "python3 x.py .github/workflows/ci.yml",
    "python3 <<'EOF'\nprint('hello')\nEOF",
]


@pytest.mark.parametrize("command", ORDINARY)
def test_bypass_still_runs_code_that_names_no_protected_path(command: str, work: Path) -> None:
    assert not safety_question(command, work)


def test_a_name_the_code_builds_is_not_caught(work: Path) -> None:
    """The limit, documented: names are read, code is not run."""
    assert not safety_question("python3 -c \"open('.g' + 'it/config', 'a')\"", work)
