"""``dispute``'s allowance: what a kernel computing in a working precision must lose at
each entry, and the bound beyond which a candidate is broken.

A kernel that computes in a working precision with unit roundoff ``u`` (float32 by
default: ``u = 2**-24``) and rounds its result once to the target format cannot be closer
to the exact value ``y_i`` than

* the final rounding: half an ulp of the target at ``y_i``;
* plus the working precision's own rounding carried through the function at that entry:
  ``s_i = (|y_i| + kappa_i) * u / ulp(y_i)`` ulps, where ``|y_i| * u`` is the rounding of
  the result itself and ``kappa_i = sum_j |x_j * d y_i / d x_j|`` carries a relative
  rounding of every input entry (and of every intermediate computed from them) to the
  output (:mod:`gradcheck._lowp.dispute_condition`: from exact derivatives, whatever the
  definition's spelling).

Where the function is well conditioned ``s_i`` is a tiny fraction of an ulp at bfloat16 and
float16 targets. Where it is not (the angle of a rotary embedding at position 4,000 carries
the position's rounding 4,000-fold into outputs that nearly cancel; a layer norm's output
near zero), ``s_i`` is what the working precision cannot help losing. The bound is

    bound_i = BASE_BOUND_ULPS + BOUND_FACTOR * s_i      (in ulps of the target)

``BASE_BOUND_ULPS`` (2 ulp) is the final rounding and room for one more rounding in the
target format; ``BOUND_FACTOR`` (8) lets a kernel lose several working-precision roundings'
worth (its constants rounded, a libm off by an ulp or two, a few operations in sequence).
Nothing is pooled across entries: each entry's bound is its own.
"""
from __future__ import annotations

import math

import numpy as np

from .._core.formats import FLOAT64, FloatFormat, resolve_format, ulp
from .._report.text import figure
from .dispute_condition import Sensitivity

#: The bound where the function is well conditioned: the final rounding and one more.
BASE_BOUND_ULPS = 2.0
#: The bound adds this many times the working precision's propagated rounding.
BOUND_FACTOR = 8.0
#: The working precision, when none is given.
WORKING_DEFAULT = "float32"


def unit_roundoff(working: object) -> tuple[str, float]:
    """(name, u) of a working precision (float16, bfloat16, float32 or float64).

    >>> unit_roundoff("float32")
    ('float32', 5.960464477539063e-08)
    """
    fmt = resolve_format(working)
    return fmt.name, math.ldexp(1.0, -(fmt.mantissa_bits + 1))


def working_loss(exact_hi: np.ndarray, kappa: np.ndarray, fmt: FloatFormat, u: float) -> np.ndarray:
    """``s_i`` in ulps of ``fmt``: the working precision's rounding carried to each output."""
    with np.errstate(invalid="ignore", over="ignore"):
        s = (np.abs(exact_hi) + kappa) * u / ulp(exact_hi, fmt)
    return np.where(np.isfinite(exact_hi), s, 0.0)


def bounds(exact_hi: np.ndarray, kappa: np.ndarray, fmt: FloatFormat, u: float) -> np.ndarray:
    """The bound of every entry, in ulps (module docstring)."""
    return BASE_BOUND_ULPS + BOUND_FACTOR * working_loss(exact_hi, kappa, fmt, u)


def reason(b: np.ndarray, sens: Sensitivity, working: str, u: float, widest: str) -> str:
    """How the bounds were set, in a sentence, with the widest one explained."""
    low, mid, high = (float(np.min(b)), float(np.median(b)), float(np.max(b))) if b.size else (
        BASE_BOUND_ULPS,) * 3
    spread = f"{figure(low)} ulp everywhere" if high <= low * 1.001 else (
        f"{figure(low)} to {figure(high)} ulp here, median {figure(mid)}")
    text = (f"{figure(BASE_BOUND_ULPS)} ulp + {figure(BOUND_FACTOR)} x the {working} working "
            f"precision's rounding (u = {u:.3g}) carried through the function's conditioning at "
            f"each entry (sensitivities: {sens.method}): {spread}")
    return text + (f". {widest}" if widest else "")


def why_wide(index: tuple[int, ...], y: float, parts: list[tuple[float, str]], loss: float,
             working: str, u: float, kappa: float | None = None) -> str:
    """Why the bound at one entry is wide: the input whose rounding the function amplifies
    most there (``parts``: each input's ``|x dy/dx|`` with its name), and by how much; with
    no parts (a contraction's sensitivity comes whole), the total ``kappa``.

    >>> why_wide((3, 7), 0.00123, [(0.0012, "x"), (4.9, "positions")], 42.7, "float32", 2.0**-24)
    "at (3, 7), y = 0.00123 moves by 4.9 times a relative rounding of 'positions' (|positions dy/dpositions|, or of anything computed from it): float32's u = 5.96e-08 there is 2.92e-07, 42.7 ulp of y"
    >>> why_wide((5,), -0.0527, [], 0.67, "float32", 2.0**-24, kappa=37.1)
    "at (5,), y = -0.0527 moves by 37.1 times a relative rounding of its inputs (the sum of |x_j dy/dx_j| over them): float32's u = 5.96e-08 there is 2.21e-06, 0.67 ulp of y"
    """
    where = f"at {index}, y = {y:.3g}"
    if not parts:
        size = float(kappa or 0.0)
        times = f"{size:,.0f}" if size >= 1000 else figure(size)
        return (f"{where} moves by {times} times a relative rounding of its inputs (the sum of "
                f"|x_j dy/dx_j| over them): {working}'s u = {u:.3g} there is {size * u:.3g}, "
                f"{figure(loss)} ulp of y")
    size, name = max(parts)
    times = f"{size:,.0f}" if size >= 1000 else figure(size)
    return (f"{where} moves by {times} times a relative rounding of '{name}' (|{name} dy/d{name}|, "
            f"or of anything computed from it): {working}'s u = {u:.3g} there is {size * u:.3g}, "
            f"{figure(loss)} ulp of y")


def plain(bound_ulps: float, size: int) -> tuple[np.ndarray, str]:
    """A bound given by the caller, the same at every entry."""
    return np.full(size, float(bound_ulps)), f"{figure(bound_ulps)} ulp (given)"


def fallback(size: int, fmt: FloatFormat) -> tuple[np.ndarray, str]:
    """The base bound everywhere (a float64 target, or no sensitivities)."""
    why = "float64 target" if fmt is FLOAT64 else "no sensitivities"
    return np.full(size, BASE_BOUND_ULPS), f"{figure(BASE_BOUND_ULPS)} ulp at every entry ({why})"


__all__ = ["BASE_BOUND_ULPS", "BOUND_FACTOR", "WORKING_DEFAULT", "unit_roundoff", "working_loss",
           "bounds", "reason", "why_wide", "plain", "fallback"]
