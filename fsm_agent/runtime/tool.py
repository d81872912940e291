"""The tool API: what a tool author writes, and how the driver runs it safely.

A tool is a :class:`Tool` subclass (or a typed async function wrapped by :func:`tool`) with an
attrs class describing its input. From that class the tool derives its JSON schema
(:meth:`Tool.input_schema`) and parses the model's raw input strictly (:meth:`Tool.parse_input`).

The driver never calls tool methods directly; it calls the two runners, which turn every kind
of tool misbehaviour into data (SPEC §4, DESIGN §8):

* :func:`run_validation` — lookup, schema parse, ``validate_input`` and the concurrency and
  read-only classification, as one :class:`~fsm_agent.core.events.ToolInputValidated`;
* :func:`run_call` — the call itself, with exceptions formatted, empty results replaced and
  oversized results truncated (SPEC §7.1), as one
  :class:`~fsm_agent.core.events.ToolCallFinished`.

Only cancellation passes through: ``asyncio.CancelledError`` always propagates, because the
driver cancels running tools on abort.
"""

from __future__ import annotations

import copy
import enum
import functools
import inspect
import keyword
import types
import typing
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeAlias, TypeVar, Union

import attrs

from fsm_agent.core import texts
from fsm_agent.core.json_values import json_type_name
from fsm_agent.core.tool_spec import ToolSpec
from fsm_agent.errors import DefinitionError, FsmAgentError
from fsm_agent.runtime.result_files import PREVIEW_CHARS, preview_of, save_result
from fsm_agent.trace.json_limits import escape_surrogates

if TYPE_CHECKING:
    import asyncio

    import cattrs

    from fsm_agent.core.events import ToolCallFinished, ToolInputValidated
    from fsm_agent.core.messages import ToolResultContent
    from fsm_agent.runtime.subagent_link import ParentRun

__all__ = [
    "DEFAULT_MAX_RESULT_CHARS",
    "OUTSIDE_WORKING_FOLDER",
    "PREVIEW_CHARS",
    "SAFETY_CHECK",
    "FunctionTool",
    "PermissionBehavior",
    "PermissionCheck",
    "ProgressCallback",
    "Tool",
    "ToolContext",
    "ToolInputError",
    "ToolOutput",
    "format_tool_error",
    "run_call",
    "run_validation",
    "schema_for_type",
    "tool",
]

InputT = TypeVar("InputT")

DEFAULT_MAX_RESULT_CHARS = 50_000
"""Results longer than this are truncated, whatever a tool asks for (SPEC §7.1, §10)."""

SAFETY_CHECK = "safety_check"
"""``PermissionCheck.reason`` for protected paths; the permission chain never bypasses it."""

OUTSIDE_WORKING_FOLDER = "outside_working_folder"
"""``PermissionCheck.reason`` of a read outside the working folder (an ordinary ask: a rule or
the mode may allow it; once allowed, the call's context lets the tool reach outside)."""

ProgressCallback: TypeAlias = Callable[[str], None]
PermissionBehavior: TypeAlias = Literal["allow", "deny", "ask", "passthrough"]


class ToolInputError(FsmAgentError):
    """The model's input does not fit the tool's input class.

    The message reads ``InputValidationError: <field path>: <problem>`` (one line per problem)
    and is meant for the model, which can correct its call from it.
    """


def _abort_flag() -> asyncio.Event:
    """A fresh ``ToolContext.abort``: asyncio is loaded with the first context a run makes,
    not with this module (issue 10)."""
    import asyncio  # noqa: PLC0415 - see the docstring

    return asyncio.Event()


@attrs.define(kw_only=True)
class ToolContext:
    """What a running tool may know about its surroundings.

    Attributes:
        cwd: the working directory; relative paths resolve against it, and file tools refuse
            paths that resolve outside it.
        abort: set when the call is being cancelled (the driver also cancels the task).
        allow_outside: let file tools touch paths outside ``cwd``.
        additional_directories: folders outside ``cwd`` that may be read without asking
            (settings ``permissions.additionalDirectories``), resolved.
        checked_path: the resolved path the permission chain checked for this call; a tool
            that writes must write exactly this file.
        hidden_paths: folders the searching tools (Glob, Grep) never list, such as the
            run's own trace folder (a run must not read its own traces).
        results_dir: where a result too large to send is saved whole (SPEC §7.1); the model
            gets a preview and the path. None cuts such a result to the preview instead.
        extra: anything else the application wants to hand to its tools.
        call_id: the id of the call (the model's tool_use id).
        parent: the run the call belongs to, for a tool that starts a child agent
            (``Task``); None outside an ``Agent`` run.
    """

    cwd: Path
    abort: asyncio.Event = attrs.field(factory=_abort_flag)
    allow_outside: bool = False
    additional_directories: tuple[Path, ...] = ()
    checked_path: Path | None = None
    hidden_paths: tuple[Path, ...] = ()
    results_dir: Path | None = None
    extra: dict[str, Any] = attrs.field(factory=dict)
    call_id: str = ""
    parent: ParentRun | None = None


@attrs.frozen(kw_only=True)
class PermissionCheck:
    """A tool's own opinion on whether a call may run (SPEC §9.3 step 1c).

    Attributes:
        behavior: ``allow``, ``deny``, ``ask`` (prompt the user) or ``passthrough`` (no
            opinion: the permission chain decides from rules and mode).
        message: why, for the user or the model.
        reason: a machine-readable cause; :data:`SAFETY_CHECK` marks a protected path, which
            asks even in bypass mode.
    """

    behavior: PermissionBehavior = "allow"
    message: str = ""
    reason: str = ""


@attrs.frozen(kw_only=True)
class ToolOutput:
    """What a tool call returns.

    Attributes:
        content: text, or a tuple of text/image blocks.
        is_error: the call failed; the model sees the content as an error result.
        context_update: changes the tool asks the loop to apply to the shared context
            (SPEC §5.1 context modifiers).
    """

    content: ToolResultContent = ""
    is_error: bool = False
    context_update: dict[str, Any] | None = None


class Tool(Generic[InputT]):
    """Base class of every tool.

    Subclasses set the class attributes and override :meth:`call`; the other methods have the
    defaults the reference loop uses (SPEC §4: not concurrency-safe, not read-only, permission
    allowed). A subclass that defines ``__init__`` must call ``super().__init__()``.

    Attributes:
        name: the name the model calls the tool by.
        description: what the tool does, for the model.
        input_type: an attrs class; its fields are the tool's parameters.
        max_result_chars: results longer than ``min(this, 50 000)`` are truncated;
            ``None`` never truncates (for tools that bound their own output).
        is_shell: a shell tool; its errors cancel running siblings (SPEC §5.2).
        interrupt_cancels: an ``interrupt`` abort cancels it.
        aliases: older names the model may still use.
        path_field: the input field naming the file or folder the tool reads or writes (an
            empty or missing value means the working folder). Permission rules with path
            patterns, the working-folder check of reads and the protected-path check of
            writes apply to it (SPEC §9.3).
        requires_user_interaction: the call needs a person (SPEC §9.3 step 1e): when the
            permission chain asks, it asks even in ``bypassPermissions`` mode.
        read_only: every call of the tool is read-only, whatever its input (``Read``,
            ``Glob``, ``Grep``); a ``Task`` whose child has only such tools may run beside
            other calls.
    """

    name: str
    description: str = ""
    input_type: type[InputT]
    max_result_chars: int | None = DEFAULT_MAX_RESULT_CHARS
    is_shell: bool = False
    interrupt_cancels: bool = False
    aliases: tuple[str, ...] = ()
    path_field: str | None = None
    requires_user_interaction: bool = False
    read_only: bool = False

    def __init__(self) -> None:
        where = type(self).__qualname__
        if not isinstance(getattr(self, "name", None), str) or not self.name:
            raise DefinitionError(f"tool {where} has no name: set the class attribute `name`")
        input_type = getattr(self, "input_type", None)
        if not (isinstance(input_type, type) and attrs.has(input_type)):
            raise DefinitionError(
                f"tool {self.name!r}: input_type must be an attrs class, got {input_type!r}"
            )

    def input_schema(self) -> dict[str, Any]:
        """The JSON schema of the input, generated from the fields of ``input_type``."""
        return schema_for_type(self.input_type)

    def parse_input(self, raw: Mapping[str, Any]) -> InputT:
        """Turn the model's raw input into an ``input_type`` instance.

        Raises:
            ToolInputError: the input has unknown keys, misses required ones, or holds values of
                the wrong type (no loose coercion: ``"1"`` is not an integer).
        """
        if not isinstance(raw, Mapping):
            raise ToolInputError(
                f"InputValidationError: input: expected an object, got {json_type_name(raw)}"
            )
        try:
            return _input_converter().structure(dict(raw), self.input_type)
        except Exception as exc:
            from cattrs import transform_error  # noqa: PLC0415 (loaded by _input_converter)

            problems = transform_error(exc, path="$", format_exception=_describe_problem)
            lines = [f"InputValidationError: {_problem_line(p)}" for p in problems]
            raise ToolInputError("\n".join(lines) or f"InputValidationError: {exc}") from None

    async def validate_input(self, data: InputT, ctx: ToolContext) -> str | None:
        """Check the input against the world; ``None`` if fine, else an error text for the model.

        May read the file system, must not change anything.
        """
        return None

    def is_concurrency_safe(self, data: InputT) -> bool:
        """Whether this call may run alongside other safe calls (SPEC §5)."""
        return False

    def is_read_only(self, data: InputT) -> bool:
        """Whether this call changes nothing outside the process."""
        return False

    def check_permissions(self, data: InputT, ctx: ToolContext) -> PermissionCheck:
        """The tool's own permission opinion (default: allow)."""
        return PermissionCheck()

    def inner_tool_names(self) -> tuple[str, ...]:
        """Tools this tool's calls may run in turn (a ``Task``'s child tools): an agent's
        permission rules may name them, and reach them there."""
        return ()

    async def call(self, data: InputT, ctx: ToolContext, progress: ProgressCallback) -> ToolOutput:
        """Do the work. Exceptions become error results; cancellation must propagate."""
        raise NotImplementedError(f"tool {self.name!r} does not implement call()")

    def spec(self) -> ToolSpec:
        """What the core and the trace header know of this tool."""
        return ToolSpec(
            name=self.name,
            input_schema=self.input_schema(),
            description=self.description,
            is_shell=self.is_shell,
            interrupt_cancels=self.interrupt_cancels,
            aliases=tuple(self.aliases),
            unbounded_results=self.max_result_chars is None,
        )

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


# --- the runners -----------------------------------------------------------------------------


def _wrap(text: str) -> str:
    return f"<tool_use_error>{text}</tool_use_error>"


def format_tool_error(exc: BaseException) -> str:
    """An exception as the model sees it: its type and message, never a traceback."""
    message = str(exc).strip()
    kind = type(exc).__name__
    return f"{kind}: {message}" if message else kind


async def run_validation(
    tool: Tool[Any] | None,
    tool_name: str,
    raw_input: Mapping[str, Any],
    ctx: ToolContext,
    *,
    call_id: str,
    timeout_s: float | None = None,
) -> ToolInputValidated:
    """Look the tool up, parse and validate the input, and classify the call (SPEC §4 steps 0 to 2).

    Never raises for tool misbehaviour: a failing step becomes ``ok=False`` with the error text
    the model will see. The classification follows SPEC §5.1 (input that does not parse, or an
    ``is_concurrency_safe`` that raises, means unsafe) and SPEC §5.2 (an unknown tool is safe:
    it never runs).

    Args:
        tool: the tool registered under ``tool_name`` (or an alias), ``None`` if none is.
        tool_name: the name the model used.
        raw_input: the model's input object.
        ctx: the context the call would run in.
        call_id: the id of the call, echoed in the result.
        timeout_s: ``validate_input`` past this many seconds fails the call with an error
            saying so (the same bound as the call itself); None waits for ever.
    """
    from fsm_agent.core.events import ToolInputValidated  # noqa: PLC0415 - loaded when first used

    if tool is None:
        return ToolInputValidated(
            call_id=call_id,
            ok=False,
            error=_wrap(f"Error: No such tool available: {tool_name}"),
            concurrency_safe=True,
        )
    try:
        data = tool.parse_input(raw_input)
    except ToolInputError as exc:
        return ToolInputValidated(call_id=call_id, ok=False, error=_wrap(str(exc)))
    except Exception as exc:  # a custom parse_input misbehaving
        text = f"InputValidationError: {format_tool_error(exc)}"
        return ToolInputValidated(call_id=call_id, ok=False, error=_wrap(text))
    safe = _predicate(tool.is_concurrency_safe, data)
    read_only = _predicate(tool.is_read_only, data)
    import asyncio  # noqa: PLC0415 - issue 10: loaded by the first run

    deadline = asyncio.timeout(timeout_s)
    try:
        async with deadline:
            problem = await tool.validate_input(data, ctx)
    except Exception as exc:
        problem = format_tool_error(exc)
        if isinstance(exc, TimeoutError) and deadline.expired() and timeout_s is not None:
            problem = texts.tool_timed_out(tool.name, timeout_s)
    if problem is not None:
        return ToolInputValidated(
            call_id=call_id,
            ok=False,
            error=_wrap(str(problem)),
            concurrency_safe=safe,
            read_only=read_only,
        )
    return ToolInputValidated(call_id=call_id, ok=True, concurrency_safe=safe, read_only=read_only)


def _predicate(check: Callable[[Any], bool], data: Any) -> bool:
    try:
        return check(data) is True
    except Exception:
        return False  # SPEC §5.1: a classifier that raises means "not safe"


async def run_call(
    tool: Tool[Any],
    raw_input: Mapping[str, Any],
    ctx: ToolContext,
    progress: ProgressCallback,
    *,
    call_id: str,
    timeout_s: float | None = None,
) -> ToolCallFinished:
    """Run one call and shape its result for the model (SPEC §4 steps 7, 8; §7.1).

    The input is parsed again (a hook or the user may have replaced it since validation).
    An exception becomes an error result naming its type and message; an empty result becomes
    a short note; a result over the tool's limit is cut to a preview with a marker giving the
    original size. ``asyncio.CancelledError`` propagates.

    Args:
        tool: the tool to run.
        raw_input: the input to run it with.
        ctx: the context to run it in.
        progress: called with progress texts while the tool runs.
        call_id: the id of the call, echoed in the result.
        timeout_s: the call is cancelled past this many seconds and answered with an error
            saying so (``LoopConfig.tool_timeout_ms``); None waits for ever. A tool working
            in a thread is only abandoned, not stopped: such tools bound their own work.
    """
    import asyncio  # noqa: PLC0415 - issue 10: loaded by the first run

    from fsm_agent.core.events import ToolCallFinished  # noqa: PLC0415 - loaded when first used

    deadline = asyncio.timeout(timeout_s)
    try:
        async with deadline:
            data = tool.parse_input(raw_input)
            output = await tool.call(data, ctx, progress)
            output = _as_output(tool, output)
    except ToolInputError as exc:
        return ToolCallFinished(call_id=call_id, content=_wrap(str(exc)), is_error=True)
    except Exception as exc:
        if isinstance(exc, TimeoutError) and deadline.expired():
            assert timeout_s is not None
            text = texts.tool_timed_out(tool.name, timeout_s)
            return ToolCallFinished(call_id=call_id, content=_wrap(text), is_error=True)
        return ToolCallFinished(
            call_id=call_id, content=_wrap(format_tool_error(exc)), is_error=True
        )
    content = _valid_text(output.content)
    if _is_empty(content):
        content = f"({tool.name} completed with no output)"
    else:
        content = _limit_size(content, tool.max_result_chars, ctx.results_dir, call_id)
    return ToolCallFinished(
        call_id=call_id,
        content=content,
        is_error=output.is_error,
        context_update=output.context_update,
    )


def _as_output(tool: Tool[Any], value: object) -> ToolOutput:
    if isinstance(value, ToolOutput):
        return value
    if isinstance(value, str):
        return ToolOutput(content=value)
    raise TypeError(
        f"tool {tool.name!r} returned {type(value).__name__}; a tool returns its result as "
        "text (str) or a ToolOutput"
    )


def _valid_text(content: ToolResultContent) -> ToolResultContent:
    """Text the API and the trace accept: lone surrogates (say, from a file name that is not
    UTF-8) written as ``\\udce9`` escapes."""
    from fsm_agent.core.messages import TextBlock  # noqa: PLC0415 - loaded when first used

    if isinstance(content, str):
        return escape_surrogates(content)
    return tuple(
        attrs.evolve(b, text=escape_surrogates(b.text)) if isinstance(b, TextBlock) else b
        for b in content
    )


def _is_empty(content: ToolResultContent) -> bool:
    from fsm_agent.core.messages import TextBlock  # noqa: PLC0415 - loaded when first used

    if isinstance(content, str):
        return not content.strip()
    return all(isinstance(b, TextBlock) and not b.text.strip() for b in content)


def _limit_size(
    content: ToolResultContent, max_chars: int | None, results_dir: Path | None, call_id: str
) -> ToolResultContent:
    """Persist (or, with nowhere to save it, truncate) text over the limit; images are never
    counted or cut (SPEC §7.1). The decision is taken once, when the result is made, so the
    model never sees the same result in two shapes (the prompt cache keeps it)."""
    from fsm_agent.core.messages import TextBlock  # noqa: PLC0415 - loaded when first used

    if max_chars is None:
        return content
    limit = min(max_chars, DEFAULT_MAX_RESULT_CHARS)
    if isinstance(content, str):
        if len(content) <= limit:
            return content
        return _shorten(content, limit, results_dir, call_id)
    written = [b.text for b in content if isinstance(b, TextBlock)]
    if sum(map(len, written)) <= limit:
        return content
    others = tuple(b for b in content if not isinstance(b, TextBlock))
    return (TextBlock(text=_shorten("\n".join(written), limit, results_dir, call_id)), *others)


def _shorten(text: str, limit: int, results_dir: Path | None, call_id: str) -> str:
    saved = save_result(text, results_dir, call_id)
    return saved if saved is not None else _truncate(text, limit)


def _truncate(text: str, limit: int) -> str:
    preview = preview_of(text)
    return (
        f"<truncated-output>\n"
        f"This result was {len(text):,} characters long, over the limit of {limit:,}, "
        f"so only its first {len(preview):,} characters are kept below. "
        f"Narrow the request (a smaller range, a more specific pattern) to see the rest.\n\n"
        f"{preview}\n...\n"
        f"</truncated-output>"
    )


# --- the decorator ---------------------------------------------------------------------------

ToolFunction: TypeAlias = Callable[..., Awaitable["str | ToolOutput"]]


class FunctionTool(Tool[Any]):
    """A tool made from an async function by :func:`tool`.

    The function takes either ``(data, ctx)`` where ``data`` is an attrs instance, or the
    input's fields as keyword parameters (plus, optionally, a ``ctx: ToolContext`` parameter).
    It returns a string or a :class:`ToolOutput`.
    """

    def __init__(
        self,
        function: ToolFunction,
        *,
        name: str,
        description: str,
        input_type: type[Any],
        keyword_form: bool,
        context_param: str | None,
        concurrency_safe: bool = False,
        read_only: bool = False,
        max_result_chars: int | None = DEFAULT_MAX_RESULT_CHARS,
        is_shell: bool = False,
        interrupt_cancels: bool = False,
        aliases: Sequence[str] = (),
    ) -> None:
        self.function = function
        self.name = name
        self.description = description
        self.input_type = input_type
        self.max_result_chars = max_result_chars
        self.is_shell = is_shell
        self.interrupt_cancels = interrupt_cancels
        self.aliases = tuple(aliases)
        self._keyword_form = keyword_form
        self._context_param = context_param
        self._concurrency_safe = concurrency_safe
        self.read_only = read_only
        super().__init__()

    def is_concurrency_safe(self, data: Any) -> bool:
        """The flag given to the decorator."""
        return self._concurrency_safe

    def is_read_only(self, data: Any) -> bool:
        """The flag given to the decorator."""
        return self.read_only

    async def call(self, data: Any, ctx: ToolContext, progress: ProgressCallback) -> ToolOutput:
        """Call the wrapped function and accept a string or a ToolOutput from it."""
        if self._keyword_form:
            kwargs = {f.name: getattr(data, f.name) for f in attrs.fields(self.input_type)}
            if self._context_param is not None:
                kwargs[self._context_param] = ctx
            result = await self.function(**kwargs)
        else:
            result = await self.function(data, ctx)
        return _as_output(self, result)


def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    concurrency_safe: bool = False,
    read_only: bool = False,
    max_result_chars: int | None = DEFAULT_MAX_RESULT_CHARS,
    is_shell: bool = False,
    interrupt_cancels: bool = False,
    aliases: Sequence[str] = (),
) -> Callable[[ToolFunction], FunctionTool]:
    """Turn a typed async function into a :class:`Tool`.

    Two shapes are accepted::

        @tool(description="Add two numbers.", concurrency_safe=True, read_only=True)
        async def add(*, a: int, b: int = 1) -> str: ...

        @tool(name="Greet", description="Greet someone.")
        async def greet(data: GreetInput, ctx: ToolContext) -> ToolOutput: ...

    In the first, the parameters become the fields of a generated attrs input class (a
    parameter annotated ``ToolContext`` receives the context instead); ``Annotated[T, "text"]``
    gives a field its description. In the second, the first parameter's annotation must be an
    attrs class.

    Args:
        name: the tool's name; defaults to the function's name.
        description: defaults to the function's docstring.
        concurrency_safe: returned by ``is_concurrency_safe`` for every input.
        read_only: returned by ``is_read_only`` for every input.
        max_result_chars: see :class:`Tool`.
        is_shell: see :class:`Tool`.
        interrupt_cancels: see :class:`Tool`.
        aliases: see :class:`Tool`.

    Raises:
        DefinitionError: the function is not async or its parameters are not typed.
    """

    def wrap(function: ToolFunction) -> FunctionTool:
        tool_name = name or str(getattr(function, "__name__", ""))
        if not inspect.iscoroutinefunction(function):
            raise DefinitionError(f"@tool needs an async function; {tool_name!r} is not one")
        input_type, keyword_form, context_param = _input_type_of(function, tool_name)
        text = description if description is not None else (inspect.getdoc(function) or "")
        return FunctionTool(
            function,
            name=tool_name,
            description=text,
            input_type=input_type,
            keyword_form=keyword_form,
            context_param=context_param,
            concurrency_safe=concurrency_safe,
            read_only=read_only,
            max_result_chars=max_result_chars,
            is_shell=is_shell,
            interrupt_cancels=interrupt_cancels,
            aliases=aliases,
        )

    return wrap


def _input_type_of(function: ToolFunction, tool_name: str) -> tuple[type[Any], bool, str | None]:
    """The input class of a decorated function, whether it takes keywords, and its ctx param."""
    try:
        hints = typing.get_type_hints(function, include_extras=True)
    except Exception as exc:
        raise DefinitionError(
            f"@tool {tool_name!r}: cannot resolve the parameter annotations ({exc})"
        ) from exc
    params = list(inspect.signature(function).parameters.values())
    first = params[0] if params else None
    if first is not None and first.kind in _POSITIONAL:
        hint = _strip_annotated(hints.get(first.name))
        # ToolContext is an attrs class too: ``async def f(ctx: ToolContext)`` takes no input.
        if isinstance(hint, type) and attrs.has(hint) and hint is not ToolContext:
            return hint, False, None
    fields: dict[str, Any] = {}
    context_param = None
    for param in params:
        hint = hints.get(param.name)
        if hint is ToolContext:
            context_param = param.name
            continue
        if param.kind not in (
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
            inspect.Parameter.KEYWORD_ONLY,
        ):
            raise DefinitionError(
                f"@tool {tool_name!r}: parameter {param.name!r} must be passable by keyword"
            )
        if hint is None:
            raise DefinitionError(f"@tool {tool_name!r}: parameter {param.name!r} has no type")
        fields[param.name] = _field_for(param, hint)
    class_name = "".join(part.capitalize() for part in tool_name.split("_")) + "Input"
    if not class_name.isidentifier() or keyword.iskeyword(class_name):
        class_name = "ToolInput"
    return attrs.make_class(class_name, fields, frozen=True, kw_only=True), True, context_param


_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def _field_for(param: inspect.Parameter, hint: Any) -> Any:
    metadata = {}
    if typing.get_origin(hint) is typing.Annotated:
        notes = [a for a in hint.__metadata__ if isinstance(a, str)]
        if notes:
            metadata["description"] = notes[0]
        hint = hint.__origin__
    if param.default is inspect.Parameter.empty:
        return attrs.field(type=hint, metadata=metadata)
    default = param.default
    if isinstance(default, list | dict | set):  # never share a mutable default between calls
        return attrs.field(type=hint, metadata=metadata, factory=lambda: copy.copy(default))
    return attrs.field(type=hint, metadata=metadata, default=default)


def _strip_annotated(hint: Any) -> Any:
    while typing.get_origin(hint) is typing.Annotated:
        hint = hint.__origin__
    return hint


# --- schema generation -----------------------------------------------------------------------

_SCALARS: dict[type, str] = {str: "string", bool: "boolean", int: "integer", float: "number"}


def schema_for_type(kind: Any) -> dict[str, Any]:
    """The JSON schema of a type as a tool input uses it.

    Handles ``str int float bool``, ``list/tuple/set[...]``, ``dict[str, ...]``, ``Optional``
    and other unions, ``Literal``, enums, ``Any`` and nested attrs classes. An attrs class
    gives an object whose fields without a default are required and whose
    ``metadata={"description": ...}`` becomes the property's description.

    Raises:
        DefinitionError: the type has no JSON schema here (say, a ``bytes`` field).
    """
    kind = _strip_annotated(kind)
    if kind is Any:
        return {}
    if kind is None or kind is type(None):
        return {"type": "null"}
    if isinstance(kind, type) and attrs.has(kind):
        return _object_schema(kind)
    if kind in _SCALARS:
        return {"type": _SCALARS[kind]}
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        return _enum_schema([member.value for member in kind])
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin is Literal:
        return _enum_schema(list(args))
    if origin in (Union, types.UnionType):
        options = [a for a in args if a is not type(None)]
        if len(options) == 1:  # Optional[X]: absence is expressed by "not required"
            return schema_for_type(options[0])
        return {"anyOf": [schema_for_type(a) for a in args]}
    if kind in (list, tuple, set, frozenset) or origin in (list, tuple, set, frozenset):
        schema: dict[str, Any] = {"type": "array"}
        items = [a for a in args if a is not Ellipsis]
        if origin is tuple and len(items) > 1:
            raise DefinitionError(f"fixed-length tuples have no tool schema here: {kind!r}")
        if items:
            schema["items"] = schema_for_type(items[0])
        return schema
    if kind is dict or origin is dict:
        if args and args[0] is not str:
            raise DefinitionError(f"object keys must be strings: {kind!r}")
        schema = {"type": "object"}
        if len(args) == 2 and args[1] is not Any:
            schema["additionalProperties"] = schema_for_type(args[1])
        return schema
    raise DefinitionError(f"no JSON schema for the type {kind!r}")


def _object_schema(cls: type) -> dict[str, Any]:
    try:
        hints = typing.get_type_hints(cls, include_extras=True)
    except Exception as exc:
        raise DefinitionError(f"cannot resolve the field types of {cls.__name__}: {exc}") from exc
    properties: dict[str, Any] = {}
    required: list[str] = []
    for field in attrs.fields(cls):
        prop = schema_for_type(hints.get(field.name, field.type))
        if "description" in field.metadata:
            prop = {**prop, "description": str(field.metadata["description"])}
        default = field.default
        if default is attrs.NOTHING:
            required.append(field.alias or field.name)
        elif isinstance(default, enum.Enum):
            prop = {**prop, "default": default.value}
        elif default is not None and isinstance(default, str | int | float | bool):
            prop = {**prop, "default": default}
        properties[field.alias or field.name] = prop
    schema: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
    }
    if required:
        schema["required"] = required
    return schema


def _enum_schema(values: list[Any]) -> dict[str, Any]:
    schema: dict[str, Any] = {"enum": values}
    kinds = {_SCALARS.get(type(v)) for v in values}
    if len(kinds) == 1 and None not in kinds:
        schema["type"] = kinds.pop()
    return schema


# --- strict parsing --------------------------------------------------------------------------


class _WrongType(TypeError):
    """A value of the wrong JSON type; its message is already meant for the model."""


def _strict_scalar(kind: type) -> Callable[[Any, Any], Any]:
    expected = _SCALARS[kind]

    def structure(value: Any, _type: Any) -> Any:
        # bool is an int subclass, so compare exact types; an int is a fine float.
        if type(value) is kind or (kind is float and type(value) is int):
            return value
        raise _WrongType(f"expected {expected}, got {json_type_name(value)}")

    return structure


def _strict_collections(converter: cattrs.Converter) -> None:
    """Refuse a string where an array belongs, and a non-object where an object belongs."""

    def is_array(kind: Any) -> bool:
        return kind in (list, tuple, set, frozenset) or typing.get_origin(kind) in (
            list,
            tuple,
            set,
            frozenset,
        )

    def is_object(kind: Any) -> bool:
        return kind is dict or typing.get_origin(kind) is dict

    def guarded(check: Callable[[Any], bool], expected: str) -> Callable[[Any], Any]:
        def factory(kind: Any) -> Callable[[Any, Any], Any]:
            inner = base.get_structure_hook(kind)

            def structure(value: Any, kind_: Any) -> Any:
                if not check(value):
                    raise _WrongType(f"expected {expected}, got {json_type_name(value)}")
                return inner(value, kind_)

            return structure

        return factory

    base = converter.copy()  # hooks for the element types, without the guards below
    converter.register_structure_hook_factory(
        is_array, guarded(lambda v: isinstance(v, list | tuple), "array")
    )
    converter.register_structure_hook_factory(
        is_object, guarded(lambda v: isinstance(v, dict), "object")
    )


@functools.cache
def _input_converter() -> cattrs.Converter:
    """The strict converter for tool inputs, built on first use (not at import: cattrs is
    imported here, so ``from fsm_agent import Agent`` does not pay for it)."""
    import cattrs  # noqa: PLC0415

    converter = cattrs.Converter(forbid_extra_keys=True)
    for kind in _SCALARS:
        converter.register_structure_hook(kind, _strict_scalar(kind))
    _strict_collections(converter)
    return converter


def _describe_problem(exc: BaseException, kind: type | None) -> str:
    """One problem, worded for the model (used with ``cattrs.transform_error``)."""
    from cattrs.errors import ForbiddenExtraKeysError  # noqa: PLC0415
    from cattrs.v import format_exception  # noqa: PLC0415

    if isinstance(exc, _WrongType):
        return str(exc)
    if isinstance(exc, ForbiddenExtraKeysError):
        return f"unexpected parameter(s): {', '.join(sorted(exc.extra_fields))}"
    if isinstance(exc, KeyError):
        return "required parameter is missing"
    stripped = _strip_annotated(kind)
    if typing.get_origin(stripped) is Literal:
        return "must be one of " + ", ".join(repr(v) for v in typing.get_args(stripped))
    if isinstance(stripped, type) and issubclass(stripped, enum.Enum):
        return "must be one of " + ", ".join(repr(m.value) for m in stripped)
    return format_exception(exc, kind)


def _problem_line(problem: str) -> str:
    """``"<problem> @ $.a.b"`` (cattrs) → ``"a.b: <problem>"``."""
    text, separator, path = problem.rpartition(" @ ")
    if not separator:
        return problem
    path = path.removeprefix("$").removeprefix(".")
    return f"{path or 'input'}: {text}"
