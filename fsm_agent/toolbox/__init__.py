"""The built-in tools: Read, Glob, Grep, Edit, Write and Bash.

Each lives in its own module; :func:`default_tools` gives one fresh instance of each, in the
order they are usually listed to the model.
"""

from __future__ import annotations

from typing import Any

from fsm_agent.runtime.tool import Tool
from fsm_agent.toolbox.bash import Bash, BashInput
from fsm_agent.toolbox.edit import Edit, EditInput
from fsm_agent.toolbox.glob import Glob, GlobInput
from fsm_agent.toolbox.grep import Grep, GrepInput
from fsm_agent.toolbox.read import Read, ReadInput
from fsm_agent.toolbox.write import Write, WriteInput

__all__ = [
    "Bash",
    "BashInput",
    "Edit",
    "EditInput",
    "Glob",
    "GlobInput",
    "Grep",
    "GrepInput",
    "Read",
    "ReadInput",
    "Write",
    "WriteInput",
    "default_tools",
]


def default_tools() -> list[Tool[Any]]:
    """One instance of every built-in tool."""
    return [Read(), Glob(), Grep(), Edit(), Write(), Bash()]
