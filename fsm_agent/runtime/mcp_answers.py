"""An MCP server's answer the client cannot read, made the error of the call it answers.

The ``mcp`` client reads each message a server sends as JSON-RPC; one it cannot read (JSON
whose ``result`` is not an object, JSON cut short) reaches the session as an exception, not
as an answer, and the session drops it: the call it answered would wait for
``LoopConfig.tool_timeout_ms``. Yet such a line usually names the request it answers. So the
stream the session reads (:class:`~fsm_agent.runtime.mcp_tools.McpConnection` watches it)
hands the session a JSON-RPC error for that request instead, and the call fails at once,
with an error saying the answer could not be read. A line that names no request (a server
that prints a log line on its stdout) is passed on as before, to be dropped: it answers
nothing, and so does a request of the server's own (it has a ``method``), whose ids are not
the client's. An id no request is waiting for is dropped by the session as any late answer
is.

Only the line's top-level ``id`` is taken: an ``id`` inside its ``result`` belongs to
something else.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

__all__ = ["UNREADABLE", "error_for_unreadable"]

UNREADABLE: Final = "the server's answer could not be read as JSON-RPC"
"""The error message a call answered so gets."""

_NUMBER: Final = re.compile(r"-?[0-9]+(?![0-9.eE])")
_SPACE: Final = re.compile(r"[ \t\n\r]*")


def error_for_unreadable(exc: Exception) -> Any:
    """The session message (``mcp``'s ``SessionMessage``) that fails the request an
    unreadable answer names, or None when ``exc`` is not an answer the client could not
    read, or names no request."""
    from pydantic import ValidationError  # noqa: PLC0415 - loaded with mcp, which sent exc

    if not isinstance(exc, ValidationError):
        return None
    request_id = None
    for error in exc.errors():
        given, kind, where = error.get("input"), error.get("type"), error.get("loc", ())
        # A request of the server's own (it has a method) numbers its ids apart from ours.
        if kind == "json_invalid" and isinstance(given, str) and '"method"' not in given:
            request_id = _top_level_id(given)
        elif isinstance(given, dict) and _whole_message(kind, where) and "method" not in given:
            request_id = given.get("id")  # read as JSON, not shaped as a message
        if request_id is not None:
            break
    if type(request_id) not in (int, str):
        return None
    import mcp_types  # noqa: PLC0415 - loaded with mcp
    from mcp.shared.message import SessionMessage  # noqa: PLC0415

    error_data = mcp_types.ErrorData(code=mcp_types.PARSE_ERROR, message=UNREADABLE)
    return SessionMessage(mcp_types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error_data))


def _whole_message(kind: object, where: tuple[Any, ...]) -> bool:
    """Whether an error's input is the whole message: the error is about the message itself
    (where: none, or the kind of message it was read as) or a field missing from it."""
    return len(where) <= 1 or (kind == "missing" and len(where) == 2)


def _top_level_id(text: str) -> int | str | None:
    """The ``id`` of the JSON object ``text`` begins (cut short, or broken past it), when it
    comes before the text breaks: a number or a string at the object's own level."""
    depth, pos, end = 0, 0, len(text)
    key_at = -1  # where the last string read at depth 1 began
    while pos < end:
        char = text[pos]
        if char == '"':
            close = _string_end(text, pos)
            if close < 0:
                return None
            if depth == 1:
                key_at = pos
            pos = close + 1
            continue
        if char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
        elif char == ":" and depth == 1 and key_at >= 0 and text[key_at:pos].rstrip() == '"id"':
            return _value_at(text, _SPACE.match(text, pos + 1).end())  # type: ignore[union-attr]
        if depth <= 0:
            return None
        pos += 1
    return None


def _string_end(text: str, pos: int) -> int:
    """The index of the quote closing the string that begins at ``pos``; -1 when it does not
    close."""
    pos += 1
    while pos < len(text):
        if text[pos] == "\\":
            pos += 2
            continue
        if text[pos] == '"':
            return pos
        pos += 1
    return -1


def _value_at(text: str, pos: int) -> int | str | None:
    """An id's value at ``pos``: an integer or a string, else None."""
    number = _NUMBER.match(text, pos)
    if number is not None:
        return int(number.group())
    if text.startswith('"', pos):
        close = _string_end(text, pos)
        if close >= 0:
            try:
                value = json.loads(text[pos : close + 1])
            except ValueError:
                return None
            return value if isinstance(value, str) else None
    return None
