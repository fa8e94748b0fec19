"""Sign draws and blocks: which entries are tested together, with which signs.

A draw is a random permutation of the ``N`` entries cut into ``blocks`` equal parts, and
a random sign for every entry. Both come from the screen's seed and the draw's number, so
a screen is reproducible and its draws are independent of one another: which entries meet
in a block is random, so the structure of ``x`` (a row, a column) never decides it.

A block's entries are held in index order (each part of the permutation sorted), so writing
a block into ``x`` and reading it back walks memory forward instead of jumping at random
over all of ``x`` (a whole model: 15-18 ns per entry at random, the largest part of a
screen's own work per evaluation). Its halves (for bisection) are its entries at even and at
odd positions in index order: each a random set, as the block is, and sorted, spread over the
block's whole range. (Lower and upper halves in index order, as before 2026-12-03, made the
last leaves runs of neighbouring entries of one name: on the 148-name MLP the 1e-4 entry's
leaf held 5 entries of ``w3`` whose first differences were in doubt, 46 evaluations of
entry-wise look where a leaf of random entries took 22.)

>>> d = draw(10, 3, seed=0, number=0)
>>> sorted(np.concatenate(d.blocks).tolist()) == list(range(10))
True
>>> [b.size for b in d.blocks], set(np.unique(d.signs)) <= {-1.0, 1.0}
([4, 3, 3], True)
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Draw:
    """One sign draw: ``signs`` (int8 +-1 for every entry) and ``blocks`` (flat indices,
    int32 below 2**31 entries, each block sorted) that partition the entries. Compact: a
    whole model's draw costs 5 bytes per entry, not 16."""

    number: int
    signs: np.ndarray
    blocks: tuple[np.ndarray, ...]

    def block_of(self) -> np.ndarray:
        """For every entry, the number of the block that holds it (int32)."""
        owner = np.empty(self.signs.size, dtype=np.int32)
        for b, idx in enumerate(self.blocks):
            owner[idx] = b
        return owner


def draw(size: int, blocks: int, *, seed: int, number: int) -> Draw:
    """Draw ``number`` of a screen seeded with ``seed``: ``blocks`` random blocks (at most
    one per entry) and random signs. Draws with different numbers are independent."""
    rng = np.random.default_rng([int(seed), int(number), 0x5C4EE4])
    # rng.permutation(size), shuffled in place in the smallest index type (the same order);
    # the signs drawn in chunks (the same stream as one rng.random(size)).
    perm = np.arange(size, dtype=np.int32 if size < 2**31 else np.int64)
    rng.shuffle(perm)
    signs = np.empty(size, dtype=np.int8)
    for lo in range(0, size, _CHUNK):
        part = rng.random(min(_CHUNK, size - lo))
        signs[lo:lo + part.size] = np.where(part < 0.5, -1, 1)
    parts = tuple(p for p in np.array_split(perm, max(1, min(int(blocks), size))) if p.size)
    for p in parts:  # views of perm: sorted in place (the same sets; see the module docstring)
        p.sort()
    return Draw(number=int(number), signs=signs, blocks=parts)


#: Signs are drawn this many at a time (no float64 array of N).
_CHUNK = 1 << 20


def halves(idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A block's two halves for bisection (the larger half first when the size is odd): its
    entries at even and at odd positions in index order, each sorted as the block is."""
    return np.ascontiguousarray(idx[0::2]), np.ascontiguousarray(idx[1::2])
