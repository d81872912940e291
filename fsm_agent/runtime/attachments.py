"""Attachment providers, and the collector that answers the core's ``FetchAttachments``.

SPEC §1.2 S7: after the tools of an iteration have run, the loop collects attachments,
consumes the memory and skill prefetches, drains the messages the user queued meanwhile and
refreshes the tools. The core only asks (``FetchAttachments``); this module is what the driver
does to answer, and everything it finds goes back in one ``AttachmentsReady`` event, which the
trace records: a replay needs none of the providers.

A provider says when it runs (:class:`AttachmentTiming`):

* ``EACH_PHASE``: asked at every attachment phase, and before each prompt of a session
  (the changed-files provider, :mod:`fsm_agent.runtime.file_changes`);
* ``TURN_PREFETCH``: started once per user turn, consumed at the first attachment phase at
  which it has settled, never waited for (the relevant-memory prefetch of SPEC §1.1);
* ``ITERATION_PREFETCH``: started as each iteration starts, waited for at that iteration's
  attachment phase (skill discovery, SPEC §1.2 S0 and S7).
"""

from __future__ import annotations

import contextlib
import enum
import threading
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import attrs

from fsm_agent.core import texts
from fsm_agent.core.kinds import AttachmentKind
from fsm_agent.errors import ConfigError, UsageError
from fsm_agent.trace.json_limits import escape_surrogates

if TYPE_CHECKING:
    import asyncio

    from fsm_agent.core.messages import AttachmentMessage, Message


class AttachmentTiming(enum.Enum):
    """When the driver asks a provider (see the module docstring)."""

    EACH_PHASE = "each_phase"
    TURN_PREFETCH = "turn_prefetch"
    ITERATION_PREFETCH = "iteration_prefetch"


@attrs.frozen(kw_only=True)
class Attachment:
    """Context a provider attaches to the next request (sent as ``<system-reminder>`` text)."""

    text: str
    kind: AttachmentKind = AttachmentKind.OTHER


@attrs.frozen(kw_only=True)
class AttachmentRequest:
    """What a provider is told when it is asked.

    Attributes:
        cwd: the agent's working folder.
        messages: the transcript so far (for a prompt of a session: the earlier turns and the
            new prompt).
        user_turn: which user turn of the conversation this is (1 for the first).
        iteration: the loop's turn count within the user turn (1 for the first request).
    """

    cwd: Path
    messages: tuple[Message, ...]
    user_turn: int = 1
    iteration: int = 1


@runtime_checkable
class AttachmentProvider(Protocol):
    """Something that attaches context to the model's next request.

    ``name`` shows in the trace (the id of each attachment it gives starts with it);
    ``timing`` says when it is asked; ``collect`` answers (an empty sequence for nothing).
    An exception from ``collect`` ends the run as a fault, like any failing user callable.
    """

    @property
    def name(self) -> str:
        """A short name, unique among an agent's providers."""
        ...

    @property
    def timing(self) -> AttachmentTiming:
        """When the driver asks this provider."""
        ...

    async def collect(self, request: AttachmentRequest) -> Sequence[Attachment]:
        """The attachments for this request."""
        ...


def check_providers(providers: Sequence[AttachmentProvider]) -> tuple[AttachmentProvider, ...]:
    """The providers as given, or a ``ConfigError`` naming the one that is not a provider."""
    seen: set[str] = set()
    for provider in providers:
        if not isinstance(provider, AttachmentProvider) or not isinstance(
            provider.timing, AttachmentTiming
        ):
            raise ConfigError(
                f"attachments: {provider!r} is not an AttachmentProvider "
                "(it needs a name, a timing and an async collect(request))"
            )
        if provider.name in seen:
            raise ConfigError(f"attachments: two providers are called {provider.name!r}")
        seen.add(provider.name)
    return tuple(providers)


class MessageQueue:
    """Messages the user sent while a turn was running (thread safe).

    ``wake`` is called after each ``put`` (the running turn's driver uses it to look at the
    message at once: it may interrupt a cancellable tool, SPEC §2.2 ``interrupt``).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._texts: deque[str] = deque()
        self._stop_asked = False
        self.wake: Callable[[], object] | None = None

    def ask_to_stop(self) -> None:
        """Ask the running turn to abort, as Ctrl-C would (thread safe; see ``take_stop``)."""
        with self._lock:
            self._stop_asked = True
            wake = self.wake
        if wake is not None:
            with contextlib.suppress(RuntimeError):  # the turn's loop has just closed
                wake()

    def take_stop(self) -> bool:
        """Whether a stop was asked since the last call (the request is used up)."""
        with self._lock:
            asked, self._stop_asked = self._stop_asked, False
        return asked

    def put(self, text: str) -> None:
        """Queue ``text`` (an empty message is a ``UsageError``)."""
        if not text.strip():
            raise UsageError("the queued message is empty")
        text = escape_surrogates(text)  # bytes that were not UTF-8, as a prompt's (as_messages)
        with self._lock:
            self._texts.append(text)
            wake = self.wake
        if wake is not None:
            # A turn ending at this moment may have closed its loop: then the message simply
            # waits for the next turn (it is queued already).
            with contextlib.suppress(RuntimeError):
                wake()

    def drain(self) -> list[str]:
        """Every queued message, oldest first; the queue is empty afterwards."""
        with self._lock:
            drained = list(self._texts)
            self._texts.clear()
        return drained

    def __len__(self) -> int:
        with self._lock:
            return len(self._texts)


class AttachmentCollector:
    """Runs the providers of one conversation and the prefetches of its running turn.

    Args:
        providers: the providers, in the order their attachments are sent.
        queue: the messages queued by the user, drained at each attachment phase.
        user_turn: the number of the first user turn this collector serves.
        numbered: attachments numbered before this collector (their ids go on from there; a
            driver that makes a collector per attachment phase says how many it has had).
    """

    def __init__(
        self,
        providers: Sequence[AttachmentProvider],
        *,
        queue: MessageQueue | None = None,
        user_turn: int = 1,
        numbered: int = 0,
    ) -> None:
        self.providers = tuple(providers)
        self.queue = queue
        self.user_turn = user_turn
        self._counter = numbered
        self._turn_prefetch: dict[str, asyncio.Task[Sequence[Attachment]]] = {}
        self._iteration_prefetch: dict[str, asyncio.Task[Sequence[Attachment]]] = {}

    @property
    def idle(self) -> bool:
        """Nothing to ask and nothing queued: the answer is empty without any work."""
        return not self.providers and (self.queue is None or not len(self.queue))

    def _of(self, timing: AttachmentTiming) -> list[AttachmentProvider]:
        return [p for p in self.providers if p.timing is timing]

    def turn_started(self, request: AttachmentRequest) -> None:
        """Start the once-per-user-turn prefetches (SPEC §1.1 memory prefetch)."""
        import asyncio  # noqa: PLC0415 - issue 10: loaded by the first run

        self._cancel(self._turn_prefetch)
        for provider in self._of(AttachmentTiming.TURN_PREFETCH):
            self._turn_prefetch[provider.name] = asyncio.ensure_future(provider.collect(request))

    def iteration_started(self, request: AttachmentRequest) -> None:
        """Start the per-iteration prefetches (SPEC §1.2 S0 skill discovery)."""
        import asyncio  # noqa: PLC0415 - issue 10: loaded by the first run

        self._cancel(self._iteration_prefetch)
        for provider in self._of(AttachmentTiming.ITERATION_PREFETCH):
            task = asyncio.ensure_future(provider.collect(request))
            self._iteration_prefetch[provider.name] = task

    async def before_prompt(self, request: AttachmentRequest) -> list[AttachmentMessage]:
        """What the every-phase providers attach ahead of a new prompt of a session."""
        found: list[AttachmentMessage] = []
        for provider in self._of(AttachmentTiming.EACH_PHASE):
            found += self._messages(provider.name, await provider.collect(request))
        return found

    async def collect(self, request: AttachmentRequest) -> list[AttachmentMessage]:
        """The answer to one ``FetchAttachments`` (SPEC §1.2 S7), in the seed's order: the
        every-phase providers and the queued messages, then the settled turn prefetches, then
        the iteration prefetches."""
        found = await self.before_prompt(request)
        found += self.drain_queue()
        for name, task in list(self._turn_prefetch.items()):
            if task.done():  # consumed only if settled: a prefetch never holds the loop up
                del self._turn_prefetch[name]
                found += self._messages(name, task.result())
        for name, task in list(self._iteration_prefetch.items()):
            del self._iteration_prefetch[name]
            found += self._messages(name, await task)
        return found

    async def collect_at_once(
        self, request: AttachmentRequest, *, turn_prefetch: bool
    ) -> list[AttachmentMessage]:
        """The answer to one ``FetchAttachments`` for a driver that keeps nothing running
        between attachment phases (the Temporal workflow): each provider is asked now and
        waited for, in :meth:`collect`'s order. ``turn_prefetch``: this is the user turn's
        first attachment phase, so the once-per-turn prefetches are asked too."""
        found = await self.before_prompt(request)
        timings = [AttachmentTiming.ITERATION_PREFETCH]
        if turn_prefetch:
            timings.insert(0, AttachmentTiming.TURN_PREFETCH)
        for timing in timings:
            for provider in self._of(timing):
                found += self._messages(provider.name, await provider.collect(request))
        return found

    def drain_queue(self) -> list[AttachmentMessage]:
        """The queued messages as ``queued_command`` attachments (SPEC §1.2 S7)."""
        from fsm_agent.core.messages import AttachmentMessage  # noqa: PLC0415 - loaded when first used

        if self.queue is None:
            return []
        return [
            AttachmentMessage(
                uuid=self._uuid("queued"),
                kind=AttachmentKind.QUEUED_COMMAND,
                text=texts.queued_message(text),
            )
            for text in self.queue.drain()
        ]

    async def close(self) -> None:
        """Cancel the prefetches still running (the turn is over) and wait for them."""
        import asyncio  # noqa: PLC0415 - issue 10: loaded by the first run

        pending = [*self._turn_prefetch.values(), *self._iteration_prefetch.values()]
        self._cancel(self._turn_prefetch)
        self._cancel(self._iteration_prefetch)
        await asyncio.gather(*pending, return_exceptions=True)

    def _messages(self, name: str, found: Sequence[Attachment]) -> list[AttachmentMessage]:
        from fsm_agent.core.messages import AttachmentMessage  # noqa: PLC0415 - loaded when first used

        return [
            AttachmentMessage(uuid=self._uuid(name), kind=item.kind, text=item.text)
            for item in found
            if item.text.strip()
        ]

    def _uuid(self, name: str) -> str:
        # Unique in the conversation, and never like a core id ("m7"): carried messages of
        # earlier turns are never confused with new ones.
        self._counter += 1
        return f"{self.user_turn}:{name}.{self._counter}"

    @staticmethod
    def _cancel(tasks: dict[str, asyncio.Task[Sequence[Attachment]]]) -> None:
        for task in tasks.values():
            task.cancel()
        tasks.clear()
