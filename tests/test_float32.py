"""float32 checks (issue 15 part 1): a precision-generic f is differenced on the float64
upcast and the float32 claim judged against its own measured rounding (1e-5 resolution);
an f that computes in float32 gets Richardson across steps in float32 (1e-3 resolution).
Negative controls everywhere: planted errors found at their entries, correct claims (the
layer norm's cancelling backward included) never MISMATCH."""
from __future__ import annotations

import numpy as np
import pytest

from gradcheck import Verdict, check
from gradcheck._demo.layernorm import layer_norm, layer_norm_vjp
from gradcheck._lowp.f32steps import PRESET
from gradcheck._lowp.float32 import forces_float32

RNG = np.random.default_rng(15)
X = RNG.standard_normal((16, 32)).astype(np.float32)
T, D = 4, 64
XL = (RNG.standard_normal((T, D)) * 3 + 1).astype(np.float32)
GAIN = (1 + 0.1 * RNG.standard_normal(D)).astype(np.float32)
BIAS = (0.1 * RNG.standard_normal(D)).astype(np.float32)


def f(x):
    return (np.sin(x) * x * x).sum()


def g(x):
    return np.cos(x) * x * x + 2 * x * np.sin(x)


def ln(x):
    return layer_norm(x, GAIN, BIAS)


def ln_vjp(x, v):
    return layer_norm_vjp(x, v, GAIN)


def off(grad, eps, at=None):
    def claim(*args):
        out = grad(*args).copy()
        if at is None:
            return out * (1 + eps)
        out[at] *= 1 + eps
        return out
    return claim


def test_precision_generic_f_sees_1e5_on_one_entry_and_on_every_entry():
    good = check(f, X, g)
    assert good.counts[Verdict.MISMATCH] == 0 and good.counts[Verdict.PASS] >= 0.95 * X.size, str(good)
    assert any("measured entry by entry" in n for n in good.notes), good.notes
    for at in [(3, 7), (15, 30)]:
        assert check(f, X, off(g, 1e-5, at)).entries(Verdict.MISMATCH) == [at]
    every = check(f, X, off(g, 1e-5))
    assert every.counts[Verdict.PASS] == 0
    assert every.counts[Verdict.MISMATCH] >= 0.98 * X.size, str(every)


def test_layer_norm_backward_in_float32_no_false_alarm_and_the_bug_found():
    """The backward cancels terms as large as the gradient: its float32 rounding is measured,
    so the correct one has no MISMATCH; the D-1 variance (about 1/D) is found everywhere."""
    good = check(ln, XL, ln_vjp)
    assert good.counts[Verdict.MISMATCH] == 0 and good.counts[Verdict.PASS] >= XL.size // 2, str(good)
    bad = check(ln, XL, lambda x, v: layer_norm_vjp(x, v, GAIN, unbiased=True))
    assert bad.counts[Verdict.MISMATCH] == XL.size, str(bad)


def test_an_array_claim_falls_back_to_the_absolute_floor_and_says_so():
    r = check(f, X[:2], g(X[:2]))
    assert r.counts[Verdict.MISMATCH] == 0
    assert any("the absolute floor" in n or "2u*max" in n for n in r.notes), r.notes


@pytest.mark.parametrize("wrap", [lambda y: y, np.float64], ids=["returns float32", "float64 out"])
def test_forced_float32_f_sees_1e3_with_no_false_alarm(wrap):
    """An f that computes in float32 (astype inside): Richardson in float32; correct claims
    never MISMATCH, a claim 1e-3 off is never PASS and one entry off by 1e-3 is found."""
    forced = lambda x: wrap(f(x.astype(np.float32)))
    x = X[:4]
    good = check(forced, x, g)
    assert good.config == PRESET and good.counts[Verdict.MISMATCH] == 0, str(good)
    assert good.counts[Verdict.PASS] >= x.size // 2, str(good)
    at = next(ix for ix in np.ndindex(x.shape) if good.verdicts[ix] is Verdict.PASS)
    assert check(forced, x, off(g, 1e-3, at)).entries(Verdict.MISMATCH) == [at]
    every = check(forced, x, off(g, 1e-3))
    assert every.counts[Verdict.PASS] == 0 and every.counts[Verdict.MISMATCH] >= good.counts[Verdict.PASS]


def test_forced_float32_layer_norm_no_false_alarm():
    forced = lambda x: ln(x.astype(np.float32))
    good = check(forced, XL, ln_vjp)
    assert good.counts[Verdict.MISMATCH] == 0 and good.counts[Verdict.PASS] > 0, str(good)
    every = check(forced, XL, off(ln_vjp, 1e-3))
    assert every.counts[Verdict.PASS] == 0 and every.counts[Verdict.MISMATCH] > 0, str(every)


def test_the_probe_tells_float32_inside_from_float64():
    x64 = X.astype(np.float64)
    ev = lambda fn, v: fn(v)
    assert not forces_float32(f, x64, f(x64), ev)
    inside = lambda v: np.float64(f(v.astype(np.float32)))
    assert forces_float32(inside, x64, inside(x64), ev)
    half = lambda v: np.float64(f(v[:1].astype(np.float32))) + f(v[1:]) # partly float64
    assert not forces_float32(half, x64, half(x64), ev)


def test_a_backward_that_computes_in_float32_is_not_measured_against_itself():
    """A VJP that casts to float32 inside returns the same float32 values at the float64
    upcast: that recomputation measures no rounding, so the floor is used (and said), and
    the correct backward raises no false alarm; the planted bug is still found."""
    def vjp32(x, v, unbiased=False):
        return layer_norm_vjp(x.astype(np.float32), v.astype(np.float32), GAIN, unbiased=unbiased).astype(np.float64)

    good = check(ln, XL, vjp32)
    assert good.counts[Verdict.MISMATCH] == 0 and good.passed, str(good)
    assert any("holds only float32 values" in n for n in good.notes), good.notes
    bad = check(ln, XL, lambda x, v: vjp32(x, v, unbiased=True))
    assert bad.counts[Verdict.MISMATCH] >= XL.size * 0.9, str(bad)


def test_report_dtype_is_the_inputs_and_config_dtype_the_preset_that_ran():
    """A float32 input of a precision-generic f: report.dtype float32; the config is the
    float64 preset's step and round-off model (the difference runs at the float64
    upcast: a float32 step or unit round-off there would be wrong), the claim's ulp rule
    its rtol and resolution, and a note says so. An f that computes in float32: the
    forced-float32 preset, whatever the input's dtype."""
    from gradcheck import Config
    from gradcheck._lowp.float32 import F32_RESOLUTION

    x = X[:2, :8]
    generic = check(f, x, g)
    f64 = Config.for_dtype("float64")
    assert generic.dtype == "float32" and generic.to_dict()["dtype"] == "float32"
    assert generic.config.dtype == "float64" and generic.config.step == f64.step
    assert generic.config.unit_roundoff == 2.0 ** -53 and generic.config.resolution == F32_RESOLUTION
    assert generic.config.rtol < Config.for_dtype("float32").rtol / 100  # the ulp rule's, not a preset's
    assert any("report.config: the float64 preset's step" in n for n in generic.notes), generic.notes
    inside = lambda v: np.float64(f(np.asarray(v).astype(np.float32)))  # noqa: E731
    for xin in (x, x.astype(np.float64)):
        forced = check(inside, xin, g)
        assert forced.dtype == xin.dtype.name and forced.config == PRESET and forced.config.dtype == "float32"
