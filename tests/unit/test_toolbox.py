"""The built-in tools, run through the same runners the driver uses, in a tmp_path cwd."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import pytest

from fsm_agent.core.events import ToolCallFinished, ToolInputValidated
from fsm_agent.runtime.tool import (
    OUTSIDE_WORKING_FOLDER,
    SAFETY_CHECK,
    Tool,
    ToolContext,
    run_call,
    run_validation,
)
from fsm_agent.toolbox import Bash, Edit, Glob, Grep, Read, Write, default_tools
from fsm_agent.toolbox.bash import BashInput

T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def validate(tool: Tool[Any], raw: dict[str, Any], cwd: Path) -> ToolInputValidated:
    return run(run_validation(tool, tool.name, raw, ToolContext(cwd=cwd), call_id="v"))


def call(tool: Tool[Any], raw: dict[str, Any], cwd: Path) -> ToolCallFinished:
    """Validate, then call (as the driver would); fail the test if validation refuses."""

    async def both() -> ToolCallFinished:
        ctx = ToolContext(cwd=cwd)
        checked = await run_validation(tool, tool.name, raw, ctx, call_id="c")
        assert checked.ok, checked.error
        return await run_call(tool, raw, ctx, lambda _: None, call_id="c")

    return run(both())


def test_default_tools_have_distinct_names_and_valid_specs() -> None:
    """default_tools() lists the six built-ins, each with an object schema."""
    tools = default_tools()
    assert [t.name for t in tools] == ["Read", "Glob", "Grep", "Edit", "Write", "Bash"]
    for t in tools:
        assert t.spec().input_schema["type"] == "object"
    assert Bash().spec().is_shell


# --- Read / Glob / Grep ----------------------------------------------------------------------


def test_read_numbers_lines_and_pages(tmp_path: Path) -> None:
    """Read returns numbered lines; offset and limit select a window and say how to go on."""
    (tmp_path / "a.txt").write_text("one\ntwo\nthree\nfour\n")
    assert call(Read(), {"file_path": "a.txt"}, tmp_path).content == (
        "     1\tone\n     2\ttwo\n     3\tthree\n     4\tfour"
    )
    window = call(Read(), {"file_path": "a.txt", "offset": 2, "limit": 2}, tmp_path).content
    assert window == "     2\ttwo\n     3\tthree\n\n(showing lines 2-3 of 4; read on with offset=4)"


def test_read_missing_file_and_directory_are_refused(tmp_path: Path) -> None:
    """Read's validate_input refuses a missing file and a directory."""
    assert "does not exist" in validate(Read(), {"file_path": "nope"}, tmp_path).error
    (tmp_path / "d").mkdir()
    assert "is a directory" in validate(Read(), {"file_path": "d"}, tmp_path).error


def test_read_only_tools_are_safe_and_read_only(tmp_path: Path) -> None:
    """Read, Glob and Grep classify as concurrency-safe and read-only."""
    (tmp_path / "a.txt").write_text("x")
    cases: list[tuple[Tool[Any], dict[str, Any]]] = [
        (Read(), {"file_path": "a.txt"}),
        (Glob(), {"pattern": "*"}),
        (Grep(), {"pattern": "x"}),
    ]
    for tool, raw in cases:
        result = validate(tool, raw, tmp_path)
        assert result.ok and result.concurrency_safe and result.read_only


def test_glob_sorted_recursive_and_capped(tmp_path: Path) -> None:
    """Glob lists matching files sorted by path, skips .git, and caps the list at 100."""
    (tmp_path / "src" / "pkg").mkdir(parents=True)
    (tmp_path / ".git").mkdir()
    for name in ["src/b.py", "src/a.py", "src/pkg/c.py", "src/notes.txt", ".git/x.py"]:
        (tmp_path / name).write_text("")
    assert call(Glob(), {"pattern": "**/*.py"}, tmp_path).content == (
        "src/a.py\nsrc/b.py\nsrc/pkg/c.py"
    )
    assert call(Glob(), {"pattern": "*.txt", "path": "src"}, tmp_path).content == "src/notes.txt"
    assert call(Glob(), {"pattern": "*.rs"}, tmp_path).content == "No files found"
    many = tmp_path / "many"
    many.mkdir()
    for i in range(120):
        (many / f"f{i:03d}").write_text("")
    lines = str(call(Glob(), {"pattern": "many/*"}, tmp_path).content).splitlines()
    assert lines[0] == "many/f000"
    assert len(lines) == 101
    assert "first 100 of 120" in lines[-1]


def test_grep_files_and_content_modes(tmp_path: Path) -> None:
    """Grep lists matching files, or matching lines with numbers, with a glob filter."""
    (tmp_path / "b.py").write_text("import os\nx = 1\n")
    (tmp_path / "a.py").write_text("# TODO one\nTODO two\n")
    (tmp_path / "c.txt").write_text("TODO three\n")
    (tmp_path / "bin.dat").write_bytes(b"TODO\0\0")
    assert call(Grep(), {"pattern": "TODO"}, tmp_path).content == "a.py\nc.txt"
    assert (
        call(Grep(), {"pattern": "todo", "glob": "*.py", "ignore_case": True}, tmp_path).content
        == "a.py"
    )
    content = call(Grep(), {"pattern": r"^TODO \w+", "output_mode": "content"}, tmp_path).content
    assert content == "a.py:2:TODO two\nc.txt:1:TODO three"
    assert call(Grep(), {"pattern": "absent"}, tmp_path).content == "No matches found"


def test_grep_invalid_regex_is_refused(tmp_path: Path) -> None:
    """A pattern that does not compile is a validation error naming the pattern."""
    result = validate(Grep(), {"pattern": "(unclosed"}, tmp_path)
    assert not result.ok
    assert "Invalid regular expression" in result.error


# --- Edit / Write ----------------------------------------------------------------------------


def test_edit_replaces_unique_string(tmp_path: Path) -> None:
    """Edit replaces one unique occurrence and leaves the rest of the file alone."""
    target = tmp_path / "f.py"
    target.write_text("a = 1\nb = 2\n")
    result = call(
        Edit(), {"file_path": "f.py", "old_string": "b = 2", "new_string": "b = 3"}, tmp_path
    )
    assert not result.is_error
    assert target.read_text() == "a = 1\nb = 3\n"


def test_edit_non_unique_old_string_is_refused(tmp_path: Path) -> None:
    """A non-unique old_string is an error unless replace_all is set."""
    target = tmp_path / "f.txt"
    target.write_text("x x x")
    raw = {"file_path": "f.txt", "old_string": "x", "new_string": "y"}
    result = validate(Edit(), raw, tmp_path)
    assert not result.ok
    assert "occurs 3 times" in result.error
    assert not result.concurrency_safe
    call(Edit(), {**raw, "replace_all": True}, tmp_path)
    assert target.read_text() == "y y y"


def test_edit_missing_file_or_string_is_refused(tmp_path: Path) -> None:
    """Edit refuses a missing file and an old_string that does not occur."""
    raw = {"file_path": "f.txt", "old_string": "q", "new_string": "y"}
    assert "does not exist" in validate(Edit(), raw, tmp_path).error
    (tmp_path / "f.txt").write_text("abc")
    assert "was not found" in validate(Edit(), raw, tmp_path).error


def test_write_creates_parents_and_overwrites(tmp_path: Path) -> None:
    """Write creates missing parent directories, then replaces the content on a second call."""
    first = call(Write(), {"file_path": "new/dir/f.txt", "content": "a\nb\n"}, tmp_path)
    assert first.content == "Created new/dir/f.txt (2 lines)."
    second = call(Write(), {"file_path": "new/dir/f.txt", "content": "c"}, tmp_path)
    assert second.content == "Replaced new/dir/f.txt (1 lines)."
    assert (tmp_path / "new/dir/f.txt").read_text() == "c"


@pytest.mark.parametrize(
    "path",
    [".git/config", ".GIT/hooks/pre-commit", "sub/.vscode/settings.json", ".bashrc", ".MCP.json"],
)
def test_write_to_protected_path_asks_with_safety_check(tmp_path: Path, path: str) -> None:
    """Writes to VCS/editor/shell configuration ask with reason safety_check (case-insensitive)."""
    ctx = ToolContext(cwd=tmp_path)
    check = Write().check_permissions(Write().parse_input({"file_path": path, "content": ""}), ctx)
    assert check.behavior == "ask"
    assert check.reason == SAFETY_CHECK


def test_protected_path_through_symlink_asks(tmp_path: Path) -> None:
    """A symlink inside the cwd whose target is protected still triggers the safety check."""
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text("")
    (tmp_path / "innocent").symlink_to(tmp_path / ".git" / "config")
    data = Edit().parse_input({"file_path": "innocent", "old_string": "a", "new_string": "b"})
    check = Edit().check_permissions(data, ToolContext(cwd=tmp_path))
    assert (check.behavior, check.reason) == ("ask", SAFETY_CHECK)


def test_ordinary_write_is_left_to_the_permission_chain(tmp_path: Path) -> None:
    """A write to an ordinary file inside the cwd gives no opinion (passthrough)."""
    data = Write().parse_input({"file_path": "src/a.py", "content": ""})
    assert Write().check_permissions(data, ToolContext(cwd=tmp_path)).behavior == "passthrough"


# --- path containment ------------------------------------------------------------------------


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory next to the cwd, holding a file, and a cwd with a symlink pointing to it."""
    other = tmp_path / "other"
    other.mkdir()
    (other / "secret.txt").write_text("secret")
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    (cwd / "link").symlink_to(other / "secret.txt")
    (cwd / "linkdir").symlink_to(other)
    return other


ESCAPES = ["../other/secret.txt", "ABSOLUTE", "link", "linkdir/secret.txt"]


def escaping_target(tool: Tool[Any], path: str, outside: Path) -> str:
    """The path argument that leaves the cwd in the way ``path`` names."""
    target = str(outside / "secret.txt") if path == "ABSOLUTE" else path
    if tool.name == "Glob" and not path.startswith("linkdir"):
        target = str(Path(target).parent) if path != "link" else "link"
    return target


@pytest.mark.parametrize("path", ESCAPES)
@pytest.mark.parametrize(
    ("tool", "extra"),
    [
        (Edit(), {"old_string": "secret", "new_string": "x"}),
        (Write(), {"content": "x"}),
    ],
)
def test_writes_escaping_the_cwd_are_refused(
    outside: Path, path: str, tool: Tool[Any], extra: dict[str, Any]
) -> None:
    """`..`, absolute paths outside and symlinks pointing outside are refused for writes."""
    target = escaping_target(tool, path, outside)
    result = validate(tool, {"file_path": target, **extra}, outside.parent / "cwd")
    assert not result.ok
    assert "outside the working directory" in result.error
    assert (outside / "secret.txt").read_text() == "secret"


@pytest.mark.parametrize("path", ESCAPES)
@pytest.mark.parametrize(
    ("tool", "field", "extra"),
    [
        (Read(), "file_path", {}),
        (Grep(), "path", {"pattern": "secret"}),
        (Glob(), "path", {"pattern": "*"}),
    ],
)
def test_reads_escaping_the_cwd_ask(
    outside: Path, path: str, tool: Tool[Any], field: str, extra: dict[str, Any]
) -> None:
    """A read that leaves the cwd (`..`, absolute, symlinks) passes validation and then asks."""
    target = escaping_target(tool, path, outside)
    cwd = outside.parent / "cwd"
    assert validate(tool, {field: target, **extra}, cwd).ok
    check = tool.check_permissions(tool.parse_input({field: target, **extra}), ToolContext(cwd=cwd))
    assert (check.behavior, check.reason) == ("ask", OUTSIDE_WORKING_FOLDER)
    assert "outside the working folder" in check.message


def test_allow_outside_lets_file_tools_leave_the_cwd(outside: Path) -> None:
    """With allow_outside=True, a path outside the cwd is accepted."""
    ctx = ToolContext(cwd=outside.parent / "cwd", allow_outside=True)
    raw = {"file_path": str(outside / "secret.txt")}
    result = run(run_validation(Read(), "Read", raw, ctx, call_id="x"))
    assert result.ok


def test_glob_and_grep_skip_symlinks_pointing_outside(outside: Path) -> None:
    """Searching the cwd never lists or reads files reached through an outside symlink."""
    cwd = outside.parent / "cwd"
    (cwd / "mine.txt").write_text("secret")
    assert call(Glob(), {"pattern": "**/*"}, cwd).content == "mine.txt"
    assert call(Grep(), {"pattern": "secret"}, cwd).content == "mine.txt"


# --- Bash ------------------------------------------------------------------------------------


def test_bash_returns_combined_output(tmp_path: Path) -> None:
    """stdout and stderr come back together; the command runs in the cwd."""
    result = call(Bash(), {"command": "pwd; echo out; echo err >&2"}, tmp_path)
    assert not result.is_error
    assert result.content == f"{tmp_path.resolve()}\nout\nerr"


def test_bash_ignores_cdpath_so_cd_stays_in_the_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With CDPATH pointing elsewhere, ``cd src`` still enters the working folder's ``src``
    (the read-only judgement of ``cd src && cat x`` counts on it)."""
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "src").mkdir(parents=True)
    work = tmp_path / "work"
    (work / "src").mkdir(parents=True)
    monkeypatch.setenv("CDPATH", str(elsewhere))
    result = call(Bash(), {"command": "cd src && pwd"}, work)
    assert result.content == str((work / "src").resolve())


def test_bash_never_runs_a_program_from_the_working_folder_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With ``.`` and an empty entry in PATH, a ``./ls`` (or ``./bash``) the agent wrote is not
    what ``ls`` runs: relative PATH entries are dropped."""
    for name in ("ls", "bash"):
        planted = tmp_path / name
        planted.write_text("#!/bin/sh\necho planted\n")
        planted.chmod(0o755)
    monkeypatch.setenv("PATH", f".::{os.environ['PATH']}")
    result = call(Bash(), {"command": "ls"}, tmp_path)
    assert "planted" not in str(result.content)
    assert "ls" in str(result.content)


def _git(cwd: Path, *args: str) -> str:
    command = ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args]
    return subprocess.run(command, cwd=cwd, check=True, capture_output=True, text=True).stdout


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
@pytest.mark.parametrize("given", [None, "1"])
def test_bash_does_not_take_a_folder_of_plain_files_for_a_git_repository(
    given: str | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``HEAD``, ``config``, ``refs/heads/main`` and ``objects/info/alternates``, plain files an
    agent may write, make ``sub`` a bare repository by discovery, whose ``diff.external`` ran
    for the read-only ``cd sub && git diff HEAD~1 HEAD``. Any GIT_CONFIG_COUNT given is kept."""
    if given is not None:
        monkeypatch.setenv("GIT_CONFIG_COUNT", given)
        monkeypatch.setenv("GIT_CONFIG_KEY_0", "color.ui")
        monkeypatch.setenv("GIT_CONFIG_VALUE_0", "never")
    work = tmp_path / "work"
    work.mkdir()
    _git(work, "init", "-q")
    for text in ("one", "two"):
        (work / "f").write_text(text)
        _git(work, "add", "f")
        _git(work, "commit", "-qm", text)
    sub = work / "sub"
    (sub / "objects" / "info").mkdir(parents=True)
    (sub / "refs" / "heads").mkdir(parents=True)
    (sub / "objects" / "info" / "alternates").write_text(f"{work / '.git' / 'objects'}\n")
    (sub / "refs" / "heads" / "main").write_text(_git(work, "rev-parse", "HEAD"))
    (sub / "HEAD").write_text("ref: refs/heads/main\n")
    marker = tmp_path / "ran"
    (sub / "config").write_text(f'[core]\n\tbare = true\n[diff]\n\texternal = "touch {marker}"\n')
    command = "cd sub && git diff HEAD~1 HEAD"
    assert Bash().is_read_only(BashInput(command=command))
    call(Bash(), {"command": command}, work)
    assert not marker.exists()
    if given is not None:
        assert call(Bash(), {"command": "git config color.ui"}, work).content == "never"


def test_bash_nonzero_exit_is_an_error_with_code_and_output(tmp_path: Path) -> None:
    """A failing command gives an is_error result with the exit code and its output."""
    result = call(Bash(), {"command": "echo partial; exit 3"}, tmp_path)
    assert result.is_error
    assert result.content == "Exit code 3\npartial"


def test_bash_empty_output_note(tmp_path: Path) -> None:
    """A silent successful command gets the completed-with-no-output note."""
    assert call(Bash(), {"command": "true"}, tmp_path).content == "(Bash completed with no output)"


def test_bash_output_is_capped(tmp_path: Path) -> None:
    """Output beyond 30 000 characters is cut with a note."""
    result = call(Bash(), {"command": "yes abcdefghi | head -c 100000"}, tmp_path)
    assert isinstance(result.content, str)
    assert len(result.content) < 30_200
    assert "output cut" in result.content


def _alive(pid: int) -> bool:
    """Whether a process exists and is not a zombie waiting to be reaped."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _wait_until_dead(pids: list[int], seconds: float = 5) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not any(_alive(pid) for pid in pids):
            return True
        time.sleep(0.05)
    return False


def _read_pids(tmp_path: Path) -> list[int]:
    return [int((tmp_path / name).read_text()) for name in ("shell.pid", "child.pid")]


SPAWN = "echo $$ > shell.pid; sleep 30 & echo $! > child.pid; wait"


def test_bash_timeout_kills_the_process_group(tmp_path: Path) -> None:
    """On timeout the shell and its children are killed and the result says it timed out."""
    started = time.monotonic()
    result = call(Bash(), {"command": SPAWN, "timeout_ms": 500}, tmp_path)
    assert time.monotonic() - started < 10
    assert result.is_error
    assert "timed out after 500 ms" in str(result.content)
    assert _wait_until_dead(_read_pids(tmp_path))


def _cancel_once_spawned(
    tmp_path: Path, *, after_cancel: Callable[[], None] = lambda: None
) -> None:
    """Start SPAWN as a Bash call, cancel it once its background child exists, and check that
    the cancellation reached the caller; ``after_cancel`` runs between the two."""

    async def scenario() -> None:
        ctx = ToolContext(cwd=tmp_path)
        task = asyncio.create_task(
            run_call(Bash(), {"command": SPAWN}, ctx, lambda _: None, call_id="b")
        )
        while not (tmp_path / "child.pid").exists() or not (tmp_path / "child.pid").read_text():
            await asyncio.sleep(0.02)
        task.cancel()
        await asyncio.sleep(0.05)
        after_cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    run(scenario())


def test_bash_cancellation_kills_the_process_group(tmp_path: Path) -> None:
    """Cancelling a running Bash call kills its process group and re-raises CancelledError."""
    _cancel_once_spawned(tmp_path)
    assert _wait_until_dead(_read_pids(tmp_path))


def test_bash_cancelled_while_starting_kills_the_process_group(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cancellation that lands while the shell is still being set up kills its whole group."""
    real_spawn = asyncio.create_subprocess_exec
    gate = asyncio.Event()

    async def slow_spawn(*args: Any, **kwargs: Any) -> asyncio.subprocess.Process:
        process = await real_spawn(*args, **kwargs)
        await gate.wait()  # the set-up is still under way when the cancellation arrives
        return process

    monkeypatch.setattr(asyncio, "create_subprocess_exec", slow_spawn)
    _cancel_once_spawned(tmp_path, after_cancel=gate.set)
    assert _wait_until_dead(_read_pids(tmp_path))


def test_bash_timeout_out_of_range_is_refused(tmp_path: Path) -> None:
    """timeout_ms above 600 000 is a validation error."""
    result = validate(Bash(), {"command": "ls", "timeout_ms": 600_001}, tmp_path)
    assert not result.ok
    assert "timeout_ms" in result.error


@pytest.mark.parametrize(
    ("command", "read_only"),
    [
        ("ls -la", True),
        ("cat a.txt | grep foo | wc -l", True),
        ("git status && git log --oneline -5", True),
        ("git diff HEAD~1; git show HEAD", True),
        ("git branch -a", True),
        ("find . -name '*.py' -type f", True),
        ("grep -rn 'a|b; c' src", True),
        ("grep 'end$' file", True),
        ("head -n 5 f || tail f", True),
        ("sort f | uniq -c", True),
        ("echo hello", True),
        ("env", False),
        ("test -f x && echo yes", True),
        ("wc -l < input.txt", True),
        ("rm -rf build", False),
        ("ls > out.txt", False),
        ("echo hi >> log", False),
        ("cat $(which python)", False),
        ("echo `whoami`", False),
        ("diff <(ls a) <(ls b)", False),
        ("ls\nrm x", False),
        ("find . -delete", False),
        ("find . -exec rm {} ;", False),
        ("git commit -m x", False),
        ("git push", False),
        ("git branch new-feature", False),
        ("git branch -D old", False),
        ("git -c core.pager=sh log", False),
        ("git log --output=x", False),
        ("sort -o out f", False),
        ("uniq in out", False),
        ("env rm -rf x", False),
        ("ls & rm x", False),
        ("(rm x)", False),
        ("echo $HOME", False),
        ("FOO=1 ls", False),
        ("/bin/rm x", False),
        ("python -c 'print(1)'", False),
        ("ls 'unclosed", False),
        ("", False),
        ("ls; " * 50 + "ls", False),
        ("ls; " * 49 + "ls", True),
    ],
)
def test_bash_read_only_classification(command: str, read_only: bool) -> None:
    """Only commands provably read-only are classified read-only (and so concurrency-safe)."""
    data = Bash().parse_input({"command": command})
    assert Bash().is_read_only(data) is read_only
    assert Bash().is_concurrency_safe(data) is read_only


def test_bash_permission_allows_read_only_only(tmp_path: Path) -> None:
    """Read-only commands are allowed by the tool; others ask, saying which part and why."""
    ctx = ToolContext(cwd=tmp_path)
    assert Bash().check_permissions(Bash().parse_input({"command": "ls"}), ctx).behavior == "allow"
    check = Bash().check_permissions(Bash().parse_input({"command": "ls && rm x"}), ctx)
    assert (check.behavior, check.message) == (
        "ask",
        "not read-only: `rm x`: rm is not on the read-only list",
    )


def test_bash_permission_asks_for_reads_outside_the_working_folder(tmp_path: Path) -> None:
    """``cat`` of a file outside the working folder asks, though cat itself is read-only."""
    ctx = ToolContext(cwd=tmp_path)
    check = Bash().check_permissions(Bash().parse_input({"command": "cat /etc/hostname"}), ctx)
    assert check.behavior == "ask"
    assert "outside the working folder" in check.message
    assert Bash().is_read_only(Bash().parse_input({"command": "cat /etc/hostname"}))


def test_bash_permission_reads_additional_directories_without_asking(tmp_path: Path) -> None:
    """A file in one of the context's additional directories may be read unasked."""
    (tmp_path / "work").mkdir()
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "notes.txt").write_text("n")
    ctx = ToolContext(cwd=tmp_path / "work", additional_directories=(tmp_path / "shared",))
    data = Bash().parse_input({"command": f"cat {tmp_path / 'shared' / 'notes.txt'}"})
    assert Bash().check_permissions(data, ctx).behavior == "allow"
    other = Bash().parse_input({"command": f"cat {tmp_path / 'elsewhere.txt'}"})
    assert Bash().check_permissions(other, ctx).behavior == "ask"


def test_bash_permission_follows_symlinks_out_of_the_working_folder(tmp_path: Path) -> None:
    """A symlink inside the working folder that points outside does not make a read local."""
    (tmp_path / "work").mkdir()
    (tmp_path / "secret").write_text("key")
    (tmp_path / "work" / "link").symlink_to(tmp_path / "secret")
    ctx = ToolContext(cwd=tmp_path / "work")
    check = Bash().check_permissions(Bash().parse_input({"command": "cat link"}), ctx)
    assert check.behavior == "ask"


def test_bash_permission_names_what_could_not_be_analysed(tmp_path: Path) -> None:
    """A command the parser cannot read asks, naming the problem."""
    ctx = ToolContext(cwd=tmp_path)
    check = Bash().check_permissions(Bash().parse_input({"command": "ls 'open"}), ctx)
    assert check.behavior == "ask"
    assert "cannot be fully analysed" in check.message
    assert "'open" in check.message
