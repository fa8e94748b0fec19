"""The compiled runner: a batch of points in one parallel numba kernel (:mod:`.loops`).

Applies when ``f`` is a numba ``@njit`` function (scalar- or array-valued) or a
:class:`~gradcheck.native.NativeFunction` (C through cffi), with the numpy backend and float64
or float32 inputs. The points are split into chunks run on numba's threads; each chunk perturbs
its own copy of ``x``, with no Python in the loop. The values are the points' own (the
generator rounded them in ``x``'s dtype), a scalar output is taken as float64 and an array
output reduced as ``np.add.reduce(v * y)`` in numpy's pairwise order: for a deterministic ``f``
the results equal the serial runner's bit for bit.

With a per-slice reduction (independent axes) ``f`` must be an ``@njit`` function returning an
array: the kernel stores each point's whole output (:func:`~.loops.eval_into`), a block of
points at a time within :data:`RAW_BUDGET_BYTES`, and the serial runner's own reduction
(``slices.per_entry``) is applied to each row: the same bits as serial.

An njit ``f`` that writes into its input is refused with :class:`~gradcheck.InputMutationError`,
as the serial runner refuses it. Errors: numba cannot raise out of a parallel loop, so each
evaluation runs under ``try/except`` and only records that it raised; after the kernel the first
such point is evaluated again from Python, which raises :class:`~gradcheck.FunctionError` at
its entry (exactly what the serial runner raises there). A C function cannot raise; a NaN it
returns is the value. The kernel cannot be interrupted: Ctrl-C takes effect when it returns
(``x`` is never touched: every thread works on its own copy).
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from .._core.errors import FunctionError, mutation_error
from ..native import NativeFunction
from . import loops
from .points import Points
from .serial import run_here
from .target import Target, answer_slices, entry_of

#: Chunks per thread. More than one lets a thread that finishes early (its core was less
#: busy) take more work; each chunk copies ``x`` once, negligible next to its evaluations.
CHUNKS_PER_THREAD = 16
#: With a progress callback, blocks of points are sized to take about this long.
PROGRESS_SECONDS = 0.25
#: A per-slice target's stored outputs (one row of f's output per point) stay under this.
RAW_BUDGET_BYTES = 16 * 2**20

DTYPES = (np.dtype(np.float64), np.dtype(np.float32))
_WARM: set[tuple[Any, ...]] = set()  # kernels already compiled in this process


def kind_of(f: Any) -> str | None:
    """``"njit"``, ``"native"`` or None, without importing numba for anything else."""
    if isinstance(f, NativeFunction):
        return "native"
    cls = type(f)
    if cls.__module__.startswith("numba.") and cls.__name__ == "CPUDispatcher":
        return "njit"
    return None


def numpy_backend(backend: Any) -> bool:
    """The backend's evaluation is plain numpy (the kernel evaluates ``f`` itself): the numpy
    backend, or a wrapper of it such as the negative control's ``"corrupted-numpy"``."""
    return str(getattr(backend, "name", "")).split("-")[-1] == "numpy"


def unsupported(target: Target) -> str | None:
    """Why this runner cannot run ``target`` (None when it can)."""
    kind = kind_of(target.f)
    if kind is None:
        return (f"f is a {type(target.f).__name__}, not a numba @njit function or a "
                "gradcheck.native.NativeFunction; use engine='serial' (or 'auto')")
    if not numpy_backend(target.backend):
        return f"the compiled engine needs the numpy backend, not {getattr(target.backend, 'name', '?')!r}"
    if target.work.dtype not in DTYPES:
        return (f"the compiled engine perturbs float64 or float32 inputs, not {target.work.dtype}; "
                "use engine='serial'")
    if kind == "native" and target.cotangent is not None:
        return "a native loss must return a scalar"
    if kind == "native" and target.slices is not None:
        return "a native (C) function returns a scalar; a per-slice reduction needs a numba @njit f that returns an array"
    return None


def warm_key(target: Target) -> tuple[Any, ...]:
    kind = kind_of(target.f)
    fkey = id(target.f) if kind == "njit" else "native"
    return (kind, fkey, target.work.dtype.str, target.work.ndim, target.cotangent is None, target.slices is None)


def is_warm(target: Target) -> bool:
    """Whether the kernel for ``target``'s ``f`` is compiled in this process already."""
    return warm_key(target) in _WARM


class CompiledRunner:
    """Points in a parallel numba kernel (see the module docstring). ``compile_seconds``
    accumulates the time spent compiling kernels, apart from the time spent evaluating;
    ``notes`` says it in words."""

    name = "compiled"

    def __init__(self, target: Target) -> None:
        why = unsupported(target)
        if why is not None:
            raise TypeError(f"engine='compiled' cannot check this function: {why}")
        self.target = target
        self.kind = kind_of(target.f)
        self.compile_seconds = 0.0
        self.threads = 0
        self.evaluations = 0

    @property
    def notes(self) -> tuple[str, ...]:
        return (f"compiled engine: {self.threads} threads; kernel compilation took "
                f"{self.compile_seconds:.2f} s (not differencing time)",)

    @property
    def workers(self) -> int:
        """numba's threads (the kernel's parallelism)."""
        import numba

        return int(numba.get_num_threads())

    def run(self, points: Points, progress: Callable[[int], None] | None = None) -> np.ndarray:
        """The reduced ``f`` at each point. ``progress(groups done)``, when given, is called
        between blocks of points (a kernel cannot call back into Python): blocks are sized to
        take about :data:`PROGRESS_SECONDS` each, after the kernel is compiled."""
        import numba

        points = points.joined(self.target.work.dtype)  # blocks: one index and one value array
        if points.shift is not None:  # made here: nothing travels from this process
            points = points.materialized(np.ascontiguousarray(self.target.work).reshape(-1))
        if self.target.slices is not None:
            return self._run_raw(points, progress)
        count = len(points)
        out = np.full(count, np.nan)
        status = np.zeros(count, dtype=np.uint8)
        if count == 0:
            return out
        starts = np.arange(count + 1, dtype=np.int64) if points.starts is None else points.starts
        idx = np.ascontiguousarray(points.idx, dtype=np.int64)
        values = np.ascontiguousarray(points.values, dtype=self.target.work.dtype)
        self.threads = numba.get_num_threads()
        width = points.width
        if progress is None:
            self._launch(idx, values, starts, 0, count, out, status)
        else:
            start, size = 0, min(count, self.threads * CHUNKS_PER_THREAD * width)
            while start < count:
                stop = min(count, start + size)
                took = self._launch(idx, values, starts, start, stop, out, status)
                progress(stop // width)
                wanted = int(PROGRESS_SECONDS * (stop - start) / took) if took > 0 else size * 8
                size = max(width, min(size * 8, wanted - wanted % width))
                start = stop
        _WARM.add(warm_key(self.target))
        failed = np.flatnonzero(status)
        if failed.size:
            self._raise_at(points, int(failed[0]), int(status[failed[0]]))
        self.evaluations += count
        return out

    def close(self, terminate: bool = False) -> None:
        pass

    def _run_raw(self, points: Points, progress: Callable[[int], None] | None) -> np.ndarray:
        """A per-slice target's points: ``f``'s outputs stored a block at a time, each row
        reduced by ``slices.per_entry``; one answer per entry set."""
        import numba

        t = self.target
        slices = t.slices
        assert slices is not None
        count = len(points)
        out = np.full(points.answer_count(slices), np.nan)
        starts = np.arange(count + 1, dtype=np.int64) if points.starts is None else points.starts
        idx = np.ascontiguousarray(points.idx, dtype=np.int64)
        values = np.ascontiguousarray(points.values, dtype=t.work.dtype)
        size = int(np.prod(slices.shape, dtype=np.int64))
        block = max(1, min(count, RAW_BUDGET_BYTES // max(1, 8 * size)))
        block = max(points.width, block - block % points.width)
        status = np.zeros(count, dtype=np.uint8)
        self.threads = numba.get_num_threads()
        for lo in range(0, count, block):
            hi = min(count, lo + block)
            ys = np.empty((hi - lo, size))
            self._launch(idx, values, starts, lo, hi, ys, status)
            failed = np.flatnonzero(status[lo:hi])
            if failed.size:
                self._raise_at(points, lo + int(failed[0]), int(status[lo + failed[0]]))
            for j in range(lo, hi):
                answer_slices(t, ys[j - lo].reshape(slices.shape), points, j, points.entries(j), out)
            if progress is not None:
                progress(hi // points.width)
        _WARM.add(warm_key(t))
        self.evaluations += count
        return out

    def _launch(self, idx, values, starts, lo: int, hi: int, out, status) -> float:
        """Run points ``[lo, hi)`` (``out``: the answers of all points, or the stored outputs
        of these); the seconds it took, compilation excluded."""
        import numba

        run, head = self._kernel()
        chunks = max(1, min(hi - lo, self.threads * CHUNKS_PER_THREAD))
        a, b = int(starts[lo]), int(starts[hi])
        tail = () if self.kind == "native" else (status[lo:hi],)
        rows = out if self.target.slices is not None else out[lo:hi]
        args = (*head, idx[a:b], values[a:b], starts[lo:hi + 1] - a, chunks, rows, *tail)
        try:
            self.compile_seconds += run.compile_for(*args)
        except numba.core.errors.TypingError as exc:
            raise TypeError(
                "the compiled engine cannot build its kernel around f: f must take the "
                "array alone and return a number (or an array, for the cotangent or a per-slice "
                f"reduction); use engine='serial'. numba said: {str(exc).splitlines()[0]}"
            ) from exc
        began = time.perf_counter()
        with numba.parallel_chunksize(1):  # chunks go to whichever thread is free
            run(*args)
        return time.perf_counter() - began

    def _kernel(self) -> tuple[Any, tuple[Any, ...]]:
        """The kernel and its arguments before the points."""
        t = self.target
        if self.kind == "native":
            f: Any = t.f  # a NativeFunction
            loss = f.ffi.cast("double(*)(const double *, int64_t, const int64_t *)", f.loss)
            iparams = np.array(f.iparams if f.iparams else [0], dtype=np.int64)
            return loops.native_points, (loss, t.work.reshape(-1), iparams, bool(f.iparams))
        if t.slices is not None:
            return loops.points, (loops.eval_into, t.f, t.work, np.array(t.slices.shape, dtype=np.int64))
        if t.cotangent is None:
            return loops.points, (loops.eval_scalar, t.f, t.work, np.zeros(0))
        return loops.points, (loops.eval_reduced, t.f, t.work, np.ascontiguousarray(t.cotangent, dtype=np.float64))

    def _raise_at(self, points: Points, j: int, code: int) -> None:
        """Point ``j`` evaluated again from Python, where its exception carries its message
        (a write is not repeated: it would reach the working array)."""
        t = self.target
        first = points.first(j)
        index = None if first is None else entry_of(first, t.work.shape)
        if code == loops.MUTATED and points.kind is None:
            raise mutation_error(seen=f" (seen in the compiled engine at entry {index})")
        if code == loops.MUTATED:  # a point of several entries: its kind, side and entries
            more = f" and {points.count(j) - 1} more" if points.count(j) > 1 else ""
            where = "" if index is None else f", perturbing x{list(index)}{more}"
            raise mutation_error(seen=f" (seen in the compiled engine, {points.kind}, {points.side(j)}{where})")
        run_here(t.evaluate, t.work, points.part(j, j + 1), param=t.param, slices=t.slices)
        raise FunctionError(index, points.label(j), None, RuntimeError(
            "f raised (or returned another shape) inside the compiled engine, but not when evaluated "
            "again from Python (is it deterministic?)"))
