"""The quick look at a noisy PASS: 8h and 16h only, certified when the claim is within rtol
even with D(8h)'s whole error bound added (:mod:`.study` says why that loses nothing)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._classify.rule import classify
from .._core.config import DEFAULT_RESOLUTION
from .._core.tolerance import Tolerance
from .._core.verdict import Verdict
from .._differences import measured, slope_and_noise, truncation, with_measured
from .kink import kink_threshold, one_sided
from .study import Differencer

#: The quick look at a noisy PASS: these steps only (part of STUDY_FACTORS, reused by it).
QUICK_FACTORS = (8.0, 16.0)


#: How much the quick look inflates the round-off it measures from D(h) - D(8h) (one
#: pair, where the full study takes the largest of three).
QUICK_MEASURED_SAFETY = 2.0


#: The quick look's kink test accepts a slope jump up to this share of the threshold the
#: full study's kink test uses (margin for the curvature the full study sees at h/2..2h).
KINK_MARGIN = 0.5


@dataclass(frozen=True)
class QuickLook:
    certified: np.ndarray   # bool: a PASS resolved to rtol at 8h; no full study needed
    numeric: np.ndarray     # D(8h)
    bound: np.ndarray       # its error bound (round-off modelled and measured, truncation)
    raw: dict[float, tuple[np.ndarray, np.ndarray, np.ndarray]]  # at 8h and 16h, for reuse
    evaluations: int


def quick_certify(
    differencer: Differencer,
    flat_indices: np.ndarray,
    steps: np.ndarray,
    analytic: np.ndarray,
    first: tuple[np.ndarray, np.ndarray, np.ndarray],
    *,
    base_value: float | None = None,
    unit_roundoff: float,
    rtol: float,
    atol: float,
    noise_factor: float,
    resolution: float = DEFAULT_RESOLUTION,
) -> QuickLook:
    """The quick look at noisy PASS entries: difference them at 8h and 16h and certify
    those whose claim is within ``rtol`` of D(8h) with D(8h)'s whole error bound added:

        bound = max(k*noise(8h), 3*m/half(8h)) + |D(16h) - D(8h)|/3,
        m     = 2 |D(h) - D(8h)| half(h)      (f's round-off, measured; includes truncation)
        certified: atol + |a - D(8h)| + bound <= rtol * max(|a|, |D(8h)|)

    and whose one-sided slopes show no kink (the gap between them, extrapolated from 8h
    and 16h to step 0, is well below the full study's kink threshold). If the bound holds,
    ``|a - f'| <= rtol*scale``, so the full study would pass the entry too: certifying it
    here loses no sensitivity, it only skips six evaluations. A certified entry also
    passes the verdict rule with D(8h)'s bound (implied when ``2 rtol <= resolution``,
    checked in any case), so the quick look is never looser than the rule.
    """
    raw = {factor: differencer(flat_indices, steps * factor) for factor in QUICK_FACTORS}
    evaluations = 2 * len(flat_indices) * len(QUICK_FACTORS)
    k = noise_factor
    d1, _ = slope_and_noise(*first, unit_roundoff)
    d8, n8 = slope_and_noise(*raw[8.0], unit_roundoff)
    d16, _ = slope_and_noise(*raw[16.0], unit_roundoff)
    a = np.asarray(analytic, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        half1, half8 = np.abs(first[2]) / 2.0, np.abs(raw[8.0][2]) / 2.0
        roundoff = measured(d1, d8, half1) * QUICK_MEASURED_SAFETY
        bound = with_measured(k * n8, roundoff, half8) + truncation(d8, d16)
        scale = np.maximum(np.abs(a), np.abs(d8))
        rule = Tolerance(rtol, atol, 1.0, resolution)  # D(8h)'s whole bound as the noise (k = 1)
        certified = np.abs(a - d8) + rule.floor(bound) <= rule.value_term(scale)
    certified &= _smooth(raw, base_value, unit_roundoff, rtol, k, scale)
    # The rule's PASS also excludes what is not finite: a, D(8h) and the bound are its inputs
    # (NONFINITE), and a D(16h) that is not finite makes the bound inf or NaN.
    certified &= classify(a, d8, bound, **rule.rule()) == Verdict.PASS
    return QuickLook(certified, d8, bound, raw, evaluations)


def _smooth(raw, base_value, unit, rtol, k, scale) -> np.ndarray:
    """No kink at x, from the one-sided slopes at 8h and 16h. Their gap is
    ``c + f''s + O(s^3)`` with ``c`` the jump of the slope at a kink (0 at a smooth point),
    so ``2 gap(8h) - gap(16h)`` measures ``c`` whatever the curvature. The point counts as
    smooth when that is below half the threshold at which the full study's kink test
    calls a gap significant (its round-off plus 10 rtol scale), so that no entry the full
    study would call KINK is certified here. Without f(x) there is no kink test at all.
    ``base_value``: a scalar, or one per entry (an entry whose base value is not finite is not
    certified smooth)."""
    count = raw[8.0][0].shape[0]
    if base_value is None or not np.isfinite(base_value).any():
        return np.ones(count, dtype=bool)
    f0 = np.asarray(base_value, dtype=np.float64)  # a scalar, or one per entry (its slice's)
    gaps, noise = {}, {}
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        for s in QUICK_FACTORS:
            _, _, gaps[s], noise[s] = one_sided(raw[s], f0, unit)
        jump = np.abs(2.0 * gaps[8.0] - gaps[16.0])
        threshold = kink_threshold(rtol, k).bound(scale, 2.0 * noise[8.0] + noise[16.0])
        smooth = jump <= KINK_MARGIN * threshold
    return smooth & np.isfinite(gaps[8.0]) & np.isfinite(gaps[16.0])
