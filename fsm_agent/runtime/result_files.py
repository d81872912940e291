"""Tool results saved to files: where each goes, and the preview the model sees (SPEC §7.1).

Two mechanisms save a result: a single result over its tool's limit, when it is made
(``runtime.tool``), and the per-message budget, when one user message's results together are
too large (the core decides, ``core.tool_result_budget``; the driver saves). Both write the
whole text to ``<results folder>/<call id>.txt`` and show the model the same
``<persisted-output>`` block: the size, the path and the first 2,000 characters.

A saved result is the tool's output as it was, secrets included: the model reads it back, so
it cannot be redacted as the trace is (DESIGN §8). The folder and its files are made
owner-only (``0700`` and ``0600``) instead.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from fsm_agent.core import texts

if TYPE_CHECKING:
    from fsm_agent.core.effects import OversizedResult
    from fsm_agent.core.events import PersistedResult
    from fsm_agent.core.messages import Message

__all__ = ["PREVIEW_CHARS", "persist_chosen", "preview_of", "save_result"]

_OWNER_ONLY_FOLDER = 0o700
_OWNER_ONLY_FILE = 0o600

PREVIEW_CHARS = 2_000
"""How much of an oversized result the model still sees (SPEC §10: persisted preview)."""


def preview_of(text: str) -> str:
    """The start of ``text`` the model is shown, ended on a line boundary when one is close."""
    preview = text[:PREVIEW_CHARS]
    cut = preview.rfind("\n")
    if cut > PREVIEW_CHARS // 2:
        preview = preview[:cut]
    return preview


def _safe_name(call_id: str) -> str:
    """A file name for a call id (ids come from the model: keep only safe characters)."""
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in call_id) or "result"


def save_result(text: str, results_dir: Path | None, call_id: str) -> str | None:
    """Write ``text`` to the results folder and return what the model sees instead of it;
    None when there is no folder or the file cannot be written (nothing is lost then: the
    caller keeps or truncates the text)."""
    if results_dir is None:
        return None
    path = results_dir / f"{_safe_name(call_id)}.txt"
    try:
        results_dir.mkdir(mode=_OWNER_ONLY_FOLDER, parents=True, exist_ok=True)
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, _OWNER_ONLY_FILE)
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            file.write(text)
    except OSError:
        return None
    preview = preview_of(text)
    return texts.persisted_output(len(text), str(path), preview, more=len(preview) < len(text))


def persist_chosen(
    history: Sequence[Message], chosen: Sequence[OversizedResult], results_dir: Path | None
) -> tuple[PersistedResult, ...]:
    """Save the results the tool-result budget chose (SPEC §7.1); those that could not be
    saved are left out of the answer and keep their content."""
    from fsm_agent.core.events import PersistedResult  # noqa: PLC0415 - loaded when first used
    from fsm_agent.core.messages import TextBlock, ToolResultBlock, UserMessage  # noqa: PLC0415 - loaded when first used

    wanted = {result.tool_use_id for result in chosen}
    found: dict[str, str] = {}
    for message in reversed(history):
        if not wanted or not isinstance(message, UserMessage):
            continue
        for block in message.content:
            if isinstance(block, ToolResultBlock) and block.tool_use_id in wanted:
                wanted.discard(block.tool_use_id)
                content = block.content
                found[block.tool_use_id] = (
                    content
                    if isinstance(content, str)
                    else "\n".join(p.text for p in content if isinstance(p, TextBlock))
                )
    persisted = []
    for result in chosen:
        text = found.get(result.tool_use_id)
        saved = save_result(text, results_dir, result.tool_use_id) if text is not None else None
        if saved is not None:
            persisted.append(PersistedResult(tool_use_id=result.tool_use_id, content=saved))
    return tuple(persisted)
