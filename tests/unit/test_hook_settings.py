"""Hook matchers, the settings files' ``hooks`` key, and hooks that answer with the wrong type."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from fsm_agent.core.effects import HookEvent
from fsm_agent.core.events import HookDecision, HookOutcome
from fsm_agent.errors import ConfigError, SettingsWarning
from fsm_agent.runtime.hooks import CommandHook, HookInput, HookMatcher, Hooks

SOURCE = ".claude/settings.json"


def tool_input(name: str) -> HookInput:
    return HookInput(hook_event=HookEvent.PRE_TOOL_USE, tool_name=name)


# --- matchers ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("matcher", "matched", "not_matched"),
    [
        (None, ["Write", "Bash", ""], []),
        ("", ["Write", "Bash"], []),
        ("*", ["Write", "mcp__x__y"], []),
        ("Write", ["Write"], ["Edit", "WriteFile", "write"]),
        ("Write|Edit", ["Write", "Edit"], ["Bash", "MultiEdit", "Write|Edit"]),
        ("mcp__memory__.*", ["mcp__memory__save"], ["mcp__files__read", "Read"]),
        ("Notebook.*", ["NotebookEdit", "NotebookRead"], ["Read"]),
        ("^(Read|Grep)$", ["Read", "Grep"], ["ReadX"]),
    ],
)
def test_matchers_select_tool_names(
    matcher: str | None, matched: list[str], not_matched: list[str]
) -> None:
    """Empty or * match all; plain names are an exact list; anything else is a regex search."""
    group = HookMatcher(matcher=matcher)
    assert all(group.matches(name) for name in matched)
    assert not any(group.matches(name) for name in not_matched)


def test_an_invalid_regex_matcher_is_a_config_error() -> None:
    """A matcher that does not compile is refused at construction, naming it."""
    with pytest.raises(ConfigError, match=r"'Write\('"):
        HookMatcher(matcher="Write(")


def test_only_matching_groups_run() -> None:
    """A group for Write|Edit runs for Edit and not for Bash; a bare callable runs for both."""
    ran: list[str] = []

    def note(label: str) -> Any:
        return lambda hook_input: ran.append(f"{label}:{hook_input.tool_name}")

    hooks = Hooks(pre_tool_use=[HookMatcher(matcher="Write|Edit", hooks=[note("m")]), note("all")])
    for name in ("Edit", "Bash"):
        asyncio.run(hooks.run(tool_input(name)))
    assert sorted(ran) == ["all:Bash", "all:Edit", "m:Edit"]


def test_session_start_matchers_look_at_the_source() -> None:
    """SessionStart groups match on the payload's source (startup, resume, compact)."""
    group = HookMatcher(matcher="startup", hooks=[lambda _: HookOutcome(additional_context=("x",))])
    hooks = Hooks(session_start=[group])
    startup = HookInput(hook_event=HookEvent.SESSION_START, payload={"source": "startup"})
    resume = HookInput(hook_event=HookEvent.SESSION_START, payload={"source": "resume"})
    assert asyncio.run(hooks.run(startup)).additional_context == ("x",)
    assert asyncio.run(hooks.run(resume)) == HookOutcome()


def test_a_group_timeout_stops_a_slow_python_hook_without_blocking() -> None:
    """A Python hook past its group's timeout becomes a warning naming it; nothing is blocked."""

    async def dawdle(_: HookInput) -> HookOutcome:
        await asyncio.sleep(10)
        return HookOutcome(decision=HookDecision.DENY)

    hooks = Hooks(pre_tool_use=[HookMatcher(hooks=[dawdle], timeout=0.05)])
    outcome = asyncio.run(hooks.run(tool_input("Write")))
    assert outcome.decision is None
    assert "dawdle timed out" in outcome.system_messages[0]


# --- wrong return types -----------------------------------------------------------------------


@pytest.mark.parametrize("answer", [{"decision": "deny"}, "deny", True, HookDecision.DENY])
def test_a_hook_returning_the_wrong_type_warns_and_blocks_nothing(answer: object) -> None:
    """A hook returning something else than a HookOutcome or None: a warning naming it (§6.3)."""

    def sloppy(_: HookInput) -> Any:
        return answer

    outcome = asyncio.run(Hooks(pre_tool_use=[sloppy]).run(tool_input("Write")))
    assert outcome.decision is None
    assert outcome.blocking_errors == ()
    [warning] = outcome.system_messages
    assert "sloppy" in warning
    assert type(answer).__name__ in warning


def test_a_non_callable_hook_is_refused_at_construction() -> None:
    """A HookMatcher entry that is neither a callable nor a CommandHook is a ConfigError."""
    with pytest.raises(ConfigError, match=r"hooks\[1\] is a str"):
        HookMatcher(hooks=[print, "echo hi"])  # type: ignore[list-item]


def test_blocking_errors_of_events_that_cannot_block_are_shown_instead() -> None:
    """A SessionStart hook's blocking error becomes a system message: that event blocks nothing."""
    hooks = Hooks(session_start=[lambda _: HookOutcome(blocking_errors=("nope",))])
    outcome = asyncio.run(hooks.run(HookInput(hook_event=HookEvent.SESSION_START)))
    assert outcome.blocking_errors == ()
    assert outcome.system_messages == ("nope",)


# --- settings ---------------------------------------------------------------------------------


def test_settings_hooks_become_command_matchers() -> None:
    """Claude Code's hooks format reads into matcher groups of command hooks, timeouts kept."""
    hooks = Hooks.from_settings(
        {
            "PreToolUse": [
                {
                    "matcher": "Bash",
                    "hooks": [{"type": "command", "command": "./check.sh", "timeout": 30}],
                },
                {"hooks": [{"type": "command", "command": "./log.sh"}]},
            ],
            "Stop": [{"hooks": [{"type": "command", "command": "./tests-pass.sh"}]}],
        },
        source=SOURCE,
    )
    pre = hooks.matchers(HookEvent.PRE_TOOL_USE)
    assert [g.matcher for g in pre] == ["Bash", None]
    assert pre[0].hooks == (CommandHook(command="./check.sh", timeout=30.0),)
    assert hooks.matchers(HookEvent.STOP)[0].hooks == (CommandHook(command="./tests-pass.sh"),)
    assert hooks.matchers(HookEvent.POST_TOOL_USE) == ()


def test_settings_hooks_merge_with_python_hooks() -> None:
    """merged() keeps both sets, event by event."""
    python = Hooks(stop=[lambda _: None])
    settings = Hooks.from_settings(
        {"Stop": [{"hooks": [{"type": "command", "command": "true"}]}]}, source=SOURCE
    )
    assert len(python.merged(settings).matchers(HookEvent.STOP)) == 2


def hook(**fields: Any) -> dict[str, Any]:
    return {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", **fields}]}]}


@pytest.mark.parametrize(
    ("value", "path"),
    [
        (["PreToolUse"], "hooks: must be an object"),
        ({"PreToolUze": []}, "hooks.PreToolUze: not a hook event"),
        ({"PreToolUse": {"matcher": "Bash"}}, "hooks.PreToolUse: must be a list"),
        ({"PreToolUse": ["Bash"]}, r"hooks.PreToolUse\[0\]: must be an object"),
        ({"PreToolUse": [{"matcher": "Bash"}]}, r"hooks.PreToolUse\[0\]: has no 'hooks'"),
        ({"PreToolUse": [{"matcher": 3, "hooks": []}]}, r"hooks.PreToolUse\[0\].matcher"),
        ({"PreToolUse": [{"matcher": "(", "hooks": []}]}, r"hooks.PreToolUse\[0\].matcher"),
        ({"PreToolUse": [{"matchers": "Bash", "hooks": []}]}, "unknown key 'matchers'"),
        ({"PreToolUse": [{"hooks": "echo"}]}, r"hooks.PreToolUse\[0\].hooks: must be a list"),
        (hook(command=""), r"hooks.PreToolUse\[0\].hooks\[0\].command"),
        (hook(command=7), r"hooks.PreToolUse\[0\].hooks\[0\].command"),
        (hook(command="x", timeout=-1), r"hooks\[0\].timeout"),
        (hook(command="x", timeout="30"), r"hooks\[0\].timeout"),
        (hook(command="x", timeout=True), r"hooks\[0\].timeout"),
        (hook(command="x", shell="zsh"), "unknown key 'shell'"),
        (
            {"Stop": [{"hooks": [{"type": "prompt", "prompt": "ok?"}]}]},
            r"hooks.Stop\[0\].hooks\[0\].type: must be 'command'",
        ),
    ],
)
def test_malformed_settings_name_the_file_and_key_path(value: Any, path: str) -> None:
    """Every malformed part of the hooks key is a ConfigError naming the file and key path."""
    with pytest.raises(ConfigError, match=path) as caught:
        Hooks.from_settings(value, source=SOURCE)
    assert str(caught.value).startswith(f"{SOURCE}: hooks")


def test_claude_code_events_fsm_agent_never_fires_are_skipped_with_a_warning() -> None:
    """A settings file written for Claude Code loads; hooks of events we never fire are named."""
    value = {
        "PostCompact": [{"hooks": [{"type": "command", "command": "true"}]}],
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "true"}]}],
    }
    with pytest.warns(SettingsWarning, match=r"hooks.PostCompact: fsm_agent never fires"):
        hooks = Hooks.from_settings(value, source=SOURCE)
    assert len(hooks.matchers(HookEvent.PRE_TOOL_USE)) == 1
