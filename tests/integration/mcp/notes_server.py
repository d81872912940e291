"""A small MCP server written with the ``mcp`` package's own server API.

Run over stdio by default; ``notes_server.py http PORT`` serves streamable HTTP on
127.0.0.1:PORT at ``/mcp`` instead.

Tools: ``shout`` (read-only), ``picture`` (an image result, read-only), ``fail`` (an error
result), ``refuse`` (answers with a JSON-RPC error of ``code``) and ``unlock``, which adds a
``secret`` tool: the client sees it once it lists again. Over HTTP two more misbehave at the
HTTP level: ``status`` is answered with the HTTP status ``code`` (a plain-text body), and after
``forget`` the server no longer knows the session (each later request of it gets a 404).
"""

from __future__ import annotations

import base64
import json
import sys
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp.types import ImageContent, ToolAnnotations

server = MCPServer("notes")
READ_ONLY = ToolAnnotations(read_only_hint=True)
PIXEL = base64.b64encode(b"\x89PNG\r\n\x1a\n-not-really-a-png").decode()
FORGOTTEN: set[bytes] = set()
"""The session ids ``forget`` was called in."""


@server.tool(annotations=READ_ONLY)
def shout(text: str) -> str:
    """Say it louder."""
    return text.upper()


@server.tool(annotations=READ_ONLY)
def picture() -> ImageContent:
    """A tiny picture."""
    return ImageContent(type="image", data=PIXEL, mime_type="image/png")


@server.tool()
def fail(reason: str) -> str:
    """Always fails, saying why."""
    raise ToolError(f"failed on purpose: {reason}")


@server.tool()
def refuse(code: int) -> str:
    """Answers with a JSON-RPC error, not a result."""
    raise MCPError(code=code, message=f"refused on purpose with {code}")


def _secret() -> str:
    return "the secret is 42"


@server.tool()
def unlock() -> str:
    """Adds the secret tool."""
    server.add_tool(_secret, name="secret", description="Tell the secret.")
    return "unlocked"


@server.tool()
def status(code: int) -> str:
    """Answered with an HTTP status instead (over HTTP)."""
    return "not over HTTP"


@server.tool()
def forget() -> str:
    """The session is forgotten after this answer (over HTTP)."""
    return "forgetting"


Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
App = Callable[
    [Scope, Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]],
    Awaitable[None],
]


def misbehaving(app: App) -> App:
    """``app`` with the HTTP faults of ``status`` and ``forget``."""

    async def wrapped(
        scope: Scope,
        receive: Callable[[], Awaitable[Message]],
        send: Callable[[Message], Awaitable[None]],
    ) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        session = headers.get(b"mcp-session-id")
        if session in FORGOTTEN:  # the real server then says it does not know the session
            scope["headers"] = [(k, v) for k, v in scope["headers"] if k != b"mcp-session-id"]
            scope["headers"].append((b"mcp-session-id", b"forgotten-" + session))
        body = b""
        more = scope["method"] == "POST"
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        called = _called(body)
        if called is not None and called[0] == "status":
            code = int(called[1].get("code", 500))
            await send({"type": "http.response.start", "status": code, "headers": []})
            await send({"type": "http.response.body", "body": b"no"})
            return
        if called is not None and called[0] == "forget" and session is not None:
            FORGOTTEN.add(session)
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await app(scope, replay, send)

    return wrapped


def _called(body: bytes) -> tuple[str, dict[str, Any]] | None:
    """The tool a request body calls, and its arguments."""
    try:
        message = json.loads(body)
    except ValueError:
        return None
    if not isinstance(message, dict) or message.get("method") != "tools/call":
        return None
    params = message.get("params") or {}
    return str(params.get("name")), dict(params.get("arguments") or {})


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        import uvicorn

        app = misbehaving(server.streamable_http_app())
        uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
    else:
        server.run("stdio")
