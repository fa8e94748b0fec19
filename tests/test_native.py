"""The cffi kernels extension: builds, imports, and its subjects check as documented."""
from __future__ import annotations

import numpy as np
import pytest

import gradcheck
from gradcheck import Verdict
from gradcheck.native import native_function


def test_compiled_module_imports_with_prefixed_symbols():
    """The extension built at install imports, and every C symbol carries the gc_ prefix."""
    from gradcheck import _kernels

    names = [n for n in dir(_kernels.lib) if not n.startswith("__")]
    assert names and all(n.startswith("gc_") for n in names)


def test_rosenbrock_matches_closed_form():
    """The C loss equals the formula evaluated in numpy (an independent implementation)."""
    x = np.array([0.3, -1.1, 0.8, 1.7, -0.2])
    expected = (100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2).sum()
    assert native_function("rosenbrock")(x) == pytest.approx(expected, rel=1e-15)


def test_native_correct_gradient_passes_and_planted_bug_is_caught():
    """The correct C gradient passes everywhere; the planted one fails at the last entry only."""
    x = np.random.default_rng(5).uniform(-1.5, 1.5, 40)
    good = native_function("rosenbrock")
    bad = native_function("rosenbrock", grad="grad_lastbug")
    assert gradcheck.check(good, x, good.gradient).passed
    assert gradcheck.check(bad, x, bad.gradient).entries(Verdict.MISMATCH) == [(39,)]


def test_unknown_native_function_lists_available():
    """Asking for a missing kernel lists the ones that exist."""
    with pytest.raises(ValueError, match="rosenbrock"):
        native_function("nope")
