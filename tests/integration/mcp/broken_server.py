"""An MCP server that misbehaves as it is told: ``broken_server.py MODE``.

Built on the ``mcp`` package's low-level server, which sends what it is given. Its tools:
``echo`` (answers its ``text``), ``crash`` (the process exits mid-call), ``hang`` (never
answers), ``huge`` (a text result of ``size`` characters), ``env`` (the value of the
environment variable ``name``), ``picture`` (an image of ``type`` and ``size`` characters of
base64), ``refuse`` (answers with a JSON-RPC error of ``code``, its message quoting the
environment variable ``quote`` when given), ``items`` (a result of ``count`` content items of
``kind`` text or image), ``ask`` (sends the client requests and notifications it did not
announce it takes, and answers with what became of each) and ``garble`` (answers with a line
the client cannot read: ``shape`` ``result`` is JSON whose result is not an object,
``truncated`` JSON cut short, ``text`` no JSON at all; then never answers properly). With
``$LIST_DELAY`` set, each listing waits that many seconds first. MODE changes the rest:

* ``ok``: behaves;
* ``exit``: exits before answering anything;
* ``garbage``: writes lines that are not JSON-RPC to stdout, then behaves;
* ``hang-start``: never answers ``initialize`` (and writes its pid to ``$PID_FILE``);
* ``die-on-relist``: exits when asked for its tools a second time;
* ``hang-on-relist``: never answers when asked for its tools a second time;
* ``refuse-relist``: answers a JSON-RPC error when asked for its tools a second time;
* ``big-schema``: ``echo``'s input schema is two megabytes of properties;
* ``many``: lists 10,000 tools;
* ``long-description``: ``echo``'s description is a megabyte long;
* ``deep``: ``echo``'s input schema nests 300 objects deep (deeper than orjson writes);
* ``named NAME...``: lists tools of these names (each answering with its own name);
* ``pages``: lists ``p0``, ``p1`` and ``p2``, one a page;
* ``endless``: lists one tool a page, and there is always a next page.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import sys
from pathlib import Path
from typing import Any

import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

MODE = sys.argv[1] if len(sys.argv) > 1 else "ok"
OBJECT: dict[str, Any] = {"type": "object", "properties": {"text": {"type": "string"}}}
TOOLS = ["echo", "crash", "hang", "huge", "env", "picture", "refuse", "items", "ask", "garble"]
LISTINGS = itertools.count(1)
WIRE = os.dup(1)
"""Standard output as the client reads it (the server's own writer moves fd 1 aside)."""


def _deep(levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object"}
    for _ in range(levels):
        schema = {"type": "object", "properties": {"inner": schema}}
    return schema


def _tool(name: str) -> types.Tool:
    description = f"tool {name}"
    schema = OBJECT
    if name == "echo" and MODE == "long-description":
        description = "d" * 1_000_000
    if name == "echo" and MODE == "deep":
        schema = _deep(100)
    if name == "echo" and MODE == "big-schema":
        many = {f"p{i}": {"type": "string", "description": "x" * 100} for i in range(20_000)}
        schema = {"type": "object", "properties": many}
    return types.Tool(name=name, description=description, input_schema=schema)


async def list_tools(
    _ctx: Any, params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    listings = next(LISTINGS)
    await asyncio.sleep(float(os.environ.get("LIST_DELAY", "0")))
    if listings > 1 and MODE == "die-on-relist":
        os._exit(3)
    if listings > 1 and MODE == "hang-on-relist":
        await asyncio.Event().wait()
    if listings > 1 and MODE == "refuse-relist":
        raise MCPError(code=-32000, message="listing refused on purpose")
    names = TOOLS
    if MODE == "many":
        names = [f"t{i}" for i in range(10_000)]
    elif MODE == "named":
        names = sys.argv[2:]
    elif MODE in {"pages", "endless"}:
        page = int(params.cursor) if params is not None and params.cursor else 0
        more = page < 2 or MODE == "endless"
        return types.ListToolsResult(
            tools=[_tool(f"p{page}")], next_cursor=str(page + 1) if more else None
        )
    return types.ListToolsResult(tools=[_tool(name) for name in names])


def _text(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


async def _ask(ctx: Any) -> str:
    """Ask the client for a completion, a form and its roots, and tell it (unasked) that the
    tools changed, a log line and progress: what became of each request, a line each."""
    said = []
    message = types.SamplingMessage(role="user", content=types.TextContent(type="text", text="?"))
    requests: list[tuple[Any, Any]] = [
        (
            types.CreateMessageRequest(
                params=types.CreateMessageRequestParams(messages=[message], max_tokens=5)
            ),
            types.CreateMessageResult,
        ),
        (
            types.ElicitRequest(
                params=types.ElicitRequestFormParams(
                    message="name?", requested_schema={"type": "object", "properties": {}}
                )
            ),
            types.ElicitResult,
        ),
        (types.ListRootsRequest(), types.ListRootsResult),
    ]
    for request, result_type in requests:
        try:
            await ctx.session.send_request(request, result_type)
            said.append(f"{request.method}: answered")
        except MCPError as exc:
            said.append(f"{request.method}: refused ({exc.message})")
    notifications: list[Any] = [
        types.ToolListChangedNotification(),
        types.LoggingMessageNotification(
            params=types.LoggingMessageNotificationParams(level="error", data="\x1b[2J log")
        ),
        types.ProgressNotification(
            params=types.ProgressNotificationParams(progress_token="nobody's", progress=1)
        ),
    ]
    for notification in notifications:
        await ctx.session.send_notification(notification)
    return "\n".join(said)


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    arguments = params.arguments or {}
    if params.name == "crash":
        os._exit(4)
    if params.name == "hang":
        await asyncio.Event().wait()
    if params.name == "huge":
        return _text("x" * int(arguments.get("size", 50_000_000)))
    if params.name == "env":
        return _text(os.environ.get(str(arguments.get("name")), ""))
    if params.name == "picture":
        data = "A" * int(arguments.get("size", 8))
        picture = types.ImageContent(type="image", data=data, mime_type=str(arguments["type"]))
        return types.CallToolResult(content=[picture])
    if params.name == "echo":
        return _text(str(arguments.get("text", "")))
    if params.name == "refuse":
        quoted = os.environ.get(str(arguments.get("quote")), "")
        message = f"refused on purpose {quoted}".strip()
        raise MCPError(code=int(arguments.get("code", -32000)), message=message)
    if params.name == "garble":
        _garbled(ctx.request_id, str(arguments.get("shape", "result")))
        await asyncio.Event().wait()
    if params.name == "items":
        item: types.TextContent | types.ImageContent = types.TextContent(type="text", text="i")
        if arguments.get("kind") == "image":
            item = types.ImageContent(type="image", data="AAAA", mime_type="image/png")
        return types.CallToolResult(content=[item] * int(arguments.get("count", 10_000)))
    if params.name == "ask":
        return _text(await _ask(ctx))
    return _text(f"ran {params.name}")


def _garbled(request_id: Any, shape: str) -> None:
    """Write an answer to ``request_id`` the client cannot read, past the server's own writer."""
    lines = {
        "result": f'{{"jsonrpc": "2.0", "id": {request_id!r}, "result": 5}}',
        "truncated": f'{{"jsonrpc": "2.0", "id": {request_id!r}, "result": {{"content": [',
        "text": "this answer is no JSON",
    }
    os.write(WIRE, (lines[shape].replace("'", '"') + "\n").encode())


server = Server("broken", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    if MODE == "exit":
        sys.exit(5)
    if MODE == "garbage":
        print("this is not JSON-RPC", flush=True)
        print('{"jsonrpc": "2.0", "what": 1}', flush=True)
    if MODE == "hang-start":
        if "PID_FILE" in os.environ:
            Path(os.environ["PID_FILE"]).write_text(str(os.getpid()))
        await asyncio.Event().wait()
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    asyncio.run(main())
