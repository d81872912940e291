"""Redaction keeps lengths (DESIGN §8): a mask is as long as the text it replaces (from 10
characters up), redacting twice changes nothing, no mask holds the secret it hides, and so a
run whose secrets all have 10 characters or more replays whatever the core decided on the
lengths of text that held them."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import orjson
from budget_runs import echoing_run
from hypothesis import assume, given
from hypothesis import strategies as st

from fsm_agent.errors import TraceDivergence
from fsm_agent.trace.redact import REDACTED, Redactor, mask
from fsm_agent.trace.replay import replay

_SECRETS = st.text(alphabet="QXZJKW0123456789", min_size=3, max_size=79).map(lambda s: f"§{s}")
"""Secrets of 4 to 80 characters; ``§`` appears nowhere else in a trace."""
_TEXT = st.text(alphabet="ab §-\n", max_size=12)


@given(length=st.integers(min_value=0, max_value=300))
def test_a_mask_keeps_a_length_from_ten_characters_up(length: int) -> None:
    masked = mask(length)
    assert masked.startswith(REDACTED)
    assert set(masked[len(REDACTED) :]) <= {"*"}
    assert len(masked) == max(length, len(REDACTED))
    assert mask(len(masked)) == masked


@st.composite
def _records(draw: st.DrawFn, secrets: list[str]) -> dict[str, Any]:
    """A record holding the secrets inside strings, as keys, and values of every type under
    credential names (a string there may be a secret too)."""
    secret = st.sampled_from(secrets)
    holding = st.builds(lambda a, s, b: a + s + b, _TEXT, secret, _TEXT)
    leaves = holding | _TEXT | st.integers(-(2**63), 2**63 - 1) | st.none() | st.booleans() | secret
    return {
        "note": draw(holding),
        "password": draw(leaves),
        "api_keys": draw(st.lists(leaves, max_size=3)),
        "nested": {draw(holding): draw(leaves), "token": draw(leaves)},
        "key": "sk-ant-" + draw(st.text(alphabet="abcXYZ019_-", min_size=8, max_size=60)),
    }


@given(data=st.data(), secrets=st.lists(_SECRETS, min_size=1, max_size=3, unique=True))
def test_redaction_is_idempotent_and_no_mask_holds_its_secret(
    data: st.DataObject, secrets: list[str]
) -> None:
    record = data.draw(_records(secrets))
    redactor = Redactor(secrets)
    once = redactor.value(record)
    assert redactor.value(once) == once
    assert Redactor().value(once) == once
    written = orjson.dumps(once).decode()
    for secret in secrets:
        assert secret not in written
    assert "sk-ant-" not in written
    assert len(once["key"]) == len(record["key"])  # an API key is longer than the mask


@given(secret=_SECRETS, text=_TEXT)
def test_a_string_holding_a_long_secret_keeps_its_length(secret: str, text: str) -> None:
    value = text + secret + text
    redacted = Redactor([secret]).text(value)
    assert secret not in redacted
    assert len(redacted) == len(value) + max(0, len(REDACTED) - len(secret))


@given(
    secret=_SECRETS,
    padding=st.integers(min_value=0, max_value=120),
    slack=st.integers(min_value=-12, max_value=12),
)
def test_a_run_replays_whenever_its_secret_keeps_its_length(
    secret: str, padding: int, slack: int
) -> None:
    """A tool result around its budget: whether it is over depends on the secret's length.
    With 10 characters or more the mask has that length and the trace replays; a shorter
    secret may make replay diverge, and the divergence then names the records holding it."""
    budget = padding + len(secret) + slack
    assume(budget > 0)
    with tempfile.TemporaryDirectory() as folder:
        trace = echoing_run(Path(folder), secret=secret, padding=padding, budget=budget)
        assert secret not in trace.read_text()
        if len(secret) >= len(REDACTED):
            assert replay(trace).terminal == "completed"
            return
        try:
            replay(trace)
        except TraceDivergence as error:
            assert error.redacted_before
