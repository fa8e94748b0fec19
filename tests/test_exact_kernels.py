"""The exact kernels (gradcheck.mp._exactsum) and the numpy vocabulary that reaches them.

Checked against references that share nothing with the kernels: Python's ``Fraction``
arithmetic (exact sums and products of binary floats), mpmath's ``fsum``/``fdot`` at a
precision wide enough to be exact, and numpy itself on integer-valued data (where float64
arithmetic is exact, so the shapes and entries of every form must agree bit for bit).
Cancellation is the adversary: sums of x and -x with a tiny remainder, huge and tiny terms,
values on a rounding midpoint of the target formats.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from fractions import Fraction

import ml_dtypes
import mpmath
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import gradcheck.mp._exact as exact_module
from gradcheck._core.formats import round_to_format
from gradcheck.mp import evaluate
from gradcheck.mp._exact import disabled, probe
from gradcheck.mp._exactsum import _low_exponents, exact_cumsum, exact_matmul, exact_sum, limbs, magnitude_matmul

BF16 = ml_dtypes.bfloat16
FORMATS = {"bfloat16": BF16, "float16": np.float16, "float32": np.float32, "float64": np.float64}


def fraction_sum(values) -> Fraction:
    return sum((Fraction(float(v)) for v in values), Fraction(0))


def rn64(q: Fraction) -> float:
    """Fraction -> nearest float64 (CPython's int/int division is correctly rounded)."""
    return q.numerator / q.denominator


def expansion(comps) -> Fraction:
    return sum((Fraction(float(c)) for c in comps), Fraction(0))


def assert_expansion(comps, exact: Fraction) -> None:
    """Each component is the float64 nearest to what the previous ones leave of the exact
    value (c0 the correctly rounded result), zero once nothing is left."""
    left = exact
    for c in comps:
        assert float(c) == rn64(left), (list(comps), float(exact))
        left -= Fraction(float(c))


# -- values of every width, including the adversarial ones --------------------------------------


def _narrow(fmt: str):
    """Finite values of a format, widened to float64."""
    dt = FORMATS[fmt]
    if fmt == "float64":
        return st.floats(allow_nan=False, allow_infinity=False, min_value=-1e300, max_value=1e300)
    bits = {"bfloat16": 16, "float16": 16, "float32": 32}[fmt]
    udt = np.uint16 if bits == 16 else np.uint32
    return st.integers(0, 2**bits - 1).map(lambda b: float(np.array(b, dtype=udt).view(dt))).filter(
        np.isfinite)


@st.composite
def cancelling_rows(draw, fmt: str):
    """A row whose terms mostly cancel: values, their negatives (shuffled), and a few more."""
    vals = draw(st.lists(_narrow(fmt), min_size=1, max_size=24))
    extra = draw(st.lists(_narrow(fmt), min_size=0, max_size=3))
    row = vals + [-v for v in vals] + extra
    order = draw(st.permutations(range(len(row))))
    return np.array([row[i] for i in order])


@pytest.mark.parametrize("fmt", list(FORMATS))
@given(data=st.data())
def test_sums_are_exact_and_correctly_rounded(fmt, data):
    """c0 is the float64 nearest to the exact sum (Fraction arithmetic), each further
    component the nearest to what is left; the same for every prefix of a cumulative sum."""
    row = data.draw(cancelling_rows(fmt))
    assert_expansion(exact_sum(row[None, :], ncomp=6)[0], fraction_sum(row))
    prefixes = exact_cumsum(row[None, :], ncomp=6)[0]
    running = Fraction(0)
    for k, v in enumerate(row):
        running += Fraction(float(v))
        assert_expansion(prefixes[k], running)


@pytest.mark.parametrize("fmt", ["bfloat16", "float16", "float32", "float64"])
@given(data=st.data())
def test_dot_products_are_exact_and_correctly_rounded(fmt, data):
    """Products included (exact in int64 limbs: one limb for narrow values, two for
    float64): the first component is the nearest float64, each further one the nearest to
    what is left."""
    n = data.draw(st.integers(1, 20))
    a = np.array(data.draw(st.lists(_narrow(fmt), min_size=n, max_size=n)))
    b = np.array(data.draw(st.lists(_narrow(fmt), min_size=n, max_size=n)))
    if fmt == "float64":  # keep products inside float64's range (the kernels refuse inf)
        a, b = np.clip(a, -1e150, 1e150), np.clip(b, -1e150, 1e150)
    a = np.concatenate([a, -a])
    b = np.concatenate([b, b * (1 + 2.0**-20) if fmt == "float64" else b])  # near-cancellation
    c = exact_matmul(a[None, None, :], b[None, :, None], ncomp=8)[0, 0, 0]
    assert_expansion(c, sum((Fraction(float(x)) * Fraction(float(y)) for x, y in zip(a, b)), Fraction(0)))


def test_matrix_products_entry_by_entry_against_mpmath():
    """bfloat16 (fast bins), float16, float32 and float64 (limbs) operands; mpmath.fdot at
    3000 bits (exact for these) is the reference, entry by entry, and so is its rounding to
    each target format."""
    rng = np.random.default_rng(0)
    for fmt, dt in FORMATS.items():
        spread = 4 if fmt == "float16" else 20  # float16 overflows past 65504
        a = (rng.standard_normal((3, 5, 40)) * np.exp2(rng.integers(-spread, spread, (3, 5, 40)))).astype(dt)
        b = (rng.standard_normal((3, 40, 4))).astype(dt)
        got = exact_matmul(a.astype(np.float64), b.astype(np.float64), ncomp=4)
        with mpmath.workprec(3000):
            for g, i, j in np.ndindex(3, 5, 4):
                want = mpmath.fdot([mpmath.mpf(float(v)) for v in a[g, i]],
                                   [mpmath.mpf(float(v)) for v in b[g, :, j]])
                assert got[g, i, j, 0] == float(want), (fmt, g, i, j)
                assert sum(mpmath.mpf(float(v)) for v in got[g, i, j]) == want
                for target in ("bfloat16", "float16", "float32"):
                    assert round_to_format([want], target)[0] == round_to_format(
                        [sum(mpmath.mpf(float(v)) for v in got[g, i, j])], target)[0]


def test_the_sensitivity_product_is_the_product_of_magnitudes():
    """The float64 product behind a contraction's sensitivity (numba, no BLAS) against a
    Fraction sum per entry: within a few float64 roundings, zeros and batches included."""
    rng = np.random.default_rng(3)
    a = np.abs(rng.standard_normal((2, 3, 17))) * (rng.random((2, 3, 17)) < 0.7)
    b = np.abs(rng.standard_normal((2, 17, 5))) * np.exp2(rng.integers(-30, 30, (2, 17, 5)))
    got = magnitude_matmul(a, b)
    assert got.shape == (2, 3, 5)
    for g, i, j in np.ndindex(2, 3, 5):
        want = float(sum((Fraction(float(x)) * Fraction(float(y)) for x, y in zip(a[g, i], b[g, :, j])),
                         Fraction(0)))
        assert abs(got[g, i, j] - want) <= 20 * 2.0**-53 * want, (g, i, j)
    assert not magnitude_matmul(np.zeros((1, 2, 3)), b[:1, :3]).any()


def test_limbs_hold_the_values_exactly():
    x = np.array([0.0, 1.5, -3.0, 2.0**-1074, np.finfo(np.float64).max, 1 / 3, -0.1])
    m, e = limbs(x)
    assert m.shape[-1] == 2 and (np.abs(m) < 2**31).all()
    back = [sum(Fraction(int(mm)) * Fraction(2) ** int(ee) for mm, ee in zip(m[i], e[i])) for i in range(x.size)]
    assert back == [Fraction(v) for v in x]
    m, e = limbs(np.array([1.0, -0.75, 3.0]).astype(BF16).astype(np.float64))
    assert m.shape[-1] == 1



@pytest.mark.parametrize("fmt", ["bfloat16", "float16", "float32"])
def test_the_narrow_path_reads_the_same_exponents_as_the_limbs(fmt):
    """The matmul's narrow path reads each value's lowest-bit exponent and width from its
    bits; the limbs (checked above against Fraction) say the same, zeros and subnormals
    included."""
    rng = np.random.default_rng(5)
    spread = 5 if fmt == "float16" else 40
    x = (rng.standard_normal(3000) * np.exp2(rng.integers(-spread, spread, 3000))).astype(FORMATS[fmt])
    x = x.astype(np.float64)
    x[::7], x[3], x[5] = 0.0, 2.0**-1074, -3 * 2.0**-1070
    e = np.empty(x.size, np.int64)
    widest = _low_exponents(x.view(np.int64), e)
    m, le = limbs(x)
    assert m.shape[-1] == 1 and (le[:, 0] == e).all()
    assert widest == int(np.frexp(float(np.abs(m).max()))[1])


def test_a_wide_operand_against_a_narrow_one_is_exact(monkeypatch):
    """34-bit values times 1-bit ones, 4 terms: their products and sums fit the float64 bins,
    so the narrow path takes them (the limbs kernels are not called): Fraction sums say the
    results are exact."""
    import gradcheck.mp._exactsum as sums

    def refuse(*args):
        raise AssertionError("the limbs path was taken")

    monkeypatch.setattr(sums, "_matmul_limbs_serial", refuse)
    monkeypatch.setattr(sums, "_matmul_limbs_threads", refuse)
    rng = np.random.default_rng(6)
    a = (rng.integers(2**33, 2**34, (2, 3, 4)) * rng.choice([-1, 1], (2, 3, 4))).astype(np.float64)
    a *= np.exp2(rng.integers(-40, 0, (2, 3, 4)))
    b = np.exp2(rng.integers(-3, 3, (2, 4, 5)).astype(np.float64)) * rng.choice([-1, 1], (2, 4, 5))
    got = exact_matmul(a, b, ncomp=2)
    for g, i, j in np.ndindex(2, 3, 5):
        want = sum((Fraction(float(p)) * Fraction(float(q)) for p, q in zip(a[g, i], b[g, :, j])), Fraction(0))
        assert got[g, i, j, 0] == rn64(want)
        assert Fraction(float(got[g, i, j, 0])) + Fraction(float(got[g, i, j, 1])) == want

# -- every numpy form of the vocabulary, against numpy on integer-valued data --------------------


FORMS = {
    "a @ b": lambda a, b: a @ b,
    "np.matmul batched": lambda a, b: np.matmul(a[None], b[None]),
    "np.dot": lambda a, b: np.dot(a, b),
    "np.dot matrix-vector": lambda a, b: np.dot(a, b[:, 0]),
    "np.inner": lambda a, b: np.inner(a, b.T),
    "np.vdot": lambda a, b: np.vdot(a[:, :2], b[:3]),
    "np.tensordot": lambda a, b: np.tensordot(a, b, axes=([1], [0])),
    "np.einsum ij,jk->ki": lambda a, b: np.einsum("ij,jk->ki", a, b),
    "np.einsum implicit": lambda a, b: np.einsum("ij,jk", a, b),
    "np.einsum one operand": lambda a, b: np.einsum("ij->j", a),
    "np.sum": lambda a, b: np.sum(a),
    "x.sum(axis, keepdims)": lambda a, b: a.sum(axis=1, keepdims=True),
    "np.add.reduce": lambda a, b: np.add.reduce(a, axis=0),
    "np.cumsum": lambda a, b: np.cumsum(a, axis=1),
    "np.cumsum flat": lambda a, b: np.cumsum(a),
    "np.convolve full": lambda a, b: np.convolve(a[0], b[:, 0]),
    "np.convolve same": lambda a, b: np.convolve(a[0], b[:3, 0], mode="same"),
    "np.convolve valid, longer second": lambda a, b: np.convolve(b[:3, 0], a[0], mode="valid"),
    "np.correlate": lambda a, b: np.correlate(a[0], b[:3, 0]),
    "np.correlate same, longer second": lambda a, b: np.correlate(b[:3, 0], a[0], mode="same"),
    "rearranged": lambda a, b: np.concatenate([a, -a]).T[::-1].reshape(-1, 6) @ np.ones((6, 1)),
}


@pytest.mark.parametrize("form", list(FORMS))
def test_every_form_computes_what_numpy_computes(form, monkeypatch):
    """Integer-valued bfloat16 data: numpy's float64 result is exact. The probe (float
    arrays, kernels on threads) and the MPArray hooks (inside an arbitrary-precision
    evaluation) must both give it, shaped as numpy shapes it."""
    rng = np.random.default_rng(1)
    a = rng.integers(-20, 20, (3, 5)).astype(BF16)
    b = rng.integers(-20, 20, (5, 2)).astype(BF16)
    fn = FORMS[form]
    want = np.asarray(fn(a.astype(np.float64), b.astype(np.float64)))
    found = probe(fn, (a, b), 133)
    assert found is not None, form
    np.testing.assert_array_equal(found.comps[..., 0], want)
    monkeypatch.setattr(exact_module, "INTERCEPT_FROM", 0)  # the hooks for these small arrays too
    y = evaluate(lambda v: fn(v, b), a, dps=30)
    got = np.array([float(e.value) for e in np.ravel(np.asarray(y, dtype=object))]).reshape(np.shape(y))
    np.testing.assert_array_equal(got, want)


def test_a_definition_with_other_operations_leaves_the_probe_and_keeps_its_kernels(monkeypatch):
    """np.exp is not a contraction: the probe gives up; the evaluation at arbitrary
    precision still computes the contraction exactly (its operands are exact), where the
    element-by-element sum rounds every product and partial sum to 30 digits."""
    a = np.array([[2.0**200, 1.0, -(2.0**200)]])
    b = np.array([[1.0], [3.0], [1.0]])
    assert probe(lambda p, q: np.exp(p @ q), (a, b), 133) is None
    monkeypatch.setattr(exact_module, "INTERCEPT_FROM", 0)
    y = evaluate(lambda p: np.exp(-(p @ b)), a, dps=30)
    with disabled():
        plain = evaluate(lambda p: np.exp(-(p @ b)), a, dps=30)
    with mpmath.workdps(40):
        assert abs(y[0, 0].value - mpmath.exp(-3)) < mpmath.mpf(10) ** -29
        assert abs(plain[0, 0].value - mpmath.exp(-3)) > 0.5  # 3 was lost at 30 digits


def test_small_contractions_stay_on_the_object_loop():
    """Below INTERCEPT_FROM operand entries the kernels are not called (numba need not load
    for the referee's small evaluations): 2**200 + 3 - 2**200 is lost at 30 digits."""
    a = np.array([[2.0**200, 1.0, -(2.0**200)]])
    b = np.array([[1.0], [3.0], [1.0]])
    y = evaluate(lambda p: p @ b, a, dps=30)
    assert y[0, 0].value != 3


def test_values_that_float64_cannot_hold_are_left_to_mpmath():
    """An operand computed at arbitrary precision (1/3 to 30 digits) is not exact in float64:
    the contraction runs element by element, and agrees with mpmath."""
    x = np.array([1.0, 2.0, 3.0])
    y = evaluate(lambda v: (v / 3) @ (v / 3), x, dps=30)
    with mpmath.workdps(30):
        assert abs(y.value - mpmath.mpf(14) / 9) < mpmath.mpf(10) ** -28
    with pytest.raises(ValueError, match="finite"):
        exact_sum(np.array([[np.inf, 1.0]]))


def test_a_forked_worker_can_use_the_kernels_after_its_parent_used_threads():
    """GNU OpenMP kills a forked child that starts threads after its parent did: inside a
    worker process the kernels run serially."""
    code = textwrap.dedent("""
        import multiprocessing as mp, numpy as np
        from gradcheck.mp._exact import probe
        a = np.arange(64.0).reshape(8, 8)
        probe(lambda p: p @ p, (a,), 60)                   # threads in the parent
        def child(_):
            return float(probe(lambda p: p @ p, (a,), 60).comps[0, 0, 0])
        with mp.get_context("fork").Pool(1) as pool:
            print(pool.map(child, [0])[0] == float((a @ a)[0, 0]))
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert out.stdout.strip() == "True", out.stderr
