"""Paths no word of a command names, filled in when it runs: the names ``xargs`` reads, the paths
``find`` puts in place of ``{}`` or deletes (SPEC §9.3 step 1g).

A write to a protected path asks even in ``bypassPermissions``. ``find . -exec sed -i s/a/b/ {} +``
in a repository rewrites ``.git``'s index and objects, and ``git ls-files | xargs sed -i ...``
may be handed a tracked ``.claude/settings.json``: such words count as paths the shell
computes, unless the program only prints or reads. A find whose start points are written in
the command, lie inside the working folder and hold no protected path cannot reach one: it
runs (``find src -name '*.pyc' -delete``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_hostile_commands import decide

from fsm_agent.core.kinds import DecisionSource, PermissionBehavior
from fsm_agent.runtime.permissions import PermissionMode
from fsm_agent.toolbox.paths import MAX_TREE_ENTRIES, holds_protected

# Each may write a protected path in a working folder holding a repository (found: all ran in
# bypass mode without a question).
WRITES_FOUND_PATHS = [
    "find . -exec git diff --output={} \\;",
    "find . -name config -exec cp payload {} \\;",
    "find . -type f -exec sed -i s/a/b/ {} +",
    "find . -type f -exec chmod +x {} +",
    "find . -delete",
    "find . -execdir rm {} +",
    "find . -okdir rm {} \\;",
    "find . -name x -exec sudo rm {} \\;",
    "git ls-files | xargs sed -i s/a/b/",
    "ls | xargs rm -rf",
    "find . -print0 | xargs -0 rm",
    "find . -name '*.py' | xargs -I{} cp payload {}",
    "xargs -a list.txt rm",
    "xargs --replace=% cp payload %",
    "xargs sudo rm",
    "xargs timeout 5 rm",
    "xargs env X=1 sed -i s/a/b/",
    "xargs git -c core.pager=cat rm",
    # no start point: GNU find starts at `.`
    "find -delete",
    "find -name config -exec rm {} +",
    "find -P -O2 -name x -o -name y -delete",
    "find -- . -delete",
    # start points that lead where a protected path is, or may be
    "find src/.. -delete",
    "find ../work -delete",
    "find ~ -name x -delete",
    "find linked -name 'to-*' -exec rm {} +",
    "find git-link -delete",
    "find src-with-link -exec cp payload {} \\;",
    "cd src && find .. -delete",
    "cd $d && find . -delete",
    # links followed, or start points read from a file
    "find -L src -delete",
    "find -H src -exec chmod +x {} +",
    "find src -follow -exec chmod +x {} +",
    "find -files0-from list -delete",
    # a word that is no found path, only built from one, or find's own command not analysed
    "find src -name .bashr -exec cp payload {}c \\;",
    "find . -exec true \\; -exec rm {} +",
    "find src -exec xargs rm \\;",
]

# What an expression finds where the start point holds protected paths: a protected path, a
# folder holding one, a link to one, or anything, as far as the check can tell.
FINDS_PROTECTED = [
    "find . -name config -delete",
    "find . -iname CONFIG -exec rm {} +",
    "find . -type d -name hooks -exec rm -rf {} +",
    "find . -name '.*' -exec rm -rf {} +",
    "find . -name '.g?t' -exec rm -rf {} +",
    "find . -name 'pre-*' -delete",  # .git/hooks/pre-commit
    "find . -name x -o -name config -delete",
    "find . ! -name '*.py' -delete",
    "find . \\( -name '*.pyc' \\) -delete",
    "find . -name '*' -newer src/a.py -delete",  # other tests only find less: not counted
    'find . -name "$X" -delete',  # a pattern the shell computes: anything
    "find . -name . -exec rm -rf {} +",  # the start point itself
    "find src/.. -name work -exec rm -rf {} +",
    "find . -name '[[:alpha:]]*' -delete",  # a class: not matched here
    "find . -name 'x*' -exec sed -i s/a/b/ {} +",  # x is a link to .git/config
    "find . -type l -exec sed -i s/a/b/ {} +",
]

# Start points that name a protected path or are computed: they asked before, and still do.
NAMED_OR_COMPUTED_START_POINTS = [
    "find src .git -name x -delete",
    "find linked/to-git -delete",
    'find "$PWD" -delete',
    "find $(pwd) -name x -exec rm {} +",
    "find src* -delete",
]

# Ordinary uses that keep running in bypass mode.
RUN_IN_BYPASS = [
    "find src -name '*.pyc' -delete",
    "find src -exec grep -n x {} +",
    "git ls-files | xargs grep x",
    "find . -name '*.py' -exec wc -l {} +",
    "xargs cat",
    "xargs",
    # a wrapper passes the words on to the command it runs, judged by itself
    "xargs nice grep foo",
    "xargs -n1 sudo cat",
    "xargs env LC_ALL=C grep foo",
    "xargs xargs cat",
    "find . -name '*.py' | xargs grep -n TODO",
    "find . -name '*.py' -print0 | xargs -0 wc -l",
    "find . -type f -exec cat {} +",
    "find src -type f -exec sed -i s/a/b/ {} +",
    "find src -name '*.pyc' -exec rm {} +",
    "find src -execdir rm {} +",
    "find ./src src/sub -delete",
    "find -P src -name x -delete",
    "find -- src -delete",
    "find src -name '*.pyc' -exec rm -f {} \\;",  # -f is rm's, not BSD find's start point
    "find src -exec grep -L x {} +",  # -L is grep's
    "find src -exec git diff --output={} \\;",
    "find src -exec dd if=/dev/null of={} \\;",
    "cd src && find sub -delete",
    "find . -name '*.py' -exec echo {} +",
    "find . -ls",
    # the expression keeps the repository's files out of what it finds
    "find . -name '*.pyc' -delete",
    "find . -name '*.pyc' -exec rm {} +",
    "find -name '*.pyc' -exec rm {} +",
    "find . -type d -name __pycache__ -exec rm -rf {} +",
    "find . -iname '*.PYC' -type f -delete",
    "find . -name '*.py' -exec sed -i s/a/b/ {} +",
    "find . -name '*.py' -a -type f -print -exec chmod -x {} +",
    "find linked -name x -exec rm {} +",  # to-git, a link, is not followed nor found
]


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """A working folder holding a repository, a source tree and some links."""
    work = tmp_path / "work"
    (work / ".git" / "hooks").mkdir(parents=True)
    (work / ".git" / "config").write_text("")
    (work / ".git" / "hooks" / "pre-commit").write_text("")
    (work / "src" / "sub").mkdir(parents=True)
    (work / "src" / "a.py").write_text("")
    (work / "src" / "sub" / "b.py").write_text("")
    (work / "linked").mkdir()
    (work / "linked" / "to-git").symlink_to(work / ".git")
    (work / "git-link").symlink_to(work)
    (work / "src-with-link").mkdir()
    (work / "src-with-link" / "x").symlink_to(work / ".git" / "config")
    (work / "payload").write_text("")
    return work


@pytest.fixture
def plain(tmp_path: Path) -> Path:
    """A working folder without a repository or any other protected path."""
    plain = tmp_path / "plain"
    (plain / "src").mkdir(parents=True)
    (plain / "src" / "a.py").write_text("")
    return plain


def _asked_by_safety_check(command: str, cwd: Path, **policy: Any) -> None:
    decided = decide(command, cwd, **policy)
    assert decided.behavior is PermissionBehavior.DENY, decided.reason
    assert decided.step == "no_one_to_ask", decided.reason
    assert decided.source is DecisionSource.NO_ONE_TO_ASK, decided.reason
    assert "protected path" in decided.reason


@pytest.mark.parametrize(
    "command", WRITES_FOUND_PATHS + FINDS_PROTECTED + NAMED_OR_COMPUTED_START_POINTS
)
def test_found_or_read_paths_that_may_be_protected_ask_in_bypass(command: str, work: Path) -> None:
    """The words xargs gives a writing program and the paths a find that may reach a protected
    path fills in or deletes ask, bypass or not (nobody to ask here)."""
    _asked_by_safety_check(command, work, mode=PermissionMode.BYPASS)


@pytest.mark.parametrize("command", WRITES_FOUND_PATHS)
def test_plan_mode_in_a_bypass_session_asks_for_them_too(command: str, work: Path) -> None:
    _asked_by_safety_check(command, work, mode=PermissionMode.PLAN, bypass_available=True)


@pytest.mark.parametrize("mode", [PermissionMode.DEFAULT, PermissionMode.ACCEPT_EDITS])
@pytest.mark.parametrize("command", WRITES_FOUND_PATHS)
def test_default_and_accept_edits_ask_as_before(
    command: str, mode: PermissionMode, work: Path
) -> None:
    decided = decide(command, work, mode=mode)
    assert decided.behavior is PermissionBehavior.DENY
    assert decided.step == "no_one_to_ask"


@pytest.mark.parametrize(
    "command", ["find . -exec rm {} +", "ls | xargs rm -rf", "find . -delete -exec rm {} +"]
)
def test_a_deny_rule_still_decides_first(command: str, work: Path) -> None:
    decided = decide(command, work, mode=PermissionMode.BYPASS, deny={"Bash(rm:*)"})
    assert decided.behavior is PermissionBehavior.DENY
    assert decided.source is DecisionSource.RULE


@pytest.mark.parametrize("command", RUN_IN_BYPASS)
def test_ordinary_uses_run_in_bypass(command: str, work: Path) -> None:
    decided = decide(command, work, mode=PermissionMode.BYPASS)
    assert decided.behavior is PermissionBehavior.ALLOW, decided.reason


@pytest.mark.parametrize(
    "command",
    [
        "find . -delete",
        "find . -type f -exec sed -i s/a/b/ {} +",
        "find -name '*.pyc' -exec rm {} +",
        "find . -execdir rm {} +",
    ],
)
def test_a_find_from_a_folder_holding_no_protected_path_runs(command: str, plain: Path) -> None:
    decided = decide(command, plain, mode=PermissionMode.BYPASS)
    assert decided.behavior is PermissionBehavior.ALLOW, decided.reason


@pytest.mark.parametrize("command", ["ls | xargs rm", "xargs sed -i s/a/b/", "fd -e py -x rm"])
def test_words_read_from_input_ask_wherever_they_run(command: str, plain: Path) -> None:
    """xargs's input is any text, ``../.git/config`` or ``~/.bashrc`` too: no folder makes the
    words it gives a writing program safe."""
    _asked_by_safety_check(command, plain, mode=PermissionMode.BYPASS)


@pytest.mark.parametrize(
    "command",
    ["find src -fprint .git/hooks/pre-commit", "find src -fls ~/.bashrc", "find src -fprint $f"],
)
def test_the_file_find_prints_to_is_a_named_word(command: str, work: Path) -> None:
    """``-fprint FILE`` writes FILE, a word of the command: judged as every other one."""
    _asked_by_safety_check(command, work, mode=PermissionMode.BYPASS)


def test_a_link_leading_out_counts_only_where_paths_are_used_through_links(tmp_path: Path) -> None:
    """rm -r and cp -r act on a link; a program given a found link writes where it points."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "out").symlink_to(tmp_path)
    (tmp_path / "src" / "in").symlink_to(tmp_path / "src")
    assert not holds_protected(tmp_path / "src")
    assert holds_protected(tmp_path / "src", through_links=True)
    (tmp_path / "src" / "out").unlink()
    assert not holds_protected(tmp_path / "src", through_links=True)


def test_a_folder_too_big_to_search_counts_as_holding_a_protected_path(tmp_path: Path) -> None:
    for index in range(MAX_TREE_ENTRIES + 1):
        (tmp_path / f"f{index}").touch()
    assert holds_protected(tmp_path)
    assert not holds_protected(tmp_path / "f0")
