"""The claimed gradient as a float64 array, whatever array type the claim came in."""
from __future__ import annotations

from typing import Any

import numpy as np

from .._core.config import dtype_name
from .._core.errors import ShapeMismatchError, UnsupportedInputError
from .._core.inputs import FLOAT_NAMES
from ._registry import resolve


def as_gradient(value: Any, shape: tuple[int, ...], what: str = "claimed gradient", *, copy: bool = True) -> np.ndarray:
    """The claimed gradient as float64 of exactly ``shape`` (naming both shapes if not).

    Anything numpy reads as a real array is taken (a list, a Python float, a torch or jax
    array on the CPU: their values are unambiguous); None, strings and other objects are
    refused saying what they are. ``copy=False``: a float64 array comes back as it is (a
    caller that only reads it, e.g. to concatenate a whole model's claims once).
    """
    arr = _as_array(value, what)
    if arr.dtype.kind in "OSUV" and dtype_name(arr.dtype) not in FLOAT_NAMES:
        inner = arr.item() if arr.ndim == 0 else value  # a backend may have wrapped it already
        got = "None" if inner is None else f"a {type(inner).__name__}"
        hint = " (is a `return` missing in grad?)" if inner is None else ""
        raise UnsupportedInputError(f"{what} is {got}, not an array of real numbers of shape {tuple(shape)}{hint}")
    if arr.shape != tuple(shape):
        raise ShapeMismatchError(what, tuple(shape), arr.shape)
    if arr.dtype.kind not in "fiu" and dtype_name(arr.dtype) not in FLOAT_NAMES:
        raise UnsupportedInputError(f"{what} has dtype {arr.dtype}; expected a real floating array")
    return np.array(arr, dtype=np.float64) if copy else np.asarray(arr, dtype=np.float64)


def _as_array(value: Any, what: str) -> np.ndarray:
    """``value`` as a numpy array: a framework tensor through its backend (detached, on
    the CPU), anything else through ``np.asarray``."""
    if type(value).__module__.split(".")[0] in ("torch", "jax", "jaxlib"):
        return np.asarray(resolve(None, value).to_numpy(value))
    try:
        return np.asarray(value)
    except (ValueError, TypeError) as exc:  # a ragged list, say
        raise UnsupportedInputError(
            f"{what} is a {type(value).__name__} numpy cannot read as an array: {exc}") from None
