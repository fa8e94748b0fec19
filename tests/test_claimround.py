"""The referee's allowance for a claim that rounds at the size of its terms (cancellation).

A layer norm's VJP at ``x = 5 + v`` computes every entry as a difference of O(1) terms; at an
entry where ``x_i`` is (nearly) the row's mean its result is ~1e-11 and its rounding ~1e-16:
a relative error of 1e-5, pure round-off, that the referee used to confirm as a MISMATCH
"against exact" (its allowance was k*u*max|a| ~ 1e-19).
"""
from __future__ import annotations

import numpy as np
import pytest

import gradcheck
from gradcheck import Verdict
from gradcheck._adjudicate.claimround import measure_claim_rounding
from gradcheck._adjudicate.referee import Referee
from gradcheck._core.verdict import Cause

N, AT = 64, 3


def layer_norm(x):
    xc = x - x.mean(axis=-1, keepdims=True)
    return xc / np.sqrt((xc**2).mean(axis=-1, keepdims=True) + 1e-5)


def layer_norm_vjp(x, g):
    xc = x - x.mean(-1, keepdims=True)
    inv = 1.0 / np.sqrt((xc**2).mean(-1, keepdims=True) + 1e-5)
    xh = xc * inv
    return inv * (g - g.mean(-1, keepdims=True) - xh * (g * xh).mean(-1, keepdims=True))


def cancelling(seed: int, off: float):
    """``v`` and ``x = 5 + v``, with ``x[AT]`` within ``off`` of the mean of the others: the
    VJP of ``v . layer_norm`` there is ~``1e-5 * off`` from terms of order 1."""
    v = np.random.default_rng(seed).standard_normal(N)
    v[AT] = (v.sum() - v[AT]) / (N - 1) + off
    return v, 5 + v


def check_scalar(v, x, vjp=layer_norm_vjp):
    return gradcheck.check(lambda z: float(np.add.reduce(v * layer_norm(z))), x, grad=lambda z: vjp(z, v))


@pytest.mark.parametrize("seed", [0, 1])
def test_cancelling_claim_is_no_false_mismatch(seed):
    v, x = cancelling(seed, 1e-6)
    r = check_scalar(v, x)
    a, e = r.analytic[AT], r.measured_at("exact", (AT,))
    rel = abs(a - e) / abs(e)
    assert abs(a) < 1e-10 and 1e-7 < rel < 1e-3, (a, e)  # the claim really is off by its rounding
    assert r.verdicts[AT] == Verdict.PASS and r.cause((AT,)) == Cause.EXACT
    assert r.adjudication["claim_rounding"] == 1  # it was a MISMATCH under k*u*max|a| alone
    assert r.adjudication["claim_calls"] == 1
    assert any("own round-off" in n for n in r.notes)
    assert r.status == "PASS"


def test_unresolvable_claim_is_unchecked_not_pass():
    v, x = cancelling(0, 1e-8)  # value ~1e-13, rounding ~0.3% of it: above the 1% PASS share x 1/4
    r = check_scalar(v, x)
    assert r.verdicts[AT] == Verdict.UNCHECKED and r.cause((AT,)) == Cause.EXACT
    assert abs(r.analytic[AT] - r.measured_at("exact", (AT,))) > 1e-3 * abs(r.analytic[AT])


def test_planted_bug_in_the_cancelling_vjp_is_still_caught():
    """Through the referee (where the allowance is widened): a 1e-5 relative bug at a
    normal-sized entry is a MISMATCH with the measured allowance, the rounding at AT is not.
    (Through check, a 1e-5 bug here is below the finite difference's resolution: f ~ 64,
    its gradient ~1e-5; a 1e-4 bug reaches the referee and is confirmed.)"""
    v, x = cancelling(0, 1e-6)
    at = int(np.argmax(np.abs(layer_norm_vjp(x, v))))  # a normal-sized entry (~3e-5 here)

    def buggy(rel):
        def vjp(z, g):
            out = layer_norm_vjp(z, g)
            out[at] *= 1 + rel
            return out
        return vjp

    vjp = buggy(1e-5)
    a = vjp(x, v)
    noise = measure_claim_rounding(vjp, x, v, a)
    positions = np.array([AT, at])
    referee = Referee(layer_norm, x, v)
    adj = referee.adjudicate(positions, positions, a, np.zeros(N, np.uint8), rtol=1e-6, atol=0.0,
                             noise_factor=8.0, unit=2.0**-53, claim_scale=float(np.abs(a).max()),
                             claim_noise=noise[positions])
    assert adj.codes[1] == Verdict.MISMATCH and adj.codes[0] == Verdict.PASS and adj.forgiven == 1
    r = check_scalar(v, x, buggy(1e-4))
    assert r.verdicts[at] == Verdict.MISMATCH and r.cause((at,)) == Cause.EXACT
    assert r.verdicts[AT] != Verdict.MISMATCH and r.status == "FAIL"


def test_vjp_not_linear_in_the_cotangent_is_not_forgiven():
    x = 5 + np.random.default_rng(7).standard_normal((2, N))
    ok = gradcheck.check(layer_norm, x, grad=layer_norm_vjp)
    assert ok.status == "PASS"

    def nonlinear(z, g):  # an extra g**2 term: 1e-5 relative to the entries
        out = layer_norm_vjp(z, g)
        return out + 1e-5 * np.abs(out).max() * g**2

    r = gradcheck.check(layer_norm, x, grad=nonlinear)
    assert r.status == "FAIL" and r.counts[Verdict.MISMATCH] >= 0.9 * x.size
    assert not r.adjudication.get("claim_rounding")


@pytest.mark.skipif(np.finfo(np.longdouble).nmant < 60, reason="needs an 80-bit long double reference")
def test_measured_rounding_bounds_the_true_error():
    v = np.random.default_rng(3).standard_normal((64, 64))
    x = 5 + v
    a = layer_norm_vjp(x, v)
    X, V = x.astype(np.longdouble), v.astype(np.longdouble)
    xc = X - X.mean(-1, keepdims=True)
    xh = xc / np.sqrt((xc**2).mean(-1, keepdims=True) + np.longdouble(1e-5))
    inv = xh[:, :1] / xc[:, :1]
    exact = inv * (V - V.mean(-1, keepdims=True) - xh * (V * xh).mean(-1, keepdims=True))
    err = np.abs(a - exact).astype(np.float64).reshape(-1)
    calls = []
    x_before, v_before = x.copy(), v.copy()
    est = measure_claim_rounding(lambda z, g: calls.append(1) or layer_norm_vjp(z, g), x, v, a.reshape(-1))
    assert len(calls) == 1
    assert np.array_equal(x, x_before) and np.array_equal(v, v_before)
    assert np.all(err <= est)
    assert np.median(est) < 1e-14  # and it stays at the size of the terms' round-off
    # a rescaled cotangent alone misses most of it (the rounding of x-only quantities)
    s = 1 + 2.0**-40
    assert np.mean(err > 8 * np.abs(layer_norm_vjp(x, v * s) / s - a).reshape(-1)) > 0.2


def test_a_claim_that_cannot_be_called_again_keeps_the_old_allowance():
    v, x = cancelling(0, 1e-6)
    calls = []

    def once(z):
        calls.append(1)
        if len(calls) > 1:
            raise RuntimeError("called twice")
        return layer_norm_vjp(z, v)

    r = gradcheck.check(lambda z: float(np.add.reduce(v * layer_norm(z))), x, grad=once)
    assert "called twice" in r.adjudication["claim_rounding_failed"]
    assert any("could not be measured" in n for n in r.notes)
    assert r.verdicts[AT] == Verdict.MISMATCH  # the old referee's verdict, as before


def test_a_claim_that_turns_nonfinite_an_ulp_away_is_not_forgiven():
    x = np.linspace(1.0, 2.0, 6)
    a = 3 * x**2

    def flaky(z, g):
        out = 3 * z**2
        out[2] = np.nan if not np.array_equal(z, x) else out[2]
        return out
    est = measure_claim_rounding(flaky, x, None, a)
    assert est[2] == 0.0 and np.all(np.isfinite(est))
    assert np.all(est[[0, 1, 3, 4, 5]] <= 4 * 8 * 2.0**-52 * 3 * 4 * 4)
