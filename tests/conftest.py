"""Shared test settings: pinned hypothesis seeds and scoped mpmath precision.

Environment variables the tests read (.ci/run sets them; a user's `pytest` needs neither):

* ``CI``: hypothesis' larger "ci" profile (more examples). Nothing else: a CI service sets
  ``CI=true`` for every job, including one that runs the README's bare install.
* ``GRADCHECK_REQUIRE_OPTIONAL=1``: the optional dependencies (torch, jax, dask, matplotlib,
  gmpy2, ...) must be importable; a missing one fails its tests instead of skipping them.
  Unset, those tests skip cleanly. Tests ask through ``tests/optional_deps.py``.
"""
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
