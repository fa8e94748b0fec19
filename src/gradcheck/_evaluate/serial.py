"""The serial runner: points evaluated one after another in this process, in place.

:func:`run_here` is the one loop that perturbs ``work`` and puts it back: the serial runner
runs it on the target's own array, and the workers of the processes and executor runners on
their copies. For each point, in order:

1. its entries must still hold what they held when the batch began: an earlier call of ``f``
   that wrote there would otherwise be silently repaired by the restore below;
2. the values are set, ``f`` is evaluated (numpy's warnings silenced: the points are not the
   user's), and the entries must still hold the values set (putting them back would hide a
   write), then they are put back in ``finally`` (an exception or Ctrl-C never leaves ``work``
   perturbed);
3. an exception is raised again as :class:`~gradcheck.FunctionError` at the point's first
   entry, named by the point's label (``+h``, ``-h``, ``along a block of 8 entries``).

Blocks (:class:`~.points.Blocks`: a screen's points, each its own ``(idx, values)``) are run
a run at a time: consecutive points with the same index array save ``work[idx]`` once and put
it back once, after the last (a whole model's block is millions of entries: each pass over them
costs); after each call the entries must still hold what was written, and from
:data:`KERNEL_MIN` entries on, that check and the next write (or the restore) are one pass of a
numba kernel (:mod:`.loops`) on the values' bits. An entry written outside the run is left to the
caller's comparison of the whole copy with ``x`` at the end (the screen's).
Blocks on a complex working copy (the screen's complex step) are answered in complex128, by
numpy (the kernels know the bits of float64 and float32 only).

A shift (every entry moved by its step) is made in place a block at a time from a copy of
``work``, compared a block at a time after ``f`` returned, and put back from the copy. With a
per-slice reduction (``slices``) each entry's answer is taken from ``f``'s output before
``work`` is put back (an output may be a view of its input).
"""
from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from .._core.arrays import same_bits
from .._core.errors import InputMutationError, mutation_error
from .loops import BITS, check_and_write, save_and_write, write_back
from .points import Points
from .target import Slices, Target, entry_of, flat_handle, located, reader, written

#: Blocks of at least this many entries are written and checked by the kernels of
#: :mod:`.loops`, in one pass per evaluation (numpy's fancy indexing takes three: the write,
#: the read-back for the check, the restore); smaller ones by numpy (no compilation for a
#: small screen).
KERNEL_MIN = 1 << 15

Progress = Callable[[int], None]
Evaluate = Callable[[], object]


def run_here(evaluate: Evaluate, work: np.ndarray, points: Points, *, param: str | None = None,
             progress: Progress | None = None, slices: Slices | None = None) -> np.ndarray:
    """The reduced ``f`` at each point (``slices``: at each entry set), perturbing ``work`` in
    place (see the module docstring); ``progress(groups done)`` after each group of points."""
    try:
        return evaluate_points(evaluate, work, points, progress, slices)
    except PointFailed as failed:
        j = failed.j
        first = points.first(j)
        at = None if first is None else entry_of(first, work.shape)
        err = located(failed.cause, at, points.label(j), param)
        raise err from err.__cause__  # an OutputError chains nothing: it says what f returned


class PointFailed(Exception):
    """The evaluation of point ``j`` raised ``cause`` (:func:`run_here` names the entry)."""

    def __init__(self, j: int, cause: Exception) -> None:
        super().__init__(j)
        self.j, self.cause = j, cause


def evaluate_points(evaluate: Evaluate, work: np.ndarray, points: Points, progress: Progress | None = None,
                    slices: Slices | None = None) -> np.ndarray:
    """:func:`run_here` whose failure at a point is :class:`PointFailed` (a worker answers it
    as data; :func:`run_here` raises it as the FunctionError at the point's entry)."""
    if points.shift is not None:
        if work.flags.c_contiguous:
            return _shift(evaluate, work, points, slices, progress)
        points = points.materialized(np.ascontiguousarray(work).reshape(-1))
    if points.blocks is not None:
        if slices is None and work.flags.c_contiguous:
            return _runs(evaluate, work, points, progress)
        points = points.joined(work.dtype)
    flat = flat_handle(work)
    old = np.asarray(flat[points.idx], dtype=work.dtype).reshape(-1)  # each entry's value now
    with np.errstate(all="ignore"):  # f is evaluated at points the user did not choose
        # (no value 0 among them: a nonzero value compared with == is compared bit for bit)
        if (slices is None and points.single and points.width == 2
                and np.array_equal(points.idx[0::2], points.idx[1::2]) and not (points.values == 0).any()):
            return _pairs(evaluate, work, flat, points, old[0::2].tolist(), progress)
        if slices is None and points.single:
            out = [np.nan] * len(points)
            _single(evaluate, work, flat, points, old.tolist(), out, progress)
            return np.array(out, dtype=np.float64)
        answers = np.full(points.answer_count(slices), np.nan)
        _blocks(evaluate, work, flat, points, old, answers, progress, slices)
    return answers


def _single(evaluate, work, flat, points: Points, old: list, out: list, progress) -> None:
    """The hot loop (one entry per point: the entry-wise pass), bare: Python lists and
    memoryview reads, everything else computed up front."""
    probe, sign = reader(flat), math.copysign
    width = points.width
    for j, (i, value) in enumerate(zip(points.idx.tolist(), points.values.tolist())):
        was, now = old[j], probe[i]
        if now != was or (now == 0 and sign(1.0, now) != sign(1.0, was)):  # same bits (-0.0 is not 0.0; no NaN is set)
            raise written(entry_of(i, work.shape), "while other entries were perturbed")
        try:
            flat[i] = value
            out[j] = evaluate()
            now = probe[i]
            kept = now == value and (now != 0 or sign(1.0, now) == sign(1.0, value))
        except Exception as exc:  # raised again with the entry it happened at
            raise PointFailed(j, exc) from exc
        finally:
            flat[i] = was
        if not kept:
            raise written(entry_of(i, work.shape))
        if progress is not None and (j + 1) % width == 0:
            progress((j + 1) // width)


def _pairs(evaluate, work, flat, points: Points, old: list, progress) -> np.ndarray:
    """The hottest loop: the entry-wise pass, both points of an entry in one turn (its
    ``+h``, then its ``-h``), the entry put back once; no value is 0, so ``==`` is ``same_bits``."""
    probe, sign = reader(flat), math.copysign
    values = points.values
    rows = zip(points.idx[0::2].tolist(), values[0::2].tolist(), values[1::2].tolist(), old)
    plus_out, minus_out = [np.nan] * len(old), [np.nan] * len(old)
    for j, (i, plus, minus, was) in enumerate(rows):
        now = probe[i]
        if now != was or (now == 0 and sign(1.0, now) != sign(1.0, was)):  # same bits (-0.0 is not 0.0; no NaN is set)
            raise written(entry_of(i, work.shape), "while other entries were perturbed")
        side = 0
        try:
            flat[i] = plus
            plus_out[j] = evaluate()
            kept = probe[i] == plus
            side = 1
            flat[i] = minus
            minus_out[j] = evaluate()
            kept = kept and probe[i] == minus
        except Exception as exc:  # raised again with the entry it happened at
            raise PointFailed(2 * j + side, exc) from exc
        finally:
            flat[i] = was
        if not kept:
            raise written(entry_of(i, work.shape))
        if progress is not None:
            progress(j + 1)
    out = np.empty(2 * len(old))
    out[0::2], out[1::2] = plus_out, minus_out
    return out


def _blocks(evaluate, work, flat, points: Points, old: np.ndarray, out: np.ndarray, progress,
            slices: Slices | None) -> None:
    """Points of several entries each (a block of a screen, a round of a colouring); with
    ``slices``, each entry's answer goes to its place in ``out``."""
    width = points.width
    same_dtype = points.values.dtype == work.dtype
    for j in range(len(points)):
        span = points.span(j)
        ids, was = points.idx[span], old[span]
        if not same_bits(np.asarray(flat[ids], dtype=work.dtype), was):
            moved = _first_other(np.asarray(flat[ids], dtype=work.dtype), was)
            raise written(entry_of(ids[moved], work.shape), "while other entries were perturbed")
        try:
            flat[ids] = points.values[span]
            # the values as x's dtype holds them
            wanted = points.values[span] if same_dtype else np.asarray(flat[ids], dtype=work.dtype)
            y = evaluate()
            now = np.asarray(flat[ids], dtype=work.dtype)
            kept = same_bits(now, wanted)
            if kept and slices is not None:  # taken while work is perturbed: y may be a view of it
                slices.per_entry(y, ids, out[points.answer_span(j, j + 1, slices)])
            elif kept:
                out[j] = y
            del y  # f's next output must not stack on this one
        except Exception as exc:
            raise PointFailed(j, exc) from exc
        finally:
            flat[ids] = was
        if not kept:
            raise written(entry_of(ids[_first_other(now, wanted)], work.shape),
                          f"while it was perturbed, {points.label(j)}")
        if progress is not None and (j + 1) % width == 0:
            progress((j + 1) // width)


def _runs(evaluate, work: np.ndarray, points: Points, progress) -> np.ndarray:
    """Blocks, a run of points over the same index array at a time (see the module docstring)."""
    assert points.blocks is not None
    jobs, who = points.blocks.jobs, points.blocks.who
    flat = work.reshape(-1)
    out = np.empty(len(jobs), dtype=np.complex128 if work.dtype.kind == "c" else np.float64)  # the complex step's
    start = 0
    with np.errstate(all="ignore"):  # f is evaluated at points the user did not choose
        for k in range(1, len(jobs) + 1):
            if k == len(jobs) or jobs[k][0] is not jobs[start][0]:
                run = Run(evaluate, work, flat, jobs[start][0], start, who)
                each = [v for _, v in jobs[start:k]]
                if run.idx.size >= KERNEL_MIN and flat.dtype in BITS:
                    out[start:k] = run.in_passes(each)
                else:
                    out[start:k] = run.by_numpy(each)
                start = k
                if progress is not None:
                    progress(k)
    return out


class Run:
    """Points ``first, first + 1, ...`` of blocks, all over the entries ``idx`` of ``work``."""

    def __init__(self, evaluate: Evaluate, work: np.ndarray, flat: np.ndarray, idx: np.ndarray, first: int,
                 who: str) -> None:
        self.evaluate, self.work, self.flat, self.idx, self.first, self.who = evaluate, work, flat, idx, first, who

    def by_numpy(self, each: list[np.ndarray]) -> list[float]:
        flat, idx = self.flat, self.idx
        old = flat[idx]  # integer indices: already a copy (a slice would be a view: copied)
        if np.may_share_memory(old, flat):
            old = old.copy()
        out: list[float] = []
        try:
            for values in each:
                flat[idx] = values
                # What was written, in x's dtype: the values themselves when they are in it.
                wanted = values if isinstance(values, np.ndarray) and values.dtype == flat.dtype else flat[idx]
                out.append(self.call(len(out)))
                if not same_bits(flat[idx], wanted):
                    raise self.mutation()
        finally:
            flat[idx] = old
        return out

    def in_passes(self, each: list[np.ndarray]) -> list[float]:
        """:meth:`by_numpy` for a large block, in one pass over its entries per evaluation: the
        check that ``f`` left the written values in place fused with writing the next point
        (or ``x`` back), on the values' bits (so the check is bit for bit, as ``same_bits``)."""
        flat, idx = self.flat, self.idx
        bits = BITS[flat.dtype]
        memory = flat.view(bits)
        points = [np.ascontiguousarray(v, dtype=flat.dtype).view(bits) for v in each]  # as x's dtype holds them
        old = np.empty(idx.size, dtype=bits)
        save_and_write(memory, idx, old, points[0])
        out: list[float] = []
        done = False
        try:
            for j, wanted in enumerate(points):
                out.append(self.call(j))
                following = points[j + 1] if j + 1 < len(points) else old
                moved = check_and_write(memory, idx, wanted, following)
                done = following is old
                if moved >= 0:
                    raise self.mutation()
        finally:
            if not done:
                write_back(memory, idx, old)
        return out

    def call(self, j: int) -> float:
        """``f`` at the run's ``j``-th point, as it stands in ``work``; its exception is
        :class:`PointFailed` at that point (a write into the input seen by ``f``'s own
        evaluation passes as it is)."""
        try:
            return self.evaluate()  # type: ignore[return-value]
        except InputMutationError:
            raise
        except Exception as exc:
            raise PointFailed(self.first + j, exc) from exc

    def mutation(self) -> InputMutationError:
        where = entry_of(self.idx[0], self.work.shape) if self.idx.size else entry_of(0, self.work.shape)
        return mutation_error(self.who, f" (seen while the block holding entry {where} was perturbed)")


def _shift(evaluate, work: np.ndarray, points: Points, slices: Slices | None, progress) -> np.ndarray:
    """A shift (every entry moved by its step) in place: one copy of ``work`` to put it back
    from, the shifted values made and compared a block at a time, no index or value arrays."""
    shift = points.shift
    assert shift is not None
    flat = work.reshape(-1)
    old = flat.copy()
    out = np.full(points.answer_count(slices), np.nan)
    for j, sign in enumerate(shift.signs):
        moved = -1
        try:
            shift.fill(old, sign, flat)
            with np.errstate(all="ignore"):
                y = evaluate()
            moved = shift.first_moved(flat, old, sign)
            if moved < 0 and slices is not None:  # taken while work is shifted: y may be a view of it
                slices.per_entry(y, None, out[points.answer_span(j, j + 1, slices)])
            elif moved < 0:
                out[j] = y
            del y  # f's next output must not stack on this one
        except Exception as exc:
            raise PointFailed(j, exc) from exc
        finally:
            flat[...] = old
        if moved >= 0:
            raise written(entry_of(moved, work.shape), f"while it was perturbed, {points.label(j)}")
        if progress is not None and (j + 1) % points.width == 0:
            progress((j + 1) // points.width)
    return out


def _first_other(now: np.ndarray, want: np.ndarray) -> int:
    """The first position where ``now`` and ``want`` differ in their bits."""
    size = now.dtype.itemsize  # any item size (complex128: 16 bytes, no unsigned integer of it)
    a = np.ascontiguousarray(now).reshape(-1).view(np.uint8).reshape(-1, size)
    b = np.ascontiguousarray(want).reshape(-1).view(np.uint8).reshape(-1, size)
    diff = np.flatnonzero((a != b).any(axis=1))
    return int(diff[0]) if diff.size else 0


class SerialRunner:
    """Points one after another on the target's own array (any Python callable)."""

    name = "serial"
    notes: tuple[str, ...] = ()

    def __init__(self, target: Target) -> None:
        self.target = target
        self.evaluations = 0

    def run(self, points: Points, progress: Progress | None = None) -> np.ndarray:
        t = self.target
        values = run_here(t.evaluate, t.work, points, param=t.param, progress=progress, slices=t.slices)
        self.evaluations += len(points)
        return values

    def close(self, terminate: bool = False) -> None:
        pass

