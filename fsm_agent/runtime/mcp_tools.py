"""Tools from MCP servers, through the official ``mcp`` package (an optional extra).

``McpServer`` says how to reach a server: ``McpServer.stdio(...)`` starts it as a subprocess,
``McpServer.http(...)`` connects to a streamable-HTTP endpoint. An agent given
``Agent(mcp_servers=[...])`` connects to each when a run starts, lists its tools, and offers
them to the model as ``mcp__<server>__<tool>``; the list is read again between turns (SPEC
§1.2 S7, tool refresh), so tools a server adds or removes reach the next request. A list of
several pages is read whole, up to :data:`PAGE_LIMIT` pages. The servers are started, and
listed, all at once; their tools come in the configured order whichever answers first.

A server's tools are not ours to trust: every call of one asks permission (SPEC §9.3 step 3)
unless a rule allows it (``mcp__<server>`` allows a whole server), whatever the server says of
it. Its ``readOnlyHint`` only lets the call run concurrently with other safe calls (SPEC §5),
and counts as read-only in plan mode; every other one runs alone. A tool name the API would
refuse (``github.search``, a space, non-ASCII letters, more than 64 characters in all) is
offered under a name made of its allowed characters and a short digest of the real one
(:func:`mcp_tool_name`), so that one badly named tool cannot make every request fail; a tool
listed twice, or whose input schema is not an object schema or is longer than
:data:`SCHEMA_LIMIT`, is left out with an :class:`~fsm_agent.errors.McpWarning`. The server
validates the arguments against its own schema. A description longer than
:data:`DESCRIPTION_LIMIT` is cut (it rides on every request). A result maps to tool_result
content: text blocks as text, images as image blocks (base64; one the API would refuse, over
5 MB or not PNG, JPEG, GIF or WebP, as a note saying so), embedded text resources as text,
anything else as its JSON, at most :data:`IMAGES_PER_RESULT` images and :data:`CONTENT_LIMIT`
blocks; ``isError`` makes an error result; a large one is saved to a file with a preview, as
any tool's (SPEC §7.1).

A server is not ours to keep alive either: no run dies because of one. A server that does not
start (a bad command, an exit, garbage for an answer) or does not answer within its
``timeout_s`` is left out of the run with an :class:`~fsm_agent.errors.McpWarning` naming it;
one whose connection is gone later (it exits, an HTTP server no longer knows the session) or
whose listing hangs has its tools left out from the next listing on, and each call of it still
in flight or made after is an error result naming it. An error the server answers with (a
JSON-RPC error, an HTTP error status for one request) is the error of that call, or keeps the
tools last listed, and the server stays. A call that never returns is bounded by
``LoopConfig.tool_timeout_ms``, as any tool's.

``mcp`` takes seconds to import: it is imported only when a connection opens.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import warnings
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TextIO

import attrs

from fsm_agent.core.messages import ImageBlock, ResultPart, TextBlock
from fsm_agent.credentials import (
    HIDDEN,
    argument_credentials,
    hidden,
    named_credentials,
    url_passwords,
    url_private_parts,
    value_and_token,
    without_passwords,
)
from fsm_agent.errors import ConfigError, McpWarning
from fsm_agent.runtime.mcp_answers import error_for_unreadable
from fsm_agent.runtime.tool import (
    PermissionCheck,
    ProgressCallback,
    Tool,
    ToolContext,
    ToolOutput,
)
from fsm_agent.terminal_text import shown
from fsm_agent.trace.redact import KEY_RULES_ONLY

if TYPE_CHECKING:
    import asyncio  # imported where it is used (issue 10)

__all__ = [
    "CONTENT_LIMIT",
    "DESCRIPTION_LIMIT",
    "IMAGES_PER_RESULT",
    "IMAGE_LIMIT",
    "PAGE_LIMIT",
    "SCHEMA_LIMIT",
    "McpConnection",
    "McpServer",
    "McpTool",
    "mcp_tool_name",
]

_NAME_PREFIX = "mcp"
_SEPARATOR = "__"


_API_NAME = re.compile(r"[A-Za-z0-9_-]+")
"""The characters the Messages API accepts in a tool name."""
NAME_LIMIT = 64
"""The longest tool name offered (the API's limit, as the strictest of its versions has it)."""
SERVER_NAME_LIMIT = 32
"""The longest server name, so that a tool's own name always keeps some room."""
_DIGEST = 8
DESCRIPTION_LIMIT = 2_048
"""The longest tool description offered: one sent whole on every request must stay small."""
SCHEMA_LIMIT = 100_000
"""The longest input schema offered, in characters of JSON: it too rides on every request."""
PAGE_LIMIT = 100
"""The most pages of a server's tool list read at each listing."""
DEFAULT_TIMEOUT_S = 30.0
"""How long a server may take to start and to answer each listing of its tools, by default."""


def mcp_tool_name(server: str, tool: str) -> str:
    """The name the model calls a server's tool by: ``mcp__<server>__<tool>``, as it is when
    the API accepts it; otherwise the tool's name with each character the API refuses made
    ``_``, cut to fit, and ``_`` and the first hex digits of its SHA-256 appended (the same
    name on every listing, and distinct names stay distinct)."""
    whole = f"{_NAME_PREFIX}{_SEPARATOR}{server}{_SEPARATOR}{tool}"
    if _API_NAME.fullmatch(tool) and len(whole) <= NAME_LIMIT:
        return whole
    digest = hashlib.sha256(tool.encode("utf-8", "surrogatepass")).hexdigest()[:_DIGEST]
    kept = re.sub(r"[^A-Za-z0-9_-]", "_", whole)[: NAME_LIMIT - 1 - _DIGEST]
    return f"{kept}_{digest}"


def _names_only(values: dict[str, str] | None) -> str:
    """Headers or environment variables as ``repr`` shows them: their names, never a value."""
    return "None" if values is None else repr(dict.fromkeys(values, HIDDEN))


def _url_shown(url: str | None) -> str:
    return repr(url if url is None else without_passwords(url, url))


def _command_shown(command: str | None, args: tuple[str, ...]) -> tuple[str, str]:
    """A command and its arguments as ``repr`` shows them: ``***`` for each credential in
    them (a known program's password options are judged from its name)."""
    found = argument_credentials((command, *args) if command is not None else args)
    shown = tuple(hidden(arg, found) for arg in args)
    return repr(command if command is None else hidden(command, found)), repr(shown)


_QUOTED_MIN = 4
"""The fewest characters of a configured value a warning hides."""


@attrs.frozen(kw_only=True, repr=False)
class McpServer:
    """How to reach one MCP server. Build it with ``McpServer.stdio`` or ``McpServer.http``.

    Attributes:
        name: The server's name in tool names (``mcp__<name>__<tool>``); letters, digits,
            ``_`` and ``-``.
        command: stdio: the program to start.
        args: stdio: its arguments.
        env: stdio: extra environment variables for it.
        cwd: stdio: its working folder.
        url: streamable HTTP: the endpoint.
        headers: streamable HTTP: headers for every request (an ``Authorization``, say).
        timeout_s: how long it may take to start (connect and initialize) and to answer each
            listing of its tools, in seconds; past it the server is left out of the run. None
            waits for ever. Tool calls are bounded by ``LoopConfig.tool_timeout_ms``.
    """

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] | None = None
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] | None = None
    timeout_s: float | None = DEFAULT_TIMEOUT_S

    def __repr__(self) -> str:
        """The fields, with ``***`` for every credential (and the names only of the headers
        and environment variables)."""
        command, args = _command_shown(self.command, self.args)
        return (
            f"McpServer(name={self.name!r}, command={command}, args={args}, "
            f"env={_names_only(self.env)}, cwd={self.cwd!r}, url={_url_shown(self.url)}, "
            f"headers={_names_only(self.headers)}, timeout_s={self.timeout_s!r})"
        )

    def __attrs_post_init__(self) -> None:
        if not _API_NAME.fullmatch(self.name) or len(self.name) > SERVER_NAME_LIMIT:
            raise ConfigError(
                f"McpServer name {self.name!r}: use ASCII letters, digits, '_' and '-' only, "
                f"at most {SERVER_NAME_LIMIT} (it becomes part of each tool's name)"
            )
        if _SEPARATOR in self.name:
            raise ConfigError(f"McpServer name {self.name!r} must not contain '__'")
        if (self.command is None) == (self.url is None):
            raise ConfigError(f"McpServer {self.name!r}: give a command (stdio) or a url (HTTP)")
        if self.timeout_s is not None and not self.timeout_s > 0:
            raise ConfigError(f"McpServer {self.name!r}: timeout_s must be positive or None")

    @classmethod
    def stdio(
        cls,
        name: str,
        command: str,
        args: Sequence[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        timeout_s: float | None = DEFAULT_TIMEOUT_S,
    ) -> McpServer:
        """A server started as a subprocess and spoken to over its stdin and stdout."""
        return cls(
            name=name,
            command=command,
            args=tuple(args),
            env=None if env is None else dict(env),
            cwd=None if cwd is None else os.fspath(cwd),
            timeout_s=timeout_s,
        )

    @classmethod
    def http(
        cls,
        name: str,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        timeout_s: float | None = DEFAULT_TIMEOUT_S,
    ) -> McpServer:
        """A server reached over streamable HTTP at ``url``."""
        return cls(
            name=name,
            url=url,
            headers=None if headers is None else dict(headers),
            timeout_s=timeout_s,
        )

    @property
    def secrets(self) -> tuple[str, ...]:
        """The credentials this server is reached with: the values of its headers and
        environment variables under a credential's name (``Authorization``, ``GITHUB_TOKEN``),
        its URL's credentials and the credentials in its command's arguments
        (``--token VALUE``, ``--api-key=VALUE``, ``mysql -pVALUE``). The agent keeps them
        out of its traces and spans (DESIGN §8)."""
        pairs = [*(self.env or {}).items(), *(self.headers or {}).items()]
        passwords = url_passwords(self.url) if self.url is not None else ()
        command = (self.command,) if self.command is not None else ()
        arguments = argument_credentials((*command, *self.args))
        return tuple(dict.fromkeys([*named_credentials(pairs), *passwords, *arguments]))

    @property
    def quoted_values(self) -> tuple[str, ...]:
        """What a warning or an error about this server shows as ``***`` (DESIGN §8): its
        :attr:`secrets`, and, under any name, the values of its environment variables and
        headers (each whole and, after a scheme such as ``Bearer``, its token alone), its
        URL's user info and query values: a server that fails may quote its configuration,
        and a token may hide under a name no rule knows (``X-Goog-Key``, ``?key=``). Values
        shorter than 4 characters are left (``1``, ``on``: hiding them would garble the rest
        of the message)."""
        values = [*(self.env or {}).values(), *(self.headers or {}).values()]
        url = url_private_parts(self.url) if self.url is not None else ()
        found = [*self.secrets, *(part for value in values for part in value_and_token(value))]
        found += url
        return tuple(dict.fromkeys(value for value in found if len(value) >= _QUOTED_MIN))


@attrs.frozen
class _Arguments:
    """The stand-in input type of an MCP tool: its arguments stay a JSON object."""


class McpTool(Tool[Any]):
    """One tool of an MCP server, called through its connection."""

    input_type = _Arguments

    def __init__(
        self, connection: McpConnection, remote_name: str, description: str, schema: Any
    ) -> None:
        self.connection = connection
        self.remote_name = remote_name
        self.name = mcp_tool_name(connection.server.name, remote_name)
        self.description = _capped(description)
        self.read_only = False
        self._schema: dict[str, Any] = dict(schema) if isinstance(schema, Mapping) else {}
        super().__init__()

    def input_schema(self) -> dict[str, Any]:
        """The server's own JSON schema of the arguments."""
        return self._schema or {"type": "object", "properties": {}}

    def parse_input(self, raw: Mapping[str, Any]) -> dict[str, Any]:
        """The arguments as they are: the server checks them against its schema."""
        return dict(raw)

    def is_concurrency_safe(self, data: Any) -> bool:
        """True when the server marks the tool ``readOnlyHint`` (SPEC §5)."""
        return self.read_only

    def is_read_only(self, data: Any) -> bool:
        """The server's ``readOnlyHint``."""
        return self.read_only

    def check_permissions(self, data: Any, ctx: ToolContext) -> PermissionCheck:
        """No opinion: a server's word is not a reason to run a call unasked, so the rules
        and the mode decide (SPEC §9.3 step 3 asks when none allows it)."""
        server = self.connection.server.name
        return PermissionCheck(
            behavior="passthrough", message=f"a tool of the MCP server {server!r}"
        )

    async def call(self, data: Any, ctx: ToolContext, progress: ProgressCallback) -> ToolOutput:
        """Call the tool on its server and map the result to tool_result content."""
        return await self.connection.call(self.remote_name, data)


def _capped(description: str) -> str:
    """The description as offered: cut to :data:`DESCRIPTION_LIMIT` characters, saying so."""
    if len(description) <= DESCRIPTION_LIMIT:
        return description
    note = f"… (cut from {len(description):,} characters)"
    return description[: DESCRIPTION_LIMIT - len(note)] + note


_REASON_LIMIT = 500
"""The most of a server's own error message a warning or an error result repeats."""


def _reason(exc: BaseException, server: McpServer, *, timeout_s: float | None = None) -> str:
    """What went wrong with a server, in a line: the first error inside the ``mcp`` client's
    task groups rather than the group, and a timeout as the bound ``timeout_s`` it ran past.
    The words of the error are cut, the server's credentials and API-key-shaped text hidden
    (an error may quote its URL, its command or what it answered) and terminal controls spelled
    out: a warning prints them as they are."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, TimeoutError) and timeout_s is not None:
        return f"it did not answer within {timeout_s:g} s (McpServer timeout_s)"
    said = KEY_RULES_ONLY.text(hidden(str(exc), server.quoted_values))
    if len(said) > _REASON_LIMIT:
        said = said[:_REASON_LIMIT] + "…"
    return shown(f"{type(exc).__name__}: {said}" if said else type(exc).__name__)


IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
"""The media types of the images the API takes."""
IMAGE_LIMIT = 5 * 1024 * 1024
"""The longest base64 image data the API takes (5 MB)."""


def _image_part(media_type: object, data: object) -> ResultPart:
    """An image block, or a note in its place when the API would refuse it: once in the
    transcript, such an image would make every later request fail."""
    size = len(data) if isinstance(data, str) else 0
    if media_type in IMAGE_TYPES and 0 < size <= IMAGE_LIMIT:
        return ImageBlock(source={"type": "base64", "media_type": media_type, "data": data})
    return TextBlock(
        text=f"[an image ({shown(str(media_type))[:100]}, {size:,} characters of base64) left "
        f"out: the API takes PNG, JPEG, GIF and WebP images of up to 5 MB]"
    )


CONTENT_LIMIT = 100
"""The most content blocks one result becomes: the text of the items past them is joined."""
IMAGES_PER_RESULT = 20
"""The most images of one result passed on: the API takes a bounded number of images in a
request, and a transcript past it would make every later request fail."""


def _result_parts(items: Sequence[Any]) -> tuple[ResultPart, ...]:
    """A result's content items as tool_result content, bounded whatever the server sends:
    images past :data:`IMAGES_PER_RESULT` are left out with a note saying how many, and past
    :data:`CONTENT_LIMIT` blocks the text of the rest is joined into one block (then saved to
    a file with a preview when long, as any tool's)."""
    parts: list[ResultPart] = []
    images = 0
    for item in items:
        part = _result_part(item)
        if isinstance(part, ImageBlock):
            images += 1
            if images > IMAGES_PER_RESULT:
                continue
        parts.append(part)
    if images > IMAGES_PER_RESULT:
        parts.append(
            TextBlock(
                text=f"[{images - IMAGES_PER_RESULT:,} more images left out: a result passes on "
                f"{IMAGES_PER_RESULT} at most]"
            )
        )
    if len(parts) <= CONTENT_LIMIT:
        return tuple(parts)
    kept, rest = parts[: CONTENT_LIMIT - 1], parts[CONTENT_LIMIT - 1 :]
    joined = TextBlock(text="\n".join(p.text for p in rest if isinstance(p, TextBlock)))
    return (*kept, joined, *(p for p in rest if not isinstance(p, TextBlock)))


def _result_part(item: Any) -> ResultPart:
    kind = getattr(item, "type", None)
    if kind == "text":
        return TextBlock(text=str(item.text))
    if kind == "image":
        return _image_part(item.mime_type, item.data)
    embedded = getattr(getattr(item, "resource", None), "text", None)
    if kind == "resource" and isinstance(embedded, str):
        return TextBlock(text=embedded)
    dump = item.model_dump(mode="json", by_alias=True) if hasattr(item, "model_dump") else item
    return TextBlock(text=json.dumps(dump, ensure_ascii=False))


_SESSION_HEADER = "mcp-session-id"
"""The header a streamable-HTTP request names its session in."""


class _Watched:
    """The stream a session reads a server's messages from, calling ``on_end`` once it ends
    (or fails): before the session wakes the calls still waiting, so each of them can tell a
    connection that is gone from an error the server answered with. An answer the client
    cannot read is handed on as the error of the request it names
    (:mod:`~fsm_agent.runtime.mcp_answers`)."""

    def __init__(self, stream: Any, on_end: Callable[[], None]) -> None:
        self._stream = stream
        self._on_end = on_end

    @property
    def last_context(self) -> Any:
        """The sending task's context, for the session (when the stream keeps one)."""
        return getattr(self._stream, "last_context", None)

    async def receive(self) -> Any:
        try:
            item = await self._stream.receive()
        except Exception:  # the end of the stream, or a broken one; a cancellation is not
            self._on_end()
            raise
        if isinstance(item, Exception):  # a message the client could not read
            return error_for_unreadable(item) or item
        return item

    async def aclose(self) -> None:
        await self._stream.aclose()

    def __aiter__(self) -> _Watched:
        return self

    async def __anext__(self) -> Any:
        import anyio  # noqa: PLC0415 - the mcp client's own, loaded with it

        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> _Watched:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class McpConnection:
    """A session with one MCP server: ``start`` opens it in a task of its own, which holds
    it until ``close`` (``open`` opens it in the caller's task)."""

    def __init__(self, server: McpServer, *, stderr: TextIO | None = None) -> None:
        self.server = server
        self._stderr = stderr
        self._session: Any = None
        self.failure: str | None = None
        """Why the server can no longer be used (None while it can)."""
        self.ended = False
        """Whether the connection itself is gone: the server's messages ended (it exited, its
        stream closed), the connection is being closed, or an HTTP server no longer knows
        the session. Only this, a failed start or a listing that hangs takes a server out of
        the run: an error it answers with is that call's, or that listing's."""
        self._reported: set[str] = set()
        self._listed: list[McpTool] = []
        self._holder: asyncio.Task[None] | None = None
        self._closing: asyncio.Event | None = None

    def warn_once(self, text: str) -> None:
        """An ``McpWarning`` about this server, once per run whatever the turns: its tools are
        listed again every turn, and would otherwise say the same every turn."""
        if text not in self._reported:
            self._reported.add(text)
            warnings.warn(text, McpWarning, stacklevel=3)

    def _fail(self, why: str) -> None:
        """The server is gone for this run: say so once; its tools are left out from now on."""
        if self.failure is None:
            self.failure = why
            warnings.warn(
                f"MCP server {self.server.name!r} left out of this run: {why}",
                McpWarning,
                stacklevel=3,
            )

    async def start(self) -> None:
        """Connect and initialize within ``timeout_s``, in a task that holds the connection
        until :meth:`close`.

        The ``mcp`` client's transports run in task groups, and a task group whose transport
        fails cancels the task that entered it: were that the run's, a server that went away
        would look like Ctrl-C. So the holder is cancelled instead, and the server is left
        out from then on.

        Raises:
            Exception: what kept the server from starting (``TimeoutError`` past
                ``timeout_s``; the ``mcp`` client's errors, often in an exception group).
        """
        import asyncio  # noqa: PLC0415 - issue 10: building an agent loads no run machinery

        ready = asyncio.Event()
        self._closing = closing = asyncio.Event()
        self._holder = holder = asyncio.create_task(self._hold(ready, closing))
        waiting = asyncio.create_task(ready.wait())
        try:
            await asyncio.wait(
                {holder, waiting},
                timeout=self.server.timeout_s,
                return_when=asyncio.FIRST_COMPLETED,
            )
        except BaseException:  # the caller is cancelled: the server is stopped first
            waiting.cancel()
            holder.cancel()
            await asyncio.gather(holder, waiting, return_exceptions=True)
            raise
        waiting.cancel()
        if not ready.is_set():
            holder.cancel()  # a no-op when it failed, else it ran past timeout_s
            (failed,) = await asyncio.gather(holder, return_exceptions=True)
            if isinstance(failed, Exception):
                raise failed
            raise TimeoutError

    async def close(self) -> None:
        """Close the connection :meth:`start` opened (nothing when it did not)."""
        if self._holder is None or self._closing is None:
            return
        import asyncio  # noqa: PLC0415 - issue 10: building an agent loads no run machinery

        self._closing.set()
        await asyncio.gather(self._holder, return_exceptions=True)  # a server may fail to part

    async def _hold(self, ready: asyncio.Event, closing: asyncio.Event) -> None:
        """Open the connection, set ``ready``, and hold it until ``closing`` is set."""
        try:
            async with contextlib.AsyncExitStack() as own:
                await self.open(own)
                ready.set()
                await closing.wait()
        except Exception as exc:
            if not ready.is_set():
                raise  # start() says why
            if not closing.is_set():
                self._fail(f"its connection failed: {_reason(exc, self.server)}")

    async def open(self, stack: contextlib.AsyncExitStack) -> None:
        """Connect and initialize; the stack closes the session and the transport (and marks
        the connection :attr:`ended` first, before any call still waiting learns of it)."""
        import mcp  # noqa: PLC0415 - lazy on purpose: the import costs seconds

        server = self.server
        if server.command is not None:
            parameters = mcp.StdioServerParameters(
                command=server.command, args=list(server.args), env=server.env, cwd=server.cwd
            )
            errlog = self._stderr or stack.enter_context(open(os.devnull, "w"))  # noqa: PTH123, SIM115
            streams = await stack.enter_async_context(mcp.stdio_client(parameters, errlog))
        else:
            from mcp.client.streamable_http import streamable_http_client  # noqa: PLC0415
            from mcp.shared._httpx_utils import create_mcp_http_client  # noqa: PLC0415

            assert server.url is not None
            # The client the transport would make (its timeouts), with the headers, watching
            # for the answer that says the session is gone.
            client = create_mcp_http_client(headers=server.headers)
            client.event_hooks = {"response": [self._answered]}
            await stack.enter_async_context(client)
            streams = await stack.enter_async_context(
                streamable_http_client(server.url, http_client=client)
            )
        read = _Watched(streams[0], self._end)
        self._session = await stack.enter_async_context(mcp.ClientSession(read, streams[1]))
        stack.callback(self._end)  # runs before the session's exit wakes the waiting calls
        await self._session.initialize()

    def _end(self) -> None:
        self.ended = True

    async def _answered(self, response: Any) -> None:
        """An HTTP answer: a 404 to a request naming the session says the server no longer
        knows it (it restarted, say), and no later request can reach it (the MCP spec's
        streamable HTTP transport, session management). Any other status fails one request
        only."""
        if response.status_code == 404 and _SESSION_HEADER in response.request.headers:
            self.ended = True

    async def tools(self) -> list[McpTool]:
        """The server's tools as it lists them now; none once it has failed (a listing that
        runs past ``timeout_s``, or fails because the connection is gone, fails it, with an
        ``McpWarning``); those it listed last when it answers the listing with an error."""
        if self.failure is not None:
            return []
        import asyncio  # noqa: PLC0415 - issue 10: building an agent loads no run machinery

        try:
            async with asyncio.timeout(self.server.timeout_s):
                listed = await self._listing()
        except Exception as exc:
            why = _reason(exc, self.server, timeout_s=self.server.timeout_s)
            if self.ended or isinstance(exc, TimeoutError):
                self._fail(f"listing its tools failed: {why}")
                return []
            # An error it answered with: the server is there, its tools as last listed stay.
            self.warn_once(
                f"MCP server {self.server.name!r}: listing its tools failed ({why}); its tools "
                "as last listed are offered"
            )
            return self._listed
        tools: dict[str, McpTool] = {}
        server = self.server.name
        for remote in listed:
            schema = remote.input_schema
            if schema and not (isinstance(schema, Mapping) and schema.get("type") == "object"):
                self.warn_once(
                    f"MCP server {server!r}: tool {remote.name!r} left out: its input schema "
                    "is not a JSON object schema, which the API refuses"
                )
                continue
            size = len(json.dumps(schema, ensure_ascii=False)) if schema else 0
            if size > SCHEMA_LIMIT:
                self.warn_once(
                    f"MCP server {server!r}: tool {remote.name!r} left out: its input schema "
                    f"is {size:,} characters of JSON, over {SCHEMA_LIMIT:,} (it would ride on "
                    "every request)"
                )
                continue
            tool = McpTool(self, remote.name, remote.description or "", schema)
            if tool.name in tools:
                self.warn_once(
                    f"MCP server {server!r}: tool {remote.name!r} left out: the server lists "
                    f"{tools[tool.name].remote_name!r} under the same name {tool.name!r}"
                )
                continue
            annotations = remote.annotations
            tool.read_only = bool(annotations is not None and annotations.read_only_hint)
            tools[tool.name] = tool
        self._listed = list(tools.values())
        return self._listed

    async def _listing(self) -> list[Any]:
        """The tools of every page of the server's list, :data:`PAGE_LIMIT` pages at most (a
        server may hand out cursors for ever)."""
        listed = await self._session.list_tools()
        found = list(listed.tools)
        for _ in range(PAGE_LIMIT - 1):
            cursor = getattr(listed, "next_cursor", None)
            if not cursor:
                return found
            from mcp.types import PaginatedRequestParams  # noqa: PLC0415 - lazy, as ``mcp``

            listed = await self._session.list_tools(params=PaginatedRequestParams(cursor=cursor))
            found.extend(listed.tools)
        if getattr(listed, "next_cursor", None):
            self.warn_once(
                f"MCP server {self.server.name!r}: only the first {PAGE_LIMIT} pages of its "
                "tool list are read"
            )
        return found

    async def call(self, name: str, arguments: Mapping[str, Any]) -> ToolOutput:
        """Call one tool; an MCP error result, or a server that is gone, becomes an error
        tool_result."""
        server = self.server.name
        if self.failure is not None:
            return ToolOutput(
                content=f"MCP server {server!r} is unavailable: {self.failure}", is_error=True
            )
        try:
            result = await self._session.call_tool(name, dict(arguments))
        except Exception as exc:
            why = _reason(exc, self.server)
            if self.ended:
                # Not an answer of the server's: the connection is gone (it exited, say).
                self._fail(f"the call of {name!r} failed: {why}")
            return ToolOutput(content=f"MCP server {server!r}: {why}", is_error=True)
        parts = _result_parts(getattr(result, "content", None) or ())
        if not parts and getattr(result, "structured_content", None) is not None:
            parts = (TextBlock(text=json.dumps(result.structured_content, ensure_ascii=False)),)
        return ToolOutput(content=parts or "", is_error=bool(getattr(result, "is_error", False)))


async def connect_all(
    servers: Sequence[McpServer], stack: contextlib.AsyncExitStack
) -> list[McpConnection]:
    """Open a connection to every server, all at once (all closed by ``stack``), so that
    servers that hang cost one ``timeout_s``, not one each. A server that does not start
    within its ``timeout_s`` is left out, with an ``McpWarning`` saying why; the warnings
    come, and the connections are listed, in the servers' order."""
    import asyncio  # noqa: PLC0415 - issue 10: building an agent loads no run machinery

    names = [server.name for server in servers]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise ConfigError(f"two MCP servers are called {', '.join(duplicates)}")
    connections = [McpConnection(server) for server in servers]

    async def close_all() -> None:
        await asyncio.gather(*(connection.close() for connection in connections))

    stack.push_async_callback(close_all)  # first: a cancelled start leaves nothing open
    async with asyncio.TaskGroup() as group:
        starting = [group.create_task(_started(connection)) for connection in connections]
    started = []
    for connection, task in zip(connections, starting, strict=True):
        failed = task.result()
        if failed is None:
            started.append(connection)
            continue
        server = connection.server
        warnings.warn(
            f"MCP server {server.name!r} left out of this run: it did not start: "
            f"{_reason(failed, server, timeout_s=server.timeout_s)}",
            McpWarning,
            stacklevel=2,
        )
    return started


async def _started(connection: McpConnection) -> Exception | None:
    """Start one connection: None, or what kept it from starting (not raised, lest the task
    group stop the other servers' starts)."""
    try:
        await connection.start()
    except Exception as exc:
        return exc
    return None


async def list_all(
    connections: Sequence[McpConnection], reserved: Collection[str] = ()
) -> list[McpTool]:
    """Every tool of every connection, as the servers list them now: all listed at once (a
    server that hangs costs one ``timeout_s``), the tools in the connections' order whatever
    the order the answers came in (the requests, and the prompt cache, see the same list). A
    tool whose name is ``reserved`` (the agent's own tools) or already a tool of an earlier
    server is left out with an ``McpWarning``: the API refuses a request naming a tool twice."""
    import asyncio  # noqa: PLC0415 - issue 10: building an agent loads no run machinery

    async with asyncio.TaskGroup() as group:
        listings = [group.create_task(connection.tools()) for connection in connections]
    tools: dict[str, McpTool] = {}
    for connection, listing in zip(connections, listings, strict=True):
        for tool in listing.result():
            taken = tools.get(tool.name)
            if tool.name in reserved or taken is not None:
                owner = (
                    "a tool of the agent's own"
                    if taken is None
                    else f"a tool of the MCP server {taken.connection.server.name!r}"
                )
                connection.warn_once(
                    f"MCP server {connection.server.name!r}: tool {tool.remote_name!r} left "
                    f"out: its name {tool.name!r} is {owner}"
                )
                continue
            tools[tool.name] = tool
    return list(tools.values())
