"""What a person at the terminal sees of a live run, and how they answer permission questions.

The view prints each loop transition, each tool call with a summary of its input and of its
result, a tool's progress line by line (a command's output as it runs), model failures and
retries with their reason and delay as they happen, and streamed thinking apart from streamed
text. A status line shows the current phase.

A permission question shows the tool, its input and the reason it is asked, and offers
allow once, allow always (for the rest of the session) or deny with a message for the model.
While it waits, everything else the run would print is held back and printed after the
answer, so nothing lands on the question's line. Texts are printed without rich markup, so
``[y/N]`` or a file name in brackets shows as written, and with every character a terminal
would obey or hide spelled out (:mod:`~fsm_agent.terminal_text`), so a model cannot move the
cursor, erase a line or reorder what is shown.

The question shows the input a person decides on whole: each line of a value on a line of
its own, marked as the value's (so none can pass for a line of the question), and a value
longer than :data:`QUESTION_CHARS` by its start and end, the count of characters left out
and a ``v`` answer that shows all of it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import shutil
import sys
import threading
from collections.abc import Callable, Iterable
from typing import Any

from rich.console import Console
from rich.text import Text

from fsm_agent.core.messages import (
    AssistantMessage,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)
from fsm_agent.runtime import agent as updates
from fsm_agent.runtime.permissions import PermissionAnswer, PermissionRequest
from fsm_agent.terminal_text import shown
from fsm_agent.trace.redact import Redactor
from fsm_agent.trace.stream_text_holdback import StreamTextHoldback, progress_key

SUMMARY_CHARS = 100
"""How much of a tool's input or result a summary line shows."""

PROGRESS_LINE_CHARS = 200
"""How much of one line of a tool's progress (a command's output as it runs) is shown."""

PROGRESS_TEXT_LINES = 20
"""How many lines of one progress text are shown (its last ones): a command reports at most
every half second, so a flood scrolls by at about 40 lines a second, not thousands."""

_ALWAYS = {"a", "always"}
_ONCE = {"y", "yes"}
_DENY = {"n", "no", ""}
_VIEW = {"v", "view"}

QUESTION_CHARS = 2000
"""A permission question shows an input value of up to this many characters whole; a longer
one by its start and end, with the count of what is not shown and a way to see it all."""
QUESTION_HEAD = 1200
QUESTION_TAIL = 600


def summarize_input(tool_input: dict[str, Any], limit: int = SUMMARY_CHARS) -> str:
    """``key=value`` pairs of a tool input on one line, cut to ``limit`` characters."""
    pairs = " ".join(f"{key}={_one_line(value)!r}" for key, value in tool_input.items())
    return _cut(pairs, limit)


def result_text(content: object) -> str:
    """A tool result's text: the string, or its blocks' texts joined."""
    if isinstance(content, str):
        return content
    return " ".join(str(getattr(block, "text", "")) for block in content or ())  # type: ignore[attr-defined]


def summarize_result(content: object, limit: int = SUMMARY_CHARS) -> str:
    """The first line of a tool result, cut to ``limit``, with the line count when longer."""
    lines = result_text(content).splitlines() or [""]
    more = f"  (+{len(lines) - 1} lines)" if len(lines) > 1 else ""
    return _cut(lines[0], limit) + more


def _one_line(value: object) -> str:
    return " ".join(str(value).split())


def _as_redrawn(line: str) -> str:
    """A line of a command's output as a terminal would leave it: a carriage return starts the
    line again (a progress bar redraws itself: ``\r 10%\r 20%`` is `` 20%``), and one that
    ends the line (``\r\n``) is its end."""
    return line.rstrip("\r").rpartition("\r")[2]


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


async def _asked_aside(question: Callable[[], PermissionAnswer]) -> PermissionAnswer:
    """``question()``, run in a thread of its own and awaited.

    Not in the loop's executor: a question whose run is cancelled (Ctrl-C while it waits)
    stays blocked in ``input()``, and ``asyncio.run`` waits for the executor's threads before
    it returns, so the command hung, showing nothing, until Enter was pressed for the
    question and for its message. A daemon thread does not hold the command up; what it
    reads once nobody waits is dropped.
    """
    loop = asyncio.get_running_loop()
    answered: asyncio.Future[PermissionAnswer] = loop.create_future()

    def deliver(settle: Callable[[], None]) -> None:
        def settled() -> None:
            if not answered.done():  # not cancelled meanwhile
                settle()

        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits
            loop.call_soon_threadsafe(settled)

    def ask() -> None:
        try:
            answer = question()
        except Exception as exc:  # handed to the awaiting task, raised there
            deliver(functools.partial(answered.set_exception, exc))
        else:
            deliver(functools.partial(answered.set_result, answer))

    threading.Thread(target=ask, name="fsm-agent-question", daemon=True).start()
    return await answered


def terminal_console() -> Console:
    """A console on standard output, as wide and as tall as the terminal.

    ``COLUMNS=0`` or ``LINES=0`` in the environment (a container or a script may set them
    so) would be taken as the size: at width 0 every line prints as nothing, a permission
    question's tool, input and reason among them, so the person would answer a question they
    cannot see. A size of 0 is read as unset: the terminal's own, else 80 by 25.
    """
    width = height = None
    size = shutil.get_terminal_size()  # reads COLUMNS and LINES only when they are above 0
    if os.environ.get("COLUMNS", "").strip().isdigit() and int(os.environ["COLUMNS"]) < 1:
        width = size.columns
    if os.environ.get("LINES", "").strip().isdigit() and int(os.environ["LINES"]) < 1:
        height = size.lines
    return Console(highlight=False, width=width, height=height)


class LiveView:
    """Prints a run's updates as they come; asks permission questions at the terminal.

    Args:
        quiet: print nothing but what the caller prints itself (transitions are still
            counted in ``loop_transitions``).
        console: where to print (default: a rich console on stdout).
        read_line: reads one answer line (default: ``input``); replaceable for tests.
        secrets: strings never printed (the agent's secrets, its API key among them): a model
            or a tool that echoes one shows ``[REDACTED]`` here, as in the trace (DESIGN §8).
    """

    def __init__(
        self,
        *,
        quiet: bool = False,
        console: Console | None = None,
        read_line: Callable[[str], str] = input,
        secrets: Iterable[str] = (),
    ) -> None:
        self.console = console if console is not None else terminal_console()
        self._redactor = Redactor(secrets)
        self._secrets = tuple(secrets)
        self._holdback = StreamTextHoldback(self._redactor.spellings)
        self.quiet = quiet
        self.read_line = read_line
        self.loop_transitions: list[str] = []
        self._status: Any = None
        self._phase = "idle"
        self._text = ""  # the streamed line still arriving
        self._thinking = False
        self._tools: dict[str, str] = {}  # call id → tool name
        self._open_lines: set[str] = set()  # calls whose progress printed last ends no line
        self._asking: asyncio.Lock | None = None
        self._held: list[Callable[[], None]] | None = None  # output held during a question

    def hide(self, secrets: Iterable[str]) -> None:
        """Never print ``secrets`` either: an agent's own, known only once it is built (its
        model's, MCP servers', store's and telemetry's credentials), while the view had to
        exist before it to answer its questions."""
        self._secrets = (*self._secrets, *secrets)
        self._redactor = Redactor(self._secrets)
        self._holdback = StreamTextHoldback(self._redactor.spellings)

    def __enter__(self) -> LiveView:
        if not self.quiet and self.console.is_terminal:
            self._status = self.console.status("idle")
            self._status.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._end_text()
        if self._status is not None:
            self._status.__exit__(None, None, None)

    # --- printing ---------------------------------------------------------------------------

    def _print(self, text: str, style: str = "") -> None:
        """Print one line as plain text (never markup), or hold it while a question waits."""

        def out() -> None:
            self.console.print(Text(shown(self._redactor.text(text)), style=style))

        if self._held is not None:
            self._held.append(out)
        else:
            out()

    def show(self, update: object) -> updates.RunResult | None:
        """Print one update; returns the result from the last one (``RunFinished``)."""
        if isinstance(update, updates.RunFinished):
            return update.result
        if isinstance(update, updates.TransitionUpdate):
            self._transition(update)
        elif self.quiet:
            return None
        elif isinstance(update, updates.TextDelta):
            self._delta(update)
        elif isinstance(update, updates.MessageUpdate):
            self._message(update)
        elif isinstance(update, updates.ModelFailed):
            self._end_text()
            status = f", HTTP {update.status}" if update.status is not None else ""
            self._print(f"   model request failed ({update.kind}{status}): {update.message}", "red")
        elif isinstance(update, updates.RetryScheduled):
            self._end_text()
            self._print(
                f"   retrying the request (attempt {update.attempt}) "
                f"in {update.delay_ms / 1000:.1f} s",
                "yellow",
            )
        elif isinstance(update, updates.ToolProgress):
            self._progress(update)
        return None

    def _progress(self, update: updates.ToolProgress) -> None:
        """Print a tool's progress text, a line of the view for each of its lines.

        A call's progress texts are pieces of one text (a command's output in chunks): as in
        the trace (:mod:`~fsm_agent.trace.stream_text_holdback`), the end of a piece that may
        begin a secret is held for the next piece, or printed when the call ends, so that a
        secret split across two pieces is redacted whole. A line a piece leaves open is
        printed as it stands, and the rest of it on a line of its own."""
        key = progress_key(update.call_id)
        text, held = self._holdback.piece(key, update.text)
        if held:
            self._holdback.hold(key, text[-held:])
            text = text[:-held]
        self._progress_lines(update.call_id, text)

    def _progress_lines(self, call_id: str, text: str) -> None:
        if call_id in self._open_lines and text.startswith("\n"):
            text = text[1:]  # it ends the line printed last, which needs no empty line after
            self._open_lines.discard(call_id)
        if not text:
            return
        if text.endswith("\n"):
            self._open_lines.discard(call_id)
        else:
            self._open_lines.add(call_id)
        self._end_text()
        name = self._tools.get(call_id, call_id)
        lines = self._redactor.text(text).split("\n")
        if not lines[-1]:
            lines.pop()  # the text ended a line
        if len(lines) > PROGRESS_TEXT_LINES:
            # A flood: its last lines, as a terminal scrolled past the rest would show.
            left_out = len(lines) - PROGRESS_TEXT_LINES
            self._print(f"   … {name}: [{left_out} lines not shown]", "dim")
            lines = lines[-PROGRESS_TEXT_LINES:]
        for line in lines:
            self._print(f"   … {name}: {_cut(_as_redrawn(line), PROGRESS_LINE_CHARS)}", "dim")

    def _transition(self, update: updates.TransitionUpdate) -> None:
        taken = update.transition
        if taken.machine == "loop":
            self.loop_transitions.append(taken.name)
        if self.quiet:
            return
        if taken.machine == "loop":
            self._end_text()
            self._print(f"⟶ {taken.name}  {taken.source} → {taken.dest}", "cyan")
            self._phase = update.phase
            self._update_status()
        elif taken.name in {"permission_denied", "hook_denied", "cancelled", "input_rejected"}:
            self._end_text()
            name = self._tools.get(taken.call_id or "", taken.call_id or "?")
            self._print(f"   {name}: {taken.name.replace('_', ' ')}", "magenta")

    def _delta(self, update: updates.TextDelta) -> None:
        if update.thinking != self._thinking:
            # Thinking and text never share a line, and each starts with its own label.
            self._end_text()
            self._thinking = update.thinking
            if update.thinking:
                self._print("   thinking:", "dim italic")
        self._text += update.text
        *complete, self._text = self._text.split("\n")
        for line in complete:
            self._print_text_line(line)
        self._update_status()

    def _print_text_line(self, line: str) -> None:
        if self._thinking:
            self._print(f"   │ {line}", "dim italic")
        else:
            self._print(f"   {line}")

    def _message(self, update: updates.MessageUpdate) -> None:
        message = update.message
        if isinstance(message, AssistantMessage):
            for block in message.content:
                if isinstance(block, ToolUseBlock):
                    self._end_text()
                    self._tools[block.id] = block.name
                    # Redacted before it is cut or quoted: a secret cut in two, or with a
                    # quote escaped, would no longer be found whole.
                    summary = summarize_input(self._redactor.value(block.input))
                    self._print(f"   ▶ {block.name} {summary}", "bold")
        elif isinstance(message, UserMessage):
            for block in message.content:
                if isinstance(block, ToolResultBlock):
                    self._progress_lines(
                        block.tool_use_id, self._holdback.take(progress_key(block.tool_use_id))
                    )
                    self._end_text()
                    name = self._tools.get(block.tool_use_id, "tool")
                    mark, style = ("✗", "red") if block.is_error else ("◀", "green")
                    text = self._redactor.text(result_text(block.content))
                    self._print(f"   {mark} {name}: {summarize_result(text)}", style)

    def _update_status(self) -> None:
        if self._status is None or self._held is not None:
            return
        tail = shown(self._redactor.text_so_far(self._text))[-70:]
        self._status.update(Text(f"phase: {self._phase}" + (f"  │ {tail}" if tail else "")))

    def _end_text(self) -> None:
        if self._text:
            self._print_text_line(self._text)
            self._text = ""

    # --- permission questions -----------------------------------------------------------------

    async def ask(self, request: PermissionRequest) -> PermissionAnswer:
        """Ask the person at the terminal, one question at a time; the run goes on meanwhile
        but prints nothing until the answer is in."""
        if self._asking is None:
            self._asking = asyncio.Lock()
        async with self._asking:
            self._end_text()
            if self._status is not None:
                self._status.stop()
            self._held = []
            try:
                return await _asked_aside(lambda: self._question(request))
            finally:
                held, self._held = self._held, None
                for out in held:
                    out()
                if self._status is not None:
                    self._status.start()

    def _question(self, request: PermissionRequest) -> PermissionAnswer:
        def plain(text: str, style: str = "") -> None:
            self.console.print(Text(shown(self._redactor.text(text)), style=style))

        def show_input(*, whole: bool) -> bool:
            """Print the input; returns whether a part was left out (``whole=False``)."""
            abridged = False
            # Redacted whole, as the trace holds it (a value under a credential's name too),
            # before a long value is cut: a secret cut in two would no longer be found.
            for key, value in self._redactor.value(request.input).items():
                text = value if isinstance(value, str) else str(value)
                if not whole and len(text) > QUESTION_CHARS:
                    hidden = len(text) - QUESTION_HEAD - QUESTION_TAIL
                    text = (
                        f"{text[:QUESTION_HEAD]}\n… {hidden} characters not shown here "
                        f"(answer v to see them) …\n{text[-QUESTION_TAIL:]}"
                    )
                    abridged = True
                first, *rest = text.split("\n")
                plain(f"  {key}: {first}")
                # Every further line is marked as the value's own, so that no line of a value
                # can pass for a line of the question (a "why:" of its own making, say).
                for line in rest:
                    plain(f"    │ {line}")
            return abridged

        plain(f"\nPermission needed: {request.tool_name}", "bold yellow")
        abridged = show_input(whole=False)
        why = request.message or request.reason or "this call needs your approval"
        plain(f"  why: {why}")
        if request.suggested_rules:
            plain(f"  always adds: {', '.join(request.suggested_rules)}")
        choices = "[y] once, [a] always, [n] no" + (
            ", [v] view the whole input" if abridged else ""
        )
        while True:
            try:
                raw = self.read_line(f"Allow? {choices}: ")
            except EOFError:
                return PermissionAnswer(allow=False, message="no answer came (input closed)")
            answer = raw.strip().lower()
            if answer in _ONCE:
                return PermissionAnswer(allow=True)
            if answer in _ALWAYS:
                # The session rules the chain suggests (``Bash(touch x.txt)``), never the whole
                # tool: the policy records them in the trace and applies them from now on.
                return PermissionAnswer.allow_always(request.suggested_rules)
            if answer in _DENY:
                try:
                    note = self.read_line("Message for the model (optional): ").strip()
                except EOFError:
                    note = ""
                return PermissionAnswer(allow=False, message=note)
            if abridged and answer in _VIEW:
                show_input(whole=True)
                continue
            plain(f"  please answer {'y, a, n or v' if abridged else 'y, a or n'}")


def stdin_is_terminal() -> bool:
    """Whether someone can be asked (standard input is a terminal; with none at all, closed
    as ``<&-`` leaves it, nobody can be)."""
    return sys.stdin is not None and sys.stdin.isatty()
