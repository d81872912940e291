"""Sessions: one conversation over many user turns.

Each user turn is one run of the loop with a trace file of its own; the transcript of a turn
is where the next one starts (its ``TurnStarted`` event carries it), and each turn's header
names its session, its number and the trace of the turn before (``meta``: ``session``,
``turn``, ``previous``), so the turns of a conversation can be found and replayed in order
(:mod:`fsm_agent.trace.conversation`). Once in :data:`FULL_TRANSCRIPT_EVERY` turns the
``TurnStarted`` record holds the whole transcript; the turns between hold what they add to the
transcript of the trace before them, which readers find in the same folder
(:mod:`fsm_agent.trace.transcript_base`), so a long conversation's traces do not grow as the
square of its turns.

Messages sent while a turn runs wait in a queue: the next attachment phase hands them to the
model (SPEC §1.2 S7), or, if a tool that an interrupt cancels is running, they interrupt it
(SPEC §2.2 ``interrupt``) and become the next turn's prompt.
"""

from __future__ import annotations

import collections
import os
import uuid
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import attrs

from fsm_agent.core.messages import (
    Message,
    ProgressMessage,
    TextBlock,
    TombstoneMessage,
    UserMessage,
)
from fsm_agent.core.request_history import RequestHistory
from fsm_agent.errors import UsageError
from fsm_agent.runtime.attachments import (
    AttachmentCollector,
    AttachmentProvider,
    AttachmentRequest,
    MessageQueue,
)
from fsm_agent.runtime.conversation_memo import ConversationMemo
from fsm_agent.runtime.file_changes import ChangedFiles
from fsm_agent.trace.json_limits import escape_surrogates
from fsm_agent.trace.message_dumps import TranscriptJson

if TYPE_CHECKING:
    from types import TracebackType

    from fsm_agent.runtime.agent import Agent, RunResult, Update


RESULTS_KEPT: Final = 16
"""How many of its latest turns' results a :class:`Session` keeps (``Session.results``)."""

FULL_TRANSCRIPT_EVERY: Final = 32
"""How often, in turns, a :class:`Session`'s trace holds its whole transcript by default; the
turns between begin with the transcript of the trace before them
(:mod:`~fsm_agent.trace.transcript_base`). 32 turns of a conversation read at most 31 other
files; its traces weigh about a sixteenth of whole transcripts written every turn."""


class Session:
    """A conversation with an agent: ``ask`` once per user turn, ``send`` while one runs.

    Made by :meth:`Agent.session`; usable as an async context manager.

    Attributes:
        id: names the conversation in each turn's trace header.
        turn: user turns started so far.
        messages: the whole transcript so far (the next turn starts from it).
        results: the results of this object's last :data:`RESULTS_KEPT` turns, oldest first
            (``results[-1]`` is the latest); each holds the transcript of its turn, so keeping
            every one would make a conversation's memory grow as the square of its turns.
            Earlier turns are in their traces.
    """

    def __init__(
        self,
        agent: Agent,
        *,
        resume: str | os.PathLike[str] | None = None,
        changed_files: bool = True,
        full_transcript_every: int | None = None,
    ) -> None:
        every = FULL_TRANSCRIPT_EVERY if full_transcript_every is None else full_transcript_every
        if type(every) is not int or every < 1:
            raise UsageError(
                f"full_transcript_every must be a whole number of turns, 1 or more: {every!r}"
            )
        self.agent = agent
        self.id = uuid.uuid4().hex[:16]
        self.turn = 0
        self.messages: tuple[Message, ...] = ()
        self.results: collections.deque[RunResult] = collections.deque(maxlen=RESULTS_KEPT)
        self.previous: Path | None = None
        seen_at: float | None = None
        if resume is not None:
            self._load(Path(resume))
            seen_at = Path(resume).stat().st_mtime  # the recorded turn's last write
        providers: list[AttachmentProvider] = (
            [ChangedFiles(seen_at=seen_at)] if changed_files else []
        )
        self._queue = MessageQueue()
        self._collector = AttachmentCollector(
            [*providers, *agent.attachments], queue=self._queue, user_turn=self.turn + 1
        )
        self._running = False
        # what each turn hands on to the next (DESIGN §7): the API form of the conversation,
        # its serialized transcript, and the last carry-over (the next turn's transcript
        # begins with it)
        self._memo = ConversationMemo(
            RequestHistory(tag_ids=agent.config.snip), TranscriptJson(full_every=every)
        )
        self._carried: tuple[Message, ...] = ()

    async def __aenter__(self) -> Session:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        return None

    @property
    def pending(self) -> int:
        """Messages queued and not yet handed to the model."""
        return len(self._queue)

    def send(self, text: str) -> None:
        """Queue a message for the model (from any thread or task).

        While a turn runs, the next attachment phase hands it to the model, or it interrupts
        the running tools an interrupt may cancel and waits for the next turn; between turns
        it goes in front of the next prompt.

        Raises:
            UsageError: the message is empty.
        """
        self._queue.put(text)

    def interrupt(self) -> None:
        """Abort the running turn as Ctrl-C would (from any thread or a signal handler): its
        tools are cancelled and its trace ends ``aborted_*``, but the session goes on and the
        next turn starts from the aborted turn's transcript. Nothing happens between turns."""
        if self._running:
            self._queue.ask_to_stop()

    async def ask(self, prompt: str | None = None) -> RunResult:
        """Run one user turn to its end; ``prompt`` None takes the queued messages instead."""
        from fsm_agent.runtime.agent import final_result  # noqa: PLC0415 - import cycle

        return await final_result(self.stream(prompt))

    async def stream(self, prompt: str | None = None) -> AsyncIterator[Update]:
        """``ask``, yielding the run's updates as they come (``Agent.stream`` for one turn).

        Raises:
            UsageError: a turn is already running, or there is neither a prompt nor a
                queued message.
        """
        from fsm_agent.runtime.agent import RunFinished  # noqa: PLC0415 - import cycle

        if self._running:
            raise UsageError("a turn of this session is running: send() queues a message")
        words = self._queue.drain()
        if prompt is not None:
            if not prompt.strip():
                raise UsageError("the prompt is empty")
            words.append(prompt)
        if not words:
            raise UsageError("nothing to ask: give a prompt or send() a message first")
        self._running = True
        self._queue.take_stop()  # a stop asked between turns is not for this one
        try:
            self.turn += 1
            self._collector.user_turn = self.turn
            carried = carry_over(
                self.messages, finished_turn=self.turn - 1, carried_before=self._carried
            )
            # What the last carry-over gave begins both, unchanged: only what follows it
            # may have been renamed.
            self._memo.request_history.carry_over(self.messages, carried, kept=len(self._carried))
            self._carried = carried
            prompts = tuple(
                UserMessage(
                    uuid=f"{self.turn}:prompt.{n}",
                    content=(TextBlock(text=escape_surrogates(text)),),  # as as_messages does
                )
                for n, text in enumerate(words, 1)
            )
            request = AttachmentRequest(
                cwd=self.agent.cwd, messages=(*carried, *prompts), user_turn=self.turn
            )
            # Files changed between turns are reported ahead of the prompt (SPEC §8.1 step 1
            # keeps them there: right after the last assistant message).
            ahead = await self._collector.before_prompt(request)
            async for update in self.agent.stream_turn(
                (*carried, *ahead, *prompts),
                collector=self._collector,
                link=self._link(),
                memo=self._memo,
            ):
                if isinstance(update, RunFinished):
                    self.messages = update.result.messages
                    self.results.append(update.result)
                    self.previous = update.result.trace_path or self.previous
                yield update
        finally:
            self._running = False

    def _link(self) -> dict[str, Any]:
        """Header metadata that ties a turn's trace to its conversation."""
        # By name: the turns of a conversation are traced into one folder.
        previous = self.previous.name if self.previous is not None else None
        return {"session": self.id, "turn": self.turn, "previous": previous}

    def _load(self, path: Path) -> None:
        """Start from the transcript of a recorded turn (``resume``).

        A turn whose run was killed before its first record (its file holds only a header)
        holds no transcript: the conversation goes on from the turn before it, which does,
        not from nothing."""
        from fsm_agent.trace.conversation import previous_turn  # noqa: PLC0415 - loaded when used
        from fsm_agent.trace.reader import read_trace  # noqa: PLC0415
        from fsm_agent.trace.replay import resume  # noqa: PLC0415

        trace = read_trace(path, allow_truncated=True)
        seen = {path.resolve()}
        while not trace.records:
            earlier = previous_turn(path, trace.header.meta)
            if earlier is None or earlier.resolve() in seen:
                break
            seen.add(earlier.resolve())
            path, trace = earlier, read_trace(earlier, allow_truncated=True)
        point = resume(trace)
        messages = getattr(point.core, "transcript", ())
        meta = trace.header.meta
        session = meta.get("session")
        turn = meta.get("turn")
        self.id = session if isinstance(session, str) and session else self.id
        self.turn = turn if isinstance(turn, int) and turn > 0 else 1
        self.messages = tuple(messages)
        self.previous = path


def carry_over(
    messages: Sequence[Message], *, finished_turn: int, carried_before: tuple[Message, ...] = ()
) -> tuple[Message, ...]:
    """The transcript a new user turn starts from.

    Withdrawn messages (and their tombstones) and tool progress are left behind, and the ids
    the finished turn's core gave (``m7``) are made unique in the conversation (``3:m7``): the
    next turn's core counts from ``m1`` again.

    ``carried_before``: what this function gave for the turn before, when there was one. The
    finished turn began with it, so only what follows it is looked at (DESIGN §7), unless
    ``messages`` no longer begin with it or a tombstone there names a carried id (a carried
    message could be withdrawn): then all of ``messages`` is.
    """
    start = len(carried_before)
    if start and len(messages) >= start and tuple(messages[:start]) == carried_before:
        added = messages[start:]
        withdrawn = _withdrawn(added)
        # Every carried id holds a colon; a core's own ids never do.
        if not any(":" in uuid for uuid in withdrawn):
            return carried_before + _kept(added, withdrawn, finished_turn)
    return _kept(messages, _withdrawn(messages), finished_turn)


def _withdrawn(messages: Sequence[Message]) -> set[str]:
    """The uuids the tombstones among ``messages`` withdraw."""
    return {m.target_uuid for m in messages if isinstance(m, TombstoneMessage)}


def _kept(
    messages: Sequence[Message], withdrawn: set[str], finished_turn: int
) -> tuple[Message, ...]:
    """``messages`` carried over: tombstones, progress and withdrawn ones left, ids renamed."""
    kept: list[Message] = []
    for message in messages:
        if isinstance(message, TombstoneMessage | ProgressMessage) or message.uuid in withdrawn:
            continue
        unique = message.uuid if ":" in message.uuid else f"{finished_turn}:{message.uuid}"
        kept.append(attrs.evolve(message, uuid=unique) if unique != message.uuid else message)
    return tuple(kept)
