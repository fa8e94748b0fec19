"""Validation of inputs and outputs at the checker's boundary."""
from __future__ import annotations

from typing import Any

import numpy as np

from ._config import UNIT_ROUNDOFF, dtype_name
from ._errors import ShapeMismatchError, UnsupportedInputError

FLOAT_NAMES = ("float64", "float32", "float16", "bfloat16")


def float_dtype_name(arr: np.ndarray, what: str = "x") -> str:
    """The canonical floating dtype name of ``arr``, or a clear error."""
    name = dtype_name(arr.dtype)
    if name in FLOAT_NAMES:
        return name
    kind = arr.dtype.kind
    if kind in "iub":
        hint = f"pass {what}.astype(np.float64)"
        raise UnsupportedInputError(
            f"{what} has dtype {arr.dtype}, which has no gradient (perturbing an integer "
            f"moves it by at least 1); {hint}"
        )
    if kind == "c":
        raise UnsupportedInputError(
            f"{what} has complex dtype {arr.dtype}; check the real and imaginary parts as "
            "separate real inputs"
        )
    raise UnsupportedInputError(
        f"{what} has dtype {arr.dtype}; gradcheck checks floating inputs ({', '.join(FLOAT_NAMES)})"
    )


def unit_roundoff_of(arr: np.ndarray) -> float:
    """Unit round-off of an array's dtype (float64's for anything non-float)."""
    return UNIT_ROUNDOFF.get(dtype_name(arr.dtype), UNIT_ROUNDOFF["float64"])


def as_gradient(value: Any, shape: tuple[int, ...], what: str = "claimed gradient") -> np.ndarray:
    """The claimed gradient as float64 of exactly ``shape`` (naming both shapes if not)."""
    arr = np.asarray(value)
    if arr.shape != tuple(shape):
        raise ShapeMismatchError(what, tuple(shape), arr.shape)
    if arr.dtype.kind not in "fiu" and dtype_name(arr.dtype) not in FLOAT_NAMES:
        raise UnsupportedInputError(f"{what} has dtype {arr.dtype}; expected a real floating array")
    return np.array(arr, dtype=np.float64)
