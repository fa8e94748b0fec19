"""The coloured engine: one entry of every slice differenced in the same evaluation.

When output slice ``b`` depends only on input slice ``b`` (a declaration verified by
:mod:`.verify`), perturbing one entry in each of several slices at once and reducing each
output slice with its own part of the cotangent gives, for each of those entries, exactly
the value a one-entry perturbation would give: ``v_b . f(x + h e_i)_b`` with ``i`` in slice
``b`` (the other slices' terms do not depend on ``x_i``). This is Curtis-Powell-Reid
colouring of a block-diagonal Jacobian, applied to an entry-wise gradient check.

A request for ``n`` entries is split into *rounds*: round ``r`` holds the ``r``-th requested
entry of every slice, so a round never holds two entries of one slice. Each round costs two
evaluations (+h, -h), whatever the number of slices. The first pass over a ``(B, D)`` input
with ``independent_axes=(0,)`` is ``D`` rounds: ``2 D`` evaluations instead of ``2 B D``; the
second look's suspects are differenced the same way (rounds = the most suspects any one slice
holds), through the same differencer.

Each entry's scalar is its own slice's ``v_b . f_b``, so its round-off estimate
``u(|f+| + |f-|)/|denom|`` is that of its slice (not of the whole output's, which would be
``sqrt(B)`` times larger), and its kink test uses the slice's own base value
(:meth:`Coloured.base_values`).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._core.arrays import same_bits
from .._core.errors import FunctionError, OutputError, mutation_error
from .._core.inputs import output_array, require_real_output
from ..engines._differences import perturbed_points
from .declare import Axes
from .referee import slice_referee

#: The batched form's buffer (rows of perturbed copies of x) stays under this many bytes.
BUDGET_BYTES = 16 * 2**20


class Coloured:
    """A differencer ``(flat_indices, steps) -> (f_plus, f_minus, denominator)`` whose
    values are each entry's own slice of ``cotangent . f``, computed by colouring.

    ``evaluate(batch)`` returns ``f``'s output: at ``work`` itself when ``batch`` is None, or
    for a stack of perturbed copies of ``work`` (``vectorized``: ``f`` takes a leading batch
    axis). ``evaluations`` counts the calls of ``f`` (one per copy in a batch).
    """

    name = "coloured"

    def __init__(self, axes: Axes, evaluate: Callable[[np.ndarray | None], Any], work: np.ndarray,
                 cotangent: np.ndarray, y0: np.ndarray, *, vectorized: bool = False) -> None:
        self.axes, self.work, self.vectorized = axes, work, vectorized
        self._evaluate = evaluate
        self._v = np.asarray(cotangent, dtype=np.float64)
        self._y_shape = tuple(y0.shape)
        self.base_slices = self._reduce(y0)
        self.evaluations = 0
        self.rounds = 0
        self.reason = ""  # what check's report says of this differencer
        self.notes: list[str] = []
        self._taken = 0
        self.rows = max(2, BUDGET_BYTES // max(1, work.nbytes)) if vectorized else 1

    def take(self) -> int:
        """The evaluations made since the last call (the caller counts them once)."""
        fresh, self._taken = self.evaluations - self._taken, self.evaluations
        return fresh

    def referee(self, f: Callable[..., Any], x: np.ndarray, y0: np.ndarray, *, digits: int):
        """The referee for this check: on each entry's own slice when ``f`` allows it
        (:mod:`.referee`); the notes say which."""
        chosen, note = slice_referee(f, x, y0, self._v, self.axes, digits=digits)
        self.evaluations += 1  # slice_referee tried f on one slice
        self.notes.append(note)
        return chosen

    def base_values(self, flat_indices: np.ndarray) -> np.ndarray:
        """``cotangent . f(x)`` over each entry's own slice: the base value of its kink test."""
        return self.base_slices[self.axes.slice_of(flat_indices)]

    def round_order(self) -> np.ndarray:
        """Every flat index, round by round (the first pass's rounds): contiguous pieces of
        this order are whole rounds, so a checkpoint's chunks split few of them."""
        size = self.work.size
        groups = SliceGroups(self.axes.slice_of(np.arange(size)), self.axes.slices)
        if groups.distinct:
            return np.arange(size)
        return np.concatenate([np.asarray(groups.members(r), dtype=np.int64) for r in range(groups.rounds)])

    def differences(self, flat_indices: np.ndarray, steps: np.ndarray,
                    progress: Callable[[int], None] | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        idx = np.asarray(flat_indices, dtype=np.int64).reshape(-1)
        h = np.asarray(steps, dtype=np.float64).reshape(-1)
        n = idx.size
        f_plus, f_minus, denom = np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan)
        if n == 0:
            return f_plus, f_minus, denom
        slices = self.axes.slice_of(idx)
        groups = SliceGroups(slices, self.axes.slices)
        flat = self.work.reshape(-1)
        points: list[tuple[Any, ...]] = []
        done = 0
        for r in range(groups.rounds):
            pos = groups.members(r)  # positions, or slice(None): every entry (no index copies)
            old = flat[idx[pos]]
            xp, xm, d, finite = perturbed_points(old, h[pos])
            denom[pos] = d
            if not finite.all():
                live = np.arange(n)[pos][finite]
                xp, xm, old = xp[finite], xm[finite], old[finite]
            else:
                live = pos
            ids, mine = idx[live], slices[live]  # shared by the +h and -h points
            points.append((live, ids, xp, old, mine, f_plus, "+h"))
            points.append((live, ids, xm, old, mine, f_minus, "-h"))
            del xp, xm, d, finite
            self.rounds += 1
            if len(points) >= self.rows or r == groups.rounds - 1:
                self._run(points)
                done += sum(p[1].size for p in points) // 2
                points = []
                if progress is not None:
                    progress(min(done, n))
        return f_plus, f_minus, denom

    def _run(self, points) -> None:
        """Evaluate each point (entries ``ids`` set to ``values``, put back to ``old``) and
        store each entry's own slice reduction (its slice: ``mine``) in ``out[positions]``."""
        if self.vectorized:
            batch = np.empty((len(points),) + self.work.shape, dtype=self.work.dtype)
            batch[...] = self.work
            for k, (_, ids, values, _, _, _, _) in enumerate(points):
                batch[k].reshape(-1)[ids] = values
            ys = self._call(points[0][1], points[0][-1], batch)
            if np.shape(ys)[:1] != (len(points),):
                raise ValueError(f"vectorized f returned shape {np.shape(ys)} for a batch of {len(points)}")
            for k, (pos, _, _, _, mine, out, _) in enumerate(points):
                out[pos] = self._reduce(ys[k])[mine]
            self.evaluations += len(points)
            return
        for pos, ids, values, old, mine, out, side in points:
            out[pos] = self.point(ids, values, old, mine, side)
            self.evaluations += 1

    def point(self, ids: np.ndarray, values: np.ndarray, old: np.ndarray, mine: np.ndarray,
              side: str) -> np.ndarray:
        """One evaluation: entries ``ids`` of ``work`` set to ``values`` (put back to ``old``
        after), each one's own slice reduction (its slice: ``mine``) returned. An ``f`` that
        wrote into a perturbed entry (putting it back would hide the write) is
        :class:`~gradcheck.InputMutationError`."""
        flat = self.work.reshape(-1)
        try:
            flat[ids] = values
            y = self._call(ids, side, None)
            written = first_written(flat[ids], values)
        finally:
            flat[ids] = old
        if written >= 0:
            at = tuple(int(k) for k in np.unravel_index(int(ids[written]), self.work.shape))
            raise mutation_error(seen=f" (entry {at} changed while it was perturbed, {side}, coloured)")
        return self._reduce(y)[mine]

    def _call(self, ids: np.ndarray, side: str, batch: np.ndarray | None):
        try:
            with np.errstate(all="ignore"):
                return self._evaluate(batch)
        except Exception as exc:
            where = tuple(int(k) for k in np.unravel_index(int(ids[0]), self.work.shape)) if ids.size else None
            label = f"{side}, coloured: {ids.size} entries perturbed together"
            if isinstance(exc, OutputError):
                raise exc.at(where, label) from None
            raise FunctionError(where, label, None, exc) from exc

    def _reduce(self, y: Any) -> np.ndarray:
        """Per slice, ``cotangent . y`` over the slice, in float64."""
        arr = require_real_output(output_array(y))
        if arr.shape != self._y_shape:
            raise OutputError(f"shape {arr.shape}", tail=f", after returning shape {self._y_shape} at the "
                              "unperturbed input; f must return the same shape at every point")
        return self.axes.reduce_slices(self._v * np.asarray(arr, dtype=np.float64))


def first_written(now: np.ndarray, values: Any) -> int:
    """The first position where ``now`` (the perturbed entries after ``f`` ran) no longer
    holds the bits of ``values`` (what was set there), or -1: ``f`` wrote into an entry it
    was given perturbed (restoring the entry would hide that write)."""
    values = np.asarray(values, dtype=now.dtype)
    if same_bits(now, values):
        return -1
    bits = f"u{now.dtype.itemsize}"
    return int(np.flatnonzero(now.view(bits) != values.view(bits))[0])


class SliceGroups:
    """The requested entries grouped by slice, read out round by round: round ``r`` holds the
    ``r``-th requested entry of every slice that has one, so no round holds two entries of one
    slice. Holds one index array of the request's size (none when the slices come sorted, as
    in the first pass over leading axes) and two of the number of slices.

    >>> groups = SliceGroups(np.array([0, 0, 1, 0]), 2)
    >>> [groups.members(r).tolist() for r in range(groups.rounds)]
    [[0, 2], [1], [3]]
    """

    def __init__(self, slices: np.ndarray, count: int) -> None:
        self.distinct = slices.size < 2 or bool((slices[1:] > slices[:-1]).all())
        self.rounds = min(1, slices.size) if self.distinct else 0
        if self.distinct:  # every entry in one round (elementwise): nothing to index
            return
        self.counts = np.bincount(slices, minlength=count)
        self.starts = np.cumsum(self.counts) - self.counts
        self.rounds = int(self.counts.max())
        ordered = bool((slices[1:] >= slices[:-1]).all())
        self.order = None if ordered else np.argsort(slices, kind="stable")

    def members(self, r: int) -> Any:
        """Positions (into the request) of round ``r``, in slice order; ``slice(None)`` when
        the one round holds every entry."""
        if self.distinct:
            return slice(None)
        has = np.flatnonzero(self.counts > r)
        at = self.starts[has] + r
        return at if self.order is None else self.order[at]
