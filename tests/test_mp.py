"""Specification of gradcheck.mp: unmodified numpy code at arbitrary precision, exact derivatives.

The truth here is mathematics written out in mpmath (closed-form derivatives, exact sums and
products of the binary inputs), never a finite difference.
"""
from __future__ import annotations

import math
import os
import pickle
import subprocess
import sys

import ml_dtypes
import mpmath
import numpy as np
import pytest
from optional_deps import required

from gradcheck.mp import (
    MPArray,
    MPDerivative,
    MPFloat,
    NotAdjudicable,
    PrecisionLossError,
    Reason,
    backend,
    certified_digits,
    evaluate,
    exact_mpf,
    from_mp,
    mp_derivative,
    to_mp,
)

RNG = np.random.default_rng(20241129)
mpf = mpmath.mpf


def _exact(x: np.ndarray) -> list:
    """The binary values of a float array as exact mpf."""
    return [exact_mpf(v) for v in np.asarray(x, dtype=np.float64).reshape(-1)]


def _close(a, b, digits: int) -> bool:
    return abs(a - b) <= mpf(10) ** -digits * max(abs(a), abs(b), 1)


# ---- closed-form derivatives ----------------------------------------------------------------
A_MM, B_MM = RNG.normal(size=(3, 5)), RNG.normal(size=(2, 3))
G_LN = RNG.normal(size=6)
LN_EPS = 1e-5


def _softmax_ce(z):
    """Cross-entropy of softmax(z) against label 2, written as a model would write it."""
    m = z.max()
    return np.log(np.sum(np.exp(z - m))) + m - z[2]


def _d_softmax_ce(x, i):
    e = [mpmath.exp(v) for v in x]
    return e[i] / mpmath.fsum(e) - (1 if i == 2 else 0)


def _matmul_chain(v):
    return np.sum((B_MM @ (A_MM @ v)) ** 2)


def _d_matmul_chain(x, i):
    a, b = mpmath.matrix(A_MM.tolist()), mpmath.matrix(B_MM.tolist())
    y = b * (a * mpmath.matrix(x))
    return 2 * (a.T * (b.T * y))[i]


def _layer_norm(v):
    return np.sum(G_LN * (v - v.mean()) / np.sqrt(v.var() + LN_EPS))


def _d_layer_norm(x, i):
    n = len(x)
    g = _exact(G_LN)
    mu = mpmath.fsum(x) / n
    sigma = mpmath.sqrt(mpmath.fsum((v - mu) ** 2 for v in x) / n + exact_mpf(LN_EPS))
    y = [(v - mu) / sigma for v in x]
    mean_g = mpmath.fsum(g) / n
    mean_gy = mpmath.fsum(a * b for a, b in zip(g, y)) / n
    return (g[i] - mean_g - y[i] * mean_gy) / sigma


X5 = np.array([0.3, -0.7, 0.75, 1.9, -0.4])
X6 = RNG.normal(size=6)
CLOSED_FORM = [
    ("tanh", lambda v: np.sum(np.tanh(v)), lambda x, i: 1 / mpmath.cosh(x[i]) ** 2, X5),
    ("exp", lambda v: np.sum(np.exp(v)), lambda x, i: mpmath.exp(x[i]), X5),
    ("log1p", lambda v: np.sum(np.log1p(v)), lambda x, i: 1 / (1 + x[i]), X5),
    ("polynomial", lambda v: np.sum(3 * v**3 - 2 * v**2 + v),
     lambda x, i: 9 * x[i] ** 2 - 4 * x[i] + 1, X5),
    ("softmax-cross-entropy", _softmax_ce, _d_softmax_ce, X5),
    ("matmul chain", _matmul_chain, _d_matmul_chain, X5),
    ("layer norm", _layer_norm, _d_layer_norm, X6),
]


@pytest.mark.parametrize("index", [0, 3])
@pytest.mark.parametrize(("name", "f", "df", "x"), CLOSED_FORM, ids=[c[0] for c in CLOSED_FORM])
def test_derivative_matches_closed_form_to_its_certified_digits(name, f, df, x, index):
    """At 30 digits the derivative certifies >= 20 digits, the certificate is honest (the
    value is that close to the closed form), and the error bound covers the true error."""
    d = mp_derivative(f, x, index, dps=30)
    with mpmath.workdps(50):
        exact = df(_exact(x), index)
        assert d.digits >= 20
        assert abs(d.value - exact) <= mpf(10) ** (1 - d.digits) * abs(exact)
        assert abs(d.value - exact) <= d.error
    assert not d.is_kink


@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16])
def test_low_precision_input_is_differentiated_at_its_exact_value(dtype):
    """A float32/float16/bfloat16 input is upcast exactly: d/dx sum(x**2) is 2x of the
    low-precision value, not of the decimal it was written from."""
    x = np.array([0.1, 0.7], dtype=dtype)
    d = mp_derivative(lambda v: np.sum(v**2), x, 0)
    with mpmath.workdps(50):
        assert _close(d.value, 2 * exact_mpf(x[0]), 25)
        assert not _close(d.value, 2 * mpf("0.1"), 12)


# ---- gradients spanning many orders of magnitude --------------------------------------------
COEFFS = 10.0 ** -np.arange(17)  # d f / d x_k = 10**-k, k = 0..16
X_SPAN = np.concatenate([RNG.normal(size=17), [3e4, -2e4, 1.5e4]])


def _spanning(v):
    """Tiny linear terms next to large quadratic ones: f is ~1e9, gradients 1e-16 .. 6e4."""
    return np.sum(COEFFS * v[:17]) + np.sum(v[17:] ** 2)


def _d_spanning(k):
    return exact_mpf(COEFFS[k]) if k < 17 else 2 * exact_mpf(X_SPAN[k])


@pytest.mark.parametrize("k", [0, 5, 10, 16, 17])
def test_gradients_across_twenty_orders_are_certified_to_twenty_digits(k):
    """Precision rises until the 1e-16 gradient under a 1e9 function still gets >= 20
    certified digits, and those digits are right."""
    d = mp_derivative(_spanning, X_SPAN, k, dps=30)
    with mpmath.workdps(60):
        exact = _d_spanning(k)
        assert d.digits >= 20
        assert abs(d.value - exact) <= mpf(10) ** (1 - d.digits) * abs(exact)


def test_float64_differences_are_noise_where_the_mp_derivative_is_exact():
    """The premise of the test above: float64 central differences of the same function do
    not get a single digit of the small gradients (the change is below f's round-off)."""
    h = np.cbrt(np.finfo(float).eps)
    for k in (10, 16):
        e = np.zeros_like(X_SPAN)
        e[k] = h * max(1.0, abs(X_SPAN[k]))
        fd = (_spanning(X_SPAN + e) - _spanning(X_SPAN - e)) / (2 * e[k])
        assert abs(fd - COEFFS[k]) >= 0.5 * COEFFS[k]


# ---- one-sided derivatives and kinks ----------------------------------------------------------
KINKS = [
    ("relu", lambda v: np.sum(np.maximum(v, 0)), [0.0, 1.5], 0, 0, 1),
    ("relu, float zero", lambda v: np.sum(np.maximum(v, 0.0)), [0.0, 1.5], 0, 0, 1),
    ("hinge", lambda v: np.sum(np.maximum(0, 1 - v)), [1.0, -0.5], 0, -1, 0),
    ("abs", lambda v: np.sum(np.abs(v)), [0.0, -2.0], 0, -1, 1),
    ("max with a tie", lambda v: np.max(v), [1.0, 1.0, 0.5], 0, 0, 1),
]


@pytest.mark.parametrize(("name", "f", "x", "index", "left", "right"), KINKS,
                         ids=[k[0] for k in KINKS])
def test_kink_has_distinct_one_sided_derivatives(name, f, x, index, left, right):
    """At a kink the one-sided derivatives are the two slopes, and the point is a kink."""
    d = mp_derivative(f, np.array(x), index)
    assert d.is_kink
    assert _close(d.left, left, 20) and _close(d.right, right, 20)


SMOOTH = [
    ("relu off the kink", lambda v: np.sum(np.maximum(v, 0)), [0.25, 1.5], 0),
    ("abs off the kink", lambda v: np.sum(np.abs(v)), [-2.0, 1.0], 0),
    ("max without a tie", lambda v: np.max(v), [1.0, 0.9], 0),
    ("tanh", lambda v: np.sum(np.tanh(3 * v)), [0.3, 0.1], 0),
    ("stationary point", lambda v: np.sum(np.cos(v)), [0.0, 1.0], 0),
]


@pytest.mark.parametrize(("name", "f", "x", "index"), SMOOTH, ids=[s[0] for s in SMOOTH])
def test_smooth_point_is_not_a_kink(name, f, x, index):
    """Where f is differentiable the one-sided derivatives agree with the central one."""
    d = mp_derivative(f, np.array(x), index)
    assert not d.is_kink
    assert _close(d.left, d.value, 10) and _close(d.right, d.value, 10)


# ---- detecting the drop to float --------------------------------------------------------------
def _math_tanh(v):
    return sum(math.tanh(a) for a in v)


def _float_of_sum(v):
    return float(np.sum(v)) + v[0]


def _swallowing(v):
    try:
        return np.float64(math.tanh(v[0]))
    except Exception:  # the function "recovers": the conversion must still be seen
        return np.sum(np.tanh(v))


_FLOAT_COPY = np.array([0.5, -0.25, 1.5])


def _into_float_buffer(v):
    out = np.zeros(v.shape)
    out[:] = np.tanh(v)
    return out.sum()


DROPS = [
    ("math.tanh", _math_tanh, Reason.FLOAT_CONVERSION),
    ("float()", _float_of_sum, Reason.FLOAT_CONVERSION),
    ("astype(np.float32)", lambda v: np.sum(v.astype(np.float32)), Reason.FLOAT_CONVERSION),
    ("astype(float)", lambda v: np.sum(v.astype(float)), Reason.FLOAT_CONVERSION),
    ("np.asarray(dtype=float)", lambda v: np.sum(np.asarray(v, dtype=float)),
     Reason.FLOAT_CONVERSION),
    ("np.float64(element)", lambda v: np.float64(v[0]) * v[1], Reason.FLOAT_CONVERSION),
    ("write into np.zeros", _into_float_buffer, Reason.FLOAT_CONVERSION),
    ("exception swallowed", _swallowing, Reason.FLOAT_CONVERSION),
    ("math via frompyfunc", lambda v: np.sum(np.frompyfunc(math.erf, 1, 1)(v)),
     Reason.FLOAT_CONVERSION),
    ("pointer for C code", lambda v: v.ctypes.data, Reason.FLOAT_CONVERSION),
    ("captured float copy", lambda v: np.sum(np.tanh(_FLOAT_COPY)), Reason.FLOAT_RESULT),
    ("float array result", lambda v: np.zeros(3), Reason.FLOAT_RESULT),
    ("no MPFloat in the result", lambda v: np.array([1.0, 2.0], dtype=object),
     Reason.RESULT_NOT_MP),
    ("integer result", lambda v: int(v[0] > 0), Reason.RESULT_NOT_MP),
    ("ufunc with no object loop", lambda v: np.spacing(v), Reason.UNSUPPORTED_OPERATION),
    ("linalg", lambda v: np.linalg.inv(np.diag(v)).sum(), Reason.UNSUPPORTED_OPERATION),
    ("log outside its domain", lambda v: np.sum(np.log(v)), Reason.NONFINITE),
    ("division by zero", lambda v: v[0] / (v[1] - v[1]), Reason.NONFINITE),
]


@pytest.mark.parametrize(("name", "f", "reason"), DROPS, ids=[d[0] for d in DROPS])
def test_leaving_arbitrary_precision_is_not_adjudicable(name, f, reason):
    """Every way of leaving mpmath is reported with its reason, never returned as a value;
    a float conversion names the line that asked for it."""
    with pytest.raises(NotAdjudicable) as info:
        evaluate(f, np.array([0.5, -0.25, 1.5]), dps=30)
    assert info.value.reason is reason
    if reason is Reason.FLOAT_CONVERSION:
        assert "test_mp.py" in info.value.detail


def _numba_sum():
    import numba  # a hard dependency: no skip
    return numba.njit(lambda v: v.sum())


def _cffi_rosenbrock(prepare):
    from gradcheck import _kernels as kernels  # built at install: no skip
    ffi, lib = kernels.ffi, kernels.lib
    return lambda v: lib.gc_rosenbrock_loss(ffi.from_buffer("double[]", prepare(v)), v.size,
                                            ffi.NULL)


COMPILED = [
    ("numba", _numba_sum, Reason.UNSUPPORTED_OPERATION),
    ("cffi after ascontiguousarray",
     lambda: _cffi_rosenbrock(lambda v: np.ascontiguousarray(v, dtype=np.float64)),
     Reason.FLOAT_CONVERSION),
    # The buffer of an object array holds pointers; the kernel reads them as doubles and
    # returns a float, which the result check refuses.
    ("cffi on the raw buffer", lambda: _cffi_rosenbrock(lambda v: v), Reason.FLOAT_RESULT),
]


@pytest.mark.parametrize(("name", "make", "reason"), COMPILED, ids=[c[0] for c in COMPILED])
def test_compiled_code_is_not_adjudicable(name, make, reason):
    """numba and C kernels cannot compute in MPFloat; whichever way they are reached, the
    evaluation is refused with a reason."""
    f = make()
    with pytest.raises(NotAdjudicable) as info:
        evaluate(f, np.array([0.5, -0.25, 1.5]), dps=30)
    assert info.value.reason is reason


def test_float_conversion_raises_even_outside_an_evaluation():
    """float() and complex() on an MPFloat always refuse, with the operation named."""
    with pytest.raises(PrecisionLossError, match=r"float\(\)"):
        float(MPFloat(0.5))
    with pytest.raises(PrecisionLossError, match=r"complex\(\)"):
        complex(MPFloat(0.5))


# ---- numpy scalars and float arrays meeting MPFloat -------------------------------------------
V = 0.1  # an MPFloat of this exact binary value is combined with foreign numbers below
W_F64 = np.array([[1.5, -2.0], [0.1, 3.0]])
LD_THIRD = np.longdouble(1) / 3
MIXED = [
    ("np.float64 on the left", lambda v: np.float64(2.5) * v, lambda e: 2.5 * e),
    ("np.float64 on the right", lambda v: v * np.float64(2.5), lambda e: e * 2.5),
    ("np.float32 on the left", lambda v: np.float32(0.1) + v,
     lambda e: exact_mpf(np.float32(0.1)) + e),
    ("np.float16 on the left", lambda v: np.float16(0.3) - v,
     lambda e: exact_mpf(np.float16(0.3)) - e),
    ("bfloat16 on the left", lambda v: ml_dtypes.bfloat16(0.3) * v,
     lambda e: exact_mpf(ml_dtypes.bfloat16(0.3)) * e),
    ("np.longdouble on the left", lambda v: LD_THIRD * v, lambda e: exact_mpf(LD_THIRD) * e),
    ("np.int64 ** MPFloat", lambda v: np.int64(3) ** v, lambda e: mpmath.power(3, e)),
    ("np.float64 comparison", lambda v: np.float64(0.2) > v, lambda e: True),
    ("float64 matrix @ mp vector", lambda v: (W_F64 @ np.array([v, 2 * v]))[1],
     lambda e: exact_mpf(0.1) * e + 3 * (2 * e)),
    ("float64 array * MPFloat", lambda v: (W_F64 * v)[0, 1], lambda e: -2 * e),
    ("MPFloat - float64 array", lambda v: (v - W_F64)[1, 0], lambda e: e - exact_mpf(0.1)),
]


@pytest.mark.parametrize(("name", "expr", "expected"), MIXED, ids=[m[0] for m in MIXED])
def test_numpy_scalars_and_float_arrays_combine_exactly_with_mpfloat(name, expr, expected):
    """Whichever side the numpy scalar or float64 array is on, the result is an MPFloat
    computed from the exact binary values at the working precision."""
    with mpmath.workdps(30):
        result = expr(MPFloat(V))
        want = expected(exact_mpf(V))
    if isinstance(want, bool):
        assert bool(result) is want
    else:
        assert isinstance(result, MPFloat)
        assert result.value == want


# ---- precision is scoped -----------------------------------------------------------------------
def _raises_value_error(v):
    raise ValueError("the user's own bug")


@pytest.mark.parametrize(("f", "error"), [
    (lambda v: np.sum(np.tanh(v)), None),
    (_raises_value_error, ValueError),
    (_math_tanh, NotAdjudicable),
])
def test_precision_is_restored_after_evaluate(f, error):
    """mpmath's precision is the caller's again after evaluate, whether f returns, raises
    its own error (which propagates unchanged) or drops to float."""
    mpmath.mp.prec = 77
    if error is None:
        evaluate(f, np.array([0.5]), dps=60)
    else:
        with pytest.raises(error):
            evaluate(f, np.array([0.5]), dps=60)
    assert mpmath.mp.prec == 77


def test_evaluate_runs_f_at_the_requested_digits():
    """Inside f every MPFloat operation works at dps digits and the result carries them,
    while mpmath's global precision stays the caller's: the precision belongs to the
    evaluation, and gradcheck never sets mpmath's."""
    seen = []

    def f(v):
        seen.append((mpmath.mp.dps, (v[1] / 3).value))
        return np.sum(np.exp(v))

    mpmath.mp.dps = 20
    y = evaluate(f, np.array([0.0, 1.0]), dps=50)
    [(global_dps, third)] = seen
    assert global_dps == 20
    with mpmath.workdps(60):
        assert _close(third, mpf(1) / 3, 49) and not _close(third, mpf(1) / 3, 52)
        assert _close(y.value, 1 + mpmath.e, 49)


def test_mp_derivative_restores_precision():
    """mp_derivative changes precision many times and leaves the caller's in place."""
    mpmath.mp.prec = 91
    mp_derivative(lambda v: np.sum(np.sin(v)), np.array([0.5, 1.0]), 1)
    assert mpmath.mp.prec == 91


def test_evaluate_leaves_the_callers_array_untouched():
    """f receives a private copy: writing into its argument changes nothing outside."""
    x = to_mp(np.array([0.5, 1.5]))

    def f(v):
        v[0] = v[1] * 10
        return np.sum(v)

    evaluate(f, x, dps=30)
    assert x[0] == 0.5


# ---- numpy on object arrays --------------------------------------------------------------------
XM = np.array([[0.5, -1.25, 2.0], [3.0, 0.25, -0.75]])
WM = np.array([[1.0, 2.0], [0.5, -1.0], [0.25, 4.0]])
NATIVE = [
    ("matmul", lambda a: a @ WM),
    ("einsum", lambda a: np.einsum("ij,jk->ik", a, WM)),
    ("einsum full contraction", lambda a: np.einsum("ij,ij->", a, a)),
    ("sum over an axis", lambda a: a.sum(axis=0)),
    ("max", lambda a: np.max(a)),
    ("mean", lambda a: a.mean(axis=1)),
    ("var", lambda a: np.var(a)),
    ("std", lambda a: np.std(a, axis=0)),
    ("where", lambda a: np.where(a > 0, a, 0.1 * a)),
    ("sign", lambda a: np.sign(a)),
    ("maximum", lambda a: np.maximum(a, 0)),
    ("minimum", lambda a: np.minimum(a, MPFloat(0.3))),
    ("abs", lambda a: np.abs(a)),
    ("indexing", lambda a: a[1, ::-1]),
    ("fancy indexing", lambda a: a[[0, 1], [2, 0]]),
    ("boolean mask", lambda a: a[a > 0]),
    ("broadcast row", lambda a: a + np.array([1.0, 2.0, 3.0])),
    ("broadcast column", lambda a: a * np.array([[2.0], [3.0]])),
    ("softmax", lambda a: np.exp(a) / np.exp(a).sum(axis=1, keepdims=True)),
    ("tanh, log1p, sqrt", lambda a: np.tanh(a) + np.log1p(np.abs(a)) + np.sqrt(np.abs(a))),
    ("power", lambda a: np.abs(a) ** 1.5 + a**2),
    ("clip", lambda a: np.clip(a, -1, 1)),
    ("norm", lambda a: np.linalg.norm(a)),
    ("sort", lambda a: np.sort(a, axis=1)),
    ("hypot, arctan2", lambda a: np.hypot(a, 1.0) + np.arctan2(a, 2.0)),
]
COVERED = [  # numpy has no object loop for these; MPArray computes them
    ("isfinite", lambda a: np.isfinite(a)),
    ("isnan", lambda a: np.isnan(a)),
    ("signbit", lambda a: np.signbit(a)),
    ("logaddexp", lambda a: np.logaddexp(a, 0.5)),
    ("logaddexp.reduce", lambda a: np.logaddexp.reduce(a, axis=1)),
    ("copysign", lambda a: np.copysign(2.0, a)),
    ("heaviside", lambda a: np.heaviside(a, 0.5)),
    ("float_power", lambda a: np.float_power(np.abs(a), 0.5)),
    ("exp after maximum with a float", lambda a: np.exp(np.maximum(a, 0.0))),
]


def _matches_float64(result, op) -> None:
    expected = op(XM)
    if np.asarray(expected).dtype == bool:
        np.testing.assert_array_equal(result, expected)
        return
    elements = np.asarray(result, dtype=object).reshape(-1)
    assert all(isinstance(v, MPFloat) for v in elements if not isinstance(v, int))
    np.testing.assert_allclose(from_mp(np.asarray(result, dtype=object)), expected, rtol=1e-13)


@pytest.mark.parametrize(("name", "op"), NATIVE, ids=[n[0] for n in NATIVE])
@pytest.mark.parametrize("kind", ["MPArray", "plain object array"])
def test_numpy_operation_runs_on_mpfloat_arrays(name, op, kind):
    """numpy's object-dtype loops compute the operation in MPFloat, on an MPArray and on a
    plain object array alike, and agree with float64."""
    a = to_mp(XM) if kind == "MPArray" else to_mp(XM).view(np.ndarray)
    with mpmath.workdps(30):
        result = op(a)
    _matches_float64(result, op)


@pytest.mark.parametrize(("name", "op"), COVERED, ids=[c[0] for c in COVERED])
def test_mparray_covers_ufuncs_without_an_object_loop(name, op):
    """On a plain object array numpy raises TypeError; on an MPArray the operation runs in
    MPFloat and agrees with float64."""
    with mpmath.workdps(30), pytest.raises(TypeError):
        op(to_mp(XM).view(np.ndarray))
    with mpmath.workdps(30):
        result = op(to_mp(XM))
    _matches_float64(result, op)


@pytest.mark.parametrize(("expr", "expected"), [
    (lambda: np.log(MPFloat(-1.0)), "nan"),
    (lambda: np.sqrt(MPFloat(-4.0)), "nan"),
    (lambda: np.arcsin(MPFloat(2.0)), "nan"),
    (lambda: np.cbrt(MPFloat(-8.0)), "-2.0"),
    (lambda: np.arctanh(MPFloat(0.5)), str(mpmath.atanh(0.5))),
])
def test_ufunc_outside_its_real_domain_is_nan_as_in_numpy(expr, expected):
    """mpmath would answer with a complex number; numpy's real semantics say NaN."""
    result = expr()
    assert isinstance(result, MPFloat)
    assert str(result) == expected


# ---- the scalar -------------------------------------------------------------------------------------
P, Q = MPFloat(1.5), MPFloat(-0.25)
SCALAR = [
    ("add int", lambda: P + 1, mpf(2.5)),
    ("radd int", lambda: 1 + P, mpf(2.5)),
    ("sub float", lambda: P - 0.5, mpf(1)),
    ("rsub float", lambda: 0.5 - P, mpf(-1)),
    ("rmul", lambda: 2 * Q, mpf(-0.5)),
    ("truediv", lambda: P / 4, mpf(0.375)),
    ("rtruediv", lambda: 3 / P, mpf(2)),
    ("floordiv", lambda: P // 0.4, mpf(3)),
    ("floordiv negative", lambda: -P // 0.4, mpf(-4)),
    ("mod takes the divisor's sign", lambda: Q % 1, mpf(0.75)),
    ("rmod", lambda: 7 % P, mpf(1)),
    ("pow int", lambda: Q**2, mpf(0.0625)),
    ("pow negative base, odd int", lambda: Q**3, mpf(-0.015625)),
    ("rpow", lambda: 4**P, mpf(8)),
    ("divmod", lambda: divmod(P, 0.5)[1], mpf(0)),
    ("abs", lambda: abs(Q), mpf(0.25)),
    ("neg", lambda: -Q, mpf(0.25)),
    ("pos", lambda: +Q, mpf(-0.25)),
    ("fmod takes the dividend's sign", lambda: np.fmod(MPFloat(-7), 3), mpf(-1)),
    ("mixed MPFloat", lambda: P * Q + P, mpf(1.125)),
]


@pytest.mark.parametrize(("name", "expr", "expected"), SCALAR, ids=[s[0] for s in SCALAR])
def test_mpfloat_arithmetic(name, expr, expected):
    """Operators with ints, floats and MPFloats on either side give the exact MPFloat."""
    result = expr()
    assert isinstance(result, MPFloat)
    assert result.value == expected


@pytest.mark.parametrize(("expr", "expected"), [
    (lambda: P > Q, True), (lambda: P <= 1.5, True), (lambda: P > 2, False),
    (lambda: P == 1.5, True), (lambda: MPFloat(1.5) != P, False),
    (lambda: bool(MPFloat(0)), False), (lambda: bool(Q), True),
    (lambda: hash(MPFloat(0.5)) == hash(0.5), True), (lambda: {P: 1}[1.5], 1),
    (lambda: int(MPFloat(-1.5)), -1), (lambda: math.floor(Q), -1), (lambda: math.ceil(Q), 0),
    (lambda: round(MPFloat(2.5)), 2), (lambda: P == "1.5", False),
])
def test_mpfloat_comparisons_truth_and_integer_conversions(expr, expected):
    """Comparisons, truth, hashing and integer conversions behave as for a float, exactly."""
    assert expr() == expected


def test_mpfloat_pickles_without_rounding():
    """A 100-digit MPFloat survives pickling (for process pools) bit for bit."""
    with mpmath.workdps(100):
        v = MPFloat(1) / 3
    assert pickle.loads(pickle.dumps(v)).value == v.value


# ---- conversion in and out -----------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, ml_dtypes.bfloat16])
def test_to_mp_and_from_mp_round_trip_bit_for_bit(dtype):
    """to_mp holds each value exactly; from_mp to the same dtype gives the same bits."""
    x = (RNG.normal(size=(3, 4)) * 100).astype(dtype)
    x_mp = to_mp(x)
    assert isinstance(x_mp, MPArray) and x_mp.shape == x.shape
    assert all(v.value == exact_mpf(float(s)) for v, s in zip(x_mp.flat, x.flat))
    back = from_mp(x_mp, dtype)
    assert back.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(back.view(np.uint8), x.view(np.uint8))


def test_to_mp_keeps_longdouble_exact():
    """A long double's 64-bit mantissa is not squeezed through float64."""
    x = np.array([np.longdouble(1) / 3])
    num, den = x[0].as_integer_ratio()
    with mpmath.workprec(200):
        assert to_mp(x)[0].value == mpf(num) / den


@pytest.mark.parametrize(("value", "dtype", "expected"), [
    # Just above a float32 tie: rounding through float64 first lands on the tie, then on 1.0.
    ("1 + 2**-24 + 2**-60", np.float32, np.float32(1 + 2**-23)),
    ("1 + 2**-53", np.float64, 1.0),  # a tie goes to even
    ("1 + 2**-53 + 2**-100", np.float64, np.nextafter(1.0, 2.0)),
    ("65520", np.float16, np.float16(np.inf)),  # halfway to the next binade overflows
    ("2**-150", np.float32, np.float32(0.0)),  # half the smallest subnormal ties to zero
])
def test_from_mp_rounds_once_to_nearest_even(value, dtype, expected):
    """from_mp rounds the exact value straight to the target format."""
    with mpmath.workprec(300):
        v = _parse_power_sum(value)
    result = from_mp(v, dtype)
    assert result.dtype == np.dtype(dtype)
    assert result == expected


def _parse_power_sum(text: str):
    """'1 + 2**-24 + 2**-60' as an exact mpf (terms are ints or powers of two)."""
    total = mpf(0)
    for term in text.split("+"):
        term = term.strip()
        total += mpf(2) ** int(term.split("**")[1]) if "**" in term else mpf(int(term))
    return total


def test_to_mp_refuses_a_precision_that_would_round_the_input():
    """Ten digits cannot hold a float64 mantissa; the error names the digits that would."""
    with pytest.raises(ValueError, match="dps >= 15"):
        to_mp(np.array([0.1]), dps=10)


# ---- certified digits, cotangents, indices, backend ----------------------------------------------
@pytest.mark.parametrize(("a", "b", "digits"), [
    (1.23456, 1.23457, 5),
    (2.0, 2.0, 30),
    (1.0, 1.0 + 3e-10, 9),
    (1.0, -1.0, 0),
    (0.0, 1e-30, 0),
    ("1e-300", "1.000000000000000000003e-300", 20),
])
def test_certified_digits_counts_leading_agreement(a, b, digits):
    """The number of significant digits two values share, capped, zero across a sign."""
    with mpmath.workdps(40):
        a, b = mpf(a), mpf(b)
    assert certified_digits(a, b, cap=30) == digits


A_VEC = RNG.normal(size=(4, 3))
COT = RNG.normal(size=4)


def test_cotangent_reduces_a_vector_output_exactly():
    """With f vector-valued, the derivative is that of sum(cotangent * f)."""
    x = np.array([0.2, -0.5, 0.9])
    d = mp_derivative(lambda v: np.tanh(A_VEC @ v), x, 1, cotangent=COT)
    with mpmath.workdps(50):
        xs, a, c = _exact(x), mpmath.matrix(A_VEC.tolist()), _exact(COT)
        z = a * mpmath.matrix(xs)
        exact = mpmath.fsum(c[j] * a[j, 1] / mpmath.cosh(z[j]) ** 2 for j in range(4))
    assert d.digits >= 20
    assert _close(d.value, exact, 20)


@pytest.mark.parametrize(("cotangent", "match"), [
    (None, "pass a cotangent"),
    (np.ones(3), r"cotangent has shape \(3,\) but f returned shape \(4,\)"),
])
def test_vector_output_without_a_matching_cotangent_is_an_error(cotangent, match):
    """A vector output needs a cotangent of its shape; the error names both shapes."""
    with pytest.raises(ValueError, match=match):
        mp_derivative(lambda v: A_VEC @ v, np.ones(3), 0, cotangent=cotangent)


def test_flat_and_multi_index_address_the_same_entry():
    """An int index is a flat index into x; out of range is an IndexError naming the shape."""
    x = RNG.normal(size=(2, 3))
    f = lambda v: np.sum(np.sin(v) * np.arange(6.0).reshape(2, 3))  # noqa: E731
    assert mp_derivative(f, x, 4).value == mp_derivative(f, x, (1, 1)).value
    with pytest.raises(IndexError, match=r"\(2, 3\)"):
        mp_derivative(f, x, (2, 0))


def test_backend_is_gmpy_exactly_when_gmpy2_is_installed():
    """mpmath uses gmpy2 when it can import it; backend() reports which one is active."""
    try:
        import gmpy2  # noqa: F401

        expected = "python" if os.environ.get("MPMATH_NOGMPY") else "gmpy"
    except ImportError:
        if required():  # where the frameworks are installed, gmpy2 is too: its absence is a defect
            raise
        expected = "python"
    assert backend() == expected


def test_pure_python_backend_gives_the_same_derivative():
    """Without gmpy2 (MPMATH_NOGMPY) the backend is pure Python and the result is identical."""
    code = (
        "import numpy as np, mpmath\n"
        "from gradcheck.mp import backend, mp_derivative\n"
        "d = mp_derivative(lambda v: np.sum(v**3 - 2 * v), np.array([0.3, 0.7]), 1)\n"
        "print(backend(), mpmath.nstr(d.value, 30))\n"
    )
    env = dict(os.environ, MPMATH_NOGMPY="1")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, check=True).stdout.split()
    d = mp_derivative(lambda v: np.sum(v**3 - 2 * v), np.array([0.3, 0.7]), 1)
    assert out == ["python", mpmath.nstr(d.value, 30)]


# ---- cost ---------------------------------------------------------------------------------------
X_MLP, Y_MLP = RNG.normal(size=(8, 10)), RNG.normal(size=8)
THETA = RNG.normal(size=193) * 0.3


def _mlp_loss(theta):
    """A 2-layer tanh MLP's mean squared error; 193 parameters, written as plain numpy."""
    w1, b1 = theta[:160].reshape(10, 16), theta[160:176]
    w2, b2 = theta[176:192], theta[192]
    out = np.tanh(X_MLP @ w1 + b1) @ w2 + b2
    return np.mean((out - Y_MLP) ** 2)


def _mlp_grad(theta):
    w1, b1, w2 = theta[:160].reshape(10, 16), theta[160:176], theta[176:192]
    h = np.tanh(X_MLP @ w1 + b1)
    r = 2 * (h @ w2 + theta[192] - Y_MLP) / len(Y_MLP)
    dz = np.outer(r, w2) * (1 - h**2)
    return np.concatenate([(X_MLP.T @ dz).ravel(), dz.sum(0), h.T @ r, [r.sum()]])


@pytest.mark.parametrize("index", [7, 165, 180, 192])
def test_mlp_entry_is_exact_within_the_per_entry_budget(index):
    """One entry of a 193-parameter MLP at 30 digits: ten evaluations (the budget, counted;
    its time is in benchmarks/bench_speed_claims.py), and it agrees with the hand-written
    backward pass to float64 accuracy."""
    d = mp_derivative(_mlp_loss, THETA, index, dps=30)
    assert d.evaluations == 10 and d.digits >= 20
    assert abs(float(d.value) - _mlp_grad(THETA)[index]) <= 1e-12 * max(1.0, abs(float(d.value)))


def test_public_names_are_exported():
    """Everything in gradcheck.mp.__all__ is importable."""
    import gradcheck.mp as mp

    assert all(getattr(mp, name) is not None for name in mp.__all__)
    assert MPDerivative.__dataclass_fields__.keys() >= {"value", "digits", "left", "right"}


@pytest.mark.parametrize("module", ["__init__", "_scalar", "_array", "_convert", "_evaluate",
                                    "_derivative", "_errors", "_complex"])
def test_docstring_examples_run(module):
    """The examples in the docstrings are true."""
    import doctest
    import importlib

    name = "gradcheck.mp" if module == "__init__" else f"gradcheck.mp.{module}"
    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0 and result.failed == 0
