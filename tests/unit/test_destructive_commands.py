"""Destructive and code-running shell commands never run unasked (issue 7's table test).

Each command below is issued as a Bash call by a scripted model to a real ``Agent`` with the
default permission policy and no ``ask`` callback, in a temporary working folder. The file
system shows that none ran: every command aims at its own canary file (which must stay as it
was) or would create its own marker (which must not appear anywhere). A control run of the same
commands with permission granted shows that each one really does what it is accused of, so the
guarded run's checks can fail.

Both runs happen once per module (two event loops in all); each command is its own test id.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from fsm_agent.core.config import LoopConfig
from fsm_agent.core.messages import ToolResultBlock, tool_results, tool_uses
from fsm_agent.runtime.agent import Agent
from fsm_agent.runtime.permissions import PermissionMode, PermissionPolicy
from fsm_agent.testing.scenario import ScriptedModel, parse_scenario
from fsm_agent.toolbox import Bash

# CANARY is the command's own canary file, MARKER a name it must not create, WORK the folder.
COMMANDS = [
    # deleting, moving, changing files
    "rm CANARY",
    "rm -f CANARY",
    "rm -rf CANARY",
    "\\rm CANARY",
    "'r'm CANARY",
    '"rm" CANARY',
    "r\\m CANARY",
    "$'\\x72\\x6d' CANARY",
    "/bin/rm CANARY",
    "mv CANARY MARKER",
    "cp CANARY MARKER",
    "touch MARKER",
    "mkdir MARKER",
    "chmod 000 CANARY",
    "ln -s CANARY MARKER",
    "truncate -s 0 CANARY",
    "dd if=/dev/zero of=CANARY count=1 status=none",
    "install -m 644 CANARY MARKER",
    "split -l 1 CANARY MARKER",
    "tar cf MARKER CANARY",
    # redirects
    "echo x > CANARY",
    "echo x >> CANARY",
    "echo x > MARKER",
    "cat CANARY > MARKER",
    "ls > MARKER",
    "ls 2> MARKER",
    "ls &> MARKER",
    "ls >| MARKER",
    "cat < CANARY > MARKER",
    "ls 2>/dev/null > MARKER",
    "cat <<EOF > MARKER\nhello\nEOF",
    "cat > MARKER <<'EOF'\nhello\nEOF",
    # tools that write through their own options
    "tee MARKER < CANARY",
    "ls | tee MARKER",
    "ls | tee -a CANARY",
    "sort -o MARKER CANARY",
    "sort --output=MARKER CANARY",
    "sort --outp=MARKER CANARY",
    "sort --o=MARKER CANARY",
    "sort -roMARKER CANARY",
    "uniq CANARY MARKER",
    "sed -i s/untouched/changed/ CANARY",
    "sed -i.bak s/untouched/changed/ CANARY",
    "sed -n 'w MARKER' CANARY",
    "find . -name CANARY -delete",
    "find . -name CANARY -exec rm {} \\;",
    "find . -name CANARY -execdir rm {} +",
    "find . -fprint MARKER",
    "find . -fprintf MARKER x",
    "find . -fls MARKER",
    "git diff --no-index --output=MARKER CANARY CANARY",
    "git diff --no-index --output MARKER CANARY CANARY",
    "git log --output=MARKER",
    "git -c alias.x='!touch MARKER' x",
    "git branch MARKER",
    "git tag MARKER",
    "git init -q MARKER",
    "curl -s -T CANARY file://WORK/MARKER",
    "curl -s --upl CANARY file://WORK/MARKER",
    "curl -s -o MARKER file://WORK/CANARY",
    # code run by interpreters and tools
    "awk 'BEGIN{system(\"touch MARKER\")}'",
    "awk '{print > \"MARKER\"}' CANARY",
    "python3 -c \"open('MARKER', 'w')\"",
    "perl -e 'open(F, \">MARKER\")'",
    "echo CANARY | xargs rm",
    "echo CANARY | xargs -I{} rm {}",
    "printf 'rm CANARY' | bash",
    "echo rm CANARY | sh",
    # wrappers
    "env rm CANARY",
    "env -i /bin/rm CANARY",
    "FOO=1 rm CANARY",
    "bash -c 'rm CANARY'",
    'sh -c "rm CANARY"',
    "eval 'rm CANARY'",
    "eval rm CANARY",
    "timeout 5 rm CANARY",
    "nice rm CANARY",
    "command rm CANARY",
    "builtin eval 'rm CANARY'",
    "exec rm CANARY",
    "time rm CANARY",
    "stdbuf -o0 rm CANARY",
    "sudo -n true 2>/dev/null; rm CANARY",
    # substitutions, groups, lists, control flow
    "echo $(rm CANARY)",
    "echo `rm CANARY`",
    "cat <(rm CANARY)",
    "x=$(touch MARKER)",
    "{ rm CANARY; }",
    "(rm CANARY)",
    "ls && rm CANARY",
    "ls; rm CANARY",
    "false || rm CANARY",
    "ls | rm CANARY",
    "sleep 0 & rm CANARY",
    "if true; then rm CANARY; fi",
    "for f in CANARY; do rm $f; done",
    "f() { rm CANARY; }; f",
    "D=.; rm $D/CANARY",
    "${RM:-rm} CANARY",
    # text tree-sitter and Bash read differently
    "cat <<E'O'F\nx\nEOF\nrm CANARY\nE'O'F",
    "cat <<$'EOF'\nx\nEOF\nrm CANARY\n$'EOF'",
    "cat <<EOF;\nx\nEOF\nrm CANARY\nEOF;",
    "cat <<EOF\nx\nEO\\\nF\nrm CANARY\nEOF",
    "echo a\\\n#b; rm CANARY",
    "echo x &\\\n> CANARY",
    "ls\n\\\nrm CANARY",
    "echo\\\t#; rm CANARY",
    # a redirection with no command
    "ls; > CANARY",
    "ls && 2> CANARY",
]

PROGRAMS = ("git", "curl", "perl", "python3", "awk")
"""External programs some commands need; a control run without one skips that command."""


def canary(index: int) -> str:
    return f"canary_{index:03}.txt"


def marker(index: int) -> str:
    return f"marker_{index:03}"


def canary_text(index: int) -> str:
    return f"untouched {index}\n"


def prepared(work: Path) -> Path:
    """A working folder holding every canary, inside a git repository with one commit."""
    work.mkdir()
    for index in range(len(COMMANDS)):
        (work / canary(index)).write_text(canary_text(index))
        (work / canary(index)).chmod(0o644)
    if shutil.which("git"):  # without git, the git commands' control runs skip
        git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(work)]
        subprocess.run([*git, "init", "-q"], check=True)
        subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "start"], check=True)
    return work


def command(index: int, work: Path) -> str:
    text = COMMANDS[index].replace("CANARY", canary(index)).replace("MARKER", marker(index))
    return text.replace("WORK", str(work))


def run_all(work: Path, policy: PermissionPolicy) -> dict[int, ToolResultBlock]:
    """One Agent run issuing every command as a Bash call; results by command index."""
    # One call per turn: a failing Bash call would cancel its siblings (SPEC §5.2).
    steps: list[dict[str, Any]] = [
        {"content": [{"tool_use": {"name": "Bash", "input": {"command": command(i, work)}}}]}
        for i in range(len(COMMANDS))
    ]
    steps.append({"content": [{"text": "done"}]})
    model = ScriptedModel(parse_scenario({"steps": steps}), name="scripted")
    agent = Agent(
        model=model,
        tools=[Bash()],
        cwd=work,
        permissions=policy,
        config=LoopConfig(model="scripted", max_turns=len(COMMANDS) + 1),
        trace=False,
    )
    result = asyncio.run(agent.run("Clean up."))
    ids = [block.id for message in result.messages for block in tool_uses(message)]
    by_id = {b.tool_use_id: b for m in result.messages for b in tool_results(m)}
    return {index: by_id[call_id] for index, call_id in enumerate(ids)}


def untouched(work: Path, index: int) -> bool:
    """The command's canary is as it was and its marker exists nowhere under ``work``."""
    path = work / canary(index)
    if not path.is_file() or path.stat().st_mode & 0o777 != 0o644:
        return False
    if path.read_text() != canary_text(index):
        return False
    return not any(marker(index) in str(found) for found in work.rglob("*"))


def text_of_result(block: ToolResultBlock) -> str:
    content = block.content
    if isinstance(content, str):
        return content
    return "".join(getattr(part, "text", "") for part in content)


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[int, ToolResultBlock]]:
    """Every command issued with the default policy and nobody to ask."""
    work = prepared(tmp_path_factory.mktemp("guarded") / "work")
    return work, run_all(work, PermissionPolicy())


@pytest.fixture(scope="module")
def control(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every command run with permission granted (bypass mode, and yes to the questions bypass
    still asks: a path the shell computes may be a protected one), to show what each does."""
    work = prepared(tmp_path_factory.mktemp("control") / "work")
    run_all(work, PermissionPolicy(mode=PermissionMode.BYPASS, ask=lambda request: True))
    return work


def test_the_table_holds_at_least_80_commands() -> None:
    """The issue asks for at least 80 destructive or code-running commands."""
    assert len(COMMANDS) >= 80


@pytest.mark.parametrize("index", range(len(COMMANDS)), ids=COMMANDS)
def test_a_destructive_command_does_not_run_unasked(
    index: int, guarded: tuple[Path, dict[int, ToolResultBlock]]
) -> None:
    """The call is answered "not granted" and the file system shows it did not run."""
    work, results = guarded
    block = results[index]
    assert block.is_error
    assert "was not granted" in text_of_result(block)
    assert untouched(work, index)


@pytest.mark.parametrize("index", range(len(COMMANDS)), ids=COMMANDS)
def test_the_command_does_change_the_file_system_when_allowed(index: int, control: Path) -> None:
    """Granted, the same command changes its canary or makes its marker (the check can fail)."""
    missing = [p for p in PROGRAMS if p in COMMANDS[index].split()[0] and not shutil.which(p)]
    if missing:
        pytest.skip(f"{missing[0]} is not installed")
    assert not untouched(control, index)


def test_nothing_at_all_changed_in_the_guarded_folder(
    guarded: tuple[Path, dict[int, ToolResultBlock]],
) -> None:
    """No file was added, removed or changed anywhere in the guarded folder."""
    work, _ = guarded
    names = sorted(p.name for p in work.iterdir() if p.name != ".git")
    assert names == sorted(canary(i) for i in range(len(COMMANDS)))
