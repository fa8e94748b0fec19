"""Second look at suspicious entries: a step study (only suspects pay for it).

A real bug does not care about the step; a finite-difference artifact moves with it.
Each suspect is differenced again at h/2, 2h, 4h, 8h and 16h (larger steps have less
round-off, smaller ones less truncation). Every estimate gets an error bound
from its own round-off and from how much it moves between steps (truncation, measured):

    D(s)        bound = k*noise(s) + |D(2s) - D(s)| / 3            (O(s^2) truncation)
    R(s)        Richardson (4 D(s) - D(2s)) / 3,
                bound = k*noise_R(s) + |R(s) - R(2s)|

The estimate with the smallest bound is the numeric value. The entry stays MISMATCH only
if the claimed value is outside that estimate's tolerance; it becomes UNCHECKED if even
the best bound cannot resolve the value from zero.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ._differences import slope_and_noise
from ._verdict import Verdict

Differencer = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray]]

STUDY_FACTORS = (0.5, 1.0, 2.0, 4.0, 8.0, 16.0)


@dataclass(frozen=True)
class StepStudy:
    numeric: np.ndarray     # best estimate per suspect
    bound: np.ndarray       # its error bound (noise + measured truncation)
    codes: np.ndarray       # new verdict codes
    evaluations: int        # function evaluations spent


def step_study(
    differencer: Differencer,
    flat_indices: np.ndarray,
    steps: np.ndarray,
    analytic: np.ndarray,
    first: tuple[np.ndarray, np.ndarray],
    *,
    unit_roundoff: float,
    rtol: float,
    atol: float,
    noise_factor: float,
) -> StepStudy:
    """Re-difference ``flat_indices`` at several steps and re-judge them.

    ``first`` is the (slope, noise) already measured at factor 1.
    """
    slopes: dict[float, np.ndarray] = {}
    noises: dict[float, np.ndarray] = {}
    evaluations = 0
    for factor in STUDY_FACTORS:
        if factor == 1.0:
            slopes[factor], noises[factor] = first
            continue
        fp, fm, den = differencer(flat_indices, steps * factor)
        evaluations += 2 * len(flat_indices)
        slopes[factor], noises[factor] = slope_and_noise(fp, fm, den, unit_roundoff)

    k = noise_factor
    candidates: list[tuple[np.ndarray, np.ndarray]] = []
    lower = STUDY_FACTORS[:-1]
    for s in lower:
        trunc = np.abs(slopes[2 * s] - slopes[s]) / 3.0
        candidates.append((slopes[s], k * noises[s] + trunc))
    richardson = {}
    for s in lower:
        value = (4.0 * slopes[s] - slopes[2 * s]) / 3.0
        noise = (4.0 * noises[s] + noises[2 * s]) / 3.0
        richardson[s] = (value, noise)
    for s in lower[:-1]:
        value, noise = richardson[s]
        candidates.append((value, k * noise + np.abs(value - richardson[2 * s][0])))

    values = np.stack([c[0] for c in candidates])
    bounds = np.stack([c[1] for c in candidates])
    with np.errstate(invalid="ignore"):
        bounds = np.where(np.isfinite(bounds) & np.isfinite(values), bounds, np.inf)
        best = np.argmin(bounds, axis=0)
    cols = np.arange(values.shape[1])
    numeric = values[best, cols]
    bound = bounds[best, cols]

    a = np.asarray(analytic, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        err = np.abs(a - numeric)
        scale = np.maximum(np.abs(a), np.abs(numeric))
        codes = np.full(a.shape, Verdict.PASS, dtype=np.uint8)
        codes[scale <= atol + bound] = Verdict.UNCHECKED
        codes[err > atol + rtol * scale + bound] = Verdict.MISMATCH
        codes[~(np.isfinite(numeric) & np.isfinite(a) & np.isfinite(bound))] = Verdict.NONFINITE
    return StepStudy(numeric, bound, codes, evaluations)
