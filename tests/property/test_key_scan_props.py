"""The key scan of redaction (DESIGN §8): whatever keys it has remembered, it answers exactly
what judging every key of the value says, at any depth, for keys of any kind."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fsm_agent.trace import redact
from fsm_agent.trace.redact import has_sensitive_key, is_sensitive_key

# Sensitive names in many spellings (case, dashes, a trailing newline, characters that fold
# to ASCII letters), their harmless neighbours, and anything else a model could send.
_NAMED = st.sampled_from(
    [
        "api_key",
        "X-Api-Key",
        "token",
        "token\n",
        "access-token",
        "input_tokens",
        "Authorization",
        "ſecret",
        "path",
        "type",
        "tokens",
        "bearer",
        "bearer_id",
    ]
)
_KEYS = _NAMED | st.text(max_size=6) | st.integers() | st.booleans() | st.none() | st.floats()
_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.lists(inner, max_size=3).map(tuple)
        | st.dictionaries(_KEYS, inner, max_size=4)
    ),
    max_leaves=16,
)


def _reference(value: Any) -> bool:
    """Every key judged, every container entered: the rule the scan must answer."""
    if isinstance(value, dict) and type(value) is dict:
        return any(
            (isinstance(key, str) and is_sensitive_key(key)) or _reference(item)
            for key, item in value.items()
        )
    if type(value) in (list, tuple):
        return any(_reference(item) for item in value)
    return False


@given(value=_VALUES, again=_VALUES)
def test_the_scan_answers_what_judging_every_key_says(value: Any, again: Any) -> None:
    """The keys remembered from one scan never change the answer of the next."""
    assert has_sensitive_key(value) == _reference(value)
    assert has_sensitive_key(again) == _reference(again)
    assert has_sensitive_key(value) == _reference(value)


@given(value=_VALUES)
def test_the_scan_answers_alike_when_its_memory_is_emptied(value: Any) -> None:
    """A memory that fills up is emptied (it stays bounded) and the answers stay the same."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(redact, "_SAFE_KEYS_LIMIT", 2)
        redact._SAFE_KEYS.clear()
        assert has_sensitive_key(value) == _reference(value)
        assert len(redact._SAFE_KEYS) <= 2
        assert has_sensitive_key(value) == _reference(value)
