"""What the core knows about a tool: its name, schema and static flags.

The callable tool lives in the runtime; the core only needs what decisions read, and a trace
header records exactly this so a replay can rebuild the same core without the tool's code.
"""

from __future__ import annotations

from typing import Any

import attrs


@attrs.frozen(kw_only=True)
class ToolSpec:
    """A tool as the core and the trace see it.

    Attributes:
        name: the name the model calls it by.
        input_schema: the JSON schema sent to the API.
        description: the description sent to the API.
        is_shell: a shell tool; its errors cancel running siblings (SPEC §5.2).
        interrupt_cancels: an ``interrupt`` abort cancels it (interruptBehavior ``cancel``).
        aliases: older names the model may still use (SPEC §4 step 0).
        unbounded_results: the tool bounds its own output (Read): the tool-result budget
            never saves its results to a file (SPEC §7.1).
    """

    name: str
    input_schema: dict[str, Any] = attrs.field(factory=lambda: {"type": "object"})
    description: str = ""
    is_shell: bool = False
    interrupt_cancels: bool = False
    aliases: tuple[str, ...] = ()
    unbounded_results: bool = False
