"""The compiled engine: the whole perturbation loop in one parallel numba kernel.

Applies when ``f`` is a numba ``@njit`` function (scalar- or array-valued) or a
:class:`~gradcheck.native.NativeFunction` (C through cffi), with the numpy backend and
float64 or float32 inputs. The entries are split into chunks run on numba's threads;
each chunk perturbs its own copy of ``x`` in place and restores every entry after its
two evaluations, with no Python in the loop. The arithmetic is the serial engine's:

- the step is cast to the input's dtype, ``x+h`` and ``x-h`` are rounded in that dtype
  (float32 stays float32), and the realized denominator is ``(x+h) - (x-h)`` in float64;
- a scalar output is taken as float64; an array output is reduced in float64 as
  ``np.add.reduce(v * y)`` with the cotangent ``v``, term for term and in numpy's own
  pairwise summation order, so the sums are numpy's to the bit.

So for a deterministic ``f`` the returned ``(f_plus, f_minus, denominator)`` equal the
serial engine's bit for bit (for array outputs, a serial run that reduces with
``np.add.reduce(v * y)``; ``np.dot`` goes through BLAS, whose order is not portable).

An njit ``f`` that writes into its input is refused with
:class:`~gradcheck.InputMutationError` (each entry is compared with ``x`` before it is
perturbed, and each private copy with ``x`` when its chunk ends), as the serial engine
refuses it.

Errors: numba cannot raise out of a parallel loop, so each evaluation runs under
``try/except`` and only records that it raised. After the kernel, the first such
entry is evaluated again from Python, which raises :class:`~gradcheck.FunctionError`
with the entry's index and the original exception chained (exactly what the serial
engine raises there). A C function cannot raise; a NaN it returns is a NaN result.
The kernel cannot be interrupted: Ctrl-C takes effect when it returns (``x`` is never
touched: every thread works on its own copy).
"""
from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from .._core.errors import FunctionError, mutation_error
from .._core.jit import PRANGE, kernel, late
from ..native import NativeFunction
from ._base import Declined, time_call
from ._differences import central_differences

prange = PRANGE

#: Chunks per thread. More than one lets a thread that finishes early (its core was
#: less busy) take more work; each chunk copies ``x`` once, negligible next to its
#: evaluations.
CHUNKS_PER_THREAD = 16

#: With a progress callback, blocks of entries are sized to take about this long.
PROGRESS_SECONDS = 0.25

#: ``auto`` picks this engine when 2N evaluations called from Python are estimated to
#: take longer than this (seconds), since compiling the kernel for a new njit function
#: takes about a second; once the kernel is compiled for ``f``, see
#: :data:`AUTO_WARM_MIN_SECONDS`.
AUTO_MIN_SECONDS = {"njit": 2.0, "native": 0.5}

#: With the kernel already compiled for ``f``, ``auto`` still leaves a check to serial
#: when its 2N evaluations from Python are estimated under this (seconds): each launch
#: of the parallel kernel has a fixed cost, and a check that refines entries launches
#: it several times (six in these runs). Measured on 2 cores (numba's omp threading
#: layer), whole ``check`` of a warm njit Rosenbrock, medians of 11, compiled vs serial,
#: by estimated serial time: idle, 0.09 ms (48 entries): 0.72 vs 0.61 ms; 0.5 ms: 2.3
#: vs 2.0; 0.9 ms: 2.5 vs 2.8; 4.1 ms: 4.1 vs 7.6. With the other core busy (launches
#: then stall 4-8 ms): 0.5 ms: 5.5 vs 2.1; 2.5 ms: 7.5 vs 5.3; 4.1 ms: 8.6 vs 8.0;
#: 9.9 ms: 10.5 vs 12.4. So compiled pays off from ~1 ms idle and ~5-10 ms loaded;
#: under 5 ms, serial costs at most a few milliseconds more, and never the stalls.
AUTO_WARM_MIN_SECONDS = 0.005

_DTYPES = (np.dtype(np.float64), np.dtype(np.float32))
_WARM: set[tuple[Any, ...]] = set()  # kernels already compiled in this process

_RAISED_PLUS, _RAISED_MINUS, _SHAPE_PLUS, _SHAPE_MINUS, _MUTATED = 1, 2, 3, 4, 5


# -- what applies ------------------------------------------------------------------------
def _kind(f: Any) -> str | None:
    """"njit", "native" or None, without importing numba for anything else."""
    if isinstance(f, NativeFunction):
        return "native"
    cls = type(f)
    if cls.__module__.startswith("numba.") and cls.__name__ == "CPUDispatcher":
        return "njit"
    return None


def _numpy_backend(backend: Any) -> bool:
    # The kernel evaluates f itself, which is right only where the backend's evaluation
    # is plain numpy (the numpy backend, or a wrapper of it such as the negative
    # control's "corrupted-numpy").
    return str(getattr(backend, "name", "")).split("-")[-1] == "numpy"


def _unsupported(problem: Any) -> str | None:
    """Why this engine cannot run ``problem`` (None when it can)."""
    kind = _kind(problem.f)
    if kind is None:
        return (f"f is a {type(problem.f).__name__}, not a numba @njit function or a "
                "gradcheck.native.NativeFunction; use engine='serial' (or 'auto')")
    if not _numpy_backend(problem.backend):
        return f"the compiled engine needs the numpy backend, not {getattr(problem.backend, 'name', '?')!r}"
    if problem.work.dtype not in _DTYPES:
        return (f"the compiled engine perturbs float64 or float32 inputs, not {problem.work.dtype}; "
                "use engine='serial'")
    if kind == "native" and problem.cotangent is not None:
        return "a native loss must return a scalar"
    return None


def _warm_key(problem: Any) -> tuple[Any, ...]:
    kind = _kind(problem.f)
    fkey = id(problem.f) if kind == "njit" else "native"
    return (kind, fkey, problem.work.dtype.str, problem.work.ndim, problem.cotangent is None)


def auto_reason(problem: Any) -> str | None:
    """Why ``auto`` should pick this engine, or None when it does not apply, or a
    :class:`Declined` reason when it applies but would not pay off.

    Cheap: no numba import unless ``f`` is already a numba function or a native one; times
    one evaluation of ``f`` (twice when the first says yes: keeping the faster) to judge
    whether compiling the kernel pays off (:data:`AUTO_MIN_SECONDS`) or, when it is
    compiled already, whether the check is big enough for launching it to pay off
    (:data:`AUTO_WARM_MIN_SECONDS`).
    """
    if _unsupported(problem) is not None:
        return None
    kind = _kind(problem.f)
    assert kind is not None  # _unsupported answered None
    what = "a numba @njit function" if kind == "njit" else "a native (cffi) C function"
    if kind == "njit" and problem.f.targetoptions.get("parallel"):
        return None  # f runs its own threads; nesting them in the kernel's gains nothing
    size = problem.work.size
    warm = _warm_key(problem) in _WARM
    minimum = AUTO_WARM_MIN_SECONDS if warm else AUTO_MIN_SECONDS[kind]
    per_call = time_call(problem.evaluate)
    if 2 * size * per_call >= minimum:  # confirm: one call may have been descheduled
        per_call = min(per_call, time_call(problem.evaluate))
    estimate = 2 * size * per_call
    if estimate < minimum:  # too small to repay compiling (or, warm, launching) the kernel
        cost = "launching the compiled kernel" if warm else "compiling a kernel for it (seconds)"
        return Declined(f"f is {what}, but its {2 * size} evaluations from Python take about "
                        f"{_seconds(estimate)}, too little to repay {cost}; engine='compiled' forces it")
    if warm:
        return (f"f is {what} and the kernel for it is compiled: {2 * size} evaluations "
                f"(about {estimate * 1e3:.0f} ms from Python) in parallel threads")
    return (f"f is {what} and {2 * size} evaluations from Python would take about "
            f"{estimate:.1f} s: they run in a parallel numba kernel")


def _seconds(value: float) -> str:
    if value < 0.01:
        return f"{value * 1e3:.1f} ms"
    return f"{value * 1e3:.0f} ms" if value < 1.0 else f"{value:.1f} s"


def make_engine(problem: Any) -> CompiledEngine:
    """The compiled engine for ``problem`` (a clear TypeError when it does not apply)."""
    why = _unsupported(problem)
    if why is not None:
        raise TypeError(f"engine='compiled' cannot check this function: {why}")
    return CompiledEngine(problem)


# -- the engine --------------------------------------------------------------------------
class CompiledEngine:
    """Central differences from a parallel numba kernel (see the module docstring).

    ``compile_seconds`` accumulates the time spent compiling kernels for this check,
    apart from the time spent differencing; ``notes`` says it in words.
    """

    name = "compiled"

    def __init__(self, problem: Any) -> None:
        self.problem = problem
        self.kind = _kind(problem.f)
        self.compile_seconds = 0.0
        self.threads = 0

    @property
    def notes(self) -> tuple[str, ...]:
        return (f"compiled engine: {self.threads} threads; kernel compilation took "
                f"{self.compile_seconds:.2f} s (not differencing time)",)

    def differences(self, flat_indices: np.ndarray, steps: np.ndarray, progress=None):
        """``(f_plus, f_minus, denominator)`` for the entries ``flat_indices``.

        ``progress(done)``, when given, is called between blocks of entries (a kernel
        cannot call back into Python): blocks are sized to take about
        :data:`PROGRESS_SECONDS` each, after the kernel is compiled.
        """
        import numba

        p = self.problem
        idx = np.ascontiguousarray(flat_indices, dtype=np.int64).reshape(-1)
        steps = np.asarray(steps, dtype=np.float64).reshape(-1)
        count = idx.size
        f_plus = np.full(count, np.nan)
        f_minus = np.full(count, np.nan)
        denom = np.full(count, np.nan)
        status = np.zeros(count, dtype=np.uint8)
        if count == 0:
            return f_plus, f_minus, denom
        # The step in the input's dtype, rounded as the serial engine rounds it.
        h = steps.astype(p.work.dtype)
        self.threads = numba.get_num_threads()
        run, before, after = self._kernel_and_args()

        def launch(lo: int, hi: int) -> float:
            """Run entries [lo, hi); the seconds it took, compilation excluded."""
            chunks = max(1, min(hi - lo, self.threads * CHUNKS_PER_THREAD))
            args = (*before, idx[lo:hi], h[lo:hi], chunks, f_plus[lo:hi], f_minus[lo:hi],
                    denom[lo:hi], *after(status[lo:hi]))
            try:
                self.compile_seconds += run.compile_for(*args)
            except numba.core.errors.TypingError as exc:
                raise TypeError(
                    "the compiled engine cannot build its kernel around f: f must take the "
                    "array alone and return a number (or an array, for the cotangent); use "
                    f"engine='serial'. numba said: {str(exc).splitlines()[0]}"
                ) from exc
            began = time.perf_counter()
            with numba.parallel_chunksize(1):  # chunks go to whichever thread is free
                run(*args)
            return time.perf_counter() - began

        if progress is None:
            launch(0, count)
        else:
            start, size = 0, min(count, self.threads * CHUNKS_PER_THREAD)
            while start < count:
                stop = min(count, start + size)
                took = launch(start, stop)
                progress(stop)
                wanted = int(PROGRESS_SECONDS * (stop - start) / took) if took > 0 else size * 8
                size = max(1, min(size * 8, wanted))
                start = stop
        _WARM.add(_warm_key(p))
        failed = np.flatnonzero(status)
        if failed.size:
            self._raise_at(int(failed[0]), idx, steps, int(status[failed[0]]))
        return f_plus, f_minus, denom

    def _kernel_and_args(self):
        """The kernel, its arguments before the entries and a function giving those after."""
        p = self.problem
        if self.kind == "native":
            f = p.f
            loss = f.ffi.cast("double(*)(const double *, int64_t, const int64_t *)", f.loss)
            iparams = np.array(f.iparams if f.iparams else [0], dtype=np.int64)
            return (_native_differences, (loss, p.work.reshape(-1), iparams, bool(f.iparams)),
                    lambda status: ())
        if p.cotangent is None:
            return _njit_scalar_differences, (p.f, p.work), lambda status: (status,)
        v = np.ascontiguousarray(p.cotangent, dtype=np.float64)
        return _njit_array_differences, (p.f, p.work, v), lambda status: (status,)

    def _raise_at(self, j: int, idx: np.ndarray, steps: np.ndarray, code: int) -> None:
        """Re-evaluate entry ``j`` from Python, where its exception carries its message."""
        p = self.problem
        index = tuple(int(k) for k in np.unravel_index(int(idx[j]), p.work.shape))
        if code == _MUTATED:
            raise mutation_error(seen=f" (seen in the compiled engine at entry {index})")
        central_differences(p.evaluate, p.work, idx[j:j + 1], steps[j:j + 1])
        side = "+h" if code in (_RAISED_PLUS, _SHAPE_PLUS) else "-h"
        raise FunctionError(index, side, None, RuntimeError(
            "f raised inside the compiled engine, but not when evaluated again from Python "
            "(is it deterministic?)"))


# -- kernels -----------------------------------------------------------------------------
# Each chunk c of the entries [lo, hi) is one prange iteration: a private copy of x,
# perturbed and restored entry by entry. Results go to disjoint slots, so no two
# threads write the same memory and the values do not depend on the thread count.
# An f that writes into its input would corrupt the copy for the entries after: each
# entry is compared with x before it is perturbed, the perturbed entry with what was set
# there after each call (putting it back would hide a write), and the whole copy at the
# chunk's end.

@kernel()
def _same(a, b):
    """Unchanged: the same value and sign (-0.0 over 0.0 is a write), or NaN where there was NaN
    (a scalar compare cannot see NaN payloads; check() compares the whole array with same_bits)."""
    if a == b:
        return a != 0 or math.copysign(1.0, a) == math.copysign(1.0, b)
    return a != a and b != b


@kernel()
def _first_changed(copy, ref):
    for k in range(ref.size):
        if not _same(copy[k], ref[k]):
            return k
    return -1


@kernel(takes_functions=True)
def _eval_scalar(f, x):
    try:
        return np.float64(f(x)), False
    except Exception:  # noqa: BLE001 - recorded; re-raised from Python with its entry
        return np.nan, True


@kernel(parallel=True, takes_functions=True)
def _njit_scalar_differences(f, work, idx, h, chunks, f_plus, f_minus, denom, status):
    count = idx.size
    ref = work.reshape(work.size)
    for c in prange(chunks):
        xc = work.copy()
        flat = xc.reshape(xc.size)
        lo, hi = c * count // chunks, (c + 1) * count // chunks
        for j in range(lo, hi):
            i = idx[j]
            old = flat[i]
            if not _same(old, ref[i]):
                status[j] = _MUTATED
                break
            if not np.isfinite(old):
                continue
            xp = old + h[j]
            xm = old - h[j]
            flat[i] = xp
            set_p = flat[i]
            fp, raised_p = _eval_scalar(f, xc)
            kept = _same(flat[i], set_p)
            flat[i] = xm
            set_m = flat[i]
            fm, raised_m = _eval_scalar(f, xc)
            kept = kept and _same(flat[i], set_m)
            flat[i] = old
            if raised_p:
                status[j] = _RAISED_PLUS
            elif raised_m:
                status[j] = _RAISED_MINUS
            elif not kept:  # f wrote into the perturbed entry: putting it back hides the write
                status[j] = _MUTATED
            f_plus[j] = fp
            f_minus[j] = fm
            denom[j] = np.float64(xp) - np.float64(xm)
        if hi > lo and status[hi - 1] == 0 and _first_changed(flat, ref) >= 0:
            status[hi - 1] = _MUTATED


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
def _eval_reduced(f, x, v, vflat):
    try:
        y = f(x)
    except Exception:  # noqa: BLE001 - recorded; re-raised from Python with its entry
        return np.nan, 1
    if y.shape != v.shape:
        return np.nan, 2
    return 0.0 + _pairwise(vflat, y.ravel()), 0


@kernel(parallel=True, takes_functions=True)
def _njit_array_differences(f, work, v, idx, h, chunks, f_plus, f_minus, denom, status):
    count = idx.size
    vflat = v.reshape(v.size)
    ref = work.reshape(work.size)
    for c in prange(chunks):
        xc = work.copy()
        flat = xc.reshape(xc.size)
        lo, hi = c * count // chunks, (c + 1) * count // chunks
        for j in range(lo, hi):
            i = idx[j]
            old = flat[i]
            if not _same(old, ref[i]):
                status[j] = _MUTATED
                break
            if not np.isfinite(old):
                continue
            xp = old + h[j]
            xm = old - h[j]
            flat[i] = xp
            set_p = flat[i]
            fp, bad_p = _eval_reduced(f, xc, v, vflat)
            kept = _same(flat[i], set_p)
            flat[i] = xm
            set_m = flat[i]
            fm, bad_m = _eval_reduced(f, xc, v, vflat)
            kept = kept and _same(flat[i], set_m)
            flat[i] = old
            if bad_p:
                status[j] = _RAISED_PLUS if bad_p == 1 else _SHAPE_PLUS
            elif bad_m:
                status[j] = _RAISED_MINUS if bad_m == 1 else _SHAPE_MINUS
            elif not kept:  # f wrote into the perturbed entry: putting it back hides the write
                status[j] = _MUTATED
            f_plus[j] = fp
            f_minus[j] = fm
            denom[j] = np.float64(xp) - np.float64(xm)
        if hi > lo and status[hi - 1] == 0 and _first_changed(flat, ref) >= 0:
            status[hi - 1] = _MUTATED


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


_data_or_null = late(_build_data_or_null)


@kernel(parallel=True)
def _native_differences(loss, work, iparams, has_iparams, idx, h, chunks, f_plus, f_minus, denom):
    # The C loss reads float64; the perturbation is rounded in the input's dtype first
    # (float32 inputs are perturbed in float32, then widened exactly).
    count = idx.size
    n = work.size
    for c in prange(chunks):
        xb = work.astype(np.float64)
        x_ptr = _data_or_null(xb, True)
        ip_ptr = _data_or_null(iparams, has_iparams)
        for j in range(c * count // chunks, (c + 1) * count // chunks):
            i = idx[j]
            old = work[i]
            if not np.isfinite(old):
                continue
            xp = old + h[j]
            xm = old - h[j]
            xb[i] = np.float64(xp)
            fp = loss(x_ptr, n, ip_ptr)
            xb[i] = np.float64(xm)
            fm = loss(x_ptr, n, ip_ptr)
            xb[i] = np.float64(old)
            f_plus[j] = fp
            f_minus[j] = fm
            denom[j] = np.float64(xp) - np.float64(xm)
