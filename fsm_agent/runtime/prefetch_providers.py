"""The built-in prefetch providers: relevant memory and skill discovery.

Both choose by the words a note or a skill's description shares with what the agent is doing
(no model call, no index: a folder of Markdown files is read). Relevant memory is started once
per user turn and consumed at the end of an iteration only if it has settled (SPEC §1.1); skill
discovery is started as each iteration starts and consumed at that iteration's attachment
phase (SPEC §1.2 S0, S7). Each note or skill is attached once per conversation.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Sequence
from pathlib import Path

from fsm_agent.core.messages import (
    AssistantMessage,
    AttachmentKind,
    Message,
    TextBlock,
    UserMessage,
)
from fsm_agent.runtime.attachments import Attachment, AttachmentRequest, AttachmentTiming

_WORD = re.compile(r"[a-z0-9][a-z0-9_-]{2,}")
# Words too common to say what a note is about.
_COMMON = frozenset(
    (  # noqa: SIM905 - a list of words reads best as words
        "the and for with that this from what when where which have has are was were will "
        "can you your our not but all any its into then than them they their there about"
    ).split()
)


def words_of(text: str) -> set[str]:
    """The words of ``text`` that say something (lower case, three letters or more)."""
    return {word for word in _WORD.findall(text.lower()) if word not in _COMMON}


def latest_prompt(messages: Sequence[Message]) -> str:
    """The text of the user's latest own message (not a tool result, not a loop note)."""
    for message in reversed(messages):
        if isinstance(message, UserMessage) and not message.is_meta:
            text = "\n".join(b.text for b in message.content if isinstance(b, TextBlock))
            if text.strip():
                return text
    return ""


def latest_answer(messages: Sequence[Message]) -> str:
    """The text of the model's latest message that has any."""
    for message in reversed(messages):
        if isinstance(message, AssistantMessage):
            text = "\n".join(b.text for b in message.content if isinstance(b, TextBlock))
            if text.strip():
                return text
    return ""


class RelevantMemory:
    """Memory notes that fit the user's prompt: the ``*.md`` files of a folder.

    Args:
        folder: where the notes are.
        limit: at most this many notes per user turn, those sharing the most words first.
        min_shared: a note shares at least this many words with the prompt to be chosen.
        max_chars: a longer note is cut there.
    """

    timing = AttachmentTiming.TURN_PREFETCH

    def __init__(
        self,
        folder: str | os.PathLike[str],
        *,
        name: str = "relevant_memory",
        limit: int = 3,
        min_shared: int = 2,
        max_chars: int = 4_000,
    ) -> None:
        self.name = name
        self.folder = Path(folder)
        self.limit = limit
        self.min_shared = min_shared
        self.max_chars = max_chars
        self._attached: set[str] = set()

    async def collect(self, request: AttachmentRequest) -> Sequence[Attachment]:
        """The notes that fit the latest prompt and were not attached before."""
        wanted = words_of(latest_prompt(request.messages))
        notes = await asyncio.to_thread(_read_all, sorted(self.folder.glob("*.md")))
        scored = [
            (len(wanted & words_of(text)), path.name, text)
            for path, text in notes
            if path.name not in self._attached
        ]
        chosen = sorted(
            (entry for entry in scored if entry[0] >= self.min_shared),
            key=lambda entry: (-entry[0], entry[1]),
        )[: self.limit]
        self._attached.update(name for _, name, _ in chosen)
        return [
            Attachment(
                kind=AttachmentKind.MEMORY,
                text=f"A memory note that may be relevant ({name}):\n{text[: self.max_chars]}",
            )
            for _, name, text in chosen
        ]


class SkillDiscovery:
    """Skills that fit what the agent is doing: ``SKILL.md`` files, one folder per skill.

    A skill's front matter (between ``---`` lines) gives its ``name:`` and ``description:``;
    a skill is announced when its description shares a word with the latest prompt or answer.

    Args:
        folder: the folder holding one sub-folder per skill.
    """

    timing = AttachmentTiming.ITERATION_PREFETCH

    def __init__(self, folder: str | os.PathLike[str], *, name: str = "skill_discovery") -> None:
        self.name = name
        self.folder = Path(folder)
        self._announced: set[Path] = set()

    async def collect(self, request: AttachmentRequest) -> Sequence[Attachment]:
        """One attachment listing the skills that fit and were not announced before."""
        wanted = words_of(latest_prompt(request.messages) + "\n" + latest_answer(request.messages))
        found = await asyncio.to_thread(_read_all, sorted(self.folder.glob("*/SKILL.md")))
        lines = []
        for path, text in found:
            name, description = _front_matter(text, default_name=path.parent.name)
            if path in self._announced or not wanted & words_of(description):
                continue
            self._announced.add(path)
            lines.append(f"- {name}: {description} (instructions: {path})")
        if not lines:
            return []
        heading = "Skills that may help with this task (read a skill's file before using it):"
        return [Attachment(text="\n".join([heading, *lines]))]


def _read_all(paths: Sequence[Path]) -> list[tuple[Path, str]]:
    """Each readable text file with its text (unreadable ones are left out)."""
    read = []
    for path in paths:
        try:
            read.append((path, path.read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError):
            continue
    return read


def _front_matter(text: str, *, default_name: str) -> tuple[str, str]:
    """``name`` and ``description`` from a SKILL.md's front matter."""
    name, description = default_name, ""
    lines = text.splitlines()
    if lines and lines[0].strip() == "---":
        for line in lines[1:]:
            if line.strip() == "---":
                break
            key, _, value = line.partition(":")
            if key.strip() == "name" and value.strip():
                name = value.strip()
            elif key.strip() == "description":
                description = value.strip()
    return name, description
