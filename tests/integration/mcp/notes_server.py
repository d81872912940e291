"""A small MCP server written with the ``mcp`` package's own server API.

Run over stdio by default; ``notes_server.py http PORT`` serves streamable HTTP on
127.0.0.1:PORT at ``/mcp`` instead.

Tools: ``shout`` (read-only), ``picture`` (an image result, read-only), ``fail`` (an error
result) and ``unlock``, which adds a ``secret`` tool: the client sees it once it lists again.
"""

from __future__ import annotations

import base64
import sys

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ImageContent, ToolAnnotations

server = MCPServer("notes")
READ_ONLY = ToolAnnotations(read_only_hint=True)
PIXEL = base64.b64encode(b"\x89PNG\r\n\x1a\n-not-really-a-png").decode()


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


def _secret() -> str:
    return "the secret is 42"


@server.tool()
def unlock() -> str:
    """Adds the secret tool."""
    server.add_tool(_secret, name="secret", description="Tell the secret.")
    return "unlocked"


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run("stdio")
