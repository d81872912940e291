"""Model clients: the ``Model`` protocol, the Anthropic client, and failure classification.

This module owns the boundary between the driver and a language model. A model streams one
response as raw Messages-API event dicts (``message_start``, ``content_block_start``,
``content_block_delta``, ``content_block_stop``, ``message_delta``, ``message_stop``) and
raises ``ModelFailure`` for every way a request can fail. The driver turns each yielded dict
into ``ModelStreamEvent``, the end of the iterator into ``ModelStreamClosed`` and a
``ModelFailure`` into ``ModelStreamFailed``; the core decides what happens next (DESIGN §8,
SPEC §8.3). A stream that ends without ``message_stop`` is *not* a failure here: the core sees
the missing stop reason and treats it as truncated.

``classify_failure`` is the one place that maps SDK and transport exceptions to a
``FailureKind``; ``classify_api_error`` holds the status/type/message rules so that the scripted
model in ``fsm_agent.testing`` reaches the same verdict without the SDK.

``anthropic`` takes about two seconds to import, so it is imported lazily inside methods:
importing this module never loads it (NOTES.md).
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, cast

import attrs
import orjson

from fsm_agent.core.events import FailureKind, ModelStreamFailed
from fsm_agent.credentials import named_credentials
from fsm_agent.errors import ConfigError, FsmAgentError
from fsm_agent.trace.json_limits import fit_for_json

if TYPE_CHECKING:
    import anthropic

__all__ = [
    "AnthropicModel",
    "Model",
    "ModelFailure",
    "ModelRequest",
    "Thinking",
    "TokenCounter",
    "checked_stream_event",
    "classify_api_error",
    "classify_failure",
    "is_media_too_large_message",
    "is_prompt_too_long_message",
    "parse_context_overflow",
    "parse_retry_after_ms",
]


@attrs.frozen(kw_only=True)
class ModelRequest:
    """One request to a model, in API shapes.

    Attributes:
        model: The model id to ask (the loop may switch it on fallback, SPEC §8.3).
        max_output_tokens: The output cap sent as ``max_tokens``.
        messages: API-shaped messages (``{"role": ..., "content": ...}``).
        system: The system prompt, as text or as API text blocks (which may carry
            ``cache_control``); empty means none is sent.
        tools: API tool definitions (``name``, ``description``, ``input_schema``).
    """

    model: str
    max_output_tokens: int
    messages: list[dict[str, Any]]
    system: str | list[dict[str, Any]] = ""
    tools: list[dict[str, Any]] = attrs.field(factory=list)


class ModelFailure(FsmAgentError):
    """A model request failed; carries what the core needs to pick a transition.

    Attributes:
        kind: How it failed (decides retry, compaction or a terminal reason).
        message: A human-readable explanation (the API's error message when there was one).
        status: The HTTP status of the response, if one arrived. An error event in the middle
            of a stream arrives on a ``200`` response, so it carries ``200``.
        retry_after_ms: The server's ``retry-after`` advice in milliseconds, if it gave one.
    """

    def __init__(
        self,
        *,
        kind: FailureKind,
        message: str,
        status: int | None = None,
        retry_after_ms: int | None = None,
        input_tokens: int | None = None,
        context_limit: int | None = None,
    ) -> None:
        self.kind = kind
        self.message = message
        self.status = status
        self.retry_after_ms = retry_after_ms
        self.input_tokens = input_tokens
        self.context_limit = context_limit
        where = f" (HTTP {status})" if status is not None else ""
        super().__init__(f"{kind.value}{where}: {message}")

    def to_event(self, request_id: str) -> ModelStreamFailed:
        """The event that tells the core about this failure."""
        return ModelStreamFailed(
            request_id=request_id,
            kind=self.kind,
            message=self.message,
            status=self.status,
            retry_after_ms=self.retry_after_ms,
            input_tokens=self.input_tokens,
            context_limit=self.context_limit,
        )

    def __repr__(self) -> str:
        return (
            f"ModelFailure(kind={self.kind}, message={self.message!r}, "
            f"status={self.status!r}, retry_after_ms={self.retry_after_ms!r})"
        )


class Model(Protocol):
    """Anything that can stream one model response.

    ``stream`` yields raw stream-event dicts in the Messages API wire shapes (no ``ping``),
    and raises ``ModelFailure`` for every failure. Ending without ``message_stop`` is allowed:
    that is a truncated stream, which the core recognises.
    """

    name: str

    def stream(self, request: ModelRequest) -> AsyncIterator[dict[str, Any]]:
        """Stream the response to ``request`` as raw event dicts."""
        ...


class TokenCounter(Protocol):
    """A ``Model`` that can also count a request's input tokens (``AnthropicModel``,
    ``ScriptedModel``); ``LoopConfig.count_tokens`` uses it when the model has it."""

    async def count_tokens(
        self,
        messages: list[dict[str, Any]],
        *,
        system: str = "",
        tools: list[dict[str, Any]] | None = None,
        model: str | None = None,
    ) -> int:
        """The input tokens of a request carrying ``messages``, ``system`` and ``tools``."""
        ...


def checked_stream_event(raw: object) -> dict[str, Any]:
    """A raw stream event as the core and the trace will both see it (DESIGN §5).

    The event must be a dict (the Messages API's event objects); one that holds what a trace
    line cannot (a lone surrogate, an integer past 64 bits, nesting too deep) is rewritten the
    way the trace writes it, so the live core sees what a replay will read back.

    Raises:
        ModelFailure: ``raw`` is not a dict: the model broke the stream protocol.
    """
    if type(raw) is not dict:
        raise ModelFailure(
            kind=FailureKind.OTHER,
            message=f"model protocol error: a stream event must be an object, "
            f"got {type(raw).__name__}",
        )
    try:
        orjson.dumps(raw)
    except orjson.JSONEncodeError:
        fitted: dict[str, Any] = fit_for_json(raw)
        return fitted
    return raw


def _encodable(arguments: dict[str, Any]) -> dict[str, Any]:
    """A request's arguments with every lone surrogate in its messages, system prompt and
    tools written as a ``\\uXXXX`` escape (:func:`~fsm_agent.trace.json_limits.fit_for_json`)."""
    fitted = dict(arguments)
    for key in ("messages", "system", "tools"):
        if isinstance(fitted.get(key), str | list):
            fitted[key] = fit_for_json(fitted[key])
    return fitted


# --- classification ------------------------------------------------------------------------

_PROMPT_TOO_LONG = re.compile(r"prompt is too long", re.IGNORECASE)
_MEDIA_TOO_LARGE = re.compile(
    r"image exceeds|image dimensions exceed|pdf exceeds|maximum of \d+ pdf pages",
    re.IGNORECASE,
)
_MEDIA_ERROR_CODES = frozenset({"image_dimensions_too_large"})


def is_prompt_too_long_message(text: str) -> bool:
    """Whether an API error message says the prompt is over the context window.

    The API gives this only as text ("prompt is too long: N tokens > M maximum"); this is the
    one place that reads it (NOTES.md).
    """
    return _PROMPT_TOO_LONG.search(text) is not None


_CONTEXT_OVERFLOW = re.compile(
    r"input length and `?max_tokens`? exceed context limit:\s*(\d+)\s*\+\s*(\d+)\s*>\s*(\d+)",
    re.IGNORECASE,
)


def parse_context_overflow(text: str) -> tuple[int, int, int] | None:
    """``(input tokens, max_tokens, context limit)`` from the API's 400 saying that input
    plus ``max_tokens`` exceeds the context limit (SPEC §8.3), or None for any other text."""
    found = _CONTEXT_OVERFLOW.search(text)
    if found is None:
        return None
    return int(found.group(1)), int(found.group(2)), int(found.group(3))


def is_media_too_large_message(text: str) -> bool:
    """Whether an API error message says an image or PDF is over a size, dimension or page limit."""
    return _MEDIA_TOO_LARGE.search(text) is not None


def parse_retry_after_ms(headers: Mapping[str, str] | None) -> int | None:
    """The ``retry-after-ms`` or ``retry-after`` (seconds) header in milliseconds.

    HTTP-date values are ignored (reading them needs the wall clock); so are negative or
    unparsable values.
    """
    if not headers:
        return None
    lowered = {key.lower(): value for key, value in headers.items()}
    for name, scale in (("retry-after-ms", 1.0), ("retry-after", 1000.0)):
        raw = lowered.get(name)
        if raw is None:
            continue
        try:
            value = float(raw) * scale
        except ValueError:
            continue
        if math.isfinite(value) and value >= 0:
            return math.ceil(value)
    return None


def classify_api_error(
    *,
    status: int,
    error_type: str | None,
    message: str,
    retry_after_ms: int | None = None,
    error_code: str | None = None,
) -> ModelFailure:
    """Classify an error response from the API (an HTTP error or an SSE ``error`` event).

    ``status`` is the HTTP status of the response; an SSE ``error`` event arrives on a ``200``
    response, so for it the body's ``error_type`` decides (NOTES.md: branch on the type, not the
    class). The rules, in order: overloaded (529 or ``overloaded_error``); request too large
    (413 or ``request_too_large``) counts as prompt too long; a 400 (or an in-stream
    ``invalid_request_error``) naming the prompt length or a media limit; rate limited (429 or
    ``rate_limit_error``); server error (5xx or ``api_error``); anything else is ``OTHER``.

    Args:
        status: The HTTP status of the response.
        error_type: ``error.type`` from the error body, if any.
        message: ``error.message`` from the body (or the whole error text).
        retry_after_ms: Parsed ``retry-after`` advice, if the response carried it.
        error_code: ``error.details.error_code`` from the body, if any.

    Returns:
        The failure to raise.
    """

    def failure(kind: FailureKind) -> ModelFailure:
        return ModelFailure(
            kind=kind, message=message, status=status, retry_after_ms=retry_after_ms
        )

    if status == 529 or error_type == "overloaded_error":
        return failure(FailureKind.OVERLOADED)
    if status == 413 or error_type == "request_too_large":
        return failure(FailureKind.PROMPT_TOO_LONG)
    if status == 400 or (status < 300 and error_type == "invalid_request_error"):
        if is_prompt_too_long_message(message):
            return failure(FailureKind.PROMPT_TOO_LONG)
        if error_code in _MEDIA_ERROR_CODES or is_media_too_large_message(message):
            return failure(FailureKind.MEDIA_TOO_LARGE)
        overflow = parse_context_overflow(message)
        if overflow is not None:
            return ModelFailure(
                kind=FailureKind.OUTPUT_OVERFLOW,
                message=message,
                status=status,
                input_tokens=overflow[0],
                context_limit=overflow[2],
            )
        return failure(FailureKind.OTHER)
    if status == 429 or error_type == "rate_limit_error":
        return failure(FailureKind.RATE_LIMITED)
    if status >= 500 or error_type == "api_error":
        return failure(FailureKind.SERVER_ERROR)
    return failure(FailureKind.OTHER)


def classify_failure(exc: BaseException) -> ModelFailure:
    """Map any exception raised while talking to a model to a ``ModelFailure``.

    Handles the ``anthropic`` SDK's errors (``APIStatusError`` and its subclasses, including
    the status-200 error raised for an SSE ``error`` event; ``APITimeoutError``;
    ``APIConnectionError``), the raw ``httpx2`` transport errors the SDK lets through in the
    middle of a body (``ReadTimeout``, ``RemoteProtocolError``, ``ReadError``...), and the
    builtin ``TimeoutError`` / ``ConnectionError``. Everything else is ``OTHER``. Neither the
    SDK nor ``httpx2`` is imported by this function: an exception of theirs can only exist
    once they are loaded.

    Args:
        exc: The exception caught around a model call.

    Returns:
        The failure to raise in its place (``exc`` itself if it already is one).
    """
    if isinstance(exc, ModelFailure):
        return exc
    text = str(exc) or type(exc).__name__
    anthropic_module = sys.modules.get("anthropic")
    if anthropic_module is not None:
        sdk = cast("Any", anthropic_module)
        if isinstance(exc, sdk.APIStatusError):
            status_error = cast("anthropic.APIStatusError", exc)
            api_message = status_error.api_message
            return classify_api_error(
                status=status_error.status_code,
                error_type=status_error.type,
                message=api_message if isinstance(api_message, str) else text,
                retry_after_ms=parse_retry_after_ms(status_error.response.headers),
                error_code=status_error.error_code,
            )
        # APITimeoutError subclasses APIConnectionError: test it first.
        if isinstance(exc, sdk.APITimeoutError):
            return ModelFailure(kind=FailureKind.TIMEOUT, message=text)
        if isinstance(exc, sdk.APIConnectionError):
            return ModelFailure(kind=FailureKind.CONNECTION, message=_with_cause(text, exc))
    httpx2_module = sys.modules.get("httpx2")
    if httpx2_module is not None:
        transport = cast("Any", httpx2_module)
        if isinstance(exc, transport.TimeoutException):
            return ModelFailure(kind=FailureKind.TIMEOUT, message=_with_cause(text, exc))
        if isinstance(exc, transport.NetworkError | transport.RemoteProtocolError):
            return ModelFailure(kind=FailureKind.CONNECTION, message=text)
    if isinstance(exc, TimeoutError):
        return ModelFailure(kind=FailureKind.TIMEOUT, message=text)
    if isinstance(exc, ConnectionError):
        return ModelFailure(kind=FailureKind.CONNECTION, message=text)
    return ModelFailure(kind=FailureKind.OTHER, message=f"{type(exc).__name__}: {text}")


def _with_cause(text: str, exc: BaseException) -> str:
    """``text`` followed by the underlying cause, when the SDK wrapped one."""
    cause = exc.__cause__
    if cause is None or not str(cause):
        return text
    return f"{text} ({type(cause).__name__}: {cause})"


# --- the Anthropic client ------------------------------------------------------------------


def _event_from_frame(client: Any, frame: Any, response: Any) -> dict[str, Any] | None:
    """One SSE frame as the event dict the core takes; None for frames that carry none.

    The SDK's own rules (NOTES.md): a frame without an ``event:`` line, a ``ping`` and an
    empty frame are dropped; an ``error`` frame is the API marking the stream as failed, and
    is raised as the same ``APIStatusError`` the SDK's own stream raises for it.
    """
    name, data = frame.event, frame.data
    if name is None or name == "ping" or not data:
        return None
    payload: Any
    try:
        payload = orjson.loads(data)
    except orjson.JSONDecodeError:
        # orjson refuses what JSON allows and a model may send (an integer past 64 bits, a
        # lone surrogate escape); the standard parser reads it, key order kept as well.
        try:
            payload = json.loads(data)
        except ValueError:
            payload = None
    if name == "error":
        # The SDK's constructor for this case (its stream calls the same one).
        raise client._make_status_error(
            str(payload if payload is not None else data), body=payload, response=response
        )
    if not isinstance(payload, dict):
        raise ModelFailure(
            kind=FailureKind.OTHER,
            message=f"a {name} frame is not a JSON object: {data[:200]!r}",
            status=response.status_code,
        )
    return payload


@attrs.frozen(kw_only=True)
class Thinking:
    """Extended thinking settings for ``AnthropicModel``.

    Build one with ``Thinking.enabled(budget_tokens)`` (a fixed budget) or
    ``Thinking.adaptive()`` (the model decides how much to think).
    """

    mode: str
    budget_tokens: int | None = None

    @classmethod
    def enabled(cls, budget_tokens: int) -> Thinking:
        """Thinking with a budget of ``budget_tokens`` (at least 1 024, below ``max_tokens``)."""
        if budget_tokens < _MIN_THINKING_BUDGET:
            raise ConfigError(
                f"Thinking.enabled: budget_tokens is {budget_tokens}; the API needs at least "
                f"{_MIN_THINKING_BUDGET}"
            )
        return cls(mode="enabled", budget_tokens=budget_tokens)

    @classmethod
    def adaptive(cls) -> Thinking:
        """Adaptive thinking: the model chooses when and how much to think."""
        return cls(mode="adaptive")

    def to_api(self) -> dict[str, Any]:
        """The ``thinking`` request parameter."""
        if self.budget_tokens is None:
            return {"type": self.mode}
        return {"type": self.mode, "budget_tokens": self.budget_tokens}


_MIN_THINKING_BUDGET = 1024

_CREDENTIAL_ENVS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")
"""Where the SDK finds the credential no ``api_key`` names."""
_CUSTOM_HEADERS_ENV = "ANTHROPIC_CUSTOM_HEADERS"
"""Headers the SDK adds to every request, one ``Name: value`` a line."""
_CLIENT_CREDENTIALS = ("api_key", "auth_token")
"""The attributes an SDK client keeps its credentials in."""


class AnthropicModel:
    """A ``Model`` backed by the ``anthropic`` SDK's async client.

    Without ``client``, one is created on first use with ``max_retries=0``: the loop retries,
    bounded and recorded, instead of the SDK's unbounded ``retry-after`` waits (NOTES.md,
    SPEC §8.3). A ``client`` you pass (an ``AsyncAnthropic``, or a Bedrock or Vertex one) is
    used as it is; give it ``max_retries=0`` for the same reason.

    The stream is read as the server sent it: the SDK makes the request and raises its errors,
    and each SSE frame's JSON is parsed as received, so every block, delta, field and unknown
    event reaches the core with its keys in wire order (an opaque block goes back byte for
    byte). ``ping`` frames are dropped; an ``error`` frame raises ``ModelFailure``.

    Use it as an async context manager, or call ``aclose`` when done, to release the
    connection pool of a client it created.
    """

    def __init__(
        self,
        *,
        name: str,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = 600.0,
        client: anthropic.AsyncAnthropic | Any | None = None,
        thinking: Thinking | None = None,
        extra_headers: Mapping[str, str] | None = None,
        betas: Sequence[str] = (),
    ) -> None:
        """Configure the client; nothing is imported or connected yet.

        Args:
            name: The model id this client stands for (requests carry their own ``model``).
            api_key: The API key; ``None`` lets the SDK find credentials (environment, profile).
            base_url: Another API endpoint (a proxy, or the fake server in tests).
            timeout: Seconds allowed for connecting and for each read.
            client: An existing async client (``AsyncAnthropic``, ``AsyncAnthropicBedrock``,
                ``AsyncAnthropicVertex``); then ``api_key``, ``base_url`` and ``timeout`` must
                not be given, and ``aclose`` leaves the client open.
            thinking: Extended thinking for every request (``Thinking.enabled(budget)`` or
                ``Thinking.adaptive()``).
            extra_headers: Headers added to every request.
            betas: Beta flags, sent as the ``anthropic-beta`` header.

        Raises:
            ConfigError: ``client`` given together with ``api_key``, ``base_url`` or a
                ``timeout``.
        """
        if client is not None and (api_key is not None or base_url is not None):
            raise ConfigError(
                "AnthropicModel: pass either client= or api_key=/base_url=, not both "
                "(the client already knows its key and endpoint)"
            )
        self.name = name
        self._api_key = api_key
        self._base_url = base_url
        self._timeout = timeout
        self._client: Any = client
        self._owns_client = client is None
        self._thinking = thinking
        headers = dict(extra_headers or {})
        if betas:
            headers["anthropic-beta"] = ",".join(betas)
        self._headers = headers

    def __repr__(self) -> str:
        # Never show the key.
        return f"AnthropicModel(name={self.name!r}, base_url={self._base_url!r})"

    @property
    def secrets(self) -> tuple[str, ...]:
        """The credentials this model sends, wherever the client finds them: the ``api_key``
        given, else the ``ANTHROPIC_API_KEY`` or ``ANTHROPIC_AUTH_TOKEN`` the SDK reads; the
        key and token of a ``client`` passed in; the values of headers under a credential's
        name (``Authorization``, ``x-api-key``, ...) in ``extra_headers`` or the SDK's
        ``ANTHROPIC_CUSTOM_HEADERS``, and the token after a ``Bearer`` in them. The agent
        keeps them out of its traces and spans (DESIGN §8). Credentials the SDK mints while
        it runs (a profile's or a federation's access tokens) are not known here."""
        found: list[object] = []
        if self._client is not None:
            found += [getattr(self._client, name, None) for name in _CLIENT_CREDENTIALS]
        elif self._api_key is not None:
            found.append(self._api_key)
        else:
            found += [os.environ.get(name) for name in _CREDENTIAL_ENVS]
        custom = os.environ.get(_CUSTOM_HEADERS_ENV, "").splitlines()
        headers = [(name, value) for name, _, value in (line.partition(":") for line in custom)]
        found += named_credentials([*headers, *self._headers.items()])
        return tuple(dict.fromkeys(value for value in found if isinstance(value, str) and value))

    def _get_client(self) -> Any:
        if self._client is None:
            import anthropic  # noqa: PLC0415 - lazy on purpose: the import costs ~2 s

            self._client = anthropic.AsyncAnthropic(
                api_key=self._api_key,
                base_url=self._base_url,
                timeout=self._timeout,
                max_retries=0,
            )
            self._owns_client = True
        return self._client

    def _create_arguments(self, request: ModelRequest) -> dict[str, Any]:
        """The keyword arguments of ``messages.create`` for ``request`` (no SDK needed)."""
        arguments: dict[str, Any] = {
            "model": request.model,
            "max_tokens": request.max_output_tokens,
            "messages": request.messages,
            "stream": True,
        }
        if request.system:
            arguments["system"] = request.system
        if request.tools:
            arguments["tools"] = request.tools
        if self._thinking is not None:
            arguments["thinking"] = self._thinking.to_api()
        if self._headers:
            arguments["extra_headers"] = self._headers
        return arguments

    async def stream(self, request: ModelRequest) -> AsyncIterator[dict[str, Any]]:
        """Stream the response to ``request`` as raw event dicts (``ping`` dropped).

        Raises:
            ModelFailure: For every failure, classified by ``classify_failure``.
        """
        import anthropic  # noqa: PLC0415 - lazy on purpose: the import costs ~2 s

        try:
            client = self._get_client()
            arguments = self._create_arguments(request)
            try:
                opened = client.messages.with_streaming_response.create(**arguments)
                response = await opened.__aenter__()
            except UnicodeEncodeError:
                # Text that was not UTF-8 (bytes pasted into a prompt, a hook's output) holds
                # lone surrogates, which no request body can carry; the body was never sent.
                # It goes with each written as a ``\uXXXX`` escape, as the trace writes it.
                opened = client.messages.with_streaming_response.create(**_encodable(arguments))
                response = await opened.__aenter__()
        except Exception as exc:
            raise classify_failure(exc) from exc
        try:
            frames = anthropic.AsyncStream.raw_events(response.http_response).__aiter__()
            while True:
                # Only the SDK's own reads are classified: an exception thrown into this
                # generator by its consumer propagates unchanged.
                try:
                    frame = await anext(frames)
                    event = _event_from_frame(client, frame, response.http_response)
                except StopAsyncIteration:
                    return
                except Exception as exc:
                    raise classify_failure(exc) from exc
                if event is not None:
                    yield event
        finally:
            await opened.__aexit__(None, None, None)

    async def count_tokens(
        self,
        messages: list[dict[str, Any]],
        *,
        system: str = "",
        tools: list[dict[str, Any]] | None = None,
        model: str | None = None,
    ) -> int:
        """Ask the API how many input tokens ``messages`` (with ``system`` and ``tools``) take.

        Raises:
            ModelFailure: For every failure, classified by ``classify_failure``.
        """
        import anthropic  # noqa: PLC0415 - lazy on purpose: the import costs ~2 s

        arguments: dict[str, Any] = {
            "model": model or self.name,
            "messages": messages,
            "system": system or anthropic.omit,
            "tools": tools or anthropic.omit,
        }
        try:
            client = self._get_client()
            try:
                counted = await client.messages.count_tokens(**arguments)
            except UnicodeEncodeError:  # as in stream: lone surrogates, escaped
                counted = await client.messages.count_tokens(**_encodable(arguments))
        except Exception as exc:
            raise classify_failure(exc) from exc
        return int(counted.input_tokens)

    async def aclose(self) -> None:
        """Close the SDK client it created and its connection pool (a later request opens a
        new one); a client passed in stays open, for its owner to close."""
        if not self._owns_client:
            return
        client, self._client = self._client, None
        if client is not None:
            await client.close()

    async def __aenter__(self) -> AnthropicModel:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
