"""What float32 *arithmetic* loses on a dispute's inputs, whatever dtypes ``math_fn`` uses.

``dispute`` widens its bound where a kernel that computes in float32 and rounds once cannot
help being far from the exact value (outputs that nearly cancel). Running ``math_fn`` on
float32 numpy arrays measures that only when ``math_fn`` stays in float32: one that closes
over a float64 constant table (``inv_freq = base ** (-arange(0, d, 2) / d)``) or multiplies
by a float64 array evaluates in float64 (numpy promotes), and an accurate float32 kernel is
then called broken where the output cancels.

:func:`float32_arithmetic` evaluates ``math_fn`` on :mod:`gradcheck.mp` values whose every
operation rounds to a 24-bit mantissa (float32's): the inputs rounded to float32, every float
constant that meets them in a ufunc rounded to float32 first, every ``+ - * /``, ``exp``,
``cos``... rounded once to 24 bits (correctly: as a float32 kernel with a good libm). The
dtypes of ``math_fn``'s constants do not matter: they meet values that round to 24 bits.
``dispute`` takes, per entry, the larger of this evaluation's error and that of the numpy
float32 evaluation (whose libm may be less accurate). The exponent range stays unbounded (no float32 overflow or
subnormals), which is what the bound needs: the rounding, not the range.

What it does not cover: a kernel whose constants differ from the definition's by more than
one float32 rounding (a table computed with ``powf``, up to ~0.9 ulp off, against a
definition holding the correctly rounded table) differs from the definition by that much
more; at bfloat16 this stays inside the bound, at a float32 target it shows at entries that
cancel (measured on the rotary embedding at positions 65,536-131,072: 2.4-3.7x the bound).
Write the definition as the kernel computes its constants (``rope_math`` computes its table
in the evaluation's own arithmetic), or give ``bound_ulps=``.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._core.formats import FLOAT64, round_to_format

#: float32's significand, implicit bit included.
FLOAT32_BITS = 24


def float32_arithmetic(math_fn: Callable[..., Any], args: tuple[np.ndarray, ...],
                       shape: tuple[int, ...]) -> tuple[np.ndarray | None, str]:
    """``math_fn(*args)`` with float32 arithmetic emulated at arbitrary precision.

    Returns the flat float64 values of the result (exactly: 24-bit values fit) and an empty
    note, or ``(None, note)`` when ``math_fn`` cannot run on ``gradcheck.mp`` values or its
    result does not have ``shape``.

    >>> import numpy as np
    >>> table = np.array([0.1])                         # a float64 constant
    >>> y, note = float32_arithmetic(lambda v: v * table, (np.array([3.0]),), (1,))
    >>> float(y[0]) == float(np.float32(3) * np.float32(0.1)), note
    (True, '')
    """
    from ..mp import NotAdjudicable
    from ..mp._context import constants_rounded_to, owned
    from ..mp._convert import to_mp_in
    from ..mp._evaluate import run_checked

    what = "the float32-arithmetic evaluation of math_fn"
    try:
        with owned() as ctx, constants_rounded_to(np.float32):
            ctx.prec = FLOAT32_BITS
            xs = tuple(to_mp_in(_narrow_input(a), ctx) for a in args)
            y = run_checked(lambda _: math_fn(*xs), None, ctx)
    except (NotAdjudicable, ArithmeticError, TypeError, ValueError) as exc:
        return None, f"{what} raised {type(exc).__name__}: {exc} (the bound is not widened)"
    flat = np.asarray(y, dtype=object).reshape(-1)
    if np.shape(y) != tuple(shape):
        return None, f"{what} returned shape {np.shape(y)}, not {tuple(shape)}"
    return round_to_format(flat, FLOAT64, as_dtype=True).astype(np.float64), ""


def _narrow_input(a: np.ndarray) -> np.ndarray:
    """A float input as a float32 kernel receives it (integers stay exact)."""
    if a.dtype.kind == "f" and a.dtype.itemsize > 4:
        with np.errstate(over="ignore"):
            return a.astype(np.float32)
    return a
