"""The long accumulator of the exact kernels (:mod:`gradcheck.mp._exactsum`).

An int64 array of *chunks*; chunk ``k`` weighs ``2**(32 k + EMIN)`` and holds a 32-bit digit
between carry propagations, with 31 bits of headroom, so that more than two billion
additions of at most 32 bits each into a chunk cannot overflow. A term ``m * 2**e``
(``|m| < 2**62``) lands in three neighbouring chunks (:func:`_add`); :func:`_extract` takes
the exact value out as float64 components, each the nearest float64 to what the previous
ones leave.
"""
from __future__ import annotations

import math

import numpy as np

from .._core.jit import kernel

#: Exponent of the lowest bit of chunk 0: below every product of two float64 values.
EMIN = -2208
#: Chunks in an accumulator: up to products of two float64 values near the largest float64,
#: summed, with room for the carries.
NCHUNKS = 140
#: The most float64 components asked of one result.
MAX_COMPONENTS = 8
_MASK = 0xFFFFFFFF
_ZERO_LEAD = -(1 << 40)  # "the value is zero" from _leading
_TWO53 = 9007199254740992.0


@kernel()
def _add(acc, m, e):
    """Add ``m * 2**e`` (``|m| < 2**62``) to the accumulator; returns the lowest chunk
    written (the highest is that + 2)."""
    p = e - EMIN
    idx = p >> 5
    sh = p & 31
    a = -m if m < 0 else m
    low = (a & ((1 << (32 - sh)) - 1)) << sh
    rest = a >> (32 - sh)
    if m < 0:
        acc[idx] -= low
        acc[idx + 1] -= rest & _MASK
        acc[idx + 2] -= rest >> 32
    else:
        acc[idx] += low
        acc[idx + 1] += rest & _MASK
        acc[idx + 2] += rest >> 32
    return idx


@kernel()
def _add_double(acc, v):
    """Add the float64 ``v`` (finite) exactly; returns the lowest chunk written (or -1)."""
    if v == 0.0:
        return -1
    f, ex = math.frexp(v)
    return _add(acc, np.int64(f * _TWO53), np.int64(ex) - 53)


@kernel()
def _normalize(acc, lo, hi):
    """Propagate carries over chunks ``lo..hi`` so that each holds a digit in [0, 2**32);
    the signed remainder goes to chunk ``hi + 1``. Returns the top chunk: the highest
    non-zero one (``lo`` for a zero value), whose sign is the value's."""
    carry = 0
    for k in range(lo, hi + 1):
        v = acc[k] + carry
        carry = v >> 32
        acc[k] = v & _MASK
    acc[hi + 1] += carry
    top = hi + 1
    while top > lo and acc[top] == 0:
        top -= 1
    return top


@kernel()
def _magnitude(acc, lo, hi):
    """Normalize chunks ``lo..hi`` and make the value non-negative; returns (top, sign)."""
    top = _normalize(acc, lo, hi)
    if acc[top] >= 0:
        return top, 1.0
    for k in range(lo, top + 1):
        acc[k] = -acc[k]
    return _normalize(acc, lo, top - 1), -1.0


@kernel()
def _leading(acc, lo, top):
    """(lead, W, sticky) of a normalized non-negative accumulator: ``2**lead`` the weight
    of its leading one, W its 64 leading bits as a uint64 with that one at bit 63, sticky
    whether any bit below them is set; lead is _ZERO_LEAD for a zero value."""
    h = top
    while h >= lo and acc[h] == 0:
        h -= 1
    if h < lo:
        return _ZERO_LEAD, np.uint64(0), False
    top_digit = acc[h]
    nb = 0
    while (top_digit >> nb) != 0:
        nb += 1
    w = np.uint64(top_digit) << np.uint64(64 - nb)
    sticky = False
    if h - 1 >= lo:
        w |= np.uint64(acc[h - 1]) << np.uint64(32 - nb)
    if h - 2 >= lo:
        w |= np.uint64(acc[h - 2]) >> np.uint64(nb)
        sticky = (acc[h - 2] & ((1 << nb) - 1)) != 0
    for k in range(lo, h - 2):
        if acc[k] != 0:
            sticky = True
    return 32 * h + nb - 1 + EMIN, w, sticky


@kernel()
def _round_leading(w, sticky, lead):
    """The float64 nearest (ties to even) to the value whose 64 leading bits are ``w``
    (leading one at bit 63, weighing ``2**lead``), with ``sticky`` bits below them."""
    if lead > 1023:
        return math.inf
    keep = 53 if lead >= -1022 else lead + 1075  # fewer bits in float64's subnormal range
    if keep <= 0:
        if keep == 0 and (w > np.uint64(1) << np.uint64(63) or sticky):
            return math.ldexp(1.0, -1074)
        return 0.0
    drop = np.uint64(64 - keep)
    mant = w >> drop
    rem = w & ((np.uint64(1) << drop) - np.uint64(1))
    half = np.uint64(1) << (drop - np.uint64(1))
    if rem > half or (rem == half and (sticky or (mant & np.uint64(1)) == np.uint64(1))):
        mant += np.uint64(1)
    return math.ldexp(float(mant), lead - keep + 1)


@kernel()
def _extract(acc, lo, hi, dest):
    """Write the leading float64 components of the accumulated value into ``dest`` (all of
    it), subtracting each from the accumulator; chunks ``lo..hi`` were written. Returns the
    highest chunk that may hold a digit afterwards (for the caller to clear or go on)."""
    for c in range(dest.shape[0]):
        top, sign = _magnitude(acc, lo, hi)
        lead, w, sticky = _leading(acc, lo, top)
        if lead == _ZERO_LEAD:
            dest[c:] = 0.0
            return top
        v = sign * _round_leading(w, sticky, lead)
        dest[c] = v
        if not math.isfinite(v):
            dest[c + 1:] = 0.0
            return top
        if sign < 0:  # back to the signed value the next component is taken from
            for k in range(lo, top + 1):
                acc[k] = -acc[k]
        idx = _add_double(acc, -v)
        hi = max(top, idx + 2)
    return hi


@kernel()
def _clear(acc, lo, hi):
    for k in range(lo, min(hi + 2, acc.shape[0])):
        acc[k] = 0


__all__ = ["EMIN", "NCHUNKS", "MAX_COMPONENTS"]
