"""The exact sum of float64 values, correctly rounded, as ``math.fsum`` gives it, in a kernel.

A block's claimed slope is a dot product summed exactly (:func:`._directional.exact_dot`):
every product split without error into two doubles, then the ``2n`` doubles summed with
``math.fsum``. For a block of a whole model (millions of entries) building the Python list
``fsum`` reads costs seconds per slope. Here every finite double ``m 2**(e - 1075)`` is added
as the integer ``m`` shifted by ``e - 1`` bits into a fixed-point accumulator that spans the
whole double range (70 limbs of 32 bits, each an int64 with room for 2**31 additions); the
total, an exact integer multiple of ``2**-1074``, is divided by ``2**1074`` with Python's
correctly rounded integer division. ``math.fsum`` also returns the correctly rounded exact
sum: the same bits. Non-finite values and values near overflow (where ``math.fsum`` raises)
go to ``math.fsum`` itself.

>>> import numpy as np
>>> fsum2(np.array([1e16, 1.0, -1e16]), np.array([0.5, 0.25, 0.0]))
1.75
"""
from __future__ import annotations

import math

import numpy as np

from .._core.jit import kernel

#: Limbs of 32 bits: 2**-1074 .. 2**1024 and the carries of 2**31 additions.
LIMBS = 70
#: Above this magnitude an intermediate sum may overflow: math.fsum decides (it raises).
LARGE = 1e300
#: More values than this and a limb could overflow: math.fsum decides.
MOST = 1 << 30


@kernel()
def _accumulate(bits: np.ndarray, limbs: np.ndarray) -> None:
    """Add the finite doubles whose IEEE bits are ``bits`` (int64) into ``limbs``."""
    for k in range(bits.size):
        _add(bits[k], limbs)


@kernel()
def _add(word: np.int64, limbs: np.ndarray) -> None:
    """Add the finite double whose IEEE bits are ``word`` into ``limbs``."""
    low32 = np.int64(0xFFFFFFFF)
    exponent = (word >> np.int64(52)) & np.int64(0x7FF)
    mantissa = word & np.int64(0xFFFFFFFFFFFFF)
    if exponent == 0:
        if mantissa == 0:
            return
        exponent = np.int64(1)  # subnormal: m 2**-1074
    else:
        mantissa |= np.int64(1) << np.int64(52)
    shift = exponent - np.int64(1)  # the value is mantissa * 2**(shift - 1074)
    limb = shift >> np.int64(5)
    offset = shift & np.int64(31)
    low = (mantissa & low32) << offset      # < 2**63
    high = (mantissa >> np.int64(32)) << offset  # < 2**52
    parts = (low & low32, (low >> np.int64(32)) + (high & low32), high >> np.int64(32))
    if word < 0:
        limbs[limb] -= parts[0]
        limbs[limb + 1] -= parts[1]
        limbs[limb + 2] -= parts[2]
    else:
        limbs[limb] += parts[0]
        limbs[limb + 1] += parts[1]
        limbs[limb + 2] += parts[2]


def fsum2(a: np.ndarray, b: np.ndarray) -> float:
    """``math.fsum`` of the values of ``a`` then ``b`` (float64, 1-D): the same result."""
    a = np.ascontiguousarray(a, dtype=np.float64).reshape(-1)
    b = np.ascontiguousarray(b, dtype=np.float64).reshape(-1)
    top = max(float(np.max(np.abs(a), initial=0.0)), float(np.max(np.abs(b), initial=0.0)))
    if not top < LARGE or a.size + b.size > MOST:  # inf, NaN, near overflow: math.fsum's answer or error
        return math.fsum(np.concatenate([a, b]).tolist())
    limbs = np.zeros(LIMBS, dtype=np.int64)
    _accumulate(a.view(np.int64), limbs)
    _accumulate(b.view(np.int64), limbs)
    total = sum(int(v) << (32 * k) for k, v in enumerate(limbs.tolist()))
    return total / (1 << 1074)


@kernel()
def _dot(a: np.ndarray, b: np.ndarray, limbs: np.ndarray) -> float:
    """Add every ``a_i b_i``, split without error as ``_directional.split_product`` splits it
    (the same operations: Dekker's product, an error that is not finite dropped), into
    ``limbs``: the exact sum of the same doubles, without arrays of them. Returns
    ``max|a| * max|b|`` (inf if a value is not finite), read on the same pass: the caller
    discards ``limbs`` unless it is below :data:`LARGE` (a value's bits that are not those of
    a finite double land in limbs that exist, whatever they hold)."""
    scratch = np.empty(1, dtype=np.float64)
    bits = scratch.view(np.int64)
    top_a, top_b, finite = 0.0, 0.0, True
    for k in range(a.size):
        x, y = a[k], b[k]
        if not (np.isfinite(x) and np.isfinite(y)):
            finite = False
        top_a = max(top_a, abs(x))
        top_b = max(top_b, abs(y))
        p = x * y
        c = 134217729.0 * x
        xh = c - (c - x)
        xl = x - xh
        c = 134217729.0 * y
        yh = c - (c - y)
        yl = y - yh
        err = ((xh * yh - p) + xh * yl + xl * yh) + xl * yl
        if not np.isfinite(err):
            err = 0.0
        scratch[0] = p
        _add(bits[0], limbs)
        scratch[0] = err
        _add(bits[0], limbs)
    return top_a * top_b if finite else np.inf


def fdot(a: np.ndarray, b: np.ndarray) -> float:
    """``math.fsum`` of the exact split products of ``a`` and ``b`` (float64, 1-D): what
    ``_directional.exact_dot`` computes, bit for bit, without its temporaries; products near
    overflow or not finite go the long way (``None``: the caller's)."""
    a = np.ascontiguousarray(a, dtype=np.float64).reshape(-1)
    b = np.ascontiguousarray(b, dtype=np.float64).reshape(-1)
    if 2 * a.size > MOST:
        return math.nan
    limbs = np.zeros(LIMBS, dtype=np.int64)
    if not _dot(a, b, limbs) < LARGE:  # the maxima's product, read on the same pass
        return math.nan
    total = sum(int(v) << (32 * k) for k, v in enumerate(limbs.tolist()))
    return total / (1 << 1074)
