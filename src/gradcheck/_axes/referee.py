"""The referee on each entry's own slice: the exact derivative at a fraction of the cost.

The referee (:mod:`gradcheck._adjudicate.referee`) runs ``f`` on arbitrary-precision object
arrays, at about a microsecond per operation: on the whole of a (4096, 256) input one
evaluation takes minutes. With independent axes, entry ``i``'s derivative depends only on its
slice, so ``f`` runs on that slice alone: ``x[b:b+1]`` along each declared axis (the other
axes whole), reduced with the same slice of the cotangent. This needs ``f`` to accept the
smaller input; :func:`slice_referee` tests that once in float64 (``f`` of the first slice must
reproduce that slice of ``f(x)`` bit for bit) and otherwise keeps the whole-input referee.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._adjudicate.referee import Referee
from .declare import Axes


class SliceReferee(Referee):
    """A :class:`Referee` that differentiates ``f`` on each entry's own slice of ``x`` (its
    :meth:`piece`; the probe at high precision is on the first entry's slice)."""

    batches_zeros = False  # a direction over many slices would run f on the whole of x

    def __init__(self, f_mp: Callable[[Any], Any], x: np.ndarray, cotangent: np.ndarray, axes: Axes,
                 *, digits: int = 30) -> None:
        super().__init__(f_mp, x, cotangent, digits=digits)
        self.axes = axes

    def piece(self, flat_index: int) -> tuple[np.ndarray, tuple[int, ...], np.ndarray]:
        """Entry ``flat_index``'s slice of ``x``, its index there, and the cotangent's slice."""
        assert self.cotangent is not None  # sliced only for an array output, which has one
        return piece_of(self.axes, self.x, self.cotangent, int(flat_index))


def piece_of(axes: Axes, x: np.ndarray, cotangent: np.ndarray, flat_index: int):
    """``(x's slice, the entry's multi-index in it, the cotangent's slice)``, the declared axes kept
    with length 1."""
    coords = np.unravel_index(flat_index, x.shape)
    def take(ndim: int) -> tuple[slice, ...]:
        return tuple(slice(int(coords[d]), int(coords[d]) + 1) if d in axes.axes else slice(None)
                     for d in range(ndim))

    local = tuple(0 if d in axes.axes else int(c) for d, c in enumerate(coords))
    return x[take(x.ndim)], local, cotangent[take(cotangent.ndim)]


def first_slice(axes: Axes, y0: np.ndarray) -> np.ndarray:
    """A copy of the first slice of ``f(x)`` (the declared axes kept with length 1): all the
    slice referee needs of ``f(x)``, so ``f(x)`` itself need not be kept."""
    take = tuple(slice(0, 1) if d in axes.axes else slice(None) for d in range(y0.ndim))
    return np.array(y0[take], copy=True)


def slice_referee(f: Callable[[Any], Any], x: np.ndarray, y_s: np.ndarray, cotangent: np.ndarray, axes: Axes,
                  *, digits: int) -> tuple[Referee, str]:
    """The slice referee when ``f`` of one slice reproduces that slice of ``f(x)`` (``y_s``,
    :func:`first_slice`) bit for bit, else the whole-input referee; and a note saying which, and why."""
    x_s, _, _ = piece_of(axes, x, cotangent, 0)
    try:
        with np.errstate(all="ignore"):
            got = np.asarray(f(x_s.copy()))
        same = got.shape == y_s.shape and got.dtype == y_s.dtype and got.tobytes() == np.ascontiguousarray(y_s).tobytes()
        why = "" if same else f"f of one slice (shape {x_s.shape}) is not that slice of f(x)"
    except Exception as exc:  # noqa: BLE001  f insists on the whole shape
        same, why = False, f"f raised {type(exc).__name__} on one slice (shape {x_s.shape})"
    if same:
        return (SliceReferee(lambda v: f(v), x, cotangent, axes, digits=digits),
                f"the referee differentiates f on each entry's own slice (shape {x_s.shape})")
    return Referee(lambda v: f(v), x, cotangent, digits=digits), f"the referee runs f on the whole input: {why}"
