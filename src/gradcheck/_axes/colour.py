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
from .._differences import StepsOf, perturbed_points
from .._refine.second_look import PerEntry
from .declare import Axes
from .referee import first_slice, slice_referee

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
    #: The elementwise first pass may move ``work`` itself (:meth:`_whole`); the engines
    #: that ship each evaluation's entries elsewhere set this False.
    IN_PLACE = True

    def __init__(self, axes: Axes, evaluate: Callable[[np.ndarray | None], Any], work: np.ndarray,
                 cotangent: np.ndarray, y0: np.ndarray, *, vectorized: bool = False) -> None:
        self.axes, self.work, self.vectorized = axes, work, vectorized
        self._evaluate = evaluate
        self._v = np.asarray(cotangent, dtype=np.float64)
        self._y_shape = tuple(y0.shape)
        self.base_slices = self._reduce(y0)
        self._y_first = first_slice(axes, y0)  # what the slice referee compares f of one slice with
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

    def referee(self, f: Callable[..., Any], x: np.ndarray, *, digits: int):
        """The referee for this check: on each entry's own slice when ``f`` allows it
        (:mod:`.referee`); the notes say which."""
        chosen, note = slice_referee(f, x, self._y_first, self._v, self.axes, digits=digits)
        self.evaluations += 1  # slice_referee tried f on one slice
        self.notes.append(note)
        return chosen

    def base_per_entry(self) -> Any:
        """Each entry's base value (``cotangent . f(x)`` over its own slice, the kink test's
        f(x)) without an array of N: with ``"all"`` the per-slice values themselves (an entry
        is its own slice), else a :class:`PerEntry` that looks them up by position."""
        if self.axes.elementwise:
            return self.base_slices
        return PerEntry(self.base_slices, self.axes.slice_of, self.axes.per_slice)

    def round_order(self) -> np.ndarray:
        """Every flat index, round by round (the first pass's rounds): contiguous pieces of
        this order are whole rounds, so a checkpoint's chunks split few of them."""
        return np.concatenate(list(self._first_rounds()))

    def _first_rounds(self):
        """The first pass's rounds, each the flat indices of its entries in slice order: round
        ``r`` holds the ``r``-th entry (in flat order) of every slice. Built from the strides
        (one index array of the number of slices), never from an array of N."""
        shape = self.axes.x_shape
        strides = [int(np.prod(shape[d + 1:], dtype=np.int64)) for d in range(len(shape))]
        if self.axes.elementwise:
            yield np.arange(self.work.size)
            return
        offsets = np.zeros(1, dtype=np.int64)
        for a in self.axes.axes:  # C order over the declared axes: slice order
            offsets = (offsets[:, None] + np.arange(shape[a], dtype=np.int64) * strides[a]).reshape(-1)
        others = [d for d in range(len(shape)) if d not in self.axes.axes]
        for r in range(self.axes.per_slice if offsets.size else 0):
            coords = np.unravel_index(r, tuple(shape[d] for d in others)) if others else ()
            yield offsets + sum(int(c) * strides[d] for c, d in zip(coords, others))

    def first_pass(self, steps: Any, progress: Callable[[int], None] | None = None, *,
                   denominators: bool = True) -> tuple[np.ndarray, np.ndarray, Any]:
        """``differences(np.arange(N), steps)``, the same bits, without its index arrays of N:
        the rounds come from the strides, and the elementwise pass (one round holding every
        entry) perturbs ``work`` in place on the serial engine (:meth:`_whole`). Without
        ``denominators`` the third array is None (the caller computes them where it reads
        them: :class:`~gradcheck._differences.DenominatorsOf`)."""
        n = self.work.size
        # StepsOf: each round's steps computed when it is made (no array of N)
        h = steps if isinstance(steps, StepsOf) else np.asarray(steps, dtype=np.float64).reshape(-1)
        out = (np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan) if denominators else None)
        if not n:
            return out
        whole = self._whole_batch if self.vectorized else self._whole
        if self.axes.elementwise and self.IN_PLACE and whole(h, *out):
            if progress is not None:
                progress(n)
            return out
        # The rounds' entries are their positions, and each round holds every slice in order.
        rounds = ((ids, ids, slice(None)) for ids in self._first_rounds())
        return self._rounds(rounds, 1 if self.axes.elementwise else self.axes.per_slice, h, out, progress)

    def differences(self, flat_indices: np.ndarray, steps: np.ndarray,
                    progress: Callable[[int], None] | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        idx = np.asarray(flat_indices, dtype=np.int64).reshape(-1)
        h = np.asarray(steps, dtype=np.float64).reshape(-1)
        n = idx.size
        out = (np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan))
        if n == 0:
            return out
        slices = self.axes.slice_of(idx)
        groups = SliceGroups(slices, self.axes.slices)

        def rounds():
            for r in range(groups.rounds):
                pos = groups.members(r)  # positions, or slice(None): every entry (no index copies)
                yield pos, idx[pos], slices[pos]

        return self._rounds(rounds(), groups.rounds, h, out, progress)

    def _rounds(self, rounds, count: int, h: Any, out, progress):
        """Difference each round ``(positions, flat indices, their slices)`` into ``out =
        (f_plus, f_minus, denom)`` at the positions (``h`` aligned with the positions)."""
        f_plus, f_minus, denom = out
        flat = self.work.reshape(-1)
        points: list[tuple[Any, ...]] = []
        done = 0
        for r, (pos, ids, mine) in enumerate(rounds):
            old = flat[ids]  # kept for the serial engine's points only (the others never put back)
            xp, xm, d, finite = perturbed_points(old, h[pos])
            if denom is not None:  # None: the caller computes them where it reads them
                denom[pos] = d
            if not finite.all():
                pos, mine = _kept(pos, finite), _kept(mine, finite)
                ids, xp, xm, old = ids[finite], xp[finite], xm[finite], old[finite]
            if not self.IN_PLACE or self.vectorized:
                old = None
            points.append((pos, ids, xp, old, mine, f_plus, "+h"))  # ids, old, mine: shared by +h and -h
            points.append((pos, ids, xm, old, mine, f_minus, "-h"))
            del xp, xm, d, finite
            self.rounds += 1
            if len(points) >= self.rows or r == count - 1:
                self._run(points)
                done += sum(p[1].size for p in points) // 2
                points = []
                if progress is not None:
                    progress(min(done, f_plus.size))
        return out

    def _whole(self, h: Any, f_plus: np.ndarray, f_minus: np.ndarray, denom: np.ndarray | None) -> bool:
        """The one round of an elementwise first pass, in place: every entry of ``work`` moved
        to ``x + h`` (then ``x - h``) in its dtype, exactly the values :func:`perturbed_points`
        gives, ``f`` called, ``work`` put back; the reductions go straight into the outputs.
        False (nothing done) when an entry is not finite (those are not perturbed)."""
        flat = self.work.reshape(-1)
        if not np.isfinite(flat).all():
            return False
        old = flat.copy()
        h = h.reading(old) if isinstance(h, StepsOf) else h  # work moves below: read x from the copy
        for side, move, values in (("+h", np.add, f_plus), ("-h", np.subtract, f_minus)):
            try:
                _moved(move, old, h, flat)
                if denom is None:
                    pass  # computed where read (DenominatorsOf)
                elif values is f_plus:
                    denom[...] = flat  # (x + h) - (x - h) in float64, as perturbed_points takes it
                else:
                    np.subtract(denom, flat, out=denom)
                y = self._call(0, flat.size, side, None)
                written = _first_moved(flat, old, h, move)
            finally:
                flat[...] = old
            if written >= 0:
                at = tuple(int(k) for k in np.unravel_index(written, self.work.shape))
                raise mutation_error(seen=f" (entry {at} changed while it was perturbed, {side}, coloured)")
            self._reduce(y, out=values)
            del y  # f's next output must not stack on this one
            self.evaluations += 1
        self.rounds += 1
        return True

    def _whole_batch(self, h: Any, f_plus: np.ndarray, f_minus: np.ndarray, denom: np.ndarray | None) -> bool:
        """:meth:`_whole` for a vectorized ``f``: the batch of two is ``x + h`` and ``x - h``
        themselves, made from ``work`` (left as it is) with no index or value arrays."""
        flat = self.work.reshape(-1)
        if not np.isfinite(flat).all():
            return False
        batch = np.empty((2,) + self.work.shape, dtype=self.work.dtype)
        _moved(np.add, flat, h, batch[0].reshape(-1))
        _moved(np.subtract, flat, h, batch[1].reshape(-1))
        if denom is not None:
            denom[...] = batch[0].reshape(-1)  # (x + h) - (x - h) in float64, as perturbed_points takes it
            np.subtract(denom, batch[1].reshape(-1), out=denom)
        ys = self._call(0, flat.size, "+h", batch)
        if np.shape(ys)[:1] != (2,):
            raise ValueError(f"vectorized f returned shape {np.shape(ys)} for a batch of 2")
        self._reduce(ys[0], out=f_plus)
        self._reduce(ys[1], out=f_minus)
        self.evaluations += 2
        del ys  # reduced first: an output may be a view of the batch, which is checked next
        for k, (move, side) in enumerate(((np.add, "+h"), (np.subtract, "-h"))):
            written = _first_moved(batch[k].reshape(-1), flat, h, move)
            if written >= 0:
                raise _batch_written(written, self.work.shape, side)
        del batch
        self.rounds += 1
        return True

    def _run(self, points) -> None:
        """Evaluate each point (entries ``ids`` set to ``values``, put back to ``old``) and
        store each entry's own slice reduction (its slice: ``mine``) in ``out[positions]``."""
        if self.vectorized:
            batch = np.empty((len(points),) + self.work.shape, dtype=self.work.dtype)
            batch[...] = self.work
            for k, (_, ids, values, _, _, _, _) in enumerate(points):
                batch[k].reshape(-1)[ids] = values
            first = points[0][1]
            ys = self._call(int(first[0]) if first.size else None, first.size, points[0][-1], batch)
            if np.shape(ys)[:1] != (len(points),):
                raise ValueError(f"vectorized f returned shape {np.shape(ys)} for a batch of {len(points)}")
            for k, (pos, _, _, _, mine, out, _) in enumerate(points):
                out[pos] = self._reduce(ys[k])[mine]
            self.evaluations += len(points)
            del ys  # reduced first: an output may be a view of the batch, which is checked next
            _check_batch(batch, self.work.reshape(-1), points)
            return
        for pos, ids, values, old, mine, out, side in points:
            out[pos] = self.point(ids, values, old, mine, side)
            self.evaluations += 1

    def point(self, ids: Any, values: np.ndarray, old: np.ndarray, mine: np.ndarray,
              side: str) -> np.ndarray:
        """One evaluation: entries ``ids`` of ``work`` set to ``values`` (put back to ``old``
        after), each one's own slice reduction (its slice: ``mine``) returned. An ``f`` that
        wrote into a perturbed entry (putting it back would hide the write) is
        :class:`~gradcheck.InputMutationError`. ``ids`` may be ``slice(None)``: every entry,
        in flat order (what :func:`wire_ids` sends a worker for a round holding them all)."""
        flat = self.work.reshape(-1)
        every = isinstance(ids, slice)
        count = flat.size if every else ids.size
        try:
            flat[ids] = values
            y = self._call((0 if every else int(ids[0])) if count else None, count, side, None)
            written = first_written(flat[ids], values)
        finally:
            flat[ids] = old
        if written >= 0:
            at = tuple(int(k) for k in np.unravel_index(written if every else int(ids[written]), self.work.shape))
            raise mutation_error(seen=f" (entry {at} changed while it was perturbed, {side}, coloured)")
        return self._reduce(y)[mine]

    def _call(self, first: int | None, count: int, side: str, batch: np.ndarray | None):
        """``f``'s output with ``count`` entries perturbed (the first: flat index ``first``)."""
        try:
            with np.errstate(all="ignore"):
                return self._evaluate(batch)
        except Exception as exc:
            where = tuple(int(k) for k in np.unravel_index(first, self.work.shape)) if first is not None else None
            label = f"{side}, coloured: {count} entries perturbed together"
            if isinstance(exc, OutputError):
                raise exc.at(where, label) from None
            raise FunctionError(where, label, None, exc) from exc

    def _reduce(self, y: Any, out: np.ndarray | None = None) -> np.ndarray:
        """Per slice, ``cotangent . y`` over the slice, in float64 (into ``out`` when given)."""
        arr = require_real_output(output_array(y))
        if arr.shape != self._y_shape:
            raise OutputError(f"shape {arr.shape}", tail=f", after returning shape {self._y_shape} at the "
                              "unperturbed input; f must return the same shape at every point")
        return self.axes.reduce_weighted(self._v, arr, out)


def wire_ids(ids: np.ndarray, size: int) -> Any:
    """What a worker is sent for a round's entries: ``slice(None)`` for a round holding all
    ``size`` of them (then in flat order: a round holds them by slice, and with one entry per
    slice slice order is flat order), else the indices themselves."""
    return slice(None) if ids.size == size else ids


def _kept(selection: Any, finite: np.ndarray) -> np.ndarray:
    """``selection`` (an index array, or ``slice(None)``: all) restricted to where ``finite``."""
    return np.flatnonzero(finite) if isinstance(selection, slice) else selection[finite]


def _moved(move: Any, old: np.ndarray, h: Any, out: np.ndarray, block: int = 65536) -> None:
    """``out = move(old, h)`` in ``old``'s dtype (``h``, float64 steps or a
    :class:`~gradcheck._differences.StepsOf`, rounded to it first, as
    :func:`perturbed_points` does), a block at a time: no array of N besides ``out``."""
    for start in range(0, old.size, block):
        part = slice(start, start + block)
        move(old[part], np.asarray(h[part], dtype=np.float64).astype(old.dtype, copy=False), out=out[part])


def _first_moved(flat: np.ndarray, old: np.ndarray, step: Any, move: Any, block: int = 65536) -> int:
    """:func:`first_written` for the elementwise round, which perturbs ``work`` in place: the
    first position where ``flat`` no longer holds ``move(old, step)``, recomputed a block at a
    time (the same operation in the same dtype, so the same bits), or -1."""
    bits = f"u{flat.dtype.itemsize}"
    for start in range(0, flat.size, block):
        part = slice(start, start + block)
        want = move(old[part], np.asarray(step[part], dtype=np.float64).astype(flat.dtype, copy=False))
        want = want.astype(flat.dtype, copy=False)
        bad = np.flatnonzero(flat[part].view(bits) != want.view(bits))
        if bad.size:
            return start + int(bad[0])
    return -1


def _check_batch(batch: np.ndarray, flat: np.ndarray, points) -> None:
    """After a vectorized ``f`` ran on ``batch`` (row ``k``: ``work`` with point ``k``'s entries
    set to its values): :class:`~gradcheck.InputMutationError` if ``f`` wrote into a row, at a
    perturbed entry or elsewhere (the batch is gradcheck's, so no user data changed, but a write
    into its input is a defect of ``f`` that the serial engine reports too)."""
    for k, (_, ids, values, _, _, _, side) in enumerate(points):
        row = batch[k].reshape(-1)
        written = first_written(row[ids], values)
        if written >= 0:
            raise _batch_written(int(ids[written]), batch.shape[1:], side)
        row[ids] = flat[ids]
        if not same_bits(row, flat):
            bits = f"u{flat.dtype.itemsize}"
            raise _batch_written(int(np.flatnonzero(row.view(bits) != flat.view(bits))[0]), batch.shape[1:], side)


def _batch_written(flat_index: int, shape: tuple[int, ...], side: str) -> Exception:
    at = tuple(int(k) for k in np.unravel_index(flat_index, shape))
    return mutation_error(seen=f" (entry {at} of the batch it was given changed, {side}, coloured, vectorized)")


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
