"""Tool providers: tools that come and go between iterations (SPEC §1.2 S7 tool refresh).

A provider is asked for its tools as each run starts and again at each attachment phase, as an
MCP server's tool list is. When the tools it gives change, the driver tells the core with the
``tools`` of its ``AttachmentsReady`` answer (so the trace records the new list), and the next
request offers them to the model.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from fsm_agent.errors import ConfigError
from fsm_agent.runtime.tool import Tool


@runtime_checkable
class ToolProvider(Protocol):
    """Something whose tools may change while an agent runs (a server that connects later,
    a plugin that is switched on). An exception from ``tools`` ends the run as a fault."""

    async def tools(self) -> Sequence[Tool[Any]]:
        """The tools available now."""
        ...


def check_tool_providers(providers: Sequence[ToolProvider]) -> tuple[ToolProvider, ...]:
    """The providers as given, or a ``ConfigError`` naming the one that is not a provider."""
    for provider in providers:
        if not isinstance(provider, ToolProvider):
            raise ConfigError(
                f"tool_providers: {provider!r} is not a ToolProvider (it needs an async tools())"
            )
    return tuple(providers)


async def provided_tools(providers: Sequence[ToolProvider]) -> list[Tool[Any]]:
    """Every provider's tools now, in provider order.

    Raises:
        ConfigError: a provider gave something that is not a ``Tool``.
    """
    found: list[Tool[Any]] = []
    for provider in providers:
        for tool in await provider.tools():
            if not isinstance(tool, Tool):
                raise ConfigError(f"tool provider {provider!r} gave {tool!r}, which is not a Tool")
            found.append(tool)
    return found
