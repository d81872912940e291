"""Properties of folder trust (README "A folder's own settings files are trusted before they
grant anything"): for any settings a folder carries, split any way between its two files,
beside any settings of the user's own, an untrusted folder grants nothing and restricts all it
says, and trusting it applies the files whole."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fsm_agent.core.permission_rules import RuleBehavior, RuleSource
from fsm_agent.runtime.folder_trust import FolderTrust, settings_for_folder
from fsm_agent.runtime.permissions import PermissionMode
from fsm_agent.runtime.settings import FOLDER_SOURCES, load_settings

RULES = ["Bash(*)", "Bash", "Bash(rm:*)", "Bash(git push:*)", "Read", "Write(/etc/**)", "Edit"]
EVENTS = ["SessionStart", "PreToolUse", "Stop", "UserPromptSubmit"]


def permissions() -> st.SearchStrategy[dict[str, Any]]:
    rules = st.lists(st.sampled_from(RULES), max_size=3, unique=True)
    return st.fixed_dictionaries(
        {},
        optional={
            "allow": rules,
            "deny": rules,
            "ask": rules,
            "defaultMode": st.sampled_from([mode.value for mode in PermissionMode]),
            "additionalDirectories": st.lists(st.sampled_from(["/", "../x", "~"]), max_size=2),
        },
    )


def hooks() -> st.SearchStrategy[dict[str, Any]]:
    command = st.builds(lambda text: {"type": "command", "command": text}, st.text(max_size=20))
    group = st.builds(
        lambda commands: {"hooks": commands}, st.lists(command, min_size=1, max_size=2)
    )
    return st.dictionaries(
        st.sampled_from(EVENTS), st.lists(group, min_size=1, max_size=2), max_size=2
    )


def settings_object() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({}, optional={"permissions": permissions(), "hooks": hooks()})


@given(
    project=st.none() | settings_object(),
    local=st.none() | settings_object(),
    user=st.none() | settings_object(),
)
def test_an_untrusted_folder_grants_nothing_and_restricts_all_it_says(
    project: dict[str, Any] | None, local: dict[str, Any] | None, user: dict[str, Any] | None
) -> None:
    with tempfile.TemporaryDirectory() as top, pytest.MonkeyPatch.context() as patch:
        root = Path(top)
        folder, home = root / "repo", root / "home"
        (folder / ".claude").mkdir(parents=True)
        (home / ".claude").mkdir(parents=True)
        patch.setenv("HOME", str(home))
        for data, path in (
            (project, folder / ".claude" / "settings.json"),
            (local, folder / ".claude" / "settings.local.json"),
            (user, home / ".claude" / "settings.json"),
        ):
            if data is not None:
                path.write_text(json.dumps(data), encoding="utf-8")
        trust = FolderTrust(root / "trusted.json")
        warned: list[str] = []
        untrusted = settings_for_folder(folder, ask=None, warn=warned.append, trust=trust)
        whole = load_settings(folder)
        theirs = load_settings(folder, sources=FOLDER_SOURCES)

        def from_folder(rule: Any) -> bool:
            return rule.source in FOLDER_SOURCES

        # Everything the folder restricts holds; nothing it grants does.
        assert {
            r for r in whole.rules if from_folder(r) and r.behavior is not RuleBehavior.ALLOW
        } <= set(untrusted.rules)
        assert not [
            r for r in untrusted.rules if from_folder(r) and r.behavior is RuleBehavior.ALLOW
        ]
        folder_hooks = [h for h in untrusted.hooks if h.source in {s.value for s in FOLDER_SOURCES}]
        assert not [h for h in folder_hooks if any(h.value.values())]  # none with a command
        users_own = load_settings(folder, sources=[RuleSource.USER])
        assert set(untrusted.additional_directories) <= set(users_own.additional_directories)
        if untrusted.default_mode in {PermissionMode.ACCEPT_EDITS, PermissionMode.BYPASS}:
            assert (
                load_settings(folder, sources=[RuleSource.USER]).default_mode
                is untrusted.default_mode
            )
        # The user's own settings apply whole.
        assert {r for r in whole.rules if r.source is RuleSource.USER} <= set(untrusted.rules)
        # It is said, exactly when the folder's files grant something.
        grants = bool(
            [r for r in theirs.rules if r.behavior is RuleBehavior.ALLOW]
            or any(any(h.value.values()) for h in theirs.hooks)
            or theirs.additional_directories
            or theirs.default_mode in {PermissionMode.ACCEPT_EDITS, PermissionMode.BYPASS}
        )
        assert bool(warned) == grants
        # Trusted, the files apply whole.
        trusted = settings_for_folder(
            folder, ask=lambda f, g: "once", warn=warned.append, trust=trust
        )
        assert trusted == whole
