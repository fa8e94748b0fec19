"""THE step-and-Richardson estimator with its error bound (one rule, every caller).

Central differences ``D(s_k)`` at doubling steps ``s_k = 2^k s`` (``slopes[k]``), each with
the round-off it may carry (``noises[k]``, already scaled by the caller's noise factor), give
two kinds of estimate of ``f'``, each with a bound on its error:

    D(s_k)   bound = noise_k + |D(s_{k+1}) - D(s_k)| / 3            (the measured O(s^2) truncation)
    R(s_k)   = (4 D(s_k) - D(s_{k+1})) / 3,  noise_R = (4 noise_k + noise_{k+1}) / 3,
             bound = noise_R + |R(s_k) - R(s_{k+1})|                  (the measured O(s^4) truncation)

:func:`estimates` yields them in that order (every ``D`` but the largest step's, then every
``R`` but the two largest), :func:`best_estimate` keeps, per entry, the one with the smallest
bound. The step study (``gradcheck._refine.study``), the quick look, the adjoint test's
differences along ``t`` and the screen's blocks (``gradcheck._screen._directional.estimate``)
all use it.

Where one step must serve every entry (an ``f`` that computes in float32: no step makes both
truncation and round-off small, ``gradcheck._lowp.f32steps``), :func:`spread_estimate` keeps
``R(s)`` from three steps ``s, 2s, 4s`` and bounds it by the measured spread:

    R1 = R(s),  R2 = R(2s),   bound = |R1 - R2| / SPREAD_SHARE + model

``|R1 - R2|`` is mostly R2's truncation (16 times R1's, so a quarter of it still covers R1's
four times over) or the round-off of both; ``model`` (:func:`gradcheck._differences.noise.modelled`)
covers R1's round-off where the spread happens to cancel.

>>> d = [np.array([1.02]), np.array([1.08]), np.array([1.32])]   # D(s) = 1 + 2 s^2 at s = .1, .2, .4
>>> value, bound = best_estimate(d, [np.zeros(1)] * 3)
>>> round(float(value[0]), 12), round(float(bound[0]), 12)
(1.0, 0.0)
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

Estimate = tuple[np.ndarray, np.ndarray]
#: Differences of many entries, or of one (the adjoint test's, a float).
Values = np.ndarray | float


def truncation(d_s: Values, d_2s: Values) -> np.ndarray:
    """``|D(2s) - D(s)| / 3``: the O(s^2) truncation of ``D(s)``, measured from ``D(2s)``."""
    return np.abs(d_2s - d_s) / 3.0


def richardson(d_s: Values, d_2s: Values, n_s: Values, n_2s: Values) -> tuple[Values, Values]:
    """``R(s) = (4 D(s) - D(2s)) / 3`` and its round-off ``(4 noise(s) + noise(2s)) / 3``."""
    return (4.0 * d_s - d_2s) / 3.0, (4.0 * n_s + n_2s) / 3.0


def estimates(slopes: Sequence[np.ndarray], noises: Sequence[np.ndarray]) -> Iterator[Estimate]:
    """Every estimate and its bound (see the module docstring), ``slopes[k] = D(2^k s)``."""
    m = len(slopes)
    for k in range(m - 1):
        yield slopes[k], noises[k] + truncation(slopes[k], slopes[k + 1])
    extrapolated = [richardson(slopes[k], slopes[k + 1], noises[k], noises[k + 1]) for k in range(m - 1)]
    for k in range(m - 2):
        value, noise = (np.asarray(a) for a in extrapolated[k])
        yield value, noise + np.abs(value - extrapolated[k + 1][0])


#: |R1 - R2| over this bounds R1's truncation in :func:`spread_estimate` (see the module docstring).
SPREAD_SHARE = 4.0


def spread_estimate(d_s: np.ndarray, d_2s: np.ndarray, d_4s: np.ndarray, model: np.ndarray) -> Estimate:
    """``R(s)`` and its bound ``|R(s) - R(2s)| / SPREAD_SHARE + model`` (module docstring). Where
    either is not finite (a step that left f's domain at ``2s`` or ``4s``): the plain ``D(s)``,
    bounded by ``|D(s) - D(2s)| + model`` (NaN, hence NONFINITE, if that is not finite).

    >>> s = np.array([0.1])
    >>> d = [(np.sin(0.5 + t) - np.sin(0.5 - t)) / (2 * t) for t in (s, 2 * s, 4 * s)]
    >>> value, bound = spread_estimate(*d, np.zeros(1))
    >>> bool(abs(value[0] - np.cos(0.5)) < bound[0] < 2e-5), bool(abs(d[0][0] - np.cos(0.5)) > 1e-3)
    (True, True)
    """
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        r1 = np.asarray(richardson(d_s, d_2s, 0.0, 0.0)[0])
        r2 = richardson(d_2s, d_4s, 0.0, 0.0)[0]
        noise = np.abs(r1 - r2) / SPREAD_SHARE + model
        bad = ~np.isfinite(r1) | ~np.isfinite(noise)
        r1[bad], noise[bad] = d_s[bad], (np.abs(d_s - d_2s) + model)[bad]
    return r1, noise


def best_estimate(slopes: Sequence[np.ndarray], noises: Sequence[np.ndarray]) -> Estimate:
    """Per entry, the estimate with the smallest bound (a bound or value that is not finite
    counts as an infinite bound; ties and all-infinite go to the first estimate, as ``argmin``
    over them stacked would), kept as a running best: two arrays of the entries instead of
    every estimate stacked (the second look of a million suspects)."""
    numeric: np.ndarray | None = None
    bound: np.ndarray | None = None
    for value, b in estimates(slopes, noises):
        with np.errstate(invalid="ignore"):
            b = np.where(np.isfinite(b) & np.isfinite(value), b, np.inf)
        if numeric is None or bound is None:
            numeric, bound = np.array(value, dtype=np.float64), b
            continue
        better = b < bound
        numeric[better], bound[better] = value[better], b[better]
    assert numeric is not None and bound is not None, "an estimate needs two steps"
    return numeric, bound
