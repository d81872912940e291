"""Loop configuration: every bound the machine enforces is a value here, with its default.

The reference's feature flags and environment variables become plain options (SPEC §0).
``LoopConfig.from_env`` applies ``FSM_AGENT_*`` overrides; the core itself never reads the
environment.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from fsm_agent.errors import ConfigError


def _positive(_instance: object, attribute: attrs.Attribute[int], value: int) -> None:
    if value < 1:
        raise ConfigError(f"{attribute.name} must be at least 1, got {value}")


def _non_negative(_instance: object, attribute: attrs.Attribute[int], value: int) -> None:
    if value < 0:
        raise ConfigError(f"{attribute.name} must not be negative, got {value}")


def _optional_positive(
    _instance: object, attribute: attrs.Attribute[int | None], value: int | None
) -> None:
    if value is not None and value < 1:
        raise ConfigError(f"{attribute.name} must be at least 1 or None, got {value}")


def _bound(value: int) -> int | None:
    """A default for an ``int | None`` field (typed so, for mypy)."""
    return value


_KINDS: dict[str, tuple[type, str]] = {
    "int": (int, "an integer"),
    "bool": (bool, "true or false"),
    "str": (str, "a string"),
}


def _type_check(annotation: str) -> Any:
    """A validator refusing values whose type is not the annotation's (no bool for an int, no
    float or string for a count): a wrong type would otherwise fail later, far from here.
    None for an annotation other than ``int``, ``bool``, ``str`` (each optionally ``| None``).
    """
    name, _, rest = annotation.partition(" | ")
    if name not in _KINDS or rest not in {"", "None"}:
        return None
    kind, wanted = _KINDS[name]
    optional = rest == "None"
    if optional:
        wanted += " or None"

    def check(_instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
        if (value is None and optional) or type(value) is kind:
            return
        raise ConfigError(
            f"{attribute.name} must be {wanted}, got {type(value).__name__} {value!r}"
        )

    return check


def _typed(_cls: type, fields: list[attrs.Attribute[Any]]) -> list[attrs.Attribute[Any]]:
    """attrs field transformer: every field checks its type before its range validator."""
    typed = []
    for field in fields:
        check = _type_check(str(field.type))
        if check is not None and field.validator is not None:
            check = attrs.validators.and_(check, field.validator)
        typed.append(field if check is None else field.evolve(validator=check))
    return typed


@attrs.frozen(kw_only=True, field_transformer=_typed)
class LoopConfig:
    """Options of the loop machine. All bounds have a property test (DESIGN §2).

    Every field is checked for its type as well as its range: a string, a float or a bool
    where an integer belongs is a ``ConfigError`` naming the field.
    """

    model: str = "claude-sonnet-4-6"
    fallback_model: str | None = None
    max_turns: int | None = attrs.field(default=None, validator=_optional_positive)

    # Output-token recovery (SPEC §2.1, §8.3).
    max_output_tokens: int = attrs.field(default=32_000, validator=_positive)
    escalated_max_output_tokens: int = attrs.field(default=64_000, validator=_positive)
    escalate_output_tokens: bool = False  # the reference's tengu_otk_slot_v1 (default off)
    max_output_tokens_override: int | None = attrs.field(
        default=None, validator=_optional_positive
    )  # CLAUDE_CODE_MAX_OUTPUT_TOKENS: when set, escalation never applies
    max_output_tokens_recoveries: int = attrs.field(default=3, validator=_non_negative)

    # Stop hooks (SPEC §6.3; the cap is our addition: it ends in a terminal, not a loop).
    stop_hook_block_cap: int = attrs.field(default=8, validator=_positive)

    # A response paused by the API (stop_reason pause_turn: a long server-tool run) is sent
    # back to be carried on at most this many times per turn; then the turn finishes as is.
    pause_turn_limit: int = attrs.field(default=5, validator=_non_negative)

    # Compaction (SPEC §7).
    autocompact: bool = True
    reactive_compact: bool = True
    context_collapse: bool = False
    autocompact_failure_limit: int = attrs.field(default=3, validator=_positive)
    context_window: int = attrs.field(default=200_000, validator=_positive)
    autocompact_buffer_tokens: int = attrs.field(default=13_000, validator=_non_negative)
    blocking_buffer_tokens: int = attrs.field(default=3_000, validator=_non_negative)
    summary_output_reserve: int = attrs.field(default=20_000, validator=_non_negative)
    # Our addition (issue 10): compactions (auto and reactive) per user turn. Past it, or once
    # a compaction leaves the context over the autocompact threshold (it refilled at once),
    # nothing compacts again this turn: the run goes on, or ends blocking_limit or
    # prompt_too_long, instead of paying for a summary every iteration.
    max_compactions_per_turn: int = attrs.field(default=3, validator=_positive)

    # SPEC §7.1: characters of tool_results one API message may carry before its largest
    # fresh results are saved to files (None: no budget).
    tool_result_budget_chars: int | None = attrs.field(
        default=_bound(200_000), validator=_optional_positive
    )

    # SPEC §7.3 time-based microcompact (the reference's tengu_slate_heron, default off): when
    # the last response is at least the gap old, all but the last ``keep`` results of
    # compactable tools are cleared. Main thread only.
    time_based_microcompact: bool = False
    microcompact_gap_minutes: int = attrs.field(default=60, validator=_positive)
    microcompact_keep_recent: int = attrs.field(default=5, validator=_positive)

    # SPEC §7.2 snip (our design, core/snip.py): requests tag each user message with its id,
    # and the model may ask, with the Snip tool, for old turns to leave what is sent.
    snip: bool = False

    # SPEC §7.5, the optional exact count: before the autocompact and blocking checks, ask the
    # API (count_tokens) how big the request about to be sent is, and use that instead of the
    # estimate. Off by default: it costs one more round trip per iteration. A count that fails
    # or takes longer than the timeout leaves the estimate in charge.
    count_tokens: bool = False
    count_tokens_timeout_ms: int = attrs.field(default=10_000, validator=_positive)

    # Retries and fallback (SPEC §8.3). Backoff has no jitter: the core draws no randoms.
    max_retries: int = attrs.field(default=10, validator=_non_negative)
    overloaded_before_fallback: int = attrs.field(default=3, validator=_positive)
    retry_base_ms: int = attrs.field(default=500, validator=_non_negative)
    retry_cap_ms: int = attrs.field(default=32_000, validator=_non_negative)

    # The driver abandons a stream that sends nothing for this long (SPEC §3 idle watchdog).
    stream_idle_timeout_ms: int = attrs.field(default=90_000, validator=_positive)

    # Tools (SPEC §5).
    streaming_tool_execution: bool = True
    max_tool_concurrency: int = attrs.field(default=10, validator=_positive)

    # Default bounds on what the driver awaits (our addition; None waits for ever). A tool
    # call past its bound gets an error result saying so; a Python hook is stopped with a
    # warning (a command hook keeps its own timeout); a permission callback is taken as a
    # denial, reason "permission callback timed out".
    tool_timeout_ms: int | None = attrs.field(default=_bound(600_000), validator=_optional_positive)
    hook_timeout_ms: int | None = attrs.field(default=_bound(60_000), validator=_optional_positive)
    permission_timeout_ms: int | None = attrs.field(
        default=_bound(300_000), validator=_optional_positive
    )

    # Token budget (SPEC §7.6); None disables it.
    token_budget: int | None = attrs.field(default=None, validator=_optional_positive)
    is_subagent: bool = False

    @property
    def effective_window(self) -> int:
        """Context window minus the space reserved for a summary (SPEC §7.5)."""
        return self.context_window - min(self.max_output_tokens, self.summary_output_reserve)

    @property
    def autocompact_threshold(self) -> int:
        """Estimated tokens at which autocompact starts (SPEC §7.5)."""
        return self.effective_window - self.autocompact_buffer_tokens

    @property
    def blocking_limit(self) -> int:
        """Estimated tokens at which a request is refused before it is sent (SPEC §7.5)."""
        return self.effective_window - self.blocking_buffer_tokens

    def retry_delay_ms(self, attempt: int, retry_after_ms: int | None = None) -> int:
        """Backoff before ``attempt`` (2 = first retry): base·2^(n−2), capped; retry-after wins."""
        if retry_after_ms is not None:
            return min(retry_after_ms, self.retry_cap_ms)
        delay: int = self.retry_base_ms * 2 ** max(attempt - 2, 0)
        return min(delay, self.retry_cap_ms)

    @classmethod
    def from_env(cls, environ: Mapping[str, str], **overrides: object) -> LoopConfig:
        """Build a config from ``FSM_AGENT_<OPTION>`` variables, then explicit overrides."""
        values: dict[str, object] = {}
        for field in attrs.fields(cls):
            raw = environ.get(f"FSM_AGENT_{field.name.upper()}")
            if raw is None:
                continue
            values[field.name] = _parse_env_value(field.name, field.type, raw)
        values.update(overrides)
        return cls(**values)  # type: ignore[arg-type]


def _parse_env_value(name: str, annotation: object, raw: str) -> object:
    text = str(annotation)
    if raw.lower() in {"none", ""} and "None" in text:
        return None
    if text.startswith("bool"):
        if raw.lower() in {"1", "true", "yes", "on"}:
            return True
        if raw.lower() in {"0", "false", "no", "off"}:
            return False
        raise ConfigError(f"FSM_AGENT_{name.upper()} must be true or false, got {raw!r}")
    if text.startswith("int"):
        try:
            return int(raw)
        except ValueError:
            raise ConfigError(f"FSM_AGENT_{name.upper()} must be an integer, got {raw!r}") from None
    return raw
