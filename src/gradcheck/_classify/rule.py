"""The verdict rule, as plain numpy (the reference the compiled kernel must equal).

For each entry, with claimed value ``a``, numeric value ``n``, estimated round-off
``noise`` of the difference quotient and the resolution share ``r`` (``Config.resolution``,
1% by default)::

    err   = |a - n|
    scale = max(|a|, |n|)
    floor = atol + k * noise          # what round-off alone can produce
    tol   = floor + rtol * scale

    NONFINITE  if a, n or noise is NaN/inf
    MISMATCH   elif err > tol
    UNCHECKED  elif scale <= floor     # both sides indistinguishable from noise
               or   tol > r * scale    # agreement, but only to a large share of the value
    PASS       otherwise

So a PASS claim is within ``r`` of the numeric value (1%; in the float64 preset usually
within rtol): a tolerance nearly as large as the value proves nothing and is UNCHECKED,
never PASS. MISMATCH does not depend on ``r``: a disagreement beyond the tolerance is one
at any resolution. The step study, the quick look and the referee judge by this same rule
(:func:`verdicts`), each with its own noise term in the one formula
(:class:`gradcheck._core.tolerance.Tolerance`).
"""
from __future__ import annotations

import numpy as np

from .._core.config import DEFAULT_RESOLUTION, Config
from .._core.tolerance import Tolerance, coarse
from .._core.verdict import Verdict

EPS_REL = 1e-12  # the seed's guard in |a-n| / max(|a|, |n|, eps)


def tolerance(analytic, numeric, noise, *, rtol: float, atol: float, noise_factor: float):
    """Per-entry tolerance ``atol + rtol*max(|a|,|n|) + k*noise`` (:class:`Tolerance`)."""
    return Tolerance(rtol, atol, noise_factor).per_entry(analytic, numeric, noise)


def verdicts(err, scale, floor, tol, finite, *, resolution: float) -> np.ndarray:
    """The rule's decision from its parts (float64 arrays): MISMATCH where ``err > tol``,
    else UNCHECKED where ``scale <= floor`` or ``tol > resolution * scale``, else PASS;
    NONFINITE where not ``finite``. Every judge of a verdict calls this."""
    # Its one product, resolution * scale, cannot overflow (0 < resolution < 1, as Config
    # requires); comparisons with NaN raise "invalid" on some numpy builds.
    with np.errstate(invalid="ignore"):
        codes = np.full(np.shape(err), Verdict.PASS, dtype=np.uint8)
        codes[(scale <= floor) | coarse(tol, scale, resolution)] = Verdict.UNCHECKED
        codes[err > tol] = Verdict.MISMATCH
    codes[~finite] = Verdict.NONFINITE
    return codes


def classify(analytic, numeric, noise, *, rtol: float, atol: float, noise_factor: float,
             resolution: float = DEFAULT_RESOLUTION) -> np.ndarray:
    """Verdict codes (uint8, values of :class:`Verdict`) for each entry."""
    a = np.asarray(analytic, dtype=np.float64)
    n = np.asarray(numeric, dtype=np.float64)
    z = np.asarray(noise, dtype=np.float64)
    rule = Tolerance(rtol, atol, noise_factor)  # its floor and value term; the share rule is verdicts'
    with np.errstate(invalid="ignore", over="ignore"):
        finite = np.isfinite(a) & np.isfinite(n) & np.isfinite(z)
        err = np.abs(a - n)
        scale = np.maximum(np.abs(a), np.abs(n))
        floor = rule.floor(z)
        tol = floor + rule.value_term(scale)  # rule.bound(scale, z), the floor computed once
    return verdicts(err, scale, floor, tol, finite, resolution=resolution)


def resolved_share(analytic, numeric, tolerance_) -> np.ndarray:
    """The resolution an entry reached: its tolerance as a share of ``max(|a|, |n|)``
    (inf where both are 0). A PASS needs this at most ``Config.resolution``."""
    scale = np.maximum(np.abs(np.asarray(analytic, dtype=np.float64)), np.abs(np.asarray(numeric, dtype=np.float64)))
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        return np.where(scale > 0, np.asarray(tolerance_, dtype=np.float64) / scale, np.inf)


def relative_error(analytic, numeric, eps: float = EPS_REL) -> np.ndarray:
    """The seed's relative error ``|a-n| / max(|a|, |n|, eps)``."""
    a = np.asarray(analytic, dtype=np.float64)
    n = np.asarray(numeric, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        return np.abs(a - n) / np.maximum(np.maximum(np.abs(a), np.abs(n)), eps)


def rule_of(cfg: Config) -> dict[str, float]:
    """The verdict rule's settings, as every call of ``classify`` takes them."""
    return Tolerance.of(cfg).rule()
