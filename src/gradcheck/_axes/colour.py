"""The colouring: one entry of every slice differenced in the same evaluation, as points.

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

:class:`Coloured` is a point generator: each round is two points of the evaluation layer
(:mod:`gradcheck._evaluate`), its entries at ``x + h``, then at ``x - h``, named ``"+h,
coloured: 8 entries perturbed together"`` in errors; the layer's runner evaluates them with the
target's per-slice reduction (:class:`SliceReduction`) and answers each entry with its own
slice's value. The elementwise first pass (one round holding every entry) is a *shift*
(:class:`~gradcheck._evaluate.Shift`): every entry moved by its step rule, no index or value
array of N made or shipped.

Each entry's scalar is its own slice's ``v_b . f_b``, so its round-off estimate
``u(|f+| + |f-|)/|denom|`` is that of its slice (not of the whole output's, which would be
``sqrt(B)`` times larger), and its kink test uses the slice's own base value
(:meth:`Coloured.base_per_entry`).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

import numpy as np

from .._adjudicate.referee import Referee
from .._core.errors import OutputError
from .._core.inputs import output_array, require_real_output
from .._differences import StepsOf, perturbed_points
from .._evaluate import Points, Runner, Shift
from .._refine.second_look import PerEntry
from .declare import Axes
from .referee import first_slice, slice_referee

#: How the colouring's points are named in errors: ``"+h, coloured: 8 entries perturbed together"``.
SIDES, KIND = ("+h", "-h"), "coloured"
#: The points' arrays of the rounds asked of the runner at once stay under this (about 112
#: bytes per entry of a round: its indices, values and answers at +h and -h).
BATCH_BYTES = 16 * 2**20

Steps = StepsOf | np.ndarray
Diffs = tuple[np.ndarray, np.ndarray, np.ndarray | None]
Positions = np.ndarray | slice  # positions in the request, or slice(None): all of them
Round = tuple[Positions, np.ndarray]  # positions, their flat indices
Batch = list[tuple[Positions, np.ndarray, np.ndarray, np.ndarray]]  # rounds: positions, indices, x+h, x-h


class SliceReduction:
    """The colouring's per-slice reduction (the layer's :class:`~gradcheck._evaluate.Slices`):
    ``cotangent . y`` over each slice in float64 (:meth:`Axes.reduce_weighted`), each perturbed
    entry answered with its own slice's value. ``shape`` is ``f(x)``'s; an output of another
    shape, or not real, is refused (:class:`~gradcheck._core.errors.OutputError`)."""

    per_point = None  # one answer per entry a point sets

    def __init__(self, axes: Axes, cotangent: np.ndarray, shape: tuple[int, ...]) -> None:
        self.axes, self.shape = axes, tuple(shape)
        self.cotangent = np.asarray(cotangent, dtype=np.float64)

    def reduce(self, y: object, out: np.ndarray | None = None) -> np.ndarray:
        """Per slice, ``cotangent . y`` over the slice, in float64 (into ``out`` when given)."""
        arr = require_real_output(output_array(y))
        if arr.shape != self.shape:
            raise OutputError(f"shape {arr.shape}", tail=f", after returning shape {self.shape} at the "
                              "unperturbed input; f must return the same shape at every point")
        return self.axes.reduce_weighted(self.cotangent, arr, out)

    def per_entry(self, y: object, entries: np.ndarray | None, out: np.ndarray) -> None:
        if self.axes.elementwise and entries is None:  # every entry its own slice, in flat order
            self.reduce(y, out)
            return
        every = np.arange(out.size, dtype=np.int64) if entries is None else entries
        out[...] = self.reduce(y)[self.axes.slice_of(every)]


class Coloured:
    """A differencer ``(flat_indices, steps) -> (f_plus, f_minus, denominator)`` whose values
    are each entry's own slice of ``cotangent . f``, computed by colouring on ``runner`` (a
    runner of the evaluation layer whose target has a :class:`SliceReduction`).
    ``evaluations`` counts the calls of ``f`` (the runner's, and :attr:`spent` besides it)."""

    def __init__(self, axes: Axes, runner: Runner, work: np.ndarray, cotangent: np.ndarray, y0: np.ndarray) -> None:
        self.axes, self.runner, self.work = axes, runner, work
        self._v = np.asarray(cotangent, dtype=np.float64)
        self.base_slices = SliceReduction(axes, self._v, y0.shape).reduce(y0)
        self._y_first = first_slice(axes, y0)  # what the slice referee compares f of one slice with
        self.spent = 0  # calls of f made beside the runner (verification, the referee's probe)
        self.rounds = 0
        self.name = "coloured"
        self.reason = ""  # what check's report says of this differencer
        self.own_notes: list[str] = []
        self._taken = 0
        self.batch = rounds_per_call(runner)
        self.batch_entries = BATCH_BYTES // 112

    @property
    def evaluations(self) -> int:
        return self.spent + self.runner.evaluations

    @property
    def notes(self) -> list[str]:
        """The colouring's notes, and the runner's (a fork made in spite of a hazard; the
        compiled runner's kernel timing is the entry-wise report's, not said here)."""
        return self.own_notes + ([] if self.runner.name == "compiled" else list(self.runner.notes))

    def take(self) -> int:
        """The evaluations made since the last call (the caller counts them once)."""
        total = self.evaluations
        fresh, self._taken = total - self._taken, total
        return fresh

    def close(self, terminate: bool = False) -> None:
        self.runner.close(terminate)

    def referee(self, f: Callable[..., object], x: np.ndarray, cotangent: object = None, *, digits: int) -> Referee:
        """The referee for this check (the variant ``gradcheck._adjudicate.referee.referee_for``
        builds, under its rule): on each entry's own slice when ``f`` allows it (:mod:`.referee`;
        its cotangent is the colouring's own); the notes say which."""
        chosen, note = slice_referee(f, x, self._y_first, self._v, self.axes, digits=digits)
        self.spent += 1  # slice_referee tried f on one slice
        self.own_notes.append(note)
        return chosen

    def base_per_entry(self) -> np.ndarray | PerEntry:
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

    def _first_rounds(self) -> Iterator[np.ndarray]:
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

    def first_pass(self, steps: Steps, progress: Callable[[int], None] | None = None, *,
                   denominators: bool = True) -> Diffs:
        """``differences(np.arange(N), steps)``, the same bits, without its index arrays of N:
        the rounds come from the strides, and the elementwise pass (one round holding every
        entry) is a shift. Without ``denominators`` the third array is None (the caller
        computes them where it reads them: :class:`~gradcheck._differences.DenominatorsOf`)."""
        n = self.work.size
        # StepsOf: each round's steps computed when it is made (no array of N)
        h = steps if isinstance(steps, StepsOf) else np.asarray(steps, dtype=np.float64).reshape(-1)
        if n and self.axes.elementwise and np.isfinite(self.work).all():
            return self._shifted(h, progress, denominators)
        out = (np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan) if denominators else None)
        # The rounds' entries are their positions (the request is every entry, in flat order).
        self._rounds(((ids, ids) for ids in self._first_rounds()), h, out, progress)
        return out

    def differences(self, flat_indices: np.ndarray, steps: np.ndarray,
                    progress: Callable[[int], None] | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        idx = np.asarray(flat_indices, dtype=np.int64).reshape(-1)
        h = np.asarray(steps, dtype=np.float64).reshape(-1)
        out = (np.full(idx.size, np.nan), np.full(idx.size, np.nan), np.full(idx.size, np.nan))
        slices = self.axes.slice_of(idx)
        groups = SliceGroups(slices, self.axes.slices)
        # positions (or slice(None): every entry, no index copies), and their flat indices
        self._rounds(((pos, idx[pos]) for pos in map(groups.members, range(groups.rounds))), h, out, progress)
        return out

    def _shifted(self, h: Steps, progress: Callable[[int], None] | None, denominators: bool) -> Diffs:
        """The elementwise first pass, every entry at once: a shift by the step rule (a fresh
        :class:`StepsOf`'s relative step) or by the steps given."""
        n = self.work.size
        rule = Shift(h.rel_step if isinstance(h, StepsOf) else h, n)
        answers = self.runner.run(Points.shifted(rule, SIDES, KIND, unit="rounds"))
        self.rounds += 1
        denom = None
        if denominators:  # (x + h) - (x - h) as perturbed_points takes it, a block at a time
            denom = np.empty(n)
            flat = self.work.reshape(-1)
            for start in range(0, n, 1 << 16):
                part = slice(start, start + (1 << 16))
                denom[part] = perturbed_points(flat[part], h[part])[2]
        if progress is not None:
            progress(n)
        return answers[:n], answers[n:], denom

    def _rounds(self, rounds: Iterable[Round], h: Steps, out: Diffs, progress: Callable[[int], None] | None) -> None:
        """Difference each round ``(positions, flat indices)`` into ``out = (f_plus, f_minus,
        denom)`` at the positions (``h`` aligned with the positions), a batch of rounds per call
        of the runner."""
        f_plus, f_minus, denom = out
        flat = self.work.reshape(-1)
        batch: Batch = []
        entries = done = 0
        for pos, ids in rounds:
            xp, xm, d, finite = perturbed_points(flat[ids], h[pos])
            if denom is not None:  # None: the caller computes them where it reads them
                denom[pos] = d
            if not finite.all():  # not perturbed: NaN (the round is still evaluated, and counted)
                pos = np.flatnonzero(finite) if isinstance(pos, slice) else pos[finite]
                ids, xp, xm = ids[finite], xp[finite], xm[finite]
            batch.append((pos, ids, xp, xm))
            entries += ids.size
            self.rounds += 1
            if len(batch) >= self.batch or entries >= self.batch_entries:
                done += self._run(batch, f_plus, f_minus)
                batch, entries = [], 0
                if progress is not None:
                    progress(min(done, f_plus.size))
        if batch:
            done += self._run(batch, f_plus, f_minus)
            if progress is not None:
                progress(min(done, f_plus.size))

    def _run(self, batch: Batch, f_plus: np.ndarray, f_minus: np.ndarray) -> int:
        """The rounds of ``batch`` as points (each round at +h, then at -h) on the runner; each
        entry's answer stored at its position. Returns the entries differenced."""
        parts = [a for _, ids, xp, xm in batch for a in ((ids, xp), (ids, xm))]
        starts = np.zeros(len(parts) + 1, dtype=np.int64)
        np.cumsum([ids.size for ids, _ in parts], out=starts[1:])
        idx = np.concatenate([ids for ids, _ in parts]).astype(np.int64, copy=False)
        values = np.concatenate([v for _, v in parts])
        answers = self.runner.run(Points(idx, values, starts, 1, SIDES, KIND, unit="rounds"))
        for r, (pos, ids, _, _) in enumerate(batch):
            at = int(starts[2 * r])
            f_plus[pos] = answers[at:at + ids.size]
            f_minus[pos] = answers[at + ids.size:at + 2 * ids.size]
        return int(starts[-1]) // 2


def rounds_per_call(runner: Runner) -> int:
    """Rounds asked of ``runner`` at once: two per point it runs side by side (a pool's
    workers, an executor's slots, a kernel's threads, a batch's rows), one for the serial
    runner (whose memory is then one round's)."""
    side_by_side = next((int(n) for n in (getattr(runner, a, None) for a in ("workers", "slots", "rows"))
                         if isinstance(n, int)), 0)
    return max(1, 2 * side_by_side)


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

    def members(self, r: int) -> Positions:
        """Positions (into the request) of round ``r``, in slice order; ``slice(None)`` when
        the one round holds every entry."""
        if self.distinct:
            return slice(None)
        has = np.flatnonzero(self.counts > r)
        at = self.starts[has] + r
        return at if self.order is None else self.order[at]
