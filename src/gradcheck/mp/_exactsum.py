"""Exact sums of binary floats and of their products, at float speed (numba kernels).

Every finite binary float is an integer times a power of two, so a sum of floats, or of
products of floats, is a sum of integers times powers of two: exact in a long enough
fixed-point accumulator. The accumulator here is an int64 array of *chunks*; chunk ``k``
weighs ``2**(32 k + EMIN)`` and holds a 32-bit digit between carry propagations, with 31 bits
of headroom, so that more than two billion additions of at most 32 bits each into a chunk
cannot overflow. A term ``m * 2**e`` (``|m| < 2**62``) lands in three neighbouring chunks.

Products are exact as integers: each operand is split into *limbs* of at most 31 bits
(:func:`limbs`: one limb for bfloat16, float16 and float32 values, two for float64), and the
product of two limbs fits an int64. So a matrix product of low-precision inputs costs one
integer multiply and three chunk additions per multiply-add, with no rounding anywhere.

What comes out of the accumulator is the exact value's expansion in float64 components,
``c0 = RN(S)``, ``c1 = RN(S - c0)``, ... (round to nearest even; zero once the value is
exhausted): ``c0`` is the correctly rounded float64 result, the sign of ``c1`` settles the
correct rounding to any narrower format where ``c0`` sits on a midpoint, and the sum of the
components is the exact value (to ``53 * ncomp`` bits at least), ready for an arbitrary-
precision computation to go on from. Results below ``2**-1074`` in magnitude come out as
zeros (they are far below the resolution of every format); inputs must be finite.

The accumulator itself is :mod:`gradcheck.mp._accumulator`. Kernels are declared through
:func:`gradcheck._core.jit.kernel` (cached, compiled on first
use); the Python functions below prepare the arrays and call them.

>>> import numpy as np
>>> c = exact_sum(np.array([[1e16, 1.0, -1e16]]), ncomp=2)
>>> c.tolist()                  # numpy's pairwise sum gives 0.0
[[1.0, 0.0]]
"""
from __future__ import annotations

import multiprocessing
import os

import numpy as np

from .._core.jit import PRANGE, kernel
from ._accumulator import (
    _TWO53,
    EMIN,
    MAX_COMPONENTS,
    NCHUNKS,
    _add,
    _add_double,
    _clear,
    _extract,
)

#: Limbs of at most this many bits multiply exactly in an int64.
LIMB_BITS = 31
#: The float64 bins of the narrow matrix product span 2**BIN_SHIFT exponents each.
BIN_SHIFT = 4

prange = PRANGE


@kernel()
def _sum_row(x, r, out):
    """out[r] = the components of sum(x[r])."""
    acc = np.zeros(NCHUNKS, np.int64)
    lo, hi = NCHUNKS, 0
    for n in range(x.shape[1]):
        idx = _add_double(acc, x[r, n])
        if idx >= 0:
            lo, hi = min(lo, idx), max(hi, idx + 2)
    if lo > hi:
        out[r, :] = 0.0
    else:
        _extract(acc, lo, hi, out[r])


@kernel()
def _cumsum_row(x, r, out):
    """out[r, n] = the components of sum(x[r, :n + 1])."""
    acc = np.zeros(NCHUNKS, np.int64)
    lo, hi = NCHUNKS, 0
    for n in range(x.shape[1]):
        idx = _add_double(acc, x[r, n])
        if idx >= 0:
            lo, hi = min(lo, idx), max(hi, idx + 2)
        if lo > hi:
            out[r, n, :] = 0.0
            continue
        hi = _extract(acc, lo, hi, out[r, n])
        for c in range(out.shape[2]):  # put the value back: the running sum goes on
            idx = _add_double(acc, out[r, n, c])
            if idx >= 0:
                lo, hi = min(lo, idx), max(hi, idx + 2)


@kernel()
def _matmul_limbs_row(am, ae, bm, be, gi, out):
    """out[g, i, j] for every j = the components of sum_k a[g, i, k] b[g, k, j] (gi = g *
    rows + i), with a[g, i, k] = sum_p am[g, i, k, p] 2**ae[g, i, k, p] (limbs) and b given
    transposed: bm[g, j, k, q], be[g, j, k, q]."""
    rows, depth, la = am.shape[1], am.shape[2], am.shape[3]
    g, i = gi // rows, gi % rows
    acc = np.zeros(NCHUNKS, np.int64)
    for j in range(bm.shape[1]):
        lo, hi = NCHUNKS, 0
        for k in range(depth):
            for p in range(la):
                ma = am[g, i, k, p]
                if ma == 0:
                    continue
                for q in range(bm.shape[3]):
                    mb = bm[g, j, k, q]
                    if mb == 0:
                        continue
                    idx = _add(acc, ma * mb, ae[g, i, k, p] + be[g, j, k, q])
                    if idx < lo:
                        lo = idx
                    if idx + 2 > hi:
                        hi = idx + 2
        if lo > hi:
            out[g, i, j, :] = 0.0
            continue
        top = _extract(acc, lo, hi, out[g, i, j])
        _clear(acc, lo, top)


@kernel()
def _matmul_bins_row(a, ae, b, be, pmin, nbins, gi, out):
    """:func:`_matmul_limbs_row` for narrow values (see :func:`exact_matmul`): each product
    is an exact float64 whose lowest bit weighs ``2**(ae + be)``; it is added, in float64, to
    the bin of that exponent (bins 2**BIN_SHIFT exponents wide), where the sum stays exact
    (the caller checked the bit budget); the bins then go to the accumulator once. Four sets
    of bins take turns, so that consecutive products falling into one bin do not wait for
    each other's additions."""
    rows, depth = a.shape[1], a.shape[2]
    g, i = gi // rows, gi % rows
    acc = np.zeros(NCHUNKS, np.int64)
    bins = np.zeros((4, nbins))
    ar, er = a[g, i], ae[g, i] - pmin
    for j in range(b.shape[1]):
        br, fr = b[g, j], be[g, j]
        k = 0
        while k + 4 <= depth:
            bins[0, (er[k] + fr[k]) >> BIN_SHIFT] += ar[k] * br[k]
            bins[1, (er[k + 1] + fr[k + 1]) >> BIN_SHIFT] += ar[k + 1] * br[k + 1]
            bins[2, (er[k + 2] + fr[k + 2]) >> BIN_SHIFT] += ar[k + 2] * br[k + 2]
            bins[3, (er[k + 3] + fr[k + 3]) >> BIN_SHIFT] += ar[k + 3] * br[k + 3]
            k += 4
        while k < depth:
            bins[0, (er[k] + fr[k]) >> BIN_SHIFT] += ar[k] * br[k]
            k += 1
        lo, hi = NCHUNKS, 0
        for s in range(4):
            for t in range(nbins):
                idx = _add_double(acc, bins[s, t])
                bins[s, t] = 0.0
                if idx >= 0:
                    lo, hi = min(lo, idx), max(hi, idx + 2)
        if lo > hi:
            out[g, i, j, :] = 0.0
            continue
        top = _extract(acc, lo, hi, out[g, i, j])
        _clear(acc, lo, top)


# Each computation twice: rows on threads (prange), and serial for a process that must not
# start OpenMP threads (a forked worker of a process that did: GNU OpenMP kills it).
@kernel(parallel=True)
def _sum_rows_threads(x, out):
    for r in prange(x.shape[0]):
        _sum_row(x, r, out)


@kernel()
def _sum_rows_serial(x, out):
    for r in range(x.shape[0]):
        _sum_row(x, r, out)


@kernel(parallel=True)
def _cumsum_rows_threads(x, out):
    for r in prange(x.shape[0]):
        _cumsum_row(x, r, out)


@kernel()
def _cumsum_rows_serial(x, out):
    for r in range(x.shape[0]):
        _cumsum_row(x, r, out)


@kernel(parallel=True)
def _matmul_limbs_threads(am, ae, bm, be, out):
    for gi in prange(am.shape[0] * am.shape[1]):
        _matmul_limbs_row(am, ae, bm, be, gi, out)


@kernel()
def _matmul_limbs_serial(am, ae, bm, be, out):
    for gi in range(am.shape[0] * am.shape[1]):
        _matmul_limbs_row(am, ae, bm, be, gi, out)


@kernel(parallel=True)
def _matmul_bins_threads(a, ae, b, be, pmin, nbins, out):
    for gi in prange(a.shape[0] * a.shape[1]):
        _matmul_bins_row(a, ae, b, be, pmin, nbins, gi, out)


@kernel()
def _matmul_bins_serial(a, ae, b, be, pmin, nbins, out):
    for gi in range(a.shape[0] * a.shape[1]):
        _matmul_bins_row(a, ae, b, be, pmin, nbins, gi, out)


@kernel()
def _low_exponents(xi, e_out):
    """For float64 values given as their bits (``x.view(np.int64)``): e_out[n] = the
    exponent of the lowest set bit of x[n] (as :func:`limbs` gives it for a one-limb value,
    -53 for a zero); returns the most significant bits of any x[n]."""
    most = 0
    for n in range(xi.size):
        b = xi[n]
        field = (b >> 52) & 2047
        m = b & 4503599627370495  # the 52 stored bits
        e = np.int64(-1074)
        if field:
            m |= 4503599627370496  # the implicit bit
            e = field - 1075
        if m == 0:
            e_out[n] = -53
            continue
        for shift in (32, 16, 8, 4, 2, 1):  # drop the trailing zeros
            if m & ((np.int64(1) << shift) - 1) == 0:
                m >>= shift
                e += shift
        e_out[n] = e
        bits = 1
        for shift in (32, 16, 8, 4, 2, 1):  # the bit length of what is left
            if m >> shift:
                m >>= shift
                bits += shift
        most = max(most, bits)
    return most


@kernel()
def _magnitudes_serial(a, b, out):
    """out[g, i, j] = sum_k a[g, i, k] b[g, k, j] in float64, for non-negative values (the
    order of the additions is immaterial to a magnitude): no BLAS, whose threads, spinning
    after a call on a busy machine, cost more than the product itself."""
    for g in range(a.shape[0]):
        for i in range(a.shape[1]):
            for j in range(b.shape[2]):
                out[g, i, j] = 0.0
            for k in range(a.shape[2]):
                x = a[g, i, k]
                if x == 0.0:
                    continue
                for j in range(b.shape[2]):
                    out[g, i, j] += x * b[g, k, j]


_HOME = os.getpid()


#: Below this many elementary steps a kernel runs serially: starting threads costs more (and
#: on a busy machine spinning OpenMP threads cost far more) than they save.
THREADS_FROM = 1 << 24


def _threaded(asked: bool, work: int) -> bool:
    return asked and work >= THREADS_FROM and threads_allowed()


def threads_allowed() -> bool:
    """Whether kernels may run on threads here: not in a worker process (a forked worker
    of a process that started GNU OpenMP threads dies when it starts its own)."""
    return os.getpid() == _HOME and multiprocessing.parent_process() is None


# -- preparing the arrays ----------------------------------------------------------------


def limbs(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``x`` (finite float64) as integer limbs: ``x == sum(m * 2.0**e, axis=-1)`` exactly,
    each ``|m| < 2**31``; one limb per value when every value has at most 31 significant
    bits (bfloat16, float16, float32 values), two otherwise.

    >>> m, e = limbs(np.array([0.75, -3.0]))
    >>> m[..., 0].tolist(), e[..., 0].tolist()
    ([3, -3], [-2, 0])
    """
    f, ex = np.frexp(x)
    m = (f * _TWO53).astype(np.int64)
    e = ex.astype(np.int64) - 53
    mag = np.abs(m)
    lowest = mag & -mag  # the lowest set bit: trailing zeros move into the exponent
    tz = np.where(mag > 0, np.frexp(lowest.astype(np.float64))[1] - 1, 0).astype(np.int64)
    m = m >> tz  # exact: those bits are zero (an arithmetic shift keeps the sign)
    e = e + tz
    bits = np.frexp(np.abs(m).astype(np.float64))[1]  # bit length (|m| < 2**53: exact)
    if not m.size or int(bits.max()) <= LIMB_BITS:
        return m[..., None], e[..., None]
    high = m >> 26  # m = high * 2**26 + low, low in [0, 2**26)
    low = m - (high << 26)
    return np.stack([high, low], axis=-1), np.stack([e + 26, e], axis=-1)


def components_for(prec: int) -> int:
    """Float64 components that carry at least ``prec`` bits of the exact value, and one more
    (whose sign settles a rounding that falls on a midpoint)."""
    return min(MAX_COMPONENTS, -(-(int(prec) + 1) // 53) + 1)


def _require_finite(*arrays: np.ndarray) -> None:
    for a in arrays:
        if not np.isfinite(a).all():
            raise ValueError("exact sums need finite inputs")


def exact_sum(x: np.ndarray, ncomp: int = 2, *, threads: bool = False) -> np.ndarray:
    """The components of the exact sum of each row of ``x`` (2-d float64): shape
    ``(rows, ncomp)``. ``threads``: rows on threads (where :func:`threads_allowed`)."""
    x = np.ascontiguousarray(x, dtype=np.float64)
    _require_finite(x)
    out = np.empty((x.shape[0], ncomp))
    (_sum_rows_threads if _threaded(threads, x.size) else _sum_rows_serial)(x, out)
    return out


def exact_cumsum(x: np.ndarray, ncomp: int = 2, *, threads: bool = False) -> np.ndarray:
    """The components of the exact prefix sums along each row of ``x`` (2-d float64):
    shape ``x.shape + (ncomp,)``.

    >>> exact_cumsum(np.array([[1e16, 1.0, -1e16]]), ncomp=1)[0, :, 0].tolist()
    [1e+16, 1e+16, 1.0]
    """
    x = np.ascontiguousarray(x, dtype=np.float64)
    _require_finite(x)
    out = np.empty(x.shape + (ncomp,))
    (_cumsum_rows_threads if _threaded(threads, 4 * x.size) else _cumsum_rows_serial)(x, out)
    return out


def exact_matmul(a: np.ndarray, b: np.ndarray, ncomp: int = 2, *, threads: bool = False) -> np.ndarray:
    """The components of the exact product of each pair of matrices: ``a`` of shape
    ``(groups, m, k)``, ``b`` of shape ``(groups, k, n)`` (float64); shape
    ``(groups, m, n, ncomp)``; ``threads``: rows on threads (where :func:`threads_allowed`).

    Narrow values (bfloat16, float16 products and the like) take the fast path: a product
    of values of ``ba`` and ``bb`` significant bits has ``ba + bb`` bits, so ``k`` of them
    with lowest bits within 16 exponents of each other add exactly in float64 as long as
    ``ba + bb + 15 + log2(k) <= 53``; other values go through integer limbs.

    >>> a = np.array([[[2.0**60, 1.0, -2.0**60]]]); b = np.array([[[1.0], [3.0], [1.0]]])
    >>> exact_matmul(a, b, ncomp=1)[0, 0, 0].tolist()
    [3.0]
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.ndim != 3 or b.ndim != 3 or a.shape[0] != b.shape[0] or a.shape[2] != b.shape[1]:
        raise ValueError(f"exact_matmul needs (g, m, k) and (g, k, n) arrays, got {a.shape} and {b.shape}")
    _require_finite(a, b)
    a = np.ascontiguousarray(a)
    bt = np.ascontiguousarray(np.swapaxes(b, 1, 2))
    out = np.empty(a.shape[:2] + (b.shape[2], ncomp))
    depth_bits = max(int(a.shape[2]) - 1, 1).bit_length()
    if a.size and b.size:
        ea, eb = np.empty(a.shape, np.int64), np.empty(bt.shape, np.int64)
        bits_a = _low_exponents(a.reshape(-1).view(np.int64), ea.reshape(-1))
        bits_b = _low_exponents(bt.reshape(-1).view(np.int64), eb.reshape(-1))
        if bits_a + bits_b + (1 << BIN_SHIFT) - 1 + depth_bits <= 53:  # exact in float64 bins
            pmin = int(ea.min()) + int(eb.min())
            nbins = ((int(ea.max()) + int(eb.max()) - pmin) >> BIN_SHIFT) + 1
            work = a.shape[0] * a.shape[1] * a.shape[2] * b.shape[2]
            bins = _matmul_bins_threads if _threaded(threads, work) else _matmul_bins_serial
            bins(a, ea, bt, eb, pmin, nbins, out)
            return out
    am, ae = limbs(a)
    bm, be = limbs(bt)
    work = a.shape[0] * a.shape[1] * a.shape[2] * b.shape[2] * am.shape[-1] * bm.shape[-1] * 4
    limbed = _matmul_limbs_threads if _threaded(threads, work) else _matmul_limbs_serial
    limbed(np.ascontiguousarray(am), np.ascontiguousarray(ae), np.ascontiguousarray(bm),
           np.ascontiguousarray(be), out)
    return out


def magnitude_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` for non-negative float64 ``a`` (g, m, k) and ``b`` (g, k, n), serially in
    a numba kernel (a sensitivity: rounding is immaterial).

    >>> magnitude_matmul(np.ones((1, 2, 3)), np.full((1, 3, 1), 0.5))[..., 0].tolist()
    [[1.5, 1.5]]
    """
    a = np.ascontiguousarray(a, dtype=np.float64)
    b = np.ascontiguousarray(b, dtype=np.float64)
    out = np.empty(a.shape[:2] + b.shape[2:])
    _magnitudes_serial(a, b, out)
    return out


def round_components(c: np.ndarray) -> np.ndarray:
    """The float64 value nearest to the exact value whose components are ``c`` (last axis):
    the first component (float64 rounding is what the kernels produce)."""
    return np.ascontiguousarray(c[..., 0])


__all__ = ["EMIN", "NCHUNKS", "LIMB_BITS", "MAX_COMPONENTS", "limbs", "components_for", "threads_allowed",
           "exact_sum", "exact_cumsum", "exact_matmul", "magnitude_matmul", "round_components"]
