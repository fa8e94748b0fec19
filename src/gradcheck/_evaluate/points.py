"""Points: what a point generator asks the layer to evaluate.

A point is ``x`` with some flat entries set to given values. A batch of ``k`` points is three
arrays: the flat indices and the values of every point, back to back, and where each point
starts (``None`` when every point sets one entry, as the entry-wise pass does). Points come in
groups of ``width`` consecutive points (an entry's ``+h`` and ``-h``: 2) that a runner never
splits between chunks; chunk sizes, progress and counts are in groups (entries, for the
entry-wise pass). ``labels`` say how an error names the perturbation of point ``j``:
``labels[j % len(labels)]`` with ``{count}`` replaced by the point's number of entries.

>>> p = Points.pairs(np.array([4, 7]), np.array([1.5, 2.5]), np.array([0.5, 1.5]))
>>> len(p), p.groups, p.entries(1).tolist(), p.values_of(1).tolist(), p.label(1)
(4, 2, [4], [0.5], '-h')
>>> q = Points(np.array([0, 1, 5]), np.array([1.0, 2.0, 3.0]), starts=np.array([0, 2, 3]),
...            labels=("along a block of {count} entries",))
>>> len(q), q.entries(0).tolist(), q.label(0)
(2, [0, 1], 'along a block of 2 entries')
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

#: How the entry-wise pass names its two points per entry.
SIDES = ("+h", "-h")


@dataclass(frozen=True)
class Points:
    """``k`` points (see the module docstring). ``idx`` are flat indices into ``x``, ``values``
    the values set there (in ``x``'s dtype), ``starts`` the ``k + 1`` offsets of the points in
    both (``None``: one entry per point)."""

    idx: np.ndarray
    values: np.ndarray
    starts: np.ndarray | None = None
    width: int = 1
    labels: tuple[str, ...] = field(default=("perturbed",))

    @classmethod
    def pairs(cls, idx: np.ndarray, plus: np.ndarray, minus: np.ndarray) -> Points:
        """The entry-wise pass's points: entry ``idx[j]`` at ``plus[j]``, then at ``minus[j]``."""
        values = np.empty(2 * plus.size, dtype=plus.dtype)
        values[0::2], values[1::2] = plus, minus
        return cls(np.repeat(np.asarray(idx, dtype=np.int64), 2), values, None, 2, SIDES)

    def __len__(self) -> int:
        return self.idx.size if self.starts is None else self.starts.size - 1

    @property
    def groups(self) -> int:
        return len(self) // self.width

    @property
    def single(self) -> bool:
        """Every point sets one entry."""
        return self.starts is None

    def span(self, j: int) -> slice:
        """Where point ``j``'s entries and values are in :attr:`idx` and :attr:`values`."""
        if self.starts is None:
            return slice(j, j + 1)
        return slice(int(self.starts[j]), int(self.starts[j + 1]))

    def entries(self, j: int) -> np.ndarray:
        return self.idx[self.span(j)]

    def values_of(self, j: int) -> np.ndarray:
        return self.values[self.span(j)]

    def label(self, j: int) -> str:
        """How an error names point ``j``'s perturbation (``"+h"``, ``"along a block of 3 entries"``)."""
        count = 1 if self.starts is None else int(self.starts[j + 1] - self.starts[j])
        return self.labels[j % len(self.labels)].format(count=count)

    def part(self, lo: int, hi: int) -> Points:
        """Points ``lo:hi`` (whole groups when both are multiples of :attr:`width`)."""
        if self.starts is None:
            return Points(self.idx[lo:hi], self.values[lo:hi], None, self.width, _shifted(self.labels, lo))
        a, b = int(self.starts[lo]), int(self.starts[hi])
        return Points(self.idx[a:b], self.values[a:b], self.starts[lo:hi + 1] - a, self.width,
                      _shifted(self.labels, lo))

    def bounds(self, chunks: int) -> np.ndarray:
        """``chunks + 1`` point offsets that cut the points into about equal runs of whole groups."""
        groups = self.groups
        cuts = np.linspace(0, groups, max(1, min(chunks, groups)) + 1).astype(np.int64)
        return cuts * self.width


def _shifted(labels: tuple[str, ...], lo: int) -> tuple[str, ...]:
    """``labels`` for points that start at point ``lo`` (label ``j`` is ``labels[(lo + j) % n]``)."""
    k = lo % len(labels)
    return labels[k:] + labels[:k]
