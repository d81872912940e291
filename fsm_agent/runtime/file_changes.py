"""The changed-files attachment: a file the agent read that changed on disk since.

The provider follows the transcript: each successful Read, Edit or Write call tells it what the
agent has seen of a file, and it keeps the file's text as of then. When another program (or
the user, between two turns) changes such a file, the next attachment phase reports it once,
with a short diff, and the new text becomes what the agent is taken to know.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from pathlib import Path

from fsm_agent.core.messages import AttachmentKind, ToolResultBlock, UserMessage, tool_uses
from fsm_agent.runtime.attachments import Attachment, AttachmentRequest, AttachmentTiming
from fsm_agent.toolbox.paths import expand_home

FILE_TOOLS = frozenset({"Read", "Edit", "Write"})
"""Tools whose successful call shows the agent a file's current text (``file_path`` input)."""
MAX_TRACKED_BYTES = 1_000_000
"""Files larger than this are not followed (their diff would not help the model anyway)."""
MAX_DIFF_LINES = 40
"""Lines of unified diff shown at most per changed file; the rest is counted."""


class ChangedFiles:
    """Reports files read earlier that changed on disk since (each change once).

    Args:
        seen_at: for a conversation carried on from a recorded turn, when that turn ended
            (seconds since the epoch): a file its transcript read that was modified later is
            reported, without a diff (the text the agent saw is not at hand).
    """

    name = "changed_files"
    timing = AttachmentTiming.EACH_PHASE

    def __init__(self, *, seen_at: float | None = None) -> None:
        self._seen_at = seen_at
        self._known: dict[Path, str | None] = {}  # None: the file was gone when last seen
        self._counted: set[str] = set()  # tool_use ids already taken into account
        self._open: dict[str, Path] = {}  # tool_use id -> file, until its result is seen
        self._scanned = 0  # messages of the current user turn's transcript already read
        self._user_turn = 0

    async def collect(self, request: AttachmentRequest) -> Sequence[Attachment]:
        """Report the followed files that changed, then follow the files touched since."""
        touched = self._touched(request)
        found: list[Attachment] = []
        for path, before in list(self._known.items()):
            if path in touched:
                continue  # the agent itself has just seen or written it
            now = _text_of(path)
            if now == before:
                continue
            self._known[path] = now
            found.append(Attachment(kind=AttachmentKind.FILE, text=_report(path, before, now)))
        seen_at, self._seen_at = self._seen_at, None
        for path in touched:
            self._known[path] = _text_of(path)
            if seen_at is not None and _modified_after(path, seen_at):
                found.append(Attachment(kind=AttachmentKind.FILE, text=_report_later(path)))
        return found

    def _touched(self, request: AttachmentRequest) -> set[Path]:
        """Files of the file-tool calls answered successfully since the last look.

        Only the messages added since the last look are read (a new user turn carries the
        transcript over afresh, so it is read once more; ids already counted are skipped).
        """
        messages = request.messages
        if request.user_turn != self._user_turn or self._scanned > len(messages):
            self._user_turn, self._scanned = request.user_turn, 0
        touched: set[Path] = set()
        for message in messages[self._scanned :]:
            if isinstance(message, UserMessage):
                for result in message.content:
                    if isinstance(result, ToolResultBlock) and result.tool_use_id in self._open:
                        path = self._open.pop(result.tool_use_id)
                        if not result.is_error:
                            touched.add(path)
            for block in tool_uses(message):
                if block.name not in FILE_TOOLS or block.id in self._counted:
                    continue
                self._counted.add(block.id)
                raw = block.input.get("file_path")
                if isinstance(raw, str) and raw:
                    path = expand_home(raw)
                    path = path if path.is_absolute() else request.cwd / path
                    self._open[block.id] = path.resolve()
        self._scanned = len(messages)
        return touched


def _text_of(path: Path) -> str | None:
    """The file's text, None if it is gone; an unreadable or huge file reads as empty."""
    try:
        if path.stat().st_size > MAX_TRACKED_BYTES:
            return ""
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError):
        return ""


def _modified_after(path: Path, moment: float) -> bool:
    """Whether ``path`` was modified (or removed) after ``moment``."""
    try:
        return path.stat().st_mtime > moment
    except FileNotFoundError:
        return True
    except OSError:
        return False


def _report_later(path: Path) -> str:
    """What the model is told about a file that changed while the conversation was stored."""
    if not path.exists():
        return f"{path} was deleted since the conversation last read it."
    return (
        f"{path} was changed on disk since the conversation last read it; read it again "
        "before relying on what you saw of it."
    )


def _report(path: Path, before: str | None, now: str | None) -> str:
    """What the model is told about one changed file."""
    if now is None:
        return f"{path} was deleted since you last read it."
    if before is None:
        return f"{path} was created again since you last saw it; read it before relying on it."
    diff = list(
        difflib.unified_diff(
            before.splitlines(), now.splitlines(), "before", "now", n=1, lineterm=""
        )
    )[2:]  # the two file-name lines say nothing here
    added = sum(1 for line in diff if line.startswith("+"))
    removed = sum(1 for line in diff if line.startswith("-"))
    shown = diff[:MAX_DIFF_LINES]
    more = len(diff) - len(shown)
    lines = [
        f"{path} was changed on disk since you last read it "
        f"(by the user or another program): +{added} -{removed} lines.",
        *shown,
    ]
    if more:
        lines.append(f"... {more} more diff lines; read the file again for the rest.")
    return "\n".join(lines)
