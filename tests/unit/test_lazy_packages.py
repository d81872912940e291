"""The packages that load their public names on first use keep their lists whole and cheap."""

from __future__ import annotations

import subprocess
import sys

import pytest

import fsm_agent.toolbox
import fsm_agent.trace


@pytest.mark.parametrize("package", [fsm_agent.trace, fsm_agent.toolbox])
def test_every_public_name_of_a_lazy_package_resolves(package: object) -> None:
    """``__all__`` and the table of lazily loaded names agree, and each name loads."""
    public = set(package.__all__)  # type: ignore[attr-defined]
    lazy = set(package._PUBLIC)  # type: ignore[attr-defined]
    assert lazy <= public
    assert public - lazy <= {"default_tools"}
    for name in public:
        assert getattr(package, name) is not None


RUN_MACHINERY = (
    "asyncio",
    "fsm_agent.core.agent_core",
    "fsm_agent.core.codec",
    "fsm_agent.core.effects",
    "fsm_agent.core.events",
    "fsm_agent.core.messages",
    "fsm_agent.core.tables",
    "fsm_agent.runtime.driver",
    "fsm_agent.runtime.performing",
    "fsm_agent.runtime.compaction",
    "fsm_agent.runtime.models",
    "fsm_agent.trace.writer",
)
"""What only a run needs: asyncio, the core and its tables, the event, effect and message
classes and their codec, the driver, the effect performer, compaction, the model machinery and
the trace writer (issue 10)."""


def _loaded_after(code: str, modules: tuple[str, ...]) -> list[str]:
    """Which of ``modules`` a fresh interpreter has loaded once it ran ``code``."""
    probe = f"{code}\nimport sys\nprint(sorted(m for m in {modules!r} if m in sys.modules))\n"
    found = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout.strip()
    return [name.strip(" '") for name in found.strip("[]").split(",") if name.strip()]


def test_importing_agent_loads_no_parser_view_or_sdk() -> None:
    """``from fsm_agent import Agent`` leaves the shell parser, the ignore-file reader, the
    timelines, replay, the trace reader, the run store, the MCP client, live telemetry,
    stdlib logging, sessions, the read-only command tables, cattrs, the anthropic SDK and
    the run machinery unloaded until a run needs them (so no codec converter is built)."""
    heavy = (
        "anthropic",
        "logging",
        "cattrs",
        "fsm_agent.trace.reader",
        "fsm_agent.telemetry.live",
        "fsm_agent.runtime.session",
        "tree_sitter",
        "pathspec",
        "fsm_agent.trace.timeline",
        "fsm_agent.trace.timeline_page",
        "fsm_agent.trace.replay",
        "fsm_agent.toolbox.bash",
        "fsm_agent.store.sql_store",
        "fsm_agent.store.recording",
        "fsm_agent.runtime.mcp_tools",
        "fsm_agent.core.read_only_commands",
        "fsm_agent.core.shell_commands",
        *RUN_MACHINERY,
    )
    code = (
        "import sys\n"
        "from fsm_agent import Agent\n"
        "assert Agent is not None\n"
        f"print(sorted(m for m in {heavy!r} if m in sys.modules))\n"
    )
    found = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert found == "[]"


BUILD_AN_AGENT = '''
from fsm_agent import Agent, Hooks, HookMatcher, LoopConfig, PermissionPolicy, tool

class Model:
    name = "claude-test"

    async def stream(self, request):
        yield {}

@tool(read_only=True)
async def echo(text: str) -> str:
    """Echo the text."""
    return text

def note(hook):
    return None

agent = Agent(
    model=Model(),
    tools=[echo],
    config=LoopConfig(max_turns=3),
    hooks=Hooks(pre_tool_use=[HookMatcher(matcher="echo", hooks=[note])]),
    permissions=PermissionPolicy(allow={"echo"}),
    trace=False,
)
assert agent.tool("echo") is echo
'''


def test_building_an_agent_loads_no_run_machinery() -> None:
    """Building an ``Agent`` with a tool, hooks, permission rules and a config checks them
    without loading asyncio, the core, the driver, compaction, the models or the trace
    writer."""
    assert _loaded_after(BUILD_AN_AGENT, RUN_MACHINERY) == []


def test_a_run_loads_the_run_machinery() -> None:
    """The probe sees the run machinery once a run has used it (so the test above can fail)."""
    code = (
        "from fsm_agent import Agent\n"
        "from fsm_agent.testing.scenario import ScriptedModel, parse_scenario\n"
        "steps = {'steps': [{'content': [{'text': 'hi'}]}]}\n"
        "model = ScriptedModel(parse_scenario(steps))\n"
        "assert Agent(model=model, trace=False).run_sync('hello').text == 'hi'\n"
    )
    assert _loaded_after(code, RUN_MACHINERY) == sorted(RUN_MACHINERY)
