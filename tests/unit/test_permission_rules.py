"""The rule grammar, its sources and its matching (SPEC §9.2), pure functions only."""

from __future__ import annotations

import pytest

from fsm_agent.core.permission_rules import (
    Rule,
    RuleBehavior,
    RuleSet,
    RuleSource,
    check_rule_tools,
    parse_rule,
    path_rule_matches,
    path_rule_may_match_under,
    shell_rule_matches,
)
from fsm_agent.errors import ConfigError, SettingsWarning

DENY, ASK, ALLOW = RuleBehavior.DENY, RuleBehavior.ASK, RuleBehavior.ALLOW


def rule(text: str, behavior: RuleBehavior = DENY, source: RuleSource = RuleSource.USER) -> Rule:
    return parse_rule(text, behavior, source)


@pytest.mark.parametrize(
    ("text", "tool", "content"),
    [
        ("Bash", "Bash", None),
        ("Bash()", "Bash", None),
        ("Bash(*)", "Bash", None),
        ("  Read  ", "Read", None),
        ("Bash(npm run test:*)", "Bash", "npm run test:*"),
        (r"Bash(echo \(hi\))", "Bash", "echo (hi)"),
        ("Read(./secrets/**)", "Read", "./secrets/**"),
        ("Edit(/src/**)", "Edit", "/src/**"),
        ("Read(~/.ssh/**)", "Read", "~/.ssh/**"),
        ("Task", "Agent", None),
        ("KillShell", "TaskStop", None),
        ("mcp__github", "mcp__github", None),
        ("mcp__github__*", "mcp__github", None),
        ("mcp__github__create_issue", "mcp__github__create_issue", None),
    ],
)
def test_rules_parse_to_their_tool_and_content(text: str, tool: str, content: str | None) -> None:
    """Every SPEC §9.2 form parses: whole tool, (), (*), escapes, legacy names, MCP servers."""
    parsed = rule(text)
    assert (parsed.tool, parsed.content, parsed.text) == (tool, content, text)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "the rule is empty"),
        ("Bash(rm", "must end with ')'"),
        ("Bash(rm)x", "must end with ')'"),
        ("Bash)", "')' without '('"),
        ("Ba sh", "a tool name is letters"),
        ("Bash*", "'*' in a tool name is only allowed as mcp__server__*"),
        ("mcp__gh__*(x)", "takes no content"),
        ("mcp__gh(x)", "MCP tool rules take no content"),
        ("Read([abc)", "'[' without a closing ']'"),
        ("WebSearch(cats)", "content rules are understood for Bash and the file tools"),
    ],
)
def test_malformed_rules_are_config_errors_naming_rule_source_and_why(text: str, why: str) -> None:
    """A rule that does not parse is refused with its text, its source, its file and why."""
    with pytest.raises(ConfigError) as caught:
        parse_rule(text, DENY, RuleSource.PROJECT, origin="proj/.claude/settings.json")
    message = str(caught.value)
    assert repr(text) in message
    assert "projectSettings (proj/.claude/settings.json)" in message
    assert why in message


def test_a_rule_that_is_not_a_string_is_refused() -> None:
    """A number in a rule list is a ConfigError, not a crash."""
    with pytest.raises(ConfigError, match="must be a string"):
        parse_rule(3, DENY, RuleSource.CLI)  # type: ignore[arg-type]


def test_rules_naming_tools_the_agent_lacks_are_refused() -> None:
    """Unknown tools are refused; MCP rules need a declared server or one of its tools."""
    tools = {"Bash", "Read", "mcp__db__query"}
    check_rule_tools([rule("Bash(ls)"), rule("mcp__db"), rule("mcp__db__*")], tools)
    check_rule_tools([rule("mcp__gh__create")], tools, mcp_servers={"gh"})
    with pytest.raises(ConfigError, match=r"no tool 'Write' \(it has: Bash, Read"):
        check_rule_tools([rule("Write")], tools)
    with pytest.warns(SettingsWarning, match="no WebSearch tool"):
        check_rule_tools([rule("WebSearch")], tools)
    with pytest.raises(ConfigError, match="declares no MCP server 'gh'"):
        check_rule_tools([rule("mcp__gh")], tools)


@pytest.mark.parametrize(
    ("content", "command", "matches"),
    [
        ("rm:*", "rm", True),
        ("rm:*", "rm -rf build", True),
        ("rm:*", "rmdir build", False),
        ("git commit:*", "git commit -m x", True),
        ("git commit:*", "git commit-tree x", False),
        ("ls *", "ls", True),
        ("ls *", "ls -la", True),
        ("ls *", "lsblk", False),
        ("git * --force", "git push origin --force", True),
        ("git * --force", "git push origin", False),
        ("npm test", "npm test", True),
        ("npm test", "npm test --watch", False),
        (r"echo \*", "echo *", True),
        (r"echo \*", "echo hi", False),
    ],
)
def test_bash_content_prefix_wildcard_and_exact(content: str, command: str, matches: bool) -> None:
    """`prefix:*` is a word prefix, `*` a whole-string wildcard (` *` at the end optional)."""
    assert shell_rule_matches(content, command) is matches


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("./secrets/**", "/w/secrets/a/b.txt", True),
        ("./secrets/**", "/w/other/secrets/a", False),
        ("/src/**", "/w/src/app.py", True),
        ("/src/**", "/src/app.py", False),
        ("//etc/passwd", "/etc/passwd", True),
        ("~/.ssh/**", "/h/.ssh/id_ed25519", True),
        ("~/.ssh/**", "/w/.ssh/id_ed25519", False),
        (".env", "/w/deep/er/.env", True),
        ("*.key", "/w/a/b.key", True),
        ("src/*.py", "/w/src/a.py", True),
        ("src/*.py", "/w/src/pkg/a.py", False),
        ("src/**/*.py", "/w/src/pkg/a.py", True),
        ("secrets", "/w/secrets/inner/file", True),
        ("file?.txt", "/w/file1.txt", True),
        ("[ab].txt", "/w/c.txt", False),
    ],
)
def test_path_patterns_are_gitignore_style(pattern: str, path: str, matches: bool) -> None:
    """Anchors (//, ~/, /, ./), `*` within a segment, `**` across, bare names at any depth."""
    assert path_rule_matches(pattern, path, cwd="/w", home="/h") is matches


def test_path_patterns_ignore_case_on_case_insensitive_file_systems() -> None:
    """On a case-insensitive file system, SECRETS/KEY matches a rule for secrets/key."""
    assert not path_rule_matches("./secrets/**", "/w/SECRETS/key", cwd="/w", home="/h")
    assert path_rule_matches(
        "./secrets/**", "/w/SECRETS/key", cwd="/w", home="/h", case_sensitive=False
    )


def test_rule_sets_search_sources_in_spec_order() -> None:
    """Whatever order they were given in, the first match is by SPEC §9.2 source order."""
    session = rule("Bash", ALLOW, RuleSource.SESSION)
    user = rule("Bash", ALLOW, RuleSource.USER)
    local = rule("Bash", ALLOW, RuleSource.LOCAL)
    rules = RuleSet.of([session, local, user])
    assert rules.whole_tool(ALLOW, "Bash") is user
    assert rules.whole_tool(DENY, "Bash") is None


def test_read_and_edit_content_rules_cover_their_tool_families() -> None:
    """Read(...) covers Read, Glob, Grep; Edit(...) covers Edit, Write; a bare name one tool."""
    rules = RuleSet.of([rule("Read(./x)"), rule("Edit(./y)"), rule("Read")])
    assert [r.text for r in rules.content_rules(DENY, "Grep")] == ["Read(./x)"]
    assert [r.text for r in rules.content_rules(DENY, "Write")] == ["Edit(./y)"]
    assert rules.whole_tool(DENY, "Grep") is None
    assert rules.whole_tool(DENY, "Read") is not None


def test_a_server_rule_covers_every_tool_of_that_server_only() -> None:
    """mcp__gh covers mcp__gh__anything, not mcp__ghost__x nor a tool named mcp__gh itself."""
    rules = RuleSet.of([rule("mcp__gh__*")])
    assert rules.whole_tool(DENY, "mcp__gh__create_issue") is not None
    assert rules.whole_tool(DENY, "mcp__ghost__x") is None


@pytest.mark.parametrize(
    ("pattern", "folder", "may"),
    [
        ("./.env", "/w", True),  # the folder holds it
        ("./.env", "/w/src", False),
        (".env", "/w/src", True),  # any depth
        (".env", "/elsewhere", False),
        ("./config/**", "/w/config/sub", True),  # inside a covered folder
        ("./config/*.key", "/w", True),
        ("./config/*.key", "/w/other", False),
        ("~/.ssh/**", "/", True),
        ("~/.ssh/**", "/home/u/.ssh", True),
        ("~/.ssh/**", "/home/u/src", False),
        ("//etc/shadow", "/etc", True),
        ("//etc/shadow", "/w", False),
    ],
)
def test_a_path_rule_may_match_under_a_folder(pattern: str, folder: str, may: bool) -> None:
    """Whether a search through ``folder`` may read a file the pattern covers."""
    assert path_rule_may_match_under(pattern, folder, cwd="/w", home="/home/u") is may


def test_a_path_rule_may_match_under_a_folder_without_case() -> None:
    """On a file system that ignores case, ``./Config`` holds what ``./config/**`` covers."""
    assert not path_rule_may_match_under("./config/**", "/w/Config", cwd="/w", home="/h")
    assert path_rule_may_match_under(
        "./config/**", "/w/Config", cwd="/w", home="/h", case_sensitive=False
    )
