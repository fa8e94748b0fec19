"""check() on float16/bfloat16 inputs: float64 differences of the upcast, claims judged in ulps."""
from __future__ import annotations

import dataclasses

import ml_dtypes
import numpy as np
import pytest
from optional_deps import need

import gradcheck
from gradcheck import Verdict
from gradcheck._core.formats import BFLOAT16, round_to_format
from gradcheck._lowp.plan import FLOOR_UNITS, GRAD_BOUND_ULPS, share

BF16 = ml_dtypes.bfloat16
RNG = np.random.default_rng(0)
X = round_to_format(RNG.standard_normal((16, 16)), "bfloat16", as_dtype=True)
W = RNG.uniform(-1.5, 1.5, (16, 16))


def f(x):
    """Precision-generic: float64 in, float64 out; bfloat16 in, bfloat16 out."""
    w = W if x.dtype == object else W.astype(x.dtype)
    return (w * np.tanh(x)).sum() + 0.5 * (x * x).sum() + (np.sin(x) * x).sum()


def grad(x, c=1.0):
    """The correct gradient, computed in x's own dtype (bfloat16 roundings at every step);
    ``c`` scales the derivative of 0.5 x**2 (a planted bug when c != 1)."""
    w = W.astype(x.dtype)
    return w * (1 - np.tanh(x) ** 2) + x * np.asarray(c, x.dtype) + np.cos(x) * x + np.sin(x)


def test_correct_bfloat16_gradient_gives_no_false_alarm():
    """No MISMATCH on the correct bfloat16 claim. Entries PASS where the whole tolerance is
    within the share (2 * 2 ulp-bounds, 3.1% for bfloat16): the large ones; the entries
    below about a third of the largest, where the floor 2u*max min(|claim|, |numeric|) is more than that
    share, are UNCHECKED (a bfloat16 backward may be 10% off there, so agreement there
    cannot show that the claim is close) and the notes say so."""
    assert grad(X).dtype == BF16  # the claim really is computed in bfloat16
    r = gradcheck.check(f, X, grad=grad)
    assert r.passed and r.counts[Verdict.MISMATCH] == 0
    assert r.counts[Verdict.PASS] >= 170
    assert r.config.resolution == share(BFLOAT16, GRAD_BOUND_ULPS) == 2**-5
    passed = r.codes == Verdict.PASS
    assert (r.tolerance[passed] <= 2**-5 * np.maximum(np.abs(r.analytic), np.abs(r.numeric))[passed]).all()
    small = np.abs(r.analytic) < 0.25 * np.abs(r.analytic).max()
    assert (r.codes[small] == Verdict.UNCHECKED).all()
    assert any("UNCHECKED: resolved only to" in n and "floor" in n for n in r.notes)
    assert r.dtype == "bfloat16" and r.config.step == gradcheck.Config.for_dtype("float64").step
    notes = "\n".join(r.notes)
    assert "float64 central difference of the exactly-upcast input" in notes
    assert f"judged in bfloat16 ulps: tolerance {GRAD_BOUND_ULPS:g} ulp" in notes
    assert f"{FLOOR_UNITS:g}u*max min(|claimed|, |numeric|)" in notes


def test_planted_five_percent_bug_is_caught_well_above_the_bound():
    r = gradcheck.check(f, X, grad=lambda x: grad(x, 1.05))
    assert not r.passed
    bad = r.codes == Verdict.MISMATCH
    assert bad.sum() >= 40
    # every entry where the planted error (0.05 x) is twice the stated tolerance is caught
    planted = np.abs(0.05 * X.astype(np.float64))
    clear = planted > 2 * r.tolerance
    assert clear.sum() >= 5 and bad[clear].all()


def test_a_constant_off_by_five_percent_is_caught_at_every_entry_above_the_floor():
    """f = 1.5 sum(x**2): the claim 3.15 x (5% too large, computed in bfloat16) is 6 to 13
    ulps off at every entry. Caught wherever that exceeds the stated tolerance (2 ulps plus
    the floor 2u max min(|claim|, |numeric|), which spares the smallest entries); a bound of 16 ulps lets it
    pass, which shows the bound is what decides."""
    def sq(x):
        return 1.5 * (x * x).sum()

    ok = gradcheck.check(sq, X, grad=lambda x: np.asarray(3, x.dtype) * x)
    assert ok.passed and ok.counts[Verdict.MISMATCH] == 0
    r = gradcheck.check(sq, X, grad=lambda x: np.asarray(3.15, x.dtype) * x)
    bad = r.codes == Verdict.MISMATCH
    planted = np.abs(r.analytic - 3 * X.astype(np.float64))
    assert (bad == (planted > r.tolerance)).mean() > 0.98  # the tolerance is the dividing line
    assert bad.mean() > 0.4 and bad[planted > 1.5 * r.tolerance].all()
    assert gradcheck.check(sq, X, grad=lambda x: np.asarray(3.15, x.dtype) * x, bound_ulps=16).passed


def test_same_precision_difference_would_have_proven_little():
    """What the upcast buys: the old same-precision difference leaves most entries UNCHECKED."""
    def forced(x):
        return f(x.astype(BF16))  # forces bfloat16, so check falls back

    r = gradcheck.check(forced, X, grad=grad, adjudicate=False)
    assert any("forces its own dtype" in n for n in r.notes)
    assert r.counts[Verdict.UNCHECKED] > X.size // 2


def test_function_that_rejects_float64_falls_back_with_a_note():
    def picky(x):
        if x.dtype == np.float64:
            raise TypeError("bfloat16 only")
        return f(x)

    r = gradcheck.check(picky, X, grad=grad, adjudicate=False)
    assert any("f raised TypeError on a float64 input (bfloat16 only)" in n for n in r.notes)


def test_float16_input():
    x = RNG.uniform(-2, 2, (8, 8)).astype(np.float16)

    def g(v):
        return (np.exp(v) * v).sum()

    ok = gradcheck.check(g, x, grad=lambda v: np.exp(v) * (1 + v))
    assert ok.passed and any("judged in float16 ulps" in n for n in ok.notes)
    wrong = gradcheck.check(g, x, grad=lambda v: np.exp(v) * (1 + np.float16(1.05) * v))
    assert not wrong.passed


def h(v):
    return np.tanh(v) * 2


def test_input_is_untouched_and_array_output_with_a_bfloat16_vjp():
    x = X[:4].copy()
    before = x.view(np.uint16).copy()

    def vjp(v, cot):  # 1 - tanh**2 as 1/cosh**2: no cancellation in bfloat16
        return cot.astype(v.dtype) * (1 / np.cosh(v)) ** 2 * np.asarray(2, v.dtype)

    r = gradcheck.check(h, x, grad=vjp)
    assert r.passed and r.counts[Verdict.PASS] > 0
    assert np.array_equal(x.view(np.uint16), before)


def test_a_bfloat16_backward_that_cancels_is_reported_in_ulps():
    """1 - tanh(x)**2 in bfloat16 cancels: tanh(1.8) = 0.9473 rounds to 0.9492, and 1 minus
    it is then 4% off, far more than the rounding of the result. The check reports it, with
    the error in ulps in the notes; 1/cosh(x)**2 above has no such cancellation. The output is
    weighted by V (the first draws of default_rng(0), as X: V ~ X, large where tanh(x) is
    near 1): the check's own cotangent was that draw once, and with another the entry can sit
    under the bfloat16 floor (UNCHECKED, with the same note)."""
    weights = np.random.default_rng(0).standard_normal((4, 16))

    def grad(v):
        return weights.astype(v.dtype) * (1 - np.tanh(v) ** 2) * np.asarray(2, v.dtype)

    r = gradcheck.check(lambda v: (h(v) * weights).sum(), X[:4].copy(), grad=grad)
    assert r.counts[Verdict.MISMATCH] >= 1
    assert any("the largest error is" in n and "ulp at (3, 0)" in n for n in r.notes)


def test_several_bfloat16_inputs():
    a, b = X[:3, :4].copy(), X[5:8, :4].copy()
    r = gradcheck.check(lambda a, b: (np.sin(a) * b).sum(), (a, b),
                        grad=(lambda a, b: np.cos(a) * b, lambda a, b: np.sin(a)))
    assert r.passed
    assert all(any("judged in bfloat16 ulps" in n for n in rep.notes) for rep in r)


def test_torch_bfloat16_autograd_and_a_planted_bug():
    torch = need("torch")
    torch.manual_seed(0)
    x = torch.randn(8, 16).to(torch.bfloat16)

    def fn(t):
        return (torch.tanh(t) * t).sum() + torch.sin(t).pow(2).sum()

    r = gradcheck.check(fn, x)
    assert r.passed and any("precision-generic f" in n for n in r.notes)

    def wrong(t):
        return (1 - torch.tanh(t) ** 2) * t + torch.tanh(t) + 2.1 * torch.sin(t) * torch.cos(t)

    assert not gradcheck.check(fn, x, grad=wrong).passed  # 2.1 where 2 belongs


def test_bound_must_be_positive():
    with pytest.raises(ValueError, match="bound_ulps must be a positive number"):
        gradcheck.check(f, X, grad=grad, bound_ulps=0)


def test_the_plan_is_a_no_op_for_ordinary_dtypes_and_acts_only_on_the_upcast_path():
    """check() calls every step of the low-precision plan on every input: for float64 the
    plan is ORDINARY and each step returns what it was given (float32 has its own plan:
    tests/test_float32.py); a bfloat16 input
    with a precision-generic f gets a plan that changes the input, the config, the referee
    choice and the final tolerances; one whose f forces its own dtype only adds its note."""
    from gradcheck._lowp.plan import ORDINARY, LowPrecisionPlan, plan_for

    be = gradcheck.backends.resolve("numpy", None)
    x64 = np.asarray(X, dtype=np.float64)
    cfg = gradcheck.Config()
    for dtype in ("float64",):
        p = plan_for(dtype, f, x64.astype(dtype), be)
        assert p is ORDINARY
        assert p.start(x64, None, "auto") == (p, x64, None, "auto")
        assert p.cotangent(None) is None and p.after_claim(cfg, x64) == (p, cfg)
        assert p.after_differences(cfg, x64, (x64, x64, x64)) is cfg
        codes, tol = np.zeros(3, np.uint8), np.ones(3)
        assert p.final(x64, None, cfg, codes, tol) == (codes, tol, ()) and not p.notes and p.floor_name == "atol"
    up = plan_for("bfloat16", f, X, be)
    assert isinstance(up, LowPrecisionPlan) and up.upcast
    started, x_up, cfg_up, adjudicate = up.start(X, None, "auto")
    assert x_up.dtype == np.float64 and np.array_equal(x_up, x64) and adjudicate is False
    assert cfg_up.rtol == GRAD_BOUND_ULPS * 2.0**-8
    # a value: the start's note is on a new plan, the first one is as it was and cannot change
    assert started.notes[:-1] == up.notes and "no arbitrary-precision referee" in started.notes[-1]
    with pytest.raises(dataclasses.FrozenInstanceError):
        up.upcast = False
    forced = plan_for("bfloat16", lambda x: (x.astype(BF16) ** 2).sum(), X, be)
    assert not forced.upcast and forced.start(X, None, "auto") == (forced, X, None, "auto")
    assert forced.after_claim(cfg, X) == (forced, cfg) and len(forced.notes) == 1 and "same-precision" in forced.notes[0]
