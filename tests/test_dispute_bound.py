"""dispute's default bound measures float32 *arithmetic*, whatever dtypes math_fn uses.

A definition that closes over a float64 frequency table (the usual way to write rotary
embeddings) evaluates in float64 on float32 arrays; the bound must still widen where a float32
kernel cannot help being far from the exact value, so that the accurate kernel is not called
broken, while the bfloat16-angle fallback and a bfloat16-accumulating dot product are.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from gradcheck import dispute
from gradcheck._lowp.dispute_bound import float32_arithmetic
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


# -- the 24-bit evaluation against numpy's own float32 arithmetic ----------------------------


def test_float32_arithmetic_matches_ieee_float32_operation_by_operation():
    """+ - * / and sqrt are correctly rounded in IEEE float32: the 24-bit evaluation must give
    numpy's float32 results bit for bit, float64 constants rounded to float32 first."""
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(200), rng.uniform(0.5, 2.0, 200)
    c64 = rng.standard_normal(200)  # a float64 constant table, not representable in float32

    def fn(u, v):
        return np.sqrt(v) * (u * c64 + v) / (u - 0.1) - v * 3.3

    got, note = float32_arithmetic(fn, (a, b), (200,))
    u, v, c = a.astype(np.float32), b.astype(np.float32), c64.astype(np.float32)
    want = np.sqrt(v) * (u * c + v) / (u - np.float32(0.1)) - v * np.float32(3.3)
    assert note == "" and want.dtype == np.float32
    np.testing.assert_array_equal(got, want.astype(np.float64))
    # negative control: numpy on the float64 constant is not float32 arithmetic
    promoted = fn(a.astype(np.float32), b.astype(np.float32))
    assert promoted.dtype == np.float64 and not np.array_equal(got, promoted)


def test_constants_in_numpy_functions_are_rounded_too():
    """np.einsum / np.where / np.concatenate with a float64 constant: float32 arithmetic."""
    rng = np.random.default_rng(1)
    a, c64 = rng.standard_normal(50), rng.standard_normal(50)

    def fn(u):
        prod = np.einsum("i,i->i", u, c64)
        return np.concatenate([np.where(u > 0, prod, c64[:50]) + 0.0, c64[:0]])

    got, note = float32_arithmetic(fn, (a,), (50,))
    u, c = a.astype(np.float32), c64.astype(np.float32)
    want = np.where(u > 0, u * c, c)
    assert note == ""
    np.testing.assert_array_equal(got, want.astype(np.float64))


def test_float32_arithmetic_says_why_it_cannot_run():
    y, note = float32_arithmetic(lambda v: np.array([float(e) for e in v]), (np.ones(3),), (3,))
    assert y is None and "float_conversion" in note and "not widened" in note
    y, note = float32_arithmetic(lambda v: v[:2], (np.ones(3),), (3,))
    assert y is None and "shape (2,)" in note


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
    assert "24-bit" in r.bound_reason
    # The numpy float32 evaluation came out float64 (the table promotes it): on its own it
    # measures nothing, and the accurate kernel would be broken at entries that cancel.
    assert any("came out float64" in n for n in r.notes)
    plain = dispute(math_fn, (x, pos), {"fast": fast}, "bfloat16", bound_ulps=2)
    assert plain.broken == ("fast",)


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
    a, v = matvec_inputs(rows=24, n=512, seed=2)
    ones = np.ones(1)  # a float64 array in the definition: numpy promotes to float64

    def matvec64(p, q):
        return (p * ones) @ q

    cands = {"fast": matvec_fast(a, v), "reference": matvec_reference(a, v)}
    for fn in (matvec_math, matvec64):
        r = dispute(fn, (a, v), cands, "bfloat16")
        assert r.broken == ("fast",) and r.most_accurate == "reference", str(r)
        assert r.stats["reference"].max_ulp <= 0.5 + 2**-10
