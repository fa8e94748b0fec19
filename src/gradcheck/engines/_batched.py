"""The batched engine: many perturbations per call of a vectorized ``f``.

For an ``f`` that accepts a leading batch axis (``check(..., vectorized=True)``):
``f(X)`` with ``X`` of shape ``(B, *x.shape)`` returns ``(B,)`` (scalar ``f``) or
``(B, *out_shape)``. Rows alternate ``x + h e_i`` / ``x - h e_i`` for ``B/2`` entries.

Memory is bounded: one buffer of ``B`` copies of ``x`` is filled once, and for each
batch only the ``B`` perturbed entries are written and then put back, so no call ever
holds all ``2N`` copies and the copies are not rebuilt batch after batch. ``B`` comes
from a byte budget (:data:`BUDGET_BYTES`, or ``budget_bytes=``). The default is small on
purpose: the rows are re-read by ``f`` on every call, and a buffer that stays in the
CPU's cache is faster than a big one streamed from memory (see benchmarks/README.md).

Agreement with ``serial``: the perturbed values, the realized denominators and the
reduction of each array output (``np.add.reduce(v * y)`` with the cotangent ``v``, row by
row: the reduction every engine uses; ``np.dot`` or ``y @ v`` would go through BLAS and may
sum in another order) are computed exactly as ``serial`` computes them. What can differ is
``f`` itself: numpy may round ``A @ X`` on a batch differently than on a single
matrix (a different BLAS kernel or summation order). For an ``f`` that is elementwise,
the results are bit-identical to ``serial``; for other ``f`` they agree to ``f``'s own
batch-vs-single rounding.

Input mutation: ``f`` gets the engine's buffer, never the user's array. A write into it
is caught (the perturbed entries are compared after every call, the whole buffer once at
the end of each ``differences``) and raised as :class:`InputMutationError`.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._core.arrays import same_bits
from .._core.config import dtype_name
from .._core.errors import FunctionError, InputMutationError, OutputError, mutation_error
from .._core.inputs import require_real_output

#: Default byte budget of the batch buffer (``B`` copies of ``x``).
BUDGET_BYTES = 2 * 2**20
#: Rows per call are at most this many, whatever the budget (bounds ``f``'s temporaries).
MAX_ROWS = 4096


def auto_reason(problem: Any) -> str | None:
    """Pick ``batched`` whenever the user declared ``f`` vectorized."""
    if problem.vectorized:
        return "f takes a leading batch axis (vectorized): many perturbations per call"
    return None


def make_engine(problem: Any, **options: Any) -> BatchedEngine:
    return BatchedEngine(problem, **options)


def rows_for_budget(entry_bytes: int, budget_bytes: int, max_rows: int = MAX_ROWS) -> int:
    """Rows per batch (even, at least 2) so that the buffer fits ``budget_bytes``."""
    rows = int(budget_bytes) // max(1, int(entry_bytes))
    rows = min(rows, max_rows)
    return max(2, rows - rows % 2)


class BatchedEngine:
    name = "batched"

    def __init__(self, problem: Any, *, budget_bytes: int | None = None) -> None:
        if not problem.vectorized:
            raise ValueError(
                "engine='batched' needs an f that accepts a leading batch axis; "
                "declare it with check(..., vectorized=True)"
            )
        self.problem = problem
        self.budget_bytes = BUDGET_BYTES if budget_bytes is None else int(budget_bytes)
        if self.budget_bytes <= 0:
            raise ValueError(f"budget_bytes must be > 0, got {budget_bytes!r}")
        work = problem.work
        self.rows = rows_for_budget(work.nbytes, self.budget_bytes)
        cot = problem.cotangent
        self._flat_v = None if cot is None else np.ascontiguousarray(cot, dtype=np.float64).reshape(-1)
        self._out_shape = () if cot is None else tuple(cot.shape)

    def differences(
        self,
        flat_indices: np.ndarray,
        steps: np.ndarray,
        progress: Callable[[int], None] | None = None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(f_plus, f_minus, denominator)`` for ``flat_indices``; ``progress(done)`` is
        called after each batch with the number of entries finished so far."""
        work = self.problem.work
        flat = work.reshape(-1)
        dtype = work.dtype
        idx = np.asarray(flat_indices, dtype=np.int64).reshape(-1)
        steps = np.asarray(steps, dtype=np.float64).reshape(-1)
        count = idx.size
        f_plus = np.full(count, np.nan)
        f_minus = np.full(count, np.nan)
        denom = np.full(count, np.nan)
        if count == 0:
            return f_plus, f_minus, denom

        old = flat[idx]
        # Entries whose value is not finite are not perturbed (NaN results, as serial).
        live = np.flatnonzero(np.isfinite(old.astype(np.float64)))
        # Same arithmetic as serial, entry by entry: h and x +- h rounded to x's dtype.
        h = steps[live].astype(dtype)
        xp = (old[live] + h).astype(dtype)
        xm = (old[live] - h).astype(dtype)
        denom[live] = xp.astype(np.float64) - xm.astype(np.float64)

        rows = min(self.rows, 2 * live.size)
        if rows == 0:
            return f_plus, f_minus, denom
        buf = np.empty((rows,) + work.shape, dtype=dtype)
        buf[...] = work
        bflat = buf.reshape(-1)
        # Interleaved per row: row 2j holds x + h e_i, row 2j+1 holds x - h e_i. ``where``
        # is each perturbed value's position in the flat buffer (batches restart at row 0).
        where = (np.arange(2 * live.size) % rows) * work.size + np.repeat(idx[live], 2)
        values = np.empty(2 * live.size, dtype=dtype)
        values[0::2], values[1::2] = xp, xm
        restore = np.repeat(old[live], 2)
        reduced = np.empty(2 * live.size)
        per = rows // 2
        done = count - live.size
        for start in range(0, live.size, per):
            stop = min(start + per, live.size)
            span = slice(2 * start, 2 * stop)
            at, v, batch = where[span], values[span], 2 * (stop - start)
            if not same_bits(bflat[at], restore[span]):
                raise _mutation_error()  # an earlier call wrote where this batch perturbs
            bflat[at] = v
            failure = None
            try:
                y = self._evaluate(buf[:batch])
            except Exception as exc:
                failure = exc
            finally:
                mutated = not same_bits(bflat[at], v)
                bflat[at] = restore[span]
            if mutated:
                raise _mutation_error()
            if failure is not None:
                raise self._locate(failure, idx[live[start:stop]], xp[start:stop], xm[start:stop])
            if y.dtype.kind not in "fiub" and dtype_name(y.dtype) != "bfloat16":
                raise _refused_output(y, idx[live[start:stop]], work.shape)
            reduced[span] = self._reduce(y, batch)
            done += stop - start
            if progress is not None:
                progress(done)
        f_plus[live] = reduced[0::2]
        f_minus[live] = reduced[1::2]
        if not _bitwise_equal(buf, work):
            raise _mutation_error()
        return f_plus, f_minus, denom

    def _locate(self, exc: Exception, cols: np.ndarray, xp: np.ndarray, xm: np.ndarray) -> FunctionError:
        """The entry at which ``f`` raised: each perturbed row of the failed batch is
        re-evaluated alone (a batch of one); only the first that raises is reported."""
        work = self.problem.work
        for col, plus, minus in zip(cols, xp, xm):
            for side, value in (("+h", plus), ("-h", minus)):
                one = work.copy()[np.newaxis]
                one.reshape(-1)[col] = value
                try:
                    self._evaluate(one)
                except OutputError as refused:  # gradcheck refused what f returned: said once
                    return refused.at(_entry(col, work.shape), side)
                except Exception as single:
                    err = FunctionError(_entry(col, work.shape), side, None, single)
                    err.__cause__ = single
                    return err
        # No row raised alone: the failure belongs to the batch, not to one entry.
        if isinstance(exc, OutputError):
            return exc.at(_entry(cols[0], work.shape), f"batch of {cols.size} entries")
        err = FunctionError(_entry(cols[0], work.shape), f"batch of {cols.size} entries", None, exc)
        err.__cause__ = exc
        return err

    def _evaluate(self, batch: np.ndarray) -> np.ndarray:
        # f is evaluated at points the user did not choose: numpy's warnings stay silent
        # there, as in the serial loop (under -W error they would become FunctionErrors).
        with np.errstate(all="ignore"):
            return np.asarray(self.problem.backend.evaluate(self.problem.f, batch))

    def _reduce(self, y: np.ndarray, rows: int) -> np.ndarray:
        expected = (rows,) + self._out_shape
        if y.shape != expected:
            raise ValueError(
                f"vectorized f returned shape {y.shape} for a batch of {rows}; expected "
                f"{expected} (the batch axis first, then the shape f returns for one input "
                f"{self._out_shape})"
            )
        y = y.astype(np.float64)
        if self._flat_v is None:
            return y
        # The serial reducer's own call, row by row (np.add.reduce(v * y)): a matrix-vector
        # product (y @ v) may sum in another order and differ from serial in the last bit.
        y = y.reshape(rows, -1)
        v = self._flat_v
        return np.fromiter((np.add.reduce(v * y[r]) for r in range(rows)), dtype=np.float64, count=rows)


def _refused_output(y: np.ndarray, cols: np.ndarray, shape: tuple[int, ...]) -> OutputError:
    """What the vectorized f returned for a batch that is not real numbers (complex values:
    their imaginary part must not be dropped), located at the first row that shows it."""
    row = 0
    if y.dtype.kind == "c" and y.ndim:
        bad = np.flatnonzero((y.reshape(y.shape[0], -1).imag != 0).any(axis=1))
        row = int(bad[0]) if bad.size else 0
    try:
        require_real_output(np.asarray(y[row] if y.ndim else y), "the vectorized f")
    except OutputError as err:
        return err.at(_entry(cols[row // 2], shape), "+h" if row % 2 == 0 else "-h")
    raise AssertionError("called only for an output that holds no real numbers")


def _entry(flat_index: Any, shape: tuple[int, ...]) -> tuple[int, ...]:
    """A multi-index of Python ints (as serial reports it, printed ``(0, 2)``)."""
    return tuple(int(k) for k in np.unravel_index(int(flat_index), shape))


def _bitwise_equal(batch: np.ndarray, x: np.ndarray) -> bool:
    """Every row of ``batch`` holds the same bits as ``x`` (NaNs and signed zeros too)."""
    return same_bits(batch, np.broadcast_to(x, batch.shape))


def _mutation_error() -> InputMutationError:
    return mutation_error("the vectorized f", into="the batch it was given")
