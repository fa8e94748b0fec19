"""A model's named tensors as segments of one flat vector (the segment map).

Screening a whole model screens the concatenation of its parameters: name ``k`` holds the
flat entries ``offsets[k] .. offsets[k+1]``, in the order given. The map turns a flat entry
back into ``(name, index)`` and a flat buffer into one view per name (no copy).

>>> import numpy as np
>>> seg = Segments.of({"w": np.zeros((2, 3)), "b": np.zeros(4)}, ["w", "b"])
>>> seg.size, seg.span("b"), seg.locate(7)
(10, (6, 10), ('b', (1,)))
>>> views = seg.views(np.arange(10.0))
>>> views["w"][1, 2], views["b"].tolist()
(np.float64(5.0), [6.0, 7.0, 8.0, 9.0])
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Segments:
    """Names, their shapes, and where each sits in the flat vector (``offsets``, int64)."""

    names: tuple[str, ...]
    shapes: tuple[tuple[int, ...], ...]
    offsets: np.ndarray

    @classmethod
    def of(cls, arrays: Mapping[str, Any], names: Sequence[str]) -> Segments:
        shapes = tuple(tuple(int(s) for s in np.shape(arrays[n])) for n in names)
        sizes = [int(np.prod(s, dtype=np.int64)) for s in shapes]
        return cls(tuple(names), shapes, np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)]).astype(np.int64))

    @property
    def size(self) -> int:
        return int(self.offsets[-1])

    def span(self, name: str) -> tuple[int, int]:
        k = self.names.index(name)
        return int(self.offsets[k]), int(self.offsets[k + 1])

    def spans(self) -> list[tuple[str, int, int]]:
        return [(n, int(self.offsets[k]), int(self.offsets[k + 1])) for k, n in enumerate(self.names)]

    def concatenate(self, arrays: Mapping[str, Any], dtype: Any) -> np.ndarray:
        """One flat array of ``dtype`` holding every name's values (one allocation)."""
        out = np.empty(self.size, dtype=dtype)
        for name, lo, hi in self.spans():
            out[lo:hi] = np.asarray(arrays[name]).reshape(-1)
        return out

    def views(self, flat: np.ndarray) -> dict[str, np.ndarray]:
        """One view of ``flat`` per name, in its shape."""
        return {name: flat[lo:hi].reshape(shape) for (name, lo, hi), shape in zip(self.spans(), self.shapes)}

    def owner(self, flat_indices: Any) -> np.ndarray:
        """The position in :attr:`names` of each flat index."""
        return np.searchsorted(self.offsets, np.asarray(flat_indices), side="right") - 1

    def locate(self, flat_index: int) -> tuple[str, tuple[int, ...]]:
        """``(name, multi-index)`` of one flat entry."""
        k = int(self.owner(int(flat_index)))
        local = int(flat_index) - int(self.offsets[k])
        return self.names[k], tuple(int(i) for i in np.unravel_index(local, self.shapes[k]))


def flat_loss(loss: Callable[[Any], Any], params: Mapping[str, Any], seg: Segments,
              mp_capable: bool = True) -> Callable[[np.ndarray], float]:
    """``loss`` as a function of the flat vector of ``seg``'s names: the dict in the user's
    order, those names as views of the vector, the other names held at their values.
    ``mp_capable=False`` tells the referee the loss cannot run at arbitrary precision (a
    framework's model)."""
    order = list(params)

    def of_flat(v: np.ndarray) -> float:
        views = seg.views(v)
        return float(loss({n: views[n] if n in views else params[n] for n in order}))

    of_flat.gradcheck_mp_capable = mp_capable  # type: ignore[attr-defined]  # the referee's question
    return of_flat
