"""The coloured differencer on the compiled engine: ``independent_axes`` with an ``@njit`` ``f``.

``check(f, x, grad, independent_axes=..., engine="compiled")`` for a numba ``@njit`` ``f``
that returns an array. The coloured rounds are the serial differencer's
(:class:`~gradcheck._axes.colour.Coloured`): each evaluation perturbs one entry of every
slice. Here a block of those evaluations (several rounds, ``+h`` and ``-h``) runs in one
parallel numba kernel: each point of the block is a ``prange`` iteration with its own copy
of ``x``, its perturbed entries set, ``f`` called, the output stored in that point's row of
a buffer. The rows are then reduced per slice with the cotangent by the serial code
(:meth:`Coloured._reduce`), so each entry's value is serial's, bit for bit (``f``'s machine
code is the same whether numba calls it from the kernel or from Python).

As on the layer's compiled runner (:mod:`gradcheck._evaluate.compiled`): numba cannot raise out of a
parallel loop, so an evaluation that raised (or returned another shape) is only recorded;
after the kernel the earliest such point is evaluated again from Python, which raises
:class:`~gradcheck.FunctionError` as serial does. A copy that ``f`` wrote into is
:class:`~gradcheck.InputMutationError`. ``x`` itself is never touched.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .._core.errors import FunctionError, mutation_error
from .._core.jit import PRANGE, kernel
from .._evaluate import DTYPES as _DTYPES
from .._evaluate import kind_of as _kind
from .._evaluate import loops
from .._evaluate import numpy_backend as _numpy_backend
from .colour import BUDGET_BYTES, Coloured

prange = PRANGE
_same, _first_changed = loops.same, loops.first_changed  # the layer's kernels, called from this one

_RAISED, _SHAPE, _MUTATED = 1, 2, 3

#: Points per kernel launch, per thread (each launch has a fixed cost; more points in a
#: block also let a thread that finishes early take more).
POINTS_PER_THREAD = 8


def unsupported(f: Any, backend: Any, work: np.ndarray) -> str | None:
    """Why the compiled coloured differencer cannot run ``f`` (None when it can)."""
    kind = _kind(f)
    if kind != "njit":
        what = "a native (C) function returns a scalar" if kind == "native" else f"f is a {type(f).__name__}"
        return f"{what}; it needs a numba @njit f that returns an array (use engine='serial' or 'auto')"
    if not _numpy_backend(backend):
        return f"it needs the numpy backend, not {getattr(backend, 'name', '?')!r}"
    if work.dtype not in _DTYPES:
        return f"it perturbs float64 or float32 inputs, not {work.dtype}"
    return None


class CompiledColoured(Coloured):
    """:class:`Coloured` whose evaluations run in a parallel numba kernel (``f``: ``@njit``)."""

    IN_PLACE = False  # each evaluation's entries and values are shipped to its runner

    def __init__(self, *args: Any, f: Any, **kwargs: Any) -> None:
        import numba

        kwargs["vectorized"] = False  # the kernel evaluates one point per iteration
        super().__init__(*args, **kwargs)
        self.f = f
        self.workers = numba.get_num_threads()
        self.compile_seconds = 0.0
        per_point = self.work.nbytes + int(np.prod(self._y_shape)) * 8
        self.rows = max(2, min(POINTS_PER_THREAD * self.workers, BUDGET_BYTES // max(1, per_point)))

    def _run(self, points) -> None:
        """Evaluate every point in one kernel launch; reduce each row as :meth:`point` does."""
        import numba

        sizes = np.array([p[1].size for p in points], dtype=np.int64)
        starts = np.zeros(len(points) + 1, dtype=np.int64)
        np.cumsum(sizes, out=starts[1:])
        ids = np.concatenate([p[1] for p in points]).astype(np.int64)
        values = np.concatenate([np.asarray(p[2], dtype=self.work.dtype) for p in points])
        ys = np.empty((len(points), int(np.prod(self._y_shape))), dtype=np.float64)
        shape = np.array(self._y_shape, dtype=np.int64)
        status = np.zeros(len(points), dtype=np.uint8)
        chunks = min(len(points), self.workers)
        args = (self.f, self.work, ids, values, starts, shape, chunks, ys, status)
        try:
            self.compile_seconds += _coloured_points.compile_for(*args)
        except numba.core.errors.TypingError as exc:
            raise TypeError(
                "the compiled engine cannot build its coloured kernel around f: f must take the array "
                f"alone and return an array; use engine='serial'. numba said: {str(exc).splitlines()[0]}"
            ) from exc
        with numba.parallel_chunksize(1):
            _coloured_points(*args)
        failed = np.flatnonzero(status)
        if failed.size:
            self._raise_at(points[int(failed[0])], int(status[failed[0]]))
        for k, (pos, _, _, _, mine, out, _) in enumerate(points):
            out[pos] = self._reduce(ys[k].reshape(self._y_shape))[mine]
        self.evaluations += len(points)

    def _raise_at(self, point, code: int) -> None:
        """The earliest failing point evaluated again from Python (serial's error)."""
        _, ids, values, _, mine, _, side = point
        if code == _MUTATED:
            where = tuple(int(k) for k in np.unravel_index(int(ids[0]), self.work.shape)) if ids.size else ()
            raise mutation_error(seen=f" (seen in the compiled engine, coloured, {side}, perturbing x{list(where)} "
                                      f"and {ids.size - 1} more)")
        self.point(ids, values, self.work.reshape(-1)[ids], mine, side)  # work is never moved here
        at = tuple(int(k) for k in np.unravel_index(int(ids[0]), self.work.shape)) if ids.size else None
        raise FunctionError(at, f"{side}, coloured", None, RuntimeError(
            "f raised (or returned another shape) inside the compiled engine, but not when evaluated "
            "again from Python (is it deterministic?)"))


@kernel(takes_functions=True)
def _eval_into(f, x, shape, row):
    """``f(x)`` flattened into ``row``: 0, or 1 when ``f`` raised, 2 for another shape."""
    try:
        y = f(x)
    except Exception:  # noqa: BLE001 - recorded; re-raised from Python with its point
        return 1
    if y.ndim != shape.size:
        return 2
    for d in range(y.ndim):
        if y.shape[d] != shape[d]:
            return 2
    flat = y.ravel()
    for k in range(row.size):
        row[k] = np.float64(flat[k])
    return 0


@kernel(parallel=True, takes_functions=True)
def _coloured_points(f, work, ids, values, starts, shape, chunks, ys, status):
    # Chunk c of the points is one prange iteration with a private copy of x; point k sets
    # entries ids[starts[k]:starts[k+1]] to values[...], stores f's output in ys[k] and puts
    # the entries back. Rows are disjoint: the values do not depend on the thread count. A
    # perturbed entry f wrote into (seen before it is put back, which would hide the write)
    # marks its point; any other entry of the copy f wrote into (seen when the chunk ends)
    # marks the chunk's last point.
    ref = work.reshape(work.size)
    count = starts.size - 1
    for c in prange(chunks):
        xc = work.copy()
        flat = xc.reshape(xc.size)
        lo, hi = c * count // chunks, (c + 1) * count // chunks
        for k in range(lo, hi):
            for j in range(starts[k], starts[k + 1]):
                flat[ids[j]] = values[j]
            status[k] = _eval_into(f, xc, shape, ys[k])
            for j in range(starts[k], starts[k + 1]):
                if status[k] == 0 and not _same(flat[ids[j]], values[j]):
                    status[k] = 3
                flat[ids[j]] = ref[ids[j]]
        if hi > lo and status[hi - 1] == 0 and _first_changed(flat, ref) >= 0:
            status[hi - 1] = 3
