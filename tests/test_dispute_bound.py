"""dispute's bound comes from the problem, not from how the definition is spelled.

bound_i = 2 ulp + 8 (|y_i| + kappa_i) u / ulp(y_i), kappa_i = sum_j |x_j dy_i/dx_j|: checked by
hand on a closed form, held equal between algebraically equal definitions (gelu with erf and
with erfc, tanh-gelu with tanh and with sigmoid, softmax with and without max subtraction),
never pooled across entries (an entry's bound does not change with the rest of the sample),
wide where the rotary embedding amplifies its positions' rounding (the accurate float32-angle
kernel stays accurate, with a float64 or a float32 frequency table), and tight where the
function is well conditioned (extra rounding errors and a wrong gelu tail are caught).
"""
from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

from gradcheck import dispute
from gradcheck._core.formats import ulp
from gradcheck._lowp.definitions import gelu as gelu_erf
from gradcheck._lowp.definitions import gelu_erfc
from gradcheck.subjects import (
    matvec_fast,
    matvec_inputs,
    matvec_math,
    matvec_reference,
    rope_fast,
    rope_inputs,
    rope_reference,
)

BF16 = ml_dtypes.bfloat16
U32 = 2.0**-24


def bf(y) -> np.ndarray:
    return np.asarray(y, dtype=np.float32).astype(BF16)


def _one(x):
    return x.reshape(-1)[:1] * 0 + 1


def _inner(x):
    one = _one(x)
    return np.sqrt(2 / np.arccos(-one)) * (x + (one * 44715 / 1000000) * x ** 3)


def gelu_tanh(x):
    return x * (1 + np.tanh(_inner(x))) / 2


def gelu_sigmoid(x):
    return x / (1 + np.exp(-2 * _inner(x)))


def softmax_max(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def softmax_plain(x):
    e = np.exp(x)
    return e / e.sum(axis=-1, keepdims=True)


def rope_with_table(dim: int, dtype) -> object:
    """The rotary embedding written as people write it: a captured frequency table."""
    inv_freq = (10000.0 ** (-np.arange(0, dim, 2) / dim)).astype(dtype)

    def rope_table(x, positions):
        half = x.shape[-1] // 2
        angle = positions[..., None] * inv_freq  # int64 * table: float64 in numpy
        c, s = np.cos(angle), np.sin(angle)
        x1, x2 = x[..., :half], x[..., half:]
        return np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], axis=-1)

    return rope_table


# -- the formula, by hand ----------------------------------------------------------------------


def test_the_bound_of_exp_is_the_closed_form():
    """exp: kappa = |x e^x|, so bound = 2 + 8 (1 + |x|) e^x u / ulp(e^x) at every entry."""
    x = bf(np.linspace(-20, 80, 41))
    r = dispute(np.exp, (x,), {"c": bf(np.exp(x.astype(np.float64)))}, "bfloat16")
    xv = x.astype(np.float64)
    y = np.exp(xv)
    want = 2 + 8 * (1 + np.abs(xv)) * y * U32 / ulp(y, "bfloat16")
    np.testing.assert_allclose(r.bounds, want, rtol=1e-9)
    np.testing.assert_allclose(r.sensitivity, np.abs(xv) * y, rtol=1e-9)
    # at x = 80 the exponent's rounding is amplified 80x: about 80 * 8 * 2**-16 ulp, still small
    assert r.bounds.max() < 2.1 and r.broken == ()


def test_the_working_precision_sets_the_scale():
    """working='bfloat16' (u = 2**-8) allows for bfloat16 roundings carried through exp:
    8 (1 + |x|) u / ulp(y) is 4 ulp or more at every entry."""
    x = bf(np.linspace(0.5, 4, 16))
    r32 = dispute(np.exp, (x,), {"c": bf(np.exp(x.astype(np.float64)))}, "bfloat16")
    r16 = dispute(np.exp, (x,), {"c": bf(np.exp(x.astype(np.float64)))}, "bfloat16", working="bfloat16")
    assert r16.working == "bfloat16" and r16.unit_roundoff == 2.0**-8
    assert (r16.bounds > r32.bounds + 3.9).all() and "bfloat16 working precision" in r16.bound_reason
    with pytest.raises(ValueError, match="unknown floating-point format 'float8'.*bfloat16"):
        dispute(np.exp, (x,), {"c": x}, "bfloat16", working="float8")


# -- the same problem, spelled two ways ---------------------------------------------------------


def _gelu_inputs() -> np.ndarray:
    rng = np.random.default_rng(3)
    return np.concatenate([bf(rng.standard_normal(192) * 3), bf(np.linspace(-9, -4, 64))])


@pytest.mark.parametrize("pair", [(gelu_erf, gelu_erfc), (gelu_tanh, gelu_sigmoid)],
                         ids=["erf-erfc", "tanh-sigmoid"])
def test_equal_definitions_give_equal_bounds_and_verdicts(pair):
    """Candidates: the erf (tanh) spelling run in float32 and rounded once (it cancels to 0
    in the far negative tail, where the exact value is about -1e-17), the erfc (sigmoid)
    spelling run in float64 and rounded once (accurate). Both definitions call the first
    broken, the second accurate, with bounds equal to 1e-9."""
    x = _gelu_inputs()
    cancelling = bf(pair[0](x.astype(np.float32)))
    accurate = bf(pair[1](x.astype(np.float64)))
    results = [dispute(fn, (x,), {"cancelling": cancelling, "accurate": accurate}, "bfloat16")
               for fn in pair]
    for r in results:
        assert r.broken == ("cancelling",), r.verdict
        assert r.stats["accurate"].max_ulp <= 0.5 + 2**-10
    np.testing.assert_allclose(results[0].bounds, results[1].bounds, rtol=1e-9)
    # (the cancelling spellings hold fewer exact digits at 40 digits in the tail: 1e-12 apart)
    np.testing.assert_allclose(results[0].errors["cancelling"], results[1].errors["cancelling"], rtol=1e-9)


def _bf16_running_sum(e: np.ndarray) -> np.ndarray:
    """Sums along the last axis with the running sum rounded to bfloat16 at every step."""
    acc = np.zeros(e.shape[:-1], dtype=np.float32)
    for k in range(e.shape[-1]):
        acc = (acc + e[..., k].astype(np.float32)).astype(BF16).astype(np.float32)
    return acc


def test_softmax_with_and_without_max_subtraction():
    """Rows of 32: every output depends on its whole row, and the sensitivities (32 colour
    classes: one per column) are the same for both spellings; so are the verdicts: float32
    with one rounding is accurate, exponentials and a running sum kept in bfloat16 broken."""
    x = bf(np.random.default_rng(4).standard_normal((8, 32)) * 4)
    good = bf(softmax_max(x.astype(np.float32)))
    e = np.exp(x.astype(np.float32)).astype(BF16)
    naive = bf(e.astype(np.float32) / _bf16_running_sum(e)[:, None])
    results = [dispute(fn, (x,), {"good": good, "naive": naive}, "bfloat16")
               for fn in (softmax_max, softmax_plain)]
    np.testing.assert_allclose(results[0].bounds, results[1].bounds, rtol=1e-9)
    assert results[0].broken == results[1].broken == ("naive",)
    assert results[0].stats["good"].max_ulp <= 0.5 + 2**-8


# -- no pooling --------------------------------------------------------------------------------


def test_an_entry_bound_does_not_depend_on_the_rest_of_the_sample():
    """The gelu tail: a probe wrong by a factor 1e10 at x < -6 is broken alone and within a
    sample of other magnitudes; each entry keeps its own bound."""
    tail = bf(np.linspace(-9, -6, 32))
    body = bf(np.random.default_rng(5).standard_normal(256) * 3)
    both = np.concatenate([tail, body])
    exact = bf(gelu_erfc(both.astype(np.float64)))
    wrong = exact.astype(np.float32)
    wrong[:32] *= 1e10
    wrong = bf(wrong)
    alone = dispute(gelu_erfc, (tail,), {"wrong": wrong[:32]}, "bfloat16")
    mixed = dispute(gelu_erfc, (both,), {"wrong": wrong}, "bfloat16")
    assert alone.broken == mixed.broken == ("wrong",)
    assert alone.stats["wrong"].beyond_count == mixed.stats["wrong"].beyond_count == 32
    np.testing.assert_array_equal(alone.bounds, mixed.bounds[:32])
    assert mixed.bounds.max() < 2.1  # gelu is well conditioned in float32 terms everywhere here


# -- the rotary embedding: the fast kernel is accurate, the fallback broken -------------------


@pytest.mark.parametrize("table", [np.float64, np.float32], ids=["table64", "table32"])
@pytest.mark.parametrize("start, stop", [(0, 8192), (65536, 131072)])
def test_rotary_with_a_frequency_table_is_judged_right(table, start, stop):
    x, pos = rope_inputs(rows=48, dim=64, start=start, stop=stop, seed=11)
    fast, reference = rope_fast(x, pos), rope_reference(x, pos)
    math_fn = rope_with_table(64, table)
    r = dispute(math_fn, (x, pos), {"fast": fast, "reference": reference}, "bfloat16")
    assert r.most_accurate == "fast" and r.broken == ("reference",), str(r)
    assert r.ratio("fast", "reference") > 100
    assert float(np.max(r.errors["fast"] / r.bounds)) < 0.75  # not a near miss
    assert "relative rounding of 'positions'" in r.bound_reason
    plain = dispute(math_fn, (x, pos), {"fast": fast}, "bfloat16", bound_ulps=2)
    assert plain.broken == ("fast",)


def test_the_widest_bound_is_explained_in_words():
    """At positions near 4,000 the angle's rounding is carried 4,000-fold: the result names
    the input and the factor, and the factor is |p dy/dp| computed by hand."""
    x, pos = rope_inputs(rows=16, dim=64, start=3990, stop=4000, seed=2)
    math_fn = rope_with_table(64, np.float64)
    r = dispute(math_fn, (x, pos), {"fast": rope_fast(x, pos)}, "bfloat16")
    ix = np.unravel_index(int(np.argmax(r.bounds)), r.bounds.shape)
    row, col = int(ix[0]), int(ix[1])
    half = 32
    i = col % half
    theta = 10000.0 ** (-2 * i / 64)
    a = pos[row] * theta
    x1, x2 = x[row, i].astype(np.float64), x[row, i + half].astype(np.float64)
    dy = -x1 * math.sin(a) - x2 * math.cos(a) if col < half else -x2 * math.sin(a) + x1 * math.cos(a)
    assert float(r.sensitivity_by_input["positions"][ix]) == pytest.approx(abs(a * dy), rel=1e-9)
    words = r.why(ix)
    assert f"moves by {abs(a * dy):,.0f} times a relative rounding of 'positions'" in words or \
        "times a relative rounding of 'positions'" in words


def test_a_float32_rotary_kernel_with_the_same_table_is_not_broken():
    """float32 target: a numpy float32 kernel holding the definition's table in float32 is as
    accurate as float32 allows; the same kernel with its angle rounded to bfloat16 is not."""
    x, pos = rope_inputs(rows=16, dim=64, start=65536, stop=131072, seed=2)
    x32, half = x.astype(np.float32), 32
    table = (10000.0 ** (-np.arange(0, 64, 2) / 64)).astype(np.float32)

    def kernel(angle):
        c, s = np.cos(angle), np.sin(angle)
        x1, x2 = x32[:, :half], x32[:, half:]
        return np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], axis=-1)

    angle = pos.astype(np.float32)[:, None] * table
    cands = {"f32": kernel(angle), "bf16 angle": kernel(angle.astype(BF16).astype(np.float32))}
    r = dispute(rope_with_table(64, np.float64), (x32, pos), cands, "float32")
    assert r.broken == ("bf16 angle",) and r.most_accurate == "f32", str(r)
    assert r.stats["f32"].max_ulp > 1000  # cancellations: far from the exact value, and rightly so


def test_the_widened_bound_still_catches_an_extra_rounding_error():
    """Negative control: the accurate kernel moved 3 ulps at its well-conditioned entries
    (where the bound stays near 2 ulps) is broken."""
    x, pos = rope_inputs(rows=48, dim=64, start=65536, stop=131072, seed=11)
    fast = rope_fast(x, pos)
    bits = fast.view(np.uint16).astype(np.int64)
    y = fast.astype(np.float64)
    big = np.abs(y) > 1.0  # far from cancelling
    moved = np.where(big, bits + 3, bits).astype(np.uint16).view(BF16)
    r = dispute(rope_with_table(64, np.float64), (x, pos), {"fast": fast, "moved": moved}, "bfloat16")
    assert r.broken == ("moved",) and r.most_accurate == "fast"


# -- the dot product: bfloat16 accumulation is broken, float32 accumulation is not -----------


def test_dot_product_pair_with_a_float64_definition():
    """The definition is a contraction: exact kernels, the sensitivity 2 |a| @ |v| in closed form."""
    a, v = matvec_inputs(rows=24, n=512, seed=2)
    ones = np.ones(1)  # a float64 array in the definition: numpy promotes to float64

    def matvec64(p, q):
        return (p * ones) @ q

    cands = {"fast": matvec_fast(a, v), "reference": matvec_reference(a, v)}
    for fn in (matvec_math, matvec64):
        r = dispute(fn, (a, v), cands, "bfloat16")
        assert r.broken == ("fast",) and r.most_accurate == "reference", str(r)
        assert r.stats["reference"].max_ulp <= 0.5 + 2**-10
    r = dispute(matvec_math, (a, v), cands, "bfloat16")
    assert r.exact_how.startswith("exact kernels")
    want = 2 * np.abs(a.astype(np.float64)) @ np.abs(v.astype(np.float64))
    np.testing.assert_allclose(r.sensitivity, want, rtol=1e-12)
