"""Server tools: tools the Messages API runs itself, declared next to local tools.

A ``ServerTool`` is only a declaration sent in the request's ``tools`` list. The model calls it
with a ``server_tool_use`` block, the API runs it and streams the result block in the same
response; nothing runs locally and no permission is asked. Both blocks stay in the assistant
message and go back to the API with it (see :mod:`fsm_agent.core.stream`).

Web fetch and code execution are beta features: give the model their flag, for example
``AnthropicModel(name=..., betas=["web-fetch-2025-09-10"])``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

__all__ = ["ServerTool"]


def _options(**values: Any) -> dict[str, Any]:
    """The options that were given (None means: leave it to the API's default)."""
    return {key: value for key, value in values.items() if value is not None}


@attrs.frozen(kw_only=True)
class ServerTool:
    """A tool the API runs: pass it in ``Agent(tools=[...])`` beside local tools.

    Build one with ``ServerTool.web_search()``, ``ServerTool.web_fetch()`` or
    ``ServerTool.code_execution()``, or directly with the API's ``type`` and ``name`` for a
    server tool this library has no constructor for.

    Attributes:
        type: The versioned tool type the API knows (``web_search_20250305``).
        name: The name the model calls it by.
        options: Further fields of the tool definition (``max_uses``, ``allowed_domains``...).
    """

    type: str
    name: str
    options: dict[str, Any] = attrs.field(factory=dict)

    @classmethod
    def web_search(
        cls,
        *,
        max_uses: int | None = None,
        allowed_domains: Sequence[str] | None = None,
        blocked_domains: Sequence[str] | None = None,
        user_location: dict[str, Any] | None = None,
    ) -> ServerTool:
        """Web search, answered with cited results."""
        return cls(
            type="web_search_20250305",
            name="web_search",
            options=_options(
                max_uses=max_uses,
                allowed_domains=None if allowed_domains is None else list(allowed_domains),
                blocked_domains=None if blocked_domains is None else list(blocked_domains),
                user_location=user_location,
            ),
        )

    @classmethod
    def web_fetch(
        cls,
        *,
        max_uses: int | None = None,
        allowed_domains: Sequence[str] | None = None,
        citations: bool | None = None,
        max_content_tokens: int | None = None,
    ) -> ServerTool:
        """Fetching a web page or PDF by URL (beta ``web-fetch-2025-09-10``)."""
        return cls(
            type="web_fetch_20250910",
            name="web_fetch",
            options=_options(
                max_uses=max_uses,
                allowed_domains=None if allowed_domains is None else list(allowed_domains),
                citations=None if citations is None else {"enabled": citations},
                max_content_tokens=max_content_tokens,
            ),
        )

    @classmethod
    def code_execution(cls) -> ServerTool:
        """Code execution in the API's sandbox (beta ``code-execution-2025-08-25``)."""
        return cls(type="code_execution_20250825", name="code_execution")

    def to_api(self) -> dict[str, Any]:
        """The tool definition as the request's ``tools`` list carries it."""
        return {"type": self.type, "name": self.name, **self.options}
