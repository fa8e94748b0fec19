"""Central differences with the realized step, perturbing one writable array in place.

The serial engine: any Python callable. The array being perturbed is either the
checker's private copy of ``x`` (``check``) or a user's parameter array that is restored
bit for bit afterwards (``check_params``); either way each entry is put back in a
``finally`` block, so an exception or a KeyboardInterrupt never leaves it perturbed.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from ._errors import FunctionError, InputMutationError


def steps_for(values: np.ndarray, rel_step: float | np.ndarray) -> np.ndarray:
    """``h_i = step * max(1, |x_i|)`` as float64."""
    v = np.abs(np.asarray(values, dtype=np.float64))
    return np.asarray(rel_step, dtype=np.float64) * np.maximum(1.0, v)


def _flat_handle(target: np.ndarray):
    """A 1-D handle whose item assignment writes into ``target`` (a view when possible)."""
    if target.flags.c_contiguous:
        return target.reshape(-1)
    return target.flat  # writes through for any layout


def _reader(flat):
    """Fast item reads of ``flat`` (a memoryview of float64/float32 data: ~5x cheaper
    than numpy's scalar indexing), else ``flat`` itself."""
    if isinstance(flat, np.ndarray) and flat.dtype.char in "df":
        try:
            return memoryview(flat)
        except (TypeError, ValueError, BufferError):
            pass
    return flat


def central_differences(
    evaluate: Callable[[], float],
    target: np.ndarray,
    flat_indices: Sequence[int] | np.ndarray,
    steps: np.ndarray,
    *,
    param: str | None = None,
    progress: Callable[[int], None] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Evaluate ``f(x + h e_i)`` and ``f(x - h e_i)`` for each flat index.

    ``evaluate()`` reads the current contents of ``target`` and returns a float.
    Returns ``(f_plus, f_minus, realized_denominator)``, each float64 of len(indices).
    Entries whose value is not finite are not perturbed (NaN results).
    """
    idx = np.asarray(flat_indices, dtype=np.int64)
    flat = _flat_handle(target)
    # Everything that does not need f is computed up front, vectorized, in the array's
    # dtype (x +- h rounds exactly as the perturbed entry will), so the loop is bare.
    old = np.asarray(flat[idx], dtype=target.dtype).reshape(-1)
    h = np.asarray(steps, dtype=np.float64).reshape(-1).astype(target.dtype)
    with np.errstate(all="ignore"):
        xp, xm = old + h, old - h
        # The realized step: representation error of x +- h does not leak into the slope.
        denom = xp.astype(np.float64) - xm.astype(np.float64)
        finite = np.isfinite(old.astype(np.float64))
    denom[~finite] = np.nan
    f_plus, f_minus = [np.nan] * idx.size, [np.nan] * idx.size
    with np.errstate(all="ignore"):  # f is evaluated at points the user did not choose
        _difference_loop(evaluate, target, flat, idx.tolist(), old.tolist(), xp.tolist(), xm.tolist(),
                         finite.tolist(), f_plus, f_minus, param, progress)
    return np.array(f_plus, dtype=np.float64), np.array(f_minus, dtype=np.float64), denom


def _difference_loop(evaluate, target, flat, idx, old, xp, xm, finite, f_plus, f_minus, param, progress) -> None:
    probe = _reader(flat)
    for j, i in enumerate(idx):
        if not finite[j]:
            continue  # a NaN/inf entry is never perturbed (nor rewritten: NaN payloads survive)
        if probe[i] != old[j]:
            # An earlier call of f wrote here; restoring the up-front value below would
            # silently repair that write (and the final comparison would miss it).
            index = tuple(int(k) for k in np.unravel_index(i, target.shape))
            raise InputMutationError(
                f"the function wrote into the array it was given (entry {index} changed while "
                "other entries were perturbed); gradcheck cannot difference a function that "
                "mutates its input (copy inside the function)"
            )
        side = "+h"
        try:
            flat[i] = xp[j]
            f_plus[j] = evaluate()
            side = "-h"
            flat[i] = xm[j]
            f_minus[j] = evaluate()
        except Exception as exc:  # re-raised with the entry it happened at
            index = tuple(int(k) for k in np.unravel_index(i, target.shape))
            raise FunctionError(index, side, param, exc) from exc
        finally:
            flat[i] = old[j]
        if progress is not None:
            progress(j)


def slope_and_noise(
    f_plus: np.ndarray, f_minus: np.ndarray, denom: np.ndarray, unit_roundoff: float
) -> tuple[np.ndarray, np.ndarray]:
    """Difference quotient and the round-off it may carry: ``u(|f+|+|f-|)/|denom|``."""
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        slope = (f_plus - f_minus) / denom
        noise = unit_roundoff * (np.abs(f_plus) + np.abs(f_minus)) / np.abs(denom)
    return slope, noise
