"""Prompt-cache breakpoints: where a request asks the API to cache its prefix.

The Messages API caches the prefix of a request up to a block marked with ``cache_control``
(at most four marks per request). A later request that starts with the same bytes reads that
prefix from the cache at a tenth of the input price, so a long session pays full price only
for what each turn adds. The marks go where the reference puts them: the system prompt, the
tool definitions, and the end of the history. Two marks go at the end: on the last message,
which writes the cache for the next request, and on the last message of the previous request,
so the new request reads exactly what the previous one wrote. In a tool loop that message is
two before the last (the model's reply and the tool results came after it); when the request
continues a paused response (``pause_turn``, often a long server-tool run) it is the one before
the last, since only the reply came after it.

One shape leaves the previous end unmarked: a reply that normalization drops (thinking only)
lets the previous last message and the new one merge, so the previous end sits inside the last
message. The API still reads it there: a breakpoint also finds a cache entry written at any of
the :data:`CACHE_LOOKBACK_BLOCKS` blocks before it, and what follows a dropped reply is a
message or two.

Nothing here changes a dict it is given: the history's API dicts are shared between requests
(``core/request_history.py``), so marked messages and blocks are copies.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

__all__ = [
    "CACHE_CONTROL",
    "CACHE_LOOKBACK_BLOCKS",
    "MAX_BREAKPOINTS",
    "cache_breakpoints",
    "count_breakpoints",
]

CACHE_CONTROL: Final = {"type": "ephemeral"}
"""The mark the API reads (the default five-minute lifetime)."""

MAX_BREAKPOINTS: Final = 4
"""The most ``cache_control`` marks one request may carry (an API limit)."""

CACHE_LOOKBACK_BLOCKS: Final = 20
"""How many blocks before a breakpoint the API also looks for a cache entry (its prompt-caching
guide: tools, system and message blocks, in that order, count alike)."""


def _marked(block: dict[str, Any]) -> dict[str, Any]:
    return {**block, "cache_control": CACHE_CONTROL}


_MARKABLE: Final = frozenset(
    {"text", "image", "document", "search_result", "tool_use", "tool_result", "server_tool_use"}
)
"""Block types the API lets carry ``cache_control``; thinking and redacted thinking are cached
as part of the prefix but may not be marked, and neither may an empty text block."""


def _markable(block: dict[str, Any]) -> bool:
    kind = block.get("type")
    return kind in _MARKABLE and not (kind == "text" and not block.get("text"))


def _mark_message(message: dict[str, Any]) -> dict[str, Any]:
    """``message`` with its last markable block marked (unchanged when it has none)."""
    content = message["content"]
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    for index in range(len(content) - 1, -1, -1):
        if _markable(content[index]):
            marked = [*content[:index], _marked(content[index]), *content[index + 1 :]]
            return {**message, "content": marked}
    return message


def cache_breakpoints(
    *,
    system: str | list[dict[str, Any]],
    tools: Sequence[dict[str, Any]],
    messages: Sequence[dict[str, Any]],
) -> tuple[str | list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """The system prompt, tools and messages of a request, with cache breakpoints added.

    Args:
        system: The system prompt (text, or API text blocks).
        tools: API tool definitions.
        messages: API messages, as :func:`~fsm_agent.core.normalize.normalize_for_api` gives.

    Returns:
        ``(system, tools, messages)``: the system prompt as blocks whose last one is marked
        (unchanged when empty), the tools with the last one marked, and the messages with the
        last one marked and the previous request's last one: the one before it when the last
        message is the model's, two before it otherwise; at most :data:`MAX_BREAKPOINTS` in all.
    """
    if isinstance(system, str):
        system_blocks = [{"type": "text", "text": system}] if system else []
    else:
        system_blocks = list(system)
    marked_system: str | list[dict[str, Any]] = system
    if system_blocks:
        marked_system = [*system_blocks[:-1], _marked(system_blocks[-1])]
    marked_tools = [*tools[:-1], _marked(tools[-1])] if tools else []
    marked_messages = list(messages)
    continues_reply = bool(messages) and messages[-1].get("role") == "assistant"
    for back in (1, 2 if continues_reply else 3):
        if back <= len(marked_messages):
            marked_messages[-back] = _mark_message(marked_messages[-back])
    return marked_system, marked_tools, marked_messages


def count_breakpoints(value: object) -> int:
    """How many ``cache_control`` marks ``value`` (a request part, any nesting) carries."""
    if isinstance(value, dict):
        return int("cache_control" in value) + sum(count_breakpoints(v) for v in value.values())
    if isinstance(value, list | tuple):
        return sum(count_breakpoints(item) for item in value)
    return 0
