"""``fsm-agent chat``: a conversation at the terminal, one prompt per line.

One thread reads standard input; every line it reads is routed on the event loop: to a
permission question waiting for its answer, else (at a terminal, while a turn works) to the
session's queue of messages (``Session.send``: it lands at the next attachment phase or
interrupts a cancellable tool), else to the prompts waiting for the next turn. With piped
input nothing is queued mid-turn: each line is the next prompt, in order. Ctrl-C while a turn
runs aborts that turn (its trace ends ``aborted_*``) and the chat asks for the next prompt;
Ctrl-C at the prompt ends the chat.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import signal
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from fsm_agent.runtime.agent import Update
    from fsm_agent.runtime.session import Session


_WITHDRAWN = "\0withdrawn"
"""Put where answers wait when the question's turn has ended (told apart by identity)."""


class ChatInput:
    """Lines of standard input, shared by the chat loop and permission questions.

    Args:
        queue_while_working: a line typed while a turn works is queued for that turn
            (at a terminal) instead of waiting to be the next prompt (piped input).
        stream: where lines come from.
    """

    def __init__(self, *, queue_while_working: bool, stream: TextIO | None = None) -> None:
        self.queue_while_working = queue_while_working
        self.stream: TextIO | None = stream if stream is not None else sys.stdin
        self.working: Session | None = None  # the session whose turn is running
        self._prompts: asyncio.Queue[str | None] = asyncio.Queue()
        self._answers: queue.Queue[str | None] = queue.Queue()
        self._question_open = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None

    def start(self) -> None:
        """Start reading (call from the running event loop)."""
        self._loop = asyncio.get_running_loop()
        threading.Thread(target=self._read, name="fsm-agent-chat-input", daemon=True).start()

    def _read(self) -> None:
        assert self._loop is not None
        try:
            if self.stream is not None:  # None: standard input is closed, so it ends at once
                for line in self.stream:
                    self._loop.call_soon_threadsafe(self._route, line.rstrip("\n"))
        finally:  # a reader that fails still ends the input: nothing waits for ever
            self._loop.call_soon_threadsafe(self._route, None)

    def _route(self, line: str | None) -> None:
        if line is None:  # end of input: nobody answers, nothing more to ask
            self._answers.put(None)
            self._prompts.put_nowait(None)
        elif self._question_open.is_set():
            self._answers.put(line)
        elif self.working is not None and self.queue_while_working and line.strip():
            self.working.send(line)
        else:
            self._prompts.put_nowait(line)

    def withdraw_question(self) -> None:
        """End a permission question whose turn has ended (aborted by Ctrl-C): it takes no
        line any more, so the next line typed is the next prompt."""
        if self._question_open.is_set():
            self._answers.put(_WITHDRAWN)

    async def next_prompt(self) -> str | None:
        """The next non-blank line, or None at the end of input."""
        while True:
            line = await self._prompts.get()
            if line is None:
                self._prompts.put_nowait(None)  # stays at the end for any later call
                return None
            if line.strip():
                return line

    def read_answer(self, prompt: str) -> str:
        """One answer to a permission question (``LiveView(read_line=...)``; runs in a
        worker thread while the loop goes on routing lines).

        Raises:
            EOFError: the input ended.
        """
        # Open the question before showing it: a line typed as soon as the prompt shows must
        # answer it, not be queued for the turn (the reader routes it on another thread).
        self._question_open.set()
        print(prompt, end="", flush=True)
        try:
            answer = self._answers.get()
        finally:
            self._question_open.clear()
        if answer is None:
            self._answers.put(None)  # later questions see the end as well
            raise EOFError
        if answer is _WITHDRAWN:
            raise EOFError  # the question's turn has ended: no answer is wanted
        return answer


async def chat(session: Session, lines: ChatInput, *, show_prompt: bool) -> AsyncIterator[Update]:
    """Run a turn for each prompt until the input ends; queued messages left over at the end
    of a turn (an interrupt) are asked at once, as the next turn."""
    lines.start()
    while True:
        prompt: str | None = None
        if not session.pending:
            if show_prompt:
                print("\n> ", end="", flush=True)
            prompt = await lines.next_prompt()
            if prompt is None:
                return
        lines.working = session
        try:
            with _ctrl_c_interrupts(session):
                async for update in session.stream(prompt):
                    yield update
        finally:
            lines.working = None
            lines.withdraw_question()


@contextlib.contextmanager
def _ctrl_c_interrupts(session: Session) -> Iterator[None]:
    """While a turn runs, Ctrl-C aborts the turn (``Session.interrupt``) and the chat goes on
    to the next prompt; at the prompt, Ctrl-C ends the chat as it ends any command."""
    loop = asyncio.get_running_loop()
    before = signal.getsignal(signal.SIGINT)
    try:
        loop.add_signal_handler(signal.SIGINT, session.interrupt)
    except (NotImplementedError, RuntimeError, ValueError):  # no signals here (Windows, a thread)
        yield
        return
    try:
        yield
    finally:
        loop.remove_signal_handler(signal.SIGINT)
        if before is not None:  # None: a handler not set from Python, left as it is
            signal.signal(signal.SIGINT, before)
