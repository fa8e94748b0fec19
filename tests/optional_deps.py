"""Optional dependencies of the tests: skipped where a user lacks them, required where CI
installed them. The rule lives here; every test that needs torch, jax, dask, matplotlib,
gmpy2, ... asks through :func:`need` or :func:`needs`.

* Unset ``GRADCHECK_REQUIRE_OPTIONAL`` (a user's ``pip install ".[test]" && pytest``, and
  the first of .ci/run's two test runs): a test whose optional dependency is missing is
  skipped, with the name of what to install.
* ``GRADCHECK_REQUIRE_OPTIONAL=1`` (.ci/run's second run, which installs the frameworks):
  nothing is skipped for a missing dependency; the import fails the test, so a broken
  install cannot turn into a green run of skips.

``CI`` plays no part here (a CI service sets ``CI=true`` for every job, including one that
runs the README's bare command); it only selects the larger hypothesis profile
(tests/conftest.py).
"""
from __future__ import annotations

import importlib
import importlib.util
import os
from types import ModuleType

import pytest

REQUIRE_ENV = "GRADCHECK_REQUIRE_OPTIONAL"


def required() -> bool:
    """Whether a missing optional dependency must fail rather than skip."""
    return os.environ.get(REQUIRE_ENV, "").strip() not in ("", "0")


def need(module: str) -> ModuleType:
    """Import ``module``; when it is missing, skip (the test, or the test module when called
    at import time) unless :func:`required`, where the ImportError fails it."""
    __tracebackhide__ = True  # the skip is reported at the caller's line
    if required():
        return importlib.import_module(module)
    return pytest.importorskip(module, reason=f"needs {module} (optional; {REQUIRE_ENV}=1 makes it required)")


def _available(module: str) -> bool:
    return importlib.util.find_spec(module.partition(".")[0]) is not None


def needs(*modules: str) -> pytest.MarkDecorator:
    """A mark that skips a test when any of ``modules`` is missing (never when
    :func:`required`: the test then runs and fails on the import)."""
    missing = [m for m in modules if not _available(m)]
    return pytest.mark.skipif(
        bool(missing) and not required(),
        reason=f"needs {', '.join(missing)} (optional; {REQUIRE_ENV}=1 makes it required)",
    )
