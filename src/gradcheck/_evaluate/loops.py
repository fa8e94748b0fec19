"""The compiled runner's numba kernels: points evaluated in a ``prange`` loop, no Python in it.

Each chunk ``c`` of the points is one ``prange`` iteration with a private copy of ``x``: point
``j`` sets entries ``idx[starts[j]:starts[j+1]]`` to their values, calls ``f``, and puts the
entries back. Results go to disjoint slots, so no two threads write the same memory and the
values do not depend on the thread count. An ``f`` that writes into its input would corrupt
the copy for the points after: each entry is compared with ``x`` before it is set, each set
entry with its value after ``f`` returned (putting it back would hide a write), and the whole
copy with ``x`` at the chunk's end. ``status[j]`` records what went wrong at point ``j``
(numba cannot raise out of a parallel loop); the runner re-evaluates that point from Python.

A scalar output is taken as float64; an array output is reduced in float64 as
``np.add.reduce(v * y)`` with the cotangent ``v``, term for term and in numpy's own pairwise
summation order (:func:`reduce_like_numpy`), so the sums are numpy's to the bit; for a
per-slice reduction the whole output is stored, one row per point (:func:`eval_into`).
One kernel, :func:`points`, runs the points with any of the three (:func:`native_points`: a
C function's).

The serial runner's large blocks (a screen's, ``serial.Run.in_passes``) are written, checked
and put back by three small kernels on the values' bits, one pass over the block per
evaluation: :func:`save_and_write`, :func:`check_and_write` and :func:`write_back`.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._core.jit import PRANGE, kernel, late

prange = PRANGE

#: ``status`` codes of a point.
RAISED, SHAPE, MUTATED = 1, 2, 3


@kernel()
def same(a, b):
    """Unchanged: the same value and sign (-0.0 over 0.0 is a write), or NaN where there was NaN
    (a scalar compare cannot see NaN payloads; check() compares the whole array with same_bits)."""
    if a == b:
        return a != 0 or math.copysign(1.0, a) == math.copysign(1.0, b)
    return a != a and b != b


@kernel()
def first_changed(copy, ref):
    for k in range(ref.size):
        if not same(copy[k], ref[k]):
            return k
    return -1


@kernel(takes_functions=True)
def eval_scalar(f, x, unused, out, j):
    """``f(x)`` as float64 into ``out[j]``: 0, or RAISED."""
    try:
        out[j] = np.float64(f(x))
    except Exception:  # noqa: BLE001 - recorded; re-raised from Python with its point
        return RAISED
    return 0


@kernel()
def _pairwise_block(v, y, lo, n):
    # One leaf of numpy's pairwise summation (numpy/_core/src/umath/loops_utils.h.src):
    # n <= 128 terms v[k] * float64(y[k]) summed with eight accumulators.
    if n < 8:
        res = 0.0
        for k in range(lo, lo + n):
            res += v[k] * np.float64(y[k])
        return res
    r0 = v[lo] * np.float64(y[lo])
    r1 = v[lo + 1] * np.float64(y[lo + 1])
    r2 = v[lo + 2] * np.float64(y[lo + 2])
    r3 = v[lo + 3] * np.float64(y[lo + 3])
    r4 = v[lo + 4] * np.float64(y[lo + 4])
    r5 = v[lo + 5] * np.float64(y[lo + 5])
    r6 = v[lo + 6] * np.float64(y[lo + 6])
    r7 = v[lo + 7] * np.float64(y[lo + 7])
    k = lo + 8
    stop = lo + n - n % 8
    while k < stop:
        r0 += v[k] * np.float64(y[k])
        r1 += v[k + 1] * np.float64(y[k + 1])
        r2 += v[k + 2] * np.float64(y[k + 2])
        r3 += v[k + 3] * np.float64(y[k + 3])
        r4 += v[k + 4] * np.float64(y[k + 4])
        r5 += v[k + 5] * np.float64(y[k + 5])
        r6 += v[k + 6] * np.float64(y[k + 6])
        r7 += v[k + 7] * np.float64(y[k + 7])
        k += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while k < lo + n:
        res += v[k] * np.float64(y[k])
        k += 1
    return res


@kernel()
def _pairwise(v, y):
    # numpy's recursion (halves split at a multiple of 8 down to leaves of <= 128
    # terms), run on an explicit stack: numba's cache cannot hold recursive functions.
    n = v.size
    if n <= 128:
        return _pairwise_block(v, y, 0, n)
    task_lo = np.empty(192, dtype=np.int64)   # three tasks per level, < 64 levels
    task_n = np.empty(192, dtype=np.int64)
    task_join = np.empty(192, dtype=np.bool_)
    sums = np.empty(64)
    task_lo[0], task_n[0], task_join[0] = 0, n, False
    tasks, depth = 1, 0
    while tasks:
        tasks -= 1
        lo, m, join = task_lo[tasks], task_n[tasks], task_join[tasks]
        if join:
            depth -= 1
            sums[depth - 1] = sums[depth - 1] + sums[depth]
        elif m <= 128:
            sums[depth] = _pairwise_block(v, y, lo, m)
            depth += 1
        else:
            half = m // 2
            half -= half % 8
            # popped in the order: left half, right half, then their sum
            task_lo[tasks], task_n[tasks], task_join[tasks] = lo, m, True
            task_lo[tasks + 1], task_n[tasks + 1], task_join[tasks + 1] = lo + half, m - half, False
            task_lo[tasks + 2], task_n[tasks + 2], task_join[tasks + 2] = lo, half, False
            tasks += 3
    return sums[0]


@kernel()
def reduce_like_numpy(v, y):
    """``np.add.reduce(v * y.astype(float64))`` for 1-D ``v``, ``y``: the same bits."""
    return 0.0 + _pairwise(v, y)


@kernel(takes_functions=True)
def eval_reduced(f, x, v, out, j):
    """``np.add.reduce(v * f(x))`` (float64) into ``out[j]``: 0, RAISED, or SHAPE for another
    shape than the cotangent ``v``'s."""
    try:
        y = f(x)
    except Exception:  # noqa: BLE001 - recorded; re-raised from Python with its point
        return RAISED
    if y.shape != v.shape:
        return SHAPE
    out[j] = 0.0 + _pairwise(v.reshape(v.size), y.ravel())
    return 0


@kernel()
def _point_moved(flat, ref, idx, a, b):
    """Whether an entry of the point ``idx[a:b]`` no longer holds ``x``'s value (an earlier
    call wrote where this point perturbs)."""
    for k in range(a, b):  # noqa: SIM110 - numba compiles loops, not generator expressions
        if not same(flat[idx[k]], ref[idx[k]]):
            return True
    return False


@kernel()
def _put_back(flat, ref, idx, vals, a, b):
    """Put the point's entries back; whether each still held its value (else ``f`` wrote there)."""
    kept = True
    for k in range(a, b):
        if not same(flat[idx[k]], vals[k]):
            kept = False
        flat[idx[k]] = ref[idx[k]]
    return kept


@kernel(takes_functions=True)
def eval_into(f, x, shape, ys, j):
    """``f(x)`` flattened into row ``j`` of ``ys`` (float64): 0, RAISED, or SHAPE for another
    shape than ``shape``."""
    row = ys[j]
    try:
        y = f(x)
    except Exception:  # noqa: BLE001 - recorded; re-raised from Python with its point
        return RAISED
    if y.ndim != shape.size:
        return SHAPE
    for d in range(y.ndim):
        if y.shape[d] != shape[d]:
            return SHAPE
    flat = y.ravel()
    for k in range(row.size):
        row[k] = np.float64(flat[k])
    return 0


@kernel(parallel=True, takes_functions=True)
def points(evaluate, f, work, aux, idx, vals, starts, chunks, out, status):
    """Points ``j`` of each chunk set on the chunk's copy of ``work`` and evaluated by
    ``evaluate(f, copy, aux, out, j)``, which stores point ``j``'s result in ``out`` and returns
    its status: :func:`eval_scalar` (``out[j]``), :func:`eval_reduced` (``aux`` the cotangent)
    or :func:`eval_into` (``aux`` the output's shape; ``f``'s whole output in row ``j``, a
    per-slice reduction made from it in Python, the serial runner's own code)."""
    count = starts.size - 1
    ref = work.reshape(work.size)
    for c in prange(chunks):
        xc = work.copy()
        flat = xc.reshape(xc.size)
        lo, hi = c * count // chunks, (c + 1) * count // chunks
        for j in range(lo, hi):
            a, b = starts[j], starts[j + 1]
            if _point_moved(flat, ref, idx, a, b):
                status[j] = MUTATED
                break
            for k in range(a, b):
                flat[idx[k]] = vals[k]
            code = evaluate(f, xc, aux, out, j)
            kept = _put_back(flat, ref, idx, vals, a, b)
            if code:
                status[j] = code
            elif not kept:
                status[j] = MUTATED
        if hi > lo and status[hi - 1] == 0 and first_changed(flat, ref) >= 0:
            status[hi - 1] = MUTATED


#: The integer type holding a float dtype's bits (the block kernels below compare and move bits).
BITS = {np.dtype(np.float64): np.int64, np.dtype(np.float32): np.int32}


@kernel()
def _in_range(memory, idx):
    n = memory.size
    for k in range(idx.size):
        if idx[k] < 0 or idx[k] >= n:
            raise IndexError("a block's index is outside x")


@kernel()
def save_and_write(memory, idx, old, new):
    """``old = memory[idx]``, then ``memory[idx] = new`` (one pass; the indices checked first):
    the serial runner's large blocks (``serial.Run.in_passes``), on the values' bits."""
    _in_range(memory, idx)
    for k in range(idx.size):
        i = idx[k]
        old[k] = memory[i]
        memory[i] = new[k]


@kernel()
def check_and_write(memory, idx, expected, new):
    """``memory[idx] = new`` in one pass, checking on the way that ``memory[idx]`` held
    ``expected``: the first position where it did not, or -1 (every position is written)."""
    _in_range(memory, idx)
    moved = -1
    for k in range(idx.size):
        i = idx[k]
        if moved < 0 and memory[i] != expected[k]:
            moved = k
        memory[i] = new[k]
    return moved


@kernel()
def write_back(memory, idx, new):
    """``memory[idx] = new`` (the indices checked first)."""
    _in_range(memory, idx)
    for k in range(idx.size):
        memory[idx[k]] = new[k]


def _build_data_or_null(numba: Any) -> Any:
    from numba.core import cgutils, types
    from numba.extending import intrinsic

    @intrinsic
    def data_or_null(typingctx, arr, use):
        """A pointer to ``arr``'s data, or NULL when ``use`` is False (C's "no params")."""
        ptr_t = types.CPointer(arr.dtype)

        def codegen(context, builder, sig, args):
            ary = context.make_array(sig.args[0])(context, builder, args[0])
            return builder.select(args[1], ary.data, cgutils.get_null_value(ary.data.type))

        return ptr_t(arr, use), codegen

    return data_or_null


data_or_null = late(_build_data_or_null)


@kernel(parallel=True)
def native_points(loss, work, iparams, has_iparams, idx, vals, starts, chunks, out):
    # The C loss reads float64: each chunk works on a float64 copy of x, and a point's values
    # (in x's dtype) are widened exactly. A C function cannot raise (a NaN it returns is the
    # value) and takes const double *: no mutation check is made for it.
    count = starts.size - 1
    n = work.size
    for c in prange(chunks):
        xb = work.astype(np.float64)
        x_ptr = data_or_null(xb, True)
        ip_ptr = data_or_null(iparams, has_iparams)
        for j in range(c * count // chunks, (c + 1) * count // chunks):
            for k in range(starts[j], starts[j + 1]):
                xb[idx[k]] = np.float64(vals[k])
            out[j] = loss(x_ptr, n, ip_ptr)
            for k in range(starts[j], starts[j + 1]):
                xb[idx[k]] = np.float64(work[idx[k]])
