"""``fsm-agent demo``: a whole run, offline, through the real SDK and a local fake server.

The shipped scenario (``scenarios/demo.json``) makes the model read three files at once, ask
to write a file (a permission prompt the demo's policy answers), get cut off at the output
limit (``max_output_tokens_recovery``), hit "prompt is too long" (``reactive_compact_retry``
after a summary), and finish twice because a Stop hook asks for one more check
(``stop_hook_blocking``). The run is traced, then the trace is replayed and compared record by
record.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from fsm_agent.core.config import LoopConfig
from fsm_agent.core.events import HookOutcome
from fsm_agent.runtime.agent import Agent, RunResult, Update
from fsm_agent.runtime.hooks import HookInput, Hooks
from fsm_agent.runtime.permissions import PermissionAnswer, PermissionPolicy, PermissionRequest
from fsm_agent.trace.location import default_trace_folder

if TYPE_CHECKING:
    from fsm_agent.runtime.tool import Tool

DEMO_FILES = {
    "README.md": "# demo project\n\nA tiny project for the fsm_agent demo.\n",
    "app.py": 'def greet(name: str) -> str:\n    return f"hello, {name}"\n',
    "test_app.py": "from app import greet\n\n\ndef test_greet() -> None:\n    assert greet('x')\n",
}
DEMO_PROMPT = "Give me a tour of this project and write what you find into NOTES.md."


@attrs.frozen(kw_only=True)
class DemoOutcome:
    """What the demo did."""

    result: RunResult
    replayed_records: int
    seconds: float
    permission_questions: tuple[str, ...]


def make_workspace(root: Path) -> Path:
    """Fill ``root`` with the demo project."""
    for name, text in DEMO_FILES.items():
        (root / name).write_text(text, encoding="utf-8")
    return root


def approve_notes(asked: list[str]) -> Callable[[PermissionRequest], PermissionAnswer]:
    """The demo's permission policy: allow writing NOTES.md, refuse anything else."""

    def ask(request: PermissionRequest) -> PermissionAnswer:
        target = str(request.input.get("file_path", ""))
        asked.append(f"{request.tool_name}({target})")
        return PermissionAnswer(allow=target.endswith("NOTES.md"))

    return ask


def stop_hook_asking_once() -> Callable[[HookInput], HookOutcome | None]:
    """A Stop hook that blocks the first stop once, asking for one more check."""

    def check_notes(hook: HookInput) -> HookOutcome | None:
        if hook.payload.get("stop_hook_active"):
            return None  # the hook's own loop guard (SPEC §6.3)
        return HookOutcome(blocking_errors=("Check that NOTES.md exists before you stop.",))

    return check_notes


async def run_demo(
    *,
    workdir: Path | None = None,
    trace_path: str | os.PathLike[str] | None = None,
    on_update: Callable[[Update], None] | None = None,
) -> DemoOutcome:
    """Run the demo scenario against the fake server and replay its trace."""
    from fsm_agent.runtime.models import AnthropicModel  # noqa: PLC0415 - lazy SDK import
    from fsm_agent.testing.fake_server import FakeAnthropicServer  # noqa: PLC0415
    from fsm_agent.testing.scenario import load_shipped_scenario  # noqa: PLC0415
    from fsm_agent.trace.replay import replay  # noqa: PLC0415

    started = time.perf_counter()
    scenario = load_shipped_scenario("demo")
    with tempfile.TemporaryDirectory(prefix="fsm-agent-demo-") as scratch:
        root = make_workspace(workdir or Path(scratch))
        trace = trace_path or root / "demo-trace.jsonl"
        asked: list[str] = []
        async with FakeAnthropicServer(scenario) as server:
            model = AnthropicModel(
                name="claude-sonnet-4-6", api_key="demo-key-not-secret", base_url=server.base_url
            )
            agent = Agent(
                model=model,
                tools=_demo_tools(),
                config=LoopConfig(model="claude-sonnet-4-6"),
                hooks=Hooks(stop=[stop_hook_asking_once()]),
                permissions=PermissionPolicy(ask=approve_notes(asked)),
                trace=trace,
                cwd=root,
            )
            result: RunResult | None = None
            async for update in agent.stream(DEMO_PROMPT):
                if on_update is not None:
                    on_update(update)
                from fsm_agent.runtime.agent import RunFinished  # noqa: PLC0415

                if isinstance(update, RunFinished):
                    result = update.result
            await model.aclose()
        assert result is not None
        assert result.trace_path is not None
        replayed = replay(result.trace_path)
        if trace_path is None:
            # Keep the trace beyond the temporary folder.
            kept = default_trace_folder() / "demo-trace.jsonl"
            kept.parent.mkdir(parents=True, exist_ok=True)
            kept.write_bytes(result.trace_path.read_bytes())
            result = attrs.evolve(result, trace_path=kept)
    return DemoOutcome(
        result=result,
        replayed_records=replayed.records,
        seconds=time.perf_counter() - started,
        permission_questions=tuple(asked),
    )


def _demo_tools() -> list[Tool[Any]]:
    from fsm_agent.toolbox import default_tools  # noqa: PLC0415

    return list(default_tools())


def run_demo_sync(**kwargs: object) -> DemoOutcome:
    """``run_demo`` in a fresh event loop."""
    return asyncio.run(run_demo(**kwargs))  # type: ignore[arg-type]
