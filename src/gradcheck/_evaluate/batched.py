"""The batched runner: many points per call of a vectorized ``f``.

For an ``f`` that accepts a leading batch axis (``check(..., vectorized=True)``): ``f(X)`` with
``X`` of shape ``(B, *x.shape)`` returns ``(B,)`` (scalar ``f``) or ``(B, *out_shape)``. Row
``r`` of a batch is ``x`` with point ``r``'s entries set.

Memory is bounded: one buffer of ``B`` copies of ``x`` is filled once, and for each batch only
the perturbed entries are written and then put back, so no call ever holds every point's copy
and the copies are not rebuilt batch after batch. ``B`` comes from a byte budget
(:data:`BUDGET_BYTES`, or ``budget_bytes=``). The default is small on purpose: the rows are
re-read by ``f`` on every call, and a buffer that stays in the CPU's cache is faster than a big
one streamed from memory (see benchmarks/README.md).

Agreement with ``serial``: the points' values are the generator's, and each array output is
reduced as ``np.add.reduce(v * y)`` with the cotangent ``v``, row by row (the reduction every
runner uses; ``np.dot`` or ``y @ v`` would go through BLAS and may sum in another order). What
can differ is ``f`` itself: numpy may round ``A @ X`` on a batch differently than on a single
matrix. For an ``f`` that is elementwise, the results are bit-identical to ``serial``; for
other ``f`` they agree to ``f``'s own batch-vs-single rounding.

Input mutation: ``f`` gets the runner's buffer, never the user's array. A write into it is
caught (the perturbed entries are compared after every call, the whole buffer once at the end
of each run) and raised as :class:`~gradcheck.InputMutationError`.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .._core.arrays import same_bits
from .._core.config import dtype_name
from .._core.errors import FunctionError, InputMutationError, OutputError, mutation_error
from .._core.inputs import require_real_output
from .points import Points
from .target import Target, entry_of

#: Default byte budget of the batch buffer (``B`` copies of ``x``).
BUDGET_BYTES = 2 * 2**20
#: Rows per call are at most this many, whatever the budget (bounds ``f``'s temporaries).
MAX_ROWS = 4096


def rows_for_budget(entry_bytes: int, budget_bytes: int, max_rows: int = MAX_ROWS) -> int:
    """Rows per batch (even, at least 2) so that the buffer fits ``budget_bytes``."""
    rows = int(budget_bytes) // max(1, int(entry_bytes))
    rows = min(rows, max_rows)
    return max(2, rows - rows % 2)


class BatchedRunner:
    name = "batched"
    notes: tuple[str, ...] = ()

    def __init__(self, target: Target, *, budget_bytes: int | None = None) -> None:
        if not target.vectorized:
            raise ValueError(
                "engine='batched' needs an f that accepts a leading batch axis; "
                "declare it with check(..., vectorized=True)"
            )
        self.target = target
        self.budget_bytes = BUDGET_BYTES if budget_bytes is None else int(budget_bytes)
        if self.budget_bytes <= 0:
            raise ValueError(f"budget_bytes must be > 0, got {budget_bytes!r}")
        self.rows = rows_for_budget(target.work.nbytes, self.budget_bytes)
        cot = target.cotangent
        self._flat_v = None if cot is None else np.ascontiguousarray(cot, dtype=np.float64).reshape(-1)
        self._out_shape = () if cot is None else tuple(cot.shape)
        self.evaluations = 0

    def run(self, points: Points, progress: Callable[[int], None] | None = None) -> np.ndarray:
        """The reduced ``f`` at each point, ``rows`` points per call; ``progress(groups done)``
        after each batch."""
        work = self.target.work
        count = len(points)
        out = np.full(count, np.nan)
        if count == 0:
            return out
        per = max(points.width, self.rows - self.rows % points.width)
        rows = min(per, count)
        buf = np.empty((rows,) + work.shape, dtype=work.dtype)
        buf[...] = work
        bflat = buf.reshape(-1)
        counts = np.ones(count, dtype=np.int64) if points.starts is None else np.diff(points.starts)
        row_of = np.repeat(np.arange(count, dtype=np.int64) % rows, counts)
        # Each perturbed value's position in the flat buffer (batches restart at row 0).
        where = row_of * work.size + points.idx
        restore = work.reshape(-1)[points.idx]
        for start in range(0, count, rows):
            stop = min(start + rows, count)
            span = points.span(start).start, points.span(stop - 1).stop
            at, v, was = where[span[0]:span[1]], points.values[span[0]:span[1]], restore[span[0]:span[1]]
            if not same_bits(bflat[at], was):
                raise _mutation_error()  # an earlier call wrote where this batch perturbs
            bflat[at] = v
            failure = None
            try:
                y = self._evaluate(buf[:stop - start])
            except Exception as exc:
                failure = exc
            finally:
                mutated = not same_bits(bflat[at], v)
                bflat[at] = was
            if mutated:
                raise _mutation_error()
            if failure is not None:
                raise self._locate(failure, points, start, stop)
            if y.dtype.kind not in "fiub" and dtype_name(y.dtype) != "bfloat16":
                raise _refused_output(y, points, start, work.shape)
            out[start:stop] = self._reduce(y, stop - start)
            self.evaluations += stop - start
            if progress is not None:
                progress(stop // points.width)
        if not same_bits(buf, np.broadcast_to(work, buf.shape)):
            raise _mutation_error()
        return out

    def close(self, terminate: bool = False) -> None:
        pass

    def _locate(self, exc: Exception, points: Points, start: int, stop: int) -> FunctionError:
        """The point at which ``f`` raised: each point of the failed batch is evaluated alone
        (a batch of one); only the first that raises is reported."""
        work = self.target.work
        for j in range(start, stop):
            one = work.copy()[np.newaxis]
            one.reshape(-1)[points.entries(j)] = points.values_of(j)
            at = entry_of(points.entries(j)[0], work.shape)
            try:
                self._evaluate(one)
            except OutputError as refused:  # gradcheck refused what f returned: said once
                return refused.at(at, points.label(j))
            except Exception as single:
                err = FunctionError(at, points.label(j), None, single)
                err.__cause__ = single
                return err
        # No point raised alone: the failure belongs to the batch, not to one entry.
        entries = np.unique(points.idx[points.span(start).start:points.span(stop - 1).stop])
        at, side = entry_of(entries[0], work.shape), f"batch of {entries.size} entries"
        if isinstance(exc, OutputError):
            return exc.at(at, side)
        err = FunctionError(at, side, None, exc)
        err.__cause__ = exc
        return err

    def _evaluate(self, batch: np.ndarray) -> np.ndarray:
        # f is evaluated at points the user did not choose: numpy's warnings stay silent
        # there, as in the serial loop (under -W error they would become FunctionErrors).
        with np.errstate(all="ignore"):
            return np.asarray(self.target.backend.evaluate(self.target.f, batch))

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


def _refused_output(y: np.ndarray, points: Points, start: int, shape: tuple[int, ...]) -> OutputError:
    """What the vectorized f returned for a batch that is not real numbers (complex values:
    their imaginary part must not be dropped), located at the first row that shows it."""
    row = 0
    if y.dtype.kind == "c" and y.ndim:
        bad = np.flatnonzero((y.reshape(y.shape[0], -1).imag != 0).any(axis=1))
        row = int(bad[0]) if bad.size else 0
    try:
        require_real_output(np.asarray(y[row] if y.ndim else y), "the vectorized f")
    except OutputError as err:
        j = start + row
        return err.at(entry_of(points.entries(j)[0], shape), points.label(j))
    raise AssertionError("called only for an output that holds no real numbers")


def _mutation_error() -> InputMutationError:
    return mutation_error("the vectorized f", into="the batch it was given")

