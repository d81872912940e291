"""The ``fsm-agent`` command: run, fork, resume, demo, replay, show, diff, runs, diagram,
worker, approve.

Start-up stays cheap: the anthropic SDK and rich are imported only by the commands that use
them, so ``replay``, ``show``, ``diff`` and ``diagram`` start in a fraction of a second.
Every error is one clear line on stderr (a missing file, a folder where a file is needed, a
bad trace), never a traceback.
"""

from __future__ import annotations

import argparse
import atexit
import codecs
import contextlib
import io
import os
import shlex
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from fsm_agent.errors import FsmAgentError, TraceWriteFailed
from fsm_agent.temporal import commands as temporal_commands
from fsm_agent.terminal_text import shown, shown_on_one_line

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
_DEFAULT_MODEL = "claude-sonnet-4-6"


class CommandLineError(Exception):
    """A problem with what the command was given; printed as one line, exit status 2."""


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script."""
    status = _main(argv)
    if argv is None and _temporal_bridge_loaded():
        # The Temporal SDK's bridge keeps threads of its own that, when the interpreter is
        # torn down, can abort it ("Fatal Python error: PyGILState_Release", exit 134) about
        # one time in three, after any command that reached a cluster or failed to: the
        # program ends here instead, with its own status. Only as the program (no argv
        # given), never when called from Python.
        _exit_now(status)
    return status


def _temporal_bridge_loaded() -> bool:
    return "temporalio.bridge.temporal_sdk_bridge" in sys.modules


def _exit_now(status: int) -> None:
    """End the process with ``status`` without tearing the interpreter down: what is to be
    done at exit (the run store's writes, telemetry's last spans) and the output written
    first."""
    with contextlib.suppress(Exception):  # each handler's own failure is reported by it
        atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # a closed or broken stream: nothing to keep
            if stream is not None:
                stream.flush()
    os._exit(status)


def _main(argv: Sequence[str] | None) -> int:
    _tolerant_streams()
    parser = _parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "handler"):
        parser.print_help()
        return EXIT_USAGE
    args.hidden = []  # a live run's agent adds its secrets: never printed, not even by a crash
    try:
        result: int = args.handler(args)
    except CommandLineError as exc:
        print(f"fsm-agent: {shown(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    except TraceWriteFailed as exc:
        print(f"fsm-agent: {shown(str(exc))}", file=sys.stderr)
        if exc.cut_back and exc.path is not None:
            again = shown(f"fsm-agent resume {shlex.quote(exc.path)}")
            print(f"  Then carry the run on: {again}", file=sys.stderr)
        return EXIT_FAILED
    except FsmAgentError as exc:
        print(f"fsm-agent: {shown(str(exc))}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print("fsm-agent: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (`fsm-agent show trace | head`): stop quietly.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        print(shown(f"fsm-agent: {where}{exc.strerror or exc}"), file=sys.stderr)
        return EXIT_FAILED
    except Exception as exc:  # a fault nobody expected: reported, redacted
        print(_crash_report(exc, args.hidden), file=sys.stderr)
        return EXIT_FAILED
    return result


def _tolerant_streams() -> None:
    """Standard streams that never fail on a character. With an encoding that is not UTF-8
    (``PYTHONIOENCODING=ascii``, a latin-1 locale, ``LC_ALL=C`` with Python's UTF-8 mode off)
    the first arrow printed raised UnicodeEncodeError, mid-run, and a typed "é" stopped the
    chat's input reader, so the chat waited for ever. Output spells what the encoding lacks
    as backslash escapes; input keeps bytes it cannot decode as escapes, as UTF-8 mode does
    (a prompt carries them as text, see ``as_messages``)."""
    for stream, errors in (
        (sys.stdout, "backslashreplace"),
        (sys.stderr, "backslashreplace"),
        (sys.stdin, "surrogateescape"),
    ):
        if not isinstance(stream, io.TextIOWrapper) or stream.errors == errors:
            continue
        # surrogateescape writes back only the bytes read in: an arrow still fails.
        narrow = codecs.lookup(stream.encoding).name != "utf-8" and errors != "surrogateescape"
        if stream.errors == "strict" or narrow:
            with contextlib.suppress(ValueError, OSError):  # already read from, or closed
                stream.reconfigure(errors=errors)


def _crash_report(exc: Exception, hidden: Sequence[str]) -> str:
    """The traceback of a fault nobody expected (a bug: it is what a report needs), as Python
    would print it, but with no secret (DESIGN §8): an error's words may quote one. Hidden are
    API-key-shaped text, the run's agent's secrets when it was built, and the values of the
    environment variables under a credential's name (``ANTHROPIC_API_KEY``, ``GITHUB_TOKEN``:
    the ones a crash before the agent was built may quote)."""
    import traceback  # noqa: PLC0415 - only for a crash

    from fsm_agent.credentials import named_credentials  # noqa: PLC0415
    from fsm_agent.trace.redact import Redactor  # noqa: PLC0415

    found = [*hidden, *named_credentials(os.environ.items())]
    redactor = Redactor(secret for secret in found if len(secret) >= 4)  # as an agent keeps
    return shown(redactor.text("".join(traceback.format_exception(exc))).rstrip("\n"))


def _parser() -> argparse.ArgumentParser:
    import fsm_agent  # noqa: PLC0415 - the version only

    parser = argparse.ArgumentParser(
        prog="fsm-agent",
        description="An agent loop run as an explicit state machine, with replayable traces.",
    )
    parser.add_argument("--version", action="version", version=f"fsm-agent {fsm_agent.__version__}")
    commands = parser.add_subparsers(title="commands")

    run = commands.add_parser("run", help="run a coding agent in the current folder")
    run.add_argument("prompt", help="what to ask the agent")
    _conversation_options(run)
    _live_options(run)
    temporal_commands.add_run_options(run)
    run.set_defaults(handler=_cmd_run)

    chat = commands.add_parser("chat", help="a conversation: each line of input is the next prompt")
    _conversation_options(chat)
    _live_options(chat)
    chat.set_defaults(handler=_cmd_chat)

    fork = commands.add_parser(
        "fork", help="replay a trace up to a seq, then carry the run on live"
    )
    fork.add_argument("trace_file", type=Path, help="the recorded trace (.jsonl)")
    fork.add_argument(
        "--at", type=_at_least(1), required=True, metavar="SEQ", help="the seq to replay up to"
    )
    _live_options(fork)
    _carry_option(fork)
    fork.set_defaults(handler=_cmd_fork)

    resume = commands.add_parser("resume", help="rebuild a crashed run from its trace, go on")
    resume.add_argument("trace_file", type=Path, help="the crashed run's trace (.jsonl)")
    resume.add_argument(
        "--rerun",
        action="store_true",
        help="run again tool calls that may already have run (default: answer them with an "
        "error result saying so; a subagent's call picks the subagent up from its own trace); "
        "refused, nothing run, when such a call's recorded input was redacted",
    )
    _carry_option(resume)
    _live_options(resume)
    resume.set_defaults(handler=_cmd_resume)

    demo = commands.add_parser("demo", help="an offline demo through the fake server")
    # Kept as typed: Path() would drop the trailing "/" that makes a target a folder.
    demo.add_argument(
        "--trace", default=None, help="trace file, or folder (ending in / or existing)"
    )
    demo.add_argument("--quiet", action="store_true", help="print only the summary")
    demo.set_defaults(handler=_cmd_demo)

    replay = commands.add_parser("replay", help="replay traces and check every record")
    replay.add_argument("paths", nargs="+", type=Path, help="trace files or folders")
    replay.add_argument(
        "--allow-truncated",
        action="store_true",
        help="accept a trace cut short (a crashed run: no end record, or a cut-off last "
        "line) and check what precedes the cut",
    )
    replay.add_argument(
        "--export-spans",
        action="store_true",
        help="also export each replayed run's OpenTelemetry spans to the collector the OTEL_* "
        "variables name (replay alone emits none; needs the otel extra)",
    )
    replay.set_defaults(handler=_cmd_replay)

    show = commands.add_parser(
        "show", help="a readable timeline of a trace, or the list of a folder's traces"
    )
    show.add_argument("path", type=Path, help="a trace file, or a folder of traces")
    show.add_argument(
        "--html",
        type=Path,
        default=None,
        metavar="FILE",
        help="also write an HTML timeline (and, beside it, one per subagent the run started, "
        "linked both ways)",
    )
    show.set_defaults(handler=_cmd_show)

    diff = commands.add_parser("diff", help="the first point where two traces differ")
    diff.add_argument("a", type=Path, help="the first trace")
    diff.add_argument("b", type=Path, help="the second trace")
    diff.set_defaults(handler=_cmd_diff)

    _runs_parser(commands)
    temporal_commands.add_parsers(commands)

    diagram = commands.add_parser("diagram", help="mermaid diagrams of the machine tables")
    diagram.add_argument("--trace", type=Path, default=None, help="highlight this trace's path")
    diagram.set_defaults(handler=_cmd_diagram)
    return parser


def _at_least(minimum: int) -> Callable[[str], int]:
    """An argparse type: a whole number of at least ``minimum`` (a usage error otherwise,
    exit status 2, as for any malformed option)."""

    def number(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected {minimum} or more, got {value}")
        return value

    return number


def _carry_option(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--keep-session-rules",
        action="store_true",
        help="let the allow rules the recording's 'always' answers added allow calls from here "
        "on (default: asked at a terminal, else not carried over: their calls ask again)",
    )


def _live_options(command: argparse.ArgumentParser) -> None:
    """The options of the commands that run an agent live (run, fork, resume)."""
    command.add_argument(
        "--model",
        default=_DEFAULT_MODEL,
        help="a Claude model name, or scripted:FILE to play a scenario file",
    )
    command.add_argument(
        "--max-turns", type=_at_least(1), default=None, help="end the run after this many turns"
    )
    command.add_argument(
        "--trace",
        default=None,  # a str: Path() would drop the trailing "/" that makes it a folder
        help="trace file, or folder (ending in / or existing); default: the user state folder",
    )
    command.add_argument(
        "--yes", action="store_true", help="answer every permission question with yes"
    )
    command.add_argument(
        "--permission-mode",
        choices=["default", "acceptEdits", "plan", "bypassPermissions", "dontAsk"],
        default=None,
        help="how calls that need permission are decided (default: the settings' defaultMode, "
        "else default); without a terminal, what the mode does not allow is denied and the "
        "trace says no one was asked",
    )
    command.add_argument(
        "--settings",
        type=Path,
        action="append",
        default=[],
        metavar="FILE",
        help="a settings file in Claude Code's format, applied on top of "
        "~/.claude/settings.json, .claude/settings.json and .claude/settings.local.json "
        "(repeatable)",
    )
    command.add_argument(
        "--trust-folder",
        action="store_true",
        help="apply what this folder's .claude/settings*.json grant (allow rules, hooks, a "
        "mode, extra folders) without asking; untrusted, they are asked about at a terminal "
        "and otherwise left out (their deny and ask rules always apply)",
    )


def _conversation_options(command: argparse.ArgumentParser) -> None:
    """Where a conversation picks up (run, chat)."""
    where = command.add_mutually_exclusive_group()
    where.add_argument(
        "--continue",
        dest="continue_latest",
        action="store_true",
        help="carry on the latest conversation of the trace folder",
    )
    where.add_argument(
        "--resume",
        default=None,
        metavar="RUN",
        help="carry on the conversation of this trace file or indexed run id",
    )
    command.add_argument(
        "--full-transcript-every",
        type=_at_least(1),
        default=None,
        metavar="N",
        help="write the whole transcript into a turn's trace once in N turns (default 32); "
        "the turns between begin in the trace of the turn before, in the same folder "
        "(1: every turn's trace reads alone)",
    )


def _runs_parser(commands: Any) -> None:
    """``runs``: list and filter indexed runs; ``runs import FOLDER``: index traces."""
    runs = commands.add_parser("runs", help="list and filter runs in the run store")
    runs.add_argument("--store", default=None, help="store URL or SQLite file (FSM_AGENT_STORE)")
    runs.add_argument("--terminal", default=None, help="runs that ended with this reason")
    runs.add_argument(
        "--transition",
        action="append",
        default=[],
        metavar="NAME[:MIN]",
        help="runs that took this transition at least MIN times (default 1; repeatable)",
    )
    runs.add_argument("--tool", default=None, help="runs that called this tool")
    runs.add_argument("--denied", action="store_true", help="runs in which a call was denied")
    runs.add_argument("--since", default=None, help="runs started at or after this ISO time")
    runs.add_argument("--model", default=None, help="runs of this model")
    runs.add_argument(
        "--limit", type=_at_least(0), default=None, help="at most this many, newest first"
    )
    runs.add_argument("--json", action="store_true", help="one JSON object per line")
    runs.set_defaults(handler=_cmd_runs)
    actions = runs.add_subparsers(title="actions")
    importing = actions.add_parser("import", help="index the traces of folders or files")
    importing.add_argument("paths", type=Path, nargs="+", help="trace files or folders")
    importing.set_defaults(handler=_cmd_runs_import)


# --- run, fork, resume and demo -----------------------------------------------------------------


def _model(spec: str) -> Any:
    """The model a live command asked for: ``scripted:FILE`` or a Claude model name."""
    if spec.startswith("scripted:"):
        from fsm_agent.testing.scenario import ScriptedModel, load_scenario  # noqa: PLC0415

        file = Path(spec.removeprefix("scripted:"))
        if not file.is_file():
            what = "is a folder" if file.is_dir() else "does not exist"
            raise CommandLineError(f"--model scripted:{file}: the scenario file {what}")
        return ScriptedModel(load_scenario(file))
    key = os.environ.get("ANTHROPIC_API_KEY")
    if not key:
        raise CommandLineError(
            "ANTHROPIC_API_KEY is not set, so Claude cannot be reached.\n"
            "  Set it to run against Claude, play a scenario offline with\n"
            "  --model scripted:FILE, or try `fsm-agent demo`."
        )
    from fsm_agent.runtime.models import AnthropicModel  # noqa: PLC0415

    return AnthropicModel(name=spec, api_key=key)


def _live(args: argparse.Namespace, stream: Any, *, read_line: Any = None) -> int:
    """Drive a live run (``stream`` makes its updates from an agent), print it, and return the
    exit status: 0 for ``completed``, 1 for any other terminal reason."""
    import asyncio  # noqa: PLC0415

    from fsm_agent.core.config import LoopConfig  # noqa: PLC0415
    from fsm_agent.runtime.agent import Agent  # noqa: PLC0415
    from fsm_agent.runtime.folder_trust import settings_for_folder  # noqa: PLC0415
    from fsm_agent.runtime.permissions import PermissionMode, PermissionPolicy  # noqa: PLC0415
    from fsm_agent.terminal_view import LiveView, stdin_is_terminal  # noqa: PLC0415
    from fsm_agent.toolbox import default_tools  # noqa: PLC0415

    # Settings first: a bad settings file is reported before anything else happens. What the
    # folder's own files grant needs the person's trust (a cloned repository's hooks).
    settings = settings_for_folder(
        Path.cwd(),
        extra_files=args.settings,
        trust_flag=args.trust_folder,
        ask=_ask_folder_trust if stdin_is_terminal() else None,
        warn=lambda text: print(shown(f"fsm-agent: {text}"), file=sys.stderr),
    )
    model = _model(args.model)
    view = LiveView() if read_line is None else LiveView(read_line=read_line)
    ask: Any = None  # nobody to ask: the mode decides, and the trace says no one was asked
    if args.yes:
        ask = _always_yes
    elif stdin_is_terminal():
        ask = view.ask
    mode = PermissionMode(args.permission_mode or "default")
    agent = Agent(
        model=model,
        tools=default_tools(),
        config=LoopConfig(model=model.name, max_turns=args.max_turns),
        permissions=PermissionPolicy(
            mode=mode, ask=ask, bypass_available=mode is PermissionMode.BYPASS
        ),
        settings=settings,
        trace=args.trace,
    )
    # The view answers the agent's questions, so it was made first; it hides what the agent
    # hides (its model's, store's, MCP servers' and telemetry's credentials) from here on.
    view.hide(agent.secrets)
    args.hidden += agent.secrets

    async def go() -> Any:
        result = None
        with view:
            async for update in stream(agent):
                result = view.show(update) or result
        return result

    result = asyncio.run(go())
    if result is None:  # a chat whose input ended before the first prompt
        print("\nended: no prompt was given")
        return EXIT_OK
    seconds = f"{result.duration_s:.1f} s"
    print(
        f"\nended: {result.terminal}   turns: {result.turns}   {seconds}   "
        f"trace: {result.trace_path}"
    )
    return EXIT_OK if result.terminal == "completed" else EXIT_FAILED


def _cmd_run(args: argparse.Namespace) -> int:
    if args.temporal:
        # The workers' factory builds the agent: options that shape a local one do not apply.
        local = [
            option
            for option, given in (
                ("--model", args.model != _DEFAULT_MODEL),
                ("--max-turns", args.max_turns is not None),
                ("--permission-mode", args.permission_mode is not None),
                ("--settings", bool(args.settings)),
                ("--trust-folder", args.trust_folder),
            )
            if given
        ]
        if local:
            raise CommandLineError(
                f"{', '.join(local)}: with --temporal the workers' agent factory decides "
                "these (pass what it needs with --params)"
            )
        return temporal_commands.run_command(args)
    if args.data_converter is not None:  # a local run keeps no history to protect
        raise CommandLineError("--data-converter: only with --temporal")
    # Always the turn of a session, so a later ``run --continue`` can carry it on.
    return _live(args, lambda agent: _session(agent, args).stream(args.prompt))


def _cmd_chat(args: argparse.Namespace) -> int:
    from fsm_agent.chat import ChatInput, chat  # noqa: PLC0415
    from fsm_agent.terminal_view import stdin_is_terminal  # noqa: PLC0415

    at_terminal = stdin_is_terminal()
    lines = ChatInput(queue_while_working=at_terminal)
    return _live(
        args,
        lambda agent: chat(_session(agent, args), lines, show_prompt=at_terminal),
        read_line=lines.read_answer,
    )


def _session(agent: Any, args: argparse.Namespace) -> Any:
    """The session a run or chat talks in: a new one, the latest, or the one named."""
    from fsm_agent.trace.conversation import latest_turn  # noqa: PLC0415
    from fsm_agent.trace.location import default_trace_folder, names_folder  # noqa: PLC0415

    every = args.full_transcript_every
    if args.resume is not None:
        return agent.session(resume=_trace_file(Path(args.resume)), full_transcript_every=every)
    if not args.continue_latest:
        return agent.session(full_transcript_every=every)
    if args.trace is None:
        folder = default_trace_folder()
    elif names_folder(args.trace):
        folder = Path(args.trace)
    else:
        folder = Path(args.trace).parent

    def passed_over(file: Path, problem: Exception) -> None:
        reason = str(problem).splitlines()[0]
        print(shown(f"fsm-agent: --continue passes over {file}: {reason}"), file=sys.stderr)

    latest = latest_turn(folder, passed_over=passed_over)
    if latest is None:
        raise CommandLineError(f"--continue: no earlier conversation in {folder}")
    return agent.session(resume=latest, full_transcript_every=every)


def _cmd_fork(args: argparse.Namespace) -> int:
    from fsm_agent.trace.replay import fork  # noqa: PLC0415

    point = fork(_trace_file(args.trace_file), args.at)
    _refuse_ended(point, "fork")
    carry = _carries_rules(getattr(point.core, "session_permission_rules", ()), args)
    return _live(args, lambda agent: agent.continue_from(point, carry_session_rules=carry))


def _cmd_resume(args: argparse.Namespace) -> int:
    from fsm_agent.trace.replay import resume  # noqa: PLC0415

    point = resume(_trace_file(args.trace_file))
    _refuse_ended(point, "resume")
    for item in point.unsafe_to_rerun:
        verb = "will run again" if args.rerun else "is answered with an error, not re-run"
        print(shown(f"in flight at the crash: {item.effect} — {verb}"), file=sys.stderr)
    carry = _carries_rules(getattr(point.core, "session_permission_rules", ()), args)
    return _live(
        args,
        lambda agent: agent.continue_from(
            point, rerun=lambda _: args.rerun, carry_session_rules=carry
        ),
    )


def _refuse_ended(point: Any, command: str) -> None:
    """Refuse to carry on a point that holds the run's ``end`` record: the run would only
    be copied into a new trace, and ``ended: completed`` said as if something had run."""
    ended = [record for record in point.records if record.get("record") == "end"]
    if not ended:
        return
    how = f"the recorded run ended ({shown_on_one_line(str(ended[-1].get('terminal')))})"
    if command == "fork":
        raise CommandLineError(
            f"--at {point.at_seq}: {how} by this seq, so there is nothing to carry on: fork "
            "at an earlier seq (fsm-agent show TRACE numbers the records)"
        )
    raise CommandLineError(
        f"{how}: there is nothing to resume (resume carries on a run that crashed). Fork it "
        "at an earlier seq to take another path, or ask its conversation a new question with "
        'fsm-agent run --resume TRACE "prompt"'
    )


def _carries_rules(rules: Sequence[str], args: argparse.Namespace) -> bool:
    """Whether the allow rules a recording's "always" answers added go on allowing calls: a
    trace may come from someone else, and hold ``Bash(*)``."""
    from fsm_agent.terminal_view import stdin_is_terminal  # noqa: PLC0415

    if not rules:
        return True
    listed = shown_on_one_line(", ".join(rules))
    if args.keep_session_rules:
        keep = True
    elif stdin_is_terminal():
        print(f"The recording's 'always' answers added these allow rules: {listed}")
        try:
            answer = input("Let them allow calls from here on? [y/N]: ")
            keep = answer.strip().lower() in {"y", "yes"}
        except EOFError:
            keep = False
    else:
        keep = False
    if not keep:
        print(
            f"fsm-agent: not carried over, their calls ask again: allow rules {listed} "
            "(--keep-session-rules carries them)",
            file=sys.stderr,
        )
    return keep


def _ask_folder_trust(folder: Path, granted: Sequence[str]) -> str:
    """Show what a folder's settings files grant, and ask whether to apply them."""
    print(shown(f"\nThe settings files of {folder}/.claude grant:"))
    for line in granted:  # one line each, whatever they hold
        print("  - " + shown_on_one_line(line))
    print("Their deny and ask rules apply either way.")
    question = "Apply what they grant? [o] this time, [a] always (until they change), [n] no: "
    while True:
        try:
            answer = input(question).strip().lower()
        except EOFError:
            return "no"
        if answer in {"o", "once"}:
            return "once"
        if answer in {"a", "always"}:
            return "always"
        if answer in {"n", "no", ""}:
            return "no"
        print("  please answer o, a or n")


def _always_yes(_request: Any) -> bool:
    return True


def _cmd_demo(args: argparse.Namespace) -> int:
    from fsm_agent.demo import run_demo_sync  # noqa: PLC0415
    from fsm_agent.terminal_view import LiveView  # noqa: PLC0415

    view = LiveView(quiet=args.quiet)
    with view:
        outcome = run_demo_sync(trace_path=args.trace, on_update=view.show)
    result = outcome.result
    taken = list(view.loop_transitions)
    recoveries = [
        name
        for name in (
            "max_output_tokens_recovery",
            "reactive_compact_retry",
            "stop_hook_blocking",
            "next_turn",
        )
        if name in taken
    ]
    view.console.print(
        f"\n[bold]ended:[/] {result.terminal}   [bold]loop transitions:[/] {len(taken)}   "
        f"[bold]recoveries:[/] {', '.join(recoveries)}"
    )
    view.console.print(f"[bold]permission questions:[/] {', '.join(outcome.permission_questions)}")
    view.console.print(f"[bold]trace:[/] {result.trace_path}", markup=True, highlight=False)
    view.console.print(
        f"[bold green]replayed identically[/]: {outcome.replayed_records} records, "
        f"no model, no network   ({outcome.seconds:.2f} s in all)"
    )
    return EXIT_OK if result.terminal == "completed" else EXIT_FAILED


# --- the run store -----------------------------------------------------------------------------


def _cmd_runs(args: argparse.Namespace) -> int:
    import orjson  # noqa: PLC0415

    from fsm_agent.store.opening import open_store  # noqa: PLC0415
    from fsm_agent.store.query import RunQuery, TransitionCount, parse_since  # noqa: PLC0415

    try:  # a malformed filter is a usage error, as argparse's own are
        transitions = tuple(TransitionCount.parse(text) for text in args.transition)
        since = parse_since(args.since) if args.since is not None else None
    except FsmAgentError as exc:
        raise CommandLineError(str(exc)) from exc
    query = RunQuery(
        terminal=args.terminal,
        transitions=transitions,
        tool=args.tool,
        denied=args.denied,
        since=since,
        model=args.model,
        limit=args.limit,
    )
    if args.store is not None and "://" not in args.store and not Path(args.store).exists():
        # Listing reads a store: a mistyped file name must not make an empty one and say
        # "0 runs" as if the runs were gone.
        raise CommandLineError(
            f"--store {args.store}: no such run store (fsm-agent runs --store FILE import "
            "PATH... makes one)"
        )
    store = open_store(args.store)
    try:
        found = store.runs(query)
    finally:
        store.close()
    if args.json:
        for run in found:
            print(orjson.dumps(run.to_json()).decode())
        return EXIT_OK
    print(
        f"{'run':<32}  {'started':<25}  {'terminal':<20}  {'model':<20}  turns  "
        f"{'tokens in/out':<15}  cost"
    )
    for run in found:
        tokens = f"{run.input_tokens}/{run.output_tokens}"
        cost = "-" if run.cost_usd is None else f"${run.cost_usd:.4f}"
        line = (
            f"{run.run_id:<32}  {run.started or '-':<25}  {run.terminal or '(not ended)':<20}  "
            f"{run.model:<20}  {run.turns:>5}  {tokens:<15}  {cost}"
        )
        print(shown(line))  # an imported trace's header may hold anything
    print(f"\n{len(found)} runs")
    return EXIT_OK


def _cmd_runs_import(args: argparse.Namespace) -> int:
    from fsm_agent.runtime.agent import store_credentials  # noqa: PLC0415
    from fsm_agent.store.opening import default_store_url, open_store  # noqa: PLC0415
    from fsm_agent.store.recording import import_traces  # noqa: PLC0415

    missing = [path for path in args.paths if not path.exists()]
    if missing:
        raise CommandLineError(f"no such trace file or folder: {missing[0]}")
    store = open_store(args.store)
    try:
        # The store's own password is a secret of every run it keeps.
        secrets = store_credentials(args.store or default_store_url())
        indexed, unreadable = import_traces(store, args.paths, secrets)
    finally:
        store.close()
    skipped = f"; {unreadable} unreadable traces skipped" if unreadable else ""
    print(f"indexed {indexed} runs{skipped}")
    return EXIT_FAILED if unreadable else EXIT_OK


# --- traces -------------------------------------------------------------------------------------


def _trace_file(path: Path) -> Path:
    """``path`` if it is a file, else the trace of the run of that id; or a clear error."""
    if path.is_file():
        return path
    if path.is_dir():
        raise CommandLineError(f"{path} is a folder; give one trace file (.jsonl) in it")
    found = _trace_of_run(path)
    if found is not None:
        return found
    raise CommandLineError(f"no such trace file or indexed run: {path}")


def _trace_of_run(name: Path) -> Path | None:
    """The trace of the indexed run called ``name`` (issue 13: commands accept a run id).

    Only an existing store is asked (a mistyped path must not create one), and only for a
    bare name, not a path.
    """
    from fsm_agent.store.opening import STORE_ENV, default_store_url, open_store  # noqa: PLC0415

    if len(name.parts) != 1 or name.suffix == ".jsonl":
        return None
    url = default_store_url()
    if not os.environ.get(STORE_ENV) and not Path(url).is_file():
        return None
    try:
        store = open_store(url)
        try:
            run = store.get(str(name))
        finally:
            store.close()
    except FsmAgentError:
        return None
    if run is None or not Path(run.trace_path).is_file():
        return None
    return Path(run.trace_path)


def _cmd_replay(args: argparse.Namespace) -> int:
    from fsm_agent.errors import TraceDivergence, TraceError, TraceTruncated  # noqa: PLC0415
    from fsm_agent.trace.divergence import format_divergence  # noqa: PLC0415
    from fsm_agent.trace.reader import trace_files  # noqa: PLC0415

    paths = [path if path.exists() else (_trace_of_run(path) or path) for path in args.paths]
    missing = [path for path in paths if not path.exists()]
    if missing:
        raise CommandLineError(f"no such trace file, folder or indexed run: {missing[0]}")
    files = _with_earlier_turns(paths, list(trace_files(paths)))
    if not files:
        raise CommandLineError("no trace files (*.jsonl) found")
    failures = 0
    width = max(len(str(f)) for f in files)
    print(f"{'trace':<{width}}  {'events':>6}  {'transitions':>11}  terminal / problem")
    for path in files:
        try:
            events, transitions, ending = _replay_one(path, allow_truncated=args.allow_truncated)
        except (TraceError, OSError) as exc:  # a file that cannot be read is one failed row
            failures += 1
            if isinstance(exc, OSError):
                text = f"{path}: {exc.strerror or exc}"
            elif isinstance(exc, TraceDivergence):
                text = format_divergence(_as_shown(exc, path))
            else:
                text = str(exc)
                if isinstance(exc, TraceTruncated):
                    text += "\n(use --allow-truncated to check the records before the cut)"
            first, *rest = shown(text).splitlines()
            print(f"{path!s:<{width}}  {'-':>6}  {'-':>11}  FAILED: {first}")
            for line in rest:
                print(f"{'':<{width}}  {line}")
            continue
        print(f"{path!s:<{width}}  {events:>6}  {transitions:>11}  {ending}")
        if args.export_spans:
            from fsm_agent.telemetry.export import export_trace  # noqa: PLC0415

            export_trace(path)
    print(f"\n{len(files) - failures} replayed identically, {failures} failed")
    if args.export_spans and not _spans_exported():
        return EXIT_FAILED
    return EXIT_FAILED if failures else EXIT_OK


def _spans_exported() -> bool:
    """Whether the spans ``replay --export-spans`` handed over reached the collector: each
    flushed in time and none refused (the SDK only logs a failure); says so on stderr when
    not."""
    from fsm_agent.telemetry.config import failed_span_exports, flush_telemetry  # noqa: PLC0415

    flushed = flush_telemetry()
    failed = failed_span_exports()
    if flushed and not failed:
        return True
    why = f"{failed} spans were refused or never answered" if failed else "the export timed out"
    print(f"spans not exported: {why} (OTEL_EXPORTER_OTLP_ENDPOINT)", file=sys.stderr)
    return False


def _with_earlier_turns(given: list[Path], files: list[Path]) -> list[Path]:
    """``files``, each trace file named on the command line preceded by the earlier turns of
    its conversation (a session's turn replays with the turns before it)."""
    from fsm_agent.errors import TraceError  # noqa: PLC0415
    from fsm_agent.trace.conversation import conversation_turns  # noqa: PLC0415

    named = {path for path in given if path.is_file()}
    wanted: dict[Path, None] = {}
    for path in files:
        turns = [path]
        if path in named:
            with contextlib.suppress(TraceError, OSError):  # replay reports a bad file itself
                turns = conversation_turns(path)
        wanted.update(dict.fromkeys(turns))
    return list(wanted)


def _as_shown(error: Any, path: Path) -> Any:
    """A divergence replaying ``path`` with the recorded records as ``show`` shows them (as
    it was when the file cannot be read whole: a broken line past the divergence)."""
    from fsm_agent.errors import TraceError  # noqa: PLC0415
    from fsm_agent.trace.divergence import recorded_as_shown  # noqa: PLC0415
    from fsm_agent.trace.reader import read_trace  # noqa: PLC0415

    try:
        trace = read_trace(path, allow_truncated=True).redacted()
    except TraceError:
        return error
    return recorded_as_shown(error, {record.seq: record.data for record in trace.records})


def _replay_one(path: Path, *, allow_truncated: bool) -> tuple[int, int, str]:
    """Replay one trace: (events, transitions, how it ended) for the table."""
    from fsm_agent.trace.replay import replay  # noqa: PLC0415

    result = replay(path, allow_truncated=allow_truncated)
    ending = result.terminal or "(not ended)"
    return (
        result.events,
        result.transitions,
        ending + ("  (truncated: accepted)" if result.truncated else ""),
    )


def _cmd_show(args: argparse.Namespace) -> int:
    from fsm_agent.trace.reader import read_trace  # noqa: PLC0415
    from fsm_agent.trace.run_tree_pages import write_run_pages  # noqa: PLC0415
    from fsm_agent.trace.timeline import render_timeline  # noqa: PLC0415

    if args.path.is_dir():
        if args.html is not None:
            raise CommandLineError(f"{args.path} is a folder; --html needs one trace file")
        return _list_traces(args.path)
    from fsm_agent.trace.conversation import turn_label  # noqa: PLC0415

    # Redacted: the trace may come from another program, with credentials in clear.
    trace = read_trace(_trace_file(args.path), allow_truncated=True).redacted()
    label = turn_label(trace.header.meta)
    if label is not None:
        print(f"({label})")
    print(shown(render_timeline(trace)))  # what the model and the tools said, as written
    if args.html is not None:
        if args.html.is_dir():
            raise CommandLineError(f"--html {args.html} is a folder; give a file name")
        # Issue 14: the pages of the subagents the run started are written beside it, linked.
        written = write_run_pages(trace, args.html)
        print(f"\nwrote {', '.join(str(page) for page in written)}")
    return EXIT_OK


def _list_traces(folder: Path) -> int:
    """``show FOLDER``: one line per trace in it, newest last."""
    from fsm_agent.errors import TraceError  # noqa: PLC0415
    from fsm_agent.trace.reader import read_trace, trace_files  # noqa: PLC0415

    files = list(trace_files([folder]))
    if not files:
        raise CommandLineError(f"no trace files (*.jsonl) in {folder}")
    print(f"{len(files)} traces in {folder} (show one with: fsm-agent show FILE)")
    for path in files:
        try:
            trace = read_trace(path, allow_truncated=True)
        except (TraceError, OSError) as exc:
            why = (exc.strerror or str(exc)) if isinstance(exc, OSError) else str(exc)
            print(shown(f"  {path.relative_to(folder)}  unreadable: {why.splitlines()[0]}"))
            continue
        started = trace.header.meta.get("started", "")
        ends = list(trace.of_kind("end"))
        terminal = ends[-1].data["terminal"] if ends else "(not ended)"
        turn = trace.header.meta.get("turn")
        of_session = f"  turn {turn}" if isinstance(turn, int) else ""
        line = (
            f"  {path.relative_to(folder)}  {started}  {len(trace.records)} records  "
            f"{terminal}{of_session}"
        )
        print(shown(line))
    return EXIT_OK


def _cmd_diff(args: argparse.Namespace) -> int:
    from fsm_agent.trace.divergence import format_divergence  # noqa: PLC0415
    from fsm_agent.trace.reader import read_trace  # noqa: PLC0415
    from fsm_agent.trace.replay import diff_traces, shown_divergence  # noqa: PLC0415

    # A crashed run's trace (its last line cut off) is compared up to the cut, and said so.
    first = read_trace(_trace_file(args.a), allow_truncated=True)
    second = read_trace(_trace_file(args.b), allow_truncated=True)
    for given, trace in ((args.a, first), (args.b, second)):
        if trace.truncated:
            print(shown(f"({given}: its last line is cut off; compared up to the cut)"))
    divergence = diff_traces(first, second)
    if divergence is None:
        print("the traces agree")
        return EXIT_OK
    print(f"first difference at seq {divergence.seq} ({args.a} recorded, {args.b} replayed):")
    print(shown(format_divergence(shown_divergence(divergence, first, second).to_error())))
    return EXIT_FAILED


def _cmd_diagram(args: argparse.Namespace) -> int:
    from fsm_agent.core.diagram import render_markdown  # noqa: PLC0415

    loop_taken: set[tuple[str, str, str]] = set()
    tool_taken: set[tuple[str, str, str]] = set()
    if args.trace is not None:
        from fsm_agent.trace.reader import read_trace  # noqa: PLC0415

        trace = read_trace(_trace_file(args.trace), allow_truncated=True)
        for record in trace.of_kind("transition"):
            data = record.data
            key = (data["name"], data["source"], data["dest"])
            (loop_taken if data["machine"] == "loop" else tool_taken).add(key)
    print(render_markdown(loop_taken, tool_taken))
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
