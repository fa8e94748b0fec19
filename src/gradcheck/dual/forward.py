"""Forward mode with dual numbers: seed tangents at the input, read the derivative off the output."""
from __future__ import annotations

import numbers
from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike

from .number import DualArray, _plain


def _input(x: ArrayLike) -> np.ndarray:
    arr = np.asarray(x)
    if not (np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)):
        raise TypeError(f"dual numbers need a real input, got dtype {arr.dtype}")
    # A private float64 copy: the user's array is never touched, even if f writes into its input.
    return np.array(arr, dtype=np.float64, copy=True)


def _output(out: object, fname: str) -> tuple[np.ndarray, np.ndarray | None]:
    """(value, tangent or None for a constant output) of what f returned."""
    if isinstance(out, DualArray):
        return out.value, out.tangent
    if isinstance(out, (numbers.Real, np.ndarray, np.generic)) and not isinstance(out, bool):
        arr = np.asarray(out)
        if np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer):
            return arr, None  # f does not depend on its input: the gradient is exactly zero
    raise TypeError(f"{fname} returned {type(out).__name__}; expected a DualArray "
                    "(or a real constant, whose gradient is zero)")


def dual_gradient(f: Callable[[DualArray], object], x: ArrayLike,
                  cotangent: ArrayLike | None = None, *,
                  chunk: int = 256) -> np.ndarray:
    """Gradient of ``f`` at ``x`` by forward-mode dual numbers, shape of ``x``, float64.

    For an array-valued ``f``, the gradient of ``sum(cotangent * f(x))``; ``cotangent`` must
    then have exactly the output's shape. Each pass carries ``chunk`` tangent directions, so
    memory is bounded by ``chunk`` times the size of the largest intermediate.

    >>> import numpy as np
    >>> dual_gradient(lambda x: np.exp(x), np.zeros(2), cotangent=np.array([1.0, -2.0]))
    array([ 1., -2.])
    """
    if isinstance(chunk, bool) or not isinstance(chunk, numbers.Integral) or chunk < 1:
        raise ValueError(f"chunk must be a positive integer, got {chunk!r}")
    x0 = _input(x)
    cot = None if cotangent is None else _plain(cotangent, "cotangent").astype(np.float64)
    n = x0.size
    grad = np.zeros(n)
    fname = getattr(f, "__name__", "f")
    for start in range(0, max(n, 1), chunk):
        k = min(chunk, n - start)
        seed = np.zeros((n, k))
        seed[np.arange(start, start + k), np.arange(k)] = 1.0
        value, tangent = _output(f(DualArray(x0.copy(), seed.reshape(x0.shape + (k,)))), fname)
        if cot is None and value.ndim != 0:
            raise ValueError(f"{fname} returned an array of shape {value.shape}; pass a "
                             "cotangent of that shape to reduce it to a scalar")
        if cot is not None and cot.shape != value.shape:
            raise ValueError(f"cotangent shape {cot.shape} does not match the output shape "
                             f"{value.shape} of {fname}")
        if tangent is not None and k:
            grad[start:start + k] = tangent if cot is None else \
                np.tensordot(cot, tangent, axes=value.ndim)
    return grad.reshape(x0.shape)


def dual_jvp(f: Callable[[DualArray], object], x: ArrayLike, v: ArrayLike) -> np.ndarray:
    """Directional derivative ``d/dt f(x + t v)`` at ``t = 0``, shape of ``f``'s output.

    >>> import numpy as np
    >>> dual_jvp(lambda x: np.sum(x ** 2), np.array([1.0, 2.0]), np.array([1.0, 1.0]))
    array(6.)
    """
    x0 = _input(x)
    direction = _plain(v, "direction v").astype(np.float64)
    if direction.shape != x0.shape:
        raise ValueError(f"direction shape {direction.shape} does not match input shape "
                         f"{x0.shape}")
    value, tangent = _output(f(DualArray(x0, direction[..., None].copy())),
                             getattr(f, "__name__", "f"))
    return np.zeros(value.shape) if tangent is None else tangent[..., 0].copy()
