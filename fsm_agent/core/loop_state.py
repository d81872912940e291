"""The loop's carried state (SPEC §1.1), replaced wholesale at every continue.

Each continue transition builds the next ``LoopState`` with :func:`evolved`, applying the
reset/keep rules of SPEC §2.1; the core's ``_on_<reason>`` methods say which, field by field.
"""

from __future__ import annotations

import operator
from typing import Any

import attrs

from fsm_agent.core.messages import Message
from fsm_agent.core.record_builder import record_builder


@attrs.frozen(kw_only=True)
class AutoCompactTracking:
    """What autocompact remembers across iterations (SPEC §7.5)."""

    compacted: bool = False
    turn_id: str = ""
    turn_counter: int = 0
    consecutive_failures: int = 0


@attrs.frozen(kw_only=True)
class LoopState:
    """SPEC §1.1 carried state, plus our stop-hook block counter.

    Attributes:
        messages: the history the next request is built from.
        auto_compact: autocompact tracking, None until autocompact first ran.
        max_output_tokens_recovery_count: truncation recoveries in this chain.
        has_attempted_reactive_compact: the one-shot guard of reactive compact.
        max_output_tokens_override: the escalated output size, when escalated.
        stop_hook_active: set after a ``stop_hook_blocking`` continue; passed to Stop hooks.
        turn_count: starts at 1, incremented only by ``next_turn``.
        transition: the previous continue reason.
        stop_hook_blocks: consecutive ``stop_hook_blocking`` continues (reset by ``next_turn``).
        pause_turns: ``pause_turn`` continues in this turn (reset by ``next_turn``).
    """

    messages: tuple[Message, ...] = ()
    auto_compact: AutoCompactTracking | None = None
    max_output_tokens_recovery_count: int = 0
    has_attempted_reactive_compact: bool = False
    max_output_tokens_override: int | None = None
    stop_hook_active: bool | None = None
    turn_count: int = 1
    transition: str | None = None
    stop_hook_blocks: int = 0
    pause_turns: int = 0


new_state = record_builder(LoopState)
"""``LoopState(...)``, built without attrs' frozen ``__init__`` (see ``record_builder``)."""

_FIELD_NAMES = tuple(field.name for field in attrs.fields(LoopState))
_field_values = operator.attrgetter(*_FIELD_NAMES)


def evolved(state: LoopState, /, **changes: Any) -> LoopState:
    """``attrs.evolve(state, **changes)``, without its walk over the class's field records: the
    core builds a state per continue and per change of history (DESIGN §7)."""
    values = dict(zip(_FIELD_NAMES, _field_values(state), strict=True))
    values.update(changes)
    return new_state(**values)
