"""Bash: run a shell command in the working directory, with a timeout and an output cap.

The command runs as ``bash -c`` in a new session, so it and everything it starts form one
process group: a timeout or a cancellation kills the whole group, not just the shell. Commands
that :func:`~fsm_agent.core.read_only_commands.judge_read_only` proves read-only are
concurrency-safe and allowed; every other command asks, with the reason it is not read-only
(SPEC §9.3, Bash checkPermissions: read-only ⇒ allow, otherwise the rules and the user decide).
While the command runs, its output is reported as progress, coalesced and bounded
(:mod:`~fsm_agent.toolbox.command_progress`); the result is the output as before.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import re
import signal
from pathlib import Path
from typing import Final

import attrs

from fsm_agent.core.git_commands import configuration_written
from fsm_agent.core.read_only_commands import OUTPUT_ONLY, ReadOnlyVerdict, judge_read_only
from fsm_agent.core.shell_commands import (
    CommandAnalysis,
    CommandPart,
    Redirect,
    analyse_command,
)
from fsm_agent.runtime.tool import (
    SAFETY_CHECK,
    PermissionCheck,
    ProgressCallback,
    Tool,
    ToolContext,
    ToolOutput,
)
from fsm_agent.toolbox.archive_members import archive_refusal
from fsm_agent.toolbox.code_names import PROTECTED_NAME, protected_name_in_code
from fsm_agent.toolbox.command_progress import PROGRESS_INTERVAL_S, CommandProgress
from fsm_agent.toolbox.found_paths import (
    FOUND_PATH_WORD,
    is_find,
    reaches_only_unprotected,
    running_find,
    start_folders,
    writes_unnamed,
)
from fsm_agent.toolbox.git_reads import git_read_refusal
from fsm_agent.toolbox.known_words import KnownWords
from fsm_agent.toolbox.patch_targets import patch_refusal
from fsm_agent.toolbox.path_shadowing import SearchPath
from fsm_agent.toolbox.paths import (
    FOLDER_MOVES,
    MAX_ENTERED_FOLDERS,
    entered_folders,
    expand_home,
    is_protected,
    path_candidates,
    resolved_under,
    word_bases,
)
from fsm_agent.toolbox.placed_files import placed_path
from fsm_agent.toolbox.process_views import ProcessViews, makes_links
from fsm_agent.toolbox.scheduled_commands import scheduled_by
from fsm_agent.toolbox.startup_writers import startup_writer
from fsm_agent.toolbox.tool_settings import setting_kept
from fsm_agent.toolbox.tree_writes import reached_tree, received_tree

_SOURCING = frozenset({"source", "."})
"""The shell's commands that run a script in the shell itself, named by their first word."""

DEFAULT_TIMEOUT_MS = 120_000
MAX_TIMEOUT_MS = 600_000
MAX_OUTPUT_CHARS = 30_000
_READ_CHUNK = 65_536
_KEEP_BYTES = MAX_OUTPUT_CHARS * 4  # UTF-8 needs at most 4 bytes a character


@attrs.frozen(kw_only=True)
class BashInput:
    """Parameters of Bash."""

    command: str = attrs.field(metadata={"description": "The command to run with bash -c."})
    timeout_ms: int | None = attrs.field(
        default=None,
        metadata={
            "description": f"Kill the command after this many milliseconds (default "
            f"{DEFAULT_TIMEOUT_MS}, at most {MAX_TIMEOUT_MS})."
        },
    )
    description: str | None = attrs.field(
        default=None,
        metadata={"description": "A few words saying what the command does, for the user."},
    )


class Bash(Tool[BashInput]):
    """Runs a bash command and returns its combined stdout and stderr."""

    name = "Bash"
    description = (
        "Run a bash command in the working directory and return its output (stdout and stderr "
        f"together, at most {MAX_OUTPUT_CHARS} characters). A non-zero exit status is reported "
        f"as an error. The command is killed after timeout_ms (default {DEFAULT_TIMEOUT_MS} ms). "
        "Prefer Read, Glob and Grep for looking at files."
    )
    input_type = BashInput
    is_shell = True

    def __init__(self, *, progress_interval: float = PROGRESS_INTERVAL_S) -> None:
        """``progress_interval``: the least time in seconds between two progress reports of
        a running command's output (:mod:`~fsm_agent.toolbox.command_progress`); 0 reports
        each chunk as it is read."""
        super().__init__()
        if not 0 <= progress_interval < math.inf:
            raise ValueError("progress_interval must be a number of seconds, 0 or more")
        self.progress_interval = progress_interval

    def is_concurrency_safe(self, data: BashInput) -> bool:
        """Only commands proven read-only may run alongside others (SPEC §4)."""
        return self.is_read_only(data)

    def is_read_only(self, data: BashInput) -> bool:
        """Whether the command provably changes nothing, wherever the files it reads are.

        Where it may read is a permission question (``check_permissions``), not a safety one.
        """
        return _judge(analyse_command(data.command), cwd="/", readable_roots=("/",)).read_only

    async def validate_input(self, data: BashInput, ctx: ToolContext) -> str | None:
        """The command must not be blank and the timeout must be in range."""
        if not data.command.strip():
            return "command must not be empty"
        if data.timeout_ms is not None and not 1 <= data.timeout_ms <= MAX_TIMEOUT_MS:
            return f"timeout_ms must be between 1 and {MAX_TIMEOUT_MS}"
        return None

    def check_permissions(self, data: BashInput, ctx: ToolContext) -> PermissionCheck:
        """Read-only commands reading inside the working folder are allowed; others ask.

        The message says why: the part that is not read-only, or what could not be analysed.
        """
        cwd = os.path.realpath(ctx.cwd)
        roots = ("/",) if ctx.allow_outside else tuple(map(str, ctx.additional_directories))
        analysis = analyse_command(data.command)
        verdict = _judge(analysis, cwd=cwd, readable_roots=roots)
        if verdict.read_only:
            refusal = git_refusal(analysis, Path(cwd))
            if refusal is None:
                return PermissionCheck(behavior="allow", message="read-only command")
            return PermissionCheck(behavior="ask", message=f"not read-only here: {refusal}")
        unfollowed = _unfollowed(analysis, ctx.cwd)
        if isinstance(unfollowed, str) and not analysis.misread and _writes_nothing(analysis):
            return PermissionCheck(behavior="ask", message=f"not read-only: {verdict.reason}")
        if isinstance(unfollowed, str):
            return PermissionCheck(
                behavior="ask",
                reason=SAFETY_CHECK,
                message=f"may change a protected path, unseen: {unfollowed}",
            )
        touched = _protected_path_named(analysis, ctx, unfollowed)
        if touched is not None:
            return PermissionCheck(
                behavior="ask",
                reason=SAFETY_CHECK,
                message=f"may change the protected path {touched}: {verdict.reason}",
            )
        return PermissionCheck(behavior="ask", message=f"not read-only: {verdict.reason}")

    async def call(
        self, data: BashInput, ctx: ToolContext, progress: ProgressCallback
    ) -> ToolOutput:
        """Run the command, reporting its output as progress while it runs; on timeout or
        cancellation kill its whole process group. No progress is reported once the call
        has ended, whichever way."""
        timeout_ms = min(data.timeout_ms or DEFAULT_TIMEOUT_MS, MAX_TIMEOUT_MS)
        process = await _start(data.command, ctx.cwd, read_only=self.is_read_only(data))
        output = _Output(CommandProgress(progress, interval=self.progress_interval))
        try:
            try:
                async with asyncio.timeout(timeout_ms / 1000):
                    await output.collect(process)
                    code = await process.wait()
            finally:
                output.progress.close()
        except TimeoutError:
            await _kill_group(process)
            text = output.text() or "(no output)"
            return ToolOutput(
                content=f"Command timed out after {timeout_ms} ms and was killed.\n{text}",
                is_error=True,
            )
        except BaseException:  # cancellation (abort) above all: leave nothing running
            await _kill_group(process)
            raise
        text = output.text()
        if code != 0:
            return ToolOutput(content=f"Exit code {code}\n{text}".rstrip(), is_error=True)
        return ToolOutput(content=text)


def git_refusal(analysis: CommandAnalysis, cwd: Path) -> str | None:
    """Why the git commands of a read-only command must ask with the git installed here, in
    the repositories they run in (``git_reads``: every folder the command may be in, ``cd a
    && cd b`` in ``a/b`` too), or None (also when it runs no git)."""
    if not any(runs_git(part) for part in analysis.parts):
        return None
    folders = entered_folders(analysis, cwd)
    if folders is None:
        return f"it may run git in more than {MAX_ENTERED_FOLDERS} folders, more than are checked"
    return git_read_refusal(folders, _search_path(os.environ.get("PATH", os.defpath)))


def runs_git(part: CommandPart) -> bool:
    """Whether ``part`` runs git (by name or by path)."""
    return bool(part.argv) and part.argv[0].rsplit("/", 1)[-1] == "git"


MAX_JUDGED_PATHS = 4_096
"""Words times the folders they may start from that the protected-path check judges; each
costs some file-system lookups, and past this a command would take seconds to judge (five
``cd``s and 2,600 words took ten), so it asks instead."""


def _unfollowed(analysis: CommandAnalysis, cwd: Path) -> str | list[Path]:
    """Why the paths a command that is not read-only may change cannot be known, or else the
    folders its relative words may start from (``paths.word_bases``).

    Where the parser could not read the command as Bash reads it (a parse error, control
    characters, a command past the size analysed), a part it missed may write anywhere:
    searching the text for protected names is no answer, since the shell joins
    ``~/.bash''rc`` into ``.bashrc``.
    Where the command may be in more folders than are followed, or sets what ``~`` and
    ``cd`` follow (``HOME``), a word may name any path. Either way the safety check asks,
    bypass mode or not (SPEC §9.3 step 1g)."""
    if analysis.misread:
        return f"the command cannot be fully analysed ({analysis.problem})"
    return word_bases(analysis, cwd)


def _protected_path_named(
    analysis: CommandAnalysis, ctx: ToolContext, folders: list[Path]
) -> str | None:
    """The first protected path a command that is not read-only names, if any.

    A command that may write (``echo x > .bashrc``, ``cp f .git/hooks/pre-commit``) is as
    dangerous as an Edit of the same file, so it gets the same bypass-immune safety check
    (SPEC §9.3 step 1g). Every word of every part and every redirect target counts: without
    knowing each program's meaning, a protected path anywhere in a writing command asks.

    A word the shell computes (``~/.bash$x``, ``.gi?/config``, ``~/.b{a,}shrc``,
    ``"$HOME/.profile"``) may become any path when the command runs, so it counts as one that
    may be protected; only the arguments of programs that just print are left out. So do the
    words ``xargs`` gives a program and the paths ``find`` fills in or deletes, unless that
    find cannot reach a protected path (``found_paths``), a folder holding one that a write
    reaches as a whole (``rm -rf .``: ``tree_writes``), the name a file takes in the folder
    ``cp``/``mv``/``ln``/``install``/``rsync``/``scp`` or a download (``wget -P DIR URL``)
    puts it in (``placed_files``), a program
    written where the shell finds it before another of its name (``path_shadowing``), code
    a scheduler keeps to run later (``crontab -``: ``scheduled_commands``), a setting naming
    a program ``aws`` or ``kubectl`` runs later (``tool_settings``), a setting ``git
    config`` keeps in ``.git/config`` or ``~/.gitconfig``, the hooks ``git init --template``
    copies
    (:mod:`~fsm_agent.core.git_config_writes`), a file a patch names
    (:mod:`~fsm_agent.toolbox.patch_targets`) or an archive holds
    (:mod:`~fsm_agent.toolbox.archive_members`), and a word leading through a process's own
    folder under ``/proc`` (:mod:`~fsm_agent.toolbox.process_views`), which this process
    would read as its own, and a program that writes the shell's start-up files itself
    (``conda init``: :mod:`~fsm_agent.toolbox.startup_writers`).
    """
    search = SearchPath(os.environ.get("PATH", os.defpath))
    views = ProcessViews()
    words_named = sum(len(part.argv) + len(part.redirects) for part in analysis.parts)
    if words_named * len(folders) > MAX_JUDGED_PATHS:
        return (
            f"any path ({words_named} words from {len(folders)} folders are more than the"
            f" {MAX_JUDGED_PATHS} paths judged)"
        )
    known = KnownWords.of(analysis, folders)
    for position, original in enumerate(analysis.parts):
        if original.argv and 0 in original.expanded:
            # `X="rm -rf $HOME/.config"; $X`, `set -- rm …; "$@"`: any command, as `eval "$X"`
            return f"whatever {original.argv[0]} runs (a program the shell computes)"
        # The computed words of a program that only prints or reads are no paths it writes.
        only_shows = bool(original.argv) and (
            original.argv[0] in OUTPUT_ONLY or _only_reads(original)
        )
        runs = known.each_run(original, words=not only_shows)
        for part in runs:
            refusal = _part_refusal(
                part, position, analysis=analysis, ctx=ctx, folders=folders, lookups=(search, views)
            )
            if refusal is not None:
                return refusal
    if analysis.problem is not None:
        # Every part was found (not ``misread``) and each word judged above; the text is
        # searched for what no word holds (a here-document), without the script a `source`
        # runs, which it reads (`source .venv/bin/activate`, `source ~/.bashrc` write nothing).
        found = PROTECTED_NAME.search(_unjudged_text(analysis))
        if found is not None:
            return found.group(0)
    return None


def _part_refusal(
    part: CommandPart,
    position: int,
    *,
    analysis: CommandAnalysis,
    ctx: ToolContext,
    folders: list[Path],
    lookups: tuple[SearchPath, ProcessViews],
) -> str | None:
    """The first protected path ``part`` (``analysis.parts[position]``, its words told as
    far as they can be: :mod:`~fsm_agent.toolbox.known_words`) may write, or None; the rest
    of :func:`_protected_path_named`, whose ``lookups`` (where the shell finds programs,
    the views under ``/proc``) it shares."""
    cwd = Path(os.path.realpath(ctx.cwd))
    search, views = lookups

    def runs_later(path: Path) -> bool:
        return is_protected(path) or search.shadowed(path) is not None

    computed = _computed_paths(part)
    if computed:
        return f"{computed[0]} (a path the shell computes)"
    filled = _filled_paths(analysis.parts, position, cwd)
    if filled is not None:
        return filled
    for folder in folders:  # a word relative to where the shell may be
        tree = reached_tree(part.argv, folder)
        if tree is not None:
            return f"{tree} (it holds one)"
        received = received_tree(part.argv, folder)
        if received is not None:
            return f"{received} (what a copy from elsewhere writes there)"
        placed = placed_path(part.argv, folder, runs_later, part.assignments)
        if placed is not None:
            return f"{placed} (the file takes that name there)"
    writer = startup_writer(part.argv)
    if writer is not None:
        return f"the shell's start-up files ({writer} writes them)"
    scheduler = scheduled_by(part)
    if scheduler is not None:
        return f"{scheduler}'s jobs (code kept to run later)"
    setting = setting_kept(part)
    if setting is not None:
        return f"{setting} (a setting naming a program the tool runs later)"
    configuration = (
        configuration_written(part.argv[1:], part.assignments) if runs_git(part) else None
    )
    if configuration is not None:
        return f"{configuration} (git writes its configuration there)"
    written = patch_refusal(part, analysis, ctx.cwd, folders) or archive_refusal(
        part, analysis, ctx.cwd, folders
    )
    if written is not None:
        return written
    in_code = protected_name_in_code(part, analysis)
    if in_code is not None:
        return f"{in_code} (named in the code the command gives {part.argv[0]})"
    # The script ``source`` (or ``.``) runs is read, not written: ``source .venv/bin/activate``
    # and ``source ~/.bashrc`` write neither.
    first = 2 if part.argv and part.argv[0] in _SOURCING else 1
    words = (*part.argv[first:], *(redirect.target for redirect in part.redirects))
    for word in words:
        for candidate in path_candidates(word):
            path = expand_home(candidate)
            for folder in [Path("/")] if path.is_absolute() else folders:
                if is_protected(folder / path):
                    return word
                through = views.through(folder, path, entered=makes_links(part.argv))
                if through and not _writes_nothing(analysis):
                    return f"{word} (through {_VIEWED}, which the command reads as its own)"
                shadowed = search.shadowed(folder / path)
                if shadowed is not None:
                    return f"{word} (the shell would run it in place of {shadowed})"
    return None


_VIEWED = "a process's folder under /proc"


def _unjudged_text(analysis: CommandAnalysis) -> str:
    """The command's text (every part of it found), less the scripts ``source`` runs."""
    text = analysis.command
    for part in analysis.parts:
        if len(part.argv) > 1 and part.argv[0] in _SOURCING:
            # The script's word alone, not its letters inside other words: `source b` must
            # not turn a here-document's `.bashrc` into `.ashrc`.
            word = re.escape(part.argv[1])
            text = re.sub(rf"(?<![^\s'\"]){word}(?![^\s'\";&|)])", " ", text)
    return text


def _computed_paths(part: CommandPart) -> list[str]:
    """The words and redirection targets of ``part`` the shell computes and that may name a
    file it writes: not an input (``< $f``), nor a heredoc, nor the words of a program that
    only prints or, on the read-only list, only reads (``cat src/*.py``)."""
    targets = [
        redirect.target
        for redirect in part.redirects
        if redirect.expanded and ">" in redirect.operator
    ]
    if part.argv and part.argv[0] not in OUTPUT_ONLY and not _only_reads(part):
        targets += [
            part.argv[index]
            for index in part.expanded
            if index > 0 and not _declares_no_path(part, index)
        ]
    return targets


_DECLARING: Final = frozenset({"export", "declare", "typeset", "local", "readonly"})
_PLAIN_DECLARATION: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=[^$`*?\[{]*", re.DOTALL)
"""``NAME=VALUE`` with a value the shell takes as written (a ``~`` in it is judged as a path
among the command's words)."""


def _declares_no_path(part: CommandPart, index: int) -> bool:
    """Whether ``part.argv[index]`` is a variable ``export`` (or ``declare``...) sets without
    the shell computing a path there: a value taken as written (``export
    NODE_ENV=production``; the analysis counts the word as computed since such a builtin
    reads ``NAME[SUBSCRIPT]``, but no subscript is there), or a value of ``PATH`` (``export
    PATH=$HOME/bin:$PATH``), where programs are looked up, no file written."""
    word = part.argv[index]
    return part.argv[0] in _DECLARING and (
        word.startswith("PATH=") or _PLAIN_DECLARATION.fullmatch(word) is not None
    )


def _filled_paths(parts: tuple[CommandPart, ...], position: int, cwd: Path) -> str | None:
    """What ``parts[position]`` may write without a word naming it that may be a protected
    path, or None: a word a wrapper fills in when it runs (``xargs``'s input, the path
    ``find -exec`` puts in place of ``{}``), unless the program only prints or reads, and the
    paths ``find -delete`` deletes; a path a find finds counts only when that find may reach a
    protected path (``found_paths``). ``cwd`` is the resolved working folder."""
    part = parts[position]
    if is_find(part) and writes_unnamed(part):
        find, shown = part, f"every path `{part.text}` finds"
    else:
        filled = _filled_indexes(parts, position)
        if not filled:
            return None
        wrapper, size = part.wrappers[-1], len(part.argv)
        first = filled[0]
        shown = (
            f"the words {wrapper} appends"
            if first >= size
            else f"{part.argv[first]} (filled in by {wrapper})"
        )
        found_by = running_find(parts, position)
        # a word built from a found path (`{}.bak`) is a new name, which may be protected
        if found_by is None or any(
            i >= size or not FOUND_PATH_WORD.fullmatch(part.argv[i]) for i in filled
        ):
            return shown
        find = found_by
    if reaches_only_unprotected(find, cwd, start_folders(parts, cwd)):
        return None
    return shown


def _filled_indexes(parts: tuple[CommandPart, ...], position: int) -> tuple[int, ...]:
    """The indexes in its ``argv`` of the words ``parts[position]`` is given by a wrapper when
    it runs (``len(argv)`` for those it adds after the last: ``CommandPart.fed``), unless the
    program only prints or, on the read-only list, only reads (``xargs grep x``,
    ``find src -exec wc -l {} +``), or is a wrapper passing them all on to the command it
    runs, a part judged by itself (``xargs nice grep x``)."""
    part = parts[position]
    if not part.fed or part.argv[0] in OUTPUT_ONLY:
        return ()
    if _only_reads(attrs.evolve(part, wrappers=())):  # xargs is a part of its own
        return ()
    inner = parts[position + 1] if position + 1 < len(parts) else None
    if (
        inner is not None
        and inner.wrappers[:-1] == part.wrappers
        and len(inner.fed) == len(part.fed)
    ):
        return ()
    return part.fed


def _writes_nothing(analysis: CommandAnalysis) -> bool:
    """Whether every part of a command (all found) only reads, wherever its words lead, or
    only moves the shell (``cd $DIR && ls``, ``cat /proc/self/cwd/x``), and no redirection
    writes: then no protected path can change, wherever the command is."""
    return all(
        (part.argv[:1] in FOLDER_MOVES or _only_reads(part))
        and all(_writes_no_file(redirect) for redirect in part.redirects)
        for part in analysis.parts
    )


def _writes_no_file(redirect: Redirect) -> bool:
    """Whether a redirection reads, or writes only to ``/dev/null`` or a descriptor
    (``2>&1``)."""
    operator, target = redirect.operator.lstrip("0123456789"), redirect.target
    if operator.startswith("<") and operator != "<>":
        return True
    return target == "/dev/null" or (operator == ">&" and (target.isdigit() or target == "-"))


def _only_reads(part: CommandPart) -> bool:
    """Whether ``part`` is on the read-only list once the words the shell computes or a
    wrapper fills in are taken as they are written (wherever they lead, such a program writes
    none of them)."""
    literal = attrs.evolve(part, expanded=(), redirects=(), fed=(), found_paths=())
    analysis = CommandAnalysis(command=part.text, parts=(literal,))
    return _judge(analysis, cwd="/", readable_roots=("/",)).read_only


def _judge(
    analysis: CommandAnalysis, *, cwd: str, readable_roots: tuple[str, ...]
) -> ReadOnlyVerdict:
    return judge_read_only(
        analysis,
        cwd=cwd,
        readable_roots=readable_roots,
        home=str(Path.home()),
        resolve=os.path.realpath,
        resolve_under=resolved_under,
    )


class _Output:
    """Combined output, keeping only what will be shown (a command may print gigabytes),
    each chunk also given to ``progress`` as it is read."""

    def __init__(self, progress: CommandProgress) -> None:
        self.kept = bytearray()
        self.total_bytes = 0
        self.progress = progress

    async def collect(self, process: asyncio.subprocess.Process) -> None:
        if process.stdout is None:  # only when the caller asked for no pipe
            return
        while chunk := await process.stdout.read(_READ_CHUNK):
            self.total_bytes += len(chunk)
            room = _KEEP_BYTES - len(self.kept)
            if room > 0:
                self.kept += chunk[:room]
            self.progress.add(chunk)

    def text(self) -> str:
        text = self.kept.decode("utf-8", errors="replace")
        if len(text) <= MAX_OUTPUT_CHARS and self.total_bytes == len(self.kept):
            return text.rstrip("\n")
        shown = text[:MAX_OUTPUT_CHARS]
        return (
            f"{shown}\n\n(output cut: showing the first {len(shown):,} characters of "
            f"about {self.total_bytes:,} bytes)"
        )


async def _start(
    command: str, cwd: str | os.PathLike[str], *, read_only: bool
) -> asyncio.subprocess.Process:
    """Start ``bash -c command`` as the leader of a new process group.

    A cancellation that lands while the process is being set up must still kill the whole
    group: left to itself, asyncio kills only the shell then, and whatever the command had
    already put in the background lives on. So the start is shielded, and a cancelled caller
    waits for it to finish before killing the group and re-raising.
    """
    starting = asyncio.ensure_future(
        asyncio.create_subprocess_exec(
            "bash",
            "-c",
            command,
            cwd=cwd,
            env=_environment(read_only=read_only),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )
    )
    try:
        return await asyncio.shield(starting)
    except asyncio.CancelledError:
        await _kill_group(await starting)
        raise


_UNSET = ("CDPATH", "OLDPWD")
"""Left out of the command's environment: with ``CDPATH`` set, ``cd src`` may leave the
working folder, which the read-only judgement of ``cd src && cat x`` assumes it does not; an
``OLDPWD`` inherited from the terminal that started us is where ``cd -`` and ``~-`` would
lead (``cd - && rm -rf .config``), and the checks take those as a folder the command itself
entered before (``paths.expand_home``)."""


def _environment(*, read_only: bool) -> dict[str, str]:
    """The command's environment: ours without ``CDPATH`` and ``OLDPWD``, and ``PATH``
    without its empty or relative entries, which name the working folder: a file the agent
    wrote there (``./ls``, ``./bash``) must never be what ``ls`` or the shell itself runs.

    git is told to use a folder as a bare repository only when named (``--git-dir``): plain
    files the agent may write (``HEAD``, ``config``, ``refs/heads/x``, and
    ``objects/info/alternates`` pointing at the real objects) otherwise make a folder one,
    whose ``config`` runs programs (``diff.external``) for a read-only ``git diff`` there.

    A command run as read-only also gets ``GIT_NO_LAZY_FETCH=1``: in a partial clone, git then
    does not fetch the objects a read needs over the network (``git_reads``); other commands,
    which someone allowed, fetch as git normally does.
    """
    environment = {name: value for name, value in os.environ.items() if name not in _UNSET}
    if "PATH" in environment:
        environment["PATH"] = _search_path(environment["PATH"])
    if read_only:
        environment["GIT_NO_LAZY_FETCH"] = "1"
    given = environment.get("GIT_CONFIG_COUNT", "")
    count = int(given) if given.isdigit() else 0
    environment[f"GIT_CONFIG_KEY_{count}"] = "safe.bareRepository"
    environment[f"GIT_CONFIG_VALUE_{count}"] = "explicit"
    environment["GIT_CONFIG_COUNT"] = str(count + 1)
    return environment


def _search_path(path: str) -> str:
    """``PATH`` without its empty or relative entries (which name the working folder)."""
    return os.pathsep.join(e for e in path.split(os.pathsep) if Path(e).is_absolute())


async def _kill_group(process: asyncio.subprocess.Process) -> None:
    """Kill the command's process group and reap the shell, even while being cancelled."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    # Shielded: a second cancellation must not stop the reaping (zombie, open pipe).
    await asyncio.shield(_drain(process))


async def _drain(process: asyncio.subprocess.Process) -> None:
    if process.stdout is not None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(process.stdout.read(), timeout=2)
    await process.wait()
