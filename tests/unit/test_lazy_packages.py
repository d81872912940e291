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


def test_importing_agent_loads_no_parser_view_or_sdk() -> None:
    """``from fsm_agent import Agent`` leaves the shell parser, the ignore-file reader, the
    timelines, replay, the trace reader, the run store, the MCP client, live telemetry,
    sessions, the read-only command tables, cattrs and the anthropic SDK unloaded until a run
    needs them, and builds no converter."""
    heavy = (
        "anthropic",
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
    )
    code = (
        "import sys\n"
        "from fsm_agent import Agent\n"
        "assert Agent is not None\n"
        "from fsm_agent.core.codec import converter\n"
        "assert converter.cache_info().currsize == 0, 'the codec converter was built'\n"
        f"print(sorted(m for m in {heavy!r} if m in sys.modules))\n"
    )
    found = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert found == "[]"
