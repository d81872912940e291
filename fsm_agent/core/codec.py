"""The one cattrs converter for messages, events and effects.

Unions are tagged with a ``type`` field: content blocks and messages use the API's snake_case
names (``tool_use``, ``assistant``), events and effects their class names (``ModelStreamEvent``).
The converter is strict (unknown keys are refused) and loose coercion is switched off where it
would hide a broken trace (a string is never silently turned into a number or a boolean).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, TypeVar, cast

from fsm_agent.core import effects, events, messages
from fsm_agent.core.json_values import JSON_INT_MAX, JSON_INT_MIN
from fsm_agent.core.structure_fns import make_structure_fn

if TYPE_CHECKING:
    import cattrs

T = TypeVar("T")


_DECIMAL = re.compile(r"-?[0-9]+")

_SNAKE = re.compile(r"(?<!^)(?=[A-Z])")

_BLOCK_TAGS = {
    messages.TextBlock: "text",
    messages.ThinkingBlock: "thinking",
    messages.RedactedThinkingBlock: "redacted_thinking",
    messages.ToolUseBlock: "tool_use",
    messages.ServerToolUseBlock: "server_tool_use",
    messages.OpaqueBlock: "opaque",
    messages.ToolResultBlock: "tool_result",
    messages.ImageBlock: "image",
    messages.DocumentBlock: "document",
}
_MESSAGE_TAGS = {
    messages.UserMessage: "user",
    messages.AssistantMessage: "assistant",
    messages.ApiErrorMessage: "api_error",
    messages.AttachmentMessage: "attachment",
    messages.ProgressMessage: "progress",
    messages.SystemMessage: "system",
    messages.TombstoneMessage: "tombstone",
}

_OPTIONAL_SCALARS: Final = frozenset({str | None, int | None, float | None, bool | None})

_OPTIONAL_FIELDS: dict[type, tuple[str, ...]] = {
    messages.TextBlock: ("citations",),
    messages.ToolUseBlock: ("caller",),
    messages.ServerToolUseBlock: ("caller",),
    messages.AssistantMessage: ("stop_details",),
    messages.Usage: ("cache_creation", "server_tool_use", "service_tier", "extra"),
    events.AttachmentsReady: ("tools",),
}


def omitted_if_default(cls: type) -> tuple[str, ...]:
    """The fields of ``cls`` the converter leaves out of its dict while they hold their
    default (a renderer that builds the same dict leaves out the same)."""
    return _OPTIONAL_FIELDS.get(cls, ())


def union_tags() -> dict[type, str]:
    """The ``type`` tag of every content block and message class (the unions of messages and
    of their blocks are tagged with the API's snake_case names)."""
    return {**_BLOCK_TAGS, **_MESSAGE_TAGS}


def big_int(value: object) -> int | None:
    """The integer a trace wrote as a decimal string because it is past 64 bits, else None.

    Only integers outside the range a trace holds as numbers are read this way, so ``"5"``
    where a count belongs is still an error.
    """
    if type(value) is not str or _DECIMAL.fullmatch(value) is None:
        return None
    number = int(value)
    return number if not JSON_INT_MIN <= number <= JSON_INT_MAX else None


def _strict_scalar(kind: type) -> Any:
    def structure(value: Any, _type: Any) -> Any:
        # bool is an int subclass; a trace with true where a count belongs is broken.
        if type(value) is not kind and not (kind is float and type(value) is int):
            number = big_int(value) if kind is int else None
            if number is None:
                raise TypeError(f"expected {kind.__name__}, got {type(value).__name__}")
            return number
        return value

    return structure


def _strings_or(generic: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """A ``tuple[str, ...]`` hook: a JSON array of strings becomes a tuple at once.

    Hook outcomes carry three such lists and replay structures one per hook run (issue 10);
    the converter's generic tuple hook calls the scalar hook once per item. Anything else
    (a non-list, a non-string item) goes to ``generic``, whose error names the bad item; but a
    string, which ``generic`` would take as a list of its characters, is refused.
    """

    def structure(value: Any, kind: Any) -> Any:
        if type(value) is not list:
            if isinstance(value, str):  # the generic hook would take it as its characters
                raise TypeError(f"expected list, got {type(value).__name__}")
            return generic(value, kind)
        for item in value:  # a loop, not all(): no generator for the common empty list
            if type(item) is not str:
                return generic(value, kind)
        return tuple(value)

    return structure


def _plain_outcome_or(
    conv: cattrs.Converter, generic: Callable[[Any, Any], Any]
) -> Callable[[Any, Any], Any]:
    """A :class:`~fsm_agent.core.events.HookOutcome` hook: the outcome of hooks that said
    nothing (most of them) is one shared frozen instance; anything else goes to ``generic``.

    A plain outcome is recognized by equality with its JSON form; ``false`` is checked by
    identity, since ``0 == False`` and the converter refuses a number there.
    """
    plain = events.HookOutcome()
    shape = conv.unstructure(plain)

    def structure(value: Any, kind: Any) -> Any:
        if value == shape and value["prevent_continuation"] is False:
            return plain
        return generic(value, kind)

    return structure


def _json_object(value: dict[str, Any]) -> dict[str, Any]:
    """A JSON payload (tool input, stream event...) is already JSON: copy it, do not walk it.

    Walking it value by value would recurse once per nesting level, and a model can send a
    tool input nested deeper than Python's recursion limit; the trace writer cuts such a
    value at a fixed depth instead (:mod:`fsm_agent.trace.json_limits`).
    """
    return dict(value)


def make_converter() -> cattrs.Converter:
    """Build the converter (once per process is enough; :func:`converter` is that one)."""
    # cattrs is imported here, not with this module: a run that writes no trace and reads
    # none never needs it, and ``from fsm_agent import Agent`` stays cheap (issue 10).
    import cattrs  # noqa: PLC0415
    from cattrs.fns import identity  # noqa: PLC0415
    from cattrs.gen import make_dict_unstructure_fn, override  # noqa: PLC0415
    from cattrs.strategies import configure_tagged_union  # noqa: PLC0415

    conv = cattrs.Converter(forbid_extra_keys=True)
    for kind in (str, int, bool, float):
        conv.register_structure_hook(kind, _strict_scalar(kind))
    conv.register_structure_hook_func(
        lambda kind: kind == tuple[str, ...],
        _strings_or(conv.get_structure_hook(tuple[str, ...])),
    )
    conv.register_structure_hook(
        events.HookOutcome, _plain_outcome_or(conv, conv.get_structure_hook(events.HookOutcome))
    )
    conv.register_unstructure_hook_func(lambda kind: kind == dict[str, Any], _json_object)
    # An optional scalar is itself unstructured: with the identity hook the generated
    # functions read the field inline instead of calling a wrapper per field (issue 10).
    conv.register_unstructure_hook_func(_OPTIONAL_SCALARS.__contains__, identity)

    # Fields the wire only sometimes carries are left out of a trace while they hold their
    # default, so a plain run's records stay as short as they were before the fields existed.
    # A factory, so each hook is built when first needed, after the unions below exist.
    def omitting_defaults(cls: type) -> Any:
        omitted = {name: override(omit_if_default=True) for name in _OPTIONAL_FIELDS[cls]}
        return make_dict_unstructure_fn(cls, conv, **cast("dict[str, Any]", omitted))

    conv.register_unstructure_hook_factory(_OPTIONAL_FIELDS.__contains__, omitting_defaults)
    configure_tagged_union(
        messages.ResultPart, conv, tag_name="type", tag_generator=_BLOCK_TAGS.__getitem__
    )
    parts = tuple[messages.ResultPart, ...]

    def structure_result_content(value: Any, _type: Any) -> messages.ToolResultContent:
        if isinstance(value, str):
            return value
        result: messages.ToolResultContent = conv.structure(value, parts)
        return result

    def unstructure_result_content(value: messages.ToolResultContent) -> Any:
        if isinstance(value, str):
            return value
        return [conv.unstructure(part, unstructure_as=messages.ResultPart) for part in value]

    conv.register_structure_hook(messages.ToolResultContent, structure_result_content)
    conv.register_unstructure_hook(messages.ToolResultContent, unstructure_result_content)
    configure_tagged_union(
        messages.ContentBlock, conv, tag_name="type", tag_generator=_BLOCK_TAGS.__getitem__
    )
    configure_tagged_union(
        messages.Message, conv, tag_name="type", tag_generator=_MESSAGE_TAGS.__getitem__
    )
    configure_tagged_union(events.Event, conv, tag_name="type", tag_generator=_class_name)
    configure_tagged_union(effects.Effect, conv, tag_name="type", tag_generator=_class_name)
    return conv


def _class_name(cls: type) -> str:
    return cls.__name__


def snake_name(cls: type) -> str:
    """``ModelStreamEvent`` → ``model_stream_event`` (used in diagrams and summaries)."""
    return _SNAKE.sub("_", cls.__name__).lower()


@functools.cache
def converter() -> cattrs.Converter:
    """The converter of the whole library, built on first use (building it costs more than
    the rest of ``import fsm_agent``, and a run that writes no trace never needs it)."""
    return make_converter()


def __getattr__(name: str) -> cattrs.Converter:
    # ``CONVERTER`` is still importable by that name; it is built on first access.
    if name == "CONVERTER":
        return converter()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_TAG: Final = "type"


def _tagged_dumper(cls: type) -> Callable[[Any], dict[str, Any]]:
    hook = converter().get_unstructure_hook(cls)
    tag = cls.__name__

    def dump(value: Any) -> dict[str, Any]:
        out: dict[str, Any] = hook(value)
        out[_TAG] = tag
        return out

    return dump


def _fast_loader(cls: type) -> Callable[[dict[str, Any]], Any]:
    from cattrs.gen import make_dict_structure_fn  # noqa: PLC0415 - cattrs is lazy here

    structure: Callable[[dict[str, Any], type], Any] = make_dict_structure_fn(
        cls, converter(), _cattrs_detailed_validation=False
    )

    def load(data: dict[str, Any]) -> Any:
        fields = dict(data)  # the caller's dict keeps its tag
        del fields[_TAG]
        return structure(fields, cls)

    # The common shape is read directly; anything else is cattrs' (issue 10).
    return make_structure_fn(cls, converter(), load, tag=cls.__name__)


class _TaggedUnion:
    """Per-class unstructure and structure functions for the members of one union tagged by
    class name (events, effects), each made once and cached: the hot paths of the trace
    writer and of replay skip the converter's generic dispatch (issue 10).

    Structuring reads the common shape directly (:mod:`~fsm_agent.core.structure_fns`) and
    hands anything else to cattrs' function generated without detailed validation; when that
    fails, the union is structured again through the converter, whose detailed errors name
    the bad field (the trace reader turns them into JSON paths), so a malformed line reads as
    before. None of them changes the dict it is given.
    """

    def __init__(
        self,
        union: Any,
        members: tuple[type, ...],
        dumpers: dict[type, Callable[[Any], dict[str, Any]]],
    ) -> None:
        self._union = union
        self._members = {cls.__name__: cls for cls in members}
        self._dumpers = dumpers  # filled as members are first dumped
        self._loaders: dict[str, Callable[[dict[str, Any]], Any]] = {}

    def dump(self, value: Any) -> dict[str, Any]:
        dumper = self._dumpers.get(type(value))
        if dumper is None:
            if self._members.get(type(value).__name__) is not type(value):
                # Not a member: the converter raises its own error.
                result: dict[str, Any] = converter().unstructure(value, unstructure_as=self._union)
                return result
            dumper = self._dumpers[type(value)] = _tagged_dumper(type(value))
        return dumper(value)

    def load(self, data: Any) -> Any:
        tag = data.get(_TAG) if type(data) is dict else None
        loader = self._loaders.get(tag) if type(tag) is str else None
        if loader is None and tag in self._members:
            loader = self._loaders[tag] = _fast_loader(self._members[tag])
        if loader is not None:
            try:
                return loader(data)
            except Exception:
                pass  # the detailed pass below names what is wrong
        return converter().structure(data, self._union)


_event_dumpers: dict[type, Callable[[Any], dict[str, Any]]] = {}
_effect_dumpers: dict[type, Callable[[Any], dict[str, Any]]] = {}
"""Each member's dump function by its class, once made: the trace writer dumps every event
and effect, and a lookup here spares it the union's own dispatch."""


@functools.cache
def _events() -> _TaggedUnion:
    return _TaggedUnion(events.Event, events.EVENT_TYPES, _event_dumpers)


@functools.cache
def _effects() -> _TaggedUnion:
    return _TaggedUnion(effects.Effect, effects.EFFECT_TYPES, _effect_dumpers)


def dump_event(event: events.Event) -> dict[str, Any]:
    """An event as a JSON-ready dict with its ``type`` tag."""
    dumper = _event_dumpers.get(type(event))
    return _events().dump(event) if dumper is None else dumper(event)


def load_event(data: Any) -> events.Event:
    """Structure an event dict, leaving it as it is; raises cattrs errors (the trace reader
    turns them into paths)."""
    result: events.Event = _events().load(data)
    return result


def dump_effect(effect: effects.Effect) -> dict[str, Any]:
    """An effect as a JSON-ready dict with its ``type`` tag."""
    dumper = _effect_dumpers.get(type(effect))
    return _effects().dump(effect) if dumper is None else dumper(effect)


def load_effect(data: Any) -> effects.Effect:
    """Structure an effect dict."""
    result: effects.Effect = _effects().load(data)
    return result


def dump_message(message: messages.Message) -> dict[str, Any]:
    """A transcript message as a JSON-ready dict with its ``type`` tag."""
    result: dict[str, Any] = converter().unstructure(message, unstructure_as=messages.Message)
    return result


def load_message(data: Any) -> messages.Message:
    """Structure a transcript message dict."""
    result: messages.Message = converter().structure(data, messages.Message)  # type: ignore[arg-type]
    return result
