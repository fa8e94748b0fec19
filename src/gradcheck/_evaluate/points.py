"""Points: what a point generator asks the layer to evaluate.

A point is ``x`` with some flat entries set to given values. A batch of ``k`` points is three
arrays: the flat indices and the values of every point, back to back, and where each point
starts (``None`` when every point sets one entry, as the entry-wise pass does). Points come in
groups of ``width`` consecutive points (an entry's ``+h`` and ``-h``: 2) that a runner never
splits between chunks; chunk sizes, progress and counts are in groups (entries, for the
entry-wise pass). ``labels`` say how an error names the perturbation of point ``j``:
``labels[j % len(labels)]`` with ``{count}`` replaced by the point's number of entries; with a
``kind`` (``"coloured"``) the label is ``"+h, coloured: 8 entries perturbed together"``. ``unit``
says what an error that counts the points counts (:meth:`Points.counted`): the entry-wise
pass's entries (an entry's two points), a screen's blocks (one point each), the colouring's
rounds (a round's points at ``+h`` and at ``-h``: one cycle of the labels), else points.

A **shift** (:class:`Shift`) is a batch of points that move EVERY entry by its step, ``x_i +
sign * h_i`` in ``x``'s dtype (the elementwise colouring's one round): it holds no index or value
array, only the step rule, and is rebuilt where it runs (a worker's own copy included).

**Blocks** (:class:`Blocks`, ``Points.of_blocks``) are points given as ``(idx, values)`` pairs,
each keeping its own arrays (a screen's blocks: a whole model's are millions of entries, and
nothing is concatenated for the serial loop); consecutive points with the same index array
(the same object) set the same entries, which the serial loop saves and puts back once. The
other runners take them joined (:meth:`Points.joined`).

>>> p = Points.pairs(np.array([4, 7]), np.array([1.5, 2.5]), np.array([0.5, 1.5]))
>>> len(p), p.groups, p.entries(1).tolist(), p.values_of(1).tolist(), p.label(1)
(4, 2, [4], [0.5], '-h')
>>> q = Points(np.array([0, 1, 5]), np.array([1.0, 2.0, 3.0]), starts=np.array([0, 2, 3]),
...            labels=("+h", "-h"), kind="coloured")
>>> len(q), q.entries(0).tolist(), q.label(0), q.label(1)
(2, [0, 1], '+h, coloured: 2 entries perturbed together', '-h, coloured: 1 entries perturbed together')
>>> s = Points.shifted(Shift(1e-3, 5), labels=("+h", "-h"), kind="coloured")
>>> len(s), s.first(1), s.entry_count, s.label(0)
(2, 0, 10, '+h, coloured: 5 entries perturbed together')
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Protocol

import numpy as np

from .._core.arrays import bits_differ

#: How the entry-wise pass names its two points per entry.
SIDES = ("+h", "-h")
#: The kind of points that move the whole input along a direction (``x + s d``): an error is
#: located at the point its label names (``"at x + h d (h = 0.01)"``), not at an entry.
ALONG = "along a direction"
#: Entries per block when a shift is made or compared (no temporary of N).
BLOCK = 1 << 16


def steps_for(values: np.ndarray, rel_step: float | np.ndarray) -> np.ndarray:
    """``h_i = step * max(1, |x_i|)`` as float64: THE step rule (the differences' and a shift's)."""
    v = np.abs(np.asarray(values, dtype=np.float64))
    step = np.asarray(rel_step, dtype=np.float64)
    if step.ndim:
        return step * np.maximum(1.0, v)
    # In place in the fresh |x| (the same products): one array of N, not three.
    np.maximum(1.0, v, out=v)
    return np.multiply(step, v, out=v)


class Answers(Protocol):
    """How many answers a reduction gives a point (:class:`~.target.Slices`)."""

    @property
    def per_point(self) -> int | None:
        """Answers per point; None: one per entry the point sets."""


@dataclass(frozen=True)
class Shift:
    """Points that move every one of ``size`` entries by its step, ``x_i + signs[j] * h_i``
    rounded in ``x``'s dtype exactly as :func:`~gradcheck._differences.perturbed_points` rounds
    it: ``h_i = steps_for(x_i, step)`` for a relative ``step`` (the rule: nothing of size N
    travels), or ``step[i]`` when the steps are given as an array."""

    step: float | np.ndarray
    size: int
    signs: tuple[int, ...] = (1, -1)

    def steps(self, old: np.ndarray, part: slice) -> np.ndarray:
        """The steps of entries ``part`` (``old``: their values, unperturbed), in ``old``'s dtype."""
        if isinstance(self.step, np.ndarray):
            h = np.asarray(self.step[part], dtype=np.float64)
        else:
            h = steps_for(old, self.step)
        return h.astype(old.dtype, copy=False)

    def fill(self, old: np.ndarray, sign: int, out: np.ndarray) -> None:
        """``out = old + sign * h`` in ``old``'s dtype, a block at a time."""
        move = np.add if sign > 0 else np.subtract
        with np.errstate(all="ignore"):
            for start in range(0, old.size, BLOCK):
                part = slice(start, start + BLOCK)
                move(old[part], self.steps(old[part], part), out=out[part])

    def first_moved(self, now: np.ndarray, old: np.ndarray, sign: int) -> int:
        """The first position where ``now`` no longer holds the shifted value (``f`` wrote
        there), recomputed a block at a time (the same operation: the same bits), or -1."""
        move = np.add if sign > 0 else np.subtract
        with np.errstate(all="ignore"):
            for start in range(0, now.size, BLOCK):
                part = slice(start, start + BLOCK)
                want = move(old[part], self.steps(old[part], part)).astype(now.dtype, copy=False)
                bad = np.flatnonzero(bits_differ(now[part], want))
                if bad.size:
                    return start + int(bad[0])
        return -1


@dataclass(frozen=True)
class Blocks:
    """Points as ``(idx, values)`` pairs, one per point, each with its own arrays (see the
    module docstring); ``who`` names ``f`` when it writes into its input (``"f"``)."""

    jobs: tuple[tuple[np.ndarray, np.ndarray], ...]
    who: str = "the function"


@dataclass(frozen=True)
class Points:
    """``k`` points (see the module docstring). ``idx`` are flat indices into ``x``, ``values``
    the values set there (in ``x``'s dtype), ``starts`` the ``k + 1`` offsets of the points in
    both (``None``: one entry per point). ``kind`` names points of several entries in errors;
    ``shift`` makes the batch a :class:`Shift` (``idx`` and ``values`` then empty)."""

    idx: np.ndarray
    values: np.ndarray
    starts: np.ndarray | None = None
    width: int = 1
    labels: tuple[str, ...] = field(default=("perturbed",))
    kind: str | None = None
    shift: Shift | None = None
    blocks: Blocks | None = None
    unit: str = "points"

    @classmethod
    def of_blocks(cls, jobs: list[tuple[np.ndarray, np.ndarray]], who: str = "the function",
                  labels: tuple[str, ...] = ("along a block of {count} entries",)) -> Points:
        """One point per job ``(idx, values)``: ``x[idx] = values`` (:class:`Blocks`)."""
        return cls(np.zeros(0, dtype=np.int64), np.zeros(0), None, 1, labels, blocks=Blocks(tuple(jobs), who),
                   unit="blocks")

    def joined(self, dtype: np.dtype | None = None) -> Points:
        """Blocks as ordinary points (their indices and values concatenated, the values in
        ``dtype`` when given: ``x``'s); other points as they are."""
        if self.blocks is None:
            return self
        jobs = self.blocks.jobs
        starts = np.zeros(len(jobs) + 1, dtype=np.int64)
        np.cumsum([i.size for i, _ in jobs], out=starts[1:])
        idx = np.concatenate([i for i, _ in jobs]).astype(np.int64) if jobs else np.zeros(0, np.int64)
        values = np.concatenate([np.asarray(v, dtype=dtype) for _, v in jobs]) if jobs else np.zeros(0, dtype)
        return replace(self, idx=idx, values=values, starts=starts, blocks=None)

    @classmethod
    def pairs(cls, idx: np.ndarray, plus: np.ndarray, minus: np.ndarray) -> Points:
        """The entry-wise pass's points: entry ``idx[j]`` at ``plus[j]``, then at ``minus[j]``."""
        values = np.empty(2 * plus.size, dtype=plus.dtype)
        values[0::2], values[1::2] = plus, minus
        return cls(np.repeat(np.asarray(idx, dtype=np.int64), 2), values, None, 2, SIDES, unit="entries")

    @classmethod
    def shifted(cls, shift: Shift, labels: tuple[str, ...] = SIDES, kind: str | None = None,
                unit: str = "points") -> Points:
        """One point per sign of ``shift``, each moving every entry."""
        return cls(np.zeros(0, dtype=np.int64), np.zeros(0), None, 1, labels, kind, shift, unit=unit)

    def __len__(self) -> int:
        if self.shift is not None:
            return len(self.shift.signs)
        if self.blocks is not None:
            return len(self.blocks.jobs)
        return self.idx.size if self.starts is None else self.starts.size - 1

    @property
    def groups(self) -> int:
        return len(self) // self.width

    @property
    def single(self) -> bool:
        """Every point sets one entry."""
        return self.starts is None and self.shift is None and self.blocks is None

    @property
    def entry_count(self) -> int:
        """The entries the points set, all told (the length of a per-entry answer)."""
        if self.blocks is not None:
            return sum(int(i.size) for i, _ in self.blocks.jobs)
        return self.shift.size * len(self) if self.shift is not None else self.idx.size

    def span(self, j: int) -> slice:
        """Where point ``j``'s entries and values are in :attr:`idx` and :attr:`values`."""
        if self.starts is None:
            return slice(j, j + 1)
        return slice(int(self.starts[j]), int(self.starts[j + 1]))

    def answer_count(self, slices: Answers | None) -> int:
        """How many answers the points get: one per point (``slices`` None), ``slices.per_point``
        per point, or one per entry set (a per-slice reduction: :class:`~.target.Slices`)."""
        return self.answer_span(0, len(self), slices).stop

    def answer_span(self, lo: int, hi: int, slices: Answers | None) -> slice:
        """Where the answers of points ``lo:hi`` are (see :meth:`answer_count`)."""
        if slices is None:
            return slice(lo, hi)
        if slices.per_point is not None:
            return slice(lo * slices.per_point, hi * slices.per_point)
        if self.shift is not None:
            return slice(lo * self.shift.size, hi * self.shift.size)
        if self.starts is None:
            return slice(lo, hi)
        return slice(int(self.starts[lo]), int(self.starts[hi]))

    def entries(self, j: int) -> np.ndarray:
        if self.shift is not None:
            return np.arange(self.shift.size, dtype=np.int64)
        if self.blocks is not None:
            return self.blocks.jobs[j][0]
        return self.idx[self.span(j)]

    def values_of(self, j: int) -> np.ndarray:
        if self.blocks is not None:
            return self.blocks.jobs[j][1]
        return self.values[self.span(j)]

    def count(self, j: int) -> int:
        """How many entries point ``j`` sets."""
        if self.shift is not None:
            return self.shift.size
        if self.blocks is not None:
            return int(self.blocks.jobs[j][0].size)
        return 1 if self.starts is None else int(self.starts[j + 1] - self.starts[j])

    def first(self, j: int) -> int | None:
        """The flat index of point ``j``'s first entry (errors are located there), or None."""
        if self.shift is not None:
            return 0 if self.shift.size else None
        if self.kind == ALONG:
            return None
        if self.blocks is not None:
            entries = self.blocks.jobs[j][0]
            return int(entries[0]) if entries.size else None
        span = self.span(j)
        return int(self.idx[span.start]) if span.stop > span.start else None

    def side(self, j: int) -> str:
        """Point ``j``'s own label, before a ``kind`` is added (``"+h"``)."""
        return self.labels[j % len(self.labels)]

    def label(self, j: int) -> str:
        """How an error names point ``j``'s perturbation (``"+h"``, ``"along a block of 3 entries"``,
        ``"+h, coloured: 4 entries perturbed together"``)."""
        count = self.count(j)
        if self.kind is not None and self.kind != ALONG:
            return f"{self.side(j)}, {self.kind}: {count} entries perturbed together"
        return self.side(j).format(count=count)

    def counted(self, groups: np.ndarray) -> int:
        """How many :attr:`unit` (entries, blocks, rounds, points) groups ``groups`` (their
        numbers) touch; a round is one cycle of the labels (its ``+h`` and ``-h`` points)."""
        per_unit = len(self.labels) if self.unit == "rounds" else self.width
        first = np.asarray(groups, dtype=np.int64) * self.width
        return int(np.unique(first // per_unit).size)

    def flat_entries(self, lo: int, hi: int) -> np.ndarray:
        """The distinct flat indices points ``lo:hi`` set, sorted."""
        if self.shift is not None:
            return np.arange(self.shift.size if hi > lo else 0, dtype=np.int64)
        return np.unique(self.part(lo, hi).joined().idx)

    def part(self, lo: int, hi: int) -> Points:
        """Points ``lo:hi`` (whole groups when both are multiples of :attr:`width`)."""
        labels = _shifted(self.labels, lo)
        if self.blocks is not None:
            blocks = Blocks(self.blocks.jobs[lo:hi], self.blocks.who)
            return replace(self, labels=labels, blocks=blocks)
        if self.shift is not None:
            shift = Shift(self.shift.step, self.shift.size, self.shift.signs[lo:hi])
            return replace(self, labels=labels, shift=shift)
        if self.starts is None:
            return replace(self, idx=self.idx[lo:hi], values=self.values[lo:hi], labels=labels)
        a, b = int(self.starts[lo]), int(self.starts[hi])
        return replace(self, idx=self.idx[a:b], values=self.values[a:b], starts=self.starts[lo:hi + 1] - a, labels=labels)

    def bounds(self, chunks: int) -> np.ndarray:
        """``chunks + 1`` point offsets that cut the points into about equal runs of whole groups."""
        groups = self.groups
        cuts = np.linspace(0, groups, max(1, min(chunks, groups)) + 1).astype(np.int64)
        return cuts * self.width

    def materialized(self, old: np.ndarray) -> Points:
        """A shift as ordinary points (index and value arrays of every entry), from the
        unperturbed flat values ``old``; other points as they are."""
        if self.shift is None:
            return self
        n, signs = self.shift.size, self.shift.signs
        values = np.empty(n * len(signs), dtype=old.dtype)
        for j, sign in enumerate(signs):
            self.shift.fill(old, sign, values[j * n:(j + 1) * n])
        idx = np.tile(np.arange(n, dtype=np.int64), len(signs))
        starts = np.arange(len(signs) + 1, dtype=np.int64) * n
        return replace(self, idx=idx, values=values, starts=starts, shift=None)


def _shifted(labels: tuple[str, ...], lo: int) -> tuple[str, ...]:
    """``labels`` for points that start at point ``lo`` (label ``j`` is ``labels[(lo + j) % n]``)."""
    k = lo % len(labels)
    return labels[k:] + labels[:k]
