"""The tool API: schema generation, strict parsing, the decorator and the two runners."""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Coroutine
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

import attrs
import pytest

from fsm_agent.core.events import ToolCallFinished, ToolInputValidated
from fsm_agent.core.messages import ImageBlock, TextBlock
from fsm_agent.errors import DefinitionError
from fsm_agent.runtime.tool import (
    PREVIEW_CHARS,
    FunctionTool,
    PermissionCheck,
    ProgressCallback,
    Tool,
    ToolContext,
    ToolInputError,
    ToolOutput,
    run_call,
    run_validation,
    schema_for_type,
    tool,
)

T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def no_progress(text: str) -> None:
    pass


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


@attrs.frozen(kw_only=True)
class Inner:
    depth: int


@attrs.frozen(kw_only=True)
class SampleInput:
    path: str = attrs.field(metadata={"description": "Where to look."})
    count: int = 3
    ratio: float | None = None
    verbose: bool = False
    tags: list[str] = attrs.field(factory=list)
    labels: dict[str, int] = attrs.field(factory=dict)
    mode: Literal["fast", "slow"] = "fast"
    color: Color = Color.RED
    inner: Inner | None = None


class SampleTool(Tool[SampleInput]):
    name = "Sample"
    description = "A tool for tests."
    input_type = SampleInput

    async def call(
        self, data: SampleInput, ctx: ToolContext, progress: ProgressCallback
    ) -> ToolOutput:
        return ToolOutput(content=f"{data.path}:{data.count}")


def ctx_for(tmp: Path | None = None) -> ToolContext:
    return ToolContext(cwd=tmp or Path.cwd())


# --- schema ----------------------------------------------------------------------------------


def test_schema_covers_field_kinds_and_required() -> None:
    """The JSON schema maps every supported field type; fields without a default are required."""
    schema = SampleTool().input_schema()
    assert schema["type"] == "object"
    assert schema["required"] == ["path"]
    assert schema["additionalProperties"] is False
    props = schema["properties"]
    assert props["path"] == {"type": "string", "description": "Where to look."}
    assert props["count"] == {"type": "integer", "default": 3}
    assert props["ratio"] == {"type": "number"}
    assert props["verbose"] == {"type": "boolean", "default": False}
    assert props["tags"] == {"type": "array", "items": {"type": "string"}}
    assert props["labels"] == {"type": "object", "additionalProperties": {"type": "integer"}}
    assert props["mode"] == {"enum": ["fast", "slow"], "type": "string", "default": "fast"}
    assert props["color"] == {"enum": ["red", "blue"], "type": "string", "default": "red"}
    assert props["inner"]["properties"] == {"depth": {"type": "integer"}}


def test_schema_for_unions_and_any() -> None:
    """A union of several types becomes anyOf (None as null); Any places no constraint."""
    assert schema_for_type(int | str | None) == {
        "anyOf": [{"type": "integer"}, {"type": "string"}, {"type": "null"}]
    }
    assert schema_for_type(Any) == {}
    assert schema_for_type(tuple[int, ...]) == {"type": "array", "items": {"type": "integer"}}


def test_spec_carries_schema_and_flags() -> None:
    """spec() gives the core the name, description, schema and static flags."""
    spec = SampleTool().spec()
    assert spec.name == "Sample"
    assert spec.description == "A tool for tests."
    assert spec.input_schema == SampleTool().input_schema()
    assert spec.is_shell is False


def test_unsupported_field_type_is_a_definition_error() -> None:
    """A field type with no JSON schema is reported when the schema is built."""

    @attrs.frozen
    class Bad:
        blob: bytes

    class BadTool(SampleTool):
        input_type = Bad  # type: ignore[assignment]

    with pytest.raises(DefinitionError, match="bytes"):
        BadTool().input_schema()


def test_tool_without_attrs_input_is_a_definition_error() -> None:
    """A Tool subclass whose input_type is not an attrs class fails when instantiated."""

    class NoInput(SampleTool):
        input_type = dict  # type: ignore[assignment]

    with pytest.raises(DefinitionError, match="attrs class"):
        NoInput()


# --- parsing ---------------------------------------------------------------------------------


def test_parse_input_builds_the_attrs_instance() -> None:
    """Valid input becomes an instance of the input class, nested classes and enums included."""
    data = SampleTool().parse_input(
        {"path": "a", "count": 2, "ratio": 1, "color": "blue", "inner": {"depth": 1}}
    )
    assert data == SampleInput(path="a", count=2, ratio=1, color=Color.BLUE, inner=Inner(depth=1))


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({}, "InputValidationError: path: required parameter is missing"),
        ({"path": "a", "extra": 1}, "InputValidationError: input: unexpected parameter(s): extra"),
        ({"path": 1}, "InputValidationError: path: expected string, got number"),
        ({"path": "a", "count": "1"}, "InputValidationError: count: expected integer, got string"),
        (
            {"path": "a", "count": True},
            "InputValidationError: count: expected integer, got boolean",
        ),
        ({"path": "a", "verbose": "false"}, "verbose: expected boolean, got string"),
        ({"path": "a", "tags": "ab"}, "tags: expected array, got string"),
        ({"path": "a", "tags": ["x", 2]}, "tags[1]: expected string, got number"),
        ({"path": "a", "labels": []}, "labels: expected object, got array"),
        ({"path": "a", "mode": "medium"}, "mode: must be one of 'fast', 'slow'"),
        ({"path": "a", "color": "green"}, "color: must be one of 'red', 'blue'"),
        ({"path": "a", "inner": {}}, "inner.depth: required parameter is missing"),
    ],
)
def test_parse_errors_read_as_input_validation_errors(raw: dict[str, Any], expected: str) -> None:
    """Bad input raises ToolInputError naming the field path and the problem, no coercion."""
    with pytest.raises(ToolInputError) as caught:
        SampleTool().parse_input(raw)
    assert expected in str(caught.value)
    assert str(caught.value).startswith("InputValidationError: ")


def test_parse_error_lists_every_problem() -> None:
    """Several problems give one line each."""
    with pytest.raises(ToolInputError) as caught:
        SampleTool().parse_input({"count": "x", "verbose": 1})
    assert len(str(caught.value).splitlines()) == 3


# --- decorator -------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class GreetInput:
    who: str


@tool(name="Greet", description="Greet someone.", concurrency_safe=True, read_only=True)
async def greet(data: GreetInput, ctx: ToolContext) -> str:
    return f"hello {data.who} from {ctx.cwd.name}"


@tool(description="Add numbers.")
async def add_numbers(
    *, a: Annotated[int, "The first addend."], b: int = 1, ctx: ToolContext
) -> ToolOutput:
    return ToolOutput(content=str(a + b), context_update={"cwd": str(ctx.cwd)})


def test_decorator_from_attrs_typed_function() -> None:
    """An (attrs input, ctx) function becomes a tool with the decorator's name and flags."""
    assert isinstance(greet, FunctionTool)
    assert greet.name == "Greet"
    assert greet.input_type is GreetInput
    assert greet.is_concurrency_safe(GreetInput(who="x"))
    assert greet.is_read_only(GreetInput(who="x"))
    result = run(run_call(greet, {"who": "Ada"}, ctx_for(Path("/tmp")), no_progress, call_id="c1"))
    assert result == ToolCallFinished(call_id="c1", content="hello Ada from tmp")


def test_decorator_from_keyword_parameters() -> None:
    """Typed keyword parameters become a generated input class; ctx is passed, not a field."""
    schema = add_numbers.input_schema()
    assert schema["required"] == ["a"]
    assert schema["properties"] == {
        "a": {"type": "integer", "description": "The first addend."},
        "b": {"type": "integer", "default": 1},
    }
    assert add_numbers.name == "add_numbers"
    assert add_numbers.description == "Add numbers."
    assert not add_numbers.is_concurrency_safe(add_numbers.parse_input({"a": 1}))
    result = run(run_call(add_numbers, {"a": 2}, ctx_for(Path("/tmp")), no_progress, call_id="c"))
    assert result.content == "3"
    assert result.context_update == {"cwd": "/tmp"}


def test_decorator_of_a_function_taking_only_the_context() -> None:
    """``async def f(ctx: ToolContext)`` is a tool without input (ctx is not its input class)."""

    @tool()
    async def where(ctx: ToolContext) -> str:
        """Say the working folder."""
        return str(ctx.cwd)

    assert where.input_schema()["properties"] == {}
    result = run(run_call(where, {}, ctx_for(Path("/tmp")), no_progress, call_id="c"))
    assert result.content == "/tmp"


def test_decorator_refuses_sync_and_untyped_functions() -> None:
    """A sync function or an unannotated parameter is a definition error."""

    def sync(*, a: int) -> str:
        return ""

    async def untyped(*, a) -> str:  # type: ignore[no-untyped-def]
        return ""

    with pytest.raises(DefinitionError, match="async"):
        tool()(sync)  # type: ignore[arg-type]
    with pytest.raises(DefinitionError, match="no type"):
        tool()(untyped)


# --- run_validation --------------------------------------------------------------------------


class Picky(SampleTool):
    async def validate_input(self, data: SampleInput, ctx: ToolContext) -> str | None:
        return None if data.path == "ok" else f"no such path: {data.path}"

    def is_concurrency_safe(self, data: SampleInput) -> bool:
        if data.path == "boom":
            raise RuntimeError("classifier broke")
        return True

    def is_read_only(self, data: SampleInput) -> bool:
        return True


def validate(tool_: Tool[Any] | None, raw: dict[str, Any], name: str = "X") -> ToolInputValidated:
    return run(run_validation(tool_, name, raw, ctx_for(), call_id="id1"))


def test_run_validation_unknown_tool() -> None:
    """An unknown tool name gives the no-such-tool error wrapped in tool_use_error."""
    result = validate(None, {}, name="Nope")
    assert result == ToolInputValidated(
        call_id="id1",
        ok=False,
        error="<tool_use_error>Error: No such tool available: Nope</tool_use_error>",
        concurrency_safe=True,
    )


def test_run_validation_bad_input() -> None:
    """Input that does not parse is an InputValidationError and unsafe (SPEC §5.1)."""
    result = validate(Picky(), {"path": 3})
    assert not result.ok
    assert result.error == (
        "<tool_use_error>InputValidationError: path: expected string, got number</tool_use_error>"
    )
    assert not result.concurrency_safe


def test_run_validation_validate_input_failure() -> None:
    """A validate_input message is wrapped in tool_use_error; the classification is kept."""
    result = validate(Picky(), {"path": "elsewhere"})
    assert not result.ok
    assert result.error == "<tool_use_error>no such path: elsewhere</tool_use_error>"
    assert result.concurrency_safe
    assert result.read_only


def test_run_validation_ok() -> None:
    """Good input is ok and classified by the tool."""
    result = validate(Picky(), {"path": "ok"})
    assert result == ToolInputValidated(
        call_id="id1", ok=True, concurrency_safe=True, read_only=True
    )


def test_run_validation_classifier_raising_means_unsafe() -> None:
    """is_concurrency_safe raising makes the call unsafe instead of failing (SPEC §5.1)."""
    result = validate(Picky(), {"path": "boom"})
    assert not result.concurrency_safe


def test_run_validation_validate_input_raising() -> None:
    """An exception in validate_input becomes an error text, not an exception."""

    class Raising(SampleTool):
        async def validate_input(self, data: SampleInput, ctx: ToolContext) -> str | None:
            raise OSError("disk gone")

    result = validate(Raising(), {"path": "a"})
    assert result.error == "<tool_use_error>OSError: disk gone</tool_use_error>"


# --- run_call --------------------------------------------------------------------------------


class Scripted(SampleTool):
    """Returns (or raises) whatever the test put in ``outcome``."""

    def __init__(self, outcome: object) -> None:
        super().__init__()
        self.outcome = outcome

    async def call(
        self, data: SampleInput, ctx: ToolContext, progress: ProgressCallback
    ) -> ToolOutput:
        progress("working")
        if isinstance(self.outcome, BaseException):
            raise self.outcome
        return self.outcome  # type: ignore[return-value]


def call(tool_: Tool[Any]) -> ToolCallFinished:
    return run(run_call(tool_, {"path": "a"}, ctx_for(), no_progress, call_id="c9"))


def test_run_call_exception_becomes_error_result() -> None:
    """An exception is an is_error result with its type and message, no traceback."""
    result = call(Scripted(ValueError("bad thing")))
    assert result == ToolCallFinished(
        call_id="c9",
        content="<tool_use_error>ValueError: bad thing</tool_use_error>",
        is_error=True,
    )
    assert "Traceback" not in str(result.content)


def test_run_call_wrong_return_type_is_an_error() -> None:
    """A call returning neither ToolOutput nor str is reported, not raised, naming both
    (the report named ToolOutput alone, though a @tool function returns text)."""
    result = call(Scripted(42))
    assert result.is_error
    assert "returned int; a tool returns its result as text (str) or a ToolOutput" in str(
        result.content
    )


@pytest.mark.parametrize("content", ["", "  \n", (), (TextBlock(text=""),)])
def test_run_call_empty_output_is_replaced(content: Any) -> None:
    """An empty result reads '(<Tool> completed with no output)' (SPEC §7.1)."""
    result = call(Scripted(ToolOutput(content=content)))
    assert result.content == "(Sample completed with no output)"
    assert not result.is_error


def test_run_call_keeps_error_flag_and_context_update() -> None:
    """is_error and context_update pass through from the tool's output."""
    result = call(Scripted(ToolOutput(content="x", is_error=True, context_update={"k": 1})))
    assert result.is_error
    assert result.context_update == {"k": 1}


def test_run_call_truncates_oversized_output() -> None:
    """A result over the limit becomes a preview with a marker stating the original size."""
    big = "\n".join(f"line {i:06d}" for i in range(10_000))  # 119 999 characters
    result = call(Scripted(ToolOutput(content=big)))
    assert isinstance(result.content, str)
    assert "119,999 characters" in result.content
    assert "50,000" in result.content
    assert result.content.count("line ") < PREVIEW_CHARS // 10
    assert "line 000000" in result.content
    assert len(result.content) < PREVIEW_CHARS + 500


def test_run_call_respects_a_smaller_limit_and_none() -> None:
    """max_result_chars lowers the limit; None never truncates."""
    small = Scripted(ToolOutput(content="x" * 200))
    small.max_result_chars = 100
    assert "<truncated-output>" in str(call(small).content)
    unlimited = Scripted(ToolOutput(content="x" * 60_000))
    unlimited.max_result_chars = None
    assert call(unlimited).content == "x" * 60_000


def test_run_call_truncates_text_blocks_but_keeps_images() -> None:
    """Block results are measured by their text; images are never cut."""
    image = ImageBlock(source={"type": "base64", "data": "AAAA"})
    result = call(Scripted(ToolOutput(content=(TextBlock(text="y" * 60_000), image))))
    assert isinstance(result.content, tuple)
    assert result.content[1] == image
    assert isinstance(result.content[0], TextBlock)
    assert "60,000 characters" in result.content[0].text


def test_run_call_cancellation_propagates() -> None:
    """Cancelling the task running run_call raises CancelledError out of it."""
    started = asyncio.Event()

    class Slow(SampleTool):
        async def call(
            self, data: SampleInput, ctx: ToolContext, progress: ProgressCallback
        ) -> ToolOutput:
            started.set()
            await asyncio.sleep(30)
            return ToolOutput(content="late")

    async def scenario() -> None:
        task = asyncio.create_task(
            run_call(Slow(), {"path": "a"}, ctx_for(), no_progress, call_id="c")
        )
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    run(scenario())


def test_run_call_reports_progress() -> None:
    """The progress callback receives the tool's progress texts."""
    seen: list[str] = []
    run(
        run_call(
            Scripted(ToolOutput(content="x")), {"path": "a"}, ctx_for(), seen.append, call_id="c"
        )
    )
    assert seen == ["working"]


def test_default_permission_check_allows() -> None:
    """Without an override, check_permissions allows (SPEC §4 tool defaults)."""
    data = SampleInput(path="a")
    assert SampleTool().check_permissions(data, ctx_for()) == PermissionCheck(behavior="allow")
    assert not SampleTool().is_concurrency_safe(data)
    assert not SampleTool().is_read_only(data)


def test_run_call_persists_oversized_output_when_it_has_a_folder(tmp_path: Path) -> None:
    """With a results folder, an oversized result is saved whole and the model gets a
    preview and the file's path (SPEC §7.1)."""
    big = "\n".join(f"line {i:06d}" for i in range(10_000))
    context = attrs.evolve(ctx_for(), results_dir=tmp_path / "results")
    result = run(
        run_call(
            Scripted(ToolOutput(content=big)), {"path": "a"}, context, no_progress, call_id="c/9"
        )
    )
    saved = tmp_path / "results" / "c_9.txt"
    assert saved.read_text(encoding="utf-8") == big
    assert isinstance(result.content, str)
    assert "<persisted-output>" in result.content
    assert str(saved) in result.content
    assert "119,999 characters" in result.content
    assert "line 000000" in result.content
    assert len(result.content) < PREVIEW_CHARS + 500


def test_run_call_truncates_when_the_folder_cannot_be_written(tmp_path: Path) -> None:
    """A results folder that cannot be made falls back to the truncated preview."""
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    context = attrs.evolve(ctx_for(), results_dir=blocker / "results")
    result = run(
        run_call(
            Scripted(ToolOutput(content="x" * 60_000)),
            {"path": "a"},
            context,
            no_progress,
            call_id="c",
        )
    )
    assert "<truncated-output>" in str(result.content)
