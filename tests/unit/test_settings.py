"""Settings files in Claude Code's format: where they are read from and what is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fsm_agent.core.permission_rules import RuleBehavior, RuleSource
from fsm_agent.errors import ConfigError
from fsm_agent.runtime.permissions import PermissionMode, PermissionPolicy
from fsm_agent.runtime.settings import Settings, load_settings


@pytest.fixture
def places(tmp_path: Path) -> tuple[Path, Path]:
    """A project folder and a home folder, each with an empty `.claude` folder."""
    project, home = tmp_path / "project", tmp_path / "home"
    for folder in (project, home):
        (folder / ".claude").mkdir(parents=True)
    return project, home


def write(path: Path, data: object) -> Path:
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def test_the_standard_files_are_read_with_their_sources(places: tuple[Path, Path]) -> None:
    """User, project and local files all load; each rule keeps its source and file."""
    project, home = places
    user_file = write(home / ".claude/settings.json", {"permissions": {"deny": ["Bash(rm:*)"]}})
    write(project / ".claude/settings.json", {"permissions": {"allow": ["Read"]}})
    write(project / ".claude/settings.local.json", {"permissions": {"ask": ["Write"]}})
    settings = load_settings(project, user_home=home)
    found = [(r.text, r.behavior, r.source) for r in settings.rules]
    assert found == [
        ("Bash(rm:*)", RuleBehavior.DENY, RuleSource.USER),
        ("Read", RuleBehavior.ALLOW, RuleSource.PROJECT),
        ("Write", RuleBehavior.ASK, RuleSource.LOCAL),
    ]
    assert settings.rules[0].origin == str(user_file)
    assert [f.source for f in settings.files] == [
        RuleSource.USER,
        RuleSource.PROJECT,
        RuleSource.LOCAL,
    ]


def test_missing_files_are_skipped_but_a_named_one_must_exist(places: tuple[Path, Path]) -> None:
    """No settings at all gives empty settings; an explicit file that is absent is an error."""
    project, home = places
    assert load_settings(project, user_home=home) == Settings()
    with pytest.raises(ConfigError, match="does not exist"):
        load_settings(project, user_home=home, extra_files=[project / "nope.json"])


def test_the_most_specific_default_mode_wins(places: tuple[Path, Path], tmp_path: Path) -> None:
    """defaultMode: local over project over user, and a flag file over all of them."""
    project, home = places
    write(home / ".claude/settings.json", {"permissions": {"defaultMode": "plan"}})
    write(project / ".claude/settings.local.json", {"permissions": {"defaultMode": "acceptEdits"}})
    assert load_settings(project, user_home=home).default_mode is PermissionMode.ACCEPT_EDITS
    flag = write(tmp_path / "flag.json", {"permissions": {"defaultMode": "dontAsk"}})
    settings = load_settings(project, user_home=home, extra_files=[flag])
    assert settings.default_mode is PermissionMode.DONT_ASK


def test_a_mode_chosen_in_code_wins_over_default_mode(places: tuple[Path, Path]) -> None:
    """PermissionPolicy(mode=plan) keeps plan; a default-mode policy takes the settings' mode."""
    project, home = places
    write(project / ".claude/settings.json", {"permissions": {"defaultMode": "acceptEdits"}})
    settings = load_settings(project, user_home=home)
    assert PermissionPolicy().with_settings(settings).mode is PermissionMode.ACCEPT_EDITS
    planned = PermissionPolicy(mode=PermissionMode.PLAN).with_settings(settings)
    assert planned.mode is PermissionMode.PLAN


def test_unknown_keys_are_kept_and_hooks_kept_raw(places: tuple[Path, Path]) -> None:
    """Keys we do not use stay in raw; the hooks object is handed on as written."""
    project, home = places
    hooks = {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "x"}]}]}
    data = {"model": "opus", "env": {"A": "1"}, "hooks": hooks, "permissions": {"x": 1}}
    path = write(project / ".claude/settings.json", data)
    settings = load_settings(project, user_home=home)
    assert settings.files[0].raw == data
    [hook_settings] = settings.hooks
    assert (hook_settings.source, hook_settings.path, hook_settings.value) == (
        "projectSettings",
        path,
        hooks,
    )


def test_additional_directories_resolve_against_the_working_folder(
    places: tuple[Path, Path],
) -> None:
    """`../docs` in additionalDirectories is the docs folder beside the project, resolved."""
    project, home = places
    write(
        project / ".claude/settings.json", {"permissions": {"additionalDirectories": ["../docs"]}}
    )
    settings = load_settings(project, user_home=home)
    assert settings.additional_directories == ((project.parent / "docs").resolve(),)


@pytest.mark.parametrize(
    ("content", "where"),
    [
        ("{not json", "is not valid JSON: Expecting property name"),
        ("[]", "$: expected an object, got list"),
        ({"permissions": []}, "$.permissions: expected an object, got list"),
        ({"permissions": {"allow": "Bash"}}, "$.permissions.allow: expected an array of strings"),
        ({"permissions": {"deny": ["Read", None]}}, "$.permissions.deny[1]: expected a string"),
        ({"permissions": {"defaultMode": "yolo"}}, "$.permissions.defaultMode: 'yolo' is not a"),
        ({"permissions": {"ask": ["Bash(rm"]}}, "at $.permissions.ask[0]"),
        ({"hooks": [1]}, "$.hooks: expected an object"),
    ],
)
def test_malformed_settings_name_the_file_and_the_key(
    places: tuple[Path, Path], content: object, where: str
) -> None:
    """Not JSON, a wrong type, an unknown mode or a bad rule: the error names file and key."""
    project, home = places
    path = write(project / ".claude/settings.json", content)
    with pytest.raises(ConfigError) as caught:
        load_settings(project, user_home=home)
    assert str(path) in str(caught.value)
    assert where in str(caught.value)


def test_the_readme_examples_of_rules_and_settings_are_valid(tmp_path: Path) -> None:
    """The README's policy example builds, and its settings example loads with every key used."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    section = readme.split("### Permissions: rules, modes, settings files", 1)[1]
    policy_code = section.split("```python\n", 1)[1].split("```", 1)[0]
    scope: dict[str, object] = {}
    exec(policy_code, scope)
    policy = scope["policy"]
    assert isinstance(policy, PermissionPolicy)
    assert len(policy.rule_set.rules) == 5
    settings_json = section.split("```json\n", 1)[1].split("```", 1)[0]
    settings = Settings.from_mapping(json.loads(settings_json), cwd=tmp_path)
    assert [r.text for r in settings.rules] == [
        "Read(./secrets/**)",
        "Bash(git push:*)",
        "Bash(npm run test:*)",
    ]
    assert settings.default_mode is PermissionMode.ACCEPT_EDITS
    assert settings.additional_directories == ((tmp_path.parent / "shared-docs").resolve(),)
