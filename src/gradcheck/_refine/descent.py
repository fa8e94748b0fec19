"""Before the step study confirms a MISMATCH: smaller steps, when its steps may be too large.

The study's bounds measure truncation from how far its differences move between steps,
which is only a bound once the steps are small enough for the O(s^2) law. A step that
spans periods of an oscillating f (the relative step 6e-6*|x| is 600 at |x| = 1e8, where
sin has a period of 6.3) gives differences ~sin(s)/s ~ 0 at every step, their spread a
small "bound": the study would confirm a MISMATCH of the correct cos(x). So a MISMATCH
whose study looks out of that regime (:func:`needs_descent`: its estimates disagree beyond
their bounds, or its step is large in absolute terms) is looked at with smaller steps,
level by level (8x smaller each, :data:`LEVEL_FACTORS`), each level one estimate ``E_j``
by the one estimator (:func:`gradcheck._differences.best_estimate`, modelled round-off).

Agreeing steps prove nothing by themselves: steps near multiples of f's period alias
(at x = 1e8, D(18.75) ... D(150) agree to 3e-6 around 0.0019, far from cos(x) = -0.36).
Only round-off is immune to that, so the verdict comes from the first level at the *floor*:
its estimate's bound (truncation measured) is at most :data:`ROUNDOFF_DOMINATED` times its
round-off, the differences agree as well as f's precision lets them (a real bug at a
moderate x is there at once: 4 evaluations). That level's estimate is judged by the one
verdict rule. The descent stops where round-off forbids a decision (the level's round-off
alone above ``resolution`` of the value), where a step no longer moves x, or after
:data:`MAX_LEVELS`; an entry that reached no floor is UNCHECKED, never MISMATCH or PASS.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .._classify.rule import classify
from .._core.tolerance import Tolerance
from .._core.verdict import Verdict
from .._differences import best_estimate, estimates, slope_and_noise

#: A step this large in absolute terms (|x| > ~1.6e3 at the default relative step) may span
#: a period of f: its MISMATCH is looked at with smaller steps whatever the study's ladder shows.
LARGE_STEP = 1e-2
#: Level j differences at these factors times 8**-j times the first step (level 1 reuses h/2).
LEVEL_FACTORS = (1.0, 2.0, 4.0)
#: Each level's steps are this much smaller than the previous one's.
SHRINK = 8.0
#: At most this many levels (8**16 ~ 3e14: from the largest relative step to float spacing).
MAX_LEVELS = 16
#: A finer bound that grew is still round-off (no sign of large steps) up to this many times its noise.
ROUNDOFF_DOMINATED = 4.0


def needs_descent(slopes, noises, numeric, bound, steps) -> np.ndarray:
    """The study's entries whose steps may be too large: some estimate of its ladder disagrees
    with the chosen one beyond both bounds, or the step is above :data:`LARGE_STEP`."""
    out = np.asarray(steps, dtype=np.float64) > LARGE_STEP
    with np.errstate(invalid="ignore"):
        for value, b in estimates(slopes, noises):
            out |= np.abs(value - numeric) > b + bound
    return out


def descend(differencer: Callable, flat_indices: np.ndarray, steps: np.ndarray, analytic: np.ndarray,
            study: tuple[np.ndarray, np.ndarray, np.ndarray], half_step, *, unit_roundoff: float,
            noise_factor: float, rule: Tolerance) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """The descent of the study's MISMATCH entries ``flat_indices`` (see the module docstring).
    ``study`` is their ``(numeric, bound, codes)``, ``half_step`` their differences at h/2.
    Returns ``(numeric, bound, codes, unsettled, evaluations)``."""
    numeric, bound, codes = (np.array(v) for v in study)
    a = np.asarray(analytic, dtype=np.float64)
    n = len(flat_indices)
    open_ = np.ones(n, dtype=bool)       # not settled yet
    evaluations = 0
    for level in range(1, MAX_LEVELS + 1):
        live = np.flatnonzero(open_)
        if not live.size:
            break
        scale = SHRINK ** -level
        values, noises = [], []
        for factor in LEVEL_FACTORS:
            if factor * scale == 0.5:  # h/2 at level 1: the study's
                fp, fm, den = (part[live] for part in half_step)
            else:
                fp, fm, den = differencer(flat_indices[live], steps[live] * (factor * scale))
                evaluations += 2 * live.size
            d, z = slope_and_noise(fp, fm, den, unit_roundoff)
            values.append(d)
            noises.append(noise_factor * z)
        smallest = noises[0]  # the smallest step's round-off
        v, b = best_estimate(values, noises)
        with np.errstate(invalid="ignore", over="ignore"):
            # The floor: the level's differences agree to their round-off (truncation below it).
            floor = (b <= ROUNDOFF_DOMINATED * smallest) & np.isfinite(v) & np.isfinite(b)
            judged = classify(a[live], v, b, **rule.rule())
            # Stop where a smaller step cannot decide (its round-off alone above the resolution of
            # the value) or no longer moves x (NaN or infinite round-off).
            hopeless = ~floor & ~(smallest <= rule.resolution * np.maximum(np.abs(a[live]), np.abs(v)))
        done = live[floor]
        numeric[done], bound[done], codes[done] = v[floor], b[floor], judged[floor]
        open_[done] = False
        open_[live[hopeless]] = False
        codes[live[hopeless]] = Verdict.UNCHECKED
    codes[open_] = Verdict.UNCHECKED
    unsettled = ~np.isin(codes, (Verdict.PASS, Verdict.MISMATCH)) & (np.asarray(study[2]) == Verdict.MISMATCH)
    return numeric, bound, codes, unsettled, evaluations
