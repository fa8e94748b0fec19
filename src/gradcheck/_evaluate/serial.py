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
"""
from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from .._core.arrays import same_bits
from .points import Points
from .target import Target, entry_of, flat_handle, located, reader, written

Progress = Callable[[int], None]


def run_here(evaluate: Callable[[], float], work: np.ndarray, points: Points, *, param: str | None = None,
             progress: Progress | None = None) -> np.ndarray:
    """The reduced ``f`` at each point, perturbing ``work`` in place (see the module docstring);
    ``progress(groups done)`` after each group of points."""
    try:
        return evaluate_points(evaluate, work, points, progress)
    except PointFailed as failed:
        j = failed.j
        err = located(failed.cause, entry_of(points.entries(j)[0], work.shape), points.label(j), param)
        raise err from err.__cause__  # an OutputError chains nothing: it says what f returned


class PointFailed(Exception):
    """The evaluation of point ``j`` raised ``cause`` (:func:`run_here` names the entry)."""

    def __init__(self, j: int, cause: Exception) -> None:
        super().__init__(j)
        self.j, self.cause = j, cause


def evaluate_points(evaluate: Callable[[], float], work: np.ndarray, points: Points,
                    progress: Progress | None = None) -> np.ndarray:
    """:func:`run_here` whose failure at a point is :class:`PointFailed` (a worker answers it
    as data; :func:`run_here` raises it as the FunctionError at the point's entry)."""
    flat = flat_handle(work)
    old = np.asarray(flat[points.idx], dtype=work.dtype).reshape(-1)  # each entry's value now
    out = [np.nan] * len(points)
    with np.errstate(all="ignore"):  # f is evaluated at points the user did not choose
        # (no value 0 among them: a nonzero value compared with == is compared bit for bit)
        if (points.single and points.width == 2 and np.array_equal(points.idx[0::2], points.idx[1::2])
                and not (points.values == 0).any()):
            return _pairs(evaluate, work, flat, points, old[0::2].tolist(), progress)
        if points.single:
            _single(evaluate, work, flat, points, old.tolist(), out, progress)
        else:
            _blocks(evaluate, work, flat, points, old, out, progress)
    return np.array(out, dtype=np.float64)


def _single(evaluate, work, flat, points: Points, old: list, out: list, progress) -> None:
    """The hot loop (one entry per point: the entry-wise pass), bare: Python lists and
    memoryview reads, everything else computed up front."""
    probe, sign = reader(flat), math.copysign
    width = points.width
    for j, (i, value) in enumerate(zip(points.idx.tolist(), points.values.tolist())):
        was, now = old[j], probe[i]
        if now != was or (now == 0 and sign(1.0, now) != sign(1.0, was)):  # same_value, inlined
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
        if now != was or (now == 0 and sign(1.0, now) != sign(1.0, was)):  # same_value, inlined
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


def _blocks(evaluate, work, flat, points: Points, old: np.ndarray, out: list, progress) -> None:
    """Points of several entries each (a block of a screen, a round of a colouring)."""
    width = points.width
    for j in range(len(points)):
        span = points.span(j)
        ids, was = points.idx[span], old[span]
        first = entry_of(ids[0], work.shape) if ids.size else None
        if not same_bits(np.asarray(flat[ids], dtype=work.dtype), was):
            raise written(first, "while other entries were perturbed")  # type: ignore[arg-type]
        try:
            flat[ids] = points.values[span]
            wanted = np.asarray(flat[ids], dtype=work.dtype)  # the values as x's dtype holds them
            out[j] = evaluate()
            kept = same_bits(np.asarray(flat[ids], dtype=work.dtype), wanted)
        except Exception as exc:
            raise PointFailed(j, exc) from exc
        finally:
            flat[ids] = was
        if not kept:
            raise written(first, f"while the {ids.size} entries from it were perturbed")  # type: ignore[arg-type]
        if progress is not None and (j + 1) % width == 0:
            progress((j + 1) // width)


class SerialRunner:
    """Points one after another on the target's own array (any Python callable)."""

    name = "serial"
    notes: tuple[str, ...] = ()

    def __init__(self, target: Target) -> None:
        self.target = target
        self.evaluations = 0

    def run(self, points: Points, progress: Progress | None = None) -> np.ndarray:
        t = self.target
        values = run_here(t.evaluate, t.work, points, param=t.param, progress=progress)
        self.evaluations += len(points)
        return values

    def close(self, terminate: bool = False) -> None:
        pass


def run_points(target: Target, points: Points) -> np.ndarray:
    """:func:`run_here` on the target (for one-off evaluations beside a runner)."""
    return run_here(target.evaluate, target.work, points, param=target.param)

