"""The built-in tools: Read, Glob, Grep, Edit, Write and Bash, and Task (opt-in: it runs the
subagents it is given, see :mod:`fsm_agent.toolbox.task`).

Each lives in its own module; :func:`default_tools` gives one fresh instance of each, in the
order they are usually listed to the model. The modules are loaded on first use: a program
that needs one helper of this package (say ``toolbox.paths``) does not pay for the shell
parser behind Bash or the ignore-file reader behind Glob.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fsm_agent.lazy_exports import lazy_exports

_PUBLIC = {
    "Bash": "fsm_agent.toolbox.bash",
    "BashInput": "fsm_agent.toolbox.bash",
    "Edit": "fsm_agent.toolbox.edit",
    "EditInput": "fsm_agent.toolbox.edit",
    "Glob": "fsm_agent.toolbox.glob",
    "GlobInput": "fsm_agent.toolbox.glob",
    "Grep": "fsm_agent.toolbox.grep",
    "GrepInput": "fsm_agent.toolbox.grep",
    "Read": "fsm_agent.toolbox.read",
    "ReadInput": "fsm_agent.toolbox.read",
    "Snip": "fsm_agent.toolbox.snip",
    "SnipInput": "fsm_agent.toolbox.snip",
    "Task": "fsm_agent.toolbox.task",
    "TaskInput": "fsm_agent.toolbox.task",
    "Write": "fsm_agent.toolbox.write",
    "WriteInput": "fsm_agent.toolbox.write",
}

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
    "Snip",
    "SnipInput",
    "Task",
    "TaskInput",
    "Write",
    "WriteInput",
    "default_tools",
]

if TYPE_CHECKING:
    from fsm_agent.runtime.tool import Tool
    from fsm_agent.toolbox.bash import Bash, BashInput
    from fsm_agent.toolbox.edit import Edit, EditInput
    from fsm_agent.toolbox.glob import Glob, GlobInput
    from fsm_agent.toolbox.grep import Grep, GrepInput
    from fsm_agent.toolbox.read import Read, ReadInput
    from fsm_agent.toolbox.snip import Snip, SnipInput
    from fsm_agent.toolbox.task import Task, TaskInput
    from fsm_agent.toolbox.write import Write, WriteInput


__getattr__, __dir__ = lazy_exports(__name__, _PUBLIC, globals())


def default_tools() -> list[Tool[Any]]:
    """One instance of every built-in tool."""
    from fsm_agent.toolbox.bash import Bash  # noqa: PLC0415 (loaded on first use)
    from fsm_agent.toolbox.edit import Edit  # noqa: PLC0415
    from fsm_agent.toolbox.glob import Glob  # noqa: PLC0415
    from fsm_agent.toolbox.grep import Grep  # noqa: PLC0415
    from fsm_agent.toolbox.read import Read  # noqa: PLC0415
    from fsm_agent.toolbox.write import Write  # noqa: PLC0415

    return [Read(), Glob(), Grep(), Edit(), Write(), Bash()]
