"""Second look at suspicious entries: a step study (only suspects pay for it).

A real bug does not care about the step; a finite-difference artifact moves with it.
Each suspect is differenced again at h/2, 2h, 4h, 8h and 16h (larger steps have less
round-off, smaller ones less truncation). Every estimate gets an error bound
from its own round-off and from how much it moves between steps (truncation, measured):

    D(s)        bound = k*noise(s) + |D(2s) - D(s)| / 3            (O(s^2) truncation)
    R(s)        Richardson (4 D(s) - D(2s)) / 3,
                bound = k*noise_R(s) + |R(s) - R(2s)|

(:mod:`gradcheck._differences.richardson`, the one estimator). The estimate with the
smallest bound is the numeric value, and the entry is judged by
the verdict rule (:func:`gradcheck._classify.rule.classify`) with that bound as its noise
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

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .._classify.rule import classify
from .._core.config import DEFAULT_RESOLUTION
from .._core.tolerance import Tolerance
from .._core.verdict import Verdict
from .._differences import best_estimate, slope_and_noise, with_measured
from .._differences import measured as measured_roundoff
from .descent import LARGE_STEP, descend, needs_descent
from .kink import kink_test

Differencer = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray]]

STUDY_FACTORS = (0.5, 1.0, 2.0, 4.0, 8.0, 16.0)


@dataclass(frozen=True)
class StepStudy:
    numeric: np.ndarray     # best estimate per suspect
    bound: np.ndarray       # its error bound (noise + measured truncation)
    codes: np.ndarray       # new verdict codes
    evaluations: int        # function evaluations spent
    left: np.ndarray        # one-sided slopes at the smallest step (NaN without a base value)
    right: np.ndarray
    kink: np.ndarray        # bool: one-sided slopes differ by a gap that does not shrink with h
    slopes: np.ndarray | None = None  # (len(STUDY_FACTORS), suspects): D(factor * h), for the report
    unsettled: np.ndarray | None = None  # bool: a MISMATCH no smaller step confirmed (now UNCHECKED)


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
        roundoff = np.max([measured_roundoff(slopes[s], slopes[2 * s], half[s]) for s in (0.5, 1.0, 2.0)], axis=0)
        bound_noise = {s: with_measured(k * noises[s], roundoff, half[s]) for s in STUDY_FACTORS}
    numeric, bound = best_estimate([slopes[s] for s in STUDY_FACTORS], [bound_noise[s] for s in STUDY_FACTORS])

    a = np.asarray(analytic, dtype=np.float64)
    # The one rule, the decisive estimate's whole bound as its noise floor (k = 1).
    rule = Tolerance(rtol, atol, 1.0, resolution)
    codes = classify(a, numeric, bound, **rule.rule())
    left, right, kink = kink_test(raw, base_value, unit_roundoff, rtol, noise_factor)
    with np.errstate(invalid="ignore"):
        lo, hi = np.minimum(left, right), np.maximum(left, right)
        slack = rule.bound(np.maximum(np.abs(lo), np.abs(hi)), bound)
        inside = (a >= lo - slack) & (a <= hi + slack)
    # At a kink the claim is a subgradient choice: fine if it lies between the one-sided
    # slopes, a MISMATCH if it lies outside them.
    codes[kink & inside & (codes != Verdict.NONFINITE)] = Verdict.KINK
    codes[kink & ~inside & np.isfinite(a)] = Verdict.MISMATCH
    # A MISMATCH whose steps may be too large is confirmed with smaller ones first (:mod:`.descent`).
    unsettled = np.zeros(codes.size, dtype=bool)
    # An UNCHECKED at a step large in absolute terms may resolve at smaller ones: it descends too.
    down = np.flatnonzero(~kink & (((codes == Verdict.MISMATCH) & needs_descent(
        [slopes[s] for s in STUDY_FACTORS], [bound_noise[s] for s in STUDY_FACTORS], numeric, bound, steps))
        | ((codes == Verdict.UNCHECKED) & (np.asarray(steps) > LARGE_STEP))))
    if down.size:
        found = descend(differencer, flat_indices[down], steps[down], a[down],
                        (numeric[down], bound[down], codes[down]), tuple(d[down] for d in raw[0.5]),
                        unit_roundoff=unit_roundoff, noise_factor=k, rule=rule)
        numeric[down], bound[down], codes[down], unsettled[down] = found[:4]
        evaluations += found[4]
    table = np.stack([slopes[s] for s in STUDY_FACTORS])
    return StepStudy(numeric, bound, codes, evaluations, left, right, kink, table, unsettled)
