"""Every engine gives serial's verdicts on the test zoo (issue #3): batched and compiled.

processes and executor run the zoo in their own modules. Here each case of
``zoo.CASES``, its correct claim and its buggy one, goes through the batched engine (a
vectorized ``f``) and the compiled engine (an ``@njit`` twin of ``f``): the verdict codes
are serial's, entry for entry, and the buggy claim is flagged MISMATCH at exactly
``case.bug_entries``.

Compile time: the compiled engine compiles its kernel once per njit function and per
(dtype, ndim, scalar or array output) of the input, 2-3 s each. The zoo needs four
kernels whatever its twins (float64 2-d, float32 2-d and float64 1-d scalar; float64
1-d array), and gets no more: ``zoo_2d`` is every zoo function of a matrix (float64 and
float32), ``zoo_1d`` every scalar one of a vector, each telling the cases apart by shape
(distinct in the zoo, checked below), and ``zoo_softmax`` is the one array output. One
twin for both ndims needs the same four kernels but compiled ~1.5 s slower in total
(each specialization compiles every branch, and the kernel inlines them).
"""
from __future__ import annotations

import numba
import numpy as np
import pytest
from zoo import A3, B3, C8, CASES, softmax

from gradcheck import Verdict, check

IDS = [c.name for c in CASES]


# -- batched: an honest vectorized f -----------------------------------------------------
def vectorized(f, ndim):
    """``f`` over a leading batch axis: ``X`` of shape ``(B, *x.shape)`` gives the stack of
    ``f(X[b])``. A single input (``ndim`` axes) is ``f`` itself, as ``check`` evaluates ``f``
    at ``x`` (and the referee at its arbitrary-precision copies) unbatched."""
    def f_batched(X):
        X = np.asarray(X)
        if X.ndim == ndim:
            return f(X)
        assert X.ndim == ndim + 1, X.shape
        return np.stack([np.asarray(f(row)) for row in X])
    return f_batched


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_batched_gives_serials_verdicts_on_the_zoo(case):
    """The batched engine, correct and buggy claims: serial's verdict codes, entry for
    entry; the bug flagged MISMATCH at exactly its entries, the correct claim nowhere."""
    f = vectorized(case.f, case.x.ndim)
    for grad, flagged in ((case.grad, set()), (case.buggy, case.bug_entries)):
        serial = check(case.f, case.x, grad, engine="serial", config=case.config)
        batched = check(f, case.x, grad, engine="batched", vectorized=True, config=case.config)
        assert batched.engine == "batched"
        np.testing.assert_array_equal(batched.codes, serial.codes)
        assert set(batched.entries(Verdict.MISMATCH)) == flagged, str(batched)


# -- compiled: njit twins of the zoo's functions -----------------------------------------
@numba.njit
def _numpy_sum(t):
    # np.sum's pairwise summation for 8 <= t.size <= 128 terms (eight accumulators, then
    # the tail), in t's dtype: the twins sum their terms in numpy's order.
    n = t.size
    r0, r1, r2, r3, r4, r5, r6, r7 = t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7]
    k = 8
    while k + 8 <= n:
        r0 += t[k]
        r1 += t[k + 1]
        r2 += t[k + 2]
        r3 += t[k + 3]
        r4 += t[k + 4]
        r5 += t[k + 5]
        r6 += t[k + 6]
        r7 += t[k + 7]
        k += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while k < n:
        res += t[k]
        k += 1
    return res


@numba.njit
def zoo_2d(x):
    """The njit twin of every zoo function of a matrix, chosen by the matrix's shape (each
    is distinct; another shape raises). Same math, in the input's dtype (float32 stays
    float32), terms summed in numpy's order."""
    v = x.reshape(x.size)
    n = v.size
    t = np.empty_like(v)
    r, c = x.shape
    if r == 7 and c == 5:                  # single entry: sum(sin(x) * x**2)
        for i in range(n):
            t[i] = np.sin(v[i]) * v[i] ** 2
        return _numpy_sum(t)
    if r == 4 and c == 6:                  # scale on every entry: sum(tanh(x)) * sum(x**2)
        for i in range(n):
            t[i] = np.tanh(v[i])
        s = _numpy_sum(t)
        for i in range(n):
            t[i] = v[i] ** 2
        return s * _numpy_sum(t)
    if r == 4 and c == 3:                  # matmul tanh: sum(tanh(A3 @ w) * B3)
        s = 0.0
        for i in range(A3.shape[0]):       # A3 @ w without BLAS (numba's needs scipy)
            for j in range(3):
                a = 0.0
                for k in range(4):
                    a += A3[i, k] * x[k, j]
                s += np.tanh(a) * B3[i, j]
        return s
    if r == 8 and c == 8:                  # float32: sum(tanh(x) * x), in float32
        for i in range(n):
            t[i] = np.tanh(v[i]) * v[i]
        return _numpy_sum(t)
    if r == 4 and c == 5:                  # one row: sum(x @ C8) + sum(x**3) / 3
        s = 0.0
        for i in range(4):
            for k in range(5):
                s += x[i, k] * (C8[k, 0] + C8[k, 1])
        for i in range(n):
            t[i] = v[i] ** 3
        return s + _numpy_sum(t) / 3
    raise ValueError("no zoo case has a matrix of this shape")


@numba.njit
def zoo_1d(x):
    """The njit twin of every scalar-valued zoo function of a vector, chosen by its
    length (each is distinct; another length raises)."""
    n = x.size
    t = np.empty_like(x)
    if n == 6:                             # zero true gradient: sum(x[:3]**2) + exp(x[0])
        return (x[0] ** 2 + x[1] ** 2 + x[2] ** 2) + np.exp(x[0])
    if n == 24:                            # large dynamic range: sum(log1p(x**2))
        for i in range(n):
            t[i] = np.log1p(x[i] ** 2)
        return _numpy_sum(t)
    if n == 10:                            # index shift: sum(exp(0.3 x) * [1..10])
        for i in range(n):
            t[i] = np.exp(0.3 * x[i]) * (i + 1)
        return _numpy_sum(t)
    if n == 4:                             # log near zero: sum(log(x))
        return ((np.log(x[0]) + np.log(x[1])) + np.log(x[2])) + np.log(x[3])
    raise ValueError("no zoo case has a vector of this length")


@numba.njit
def zoo_softmax(x):
    """The njit twin of ``zoo.softmax`` (an array output)."""
    m = x.max()
    e = np.empty_like(x)
    for i in range(x.size):
        e[i] = np.exp(x[i] - m)
    return e / _numpy_sum(e)


def twin_of(case):
    if case.f is softmax:
        return zoo_softmax
    return zoo_2d if case.x.ndim == 2 else zoo_1d


# Every zoo case runs compiled: none needed excluding.
COMPILED_CASES = CASES


def test_the_zoo_inputs_have_distinct_shapes():
    """zoo_2d and zoo_1d tell the cases apart by shape: a new case of an existing shape
    must get its own branch (or twin)."""
    shapes = [c.x.shape for c in CASES if c.f is not softmax]
    assert len(set(shapes)) == len(shapes), shapes


def assert_twin_computes_f(case):
    """The twin is the zoo's f (not something else): at x and at a nearby point (same
    signs, so log stays in its domain), to 1e-12 relative in float64, to 4 float32 ulps
    for the float32 case (numba's tanhf and numpy's SIMD tanh may differ by an ulp)."""
    twin = twin_of(case)
    rtol = 1e-12 if case.x.dtype == np.float64 else 4 * np.finfo(np.float32).eps
    u = np.random.default_rng(0).uniform(-1.0, 1.0, case.x.shape)
    for x in (case.x, (case.x * (1 + 1e-2 * u)).astype(case.x.dtype)):
        got, want = np.asarray(twin(x)), np.asarray(case.f(x))
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=rtol, atol=0)


@pytest.mark.parametrize("case", COMPILED_CASES, ids=[c.name for c in COMPILED_CASES])
def test_compiled_gives_serials_verdicts_on_the_zoo(case):
    """The compiled engine running the njit twin, correct and buggy claims: serial's
    verdict codes (serial running the zoo's own f), entry for entry; the bug flagged
    MISMATCH at exactly its entries, the correct claim nowhere.

    Compiled code cannot run at arbitrary precision, so a compiled f is never adjudicated;
    serial runs with ``adjudicate=False`` too, so that only the engine differs. (With the
    referee, serial would settle the exact zeros of "zero true gradient" as PASS where
    both give UNCHECKED.) The claims stay Python callables, computed once outside the
    kernel."""
    assert_twin_computes_f(case)
    twin = twin_of(case)
    for grad, flagged in ((case.grad, set()), (case.buggy, case.bug_entries)):
        serial = check(case.f, case.x, grad, engine="serial", config=case.config, adjudicate=False)
        compiled = check(twin, case.x, grad, engine="compiled", config=case.config)
        assert compiled.engine == "compiled"
        np.testing.assert_array_equal(compiled.codes, serial.codes)
        assert set(compiled.entries(Verdict.MISMATCH)) == flagged, str(compiled)
