"""Correct rounding to low-precision formats, and errors in ulps, from EXACT values.

The truth in a low-precision dispute is an exact value (an ``mpmath.mpf``, a
``fractions.Fraction``, or a float64 that is taken at face value). This module rounds it
to float16 / bfloat16 / float32 / float64 at the bit level, round-to-nearest-even, and
measures a candidate's distance from it in ulps of the target format.

Conventions
-----------
* ``ulp(x)`` is ``2**(clamp(floor(log2|x|), emin, emax) - mantissa_bits)`` (Goldberg /
  Muller): the spacing just above ``|x|`` within its binade, so at a power of two it is
  the larger spacing; below the normal range it is the smallest subnormal (also for 0);
  beyond the largest binade it stays the spacing of that binade. ``ulp(inf)`` is inf,
  ``ulp(nan)`` is nan.
* Overflow follows IEEE 754: a value ``>= max_finite + ulp(max_finite)/2`` rounds to inf.
* Rounding NaN gives the format's quiet NaN with the input's sign.
* Exact arithmetic has no signed zero, so ``is_correctly_rounded`` accepts either zero
  when the correct rounding is a zero, unless ``signed_zeros=True``.
* ``ulp_error`` never returns NaN: 0 when candidate and exact are the same infinity or
  both NaN, inf whenever exactly one side is non-finite or they are different infinities.

>>> from fractions import Fraction
>>> float(round_to_format([Fraction(1, 3)], "bfloat16", as_dtype=True)[0])
0.333984375
"""
from __future__ import annotations

import contextlib
import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, DTypeLike

__all__ = ["FloatFormat", "FLOAT16", "BFLOAT16", "FLOAT32", "FLOAT64", "FORMATS",
           "resolve_format", "round_to_format", "from_bits", "bits_to_float64", "ulp", "ulp_error",
           "is_correctly_rounded"]


@dataclass(frozen=True)
class FloatFormat:
    """An IEEE-754-style binary format: sign bit, exponent field, stored mantissa bits.

    >>> BFLOAT16.max_finite, BFLOAT16.min_subnormal == 2.0**-133
    (3.3895313892515355e+38, True)
    """

    name: str
    exponent_bits: int
    mantissa_bits: int  # stored fraction bits (precision is mantissa_bits + 1)

    @property
    def bits(self) -> int:
        return 1 + self.exponent_bits + self.mantissa_bits
    @property
    def bias(self) -> int:
        return (1 << (self.exponent_bits - 1)) - 1
    @property
    def emin(self) -> int:
        return 1 - self.bias
    @property
    def emax(self) -> int:
        return self.bias
    @property
    def min_subnormal(self) -> float:
        return math.ldexp(1.0, self.emin - self.mantissa_bits)
    @property
    def min_normal(self) -> float:
        return math.ldexp(1.0, self.emin)
    @property
    def max_finite(self) -> float:
        return math.ldexp(2.0 - math.ldexp(1.0, -self.mantissa_bits), self.emax)

    @property
    def inf_bits(self) -> int:
        """Bit pattern of +inf (also the first pattern past the largest finite)."""
        return ((1 << self.exponent_bits) - 1) << self.mantissa_bits

    @property
    def uint_dtype(self) -> np.dtype:
        return np.dtype(f"uint{self.bits}")

    @property
    def dtype(self) -> np.dtype:
        """The numpy dtype holding this format (bfloat16 imports ml_dtypes, lazily)."""
        if self.name == "bfloat16":
            import ml_dtypes

            return np.dtype(ml_dtypes.bfloat16)
        return np.dtype(self.name)


FLOAT16 = FloatFormat("float16", 5, 10)
BFLOAT16 = FloatFormat("bfloat16", 8, 7)
FLOAT32 = FloatFormat("float32", 8, 23)
FLOAT64 = FloatFormat("float64", 11, 52)
FORMATS: dict[str, FloatFormat] = {f.name: f for f in (FLOAT16, BFLOAT16, FLOAT32, FLOAT64)}
#: A format, or what names one: a name ("bfloat16", "torch.float16"), a dtype or a scalar type.
FormatLike = FloatFormat | DTypeLike
#: Exact values: float arrays, or exact numbers (int, Fraction, Decimal, mpmath.mpf) alone, in a
#: list or in an object array (which may also hold MPFloat).
ExactLike = ArrayLike | numbers.Number | Sequence[numbers.Number]
_ALIASES = {"half": "float16", "fp16": "float16", "bf16": "bfloat16", "fp32": "float32",
            "single": "float32", "fp64": "float64", "double": "float64"}


def resolve_format(dtype_like: object) -> FloatFormat:
    """Map a name, numpy/ml_dtypes dtype or type, torch dtype, or array to a FloatFormat.

    Torch dtypes are matched by ``str(dtype)`` ("torch.bfloat16"), so torch is never imported.

    >>> resolve_format("torch.float16") is FLOAT16
    True
    """
    if isinstance(dtype_like, FloatFormat):
        return dtype_like
    name = None
    if isinstance(dtype_like, str) or str(dtype_like).startswith("torch."):
        name = str(dtype_like)
    elif isinstance(dtype_like, np.dtype):
        name = dtype_like.name
    elif isinstance(dtype_like, type):
        with contextlib.suppress(TypeError):
            name = np.dtype(dtype_like).name
    elif hasattr(dtype_like, "dtype"):  # an array or tensor: judge by its dtype
        return resolve_format(dtype_like.dtype)
    if name is not None:
        key = name.strip().lower().removeprefix("torch.")
        key = _ALIASES.get(key, key)
        if key in FORMATS:
            return FORMATS[key]
    valid = ", ".join(sorted(FORMATS) + sorted(_ALIASES))
    raise ValueError(f"unknown floating-point format {dtype_like!r}; valid names: {valid}")


# ---------------------------------------------------------------------------------------
# Exact scalars: every accepted input becomes (kind, sign, p, q, e2) meaning
# (-1)**sign * p * 2**e2 / q with q odd; kind 0 finite, 1 infinite, 2 NaN.
_FINITE, _INF, _NAN = 0, 1, 2


def _parse(x: Any) -> tuple[int, int, int, int, int]:
    if hasattr(x, "_mpf_"):  # mpmath.mpf: exact (sign, man, exp, bitcount), no float detour
        sign, man, exp, bc = x._mpf_
        if man:
            return _FINITE, int(sign), int(man), 1, int(exp)
        if bc == 0:
            return _FINITE, int(sign), 0, 1, 0
        from mpmath import libmp

        return (_NAN, 0, 0, 1, 0) if x._mpf_ == libmp.fnan else (_INF, int(sign), 0, 1, 0)
    if isinstance(x, numbers.Rational):  # int, bool, np.integer, Fraction
        p, q = int(x.numerator), int(x.denominator)
    elif isinstance(x, np.generic) and x.dtype.itemsize <= 8 and not hasattr(
            x, "as_integer_ratio"):
        return _parse(float(x))  # ml_dtypes scalars: float() of <= 64 bits is exact
    elif hasattr(x, "as_integer_ratio"):  # float, np.floating, Decimal
        if x != x:
            return _NAN, 0, 0, 1, 0
        if x in (math.inf, -math.inf):
            return _INF, int(x < 0), 0, 1, 0
        p, q = x.as_integer_ratio()
        if p == 0:
            return _FINITE, int(math.copysign(1.0, float(x)) < 0), 0, 1, 0
    else:
        raise TypeError(f"{type(x).__name__} is not an exact value; pass mpmath.mpf, "
                        "fractions.Fraction, int or a binary float")
    sign = int(p < 0)
    p = abs(p)
    tz = (q & -q).bit_length() - 1  # move the power of two of q into the exponent
    return _FINITE, sign, p, q >> tz, -tz


def _floor_log2(p: int, q: int, e2: int) -> int:
    """floor(log2(p * 2**e2 / q)) for p > 0, exactly."""
    d = p.bit_length() - q.bit_length()
    if q != 1 and (p < (q << d) if d >= 0 else (p << -d) < q):
        d -= 1
    return d + e2


def _round_bits(sign: int, p: int, q: int, e2: int,
                k: tuple[int, int, int, int, int, int]) -> int:
    """Bits of (-1)**sign * p * 2**e2 / q rounded to nearest even; k: format constants."""
    m, emin, emax, bias, inf_bits, sign_pos = k
    signbit = sign << sign_pos
    if p == 0:
        return signbit
    e = _floor_log2(p, q, e2)
    if e > emax:
        return signbit | inf_bits
    if e < emin - m - 1:  # below half the smallest subnormal: rounds to zero
        return signbit
    big_e = e if e > emin else emin
    s = e2 - big_e + m  # shift that puts the quantum (last mantissa bit) at 2**0
    if q == 1:
        if s >= 0:
            n, up = p << s, False
        else:
            n, r, half = p >> -s, p & ((1 << -s) - 1), 1 << (-s - 1)
            up = r > half or (r == half and bool(n & 1))
    else:
        num, den = (p << s, q) if s >= 0 else (p, q << -s)
        n, r = divmod(num, den)
        up = 2 * r > den  # q odd > 1: never exactly a (dyadic) midpoint, so no ties
    # Bias the exponent field by big_e - 1: n carries the implicit bit, so a carry out of
    # the mantissa (n == 2**(m+1)) bumps the exponent for free, and the subnormal binade
    # (field 0) needs no special case.
    bits = ((big_e + bias - 1) << m) + n + up
    return signbit | (bits if bits < inf_bits else inf_bits)


def _nan_bits(sign: int, fmt: FloatFormat) -> int:
    return (sign << (fmt.bits - 1)) | fmt.inf_bits | (1 << (fmt.mantissa_bits - 1))


def _as_float64(values: object) -> np.ndarray | None:
    """A float64 array holding `values` exactly, or None when float64 cannot."""
    arr = values if isinstance(values, np.ndarray) else np.asarray(values)
    if arr.dtype == np.float64:
        return arr
    if arr.dtype.itemsize <= 8 and (arr.dtype.kind == "f" or arr.dtype.name.startswith(
            ("bfloat16", "float8", "float6", "float4"))):
        return arr.astype(np.float64)  # every binary format of <= 64 bits widens exactly
    return None


def _round_float64(x: np.ndarray, fmt: FloatFormat) -> np.ndarray:
    """Vectorized round-to-nearest-even of float64 bits straight into fmt (no float32 hop)."""
    u = x.view(np.uint64)
    if fmt is FLOAT64:
        return u.copy()
    one = np.uint64(1)
    sign = u >> np.uint64(63)
    efield = ((u >> np.uint64(52)) & np.uint64(0x7FF)).astype(np.int64)
    mant = (u & np.uint64((1 << 52) - 1)) | (one << np.uint64(52))  # implicit bit
    e = efield - 1023
    big_e = np.maximum(e, fmt.emin)
    # Bits of mant below the target quantum; >= 55 means everything is below half a quantum.
    shift = np.minimum(52 - fmt.mantissa_bits + (big_e - e), 60).astype(np.uint64)
    n = mant >> shift
    rem = mant & ((one << shift) - one)
    half = one << (shift - one)
    n += ((rem > half) | ((rem == half) & ((n & one) == one))).astype(np.uint64)
    field = np.clip(big_e + fmt.bias - 1, 0, 1 << fmt.exponent_bits).astype(np.uint64)
    bits = np.minimum((field << np.uint64(fmt.mantissa_bits)) + n, np.uint64(fmt.inf_bits))
    # float64 zeros and subnormals (< 2**-1022) are far below half of any target's
    # smallest subnormal, so they become signed zeros.
    bits = np.where(efield == 0, np.uint64(0), bits)
    bits = np.where(efield == 0x7FF, np.uint64(fmt.inf_bits), bits)
    bits = np.where(np.isnan(x), np.uint64(_nan_bits(0, fmt)), bits)
    return (bits | (sign << np.uint64(fmt.bits - 1))).astype(fmt.uint_dtype)


def round_to_format(values: ExactLike, fmt: FormatLike, *, as_dtype: bool = False) -> np.ndarray:
    """Round exact `values` to `fmt`, nearest-even at the bit level; return the bit patterns.

    `values` may be mpmath.mpf / Fraction / int (object arrays, lists or scalars, rounded
    from their exact mantissa and exponent) or float arrays of <= 64 bits (taken exactly;
    float64 to bfloat16 goes straight from the float64 bits, so there is no double rounding).
    With ``as_dtype=True`` the result is viewed as the target dtype instead.

    >>> round_to_format([1 + 2**-8 + 2**-30], "bfloat16", as_dtype=True).astype(float)
    array([1.0078125])
    """
    fmt = resolve_format(fmt)
    x = _as_float64(values)
    if x is not None:
        bits = _round_float64(x if x.flags.c_contiguous else x.copy(), fmt)  # keeps 0-d
    else:
        objs = np.asarray(values, dtype=object)  # numpy ints become exact Python ints
        # Constants hoisted: the per-entry loop must not pay for property lookups.
        k = (fmt.mantissa_bits, fmt.emin, fmt.emax, fmt.bias, fmt.inf_bits, fmt.bits - 1)
        out = [_round_bits(sign, p, q, e2, k) if kind == _FINITE
               else (sign << k[5]) | fmt.inf_bits if kind == _INF else _nan_bits(sign, fmt)
               for kind, sign, p, q, e2 in map(_parse, objs.flat)]
        bits = np.array(out, dtype=fmt.uint_dtype).reshape(objs.shape)
    return from_bits(bits, fmt) if as_dtype else bits


def from_bits(bits: ArrayLike, fmt: FormatLike) -> np.ndarray:
    """View unsigned bit patterns as an array of the target dtype.

    >>> float(from_bits(np.array(0x3F80, np.uint16), "bfloat16"))
    1.0
    """
    fmt = resolve_format(fmt)
    return np.asarray(bits).astype(fmt.uint_dtype, copy=False).view(fmt.dtype)


def bits_to_float64(bits: ArrayLike, fmt: FormatLike) -> np.ndarray:
    """The values of unsigned bit patterns as float64 (exact: every format here widens
    exactly), without the target dtype: bfloat16 needs no ``ml_dtypes`` import (its
    patterns are the top half of float32's).

    >>> bits_to_float64(np.array([0x3F80, 0xC040], np.uint16), "bfloat16").tolist()
    [1.0, -3.0]
    """
    fmt = resolve_format(fmt)
    bits = np.asarray(bits).astype(fmt.uint_dtype, copy=False)
    if fmt.name == "bfloat16":
        return (bits.astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64)
    return bits.view(fmt.dtype).astype(np.float64)


def _ulp_exponent(p: int, q: int, e2: int, fmt: FloatFormat) -> int:
    e = _floor_log2(p, q, e2) if p else fmt.emin
    return min(max(e, fmt.emin), fmt.emax) - fmt.mantissa_bits


def ulp(value: ExactLike, fmt: FormatLike) -> np.ndarray:
    """The ulp in `fmt` at the exact `value`, as float64 (powers of two, held exactly).

    >>> ulp([1.0, 0.999, 0.0], "bfloat16").tolist() == [2**-7, 2**-8, 2**-133]
    True
    """
    fmt = resolve_format(fmt)
    x = _as_float64(value)
    if x is not None:
        _, e = np.frexp(np.abs(x))  # |x| = f * 2**e with f in [0.5, 1): floor(log2) = e - 1
        e = np.clip(np.where(x == 0, fmt.emin, e - 1), fmt.emin, fmt.emax)
        out = np.ldexp(1.0, (e - fmt.mantissa_bits).astype(np.int32))
        return np.where(np.isfinite(x), out, np.abs(x))  # inf -> inf, nan -> nan
    objs = np.asarray(value, dtype=object)
    res = [math.ldexp(1.0, _ulp_exponent(p, q, e2, fmt)) if kind == _FINITE
           else math.inf if kind == _INF else math.nan
           for kind, _, p, q, e2 in map(_parse, objs.flat)]
    return np.array(res, dtype=np.float64).reshape(objs.shape)


def _candidate_float64(candidate: ArrayLike) -> np.ndarray:
    c = _as_float64(candidate)
    if c is None:
        raise TypeError("candidate must be a float array (float16, bfloat16, float32, "
                        f"float64), got {np.asarray(candidate).dtype}")
    return c


def ulp_error(candidate: ArrayLike, exact: ExactLike, fmt: FormatLike) -> np.ndarray:
    """|candidate - exact| / ulp(exact) in `fmt`, computed exactly then rounded once to float64.

    Non-finite cases: 0 for the same infinity or for NaN against NaN, inf otherwise
    (so an overflowed result that correctly rounds to inf still shows an inf error; use
    `is_correctly_rounded` for that question).

    >>> import numpy as np
    >>> ulp_error(np.array([1.0078125], np.float32), [1.0], "bfloat16").tolist()
    [1.0]
    """
    fmt = resolve_format(fmt)
    ex = _as_float64(exact)
    c, ex = np.broadcast_arrays(_candidate_float64(candidate),
                                np.asarray(exact, dtype=object) if ex is None else ex)
    if ex.dtype == np.float64:
        # Both are floats: fl(c - x) is the correctly rounded difference, and dividing by
        # a power of two is exact, so this is the exact ratio rounded once.
        with np.errstate(invalid="ignore", over="ignore"):
            err = np.abs(c - ex) / ulp(ex, fmt)
        same = (c == ex) | (np.isnan(c) & np.isnan(ex))
        err = np.where(same, 0.0, err)
        finite = np.isfinite(c) & np.isfinite(ex)
        # c - x overflows near float64's max although the ratio is finite: redo exactly.
        for i in np.flatnonzero(finite & ~np.isfinite(err)):
            err.flat[i] = _exact_ulp_error(float(c.flat[i]), float(ex.flat[i]), fmt)
        return np.where(finite | same, err, np.inf)
    res = [_exact_ulp_error(float(cv), xv, fmt) for cv, xv in zip(c.flat, ex.flat)]
    return np.array(res, dtype=np.float64).reshape(c.shape)


def _exact_ulp_error(cv: float, xv: object, fmt: FloatFormat) -> float:
    kind, sx, p, q, e2 = _parse(xv)
    if kind == _NAN or not math.isfinite(cv):
        same = (kind == _NAN and cv != cv) or (kind == _INF and cv == (-1) ** sx * math.inf)
        return 0.0 if same else math.inf
    if kind == _INF:
        return math.inf
    k = _ulp_exponent(p, q, e2, fmt)
    cp, cq = cv.as_integer_ratio()  # cq is a power of two
    ce = -(cq.bit_length() - 1)
    # |cp*2**ce - s*p*2**e2/q| / 2**k over the common exponent m, as one integer ratio.
    m = min(ce, e2)
    num = abs(((cp * q) << (ce - m)) - (-1) ** sx * (p << (e2 - m)))
    num, den = (num << (m - k), q) if m >= k else (num, q << (k - m))
    try:
        return num / den  # int / int is correctly rounded in CPython
    except OverflowError:
        return math.inf


def is_correctly_rounded(candidate: ArrayLike, exact: ExactLike, fmt: FormatLike, *,
                         signed_zeros: bool = False) -> np.ndarray:
    """True where `candidate` is the nearest-even rounding of `exact` in `fmt`.

    A candidate value that `fmt` cannot represent is never correct; any NaN matches a NaN
    exact value; the sign of zero is judged only with ``signed_zeros=True``.

    >>> is_correctly_rounded(np.array([1.0, 1.0078125]), [1 + 2**-8 + 2**-30], "bfloat16")
    array([False,  True])
    """
    fmt = resolve_format(fmt)
    c = _candidate_float64(candidate)
    want = round_to_format(exact, fmt)
    got = round_to_format(c, fmt)
    c, want, got = np.broadcast_arrays(c, want, got)
    with np.errstate(invalid="ignore"):  # ml_dtypes warns when widening NaN
        representable = (from_bits(got, fmt).astype(np.float64) == c) | np.isnan(c)
    mag = ~np.asarray(1 << (fmt.bits - 1), dtype=fmt.uint_dtype)  # all bits but the sign
    nan_w = (want & mag) > fmt.inf_bits
    nan_g = (got & mag) > fmt.inf_bits
    ok = (got == want) | (nan_w & nan_g)
    if not signed_zeros:
        ok |= ((want & mag) == 0) & ((got & mag) == 0)
    return ok & representable & (nan_w == nan_g)
