"""The checker against an independent oracle: dual numbers (forward mode) agree with the
central differences on functions with no hand-written gradient at all."""
from __future__ import annotations

import numpy as np
import pytest
from zoo import CASES

from gradcheck import Verdict, assert_detects_wrong_gradient, check

rng = np.random.default_rng(11)
W = rng.standard_normal((4, 4))


def mlp(x):
    h = np.tanh(x @ W)
    return (h * h).sum() + np.exp(-x.sum() ** 2 / 10)


def attention(x):
    s = np.einsum("ij,kj->ik", x, x) / 2.0
    s = s - s.max(axis=1, keepdims=True)
    p = np.exp(s) / np.exp(s).sum(axis=1, keepdims=True)
    return (p @ x).var() + np.log1p(x**2).mean()


def layer_norm(x):
    mu = x.mean(axis=-1, keepdims=True)
    return ((x - mu) / np.sqrt(x.var(axis=-1, keepdims=True) + 1e-5) * np.arange(1, 5)).sum() ** 2


@pytest.mark.parametrize("f", [mlp, attention, layer_norm], ids=lambda f: f.__name__)
def test_dual_gradient_passes_every_entry(f):
    """Dual-number gradients of smooth functions pass at every entry (both algorithms agree)."""
    x = rng.standard_normal((3, 4))
    r = check(f, x, backend="dual")
    assert r.passed and r.counts[Verdict.PASS] == x.size, str(r)


@pytest.mark.parametrize("case", [c for c in CASES if c.x.dtype == np.float64], ids=lambda c: c.name)
def test_zoo_closed_forms_agree_with_dual_numbers(case):
    """The zoo's closed-form gradients equal the dual-number gradients (so the zoo's
    'correct' side is itself checked by an independent algorithm)."""
    from gradcheck.dual import dual_gradient

    if case.f.__name__ == "softmax":
        v = np.random.default_rng(0).standard_normal(case.x.shape)
        np.testing.assert_allclose(case.grad(case.x, v), dual_gradient(case.f, case.x, v), rtol=1e-12, atol=1e-15)
    else:
        np.testing.assert_allclose(case.grad(case.x), dual_gradient(case.f, case.x), rtol=1e-12, atol=1e-300)


def test_negative_control_through_dual_backend():
    """The negative control passes through the dual backend too."""
    assert_detects_wrong_gradient("dual")
