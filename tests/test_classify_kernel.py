"""The fused classify kernel equals the numpy reference bit for bit; `_jit` compiles lazily."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from gradcheck._classify import kernel as _classify_kernel
from gradcheck._classify import rule as _classify
from gradcheck._core import jit as _jit
from gradcheck._core.verdict import Verdict

TINY = 5e-324  # the smallest subnormal
BIG = 1.7e308
INF, NAN = np.inf, np.nan


def reference(a, n, z, **tol):
    rule = {k: v for k, v in tol.items() if k != "resolution"}  # the tolerance does not use the share
    with np.errstate(all="ignore"):  # the reference's tolerance overflows loudly on 1e308
        return _classify.classify(a, n, z, **tol), _classify.tolerance(a, n, z, **rule)


def fused(a, n, z, **tol):
    """The kernel's codes and tolerances, after checking that its threaded and one-thread
    variants (chosen by size) agree bit for bit."""
    flat = [np.ascontiguousarray(v, dtype=np.float64).reshape(-1) for v in (a, n, z)]
    args = (*flat, tol["rtol"], tol["atol"], tol["noise_factor"], tol.get("resolution", _classify.DEFAULT_RESOLUTION))
    outs = []
    for run in (_classify_kernel._classify_threads, _classify_kernel._classify_one_thread):
        codes, t = np.empty(flat[0].size, dtype=np.uint8), np.empty(flat[0].size)
        run(*args, codes, t, True)
        outs.append((codes, t))
    np.testing.assert_array_equal(outs[0][0], outs[1][0])
    # Same bits, except a NaN's sign, which vectorized and scalar code may set differently
    # (0*inf); no verdict reads it.
    t0, t1 = outs[0][1], outs[1][1]
    assert np.array_equal(np.isnan(t0), np.isnan(t1))
    number = ~np.isnan(t0)
    assert np.array_equal(t0[number].view(np.int64), t1[number].view(np.int64))
    return _classify_kernel.classify_and_tolerance(a, n, z, **tol)


def assert_same(a, n, z, **tol):
    codes_ref, tol_ref = reference(a, n, z, **tol)
    codes, t = fused(a, n, z, **tol)
    np.testing.assert_array_equal(codes, codes_ref)
    assert codes.dtype == codes_ref.dtype == np.uint8
    # Bit for bit, NaNs included (the tolerance is NaN where an input is NaN). The sign of
    # a NaN made by 0*inf is the FPU's choice (x86 makes it negative, numpy may not), and
    # no verdict reads it, so signs are compared where the tolerance is a number.
    assert np.array_equal(t, tol_ref, equal_nan=True)
    number = ~np.isnan(tol_ref)
    assert np.array_equal(np.signbit(t[number]), np.signbit(tol_ref[number]))
    only = _classify_kernel.classify_codes(a, n, z, **tol)
    np.testing.assert_array_equal(only, codes_ref)
    return codes


# The share switched off (resolution = inf): the rule's other edges.
RULE = dict(rtol=0.5, atol=0.0, noise_factor=1.0, resolution=INF)

# (analytic, numeric, noise, expected verdict, why) under RULE, where
# tol = 1*noise + 0.5*max(|a|,|n|) and floor = 1*noise.
TABLE = [
    (2.0, 1.0, 0.0, Verdict.PASS, "err == tol exactly is not a mismatch (>, not >=)"),
    (np.nextafter(2.0, 3.0), 1.0, 0.0, Verdict.MISMATCH, "err one ulp past the tolerance"),
    (1.0, 1.0, 1.0, Verdict.UNCHECKED, "scale == floor exactly is unchecked (<=)"),
    (1.0, 1.0, np.nextafter(1.0, 0.0), Verdict.PASS, "scale one ulp above the floor"),
    (0.0, 0.0, 0.0, Verdict.UNCHECKED, "both zero with zero noise: 0 <= 0"),
    (-0.0, 0.0, 0.0, Verdict.UNCHECKED, "negative zero is zero"),
    (0.0, -0.0, -0.0, Verdict.UNCHECKED, "negative zero noise"),
    (TINY, 0.0, 0.0, Verdict.MISMATCH, "a subnormal against zero with no noise"),
    (TINY, TINY, 0.0, Verdict.PASS, "equal subnormals"),
    (TINY, -TINY, TINY, Verdict.MISMATCH, "opposite subnormals: err 2t > tol t (rtol*t rounds to 0)"),
    (NAN, 1.0, 0.0, Verdict.NONFINITE, "NaN claimed"),
    (1.0, NAN, 0.0, Verdict.NONFINITE, "NaN numeric"),
    (1.0, 1.0, NAN, Verdict.NONFINITE, "NaN noise"),
    (INF, INF, 0.0, Verdict.NONFINITE, "inf claimed and numeric"),
    (1.0, -INF, 0.0, Verdict.NONFINITE, "-inf numeric"),
    (1.0, 1.0, INF, Verdict.NONFINITE, "inf noise"),
    (BIG, -BIG, 0.0, Verdict.MISMATCH, "a - n overflows to inf: err inf > finite tol"),
    (BIG, BIG, BIG, Verdict.UNCHECKED, "huge noise: floor and tol finite, scale <= floor"),
    (1.0, 1.0, 1e308, Verdict.UNCHECKED, "noise_factor * noise near overflow"),
    (3.0, -3.0, 0.0, Verdict.MISMATCH, "sign flip"),
]


@pytest.mark.parametrize("a, n, z, expected, why", TABLE, ids=[row[4] for row in TABLE])
def test_adversarial_entries_match_the_reference(a, n, z, expected, why):
    """Ties at the tolerance, signed zeros, subnormals, NaN/inf, overflow: same verdict."""
    arr = lambda v: np.array([v], dtype=np.float64)  # noqa: E731
    codes = assert_same(arr(a), arr(n), arr(z), **RULE)
    assert codes[0] == expected, why


# The resolution share: tol = 1*noise + 0.25*scale must be within 0.5*scale to PASS.
SHARE_RULE = dict(rtol=0.25, atol=0.0, noise_factor=1.0, resolution=0.5)
SHARE_TABLE = [
    (1.0, 1.0, 0.25, Verdict.PASS, "tol == resolution*scale exactly passes (<=)"),
    (1.0, 1.0, 0.25 + 2**-53, Verdict.UNCHECKED, "tol one ulp (of 0.5) above resolution*scale"),
    (1.0, 0.75, 0.25, Verdict.PASS, "err == tol == resolution*scale"),
    (1.5, 1.0, 0.875, Verdict.UNCHECKED, "agreement within tol, but tol is 83% of the value"),
    (3.0, 1.0, 1.0, Verdict.MISMATCH, "err > tol: MISMATCH whatever the share (tol 1.75 > 1.5)"),
    (0.0, 0.0, 0.0, Verdict.UNCHECKED, "both zero: 0 <= 0 is below noise, 0 > 0 is not"),
    (TINY, TINY, 0.0, Verdict.PASS, "equal subnormals: tol 0 <= 0.5*tiny (rounds to 0)"),
    (BIG, BIG, BIG / 4, Verdict.PASS, "huge values: the cap 0.5*scale does not overflow"),
    (1.0, 1.0, 1e308, Verdict.UNCHECKED, "huge noise"),
    (NAN, 1.0, 0.0, Verdict.NONFINITE, "NaN claimed"),
]


@pytest.mark.parametrize("a, n, z, expected, why", SHARE_TABLE, ids=[row[4] for row in SHARE_TABLE])
def test_the_resolution_share_at_its_edge_matches_the_reference(a, n, z, expected, why):
    """PASS needs tol <= resolution*scale: both sides of the edge, ties, zeros, subnormals,
    the largest values; the kernel gives the reference's verdict and tolerance."""
    arr = lambda v: np.array([v], dtype=np.float64)  # noqa: E731
    codes = assert_same(arr(a), arr(n), arr(z), **SHARE_RULE)
    assert codes[0] == expected, why


def test_table_as_one_array_matches_the_reference():
    """All the adversarial rows in one parallel pass, under several tolerance settings."""
    a = np.array([row[0] for row in TABLE] * 50)
    n = np.array([row[1] for row in TABLE] * 50)
    z = np.array([row[2] for row in TABLE] * 50)
    for rule in (RULE, SHARE_RULE, dict(rtol=1e-6, atol=0.0, noise_factor=8.0),
                 dict(rtol=1e-6, atol=0.0, noise_factor=8.0, resolution=TINY),
                 dict(rtol=0.0, atol=1e-300, noise_factor=0.0), dict(rtol=1e300, atol=1e300, noise_factor=1e300)):
        assert_same(a, n, z, **rule)


def test_random_million_entries_match_the_reference():
    """Random entries around the tolerance boundary, a million of them, in parallel."""
    rng = np.random.default_rng(20240501)
    size = 1_000_000
    a = rng.standard_normal(size) * np.exp(rng.uniform(-30, 30, size))
    n = a * (1.0 + rng.standard_normal(size) * 1e-6)
    z = np.abs(a) * np.exp(rng.uniform(-40, 0, size))
    z[: size // 2] = np.abs(a[: size // 2]) * rng.uniform(0.0, 0.02, size // 2) / 8  # around the 1% share
    specials = rng.integers(0, size, 1000)
    a[specials[:300]] = rng.choice([NAN, INF, -INF, 0.0, -0.0, TINY], 300)
    n[specials[300:600]] = rng.choice([NAN, INF, -INF, 0.0, -0.0, TINY], 300)
    z[specials[600:]] = rng.choice([NAN, INF, 0.0, -0.0, TINY], 400)
    codes = assert_same(a, n, z, rtol=1e-6, atol=0.0, noise_factor=8.0)
    assert set(np.unique(codes)) == {int(v) for v in (Verdict.PASS, Verdict.MISMATCH, Verdict.UNCHECKED, Verdict.NONFINITE)}


floats = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True, allow_subnormal=True, width=64),
    st.sampled_from([0.0, -0.0, TINY, -TINY, 1.0, -1.0, BIG, -BIG, INF, NAN]),
)
tolerances = st.sampled_from([0.0, TINY, 1e-300, 1e-12, 1e-6, 0.5, 1.0, 8.0, 1e300])


@settings(max_examples=max(100, settings.default.max_examples))  # the mutation run's power: mutation/README.md
@given(
    a=hnp.arrays(np.float64, st.integers(1, 64), elements=floats),
    data=st.data(),
    rtol=tolerances, atol=tolerances, k=tolerances,
    resolution=st.sampled_from([TINY, 1e-6, 0.01, 0.5, 0.999, 1.0, INF]),
)
def test_any_input_matches_the_reference(a, data, rtol, atol, k, resolution):
    """Property: for every input (specials included) and share, codes and tolerances are equal."""
    n = data.draw(hnp.arrays(np.float64, a.shape, elements=floats))
    z = data.draw(hnp.arrays(np.float64, a.shape, elements=floats))
    if data.draw(st.booleans()):
        with np.errstate(over="ignore", invalid="ignore"):
            n = np.where(np.isfinite(a), a * (1 + rtol), n)  # land on the boundary often
    assert_same(a, n, z, rtol=rtol, atol=atol, noise_factor=k, resolution=resolution)


def test_shapes_and_dtypes_are_accepted_like_the_reference():
    """2-D, float32 and non-contiguous inputs give the reference's codes in its shape.

    Like ``classify``, the kernel works in float64; the tolerance equals the reference's
    on the float64 values (numpy would compute float32 inputs' tolerance in float32).
    """
    rng = np.random.default_rng(1)
    a = rng.standard_normal((40, 30)).astype(np.float32)
    n = (a * 1.000001).T.copy().T  # Fortran order
    z = np.full((80, 30), 1e-7)[::2]
    rule = dict(rtol=1e-6, atol=0.0, noise_factor=8.0)
    codes, tol = fused(a, n, z, **rule)
    ref_codes, ref_tol = reference(a.astype(np.float64), n.astype(np.float64), z, **rule)
    assert codes.shape == (40, 30)
    np.testing.assert_array_equal(codes, _classify.classify(a, n, z, **rule))
    np.testing.assert_array_equal(_classify_kernel.tolerance(a, n, z, **rule), _classify.tolerance(a, n, z, **rule))
    np.testing.assert_array_equal(codes, ref_codes)
    np.testing.assert_array_equal(tol, ref_tol)


@pytest.mark.parametrize("size", [10, _classify_kernel.MIN_SIZE - 1, _classify_kernel.MIN_SIZE])
def test_size_dispatch_gives_the_reference(size):
    """``classify``/``tolerance`` pick numpy or the kernel by size; the answer is the same."""
    rng = np.random.default_rng(size)
    a = rng.standard_normal(size)
    n = a + rng.standard_normal(size) * 1e-6
    z = np.full(size, 1e-9)
    rule = dict(rtol=1e-6, atol=0.0, noise_factor=8.0)
    np.testing.assert_array_equal(_classify_kernel.classify(a, n, z, **rule), _classify.classify(a, n, z, **rule))
    np.testing.assert_array_equal(_classify_kernel.tolerance(a, n, z, **rule), _classify.tolerance(a, n, z, **rule))


def test_empty_input():
    """Zero entries: empty codes, no error."""
    e = np.empty(0)
    codes, tol = fused(e, e, e, **RULE)
    assert codes.shape == tol.shape == (0,)


# -- _jit: the one place that decides how kernels compile ---------------------------------

def _scale(x, out):
    for i in range(x.size):
        out[i] = x[i] / 0.0  # error_model="numpy": inf/NaN, never ZeroDivisionError


SCALE = _jit.kernel()(_scale)


def test_kernel_options_are_exact_ieee_and_numpy_errors():
    """Kernels compile with error_model=numpy (no raise on /0), no fastmath, nogil."""
    out = np.empty(3)
    SCALE(np.array([1.0, -1.0, 0.0]), out)
    assert out[0] == INF and out[1] == -INF and np.isnan(out[2])
    opts = SCALE.dispatcher.targetoptions
    assert opts["error_model"] == "numpy" and opts["nogil"] is True
    assert not opts.get("fastmath")


def test_compile_time_is_reported_once_per_signature():
    """The first call for new argument types reports its compile seconds; later calls 0."""
    x32 = np.ones(2, dtype=np.float32)
    first = SCALE.compile_for(x32, np.empty(2))
    again = SCALE.compile_for(x32, np.empty(2))
    assert first > 0.0 and again == 0.0
    assert _jit.compile_seconds()[SCALE.name] >= first


def test_kernels_taking_functions_are_never_cached():
    """A kernel that receives a function is not cached (numba cannot cache it safely)."""
    assert _jit.kernel(takes_functions=True)(_scale).cache is False
    assert _jit.kernel()(_scale).cache is True


def test_importing_gradcheck_and_kernel_modules_does_not_import_numba():
    """Lazy: numba is imported when a kernel first runs, not by any import or auto check."""
    code = (
        "import sys, numpy as np, gradcheck\n"
        "import gradcheck._core.jit, gradcheck._classify.kernel, gradcheck._evaluate.compiled\n"
        "from gradcheck._evaluate import auto_reason\n"
        "from gradcheck.engines import CheckProblem\n"
        "from gradcheck.backends import NumpyBackend\n"
        "w = np.ones(3)\n"
        "p = CheckProblem(f=np.sum, work=w, evaluate=lambda: float(w.sum()), backend=NumpyBackend(), cotangent=None)\n"
        "assert auto_reason('compiled', p) is None\n"
        "r = gradcheck.check(lambda x: (x**2).sum(), np.arange(3.0), grad=lambda x: 2*x)\n"
        "assert r.passed\n"
        "assert 'numba' not in sys.modules, sorted(m for m in sys.modules if 'numba' in m)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_one_tolerance_behind_the_rule_and_the_kernel():
    """The numpy rule and the kernel both compute
    ``atol + k*noise + rtol*scale`` through ``Tolerance`` (written out here independently),
    and the PASS share rule is Tolerance.coarse: a tolerance just above ``resolution*scale``
    is UNCHECKED, just below it PASS."""
    from gradcheck._core.tolerance import Tolerance

    rng = np.random.default_rng(5)
    a, n = rng.standard_normal(64), rng.standard_normal(64)
    z = np.abs(rng.standard_normal(64)) * 1e-9
    t = Tolerance(rtol=1e-3, atol=1e-12, noise_factor=8.0, resolution=0.02)
    by_hand = (1e-12 + 8.0 * z) + 1e-3 * np.maximum(np.abs(a), np.abs(n))
    assert t.per_entry(a, n, z).tobytes() == by_hand.tobytes()
    assert _classify.tolerance(a, n, z, **t.keywords()).tobytes() == by_hand.tobytes()
    _, tol = _classify_kernel.classify_and_tolerance(a, n, z, **t.rule())
    assert tol.tobytes() == by_hand.tobytes()
    # the share rule: the tolerance is all atol here, 0.02 of the value just above and below
    one = np.ones(2)
    noise0 = np.zeros(2)
    for share, want in ((0.0201, Verdict.UNCHECKED), (0.0199, Verdict.PASS)):
        rule = Tolerance(rtol=0.0, atol=share, noise_factor=8.0, resolution=0.02)
        assert bool(rule.coarse(share, 1.0)) == (want == Verdict.UNCHECKED)
        assert (_classify.classify(one, one, noise0, **rule.rule()) == want).all()
        assert (_classify_kernel.classify_codes(one, one, noise0, **rule.rule()) == want).all()
