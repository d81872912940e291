"""A redacted trace replays (DESIGN §8): the core decides on text lengths (the tool-result
budget, token estimates), and a mask keeps the length of the secret it replaces, so replay's
core measures what the recording one measured. A secret shorter than the mask cannot keep
its length: a divergence after it says so."""

from __future__ import annotations

from pathlib import Path

import pytest
from budget_runs import echoing_run

from fsm_agent.errors import TraceDivergence
from fsm_agent.trace.divergence import format_divergence
from fsm_agent.trace.reader import read_trace
from fsm_agent.trace.redact import mask
from fsm_agent.trace.replay import replay

LONG_SECRET = "s3cr3t-value-" + "x" * 60
"""73 characters: its mask is as long."""
SHORT_SECRET = "s3cr3t"
"""6 characters: its mask, ``[REDACTED]``, is longer."""


def transition_names(trace: Path) -> list[str]:
    return [record.data["name"] for record in read_trace(trace).of_kind("transition")]


def test_a_result_over_budget_only_with_its_secret_replays(tmp_path: Path) -> None:
    """80 characters and a 73-character secret, over a budget of 100: the run persists the
    result, and so does replay, which reads the secret's mask, as long as the secret."""
    trace = echoing_run(tmp_path, secret=LONG_SECRET, padding=80, budget=100)
    text = trace.read_text()
    assert LONG_SECRET not in text
    assert mask(len(LONG_SECRET)) in text
    assert "tool_results_over_budget" in transition_names(trace)
    assert replay(trace).terminal == "completed"


def test_a_divergence_after_a_short_mask_says_why(tmp_path: Path) -> None:
    """92 characters and a 6-character secret fit a budget of 100; its mask does not, so
    replay's core persists the result the run kept: the divergence names the records that
    hold the mask, and says why they matter, in its message and in the CLI's report."""
    trace = echoing_run(tmp_path, secret=SHORT_SECRET, padding=92, budget=100)
    assert "tool_results_over_budget" not in transition_names(trace)
    with pytest.raises(TraceDivergence) as caught:
        replay(trace)
    error = caught.value
    assert error.redacted_before
    assert all(seq < error.seq for seq in error.redacted_before)
    sentence = "a secret shorter than 10 characters reads longer in the trace than it was"
    assert sentence in str(error)
    assert f"(seq {error.redacted_before[0]}" in str(error)
    assert sentence in format_divergence(error)
    with pytest.raises(TraceDivergence) as again:
        replay(read_trace(trace))  # a trace read already: the same note
    assert again.value.redacted_before == error.redacted_before


def test_a_divergence_with_no_short_mask_before_it_adds_nothing(tmp_path: Path) -> None:
    """A trace changed by hand after a long secret's mask: the divergence is not blamed on
    redaction, for that mask kept the length."""
    trace = echoing_run(tmp_path, secret=LONG_SECRET, padding=80, budget=100)
    lines = trace.read_text().splitlines(keepends=True)
    changed = [line.replace('"persisting_results"', '"setup"', 1) for line in lines]
    assert changed != lines
    trace.write_text("".join(changed))
    with pytest.raises(TraceDivergence) as caught:
        replay(trace)
    assert caught.value.redacted_before == ()
    assert "redacted text" not in str(caught.value)
