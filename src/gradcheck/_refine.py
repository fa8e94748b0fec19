"""Second look at suspicious entries: a step study (only suspects pay for it).

A real bug does not care about the step; a finite-difference artifact moves with it.
Each suspect is differenced again at h/2, 2h, 4h, 8h and 16h (larger steps have less
round-off, smaller ones less truncation). Every estimate gets an error bound
from its own round-off and from how much it moves between steps (truncation, measured):

    D(s)        bound = k*noise(s) + |D(2s) - D(s)| / 3            (O(s^2) truncation)
    R(s)        Richardson (4 D(s) - D(2s)) / 3,
                bound = k*noise_R(s) + |R(s) - R(2s)|

The estimate with the smallest bound is the numeric value, and the entry is judged by
the verdict rule (:func:`gradcheck._classify.classify`) with that bound as its noise
floor: MISMATCH only if the claimed value is outside ``atol + rtol*scale + bound``; PASS
only if that whole tolerance is within ``resolution*scale`` as well (the study picks the
estimate by its bound, never by the verdict, so it cannot widen a tolerance until
something passes); UNCHECKED otherwise.

A PASS that is only suspect because its tolerance is mostly round-off (a "noisy PASS")
first gets a quick look (:func:`quick_certify`): 8h and 16h only, 4 evaluations instead
of 10. It is certified there when the claim lies within rtol of D(8h) even after adding
D(8h)'s whole error bound (and the verdict rule passes it), which under valid bounds is a
subset of what the full study passes; the others go on to the full study, which reuses
those two differences.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ._core.config import DEFAULT_RESOLUTION
from ._classify import classify
from .engines._differences import slope_and_noise
from ._core.verdict import Verdict

Differencer = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray]]

STUDY_FACTORS = (0.5, 1.0, 2.0, 4.0, 8.0, 16.0)
#: The quick look at a noisy PASS: these steps only (part of STUDY_FACTORS, reused by it).
QUICK_FACTORS = (8.0, 16.0)
#: How much the quick look inflates the round-off it measures from D(h) - D(8h) (one
#: pair, where the full study takes the largest of three).
QUICK_MEASURED_SAFETY = 2.0
#: The quick look's kink test accepts a slope jump up to this share of the threshold the
#: full study's kink test uses (margin for the curvature the full study sees at h/2..2h).
KINK_MARGIN = 0.5


@dataclass(frozen=True)
class StepStudy:
    numeric: np.ndarray     # best estimate per suspect
    bound: np.ndarray       # its error bound (noise + measured truncation)
    codes: np.ndarray       # new verdict codes
    evaluations: int        # function evaluations spent
    left: np.ndarray        # one-sided slopes at the smallest step (NaN without a base value)
    right: np.ndarray
    kink: np.ndarray        # bool: one-sided slopes differ by a gap that does not shrink with h


def step_study(
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
    measured: dict[float, tuple[np.ndarray, np.ndarray, np.ndarray]] | None = None,
) -> StepStudy:
    """Re-difference ``flat_indices`` at several steps and re-judge them.

    ``first`` is the ``(f_plus, f_minus, denominator)`` already measured at factor 1;
    ``measured`` holds differences already taken at other factors (the quick look's).
    ``base_value`` (f at the unperturbed x) enables the one-sided slopes and the kink test.
    """
    measured = measured or {}
    slopes: dict[float, np.ndarray] = {}
    noises: dict[float, np.ndarray] = {}
    raw: dict[float, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    evaluations = 0
    for factor in STUDY_FACTORS:
        if factor == 1.0:
            raw[factor] = first
        elif factor in measured:
            raw[factor] = measured[factor]
        else:
            raw[factor] = differencer(flat_indices, steps * factor)
            evaluations += 2 * len(flat_indices)
        slopes[factor], noises[factor] = slope_and_noise(*raw[factor], unit_roundoff)

    k = noise_factor
    # Round-off measured, not only modelled: at the small steps truncation is negligible,
    # so how far D(s) and D(2s) disagree, times the step, is the size of f's own round-off
    # (which the model u*|f| underestimates when f cancels large intermediate values).
    with np.errstate(invalid="ignore"):
        half = {s: np.abs(raw[s][2]) / 2.0 for s in STUDY_FACTORS}
        roundoff = np.max([np.abs(slopes[s] - slopes[2 * s]) * half[s] for s in (0.5, 1.0, 2.0)], axis=0)
        bound_noise = {s: np.maximum(k * noises[s], 3.0 * roundoff / half[s]) for s in STUDY_FACTORS}
    candidates: list[tuple[np.ndarray, np.ndarray]] = []
    lower = STUDY_FACTORS[:-1]
    for s in lower:
        trunc = np.abs(slopes[2 * s] - slopes[s]) / 3.0
        candidates.append((slopes[s], bound_noise[s] + trunc))
    richardson = {}
    for s in lower:
        value = (4.0 * slopes[s] - slopes[2 * s]) / 3.0
        noise = (4.0 * bound_noise[s] + bound_noise[2 * s]) / 3.0
        richardson[s] = (value, noise)
    for s in lower[:-1]:
        value, noise = richardson[s]
        candidates.append((value, noise + np.abs(value - richardson[2 * s][0])))

    values = np.stack([c[0] for c in candidates])
    bounds = np.stack([c[1] for c in candidates])
    with np.errstate(invalid="ignore"):
        bounds = np.where(np.isfinite(bounds) & np.isfinite(values), bounds, np.inf)
        best = np.argmin(bounds, axis=0)
    cols = np.arange(values.shape[1])
    numeric = values[best, cols]
    bound = bounds[best, cols]

    a = np.asarray(analytic, dtype=np.float64)
    # The one rule, the decisive estimate's whole bound as its noise floor (k = 1).
    codes = classify(a, numeric, bound, rtol=rtol, atol=atol, noise_factor=1.0, resolution=resolution)
    left, right, kink = _kink_test(raw, base_value, unit_roundoff, rtol, noise_factor)
    with np.errstate(invalid="ignore"):
        lo, hi = np.minimum(left, right), np.maximum(left, right)
        slack = atol + rtol * np.maximum(np.abs(lo), np.abs(hi)) + bound
        inside = (a >= lo - slack) & (a <= hi + slack)
    # At a kink the claim is a subgradient choice: fine if it lies between the one-sided
    # slopes, a MISMATCH if it lies outside them.
    codes[kink & inside & (codes != Verdict.NONFINITE)] = Verdict.KINK
    codes[kink & ~inside & np.isfinite(a)] = Verdict.MISMATCH
    return StepStudy(numeric, bound, codes, evaluations, left, right, kink)


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
        measured = QUICK_MEASURED_SAFETY * np.abs(d1 - d8) * half1
        bound = np.maximum(k * n8, 3.0 * measured / half8) + np.abs(d16 - d8) / 3.0
        scale = np.maximum(np.abs(a), np.abs(d8))
        certified = atol + np.abs(a - d8) + bound <= rtol * scale
        certified &= np.isfinite(d8) & np.isfinite(d16) & np.isfinite(bound) & np.isfinite(a)
    certified &= _smooth(raw, base_value, unit_roundoff, rtol, k, scale)
    rule = dict(rtol=rtol, atol=atol, noise_factor=1.0, resolution=resolution)
    certified &= classify(a, d8, bound, **rule) == Verdict.PASS
    return QuickLook(certified, d8, bound, raw, evaluations)


def _smooth(raw, base_value, unit, rtol, k, scale) -> np.ndarray:
    """No kink at x, from the one-sided slopes at 8h and 16h. Their gap is
    ``c + f''s + O(s^3)`` with ``c`` the jump of the slope at a kink (0 at a smooth point),
    so ``2 gap(8h) - gap(16h)`` measures ``c`` whatever the curvature. The point counts as
    smooth when that is below half the threshold at which the full study's kink test
    calls a gap significant (its round-off plus 10 rtol scale), so that no entry the full
    study would call KINK is certified here. Without f(x) there is no kink test at all."""
    count = raw[8.0][0].shape[0]
    if base_value is None or not np.isfinite(base_value):
        return np.ones(count, dtype=bool)
    f0 = base_value
    gaps, noise = {}, {}
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        for s in QUICK_FACTORS:
            fp, fm, den = raw[s]
            half = den / 2.0
            gaps[s] = (fp - f0) / half - (f0 - fm) / half
            noise[s] = unit * (np.abs(fp) + np.abs(fm) + 2 * abs(f0)) / half
        jump = np.abs(2.0 * gaps[8.0] - gaps[16.0])
        threshold = k * (2.0 * noise[8.0] + noise[16.0]) + 10 * rtol * scale
        smooth = jump <= KINK_MARGIN * threshold
    return smooth & np.isfinite(gaps[8.0]) & np.isfinite(gaps[16.0])


def _kink_test(raw, base_value, unit, rtol, k):
    """One-sided slopes at steps h/2, h, 2h. At a smooth point their gap is ~f''*h and
    doubles with h; at a kink it stays put. A kink needs a gap well above round-off and
    stable (within 25%) across the three steps."""
    count = raw[1.0][0].shape[0]
    if base_value is None or not np.isfinite(base_value):
        nan = np.full(count, np.nan)
        return nan, nan.copy(), np.zeros(count, dtype=bool)
    f0 = base_value
    gaps, lefts, rights, noise = [], [], [], []
    with np.errstate(invalid="ignore", divide="ignore"):
        for s in (0.5, 1.0, 2.0):
            fp, fm, den = raw[s]
            half = den / 2.0
            rights.append((fp - f0) / half)
            lefts.append((f0 - fm) / half)
            gaps.append(rights[-1] - lefts[-1])
            noise.append(unit * (np.abs(fp) + np.abs(fm) + 2 * abs(f0)) / half)
        g0, g1, g2 = gaps
        scale = np.maximum(np.abs(lefts[0]), np.abs(rights[0]))
        significant = np.abs(g0) > k * noise[0] + 10 * rtol * scale
        stable = (np.abs(g0 - g1) <= 0.25 * np.abs(g0)) & (np.abs(g1 - g2) <= 0.25 * np.abs(g1))
        kink = significant & stable & np.isfinite(g0)
    return lefts[0], rights[0], kink
