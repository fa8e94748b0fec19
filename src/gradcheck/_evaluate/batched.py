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

from .._core.arrays import bits_differ, same_bits
from .._core.config import dtype_name
from .._core.errors import FunctionError, InputMutationError, OutputError, mutation_error
from .._core.inputs import require_real_output
from .points import Points
from .target import Target, answer_slices, entry_of

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
        """The reduced ``f`` at each point (per-slice: at each entry set), ``rows`` points per
        call; ``progress(groups done)`` after each batch."""
        if points.shift is not None:
            return self._run_shift(points, progress)
        points = points.joined(self.target.work.dtype)
        work = self.target.work
        count = len(points)
        out = np.full(points.answer_count(self.target.slices), np.nan)
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
            if not same_bits(bflat[at], was):  # an earlier call wrote where this batch perturbs
                raise _written(bflat[at], was, at, work.shape)
            bflat[at] = v
            try:
                y, failure = self._call(buf[:stop - start])
                now = bflat[at]
                if y is not None and same_bits(now, v):  # answered before the batch is put back:
                    self._answer(y, points, start, stop, out)  # an output may be a view of it
                del y
            finally:
                bflat[at] = was
            if not same_bits(now, v):
                raise _written(now, v, at, work.shape, points, start)
            if failure is not None:
                raise self._locate(failure, points, start, stop)
            self.evaluations += stop - start
            if progress is not None:
                progress(stop // points.width)
        whole = np.broadcast_to(work, buf.shape).reshape(-1)
        if not same_bits(bflat, whole):
            raise _written(bflat, whole, np.arange(bflat.size), work.shape)
        return out

    def _run_shift(self, points: Points, progress: Callable[[int], None] | None) -> np.ndarray:
        """A shift: the batch is the shifted copies of ``x`` themselves (one row per sign),
        made from ``work`` (left as it is) a block at a time, with no index or value arrays."""
        shift, work, slices = points.shift, self.target.work, self.target.slices
        assert shift is not None
        flat = np.ascontiguousarray(work).reshape(-1)
        count = len(points)
        out = np.full(points.answer_count(slices), np.nan)
        batch = np.empty((count,) + work.shape, dtype=work.dtype)
        for k, sign in enumerate(shift.signs):
            shift.fill(flat, sign, batch[k].reshape(-1))
        y, failure = self._call(batch)
        if y is not None:  # answered first (f's output may be a view of the batch), checked next
            self._answer(y, points, 0, count, out)
        del y
        for k, sign in enumerate(shift.signs):
            at = shift.first_moved(batch[k].reshape(-1), flat, sign)
            if at >= 0:
                raise _batch_written(entry_of(at, work.shape), points.label(k))
        if failure is not None:
            raise self._locate(failure, points.materialized(flat), 0, count)
        self.evaluations += count
        if progress is not None:
            progress(points.groups)
        return out

    def _call(self, batch: np.ndarray) -> tuple[np.ndarray | None, Exception | None]:
        """``f``'s output for ``batch``, or the exception it raised."""
        try:
            return self._evaluate(batch), None
        except Exception as exc:
            return None, exc

    def _answer(self, y: np.ndarray, points: Points, start: int, stop: int, out: np.ndarray) -> None:
        """The answers of points ``start:stop`` from ``f``'s output for their batch."""
        rows = stop - start
        slices = self.target.slices
        if slices is None:
            if y.dtype.kind not in "fiub" and dtype_name(y.dtype) != "bfloat16":
                raise _refused_output(y, points, start, self.target.work.shape)
            out[start:stop] = self._reduce(y, rows)
            return
        if np.shape(y)[:1] != (rows,):
            raise ValueError(f"vectorized f returned shape {np.shape(y)} for a batch of {rows}")
        for j in range(start, stop):
            entries = None if points.shift is not None else points.entries(j)
            answer_slices(self.target, y[j - start], points, j, entries, out)

    def close(self, terminate: bool = False) -> None:
        pass

    def _locate(self, exc: Exception, points: Points, start: int, stop: int) -> FunctionError:
        """The point at which ``f`` raised: each point of the failed batch is evaluated alone
        (a batch of one); only the first that raises is reported."""
        work = self.target.work
        for j in range(start, stop):
            one = work.copy()[np.newaxis]
            one.reshape(-1)[points.entries(j)] = points.values_of(j)
            first = points.first(j)
            at = None if first is None else entry_of(first, work.shape)
            try:
                self._evaluate(one)
            except OutputError as refused:  # gradcheck refused what f returned: said once
                return refused.at(at, points.label(j))
            except Exception as single:
                err = FunctionError(at, points.label(j), None, single)
                err.__cause__ = single
                return err
        # No point raised alone: the failure belongs to the batch, not to one entry.
        entries = points.flat_entries(start, stop)
        at = entry_of(entries[0], work.shape) if entries.size else None
        side = f"batch of {entries.size} entries"
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
        first = points.first(j)
        return err.at(None if first is None else entry_of(first, shape), points.label(j))
    raise AssertionError("called only for an output that holds no real numbers")


def _written(now: np.ndarray, want: np.ndarray, at: np.ndarray, shape: tuple[int, ...],
             points: Points | None = None, start: int = 0) -> InputMutationError:
    """The vectorized ``f`` wrote into its batch: the first of the buffer positions ``at``
    whose bits changed (``now`` against ``want``), named as the entry of its row (and, given
    ``points``, the perturbation of that row's point: batches start at row 0)."""
    k = int(np.flatnonzero(bits_differ(now, want))[0])
    size = int(np.prod(shape, dtype=np.int64))
    row, entry = divmod(int(at[k]), size)
    return _batch_written(entry_of(entry, shape), None if points is None else points.label(start + row))


def _batch_written(index: tuple[int, ...], label: str | None) -> InputMutationError:
    how = "" if label is None else f", {label}"
    return mutation_error("the vectorized f", seen=f" (entry {index} of the batch it was given changed{how})",
                          into="the batch it was given")

