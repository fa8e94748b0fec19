"""The arithmetic of a central difference, the same for every runner and every generator.

``h_i = step * max(1, |x_i|)`` (:func:`steps_for`, or :class:`StepsOf` computed where read);
``x +- h`` rounded in ``x``'s dtype and the realized denominator ``(x+h) - (x-h)`` in float64
(:func:`perturbed_points`, or :class:`DenominatorsOf` computed where read); the quotient and the
round-off it may carry, ``u(|f+| + |f-|)/|denom|`` (:func:`slope_and_noise`: the one round-off
model of a difference); and the refusal of a step that moves no entry
(:func:`require_moving_steps`).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .._core.config import UNIT_ROUNDOFF, Config, dtype_name
from .._core.sparse import WhereRead
from .._evaluate import steps_for  # the step rule lives with the shift that rebuilds it on a worker
from .noise import modelled


class StepsOf(WhereRead):
    """``steps_for(values, rel_step)`` computed where it is read (``steps[positions]``), without
    an array of N: the same bits, entry by entry, as long as ``values`` hold still between reads
    (a check's ``work``, put back after every evaluation). Steps set at positions (a retry's
    smaller ones) are kept and read back.

    >>> x = np.array([0.5, -3.0, 2.0])
    >>> steps = StepsOf(x, 1e-3)
    >>> steps[np.array([1, 2])].tolist() == steps_for(x, 1e-3)[1:].tolist()
    True
    >>> steps[np.array([2])] = 1e-9
    >>> steps[np.array([0, 2])].tolist() == [1e-3, 1e-9]
    True
    """

    def __init__(self, values: np.ndarray, rel_step: float) -> None:
        super().__init__(values.size)
        self.values, self.rel_step = values, rel_step

    def _at(self, key: Any) -> np.ndarray:
        return steps_for(self.values[key], self.rel_step)


class DenominatorsOf(WhereRead):
    """The realized denominators ``(x + h) - (x - h)`` of :func:`perturbed_points` (NaN where x
    is not finite) at ``values`` with ``steps`` (an array or a :class:`StepsOf`), computed where
    read: the first pass's, bit for bit, without an array of N.

    >>> x, h = np.array([0.5, np.nan, 2.0]), np.array([1e-3, 1e-3, 1e-3])
    >>> lazy = DenominatorsOf(x, h)
    >>> np.array_equal(lazy[np.arange(3)], perturbed_points(x, h)[2], equal_nan=True)
    True
    """

    dtype, ndim = np.dtype(np.float64), 1

    def __init__(self, values: np.ndarray, steps: Any) -> None:
        super().__init__(values.size)
        self.values, self.steps = values, steps

    def _at(self, key: Any) -> np.ndarray:
        return perturbed_points(np.atleast_1d(self.values[key]), np.atleast_1d(self.steps[key]))[2]


def perturbed_points(old: np.ndarray, steps: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(x + h, x - h, realized denominator, finite)`` for the values ``old``, in their
    dtype: ``x +- h`` rounds exactly as the perturbed entry will, and the realized step
    ``(x+h) - (x-h)`` keeps the representation error of ``h`` out of the slope (NaN where
    ``x`` is not finite)."""
    # copy=False: float64 arrays are used as they are (no temporaries of the request's size)
    h = np.asarray(steps, dtype=np.float64).reshape(-1).astype(old.dtype, copy=False)
    with np.errstate(all="ignore"):
        xp, xm = old + h, old - h
        denom = xp.astype(np.float64, copy=False) - xm.astype(np.float64, copy=False)
        finite = np.isfinite(old.astype(np.float64, copy=False))
    denom[~finite] = np.nan
    return xp, xm, denom, finite


def require_moving_steps(values: np.ndarray, rel_step: float, what: str = "x") -> None:
    """Refuse a relative step whose steps (:func:`steps_for`) do not move some finite entry
    at all (``x + h == x - h`` in the array's dtype: a realized step of 0, so every difference
    there is 0/0), naming the first such entry and the relative step from which every entry
    moves."""
    flat = np.asarray(values).reshape(-1)
    still = None
    for start in range(0, flat.size, _BLOCK):  # block by block: no temporaries of N
        part = slice(start, start + _BLOCK)
        _, _, denom, finite = perturbed_points(flat[part], steps_for(flat[part], rel_step))
        if (finite & (denom == 0)).any():  # found: count them all (the message)
            _, _, denom, finite = perturbed_points(flat, steps_for(flat, rel_step))
            still = finite & (denom == 0)
            break
    if still is None:
        return
    first = int(np.flatnonzero(still)[0])
    index = tuple(int(k) for k in np.unravel_index(first, np.shape(values)))
    name = dtype_name(flat.dtype)
    # h = eps * max(1, |x|) is at least the spacing of x's floats at x: it always moves x.
    eps = 2 * UNIT_ROUNDOFF.get(name, UNIT_ROUNDOFF["float64"])
    preset = Config.for_dtype(name).step if name in UNIT_ROUNDOFF else Config().step
    raise ValueError(
        f"step={rel_step!r} gives a realized step of 0 at {int(still.sum())} of {int(finite.sum())} "
        f"entries of {what} (the first at {index}, where {what} = {float(flat[first])!r}: x + h rounds "
        f"to x in {name}), so nothing could be differenced there. Every entry moves from step={eps:.3g} "
        f"(the {name} epsilon) on; a usable step is far larger (the {name} preset is {preset!r})"
    )


def slope_and_noise(
    f_plus: np.ndarray, f_minus: np.ndarray, denom: np.ndarray, unit_roundoff: float,
    out: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Difference quotient and the round-off it may carry: ``u(|f+|+|f-|)/|denom|``.

    Long float64 1-D inputs are done in blocks (the same expression, so the same bits):
    the two results and no full-size temporaries; ``out``: two arrays to write them into."""
    if isinstance(denom, DenominatorsOf) and not (f_plus.size > _BLOCK and f_plus.ndim == 1):
        denom = denom[:]  # short: read them all
    arrays = (f_plus, f_minus, denom)
    if not (all(isinstance(a, (np.ndarray, DenominatorsOf)) and a.dtype == np.float64 and a.ndim == 1
                for a in arrays) and f_plus.size > _BLOCK and f_plus.size == f_minus.size == denom.size):
        slope, noise = _slope_and_noise(f_plus, f_minus, denom, unit_roundoff)
        if out is None:
            return slope, noise
        out[0][...], out[1][...] = slope, noise
        return out
    slope, noise = (np.empty(f_plus.size), np.empty(f_plus.size)) if out is None else out
    for start in range(0, f_plus.size, _BLOCK):
        part = slice(start, start + _BLOCK)
        slope[part], noise[part] = _slope_and_noise(f_plus[part], f_minus[part], denom[part], unit_roundoff)
    return slope, noise


#: Entries per block of the elementwise estimates (a few hundred KiB of temporaries).
_BLOCK = 1 << 15


def _slope_and_noise(f_plus, f_minus, denom, unit_roundoff):
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        slope = (f_plus - f_minus) / denom
        noise = modelled(unit_roundoff, (f_plus, f_minus), np.abs(denom))  # THE model (.noise)
    return slope, noise
