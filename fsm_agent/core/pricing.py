"""What a model costs: :class:`ModelPrice`, and how a price rides in a trace header's meta.

A run's price is recorded in its trace (``meta.price``), so its cost can be worked out again
from the trace alone: by the run store when it indexes the run, and by the telemetry export
(issue 13). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from fsm_agent.core.messages import Usage


@attrs.frozen(kw_only=True)
class ModelPrice:
    """What a model costs, in US dollars per million tokens (to fill ``RunResult.cost_usd``)."""

    input: float
    output: float
    cache_write: float = 0.0
    cache_read: float = 0.0

    def cost(self, usage: Usage) -> float:
        """The cost of ``usage`` at these prices."""
        return (
            usage.input_tokens * self.input
            + usage.output_tokens * self.output
            + usage.cache_creation_input_tokens * self.cache_write
            + usage.cache_read_input_tokens * self.cache_read
        ) / 1_000_000

    def to_meta(self) -> dict[str, float]:
        """The price as the trace header's ``meta.price`` holds it."""
        return attrs.asdict(self)

    @classmethod
    def from_meta(cls, value: object) -> ModelPrice | None:
        """The price a header's ``meta.price`` holds, or None when it holds none (or junk:
        meta is free-form, and a cost is never worth failing an import for)."""
        if not isinstance(value, Mapping):
            return None
        prices: dict[str, float] = {}
        for field in attrs.fields(cls):
            found = value.get(field.name, field.default)
            if isinstance(found, bool) or not isinstance(found, int | float):
                return None
            prices[field.name] = float(found)
        return cls(**prices)


def usage_cost(price: object, usage: Mapping[str, Any]) -> float | None:
    """The cost of an ``end`` record's ``usage`` at the price of ``meta.price``, if known."""
    known = ModelPrice.from_meta(price)
    if known is None:
        return None

    def count(name: str) -> int:
        value = usage.get(name, 0)
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    return known.cost(
        Usage(
            input_tokens=count("input_tokens"),
            output_tokens=count("output_tokens"),
            cache_creation_input_tokens=count("cache_creation_input_tokens"),
            cache_read_input_tokens=count("cache_read_input_tokens"),
        )
    )
