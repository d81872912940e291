"""A patch writes the files it names inside itself: those are judged before it is applied.

Found: in bypass mode ``git apply change.diff`` and ``patch -p1 < change.diff`` wrote
``.claude/settings.json`` (whose hooks run commands) or ``.vscode/tasks.json`` unasked, while an
Edit of the same file asks: the command's words named no protected path, the patch did.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_hostile_commands import decide, safety_question

from fsm_agent.core.kinds import PermissionBehavior
from fsm_agent.runtime.permissions import PermissionMode

TO_SETTINGS = """\
diff --git a/notes.txt b/.claude/settings.json
similarity index 100%
rename from notes.txt
rename to .claude/settings.json
"""

NEW_TASKS = """\
--- /dev/null
+++ b/.vscode/tasks.json
@@ -0,0 +1 @@
+{"version": "2.0.0"}
"""

CONTEXT_BASHRC = """\
*** a/x\t2024-01-01
--- home/.bashrc\t2024-01-01
***************
"""

PLAIN = """\
diff --git a/src/a.py b/src/a.py
--- a/src/a.py
+++ b/src/a.py
@@ -1 +1 @@
-old
+new
"""


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """A working folder with a repository and the patches above."""
    (tmp_path / ".git" / "hooks").mkdir(parents=True)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("old\n")
    for name, text in {
        "settings.diff": TO_SETTINGS,
        "tasks.diff": NEW_TASKS,
        "rc.diff": CONTEXT_BASHRC,
        "plain.diff": PLAIN,
    }.items():
        (tmp_path / name).write_text(text)
    return tmp_path


@pytest.mark.parametrize(
    "command",
    [
        "git apply settings.diff",
        "git apply --index -v settings.diff",
        "git -C . apply tasks.diff",
        "git apply --check --apply tasks.diff",
        "git am tasks.diff",
        "patch -p1 < tasks.diff",
        "patch -p1 -i tasks.diff",
        "patch -Np1 --input=tasks.diff",
        "patch --inp tasks.diff",
        "patch -p0 -itasks.diff",
        "patch src/a.py tasks.diff",
        "patch -p1 < rc.diff",
        "git apply < settings.diff",
        "git apply - < settings.diff",
        "cat tasks.diff | patch -p1",
        "git diff HEAD~1 | git apply -R",
        "git apply missing.diff",
        "printf x > plain.diff && git apply plain.diff",
        "cp tasks.diff plain.diff; patch -p1 < plain.diff",
        "git apply plain.diff settings.diff",
        "patch --frobnicate < plain.diff",
        "patch -p1 <<'EOF'\n" + NEW_TASKS + "EOF",
        'git apply <<< "$(cat tasks.diff)"',
        "sudo patch -p1 < tasks.diff",
    ],
)
def test_bypass_asks_before_a_patch_writes_a_protected_path(command: str, work: Path) -> None:
    """A patch naming a protected path, or one that cannot be read first, is a safety
    question even in bypass mode."""
    assert safety_question(command, work)


@pytest.mark.parametrize(
    "command",
    [
        "git apply plain.diff",
        "git apply -p1 --whitespace fix plain.diff",
        "patch -p1 < plain.diff",
        "patch -p1 -i plain.diff",
        "patch -p1 <<'EOF'\n" + PLAIN + "EOF",
        "git apply --check settings.diff",
        "git apply --stat settings.diff",
        "patch --dry-run -p1 < tasks.diff",
        "git am --abort",
        "git am --continue",
        "git diff > plain2.diff",
    ],
)
def test_bypass_still_applies_a_patch_that_names_no_protected_path(
    command: str, work: Path
) -> None:
    """Patches of ordinary files, and commands that only look at a patch, run as before."""
    assert not safety_question(command, work)


def test_a_patch_longer_than_the_limit_counts_as_unread(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fsm_agent.toolbox import patch_targets

    monkeypatch.setattr(patch_targets, "PATCH_READ_LIMIT", 10)
    assert safety_question("git apply plain.diff", work)


def test_a_link_to_a_protected_folder_in_a_patch_is_resolved(work: Path) -> None:
    """``+++ b/cfg/settings.json`` where ``cfg`` links to ``.claude``."""
    (work / ".claude").mkdir()
    (work / "cfg").symlink_to(work / ".claude")
    (work / "link.diff").write_text(NEW_TASKS.replace(".vscode/tasks.json", "cfg/settings.json"))
    assert safety_question("git apply link.diff", work)


def test_default_and_accept_edits_still_ask_for_any_patch(work: Path) -> None:
    for mode in (PermissionMode.DEFAULT, PermissionMode.ACCEPT_EDITS):
        decided = decide("git apply plain.diff", work, mode=mode)
        assert decided.behavior is PermissionBehavior.DENY
