"""A fake Anthropic Messages API on 127.0.0.1 that plays a scenario over real HTTP.

``FakeAnthropicServer`` lets integration tests drive the real ``anthropic`` SDK (and so the
real ``httpx2`` transport, SSE decoder and exception classes) through every fault the loop must
survive: HTTP error responses with the API's JSON error bodies, an SSE ``error`` event part-way
through a stream, a connection dropped mid-body, a stalled server, a stream that ends without
``message_stop``. The scenario format and the event rendering live in
``fsm_agent.testing.scenario``; this module owns only the bytes on the wire.

It is written on ``asyncio`` streams (no HTTP framework) to control every byte: the SSE frames
are ``event: <name>\\ndata: <one-line JSON>\\n\\n`` sent in a chunked body, so a dropped
connection is an incomplete body to the client, while a truncated stream ends cleanly. Every
response closes its connection. The server binds only 127.0.0.1, on a port the OS chooses.

A request whose custom tools the API would refuse (a name outside ``[a-zA-Z0-9_-]{1,64}``, a
name used twice, an input schema that is not an object schema) gets the API's 400
``invalid_request_error`` and takes no step.

Endpoints: ``POST /v1/messages`` (streamed or not; each call takes the next scenario step) and
``POST /v1/messages/count_tokens`` (characters / 4; takes no step). Any credentials are
accepted (``Authorization: Bearer`` or ``x-api-key``) and redacted in ``requests``.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import http
import json
import re
import threading
from types import TracebackType
from typing import Any

import attrs

from fsm_agent.testing.scenario import (
    DEFAULT_MODEL,
    ErrorKind,
    ErrorSpec,
    Scenario,
    Step,
    render_events,
    render_message,
)
from fsm_agent.testing.token_count import estimated_input_tokens
from fsm_agent.trace.redact import is_sensitive_key

__all__ = ["FakeAnthropicServer", "RecordedRequest"]

HOST = "127.0.0.1"
REDACTED = "[redacted]"
_MAX_BODY = 64 * 1024 * 1024
_START_TIMEOUT_S = 5.0
_RETRYABLE_STATUSES = frozenset({408, 409, 429})
RATE_LIMIT_HEADERS = {
    "anthropic-ratelimit-requests-limit": "4000",
    "anthropic-ratelimit-requests-remaining": "3999",
    "anthropic-ratelimit-requests-reset": "2026-01-01T00:00:01Z",
    "anthropic-ratelimit-input-tokens-limit": "2000000",
    "anthropic-ratelimit-input-tokens-remaining": "2000000",
    "anthropic-ratelimit-input-tokens-reset": "2026-01-01T00:00:01Z",
    "anthropic-ratelimit-output-tokens-limit": "400000",
    "anthropic-ratelimit-output-tokens-remaining": "400000",
    "anthropic-ratelimit-output-tokens-reset": "2026-01-01T00:00:01Z",
}
"""The rate-limit headers every API response carries (fixed values: nothing is limited)."""
_STOP_TIMEOUT_S = 10.0


@attrs.frozen(kw_only=True)
class RecordedRequest:
    """One request the server received.

    Attributes:
        method: The HTTP method.
        path: The path, without the query string.
        headers: Header names lower-cased; credentials replaced by ``[redacted]``.
        body: The decoded JSON body (``None`` if there was none or it was not JSON).
    """

    method: str
    path: str
    headers: dict[str, str]
    body: Any


class _BadRequest(Exception):
    """The client sent something this server cannot parse."""


@attrs.frozen(kw_only=True)
class _Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


def _reason(status: int) -> str:
    if status == 529:
        return "Overloaded"
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return "Error"


def _sse(name: str, data: dict[str, Any]) -> bytes:
    # The SDK drops frames without an ``event:`` line (NOTES.md); data must be one line.
    payload = json.dumps(data, separators=(",", ":"))
    return f"event: {name}\ndata: {payload}\n\n".encode()


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


_LAST_CHUNK = b"0\r\n\r\n"


class FakeAnthropicServer:
    """A local HTTP server that answers Messages API calls from a scenario.

    Use ``with FakeAnthropicServer(scenario) as server:`` (the server runs on its own event
    loop in a background thread) or ``async with`` (it runs on the current loop). Point the SDK
    at ``server.base_url``.

    Attributes:
        scenario: The script; each ``POST /v1/messages`` takes the next step.
        requests: Every request received, in order, with credentials redacted.
    """

    def __init__(self, scenario: Scenario) -> None:
        """Prepare a server for ``scenario``; nothing listens until it is entered."""
        self.scenario = scenario
        self.requests: list[RecordedRequest] = []
        self._steps_taken = 0
        self._server: asyncio.Server | None = None
        self._port: int | None = None
        self._handlers: set[asyncio.Task[None]] = set()
        self._thread: threading.Thread | None = None
        self._thread_loop: asyncio.AbstractEventLoop | None = None

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>`` of the running server."""
        if self._port is None:
            raise RuntimeError("FakeAnthropicServer is not running: enter it with `with` first")
        return f"http://{HOST}:{self._port}"

    @property
    def message_requests(self) -> list[RecordedRequest]:
        """The recorded ``POST /v1/messages`` requests (the ones that took a step)."""
        return [r for r in self.requests if r.path == "/v1/messages"]

    # --- lifecycle ---------------------------------------------------------------------

    async def astart(self) -> None:
        """Start listening on the running event loop."""
        if self._server is not None:
            raise RuntimeError("FakeAnthropicServer is already running")
        self._server = await asyncio.start_server(self._handle, host=HOST, port=0)
        self._port = self._server.sockets[0].getsockname()[1]

    async def astop(self) -> None:
        """Stop listening, cut every open connection and wait for the handlers to finish."""
        server, self._server = self._server, None
        if server is None:
            return
        server.close()
        handlers = list(self._handlers)
        for task in handlers:
            task.cancel()
        await asyncio.gather(*handlers, return_exceptions=True)
        await server.wait_closed()
        self._port = None

    def start(self) -> None:
        """Start the server on its own event loop in a background thread."""
        if self._thread is not None:
            raise RuntimeError("FakeAnthropicServer is already running")
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name="fake-anthropic", daemon=True)
        thread.start()
        self._thread, self._thread_loop = thread, loop
        try:
            asyncio.run_coroutine_threadsafe(self.astart(), loop).result(_START_TIMEOUT_S)
        except BaseException:
            self._shut_thread()
            raise

    def stop(self) -> None:
        """Stop a server started with ``start``."""
        loop = self._thread_loop
        if loop is None:
            return
        try:
            asyncio.run_coroutine_threadsafe(self.astop(), loop).result(_STOP_TIMEOUT_S)
        finally:
            self._shut_thread()

    def _shut_thread(self) -> None:
        loop, thread = self._thread_loop, self._thread
        self._thread_loop = self._thread = None
        if loop is None or thread is None:
            return
        loop.call_soon_threadsafe(loop.stop)
        thread.join(_STOP_TIMEOUT_S)
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()

    def __enter__(self) -> FakeAnthropicServer:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    async def __aenter__(self) -> FakeAnthropicServer:
        await self.astart()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.astop()

    # --- one connection ----------------------------------------------------------------

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._handlers.add(task)
        abort = True
        try:
            try:
                request = await _read_request(reader)
            except _BadRequest as exc:
                await _send_json(writer, 400, _error_body("invalid_request_error", str(exc)))
                abort = False
            else:
                abort = False if request is None else await self._respond(request, writer)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        except asyncio.CancelledError:
            # Only ``astop`` cancels a handler. End the task normally: Python 3.11's stream
            # callback calls ``task.exception()``, which raises on a cancelled task.
            writer.transport.abort()
            return
        finally:
            if task is not None:
                self._handlers.discard(task)
        if abort:
            writer.transport.abort()
            return
        writer.close()
        with contextlib.suppress(ConnectionError, OSError):
            await writer.wait_closed()

    async def _respond(self, request: _Request, writer: asyncio.StreamWriter) -> bool:
        """Answer one request; return True when the connection must be cut, not closed."""
        body: Any = None
        if request.body:
            with contextlib.suppress(ValueError):
                body = json.loads(request.body)
        headers = {
            name: REDACTED if is_sensitive_key(name) else value
            for name, value in request.headers.items()
        }
        self.requests.append(
            RecordedRequest(method=request.method, path=request.path, headers=headers, body=body)
        )
        if request.method != "POST" or request.path not in {
            "/v1/messages",
            "/v1/messages/count_tokens",
        }:
            await _send_json(
                writer,
                404,
                _error_body("not_found_error", f"{request.method} {request.path} not found"),
            )
            return False
        if request.path == "/v1/messages/count_tokens":
            await _send_json(writer, 200, {"input_tokens": estimated_input_tokens(body)})
            return False
        if not isinstance(body, dict):
            await _send_json(
                writer, 400, _error_body("invalid_request_error", "body must be a JSON object")
            )
            return False
        refused = _tools_problem(body.get("tools"))
        if refused is not None:
            await _send_json(writer, 400, _error_body("invalid_request_error", refused))
            return False

        steps = self.scenario.steps
        if self._steps_taken >= len(steps):
            message = f"fake server: scenario exhausted after {len(steps)} requests"
            await _send_json(writer, 400, _error_body("invalid_request_error", message))
            return False
        self._steps_taken += 1
        step = steps[self._steps_taken - 1]
        request_id = f"req_{self._steps_taken:03d}"
        model = body.get("model")
        if not isinstance(model, str):
            model = DEFAULT_MODEL
        if body.get("stream") is True:
            return await _stream_step(writer, step, model=model, request_id=request_id)
        # A JSON answer is compressed when the client asks for it, as the API does.
        gzip_ok = "gzip" in request.headers.get("accept-encoding", "")
        return await _answer_step(writer, step, model=model, request_id=request_id, gzip_ok=gzip_ok)


# --- HTTP plumbing -------------------------------------------------------------------------


async def _read_request(reader: asyncio.StreamReader) -> _Request | None:
    """Read one HTTP/1.1 request; ``None`` if the client closed before sending one."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as exc:
        if not exc.partial.strip():
            return None
        raise _BadRequest("incomplete request head") from exc
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3:
        raise _BadRequest(f"bad request line {lines[0]!r}")
    method, target, _version = parts
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if not line:
            continue
        name, sep, value = line.partition(":")
        if not sep:
            raise _BadRequest(f"bad header line {line!r}")
        headers[name.strip().lower()] = value.strip()
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = await _read_chunked(reader)
    else:
        try:
            length = int(headers.get("content-length", "0"))
        except ValueError as exc:
            raise _BadRequest("bad content-length") from exc
        if not 0 <= length <= _MAX_BODY:
            raise _BadRequest("content-length out of range")
        body = await reader.readexactly(length)
    return _Request(method=method, path=target.split("?", 1)[0], headers=headers, body=body)


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    body = bytearray()
    while True:
        size_line = await reader.readuntil(b"\r\n")
        try:
            size = int(size_line.split(b";", 1)[0].strip(), 16)
        except ValueError as exc:
            raise _BadRequest("bad chunk size") from exc
        if size == 0:
            # Trailers (if any) end with an empty line.
            while (await reader.readuntil(b"\r\n")) != b"\r\n":
                pass
            return bytes(body)
        if len(body) + size > _MAX_BODY:
            raise _BadRequest("body too large")
        body += await reader.readexactly(size)
        await reader.readexactly(2)


def _head(status: int, headers: dict[str, str]) -> bytes:
    lines = [f"HTTP/1.1 {status} {_reason(status)}"]
    lines.extend(f"{name}: {value}" for name, value in {**headers, "connection": "close"}.items())
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


async def _send_json(
    writer: asyncio.StreamWriter,
    status: int,
    payload: Any,
    *,
    extra_headers: dict[str, str] | None = None,
) -> None:
    data = json.dumps(payload).encode()
    headers = {
        "content-type": "application/json",
        "content-length": str(len(data)),
        **(extra_headers or {}),
    }
    writer.write(_head(status, headers) + data)
    await writer.drain()


_TOOL_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")


def _tools_problem(tools: object) -> str | None:
    """What the API says of a request's custom tools it refuses (a name outside its pattern,
    a name used twice, an input schema that is not an object schema), or None."""
    if not isinstance(tools, list):
        return None
    seen: set[str] = set()
    for index, tool in enumerate(tools):
        if not isinstance(tool, dict) or "input_schema" not in tool:
            continue  # a server tool (web search...), which has a type and no schema
        name = tool.get("name")
        if not isinstance(name, str) or not _TOOL_NAME.fullmatch(name):
            return (
                f"tools.{index}.custom.name: String should match pattern '^{_TOOL_NAME.pattern}$'"
            )
        if name in seen:
            return f"tools: Tool names must be unique. ({name!r} is used twice)"
        seen.add(name)
        schema = tool["input_schema"]
        if not isinstance(schema, dict) or schema.get("type") != "object":
            return f"tools.{index}.custom.input_schema.type: Input should be 'object'"
    return None


def _error_body(error_type: str, message: str, request_id: str = "req_000") -> dict[str, Any]:
    return {
        "type": "error",
        "error": {"type": error_type, "message": message},
        "request_id": request_id,
    }


async def _send_http_error(
    writer: asyncio.StreamWriter, error: ErrorSpec, *, request_id: str
) -> None:
    # The API tells clients whether a retry may help (the SDK reads x-should-retry first).
    retry = error.http_status in _RETRYABLE_STATUSES or error.http_status >= 500
    headers = {
        "request-id": request_id,
        "x-should-retry": "true" if retry else "false",
        **RATE_LIMIT_HEADERS,
    }
    seconds = error.retry_after_seconds
    if seconds is not None:
        headers["retry-after"] = f"{seconds:g}"
    await _send_json(
        writer,
        error.http_status,
        error.body(request_id=request_id),
        extra_headers=headers,
    )


async def _answer_step(
    writer: asyncio.StreamWriter, step: Step, *, model: str, request_id: str, gzip_ok: bool
) -> bool:
    """Answer a non-streamed request; return True when the connection must be cut."""
    error = step.error
    if error is not None:
        cut = await _fault_before_response(writer, error, request_id=request_id)
        if cut is not None:
            return cut
    if step.delay_ms:
        await asyncio.sleep(step.delay_ms / 1000)
    data = json.dumps(render_message(step, model=model)).encode()
    headers = {"content-type": "application/json", "request-id": request_id, **RATE_LIMIT_HEADERS}
    if gzip_ok:
        data = gzip.compress(data, mtime=0)
        headers["content-encoding"] = "gzip"
    headers["content-length"] = str(len(data))
    if error is not None and error.kind is ErrorKind.TRUNCATED:
        # The declared length promises more than is sent: the client sees a cut body.
        writer.write(_head(200, headers) + data[: len(data) // 2])
        await writer.drain()
        return True
    writer.write(_head(200, headers) + data)
    await writer.drain()
    return False


async def _fault_before_response(
    writer: asyncio.StreamWriter, error: ErrorSpec, *, request_id: str
) -> bool | None:
    """Play a fault that strikes before the response: an HTTP error (False: the connection
    may stay), a dropped connection (True: cut it), or a stall (None: then answer)."""
    if error.is_http:
        await _send_http_error(writer, error, request_id=request_id)
        return False
    if error.kind is ErrorKind.CONNECTION:
        return True
    if error.kind is ErrorKind.TIMEOUT:
        await asyncio.sleep(error.stall_ms / 1000)
    return None


async def _stream_step(
    writer: asyncio.StreamWriter, step: Step, *, model: str, request_id: str
) -> bool:
    """Answer a streamed request with SSE; return True when the connection must be cut."""
    if step.sse is not None:
        return await _play_recorded(writer, step.sse, request_id=request_id)
    error = step.error
    events = render_events(step, model=model, complete=True)
    if error is not None and not error.in_stream:
        cut = await _fault_before_response(writer, error, request_id=request_id)
        if cut is not None:
            return cut
        if error.kind is ErrorKind.TIMEOUT:
            error = None  # after the stall, a patient client gets the whole stream

    writer.write(_head(200, _stream_headers(request_id)))
    await writer.drain()
    sent = len(events) if error is None else error.events_before_failure(len(events))
    await _send_events(writer, step, events[:sent])
    if error is None or error.kind is ErrorKind.TRUNCATED:
        writer.write(_LAST_CHUNK)
        await writer.drain()
        return False
    if error.kind is ErrorKind.CONNECTION:
        return True
    if error.kind is ErrorKind.TIMEOUT:
        await asyncio.sleep(error.stall_ms / 1000)
        await _send_events(writer, step, events[sent:], pinged=sent > 0)
        writer.write(_LAST_CHUNK)
        await writer.drain()
        return False
    # An HTTP kind part-way through: the API sends an SSE error event on the 200 response.
    writer.write(_chunk(_sse("error", error.body(request_id=request_id))) + _LAST_CHUNK)
    await writer.drain()
    return False


async def _play_recorded(writer: asyncio.StreamWriter, body: str, *, request_id: str) -> bool:
    """Send a recorded SSE body byte for byte, one chunk per frame as a server flushes them."""
    writer.write(_head(200, _stream_headers(request_id)))
    data = body.encode()
    start = 0
    while start < len(data):
        end = data.find(b"\n\n", start)
        end = len(data) if end < 0 else end + 2
        writer.write(_chunk(data[start:end]))
        await writer.drain()
        start = end
    writer.write(_LAST_CHUNK)
    await writer.drain()
    return False


def _stream_headers(request_id: str) -> dict[str, str]:
    return {
        "content-type": "text/event-stream; charset=utf-8",
        "cache-control": "no-cache",
        "transfer-encoding": "chunked",
        "request-id": request_id,
        **RATE_LIMIT_HEADERS,
    }


async def _send_events(
    writer: asyncio.StreamWriter, step: Step, events: list[dict[str, Any]], *, pinged: bool = False
) -> None:
    """Send events; a ``ping`` follows the first content_block_start, where the real API
    puts it (a response without content blocks gets none)."""
    for event in events:
        await _send_event(writer, step, event)
        if not pinged and event["type"] == "content_block_start":
            pinged = True
            writer.write(_chunk(_sse("ping", {"type": "ping"})))
            await writer.drain()


async def _send_event(writer: asyncio.StreamWriter, step: Step, event: dict[str, Any]) -> None:
    if step.delay_ms:
        await asyncio.sleep(step.delay_ms / 1000)
    writer.write(_chunk(_sse(str(event["type"]), event)))
    await writer.drain()
