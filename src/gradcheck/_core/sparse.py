"""Per-entry values of which only a few are ever set: the second look's exact derivatives and
one-sided slopes (NaN where not measured).

Only suspects get those values, a few entries or tens of thousands out of millions, so a
:class:`SparseColumn` keeps the set entries alone (sorted flat positions and their values)
and one fill value for the rest; :meth:`SparseColumn.full` (and ``np.asarray``) makes the
dense array when one is wanted.

Per-entry values that are never held at all, but computed where they are read
(:class:`WhereRead`: a check's steps and denominators, a screened model's weights, floors and
slacks), keep in a :class:`SparseColumn` only the few values set over them.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, SupportsIndex

import numpy as np
from numpy.typing import ArrayLike, DTypeLike

#: What indexes a column: a multi-index, flat positions, a slice (1-D) or a boolean mask.
Key = slice | ArrayLike

#: Entries per chunk when a quantity computed where read is made whole (``np.asarray``).
CHUNK = 1 << 20


class SparseColumn:
    """A per-entry array of ``shape`` whose entries are ``fill`` except where set.

    Written and read like a numpy array, for the keys the judging stages use: flat integer
    positions (repeated positions: the last value wins, as in numpy), a boolean mask, a slice,
    one integer or (any ``shape``) one multi-index tuple. A key of a column of more than one
    dimension is a multi-index tuple or a mask of ``shape``; :meth:`take` reads flat positions.
    Writing ``fill`` removes entries (``col[:] = np.nan`` empties a NaN-filled column).

    >>> import numpy as np
    >>> col = SparseColumn(5)
    >>> col[np.array([3, 1])] = [30.0, 10.0]
    >>> col[np.array([0, 1, 3])], col.count
    (array([nan, 10., 30.]), 2)
    >>> col[:] = np.nan
    >>> col.count, np.asarray(col).shape
    (0, (5,))
    """

    __slots__ = ("shape", "fill", "_positions", "_values")

    def __init__(self, shape: int | tuple[int, ...], fill: ArrayLike = np.nan,
                 dtype: DTypeLike = np.float64) -> None:
        self.shape: tuple[int, ...] = ((int(shape),) if isinstance(shape, (int, np.integer))
                                       else tuple(int(s) for s in shape))
        self.fill = np.array(fill, dtype=dtype)[()]
        self._positions = np.empty(0, dtype=np.int64)
        self._values = np.empty(0, dtype=self.fill.dtype)

    @classmethod
    def from_entries(cls, shape: int | tuple[int, ...], positions: ArrayLike, values: ArrayLike,
                     fill: ArrayLike = np.nan) -> SparseColumn:
        """A column of ``shape`` with ``values`` at the flat ``positions`` (``fill`` elsewhere);
        the values' dtype is the column's."""
        values = np.asarray(values)
        col = cls(shape, fill, dtype=np.result_type(values.dtype, np.asarray(fill).dtype))
        col._write(np.asarray(positions, dtype=np.int64), values)
        return col

    @classmethod
    def from_dense(cls, array: ArrayLike, fill: ArrayLike = np.nan) -> SparseColumn:
        """The entries of ``array`` whose bits differ from ``fill`` (other NaNs included), in
        its shape; the dtype is the array's and the fill's common one."""
        a = np.asarray(array)
        dtype = np.result_type(a.dtype, np.asarray(fill).dtype)
        flat = a.reshape(-1).astype(dtype, copy=False)
        at = np.flatnonzero(~_same_bits(flat, np.array(fill, dtype=dtype)))
        return cls.from_entries(a.shape, at, flat[at], fill=np.array(fill, dtype=dtype))

    # -- what it is ----------------------------------------------------------------
    @property
    def dtype(self) -> np.dtype:
        return self._values.dtype

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __len__(self) -> int:
        return self.shape[0]

    @property
    def count(self) -> int:
        """How many entries are set (hold another value than ``fill``)."""
        return int(self._positions.size)

    @property
    def positions(self) -> np.ndarray:
        """Flat positions of the set entries, ascending (read-only)."""
        return _read_only(self._positions)

    @property
    def values(self) -> np.ndarray:
        """The set entries' values, aligned with :attr:`positions` (read-only)."""
        return _read_only(self._values)

    def __repr__(self) -> str:
        return f"SparseColumn(shape={self.shape}, fill={self.fill!r}, {self.count} set)"

    def reshape(self, *shape: Any) -> SparseColumn:
        """The same entries (flat, row-major) in another shape of the same size."""
        new = tuple(int(s) for s in (shape[0] if len(shape) == 1 and np.ndim(shape[0]) else shape))
        if int(np.prod(new, dtype=np.int64)) != self.size:
            raise ValueError(f"cannot reshape a column of size {self.size} into shape {new}")
        out = SparseColumn(new, self.fill, self.dtype)
        out._positions, out._values = self._positions, self._values  # never written in place
        return out

    # -- dense views -----------------------------------------------------------------
    def full(self, shape: SupportsIndex | Sequence[SupportsIndex] | None = None) -> np.ndarray:
        """The dense array (``shape``: the column's by default): ``fill`` where not set."""
        out = np.full(self.size, self.fill, dtype=self.dtype)
        out[self._positions] = self._values
        return out.reshape(self.shape if shape is None else shape)

    def __array__(self, dtype: DTypeLike | None = None, copy: bool | None = None) -> np.ndarray:
        out = self.full()
        return out if dtype is None else out.astype(dtype, copy=False)

    def finite_positions(self) -> np.ndarray:
        """Flat positions of the finite entries, ascending."""
        if np.isfinite(self.fill):
            return np.flatnonzero(np.isfinite(self.full()))
        return self._positions[np.isfinite(self._values)]

    # -- reading ---------------------------------------------------------------------
    def take(self, positions: ArrayLike) -> Any:
        """The values at the flat ``positions`` (any shape; ``fill`` where not set)."""
        p = self._checked(np.asarray(positions, dtype=np.int64))
        flat = p.reshape(-1)
        out = np.full(flat.shape, self.fill, dtype=self.dtype)
        if self._positions.size:
            at = np.minimum(np.searchsorted(self._positions, flat), self._positions.size - 1)
            hit = self._positions[at] == flat
            out[hit] = self._values[at[hit]]
        out = out.reshape(p.shape)
        return out[()]

    def __getitem__(self, key: Key) -> Any:
        return self.take(self._flat(key))

    # -- writing ---------------------------------------------------------------------
    def __setitem__(self, key: Key, values: ArrayLike) -> None:
        if isinstance(key, slice) and self.ndim == 1 and np.ndim(values) == 0 and _same_bits(
                np.array([values], dtype=self.dtype), self.fill)[0]:
            start, stop, step = key.indices(self.size)  # resetting a range: no array of positions
            p = self._positions
            inside = (p >= start) & (p < stop) if step > 0 else (p <= start) & (p > stop)
            inside &= (p - start) % step == 0
            self._positions, self._values = p[~inside], self._values[~inside]
            return
        self._write(self._flat(key), np.asarray(values))

    def _write(self, positions: np.ndarray, values: np.ndarray) -> None:
        p = self._checked(positions).reshape(-1)
        v = np.broadcast_to(values.astype(self.dtype, copy=False), positions.shape).reshape(-1)
        if not p.size:
            return
        order = np.argsort(p, kind="stable")
        p, v = p[order], v[order]
        last = np.ones(p.size, dtype=bool)
        last[:-1] = p[1:] != p[:-1]  # of repeated positions the last written wins
        p, v = p[last], v[last]
        kept = ~np.isin(self._positions, p, assume_unique=True)
        pos = np.concatenate([self._positions[kept], p])
        val = np.concatenate([self._values[kept], v])
        order = np.argsort(pos, kind="stable")
        pos, val = pos[order], val[order]
        real = ~_same_bits(val, self.fill)
        self._positions, self._values = pos[real], val[real]

    # -- keys ------------------------------------------------------------------------
    def _flat(self, key: Key) -> np.ndarray:
        """Flat positions (int64, the shape of the result) of a key."""
        if isinstance(key, tuple) and len(key) == self.ndim and all(np.ndim(k) == 0 for k in key):
            ix = tuple(int(k) + (self.shape[d] if int(k) < 0 else 0) for d, k in enumerate(key))
            for d, i in enumerate(ix):
                if not 0 <= i < self.shape[d]:
                    raise IndexError(f"index {key[d]} is out of bounds for axis {d} with size {self.shape[d]}")
            return np.asarray(np.ravel_multi_index(ix, self.shape), dtype=np.int64)
        arr = key if isinstance(key, slice) else np.asarray(key)
        if not isinstance(arr, slice) and arr.dtype == bool:
            if arr.shape != self.shape and arr.shape != (self.size,):
                raise IndexError(f"a boolean key of shape {arr.shape} for a column of shape {self.shape}")
            return np.flatnonzero(arr)
        if self.ndim != 1:
            raise IndexError(f"a column of shape {self.shape} takes a multi-index tuple or a boolean mask "
                             "(flat positions: take())")
        if isinstance(arr, slice):
            return np.arange(self.size, dtype=np.int64)[arr]
        if arr.dtype.kind not in "iu":
            raise IndexError(f"only integers, slices, tuples and boolean masks index a column, not {arr.dtype}")
        return arr.astype(np.int64, copy=False)

    def _checked(self, p: np.ndarray) -> np.ndarray:
        """Flat positions with negative ones counted from the end; IndexError outside."""
        if p.size and (p.min() < -self.size or p.max() >= self.size):
            bad = p[(p < -self.size) | (p >= self.size)].reshape(-1)[0]
            raise IndexError(f"index {bad} is out of bounds for a column of size {self.size}")
        return np.where(p < 0, p + self.size, p) if p.size and p.min() < 0 else p


def _same_bits(values: np.ndarray, fill: ArrayLike) -> np.ndarray:
    """Per entry: True where the value has exactly ``fill``'s bits (NaN payloads included)."""
    width = values.dtype.itemsize
    raw = np.ascontiguousarray(values).view(np.uint8).reshape(values.size, width)
    return (raw == np.frombuffer(np.array(fill, dtype=values.dtype).tobytes(), dtype=np.uint8)).all(axis=1)


def _read_only(a: np.ndarray) -> np.ndarray:
    view = a.view()
    view.flags.writeable = False
    return view


class WhereRead(ABC):
    """A per-entry float64 quantity of ``size`` entries computed where it is read (``q[key]``:
    the same bits as the whole array's ``[key]``, every operation being entrywise, as long as
    what it is computed from holds still between reads), never held: a model of 10^8
    parameters holds no array of its steps, weights or floors, nor their temporaries all at
    once. ``np.asarray(q)`` makes it whole, :data:`CHUNK` entries at a time. Values set at
    positions (``q[key] = new``: a retry's smaller steps, finite) are kept in a
    :class:`SparseColumn` and read back."""

    def __init__(self, size: int) -> None:
        self.size = int(size)
        self._set = SparseColumn(self.size)

    @property
    def shape(self) -> tuple[int]:
        return (self.size,)

    @abstractmethod
    def _at(self, key: Any) -> np.ndarray:
        """The quantity at ``key``, computed (each subclass's formula): a fresh array."""

    def __getitem__(self, key: Any) -> np.ndarray:
        out = self._at(key)
        if self._set.count:
            kept = np.asarray(self._set[key])
            hit = ~np.isnan(kept)
            out[hit] = kept[hit]
        return out

    def __setitem__(self, key: Any, new: Any) -> None:
        self._set[key] = new

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        out = np.empty(self.size)
        for lo in range(0, self.size, CHUNK):
            out[lo:lo + CHUNK] = self[lo:lo + CHUNK]
        return out if dtype is None else out.astype(dtype)
