"""A Bash call's output as progress, through ``Agent`` with a scripted model: the updates, the
trace (which replays), and what the terminal view prints, a secret split across two
progress texts included.

The command waits for a file the test creates once it has seen the first part of the
output as an update, so the two parts are always two progress texts, whatever the timing.
"""

from __future__ import annotations

import asyncio
import io
from pathlib import Path
from typing import Any

import orjson
from rich.console import Console

from fsm_agent.core.config import LoopConfig
from fsm_agent.runtime.agent import Agent, RunFinished, RunResult, ToolProgress, Update
from fsm_agent.runtime.permissions import PermissionPolicy
from fsm_agent.terminal_view import LiveView
from fsm_agent.testing.scenario import ScriptedModel, parse_scenario
from fsm_agent.toolbox import Bash
from fsm_agent.trace.redact import mask
from fsm_agent.trace.replay import replay

SECRET = "ghp_configured0secret0value"
FIRST, SECOND = "token: ghp_confi", "gured0secret0value\nbuilt\n"
COMMAND = f"printf '{FIRST}'; while [ ! -e go ]; do sleep 0.01; done; printf '{SECOND}'"


async def _run(tmp_path: Path, view: LiveView) -> tuple[RunResult, list[Update]]:
    steps = [
        {"content": [{"tool_use": {"name": "Bash", "input": {"command": COMMAND}}}]},
        {"content": [{"text": "done"}]},
    ]
    agent = Agent(
        model=ScriptedModel(parse_scenario({"steps": steps}), name="scripted"),
        tools=[Bash(progress_interval=0)],
        config=LoopConfig(model="scripted"),
        permissions=PermissionPolicy(allow={"Bash"}),
        trace=tmp_path / "trace.jsonl",
        cwd=tmp_path,
        secrets=[SECRET],
        store=False,
    )
    seen: list[Update] = []
    async with asyncio.timeout(60):
        async for update in agent.stream("go"):
            seen.append(update)
            view.show(update)
            if isinstance(update, ToolProgress) and "token" in update.text:
                (tmp_path / "go").touch()
            if isinstance(update, RunFinished):
                return update.result, seen
    raise AssertionError("the run did not finish")


def test_bash_progress_reaches_updates_trace_and_view_with_a_split_secret_redacted(
    tmp_path: Path,
) -> None:
    out = io.StringIO()
    view = LiveView(
        console=Console(file=out, width=200, force_terminal=False, color_system=None),
        secrets=[SECRET],
    )
    result, seen = asyncio.run(_run(tmp_path, view))
    assert result.terminal == "completed"
    whole = FIRST + SECOND

    # Updates: the texts as reported, in order, the output's start, the secret split.
    texts = [update.text for update in seen if isinstance(update, ToolProgress)]
    assert texts[0] == FIRST
    assert whole.startswith("".join(texts))
    assert len(texts) >= 2

    # The trace: the same texts, the secret in none of them (held back and redacted whole),
    # none after the call's result; and it replays.
    assert result.trace_path is not None
    content = result.trace_path.read_bytes()
    assert SECRET.encode() not in content
    events: list[dict[str, Any]] = [
        orjson.loads(line)["event"] for line in content.splitlines()[1:-1]
    ]
    kinds = [event["type"] for event in events]
    traced = [event["text"] for event in events if event["type"] == "ToolProgressReported"]
    assert "".join(traced) == "".join(texts).replace(SECRET, mask(len(SECRET)))
    assert not any("ghp_confi" in text for text in traced)  # the command holds it, not these
    last_progress = max(i for i, kind in enumerate(kinds) if kind == "ToolProgressReported")
    assert last_progress < kinds.index("ToolCallFinished")
    assert replay(result.trace_path).terminal == "completed"

    # The view: the output line by line, the secret redacted whole, no part of it shown.
    # A line reported in two texts is printed as two lines, the secret whole in the second.
    printed = out.getvalue()
    assert f"… Bash: token: \n   … Bash: {mask(len(SECRET))}\n   … Bash: built\n" in printed
    shown = [line for line in printed.splitlines() if line.startswith("   … Bash:")]
    assert not any("ghp_confi" in line or "gured0" in line for line in shown)
