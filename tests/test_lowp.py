"""Correct rounding to float16/bfloat16/float32 from exact values, and errors in ulps."""
from __future__ import annotations

import bisect
import functools
import subprocess
import sys
from decimal import Decimal
from fractions import Fraction

import ml_dtypes
import mpmath
import numpy as np
import pytest

from gradcheck._core.formats import (
    BFLOAT16,
    FLOAT16,
    FLOAT32,
    FLOAT64,
    FloatFormat,
    from_bits,
    is_correctly_rounded,
    resolve_format,
    round_to_format,
    ulp,
    ulp_error,
)

HALVES = [pytest.param(FLOAT16, id="float16"), pytest.param(BFLOAT16, id="bfloat16")]
NARROW = [*HALVES, pytest.param(FLOAT32, id="float32")]
BF16 = ml_dtypes.bfloat16


def _mpf(x: Fraction | float) -> mpmath.mpf:
    """An mpf holding the dyadic `x` exactly (built from integers, never via a float)."""
    f = Fraction(x)
    assert f.denominator & (f.denominator - 1) == 0, "only dyadic values are exact in mpf"
    with mpmath.workprec(max(f.numerator.bit_length(), 1) + 8):  # enough bits to be exact
        return mpmath.mpf(f.numerator) / f.denominator


REPRESENTATIONS = {
    "float64": lambda v: np.array([v], dtype=np.float64),
    "fraction": lambda v: [Fraction(v)],
    "mpf": lambda v: [_mpf(v)],
}
REPR = pytest.mark.parametrize("rep", sorted(REPRESENTATIONS))


@functools.cache
def _table(fmt: FloatFormat) -> tuple[np.ndarray, np.ndarray]:
    """All non-negative finite values of a 16-bit format: their bits and float64 values."""
    bits = np.arange(fmt.inf_bits, dtype=np.uint16)  # increasing bits = increasing values
    return bits, from_bits(bits, fmt).astype(np.float64)


@functools.cache
def _fraction_table(fmt: FloatFormat) -> list[Fraction]:
    return [Fraction(v) for v in _table(fmt)[1]]


def _nearest_reference(x: Fraction, fmt: FloatFormat) -> int:
    """Independent reference: nearest of ALL finite values by exact distance, ties to even."""
    values = _fraction_table(fmt)
    a = abs(x)
    threshold = values[-1] + (values[-1] - values[-2]) / 2
    if a >= threshold:
        bits = fmt.inf_bits
    else:
        i = min(bisect.bisect_left(values, a), len(values) - 1)  # values[i] >= a, or max
        if i == 0 or values[i] == a:
            bits = i
        else:
            below, above = a - values[i - 1], values[i] - a
            bits = i - 1 if below < above or (below == above and (i - 1) % 2 == 0) else i
    return bits | (int(x < 0) << 15)


# --- exhaustive enumeration of the 16-bit formats ------------------------------------

@pytest.mark.parametrize("fmt", HALVES)
def test_every_value_of_the_format_rounds_to_its_own_bits(fmt):
    """All 65536 patterns: finite values (both zeros) are fixed points, inf stays inf, NaN NaN."""
    bits = np.arange(1 << 16, dtype=np.uint16)
    with np.errstate(invalid="ignore"):  # ml_dtypes warns when widening its NaNs
        values = from_bits(bits, fmt).astype(np.float64)
    got = round_to_format(values, fmt)
    finite = np.isfinite(values)
    np.testing.assert_array_equal(got[finite], bits[finite])
    assert set(got[np.isinf(values)].tolist()) == {fmt.inf_bits, fmt.inf_bits | 0x8000}
    assert np.isnan(from_bits(got[np.isnan(values)], fmt).astype(np.float64)).all()


@pytest.mark.parametrize("fmt", HALVES)
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_every_midpoint_rounds_to_the_even_neighbour(fmt, sign):
    """Each exact midpoint between consecutive finite values goes to the even-mantissa side."""
    bits, values = _table(fmt)
    lo, hi = values[:-1], values[1:]
    mid = (lo + hi) / 2
    assert np.array_equal(mid - lo, hi - mid), "test data: float64 holds the midpoints"
    even = np.where(bits[:-1] % 2 == 0, bits[:-1], bits[1:])
    expected = even | np.uint16(0x8000 if sign < 0 else 0)
    np.testing.assert_array_equal(round_to_format(sign * mid, fmt), expected)


@pytest.mark.parametrize("fmt", HALVES)
@pytest.mark.parametrize("direction", ["above", "below"])
def test_points_just_off_each_midpoint_round_to_the_nearer_neighbour(fmt, direction):
    """mid ± one float64 ulp is no tie: it goes to the neighbour on its own side."""
    bits, values = _table(fmt)
    mid = (values[:-1] + values[1:]) / 2
    off = np.nextafter(mid, np.inf if direction == "above" else -np.inf)
    expected = bits[1:] if direction == "above" else bits[:-1]
    np.testing.assert_array_equal(round_to_format(off, fmt), expected)
    np.testing.assert_array_equal(round_to_format(-off, fmt), expected | np.uint16(0x8000))


@pytest.mark.parametrize("fmt", HALVES)
def test_float16_and_bfloat16_match_the_fraction_reference_on_a_sample(fmt):
    """Non-dyadic Fractions, exact midpoints, midpoints ± 2**-300 and ± 2**-300/3, and mpf
    twins of the first 300, all against the brute-force nearest-value reference."""
    rng = np.random.default_rng(7)
    values = _fraction_table(fmt)
    xs = []
    for _ in range(300):  # p/q with odd q: never exactly representable, spread over binades
        base = Fraction(int(rng.integers(1, 2**40)), 2 * int(rng.integers(1, 2**20)) + 1)
        e = int(rng.integers(fmt.emin - fmt.mantissa_bits - 3, fmt.emax + 2))
        shift = e - (base.numerator.bit_length() - base.denominator.bit_length())
        xs.append(base * Fraction(2) ** shift * (1 if rng.random() < 0.5 else -1))
    for i in rng.integers(0, len(values) - 1, 200):
        mid = (values[i] + values[i + 1]) / 2
        tiny, third = Fraction(1, 2**300), Fraction(1, 3 * 2**300)  # dyadic and not
        xs += [mid, mid + tiny, mid - tiny, -mid, mid + third, mid - third]
    expected = [_nearest_reference(x, fmt) for x in xs]
    np.testing.assert_array_equal(round_to_format(xs, fmt), expected)
    # mpf inputs at 150 bits (dyadic, so the reference sees exactly what the mpf holds).
    with mpmath.workprec(150):
        mpfs = [mpmath.mpf(x.numerator) / x.denominator for x in xs[:300]]
    # mpf.man / man_exp drop the sign, so it is put back by hand.
    exact = [Fraction(int(m.man)) * Fraction(2) ** int(m.exp) * (-1 if m < 0 else 1)
             if m else Fraction(0) for m in mpfs]
    np.testing.assert_array_equal(round_to_format(mpfs, fmt),
                                  [_nearest_reference(x, fmt) for x in exact])


def test_float16_matches_numpys_correctly_rounded_cast_from_float64():
    """numpy's float64->float16 cast rounds once from the double bits; we must agree."""
    rng = np.random.default_rng(1)
    x = np.ldexp(rng.uniform(-2, 2, 200_000), rng.integers(-28, 18, 200_000))
    _, values = _table(FLOAT16)
    mid = (values[:-1] + values[1:]) / 2
    x = np.concatenate([x, mid, -mid, np.nextafter(mid, 0), np.nextafter(mid, np.inf)])
    with np.errstate(over="ignore"):
        reference = x.astype(np.float16).view(np.uint16)
    np.testing.assert_array_equal(round_to_format(x, FLOAT16), reference)


# --- double rounding and float32 ----------------------------------------------------

@REPR
def test_float64_to_bfloat16_rounds_once_where_the_float32_chain_double_rounds(rep):
    """1 + 2**-8 + 2**-30 is above the bf16 midpoint: correct is 1.0078125, the chain says 1.0."""
    x = 1 + 2**-8 + 2**-30
    got = round_to_format(REPRESENTATIONS[rep](x), BFLOAT16, as_dtype=True)
    assert got.dtype == np.dtype(BF16)
    assert float(got[0]) == 1.0078125
    # The route ml_dtypes takes for float64 -> bfloat16: float32 first lands exactly on the
    # midpoint 1 + 2**-8, and the second rounding breaks that tie to even, down to 1.0.
    chain = np.array([x]).astype(np.float32).astype(BF16)
    assert float(chain[0]) == 1.0


def test_float64_to_bfloat16_avoids_double_rounding_on_every_binade():
    """Value = even bf16 + half ulp + a sliver below float32 resolution: must round up."""
    rng = np.random.default_rng(2)
    bits = (rng.integers(0x0080, 0x7F7F, 5_000) & ~1).astype(np.uint16)  # even normals
    v = from_bits(bits, BFLOAT16).astype(np.float64)
    step = ulp(v, BFLOAT16)
    x = v + step / 2 + step * 2.0**-23  # exact in float64, lost by a float32 hop
    np.testing.assert_array_equal(round_to_format(x, BFLOAT16), bits + 1)
    chain = x.astype(np.float32).astype(BF16).view(np.uint16)
    assert (chain == bits).all(), "the float32 chain double-rounds every one of them"


def test_float32_from_float64_matches_numpy_astype_including_subnormals_and_overflow():
    """numpy's float64->float32 cast is correctly rounded; agree on 300k values."""
    rng = np.random.default_rng(3)
    x = np.ldexp(rng.uniform(-2, 2, 300_000), rng.integers(-155, 131, 300_000))
    lo = rng.integers(0, 0x7F7FFFFF, 50_000).astype(np.uint32)
    a = lo.view(np.float32).astype(np.float64)
    b = (lo + 1).view(np.float32).astype(np.float64)
    mid = (a + b) / 2
    x = np.concatenate([x, mid, -mid, np.nextafter(mid, np.inf), [5e-324, -0.0, 1e308]])
    with np.errstate(over="ignore"):
        reference = x.astype(np.float32).view(np.uint32)
    np.testing.assert_array_equal(round_to_format(x, FLOAT32), reference)


@pytest.mark.parametrize("fmt", NARROW)
def test_mpf_and_fraction_paths_agree_with_the_float64_path(fmt):
    """The same dyadic values given as float64, mpf or Fraction round to the same bits."""
    rng = np.random.default_rng(4)
    x = np.ldexp(rng.uniform(-2, 2, 3_000), rng.integers(-155, 131, 3_000))
    want = round_to_format(x, fmt)
    np.testing.assert_array_equal(round_to_format([_mpf(v) for v in x], fmt), want)
    np.testing.assert_array_equal(round_to_format([Fraction(v) for v in x], fmt), want)


# --- edges: overflow, subnormals, zeros, specials -----------------------------------

@pytest.mark.parametrize("fmt", NARROW)
@REPR
@pytest.mark.parametrize("where, expect", [
    ("threshold", "inf"),         # max_finite + half ulp is a tie; even side is inf
    ("below_threshold", "max"),
    ("max", "max"),
    ("twice_max", "inf"),
])
def test_overflow_threshold_follows_ieee(fmt, rep, where, expect):
    """Values >= max_finite + ulp/2 become inf; anything below stays at max_finite."""
    top = Fraction(fmt.max_finite)
    half = Fraction(2) ** (fmt.emax - fmt.mantissa_bits - 1)
    x = {"threshold": top + half, "below_threshold": top + half - Fraction(1, 2**1100),
         "max": top, "twice_max": 2 * top}[where]
    if rep == "float64":
        x = np.nextafter(float(top + half), 0) if where == "below_threshold" else float(x)
    want = fmt.inf_bits if expect == "inf" else fmt.inf_bits - 1
    for sign in (1, -1):
        got = round_to_format(REPRESENTATIONS[rep](sign * x), fmt)
        assert int(got[0]) == want | (int(sign < 0) << (fmt.bits - 1))


@pytest.mark.parametrize("fmt", NARROW)
@REPR
@pytest.mark.parametrize("multiple, expect_bits, negative", [
    (Fraction(1), 1, False),                  # smallest subnormal
    (Fraction(1, 2), 0, False),               # tie between 0 and it: even is 0
    (Fraction(1, 2), 0, True),                # ... and keeps the sign: -0
    (Fraction(1, 2) + Fraction(1, 2**40), 1, False),
    (Fraction(1, 4), 0, True),
    (Fraction(3, 2), 2, False),               # tie between 1 and 2 subnormal ulps: even
    (Fraction(5, 2), 2, True),
    (None, "min_normal", False),              # largest subnormal + half ulp: tie, rounds up
    (Fraction(0), 0, False),
])
def test_subnormals_and_signed_zeros(fmt, rep, multiple, expect_bits, negative):
    """Multiples of the smallest subnormal round by the same nearest-even rule."""
    if multiple is None:
        multiple, expect_bits = Fraction(2**fmt.mantissa_bits * 2 - 1, 2), 1 << fmt.mantissa_bits
    x = multiple * Fraction(fmt.min_subnormal) * (-1 if negative else 1)
    got = int(round_to_format(REPRESENTATIONS[rep](x), fmt)[0])
    assert got == expect_bits | (int(negative) << (fmt.bits - 1))


@pytest.mark.parametrize("value, expected", [
    (-0.0, -0.0), (np.float64(-0.0), -0.0), (mpmath.mpf(0), 0.0), (Fraction(0), 0.0),
    (-(mpmath.mpf(2) ** -200), -0.0),         # underflow keeps the sign
    (float("inf"), np.inf), (mpmath.inf, np.inf), (-mpmath.inf, -np.inf),
    (Decimal("-Infinity"), -np.inf), (float("nan"), np.nan), (mpmath.nan, np.nan),
    (Decimal("NaN"), np.nan),
    (Decimal("0.1"), 0.10009765625),          # 1/10 = 1.6 * 2**-4; 1.6 * 128 = 204.8 -> 205
    (Fraction(-1, 10), -0.10009765625), (3, 3.0), (np.int64(-257), -256.0),
    (BF16(1.5), 1.5),
    (np.float16(0.333), 0.33203125),          # 1364/4096 = 170.5 bf16 quanta: tie, to 170
])
def test_zeros_infinities_nan_and_other_exact_scalars(value, expected):
    """Scalars of every accepted kind round to bfloat16 keeping signs, infinities and NaN."""
    got = round_to_format(np.array([value], dtype=object), BFLOAT16, as_dtype=True)
    out = float(got[0])
    if np.isnan(expected):
        assert np.isnan(out)
    else:
        assert out == expected and np.signbit(out) == np.signbit(expected)


@pytest.mark.parametrize("values", [
    np.arange(12.0).reshape(3, 4)[:, ::2],                     # 2-D, not contiguous
    np.array(2.5), np.array([[Fraction(1, 3)] * 2] * 3, dtype=object), mpmath.mpf(3),
])
@pytest.mark.parametrize("fn", [
    lambda v: round_to_format(v, BFLOAT16), lambda v: ulp(v, BFLOAT16),
    lambda v: is_correctly_rounded(np.zeros(np.shape(v), np.float32), v, BFLOAT16),
    lambda v: ulp_error(np.zeros(np.shape(v), np.float32), v, BFLOAT16),
], ids=["round_to_format", "ulp", "is_correctly_rounded", "ulp_error"])
def test_results_keep_the_shape_of_the_input(values, fn):
    """Arrays of any shape, strided views and 0-d scalars come back with their own shape."""
    assert fn(values).shape == np.shape(values)


@pytest.mark.parametrize("value", [mpmath.mpc(1, 1), "1.0", object()])
def test_inexact_or_unknown_inputs_are_refused(value):
    """A type without an exact value raises instead of being silently floated."""
    with pytest.raises(TypeError, match="not an exact value"):
        round_to_format(np.array([value], dtype=object), FLOAT16)


# --- formats ------------------------------------------------------------------------

class _FakeTorchDtype:
    """Stands in for torch.bfloat16: only str() is used, torch is never imported."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __str__(self) -> str:
        return f"torch.{self.name}"


@pytest.mark.parametrize("dtype_like, expected", [
    ("bfloat16", BFLOAT16), ("float16", FLOAT16), ("BF16", BFLOAT16), ("double", FLOAT64),
    (np.float16, FLOAT16), (ml_dtypes.bfloat16, BFLOAT16), (np.dtype("float32"), FLOAT32),
    (np.dtype(BF16), BFLOAT16), (float, FLOAT64), (np.zeros(2, np.float32), FLOAT32),
    (_FakeTorchDtype("bfloat16"), BFLOAT16), (_FakeTorchDtype("float16"), FLOAT16),
    ("torch.float32", FLOAT32), (FLOAT16, FLOAT16),
])
def test_resolve_format_accepts_names_dtypes_types_and_torch_dtypes(dtype_like, expected):
    """Every spelling of a supported format maps to its FloatFormat."""
    assert resolve_format(dtype_like) is expected


@pytest.mark.parametrize("dtype_like", ["int8", np.int32, "float8", _FakeTorchDtype("int64"),
                                        np.dtype("complex64"), None])
def test_resolve_format_rejects_unknown_formats_listing_the_valid_names(dtype_like):
    """Unknown formats raise ValueError naming what would have worked."""
    with pytest.raises(ValueError, match="bfloat16, float16, float32, float64"):
        resolve_format(dtype_like)


@pytest.mark.parametrize("fmt", [*NARROW, pytest.param(FLOAT64, id="float64")])
def test_format_constants_match_finfo(fmt):
    """Bias, subnormal, normal and max constants agree with (ml_dtypes') finfo."""
    info = ml_dtypes.finfo(fmt.dtype)
    assert fmt.mantissa_bits == info.nmant and fmt.emin == info.minexp
    assert fmt.emax == info.maxexp - 1 and fmt.bias == fmt.emax
    assert fmt.max_finite == float(info.max)
    assert fmt.min_normal == float(info.smallest_normal)
    assert fmt.min_subnormal == float(info.smallest_subnormal)
    assert fmt.dtype.itemsize * 8 == fmt.bits


# --- ulp and ulp_error --------------------------------------------------------------

@REPR
@pytest.mark.parametrize("value, fmt, expected", [
    (1.0, BFLOAT16, 2.0**-7), (1.0, FLOAT16, 2.0**-10), (1.0, FLOAT32, 2.0**-23),
    (1 - 2.0**-30, BFLOAT16, 2.0**-8),        # just below a power of two: the lower binade
    (2 - 2.0**-30, BFLOAT16, 2.0**-7),
    (2.0, BFLOAT16, 2.0**-6),                 # at a power of two: the spacing above
    (-3.0, FLOAT16, 2.0**-9),
    (0.0, BFLOAT16, 2.0**-133), (0.0, FLOAT16, 2.0**-24), (0.0, FLOAT32, 2.0**-149),
    (2.0**-140, BFLOAT16, 2.0**-133),         # subnormal: the smallest subnormal
    (2.0**-126, BFLOAT16, 2.0**-133),         # smallest normal: same spacing
    (2.0**-20, FLOAT16, 2.0**-24),
    (-(2.0**-14), FLOAT16, 2.0**-24),
    (2.0**200, BFLOAT16, 2.0**120),           # beyond the top binade: clamped to it
    (65520.0, FLOAT16, 32.0),
])
def test_ulp_on_hand_computed_cases(rep, value, fmt, expected):
    """ulp(x) = 2**(clamp(floor(log2|x|), emin, emax) - mantissa_bits)."""
    assert ulp(REPRESENTATIONS[rep](value), fmt).tolist() == [expected]


@pytest.mark.parametrize("value, expected", [
    (np.inf, np.inf), (-np.inf, np.inf), (mpmath.inf, np.inf),
    (np.nan, np.nan), (mpmath.nan, np.nan),
])
def test_ulp_of_infinity_is_inf_and_of_nan_is_nan(value, expected):
    """Non-finite inputs have no spacing: inf and nan pass through."""
    got = ulp(np.array([value], dtype=object if isinstance(value, mpmath.mpf) else float), FLOAT16)
    np.testing.assert_array_equal(got, [expected])


X = 1 + 2.0**-8 + 2.0**-30
ULP_ERROR_CASES = [
    # candidate, its dtype, exact, fmt, expected ulps
    (1.0078125, BF16, 1.0, BFLOAT16, 1.0),
    (1.0, BF16, 1 + 2.0**-8, BFLOAT16, 0.5),
    (1.0, BF16, X, BFLOAT16, 0.5 + 2.0**-23),
    (1.0078125, BF16, X, BFLOAT16, 0.5 - 2.0**-23),
    (1.0, BF16, 1 - 2.0**-9, BFLOAT16, 0.5),      # exact below 1: ulp is 2**-8
    (1 - 2.0**-8, BF16, 1.0, BFLOAT16, 0.5),      # exact at 1: ulp is 2**-7
    (1.0, np.float16, 1 + 2.0**-11, FLOAT16, 0.5),
    (1.0, np.float32, 1 + 2.0**-24, FLOAT32, 0.5),
    (-1.0078125, BF16, -1.0, BFLOAT16, 1.0),
    (-1.0, BF16, 1.0, BFLOAT16, 256.0),           # opposite signs: the full distance
    (-(2.0**-133), BF16, 2.0**-133, BFLOAT16, 2.0),
    (2.0**-133, BF16, 0.0, BFLOAT16, 1.0),        # exact zero: ulp is the smallest subnormal
    (-0.0, BF16, 0.0, BFLOAT16, 0.0),
    (0.0, np.float16, 2.0**-25, FLOAT16, 0.5),
    (3 * 2.0**-24, np.float16, 2.0**-24, FLOAT16, 2.0),
]


@REPR
@pytest.mark.parametrize("cand, cdtype, exact, fmt, expected", ULP_ERROR_CASES)
def test_ulp_error_on_hand_computed_cases(rep, cand, cdtype, exact, fmt, expected):
    """|candidate - exact| / ulp(exact), exactly, whether exact is float64, Fraction or mpf."""
    got = ulp_error(np.array([cand], dtype=cdtype), REPRESENTATIONS[rep](exact), fmt)
    assert got.tolist() == [expected]


def test_ulp_error_against_a_non_dyadic_exact_value():
    """bf16(1/3) = 171/512 is 1/1536 away; ulp(1/3) = 2**-9; so the error is 1/3 ulp."""
    got = ulp_error(np.array([1 / 3], dtype=BF16), [Fraction(1, 3)], BFLOAT16)
    assert got.tolist() == [1 / 3]


@pytest.mark.parametrize("cand, exact, expected", [
    (np.inf, np.inf, 0.0), (-np.inf, -np.inf, 0.0), (np.inf, -np.inf, np.inf),
    (np.inf, 1.0, np.inf), (1.0, np.inf, np.inf), (np.inf, 1e6, np.inf),
    (np.nan, np.nan, 0.0), (np.nan, 1.0, np.inf), (1.0, np.nan, np.inf), (np.nan, np.inf, np.inf),
])
@pytest.mark.parametrize("exact_kind", ["float64", "mpf"])
def test_ulp_error_with_infinities_and_nan(cand, exact, expected, exact_kind):
    """Same infinity or NaN/NaN is 0; every other non-finite disagreement is inf, never NaN."""
    ex = np.array([exact]) if exact_kind == "float64" else [mpmath.mpf(exact)]
    assert ulp_error(np.array([cand], dtype=np.float16), ex, FLOAT16).tolist() == [expected]


@pytest.mark.parametrize("fmt", NARROW)
def test_ulp_error_float_shortcut_equals_the_exact_computation(fmt):
    """Float64 exacts take a vectorized shortcut; it must match the exact path bit for bit."""
    rng = np.random.default_rng(5)
    x = np.ldexp(rng.uniform(-2, 2, 2_000), rng.integers(fmt.emin - 12, fmt.emax, 2_000))
    cand = from_bits(round_to_format(x, fmt) + rng.integers(-3, 4, 2_000).astype(np.int8),
                     fmt)
    fast = ulp_error(cand, x, fmt)
    exact = ulp_error(cand, [_mpf(v) for v in x], fmt)
    np.testing.assert_array_equal(fast, exact)
    assert np.isfinite(fast).mean() > 0.9, "test data: mostly finite errors"


def test_ulp_error_does_not_overflow_near_the_float64_maximum():
    """max - (-max) overflows float64, but the error 2 * max / 2**971 = 2**54 - 2 is finite."""
    big = np.finfo(np.float64).max
    assert ulp_error(np.array([big]), np.array([-big]), FLOAT64).tolist() == [2.0**54 - 2]


@pytest.mark.parametrize("cand, cdtype, exact, kwargs, expected", [
    (1.0078125, BF16, X, {}, True),
    (1.0, BF16, X, {}, False),
    (1.0, np.float32, 1 + 2.0**-9, {}, True),     # a float32 holding the right bf16 value
    (1 + 2.0**-20, np.float32, 1.0, {}, False),   # not representable in bf16
    (-0.0, BF16, 0.0, {}, True),
    (-0.0, BF16, 0.0, {"signed_zeros": True}, False),
    (0.0, BF16, -(2.0**-140), {"signed_zeros": True}, False),
    (-0.0, BF16, -(2.0**-140), {"signed_zeros": True}, True),
    (np.inf, BF16, 2.0**130, {}, True),           # overflow: inf is the correct rounding
    (np.nan, BF16, np.nan, {}, True),
    (np.nan, BF16, 1.0, {}, False),
    (1.0, BF16, np.nan, {}, False),
])
@pytest.mark.parametrize("exact_kind", ["float64", "mpf"])
def test_is_correctly_rounded(cand, cdtype, exact, kwargs, expected, exact_kind):
    """True exactly where the candidate is the nearest-even rounding of the exact value."""
    ex = np.array([exact]) if exact_kind == "float64" else [mpmath.mpf(exact)]
    got = is_correctly_rounded(np.array([cand], dtype=cdtype), ex, BFLOAT16, **kwargs)
    assert got.tolist() == [expected]


def test_importing_lowp_pulls_in_neither_mpmath_nor_ml_dtypes():
    """The module must stay cheap to import: heavy dependencies load only when used."""
    code = ("import sys, gradcheck._core.formats as m; m.round_to_format([1.0], 'float16'); "
            "print(sorted({'mpmath', 'ml_dtypes'} & set(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"
