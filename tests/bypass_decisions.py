"""The decision on a Bash command in bypass mode, with nobody to ask: what the property tests
hold against a real shell (a question is never answered, so only a run is an allow)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from fsm_agent.core.effects import AskPermission
from fsm_agent.core.events import PermissionBehavior
from fsm_agent.runtime.permissions import CallFacts, PermissionMode, PermissionPolicy
from fsm_agent.runtime.tool import ToolContext
from fsm_agent.toolbox import Bash
from fsm_agent.toolbox.bash import BashInput


def allowed_in_bypass(command: str, cwd: Path, home: Path) -> bool:
    """Whether ``command`` run in ``cwd`` (the user's home folder ``home``) runs unasked."""
    tool = Bash()
    check = tool.check_permissions(BashInput(command=command), ToolContext(cwd=cwd))
    effect = AskPermission(
        effect_id="e1", call_id="c1", tool_name="Bash", input={"command": command}
    )
    facts = CallFacts(tool=tool, cwd=cwd.resolve(), home=home)
    decided = asyncio.run(PermissionPolicy(mode=PermissionMode.BYPASS).decide(effect, check, facts))
    return decided.behavior is PermissionBehavior.ALLOW
