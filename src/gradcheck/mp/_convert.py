"""Exact conversion into arbitrary precision, and a single correct rounding back out."""
from __future__ import annotations

import numpy as np
from mpmath import libmp
from numpy.typing import ArrayLike, DTypeLike

from .._core.formats import resolve_format, round_to_format
from ._array import MPArray
from ._context import Context, Mpf
from ._scalar import MPFloat, _exact_tuple, _wrap


def _exact_tuple_or_raise(v: object) -> tuple:
    t = _exact_tuple(v)
    if t is None:
        raise TypeError(f"cannot convert {type(v).__name__} {v!r} to MPFloat: not a real number")
    return t


def _float_info(dtype: np.dtype) -> np.finfo | None:
    """numpy's or ml_dtypes' ``finfo`` for a binary float dtype; ``None`` for anything else."""
    if dtype.kind == "f":
        return np.finfo(dtype)
    if dtype.type.__module__.startswith("ml_dtypes"):
        import ml_dtypes

        try:
            return ml_dtypes.finfo(dtype)
        except (TypeError, ValueError):  # ml_dtypes' integer types
            return None
    return None


def to_mp(x: ArrayLike, dps: int | None = None) -> MPArray:
    """``x`` as an object array of :class:`MPFloat` holding exactly the same values.

    Accepts float16, float32, float64, longdouble, ml_dtypes (bfloat16, ...), integer and
    bool arrays, and object arrays of real numbers. Nothing is rounded: every float16, float32
    and bfloat16 value is a float64 value, and each is converted from its binary mantissa.
    If ``dps`` is given it must carry the input's mantissa, else the first operation would
    round the input; a ``ValueError`` says which ``dps`` would.

    >>> import numpy as np
    >>> x = to_mp(np.array([0.1, 2.5], dtype=np.float32), dps=30)
    >>> x[0].value == np.float32(0.1).item()
    True
    """
    return to_mp_in(x, None, dps)


def to_mp_in(x: ArrayLike, ctx: Context | None, dps: int | None = None) -> MPArray:
    """:func:`to_mp` whose elements belong to the private context ``ctx`` (None: to none).

    A thread that ``f`` starts does not see its computation's context variable; the
    elements of its argument still say which precision they compute at.
    """
    arr = np.asarray(x)
    if arr.dtype.kind == "c":
        raise TypeError("to_mp takes real inputs; got a complex array")
    info = _float_info(arr.dtype)
    bits = None if info is None else int(info.nmant) + 1
    if dps is not None and bits is not None and libmp.dps_to_prec(dps) < bits:
        needed = next(d for d in range(1, 100) if libmp.dps_to_prec(d) >= bits)
        raise ValueError(f"dps={dps} cannot hold the {bits}-bit mantissa of {arr.dtype}: "
                         f"use dps >= {needed}")
    if bits is not None and bits <= 53:
        arr = arr.astype(np.float64)  # exact: float64 holds every value of a narrower format
    from_exact = np.frompyfunc(lambda v: _wrap(_exact_tuple_or_raise(v), ctx), 1, 1)
    out = from_exact(arr) if arr.ndim else from_exact(arr[()])
    return np.asarray(out, dtype=object).view(MPArray)


def from_mp(y: MPFloat | Mpf | np.ndarray,
            dtype: DTypeLike = np.float64) -> np.ndarray | np.generic:
    """``y`` (MPFloat, mpf, or an array of them) rounded once to ``dtype``.

    The rounding is to nearest, ties to even, straight from the arbitrary-precision value to
    ``dtype`` (float64, float32, float16 or bfloat16), with subnormals and overflow to inf as
    in IEEE 754 (``gradcheck._core.formats.round_to_format``). Going through float64 first would round
    twice and sometimes land one ulp off. mpmath has no negative zero, so zeros come out
    positive. An array in gives an array out; a scalar in gives a numpy scalar out.

    >>> import mpmath
    >>> with mpmath.workprec(100):
    ...     v = 1 + mpmath.mpf(2) ** -24 + mpmath.mpf(2) ** -60  # just above a float32 tie
    >>> from_mp(v, np.float32), np.float32(np.float64(v))
    (np.float32(1.0000001), np.float32(1.0))
    """
    fmt = resolve_format(np.dtype(dtype))
    values = y.view(np.ndarray) if isinstance(y, np.ndarray) else y
    rounded = round_to_format(np.asarray(values, dtype=object), fmt, as_dtype=True)
    return rounded if isinstance(y, np.ndarray) else rounded[()]
