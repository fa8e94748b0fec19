"""Properties that must hold for every input (hypothesis): restoration and verdict rules."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from gradcheck import Verdict, check, check_params
from gradcheck._classify.rule import classify

finite = st.floats(-1e6, 1e6, allow_nan=False, allow_subnormal=True)
anyfloat = st.floats(allow_nan=True, allow_infinity=True)
arrays = hnp.arrays(np.float64, hnp.array_shapes(min_dims=0, max_dims=3, max_side=4), elements=anyfloat)


@given(arrays, st.sampled_from(["C", "F", "rev"]), st.booleans())
def test_check_never_changes_the_users_array(x, layout, readonly):
    """Whatever the values (NaN, inf, subnormal) and layout, x is bit-identical afterwards."""
    if layout == "F":
        x = np.asfortranarray(x)
    elif layout == "rev" and x.ndim:
        x = x[::-1]
    x.flags.writeable = not readonly
    before = x.tobytes(order="A")
    strides = x.strides
    with np.errstate(all="ignore"):  # the user functions see inf/nan inputs here
        check(lambda z: (np.sin(z) * z).sum(), x, lambda z: np.cos(z) * z + np.sin(z))
    assert x.tobytes(order="A") == before and x.strides == strides


@settings(max_examples=max(100, settings.default.max_examples))  # the mutation run's power: mutation/README.md
@given(hnp.arrays(np.float64, st.integers(1, 6), elements=finite), st.integers(0, 30))
def test_check_params_restores_even_when_loss_raises(w, fail_at):
    """check_params leaves parameters bit-identical, also when the loss raises mid-way."""
    params = {"w": w}
    before = w.tobytes()
    calls = []

    def loss(p):
        calls.append(1)
        if len(calls) == fail_at:
            raise ValueError("planted")
        return float(np.tanh(p["w"]).sum())

    try:
        check_params(loss, params, {"w": 1 - np.tanh(w) ** 2})
    except Exception:
        pass
    assert params["w"] is w and w.tobytes() == before


vals = st.floats(-1e3, 1e3, allow_nan=False) | st.sampled_from([0.0, -0.0, np.nan, np.inf, -np.inf, 5e-324])
noise_vals = st.floats(0, 10, allow_nan=False) | st.sampled_from([0.0, np.nan, np.inf])


@settings(max_examples=max(100, settings.default.max_examples))  # the mutation run's power: mutation/README.md
@given(vals, vals, noise_vals, st.floats(0, 1e-2), st.floats(0, 1e-3), st.floats(0, 16),
       st.sampled_from([1e-3, 1e-2, 0.1, 0.5, 0.99]))
def test_verdict_rules(a, n, z, rtol, atol, k, resolution):
    """The verdict rule, stated independently of the implementation: MISMATCH beyond the
    tolerance; PASS only within it AND with the tolerance within ``resolution`` of the value."""
    code = Verdict(int(classify(np.array([a]), np.array([n]), np.array([z]), rtol=rtol, atol=atol, noise_factor=k,
                                resolution=resolution)[0]))
    if not (np.isfinite(a) and np.isfinite(n) and np.isfinite(z)):
        assert code is Verdict.NONFINITE
        return
    err, scale, floor = abs(a - n), max(abs(a), abs(n)), atol + k * z
    if err > floor + rtol * scale:
        assert code is Verdict.MISMATCH
    elif scale <= floor or floor + rtol * scale > resolution * scale:
        assert code is Verdict.UNCHECKED
    else:
        assert code is Verdict.PASS
        assert err <= resolution * scale  # a PASS claim is within the share of the numeric value


@settings(max_examples=max(100, settings.default.max_examples))  # the mutation run's power: mutation/README.md
@given(st.floats(0.1, 10), st.floats(-3, 3))
def test_mismatch_is_symmetric_and_scale_free(c, x0):
    """Swapping claimed and numeric, or scaling both (away from noise), keeps the verdict."""
    a, n, z = np.array([c]), np.array([c * (1 + 3e-3)]), np.array([0.0])
    kw = dict(rtol=1e-3, atol=0.0, noise_factor=8.0)
    assert classify(a, n, z, **kw)[0] == classify(n, a, z, **kw)[0] == Verdict.MISMATCH
    assert classify(a * 1e5, n * 1e5, z, **kw)[0] == Verdict.MISMATCH
