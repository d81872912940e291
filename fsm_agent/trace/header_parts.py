"""A trace header's config and tools, unstructured and rendered once per (config, tools).

Every run writes a header holding its loop configuration and its tool specs, and a process
that runs many agents gives most of its writers the very same config and tool objects
(issue 10: building the header was a tenth of what tracing a short run cost). Both are
frozen, so what is made of them is kept by their identity: the unstructured dicts, whether a
sensitive key name occurs in them (DESIGN §8), and the header line's bytes around ``meta``,
the one part that differs from run to run. An entry holds the objects it was made from, so
an id is never taken for another object's; the memo keeps a bounded number of entries.
"""

from __future__ import annotations

from typing import Any, Final

import attrs

from fsm_agent.core.config import LoopConfig
from fsm_agent.core.tool_spec import ToolSpec
from fsm_agent.trace import records
from fsm_agent.trace.redact import has_sensitive_key

__all__ = ["HeaderParts", "header_parts"]

_LIMIT: Final = 64
"""Entries kept (a process seldom has more than a few configs; a test suite may)."""

_META_KEY: Final = b'{"meta":'


@attrs.frozen
class HeaderParts:
    """What a header is made of, once per (config, tools).

    Attributes:
        source: the config and tools it was made from (kept, so their ids stay theirs).
        config: the config unstructured (shared between writers: never change it).
        tools: the tool specs unstructured (shared likewise).
        keys_hit: whether a sensitive key name occurs in ``config`` or ``tools``.
    """

    source: tuple[LoopConfig, tuple[ToolSpec, ...]]
    config: dict[str, Any]
    tools: list[Any]
    keys_hit: bool
    _around_meta: dict[tuple[int, str, str], tuple[bytes, bytes]] = attrs.field(
        factory=dict, alias="around_meta"
    )
    _without_meta: dict[tuple[int, str, str], bytes] = attrs.field(
        factory=dict, alias="without_meta"
    )

    def line(self, header: records.TraceHeader) -> bytes:
        """The header's line (without the newline and unredacted): the sorted-key JSON of
        :meth:`~fsm_agent.trace.records.TraceHeader.record_with`, byte for byte."""
        key = (header.schema, header.library_version, header.table_digest)
        if not header.meta and type(header.meta) is dict:  # most runs: made once
            line = self._without_meta.get(key)
            if line is None:
                line = self._without_meta[key] = self._line_around(key, header.meta)
            return line
        return self._line_around(key, header.meta)

    def _line_around(self, key: tuple[int, str, str], meta: dict[str, Any]) -> bytes:
        """The header's line with ``meta`` between the bytes made once for ``key``."""
        around = self._around_meta.get(key)
        if around is None:
            # Sorted keys: config and library_version come before meta, the rest after it.
            before = records.dumps({"config": self.config, "library_version": key[1]})
            after = records.dumps(
                {"record": "header", "schema": key[0], "table_digest": key[2], "tools": self.tools}
            )
            around = self._around_meta[key] = (before[:-1] + b',"meta":', b"," + after[1:])
        # Rendered at the depth it has in the header, so a value nested too deep is cut alike.
        rendered = records.dumps({"meta": meta})[len(_META_KEY) : -1]
        return around[0] + rendered + around[1]


_MEMO: Final[dict[int, HeaderParts]] = {}


def header_parts(config: LoopConfig, tools: tuple[ToolSpec, ...]) -> HeaderParts:
    """The :class:`HeaderParts` of ``config`` and ``tools``, made again only for objects it
    has not seen."""
    known = _MEMO.get(id(config))
    if known is not None:
        known_config, known_tools = known.source
        if (
            known_config is config
            and len(known_tools) == len(tools)
            and all(old is new for old, new in zip(known_tools, tools, strict=True))
        ):
            return known
    from fsm_agent.core.codec import converter  # noqa: PLC0415 - built on first use

    config_dict = converter().unstructure(config)
    tools_list = [converter().unstructure(tool) for tool in tools]
    keys_hit = has_sensitive_key(config_dict) or has_sensitive_key(tools_list)
    parts = HeaderParts((config, tools), config_dict, tools_list, keys_hit)
    if len(_MEMO) >= _LIMIT:
        _MEMO.clear()
    _MEMO[id(config)] = parts
    return parts
