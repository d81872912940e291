"""The ``fsm-agent`` command: run, demo, replay, show, diff, diagram.

Start-up stays cheap: the anthropic SDK and rich are imported only by the commands that use
them, so ``replay``, ``show``, ``diff`` and ``diagram`` start in a fraction of a second.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fsm_agent.errors import FsmAgentError

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script."""
    parser = _parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "handler"):
        parser.print_help()
        return EXIT_USAGE
    try:
        result: int = args.handler(args)
    except FsmAgentError as exc:
        print(f"fsm-agent: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print("fsm-agent: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (`fsm-agent show trace | head`): stop quietly.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK
    return result


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fsm-agent",
        description="An agent loop run as an explicit state machine, with replayable traces.",
    )
    commands = parser.add_subparsers(title="commands")

    run = commands.add_parser("run", help="run a coding agent in the current folder")
    run.add_argument("prompt")
    run.add_argument(
        "--model",
        default="claude-sonnet-4-6",
        help="a Claude model name, or scripted:FILE to play a scenario file",
    )
    run.add_argument("--max-turns", type=int, default=None)
    run.add_argument("--trace", type=Path, default=None, help="trace file or folder")
    run.add_argument("--yes", action="store_true", help="answer every permission question with yes")
    run.set_defaults(handler=_cmd_run)

    demo = commands.add_parser("demo", help="an offline demo through the fake server")
    demo.add_argument("--trace", type=Path, default=None, help="where to keep the trace")
    demo.add_argument("--quiet", action="store_true", help="print only the summary")
    demo.set_defaults(handler=_cmd_demo)

    replay = commands.add_parser("replay", help="replay traces and check every record")
    replay.add_argument("paths", nargs="+", type=Path, help="trace files or folders")
    replay.add_argument(
        "--allow-truncated",
        action="store_true",
        help="accept a trace cut short (no end record, or a cut-off last line)",
    )
    replay.set_defaults(handler=_cmd_replay)

    show = commands.add_parser("show", help="a readable timeline of a trace")
    show.add_argument("path", type=Path)
    show.add_argument("--html", type=Path, default=None, help="also write an HTML timeline")
    show.set_defaults(handler=_cmd_show)

    diff = commands.add_parser("diff", help="the first point where two traces differ")
    diff.add_argument("a", type=Path)
    diff.add_argument("b", type=Path)
    diff.set_defaults(handler=_cmd_diff)

    diagram = commands.add_parser("diagram", help="mermaid diagrams of the machine tables")
    diagram.add_argument("--trace", type=Path, default=None, help="highlight this trace's path")
    diagram.set_defaults(handler=_cmd_diagram)
    return parser


# --- run and demo -------------------------------------------------------------------------------


def _cmd_run(args: argparse.Namespace) -> int:
    import asyncio  # noqa: PLC0415

    from fsm_agent.core.config import LoopConfig  # noqa: PLC0415
    from fsm_agent.runtime.agent import Agent  # noqa: PLC0415
    from fsm_agent.runtime.permissions import PermissionPolicy  # noqa: PLC0415
    from fsm_agent.toolbox import default_tools  # noqa: PLC0415

    model: Any
    if args.model.startswith("scripted:"):
        from fsm_agent.testing.scenario import ScriptedModel, load_scenario  # noqa: PLC0415

        model = ScriptedModel(load_scenario(args.model.removeprefix("scripted:")))
    else:
        key = os.environ.get("ANTHROPIC_API_KEY")
        if not key:
            print(
                "fsm-agent: ANTHROPIC_API_KEY is not set, so Claude cannot be reached.\n"
                "  Set it to run against Claude, play a scenario offline with\n"
                "  --model scripted:FILE, or try `fsm-agent demo`.",
                file=sys.stderr,
            )
            return EXIT_USAGE
        from fsm_agent.runtime.models import AnthropicModel  # noqa: PLC0415

        model = AnthropicModel(name=args.model, api_key=key)
    view = _LiveView(quiet=False)
    policy = PermissionPolicy(ask=_always_yes if args.yes else view.ask_on_terminal)
    agent = Agent(
        model=model,
        tools=default_tools(),
        config=LoopConfig(model=model.name, max_turns=args.max_turns),
        permissions=policy,
        trace=args.trace,
    )

    async def go() -> Any:
        result = None
        with view:
            async for update in agent.stream(args.prompt):
                result = view.show(update) or result
        return result

    result = asyncio.run(go())
    print(f"\nended: {result.terminal}   trace: {result.trace_path}")
    return EXIT_OK if result.terminal == "completed" else EXIT_FAILED


def _always_yes(_request: Any) -> bool:
    return True


def _cmd_demo(args: argparse.Namespace) -> int:
    from fsm_agent.demo import run_demo_sync  # noqa: PLC0415

    view = _LiveView(quiet=args.quiet)
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
    view.console.print(f"[bold]trace:[/] {result.trace_path}")
    view.console.print(
        f"[bold green]replayed identically[/]: {outcome.replayed_records} records, "
        f"no model, no network   ({outcome.seconds:.2f} s in all)"
    )
    return EXIT_OK if result.terminal == "completed" else EXIT_FAILED


class _LiveView:
    """Prints transitions and streamed text as they come, with a status line for the phase."""

    def __init__(self, *, quiet: bool) -> None:
        from rich.console import Console  # noqa: PLC0415

        self.console = Console(highlight=False)
        self.quiet = quiet
        self.loop_transitions: list[str] = []
        self._status: Any = None
        self._phase = "idle"
        self._text = ""  # the streamed line still arriving
        self._text_style = ""
        self._asking: Any = None  # an asyncio.Lock, made on first use inside the loop

    def __enter__(self) -> _LiveView:
        if not self.quiet:
            self._status = self.console.status("idle")
            self._status.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._status is not None:
            self._status.__exit__(None, None, None)

    async def ask_on_terminal(self, request: Any) -> bool:
        """Ask the person at the terminal, one question at a time, with the status line
        paused; the event loop keeps running meanwhile. No terminal: the answer is no."""
        import asyncio  # noqa: PLC0415

        if not sys.stdin.isatty():
            return False
        if self._asking is None:
            self._asking = asyncio.Lock()
        async with self._asking:
            self._end_text()
            if self._status is not None:
                self._status.stop()
            try:
                shown = ", ".join(f"{k}={str(v)[:60]!r}" for k, v in request.input.items())
                why = f" ({request.message})" if request.message else ""
                question = f"allow {request.tool_name}({shown}){why}? [y/N] "
                answer = await asyncio.to_thread(self.console.input, question)
            finally:
                if self._status is not None:
                    self._status.start()
        return answer.strip().lower() in {"y", "yes"}

    def show(self, update: Any) -> Any:
        from fsm_agent.runtime import agent as updates  # noqa: PLC0415

        if isinstance(update, updates.RunFinished):
            return update.result
        if isinstance(update, updates.TransitionUpdate):
            t = update.transition
            if t.machine == "loop":
                self.loop_transitions.append(t.name)
            if self.quiet:
                return None
            self._end_text()
            if t.machine == "loop":
                self.console.print(f"[cyan]⟶ {t.name}[/]  [dim]{t.source} → {t.dest}[/]")
                self._phase = update.phase
                self._update_status()
            elif t.name in {"started", "permission_granted", "permission_denied", "cancelled"}:
                self.console.print(f"   [magenta]tool {t.call_id}: {t.name}[/]")
        elif isinstance(update, updates.TextDelta) and not self.quiet:
            # Whole lines are printed; the line still arriving shows in the status line (a
            # partial line printed under a live status would be overwritten by it).
            self._text_style = "dim italic" if update.thinking else ""
            self._text += update.text
            *complete, self._text = self._text.split("\n")
            for line in complete:
                self.console.print(f"   {line}", style=self._text_style, markup=False)
            self._update_status()
        return None

    def _update_status(self) -> None:
        if self._status is None:
            return
        tail = self._text[-70:]
        self._status.update(f"phase: {self._phase}" + (f"  │ {tail}" if tail else ""))

    def _end_text(self) -> None:
        if self._text:
            self.console.print(f"   {self._text}", style=self._text_style, markup=False)
            self._text = ""


# --- traces -------------------------------------------------------------------------------------


def _cmd_replay(args: argparse.Namespace) -> int:
    from fsm_agent.errors import TraceError  # noqa: PLC0415
    from fsm_agent.trace.reader import trace_files  # noqa: PLC0415
    from fsm_agent.trace.replay import replay  # noqa: PLC0415

    files = list(trace_files(args.paths))
    if not files:
        print("fsm-agent: no trace files found", file=sys.stderr)
        return EXIT_USAGE
    failures = 0
    width = max(len(str(f)) for f in files)
    print(f"{'trace':<{width}}  {'events':>6}  {'transitions':>11}  terminal / problem")
    for path in files:
        try:
            result = replay(path, allow_truncated=args.allow_truncated)
        except TraceError as exc:
            failures += 1
            first = str(exc).splitlines()[0]
            print(f"{path!s:<{width}}  {'-':>6}  {'-':>11}  FAILED: {first}")
            for line in str(exc).splitlines()[1:]:
                print(f"{'':<{width}}  {line}")
            continue
        cut = "  (truncated: accepted)" if result.truncated else ""
        print(
            f"{path!s:<{width}}  {result.events:>6}  {result.transitions:>11}  "
            f"{result.terminal or '(not ended)'}{cut}"
        )
    print(f"\n{len(files) - failures} replayed identically, {failures} failed")
    return EXIT_FAILED if failures else EXIT_OK


def _cmd_show(args: argparse.Namespace) -> int:
    from fsm_agent.trace.reader import read_trace  # noqa: PLC0415
    from fsm_agent.trace.timeline import render_html, render_timeline  # noqa: PLC0415

    trace = read_trace(args.path, allow_truncated=True)
    print(render_timeline(trace))
    if args.html is not None:
        args.html.write_text(render_html(trace), encoding="utf-8")
        print(f"\nwrote {args.html}")
    return EXIT_OK


def _cmd_diff(args: argparse.Namespace) -> int:
    from fsm_agent.trace.replay import diff_traces  # noqa: PLC0415

    divergence = diff_traces(args.a, args.b)
    if divergence is None:
        print("the traces agree")
        return EXIT_OK
    print(f"first difference at seq {divergence.seq}:")
    print(f"  {args.a}: {divergence.expected}")
    print(f"  {args.b}: {divergence.actual}")
    return EXIT_FAILED


def _cmd_diagram(args: argparse.Namespace) -> int:
    from fsm_agent.core.diagram import render_markdown  # noqa: PLC0415

    loop_taken: set[tuple[str, str, str]] = set()
    tool_taken: set[tuple[str, str, str]] = set()
    if args.trace is not None:
        from fsm_agent.trace.reader import read_trace  # noqa: PLC0415

        for record in read_trace(args.trace, allow_truncated=True).of_kind("transition"):
            data = record.data
            key = (data["name"], data["source"], data["dest"])
            (loop_taken if data["machine"] == "loop" else tool_taken).add(key)
    print(render_markdown(loop_taken, tool_taken))
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
