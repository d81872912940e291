"""A command whose paths the analysis cannot follow asks in bypass mode, as a protected path does.

Found in bypass mode, where only protected paths, rules and safety checks still ask: the
protected-path check judges the words of the parts the parser found. Where the parser could not
read the command (past the size analysed, a control character, a parse error), it searched the
text for protected names instead, and the shell's quote removal beat that search:
``echo x >> ~/.bash''rc`` behind 16 KiB of padding, or after ``echo ^A;``, appended to
``.bashrc`` unasked. And where ``cd`` after ``cd`` made more folders than were followed, the
later ones were dropped: ``cd a; cd b; cd c; cd d; cd e; cd ~; rm -rf .config`` deleted git's
settings unasked, and with ``Edit(./src/**)`` denied the same padding hid a relative word from
the rule. Each now asks (the safety check, bypass-immune; nobody to ask here, so it is denied).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from test_hostile_commands import decide

from fsm_agent import PermissionMode
from fsm_agent.core.kinds import DecisionSource, PermissionBehavior
from fsm_agent.core.shell_commands import MAX_COMMAND_BYTES, analyse_command
from fsm_agent.toolbox.bash import MAX_JUDGED_PATHS
from fsm_agent.toolbox.paths import MAX_ENTERED_FOLDERS, entered_folders, resolved_under

PADDING = "true " + "x" * MAX_COMMAND_BYTES
FIVE_CDS = "cd a; cd b; cd c; cd d; cd e; "  # 32 folders: the most followed

UNFOLLOWED = [
    f"{PADDING}; echo x >> ~/.bash''rc",
    f"{PADDING}; rm -rf ~/.config",
    "echo \x01; echo x >> ~/.bash''rc",
    "echo 'open; echo x >> ~/.bash''rc",
    "bash -c $'echo \\x01; echo x >> ~/.bash\\'\\'rc'",
    f"{FIVE_CDS}cd ~; rm -rf .config",
    f"{FIVE_CDS}cd ~ && rm -rf .config",
    f"{FIVE_CDS}cd ~/.config; rm -rf git",
    "sed -n p @(-e*)",  # extended globs: tree-sitter cannot read them
]


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project holding a source folder, beside a home folder holding git's settings."""
    home = tmp_path / "home"
    (home / ".config" / "git").mkdir(parents=True)
    (home / ".config" / "git" / "config").write_text("")
    (home / ".bashrc").write_text("")
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    return project


@pytest.mark.parametrize("command", UNFOLLOWED, ids=lambda c: c[-40:])
@pytest.mark.parametrize("allow", [set(), {"Bash"}])
def test_a_command_not_followed_asks_in_bypass_mode(
    command: str, allow: set[str], work: Path
) -> None:
    """Not even a rule allowing all of Bash lets it run unasked (SPEC §9.3 step 1g)."""
    decided = decide(command, work, mode=PermissionMode.BYPASS, allow=allow)
    assert decided.behavior is PermissionBehavior.DENY, decided.reason
    assert decided.source is DecisionSource.NO_ONE_TO_ASK
    assert "may change a protected path" in decided.reason


def test_a_path_rule_asks_when_the_folders_are_not_followed(work: Path) -> None:
    """``Edit(./src/**)`` denied: a relative word from more folders than are followed may be
    ``src`` (here it is, from the working folder), so the rule asks even in bypass mode."""
    decided = decide(
        f"{FIVE_CDS}cd ..; cd ..; cd ..; cd ..; cd ..; rm -rf src",
        work,
        mode=PermissionMode.BYPASS,
        deny={"Edit(./src/**)"},
    )
    assert decided.behavior is PermissionBehavior.DENY
    assert "Edit(./src/**)" in decided.reason
    assert f"more than {MAX_ENTERED_FOLDERS} folders" in decided.reason


@pytest.mark.parametrize(
    "command",
    [
        "cd a; cd b; cd c; cd d; rm -rf build",  # 16 folders, each judged
        "source ./env.sh && make",  # code a part runs: every part was found
        "bun -e 'console.log(1)'",
        "echo done # a comment",
    ],
)
def test_bypass_still_runs_what_is_followed(command: str, work: Path) -> None:
    decided = decide(command, work, mode=PermissionMode.BYPASS)
    assert decided.behavior is PermissionBehavior.ALLOW, decided.reason


def test_misread_marks_only_what_the_parser_could_not_read() -> None:
    assert analyse_command("echo 'open").misread
    assert analyse_command("echo \x01").misread
    unseen = analyse_command("python3 -c 'import os'; xargs sh")
    assert unseen.problem is not None
    assert not unseen.misread


def test_entered_folders_none_past_the_bound(tmp_path: Path) -> None:
    cds = " && ".join(f"cd d{index}" for index in range(6))
    assert entered_folders(analyse_command(f"{cds} && rm -rf x"), tmp_path) is None
    assert entered_folders(analyse_command("cd ~; rm -rf x"), tmp_path) is not None


def test_resolved_under_is_realpath_from_a_resolved_folder(tmp_path: Path) -> None:
    """Every relative path of up to three names over files, folders, links (to a folder, to
    an absolute path, up, dangling, in a loop), ``.``, ``..`` and missing names resolves as
    ``os.path.realpath`` resolves it from each base."""
    (tmp_path / "a" / "b" / "c").mkdir(parents=True)
    (tmp_path / "a" / "f").write_text("")
    (tmp_path / "lb").symlink_to("a/b")
    (tmp_path / "a" / "abs").symlink_to(tmp_path / "a")
    (tmp_path / "a" / "b" / "up").symlink_to("../..")
    (tmp_path / "dangling").symlink_to("missing")
    (tmp_path / "loop1").symlink_to("loop2")
    (tmp_path / "loop2").symlink_to("loop1")
    names = ["a", "b", "f", "lb", "abs", "up", "dangling", "loop1", "..", ".", "x", ""]
    relatives = [""] + [f"{n}/{m}/{o}" for n in names[:-1] for m in names for o in names]
    for base in (tmp_path, tmp_path / "lb", tmp_path / "a" / "b", tmp_path / "none", Path("/")):
        resolved = os.path.realpath(base)
        for relative in relatives:
            expected = os.path.realpath(base / relative)
            assert resolved_under(resolved, relative) == expected, (base, relative)


def test_more_paths_than_are_judged_ask(work: Path) -> None:
    """Found: five ``cd``s and a 2,600-word command took ten seconds to judge, each word
    looked up from each of 32 folders. Past MAX_JUDGED_PATHS words times folders the safety
    check asks without looking."""
    words = " ".join(f"f{index}" for index in range(MAX_JUDGED_PATHS // 32 + 1))
    decided = decide(f"{FIVE_CDS}touch {words}", work, mode=PermissionMode.BYPASS)
    assert decided.behavior is PermissionBehavior.DENY
    assert f"the {MAX_JUDGED_PATHS} paths judged" in decided.reason
    fewer = " ".join(f"f{index}" for index in range(5))
    allowed = decide(f"{FIVE_CDS}touch {fewer}", work, mode=PermissionMode.BYPASS)
    assert allowed.behavior is PermissionBehavior.ALLOW, allowed.reason
