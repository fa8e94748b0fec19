"""The verdict rule, as plain numpy (the reference the compiled kernel must equal).

For each entry, with claimed value ``a``, numeric value ``n`` and estimated round-off
``noise`` of the difference quotient::

    err   = |a - n|
    scale = max(|a|, |n|)
    floor = atol + k * noise          # what round-off alone can produce
    tol   = floor + rtol * scale

    NONFINITE  if a, n or noise is NaN/inf
    MISMATCH   elif err > tol
    UNCHECKED  elif scale <= floor     # both sides indistinguishable from noise
    PASS       otherwise
"""
from __future__ import annotations

import numpy as np

from ._verdict import Verdict

EPS_REL = 1e-12  # the seed's guard in |a-n| / max(|a|, |n|, eps)


def tolerance(analytic, numeric, noise, *, rtol: float, atol: float, noise_factor: float):
    """Per-entry tolerance ``atol + rtol*max(|a|,|n|) + k*noise``."""
    scale = np.maximum(np.abs(analytic), np.abs(numeric))
    return atol + noise_factor * noise + rtol * scale


def classify(analytic, numeric, noise, *, rtol: float, atol: float, noise_factor: float) -> np.ndarray:
    """Verdict codes (uint8, values of :class:`Verdict`) for each entry."""
    a = np.asarray(analytic, dtype=np.float64)
    n = np.asarray(numeric, dtype=np.float64)
    z = np.asarray(noise, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        finite = np.isfinite(a) & np.isfinite(n) & np.isfinite(z)
        err = np.abs(a - n)
        scale = np.maximum(np.abs(a), np.abs(n))
        floor = atol + noise_factor * z
        tol = floor + rtol * scale
        codes = np.full(a.shape, Verdict.PASS, dtype=np.uint8)
        codes[scale <= floor] = Verdict.UNCHECKED
        codes[err > tol] = Verdict.MISMATCH
        codes[~finite] = Verdict.NONFINITE
    return codes


def relative_error(analytic, numeric, eps: float = EPS_REL) -> np.ndarray:
    """The seed's relative error ``|a-n| / max(|a|, |n|, eps)``."""
    a = np.asarray(analytic, dtype=np.float64)
    n = np.asarray(numeric, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        return np.abs(a - n) / np.maximum(np.maximum(np.abs(a), np.abs(n)), eps)
