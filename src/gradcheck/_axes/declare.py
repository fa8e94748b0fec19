"""The declaration ``independent_axes``: which slices of ``x`` and of ``f(x)`` go together.

``independent_axes=(0,)`` says that ``f``'s output, along axis 0, is computed slice by slice
from the matching input slices: output row ``b`` depends on input row ``b`` only. Input and
output share those axes (same positions, same sizes). ``"all"`` is the elementwise case:
every axis, output shape equal to the input's, each output entry depends on its own input
entry only.

A slice is one combination of coordinates along the declared axes; slices are numbered in
C order (``np.ravel_multi_index`` over the axes' sizes). An input entry belongs to the slice
of its coordinates on those axes, and so does an output entry.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

#: Output entries reduced per block by :meth:`Axes.reduce_weighted`.
REDUCE_BLOCK = 1 << 16


@dataclass(frozen=True)
class Axes:
    """A declaration checked against the shapes of ``x`` and of ``f(x)``."""

    axes: tuple[int, ...]          # positions in x and in f(x), increasing
    x_shape: tuple[int, ...]
    y_shape: tuple[int, ...]
    elementwise: bool              # independent_axes="all"

    @property
    def sizes(self) -> tuple[int, ...]:
        return tuple(self.x_shape[a] for a in self.axes)

    @property
    def slices(self) -> int:
        """How many slices there are (B: one evaluation differences up to B entries)."""
        return int(np.prod(self.sizes, dtype=np.int64))

    @property
    def per_slice(self) -> int:
        """Input entries per slice: the rounds of the first pass (2 evaluations each)."""
        return int(np.prod(self.x_shape, dtype=np.int64)) // max(1, self.slices)

    def slice_of(self, flat_indices: np.ndarray) -> np.ndarray:
        """The slice number of each flat input index."""
        idx = np.asarray(flat_indices, dtype=np.int64)
        if self.elementwise:
            return idx
        k = len(self.axes)
        if self.axes == tuple(range(k)):  # leading axes: a slice is a run of the flat order
            return idx // int(np.prod(self.x_shape[k:], dtype=np.int64))
        coords = np.unravel_index(idx, self.x_shape)
        return np.ravel_multi_index(tuple(coords[a] for a in self.axes), self.sizes).astype(np.int64)

    def reduce_weighted(self, cotangent: np.ndarray, y: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """:meth:`reduce_slices` of ``cotangent * float64(y)``, the same bits, computed a block
        of slices at a time (into ``out`` when given): no temporary of the output's size when
        the slices are elementwise or lie along leading axes of C-ordered arrays (the common
        layouts); other layouts are reduced whole, as :meth:`reduce_slices` sums them.

        >>> axes = declare((0,), (2, 3), (2, 3))
        >>> v, y = np.ones((2, 3)), np.arange(6.0).reshape(2, 3)
        >>> axes.reduce_weighted(v, y).tolist() == axes.reduce_slices(v * y).tolist() == [3.0, 12.0]
        True
        """
        out = np.empty(self.slices) if out is None else out
        if not out.size:
            return out
        if self.elementwise:  # one entry per slice: the products themselves
            flat_v, flat_y = cotangent.reshape(-1), y.reshape(-1)
            for start in range(0, out.size, REDUCE_BLOCK):
                part = slice(start, start + REDUCE_BLOCK)
                np.multiply(flat_v[part], np.asarray(flat_y[part], dtype=np.float64), out=out[part])
            return out
        k = len(self.axes)
        if self.axes != tuple(range(k)) or not (cotangent.flags.c_contiguous and y.flags.c_contiguous):
            # numpy sums a strided slice in another order than a contiguous one: the same bits
            # need the same layout, so other layouts take the whole-array path.
            out[...] = self.reduce_slices(cotangent * np.asarray(y, dtype=np.float64))
            return out
        # Leading declared axes, C order: each slice is a contiguous row, summed (pairwise) alone.
        rows = self.slices // max(1, self.sizes[0])  # slices per index along the first axis
        per = y.size // self.slices
        step = max(1, REDUCE_BLOCK // max(1, per * rows))
        for i in range(0, self.sizes[0], step):
            j = min(i + step, self.sizes[0])
            weighted = (cotangent[i:j] * np.asarray(y[i:j], dtype=np.float64)).reshape((j - i) * rows, per)
            np.add.reduce(weighted, axis=1, out=out[i * rows:j * rows])
        return out

    def reduce_slices(self, weighted: np.ndarray) -> np.ndarray:
        """Per slice, the sum of ``weighted`` (``cotangent * f(x)`` in float64) over the
        slice's output entries: one scalar per slice, shape ``(B,)``."""
        if self.elementwise:
            return weighted.reshape(-1)
        k = len(self.axes)
        front = np.moveaxis(weighted, self.axes, tuple(range(k)))
        return np.add.reduce(front.reshape(self.slices, -1), axis=1)


def declare(independent_axes: Any, x_shape: tuple[int, ...], y_shape: tuple[int, ...]) -> Axes:
    """Check ``independent_axes`` against the shapes of ``x`` and ``f(x)``.

    >>> declare((0,), (4, 3), (4,)).slices
    4
    >>> declare("all", (2, 2), (2, 2)).per_slice
    1
    """
    x_shape, y_shape = tuple(int(n) for n in x_shape), tuple(int(n) for n in y_shape)
    if not y_shape:
        raise ValueError(
            "independent_axes needs f to return an array whose slices match x's; f returned a scalar. "
            "For a loss that is a sum of per-example terms, return the per-example losses (shape (B,)) "
            "and declare independent_axes=(0,): the check reduces them with its own cotangent")
    if isinstance(independent_axes, str):
        if independent_axes != "all":
            raise ValueError(f"independent_axes must be a tuple of axes or 'all', got {independent_axes!r}")
        if y_shape != x_shape:
            raise ValueError(
                f"independent_axes='all' declares an elementwise f (each output entry from its own input "
                f"entry), so f(x) must have x's shape {x_shape}; it has shape {y_shape}")
        return Axes(tuple(range(len(x_shape))), x_shape, y_shape, True)
    axes = _as_axes(independent_axes, len(x_shape))
    for a in axes:
        if a >= len(y_shape) or y_shape[a] != x_shape[a]:
            raise ValueError(
                f"independent_axes={tuple(independent_axes)!r}: input and output must share axis {a} "
                f"(same position, same size), but x has shape {x_shape} and f(x) has shape {y_shape}")
    return Axes(axes, x_shape, y_shape, False)


def against_input(independent_axes: Any, x_shape: tuple[int, ...]) -> None:
    """The declaration's own errors, which need only ``x``: its type, an axis out of ``x``'s
    range, an axis named twice (``check`` calls this before ``f`` runs; :func:`declare`
    checks the output's shape once ``f(x)`` is known)."""
    if independent_axes is None:
        return
    if isinstance(independent_axes, str):
        if independent_axes != "all":
            raise ValueError(f"independent_axes must be a tuple of axes or 'all', got {independent_axes!r}")
        return
    _as_axes(independent_axes, len(x_shape))


def _as_axes(value: Any, ndim: int) -> tuple[int, ...]:
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        value = (value,)
    try:
        axes = tuple(value)
    except TypeError:
        raise TypeError(f"independent_axes must be a tuple of axes or 'all', got {value!r}") from None
    if not axes:
        raise ValueError("independent_axes=() declares no axis; leave it out (None) for a plain check")
    out = []
    for a in axes:
        if isinstance(a, bool) or not isinstance(a, (int, np.integer)):
            raise TypeError(f"independent_axes holds axes (ints), got {a!r}")
        if not -ndim <= a < ndim:
            raise ValueError(f"independent_axes: axis {a} is out of range for x with {ndim} dimensions")
        out.append(int(a) % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"independent_axes={axes!r} names an axis twice")
    return tuple(sorted(out))
