"""The bfloat16 C subject kernels (kernels/rope_bf16.c, kernels/dot_bf16.c) and their verdicts."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import gradcheck
from gradcheck._core.formats import BFLOAT16, from_bits, round_to_format
from gradcheck.subjects import (
    bf16_round_c,
    matvec_fast,
    matvec_inputs,
    matvec_math,
    matvec_reference,
    rope_fast,
    rope_inputs,
    rope_math,
    rope_reference,
)

BF16 = ml_dtypes.bfloat16


# -- the kernels' own float32 -> bfloat16 rounding --------------------------------------


def _bits_to_f32(bits: np.ndarray) -> np.ndarray:
    return np.asarray(bits, dtype=np.uint32).view(np.float32)


def test_c_rounding_matches_round_to_format_on_edge_patterns():
    """Ties (low half exactly 0x8000) both ways, just off ties, the carry into the exponent,
    overflow to inf, subnormals, zeros, infinities: bit for bit equal to the bit-level RNE of
    gradcheck._core.formats (NaN only as NaN)."""
    highs = np.array([0x0000, 0x0001, 0x007F, 0x0080, 0x3F80, 0x3F81, 0x3FFF, 0x7F7F, 0x7F7E,
                      0x8000, 0x8001, 0xBF80, 0xFF7F], dtype=np.uint32)
    lows = np.array([0x0000, 0x0001, 0x7FFF, 0x8000, 0x8001, 0xFFFF], dtype=np.uint32)
    bits = ((highs[:, None] << 16) | lows[None, :]).reshape(-1)
    bits = np.concatenate([bits, [0x7F800000, 0xFF800000]]).astype(np.uint32)
    x = _bits_to_f32(bits)
    got = bf16_round_c(x).view(np.uint16)
    want = round_to_format(x, BFLOAT16)
    assert np.array_equal(got, want)
    # the ties really are ties to even: 1 + 2**-8 -> 1.0, (1 + 2**-7) + 2**-8 -> 1 + 2**-6
    assert bf16_round_c(np.float32(1 + 2**-8)).item() == 1.0
    assert bf16_round_c(np.float32(1 + 2**-7 + 2**-8)).item() == 1 + 2**-6
    assert np.isinf(bf16_round_c(np.float32(3.3961776e38)).item())  # rounds past the max


def test_c_rounding_matches_round_to_format_on_random_patterns():
    """One million random float32 bit patterns (all exponents, NaNs included)."""
    bits = np.random.default_rng(0).integers(0, 2**32, 1_000_000, dtype=np.uint64).astype(np.uint32)
    x = _bits_to_f32(bits)
    got = bf16_round_c(x).view(np.uint16)
    with np.errstate(invalid="ignore"):  # widening signalling NaNs warns
        want = round_to_format(x, BFLOAT16)
    nan = np.isnan(x)
    assert np.array_equal(got[~nan], want[~nan])
    assert np.isnan(from_bits(got[nan], BFLOAT16).astype(np.float32)).all()


# -- rotary embedding ---------------------------------------------------------------------


def test_rope_at_position_zero_is_the_identity():
    x, _ = rope_inputs(rows=4, dim=16)
    zero = np.zeros(4, dtype=np.int64)
    for kernel in (rope_fast, rope_reference):
        y = kernel(x, zero)
        assert y.dtype == BF16 and y.shape == x.shape
        assert np.array_equal(y.view(np.uint16), x.view(np.uint16))


def test_rope_pair_differs_only_in_the_angle_rounding():
    """With dim 2 the only frequency is 1, so the angle is the position; integers up to 256
    are bfloat16 values, so rounding the angle changes nothing and the kernels agree bit for
    bit. At position 1001 (not a bfloat16 value) they do not."""
    x = round_to_format(np.random.default_rng(1).standard_normal((257, 2)), BFLOAT16, as_dtype=True)
    pos = np.arange(257, dtype=np.int64)
    assert np.array_equal(rope_fast(x, pos).view(np.uint16), rope_reference(x, pos).view(np.uint16))
    far = np.full(257, 1001, dtype=np.int64)
    assert not np.array_equal(rope_fast(x, far).view(np.uint16), rope_reference(x, far).view(np.uint16))


def test_rope_fast_is_close_to_the_definition_at_small_positions():
    x, pos = rope_inputs(rows=32, dim=64, start=0)
    y = rope_fast(x, pos).astype(np.float64)
    exact = rope_math(x.astype(np.float64), pos)  # float64 is plenty at positions < 32
    assert np.max(np.abs(y - exact) / np.maximum(np.abs(exact), 2**-6)) < 2**-7


def test_rope_broadcasts_positions_over_heads_and_validates():
    x, pos = rope_inputs(rows=8, dim=16, heads=3, start=100)
    y = rope_fast(x, pos)
    assert y.shape == (3, 8, 16)
    for h in range(3):
        assert np.array_equal(y[h].view(np.uint16), rope_fast(x[h], pos).view(np.uint16))
    with pytest.raises(ValueError, match="even last dimension"):
        rope_fast(x[..., :15], pos)
    with pytest.raises(ValueError, match=r"positions of shape \(5,\).*\(3, 8, 16\)"):
        rope_fast(x, pos[:5])
    with pytest.raises(TypeError, match="integers"):
        rope_fast(x, pos.astype(np.float32))


def test_rope_math_runs_in_float32_when_given_float32():
    x, pos = rope_inputs(rows=4, dim=8, start=10)
    assert rope_math(x.astype(np.float32), pos).dtype == np.float32


def test_rope_verdict_fast_is_the_accurate_one_at_large_positions():
    x, pos = rope_inputs(rows=96, dim=64, start=1000, stop=8000, seed=3)
    r = gradcheck.dispute(rope_math, (x, pos),
                          {"fast": rope_fast(x, pos), "reference": rope_reference(x, pos)}, "bfloat16")
    assert r.most_accurate == "fast"
    assert r.broken == ("reference",)
    ratio = r.ratio("fast", "reference")
    assert ratio > 100  # measured: several hundred to a few thousand
    text = str(r)
    assert f"fast is {ratio:.0f}x more accurate than reference" in text
    assert "reference is broken" in text and "fast is within its bound" in text
    # the fast kernel is as good as the definition evaluated in float32 and rounded once
    assert r.stats["fast"].p99_ulp <= 0.5 and r.stats["fast"].correctly_rounded > 0.98


# -- the bfloat16 matrix-vector pair -------------------------------------------------------


def _f32(v) -> np.ndarray:
    return np.asarray(v).astype(np.float32)


def test_matvec_reference_is_float32_accumulation_rounded_once():
    a, v = matvec_inputs(rows=8, n=300)
    products = _f32(a) * _f32(v)  # exact: 8-bit by 8-bit mantissas
    acc = np.cumsum(products, axis=1, dtype=np.float32)[:, -1]  # sequential, like the C loop
    want = round_to_format(acc, BFLOAT16)
    assert np.array_equal(matvec_reference(a, v).view(np.uint16), want)


def test_matvec_fast_rounds_the_running_sum_to_bfloat16():
    a, v = matvec_inputs(rows=8, n=300)
    products = _f32(a) * _f32(v)
    acc = np.zeros(8, dtype=np.float32)
    for k in range(300):
        acc = from_bits(round_to_format(acc + products[:, k], BFLOAT16), BFLOAT16).astype(np.float32)
    assert np.array_equal(matvec_fast(a, v).view(np.uint16), acc.astype(BF16).view(np.uint16))
    with pytest.raises(ValueError, match=r"\(8, 300\) and \(299,\)"):
        matvec_fast(a, v[:299])


def test_matvec_verdict_fast_is_broken():
    a, v = matvec_inputs(rows=24, n=512, seed=2)
    r = gradcheck.dispute(matvec_math, (a, v),
                          {"fast": matvec_fast(a, v), "reference": matvec_reference(a, v)}, "bfloat16")
    assert r.broken == ("fast",)
    assert r.most_accurate == "reference"
    assert r.stats["reference"].max_ulp <= 0.5 + 2**-10  # float32 sum rounded once
    assert "fast is broken" in r.verdict
