"""Hypothesis profiles for the whole test suite (STYLE.md, Tests).

``dev`` is fast, for the edit-run loop; ``ci`` runs more examples, derandomized, without a
deadline, and prints the blob that reproduces a failure; ``explore`` runs long and is not used
in CI. ``HYPOTHESIS_PROFILE`` picks one explicitly; otherwise ``CI=true`` means ``ci`` and
anything else ``dev``. ``deep`` runs the trace fuzz test ten times longer (20,000 mutated
traces), derandomized: ``HYPOTHESIS_PROFILE=deep pytest tests/property/test_trace_fuzz.py``.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "dev",
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "ci",
    max_examples=100,
    derandomize=True,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "deep",
    max_examples=20_000,
    derandomize=True,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "explore",
    max_examples=5_000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def _profile() -> str:
    explicit = os.environ.get("HYPOTHESIS_PROFILE")
    if explicit:
        return explicit
    return "ci" if os.environ.get("CI", "").lower() == "true" else "dev"


settings.load_profile(_profile())
