"""An MCP server that lists tools the Messages API would refuse as they are.

Built on the ``mcp`` package's low-level server, which sends the list as given: tool names with
a dot, a space, non-ASCII letters and 80 characters, and one name listed twice. Each tool that
is called answers with its own name.
"""

from __future__ import annotations

import asyncio
from typing import Any

import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

OBJECT: dict[str, Any] = {"type": "object", "properties": {"q": {"type": "string"}}}
NAMES = ["github.search", "has space", "résumé", "x" * 80, "twice", "twice"]


async def list_tools(_ctx: Any, _params: Any) -> types.ListToolsResult:
    tools = [
        types.Tool(name=name, description=f"tool {name}", input_schema=OBJECT) for name in NAMES
    ]
    return types.ListToolsResult(tools=tools)


async def call_tool(_ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=f"ran {params.name}")])


server = Server("sloppy", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    asyncio.run(main())
