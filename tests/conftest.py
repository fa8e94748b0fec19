"""Shared test settings: pinned hypothesis seeds and scoped mpmath precision."""
from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

# Pinned: a failure seen once is seen again. CI runs more examples than a local run.
settings.register_profile(
    "default", derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "ci", derandomize=True, deadline=None, max_examples=300,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("ci" if os.environ.get("CI") else "default")


@pytest.fixture(autouse=True)
def _reset_mpmath_precision():
    """One test cannot change another's mpmath precision."""
    import mpmath

    prec = mpmath.mp.prec
    yield
    mpmath.mp.prec = prec
