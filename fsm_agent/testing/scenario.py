"""Scripted model responses: the scenario format, its renderer, and ``ScriptedModel``.

A scenario says, for each model request in order, what the model does: answer with some content
blocks, or fail in a named way. ``ScriptedModel`` plays a scenario in-process;
``fsm_agent.testing.fake_server.FakeAnthropicServer`` plays the same scenario over real HTTP to
the real SDK. Both build their events with ``render_events`` and their failures with
``scripted_failure``, so the two never disagree.

The format (JSON; every key except ``steps`` and a step's content is optional)::

    {
      "description": "Read a file, hit an overload, then answer.",
      "steps": [
        {"content": [{"thinking": "Look at the README first."},
                     {"tool_use": {"name": "Read", "input": {"file_path": "README.md"}}}],
         "usage": {"input_tokens": 120, "output_tokens": 30}},
        {"error": {"kind": "overloaded"}},
        {"content": [{"text": "The README says hello."}], "chunk": 8, "delay_ms": 5},
        {"content": [{"text": "A long answer that"}], "stop_reason": "max_tokens"},
        {"content": [{"text": "cut off"}], "error": {"kind": "connection", "mid_stream_after": 3}}
      ]
    }

A step:

* ``content``: blocks, each ``{"text": "...", "citations": [...]}`` (citations optional),
  ``{"thinking": "...", "signature": "..."}``, ``{"redacted_thinking": "<data>"}``,
  ``{"tool_use": {"name": "Read", "input": {...}, "id": "toolu_x"}}``,
  ``{"server_tool_use": {"id": "srvtoolu_x", "name": "web_search", "input": {...}}}`` or
  ``{"block": {"type": "web_search_tool_result", ...}}`` (any other block, sent as given).
  Blocks are streamed as the real API streams them (an empty first ``partial_json``, an empty
  ``thinking_delta`` before the signature, citations before their text). Tool ids default to
  ``toolu_001``, ``toolu_002``... counted across the scenario; the message id to ``msg_001``...
  by step (or set ``"message_id"``).
* ``stop_reason``: ``tool_use`` when a tool_use block is present, else ``end_turn``; any API
  stop reason may be given (``max_tokens``, ``refusal``...). ``stop_details``: the object the
  API sends with it (a refusal's ``category`` and ``explanation``).
* ``usage``: ``input_tokens`` (default 10), ``output_tokens`` (default: characters / 4),
  ``cache_creation_input_tokens``, ``cache_read_input_tokens`` (default 0).
* ``chunk``: split text, thinking and tool-input JSON into deltas of this many characters
  (default: one delta per block).
* ``delay_ms``: wait this long before each event.
* ``sse``: a recorded SSE response body (``event:``/``data:`` frames) played instead of
  ``content``: the fake server sends it byte for byte; ``ScriptedModel`` yields its events as
  the SDK reads them (``ping`` and frames without an ``event:`` line dropped, an ``error``
  frame raised as the API error it carries).
* ``error``: fail instead of (or part-way through) the response:

  - ``kind``: ``overloaded`` (529), ``rate_limited`` (429 with ``retry-after``),
    ``server_error`` (500), ``prompt_too_long`` (400 "prompt is too long: ..."),
    ``media_too_large`` (400 "image exceeds ..."), ``request_too_large`` (413),
    ``output_overflow`` (400 "input length and `max_tokens` exceed context limit"), ``other``
    (400 that matches nothing), ``connection`` (connection dropped), ``timeout`` (the server
    stalls), ``truncated`` (the stream ends early without ``message_stop``; no exception).
  - ``status``, ``type``, ``message``: override the HTTP status, ``error.type`` and
    ``error.message`` of the HTTP kinds.
  - ``mid_stream_after``: emit this many events of the response, then fail. For the HTTP
    kinds the failure is then an SSE ``error`` event on a 200 response; without it they are
    an HTTP error response. ``truncated`` defaults to every event but ``message_stop``.
  - ``retry_after``: seconds sent as ``retry-after`` (``rate_limited`` defaults to 1).
  - ``stall_ms``: how long the fake server stalls for ``timeout`` (default 30 000); the
    scripted model raises the timeout at once.
"""

from __future__ import annotations

import asyncio
import collections
import enum
import json
import math
import re
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from importlib import resources
from os import PathLike
from pathlib import Path
from typing import Any, TypeAlias

import attrs
import cattrs
from cattrs.v import format_exception, transform_error

from fsm_agent.core.events import FailureKind
from fsm_agent.errors import ConfigError, DefinitionError
from fsm_agent.runtime.models import ModelFailure, ModelRequest, classify_api_error
from fsm_agent.testing.token_count import estimated_input_tokens

__all__ = [
    "ErrorKind",
    "ErrorSpec",
    "RawBlockSpec",
    "RedactedThinkingSpec",
    "Scenario",
    "ScenarioError",
    "ScriptedModel",
    "ServerToolUseSpec",
    "Step",
    "TextSpec",
    "ThinkingSpec",
    "ToolUseSpec",
    "UsageSpec",
    "load_scenario",
    "load_shipped_scenario",
    "parse_scenario",
    "render_events",
    "render_message",
    "scripted_failure",
    "shipped_scenario_names",
    "sse_frames",
]

STOP_REASONS = frozenset(
    {
        "end_turn",
        "max_tokens",
        "stop_sequence",
        "tool_use",
        "pause_turn",
        "refusal",
        "model_context_window_exceeded",
    }
)
"""Stop reasons the Messages API can return (NOTES.md)."""

DEFAULT_MODEL = "scripted-model"


class ScenarioError(DefinitionError):
    """A scenario file or dict is not a valid scenario; names the step and the field.

    Attributes:
        source: Where the scenario came from (a path, or ``<scenario>``).
        problems: One line per problem, each naming the step and field.
    """

    def __init__(self, *, source: str, problems: Sequence[str]) -> None:
        self.source = source
        self.problems = tuple(problems)
        listed = "\n  ".join(self.problems)
        super().__init__(f"{source}: invalid scenario:\n  {listed}")


# --- the format ----------------------------------------------------------------------------


def _non_negative(_instance: object, attribute: attrs.Attribute[Any], value: int | None) -> None:
    if value is not None and value < 0:
        raise ValueError(f"{attribute.name} must be >= 0, got {value}")


def _positive(_instance: object, attribute: attrs.Attribute[Any], value: int | None) -> None:
    if value is not None and value < 1:
        raise ValueError(f"{attribute.name} must be >= 1, got {value}")


@attrs.frozen(kw_only=True)
class TextSpec:
    """A text block, with the citations the API attaches to it (sent as ``citations_delta``)."""

    text: str
    citations: tuple[dict[str, Any], ...] = ()


@attrs.frozen(kw_only=True)
class ThinkingSpec:
    """A thinking block; ``signature`` defaults to a placeholder derived from the ids."""

    thinking: str
    signature: str | None = None


@attrs.frozen(kw_only=True)
class ToolUseSpec:
    """A tool_use block; ``id`` is assigned by the scenario when not given."""

    name: str
    input: dict[str, Any] = attrs.field(factory=dict)
    id: str | None = None


@attrs.frozen(kw_only=True)
class RedactedThinkingSpec:
    """A redacted_thinking block (thinking the API returns encrypted)."""

    data: str


@attrs.frozen(kw_only=True)
class ServerToolUseSpec:
    """A server_tool_use block: a call of a tool the API runs (web search, code execution)."""

    name: str
    input: dict[str, Any] = attrs.field(factory=dict)
    id: str


@attrs.frozen(kw_only=True)
class RawBlockSpec:
    """Any other block, sent in content_block_start exactly as given (a server tool's result,
    a block type from the future)."""

    block: dict[str, Any]


BlockSpec: TypeAlias = (
    TextSpec | ThinkingSpec | ToolUseSpec | RedactedThinkingSpec | ServerToolUseSpec | RawBlockSpec
)


@attrs.frozen(kw_only=True)
class UsageSpec:
    """Token usage reported for a response; ``output_tokens`` defaults to characters / 4."""

    input_tokens: int = attrs.field(default=10, validator=_non_negative)
    output_tokens: int | None = attrs.field(default=None, validator=_non_negative)
    cache_creation_input_tokens: int = attrs.field(default=0, validator=_non_negative)
    cache_read_input_tokens: int = attrs.field(default=0, validator=_non_negative)


class ErrorKind(enum.Enum):
    """The failures a scenario step can script."""

    OVERLOADED = "overloaded"
    RATE_LIMITED = "rate_limited"
    SERVER_ERROR = "server_error"
    PROMPT_TOO_LONG = "prompt_too_long"
    MEDIA_TOO_LARGE = "media_too_large"
    REQUEST_TOO_LARGE = "request_too_large"
    OUTPUT_OVERFLOW = "output_overflow"
    CONNECTION = "connection"
    TIMEOUT = "timeout"
    TRUNCATED = "truncated"
    OTHER = "other"


@attrs.frozen(kw_only=True)
class _HttpError:
    status: int
    error_type: str
    message: str


# The real API's status, error.type and a typical message for each HTTP kind.
_HTTP_ERRORS: dict[ErrorKind, _HttpError] = {
    ErrorKind.OVERLOADED: _HttpError(
        status=529, error_type="overloaded_error", message="Overloaded"
    ),
    ErrorKind.RATE_LIMITED: _HttpError(
        status=429,
        error_type="rate_limit_error",
        message="Number of request tokens has exceeded your per-minute rate limit",
    ),
    ErrorKind.SERVER_ERROR: _HttpError(
        status=500, error_type="api_error", message="Internal server error"
    ),
    ErrorKind.PROMPT_TOO_LONG: _HttpError(
        status=400,
        error_type="invalid_request_error",
        message="prompt is too long: 210000 tokens > 200000 maximum",
    ),
    ErrorKind.MEDIA_TOO_LARGE: _HttpError(
        status=400,
        error_type="invalid_request_error",
        message=(
            "messages.0.content.1.image.source.base64: image exceeds 5 MB maximum: "
            "7340032 bytes > 5242880 bytes"
        ),
    ),
    ErrorKind.REQUEST_TOO_LARGE: _HttpError(
        status=413,
        error_type="request_too_large",
        message="Request exceeds the maximum allowed number of bytes.",
    ),
    ErrorKind.OUTPUT_OVERFLOW: _HttpError(
        status=400,
        error_type="invalid_request_error",
        message=(
            "input length and `max_tokens` exceed context limit: 188000 + 32000 > 200000, "
            "decrease input length or `max_tokens` and try again"
        ),
    ),
    ErrorKind.OTHER: _HttpError(
        status=400,
        error_type="invalid_request_error",
        message='messages: roles must alternate between "user" and "assistant"',
    ),
}

_STALL_MS_DEFAULT = 30_000
_RETRY_AFTER_DEFAULT_S = 1.0


@attrs.frozen(kw_only=True)
class ErrorSpec:
    """How a step fails (see the module docstring for each field)."""

    kind: ErrorKind
    status: int | None = None
    type: str | None = None
    message: str | None = None
    mid_stream_after: int | None = attrs.field(default=None, validator=_non_negative)
    retry_after: float | None = None
    stall_ms: int = attrs.field(default=_STALL_MS_DEFAULT, validator=_non_negative)

    def __attrs_post_init__(self) -> None:
        http_only = {"status": self.status, "type": self.type, "message": self.message}
        if not self.is_http:
            given = sorted(name for name, value in http_only.items() if value is not None)
            if given:
                verb = "applies" if len(given) == 1 else "apply"
                raise ValueError(
                    f"{', '.join(given)} {verb} only to HTTP error kinds, not {self.kind.value!r}"
                )
        if self.status is not None and not 400 <= self.status <= 599:
            raise ValueError(f"status must be an HTTP error status (400-599), got {self.status}")
        if self.retry_after is not None and not (
            math.isfinite(self.retry_after) and self.retry_after >= 0
        ):
            raise ValueError(
                f"retry_after must be a number of seconds >= 0, got {self.retry_after}"
            )

    @property
    def is_http(self) -> bool:
        """Whether this kind is an API error response (or an SSE ``error`` event)."""
        return self.kind in _HTTP_ERRORS

    @property
    def in_stream(self) -> bool:
        """Whether the failure happens after the response started (not before it)."""
        return self.mid_stream_after is not None or self.kind is ErrorKind.TRUNCATED

    @property
    def http_status(self) -> int:
        """The HTTP status of the error response (HTTP kinds only)."""
        return self.status if self.status is not None else _HTTP_ERRORS[self.kind].status

    @property
    def error_type(self) -> str:
        """The ``error.type`` of the error body (HTTP kinds only)."""
        return self.type if self.type is not None else _HTTP_ERRORS[self.kind].error_type

    @property
    def error_message(self) -> str:
        """The ``error.message`` of the error body (HTTP kinds only)."""
        return self.message if self.message is not None else _HTTP_ERRORS[self.kind].message

    @property
    def retry_after_seconds(self) -> float | None:
        """The ``retry-after`` header value to send, if any (HTTP responses only)."""
        if self.retry_after is not None:
            return self.retry_after
        if self.kind is ErrorKind.RATE_LIMITED:
            return _RETRY_AFTER_DEFAULT_S
        return None

    def body(self, *, request_id: str) -> dict[str, Any]:
        """The API's JSON error body for this error."""
        return {
            "type": "error",
            "error": {"type": self.error_type, "message": self.error_message},
            "request_id": request_id,
        }

    def events_before_failure(self, total: int) -> int:
        """How many of a response's ``total`` events are sent before the failure."""
        if self.kind is ErrorKind.TRUNCATED:
            # Truncated always loses at least message_stop.
            wanted = self.mid_stream_after if self.mid_stream_after is not None else total
            return max(0, min(wanted, total - 1))
        if self.mid_stream_after is None:
            return 0
        return min(self.mid_stream_after, total)


@attrs.frozen(kw_only=True)
class Step:
    """What the model does for one request: respond, or fail (maybe part-way through)."""

    content: tuple[BlockSpec, ...] = ()
    stop_reason: str | None = attrs.field(default=None)
    usage: UsageSpec = attrs.field(factory=UsageSpec)
    chunk: int | None = attrs.field(default=None, validator=_positive)
    delay_ms: int = attrs.field(default=0, validator=_non_negative)
    error: ErrorSpec | None = None
    message_id: str | None = None
    sse: str | None = None
    stop_details: dict[str, Any] | None = None

    @stop_reason.validator
    def _check_stop_reason(self, _attribute: attrs.Attribute[Any], value: str | None) -> None:
        if value is not None and value not in STOP_REASONS:
            choices = ", ".join(sorted(STOP_REASONS))
            raise ValueError(f"stop_reason {value!r} is not one of: {choices}")

    @property
    def resolved_stop_reason(self) -> str:
        """The stop reason sent: as given, else ``tool_use`` with a tool_use, else ``end_turn``."""
        if self.stop_reason is not None:
            return self.stop_reason
        if any(isinstance(block, ToolUseSpec) for block in self.content):
            return "tool_use"
        return "end_turn"


def _number_steps(steps: Sequence[Step]) -> tuple[Step, ...]:
    """Give every step a message id and every tool_use an id, from counters (no randomness)."""
    numbered: list[Step] = []
    tool_counter = 0
    for number, step in enumerate(steps, start=1):
        blocks: list[BlockSpec] = []
        for block in step.content:
            if isinstance(block, ToolUseSpec):
                tool_counter += 1
                if block.id is None:
                    block = attrs.evolve(block, id=f"toolu_{tool_counter:03d}")  # noqa: PLW2901
            blocks.append(block)
        numbered.append(
            attrs.evolve(
                step,
                content=tuple(blocks),
                message_id=step.message_id or f"msg_{number:03d}",
            )
        )
    return tuple(numbered)


@attrs.frozen(kw_only=True)
class Scenario:
    """An ordered script of model behaviour, one step per request."""

    steps: tuple[Step, ...] = attrs.field(converter=_number_steps)
    description: str = ""


# --- parsing -------------------------------------------------------------------------------


class _FieldProblem(ValueError):
    """A value is wrong; the message is shown to the user as is."""


def _strict_int(value: Any, _type: type) -> int:
    # cattrs would coerce "1" and 1.5 (NOTES.md): a scenario must say what it means.
    if isinstance(value, bool) or not isinstance(value, int):
        raise _FieldProblem(f"expected an integer, got {value!r}")
    return value


def _strict_float(value: Any, _type: type) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _FieldProblem(f"expected a number, got {value!r}")
    return float(value)


def _strict_str(value: Any, _type: type) -> str:
    if not isinstance(value, str):
        raise _FieldProblem(f"expected a string, got {value!r}")
    return value


def _error_kind(value: Any, _type: type) -> ErrorKind:
    try:
        return ErrorKind(value)
    except ValueError:
        choices = ", ".join(kind.value for kind in ErrorKind)
        raise _FieldProblem(f"{value!r} is not one of: {choices}") from None


def _block(value: Any, _type: object) -> BlockSpec:
    shapes = (
        '{"text": ...}, {"thinking": ...}, {"tool_use": {"name": ..., "input": {...}}}, '
        '{"redacted_thinking": ...}, {"server_tool_use": {"id": ..., "name": ...}} or '
        '{"block": {"type": ...}}'
    )
    if not isinstance(value, Mapping):
        raise _FieldProblem(f"a content block must be an object like {shapes}, got {value!r}")
    keys = set(value)
    if "text" in keys and keys <= {"text", "citations"}:
        citations = value.get("citations", [])
        if not isinstance(citations, list) or not all(isinstance(c, Mapping) for c in citations):
            raise _FieldProblem(f"citations must be a list of objects, got {citations!r}")
        return TextSpec(
            text=_strict_str(value["text"], str), citations=tuple(dict(c) for c in citations)
        )
    if keys == {"redacted_thinking"}:
        return RedactedThinkingSpec(data=_strict_str(value["redacted_thinking"], str))
    if keys == {"server_tool_use"}:
        spec = value["server_tool_use"]
        if not isinstance(spec, Mapping) or not {"id", "name"} <= set(spec):
            raise _FieldProblem(f"server_tool_use needs an id and a name, got {spec!r}")
        extra = set(spec) - {"name", "input", "id"}
        if extra:
            raise _FieldProblem(f"server_tool_use has unknown keys: {', '.join(sorted(extra))}")
        server_input = spec.get("input", {})
        if not isinstance(server_input, Mapping):
            raise _FieldProblem(f"server_tool_use.input must be an object, got {server_input!r}")
        return ServerToolUseSpec(
            id=_strict_str(spec["id"], str),
            name=_strict_str(spec["name"], str),
            input=dict(server_input),
        )
    if keys == {"block"}:
        raw = value["block"]
        if not isinstance(raw, Mapping) or not isinstance(raw.get("type"), str):
            raise _FieldProblem(f"block must be an object with a type, got {raw!r}")
        return RawBlockSpec(block=dict(raw))
    if "thinking" in keys and keys <= {"thinking", "signature"}:
        signature = value.get("signature")
        return ThinkingSpec(
            thinking=_strict_str(value["thinking"], str),
            signature=None if signature is None else _strict_str(signature, str),
        )
    if keys == {"tool_use"}:
        spec = value["tool_use"]
        if not isinstance(spec, Mapping) or "name" not in spec:
            raise _FieldProblem(f"tool_use must be an object with a name, got {spec!r}")
        extra = set(spec) - {"name", "input", "id"}
        if extra:
            raise _FieldProblem(f"tool_use has unknown keys: {', '.join(sorted(extra))}")
        tool_input = spec.get("input", {})
        if not isinstance(tool_input, Mapping):
            raise _FieldProblem(f"tool_use.input must be a JSON object, got {tool_input!r}")
        tool_id = spec.get("id")
        return ToolUseSpec(
            name=_strict_str(spec["name"], str),
            input=dict(tool_input),
            id=None if tool_id is None else _strict_str(tool_id, str),
        )
    raise _FieldProblem(f"a content block must be one of {shapes}, got keys {sorted(keys)}")


def _make_converter() -> cattrs.Converter:
    converter = cattrs.Converter(forbid_extra_keys=True, detailed_validation=True)
    converter.register_structure_hook(int, _strict_int)
    converter.register_structure_hook(float, _strict_float)
    converter.register_structure_hook(str, _strict_str)
    converter.register_structure_hook(ErrorKind, _error_kind)
    converter.register_structure_hook(BlockSpec, _block)
    return converter


_CONVERTER = _make_converter()
_STEP_PATH = re.compile(r"^\$\.steps\[(\d+)\]\.?(.*)$")


def _format_problem(exc: BaseException, type_: type | None) -> str:
    if isinstance(exc, ValueError | TypeError) and not isinstance(exc, cattrs.BaseValidationError):
        text = str(exc)
        if text and not text.startswith("invalid literal"):
            return text
    return format_exception(exc, type_)


def _describe(problem: str) -> str:
    """Turn ``message @ $.steps[2].error.kind`` into ``step 3: error.kind: message``."""
    message, _, path = problem.rpartition(" @ ")
    if not message:
        return problem
    match = _STEP_PATH.match(path)
    if match is None:
        where = path.removeprefix("$.").removeprefix("$") or "scenario"
        return f"{where}: {message}"
    number = int(match.group(1)) + 1
    field = match.group(2)
    return f"step {number}: {field}: {message}" if field else f"step {number}: {message}"


def parse_scenario(data: Any, *, source: str = "<scenario>") -> Scenario:
    """Build a ``Scenario`` from decoded JSON.

    Args:
        data: The decoded JSON (an object with ``steps``).
        source: Named in error messages (a file path, say).

    Raises:
        ScenarioError: If anything is wrong; lists every problem with its step and field.
    """
    if not isinstance(data, Mapping):
        raise ScenarioError(
            source=source, problems=[f"a scenario must be a JSON object with steps, got {data!r}"]
        )
    try:
        return _CONVERTER.structure(data, Scenario)
    except cattrs.BaseValidationError as exc:
        problems = transform_error(exc, format_exception=_format_problem)
        raise ScenarioError(source=source, problems=[_describe(p) for p in problems]) from exc
    except (ValueError, TypeError) as exc:
        raise ScenarioError(source=source, problems=[str(exc)]) from exc


def load_scenario(path: str | PathLike[str]) -> Scenario:
    """Read and parse a scenario JSON file.

    Raises:
        ScenarioError: If the file is not JSON or not a valid scenario.
    """
    file = Path(path)
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ScenarioError(
            source=str(file), problems=[f"not valid JSON: line {exc.lineno}: {exc.msg}"]
        ) from exc
    return parse_scenario(data, source=str(file))


def shipped_scenario_names() -> list[str]:
    """Names of the scenarios shipped in ``fsm_agent/scenarios/`` (without ``.json``)."""
    folder = resources.files("fsm_agent") / "scenarios"
    if not folder.is_dir():
        return []
    return sorted(
        entry.name.removesuffix(".json")
        for entry in folder.iterdir()
        if entry.name.endswith(".json")
    )


def load_shipped_scenario(name: str) -> Scenario:
    """Load a scenario shipped with fsm_agent by name (see ``shipped_scenario_names``).

    Raises:
        ScenarioError: If there is no such scenario (the message lists those there are).
    """
    entry = resources.files("fsm_agent") / "scenarios" / f"{name}.json"
    if not entry.is_file():
        known = ", ".join(shipped_scenario_names()) or "none"
        raise ScenarioError(
            source=f"scenarios/{name}.json",
            problems=[f"no shipped scenario named {name!r}; shipped: {known}"],
        )
    source = f"fsm_agent/scenarios/{name}.json"
    try:
        data = json.loads(entry.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ScenarioError(
            source=source, problems=[f"not valid JSON: line {exc.lineno}: {exc.msg}"]
        ) from exc
    return parse_scenario(data, source=source)


# --- rendering -----------------------------------------------------------------------------


def _pieces(text: str, chunk: int | None) -> list[str]:
    if chunk is None or len(text) <= chunk:
        return [text]
    return [text[start : start + chunk] for start in range(0, len(text), chunk)]


def _signature(step: Step, index: int, block: ThinkingSpec) -> str:
    if block.signature is not None:
        return block.signature
    return f"sig_{step.message_id or 'msg'}_{index}"


def sse_frames(body: str) -> list[tuple[str | None, str]]:
    """The ``(event name, data)`` frames of an SSE body, in order (comments skipped)."""
    frames: list[tuple[str | None, str]] = []
    name: str | None = None
    data: list[str] = []
    for line in [*body.splitlines(), ""]:
        if not line:
            if name is not None or data:
                frames.append((name, "\n".join(data)))
            name, data = None, []
            continue
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "event":
            name = value
        elif field == "data":
            data.append(value)
    return frames


def _recorded_events(body: str) -> list[dict[str, Any]]:
    """The events of a recorded body as the SDK hands them on (SSE rules of NOTES.md)."""
    events: list[dict[str, Any]] = []
    for name, data in sse_frames(body):
        if name in (None, "ping", "error") or not data:
            continue
        events.append(json.loads(data))
    return events


def _recorded_error(body: str) -> ModelFailure | None:
    """The failure an ``error`` frame of a recorded body stands for, if it has one."""
    for name, data in sse_frames(body):
        if name == "error":
            error = json.loads(data).get("error") or {}
            return classify_api_error(
                status=200, error_type=error.get("type"), message=str(error.get("message", data))
            )
    return None


def _block_chars(block: BlockSpec) -> int:
    if isinstance(block, TextSpec):
        return len(block.text)
    if isinstance(block, ThinkingSpec):
        return len(block.thinking)
    if isinstance(block, ToolUseSpec | ServerToolUseSpec):
        return len(json.dumps(block.input, ensure_ascii=False))
    return 0


def _usage(step: Step) -> dict[str, Any]:
    """The cumulative usage of the response, with the fields ``message_delta`` carries."""
    usage = step.usage
    output = usage.output_tokens
    if output is None:
        output = max(1, math.ceil(sum(map(_block_chars, step.content)) / 4))
    final: dict[str, Any] = {
        "input_tokens": usage.input_tokens,
        "cache_creation_input_tokens": usage.cache_creation_input_tokens,
        "cache_read_input_tokens": usage.cache_read_input_tokens,
        "output_tokens": output,
    }
    server_calls: dict[str, int] = {}
    for block in step.content:
        if isinstance(block, ServerToolUseSpec):
            key = f"{block.name}_requests"
            server_calls[key] = server_calls.get(key, 0) + 1
    if server_calls:
        final["server_tool_use"] = server_calls
    return final


def _start_usage(step: Step) -> dict[str, Any]:
    """``message_start``'s usage, every field the real API sends there (one output token)."""
    usage = step.usage
    return {
        "input_tokens": usage.input_tokens,
        "cache_creation_input_tokens": usage.cache_creation_input_tokens,
        "cache_read_input_tokens": usage.cache_read_input_tokens,
        "cache_creation": {
            "ephemeral_5m_input_tokens": usage.cache_creation_input_tokens,
            "ephemeral_1h_input_tokens": 0,
        },
        "output_tokens": 1,
        "service_tier": "standard",
        "inference_geo": "global",
    }


def _tool_id(block: ToolUseSpec, index: int) -> str:
    return block.id or f"toolu_{index + 1:03d}"


def _block_events(step: Step, index: int, block: BlockSpec) -> list[dict[str, Any]]:
    """One block's events in the order the real API sends them."""

    def delta(body: dict[str, Any]) -> dict[str, Any]:
        return {"type": "content_block_delta", "index": index, "delta": body}

    deltas: list[dict[str, Any]] = []
    if isinstance(block, TextSpec):
        start: dict[str, Any] = {"type": "text", "text": ""}
        if block.citations:
            # A cited span starts with citations: [] and its citations come before its text.
            start = {"citations": [], "type": "text", "text": ""}
            deltas = [delta({"type": "citations_delta", "citation": c}) for c in block.citations]
        deltas += [
            delta({"type": "text_delta", "text": p}) for p in _pieces(block.text, step.chunk)
        ]
    elif isinstance(block, ThinkingSpec):
        start = {"type": "thinking", "thinking": "", "signature": ""}
        deltas = [
            delta({"type": "thinking_delta", "thinking": p})
            for p in _pieces(block.thinking, step.chunk)
        ]
        # The real API ends the thinking with an empty thinking_delta, then the signature.
        deltas.append(delta({"type": "thinking_delta", "thinking": ""}))
        deltas.append(
            delta({"type": "signature_delta", "signature": _signature(step, index, block)})
        )
    elif isinstance(block, ToolUseSpec | ServerToolUseSpec):
        if isinstance(block, ToolUseSpec):
            start = {
                "type": "tool_use",
                "id": _tool_id(block, index),
                "name": block.name,
                "input": {},
                "caller": {"type": "direct"},
            }
        else:
            start = {"type": "server_tool_use", "id": block.id, "name": block.name, "input": {}}
        # Every real tool call begins with an empty partial_json.
        deltas = [delta({"type": "input_json_delta", "partial_json": ""})]
        deltas += [
            delta({"type": "input_json_delta", "partial_json": p})
            for p in _pieces(json.dumps(block.input, ensure_ascii=False), step.chunk)
        ]
    elif isinstance(block, RedactedThinkingSpec):
        start = {"type": "redacted_thinking", "data": block.data}
    else:
        start = block.block
    return [
        {"type": "content_block_start", "index": index, "content_block": start},
        *deltas,
        {"type": "content_block_stop", "index": index},
    ]


def _complete_events(step: Step, model: str) -> list[dict[str, Any]]:
    if step.sse is not None:
        return _recorded_events(step.sse)
    events: list[dict[str, Any]] = [
        {
            "type": "message_start",
            "message": {
                "model": model,
                "id": step.message_id or "msg_001",
                "type": "message",
                "role": "assistant",
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "stop_details": None,
                "usage": _start_usage(step),
            },
        }
    ]
    for index, block in enumerate(step.content):
        events.extend(_block_events(step, index, block))
    events.append(
        {
            "type": "message_delta",
            "delta": {
                "stop_reason": step.resolved_stop_reason,
                "stop_sequence": None,
                "stop_details": step.stop_details,
            },
            # Cumulative, like the API's (NOTES.md).
            "usage": _usage(step),
        }
    )
    events.append({"type": "message_stop"})
    return events


def render_events(
    step: Step, *, model: str = DEFAULT_MODEL, complete: bool = False
) -> list[dict[str, Any]]:
    """The raw stream events a step produces, in the Messages API wire shapes.

    Without ``complete``, the list stops where the step's error strikes: empty for an error
    before the response, the first ``mid_stream_after`` events for a mid-stream failure,
    everything but ``message_stop`` (by default) for a truncated stream.

    Args:
        step: The scripted step.
        model: The model name put into ``message_start``.
        complete: Render the whole response, ignoring the error (the fake server sends the
            rest of a stalled stream if the client is still listening).

    Returns:
        Event dicts, ``ping`` excluded.
    """
    events = _complete_events(step, model)
    if complete or step.error is None:
        return events
    return events[: step.error.events_before_failure(len(events))]


def render_message(step: Step, *, model: str = DEFAULT_MODEL) -> dict[str, Any]:
    """The complete (non-streamed) Message JSON for a step's response."""
    content: list[dict[str, Any]] = []
    for index, block in enumerate(step.content):
        start, *deltas, _stop = _block_events(step, index, block)
        final = dict(start["content_block"])
        # Fold the deltas the way the API's own non-streamed answer holds the block.
        pieces: dict[str, str] = {}
        for event in deltas:
            body = event["delta"]
            if body["type"] == "citations_delta":
                final["citations"] = [*final.get("citations", []), body["citation"]]
            elif body["type"] == "signature_delta":
                final["signature"] = body["signature"]
            else:
                key = {"text_delta": "text", "thinking_delta": "thinking"}.get(body["type"])
                target = key or "input"
                pieces[target] = pieces.get(target, "") + body[key or "partial_json"]
        for key, text in pieces.items():
            final[key] = json.loads(text) if key == "input" else text
        content.append(final)
    return {
        "model": model,
        "id": step.message_id or "msg_001",
        "type": "message",
        "role": "assistant",
        "content": content,
        "stop_reason": step.resolved_stop_reason,
        "stop_sequence": None,
        "stop_details": step.stop_details,
        "usage": {**_start_usage(step), **_usage(step)},
    }


def scripted_failure(error: ErrorSpec) -> ModelFailure | None:
    """The ``ModelFailure`` a scripted error amounts to (``None`` for a truncated stream).

    HTTP kinds go through ``classify_api_error``, the same rules ``AnthropicModel`` applies,
    so a step fails the same way in-process and through the fake server.
    """
    if error.kind is ErrorKind.TRUNCATED:
        return None
    if error.kind is ErrorKind.CONNECTION:
        return ModelFailure(kind=FailureKind.CONNECTION, message="connection dropped (scripted)")
    if error.kind is ErrorKind.TIMEOUT:
        return ModelFailure(kind=FailureKind.TIMEOUT, message="read timed out (scripted)")
    if error.in_stream:
        # An SSE error event: a 200 response, no retry-after header.
        return classify_api_error(
            status=200, error_type=error.error_type, message=error.error_message
        )
    seconds = error.retry_after_seconds
    return classify_api_error(
        status=error.http_status,
        error_type=error.error_type,
        message=error.error_message,
        retry_after_ms=None if seconds is None else math.ceil(seconds * 1000),
    )


# --- the scripted model --------------------------------------------------------------------


class ScriptedModel:
    """A ``Model`` that plays a scenario: one step per ``stream`` call, in order.

    Attributes:
        name: The model name (for ``Model``).
        scenario: The script.
        request_count: How many requests arrived (including one that found the script
            exhausted).
        requests: The latest ``keep_requests`` of them, oldest first. Only the latest are
            kept: every request carries the whole history, so keeping all of a long session
            would grow without bound.
    """

    def __init__(
        self,
        scenario: Scenario,
        *,
        name: str = DEFAULT_MODEL,
        sleep: Callable[[float], Any] = asyncio.sleep,
        keep_requests: int = 16,
    ) -> None:
        """Play ``scenario``.

        Args:
            scenario: The script.
            name: The model name.
            sleep: Awaited with seconds for each ``delay_ms`` (inject a fake to skip waits).
            keep_requests: How many of the latest requests ``requests`` holds.
        """
        if keep_requests < 1:
            raise ConfigError(f"keep_requests must be at least 1, not {keep_requests}")
        self.name = name
        self.scenario = scenario
        self.request_count = 0
        self._latest: collections.deque[ModelRequest] = collections.deque(maxlen=keep_requests)
        self._sleep = sleep

    @property
    def requests(self) -> list[ModelRequest]:
        """The latest requests received, oldest first (at most ``keep_requests``)."""
        return list(self._latest)

    def seek(self, requests_before: int) -> None:
        """Play on from step ``requests_before + 1``: where a session that moved to another
        process (a Temporal worker) is in its script."""
        if requests_before < 0:
            raise ConfigError(f"requests_before must not be negative, not {requests_before}")
        self.request_count = requests_before

    @property
    def remaining(self) -> int:
        """How many steps are left."""
        return max(0, len(self.scenario.steps) - self.request_count)

    async def count_tokens(
        self,
        messages: list[dict[str, Any]],
        *,
        system: str = "",
        tools: list[dict[str, Any]] | None = None,
        model: str | None = None,
    ) -> int:
        """Answer ``count_tokens`` as the fake server does: characters / 4 of the request's
        JSON (``testing.token_count``). Takes no step of the script."""
        del model  # every model counts alike here
        body: dict[str, Any] = {"messages": messages}
        if system:
            body["system"] = system
        if tools:
            body["tools"] = tools
        return estimated_input_tokens(body)

    async def stream(self, request: ModelRequest) -> AsyncIterator[dict[str, Any]]:
        """Yield the next step's events, then raise its failure if it has one.

        Raises:
            ModelFailure: The step's scripted failure, or ``OTHER`` once the script is
                exhausted.
        """
        self._latest.append(request)
        self.request_count += 1
        steps = self.scenario.steps
        if self.request_count > len(steps):
            raise ModelFailure(
                kind=FailureKind.OTHER, message=f"scenario exhausted after {len(steps)} requests"
            )
        step = steps[self.request_count - 1]
        for event in render_events(step, model=request.model):
            if step.delay_ms:
                await self._sleep(step.delay_ms / 1000)
            yield event
        if step.sse is not None:
            recorded = _recorded_error(step.sse)
            if recorded is not None:
                raise recorded
        if step.error is not None:
            failure = scripted_failure(step.error)
            if failure is not None:
                raise failure
