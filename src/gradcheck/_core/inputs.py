"""Validation of inputs and outputs at the checker's boundary."""
from __future__ import annotations

import numpy as np

from .config import UNIT_ROUNDOFF, dtype_name
from .errors import OutputError, UnsupportedInputError

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
    """Unit round-off of an array's dtype (a complex dtype's parts': complex64 is float32's;
    float64's for anything non-float)."""
    dtype = arr.dtype
    if dtype.kind == "c":
        dtype = np.finfo(dtype).dtype
    return UNIT_ROUNDOFF.get(dtype_name(dtype), UNIT_ROUNDOFF["float64"])


def output_array(y: object, what: str = "f") -> np.ndarray:
    """``np.asarray(y)`` for a value ``what`` returned; a ragged list, which numpy cannot
    read, is an :class:`OutputError` (gradcheck's conversion failed; ``f`` raised nothing)."""
    try:
        return np.asarray(y)
    except (ValueError, TypeError) as exc:
        raise OutputError(f"a {type(y).__name__} numpy cannot read as an array", what=what,
                          tail=f" ({exc})") from None


def require_real_output(y: np.ndarray, what: str = "f", index: tuple[int, ...] | None = None,
                        side: str = "base", param: str | None = None) -> np.ndarray:
    """``y`` (an output already passed through ``np.asarray``) if it holds real numbers;
    else an :class:`OutputError` (a TypeError) that says what ``f`` returned instead, and
    where (``index``/``side``/``param``: the unperturbed input by default).

    >>> require_real_output(np.asarray(None))
    Traceback (most recent call last):
    ...
    gradcheck._core.errors.OutputError: f returned None at the unperturbed input; it must return a real number or an array of real numbers (is a `return` missing?)
    """
    kind = y.dtype.kind
    if kind in "fiub" or dtype_name(y.dtype) in ("bfloat16",):
        return y
    if kind == "O" and y.ndim == 0 and y.item() is None:
        got = "None"
        hint = " (is a `return` missing?)"
    elif kind == "c":
        got, hint = f"a complex {'number' if y.ndim == 0 else 'array'} ({y.dtype})", " (check a real-valued f, e.g. abs or .real)"
    else:
        got = f"{type(y.item()).__name__ if y.ndim == 0 else 'an array of dtype ' + str(y.dtype)}"
        hint = ""
    raise OutputError(got, index, side, param, what,
                      f"; it must return a real number or an array of real numbers{hint}")


def real_scalar(value: object, what: str = "loss(params)", param: str | None = None) -> np.ndarray:
    """``value`` (returned by ``what`` at the unperturbed input of ``param``) as a 0-d array of
    its own dtype; an :class:`OutputError` there if numpy cannot read it, if it holds no real
    numbers (:func:`require_real_output`) or if it is an array of another shape."""
    try:
        arr = output_array(value, what)
    except OutputError as err:
        raise err.at(None, "base", param) from None
    require_real_output(arr, what, None, "base", param)
    if arr.ndim != 0:
        raise OutputError(f"an array of shape {arr.shape}", None, "base", param, what, "; it must return a scalar")
    return arr
