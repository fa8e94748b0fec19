"""THE round-off model of a difference, and f's round-off measured from two of them.

Modelled: a combination of evaluations of ``f`` divided by a spacing carries at most

    noise = u * (|f_1| + |f_2| + ...) / spacing                       (:func:`modelled`)

(a central difference: ``f(x+h)``, ``f(x-h)`` over ``|(x+h) - (x-h)|``; the gap between the
one-sided slopes: ``f(x+h)``, ``f(x-h)``, ``2 f(x)`` over ``h``; the Taylor remainder:
``f(x+hd)``, ``f(x)`` and the linear term's size, over 1), ``u`` the unit round-off in use.

Measured: where truncation is negligible (the small steps), two central differences of one
entry disagree by f's own round-off over the step, ``m = |D(s) - D(s')| * s``
(:func:`measured`), which the model ``u |f|`` underestimates when f cancels large intermediate
values. A difference at step ``t`` then carries ``max(k * noise(t), 3 m / t)``
(:func:`with_measured`; ``k`` the noise factor). The step study, the quick look, the kink test,
the Taylor test and the screen's blocks (``modelled(k u, (f+, f-), 2t, at_least=3 rho)``) use
these, and so do the screen's detection limits and check's cost plan.

Measured at a few entries, where truncation is far below round-off: the fourth difference

    K(s) = f(x+2s) + f(x-2s) - 6 (f(x+s) + f(x-s)) + 8 (f(x+s/2) + f(x-s/2)) - 6 f(x)

(:func:`fourth_difference`: zero on cubics and on ``|t - x|``, ``sqrt(238) sigma`` from
round-off of standard deviation ``sigma``). ``gradcheck._refine.roundoff`` takes it at the
first pass's MISMATCH entries (does ``f`` compute in a lower precision than it returns?); the
forced-float32 differences (``gradcheck._lowp.f32steps``) take f's own ``sigma`` from it
(:func:`measured_sigma`), a floor under the model (``modelled(..., at_least=4 sigma)``).

>>> modelled(2.0 ** -53, (np.array([1.0]), np.array([3.0])), np.array([2.0 ** -20])).tolist() == [2.0 ** -31]
True
>>> with_measured(np.array([1e-9]), measured(np.array([1.0]), np.array([1.0 + 1e-6]), np.array([1e-5])),
...               np.array([1e-5])).round(12).tolist()
[3e-06]
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

Values = np.ndarray | float
#: ``differences(flat_indices, steps) -> (f_plus, f_minus, denominator)``.
Differencer = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray]]

#: The median of ``|N(0, 1)|``: a median of absolute values over it is a Gaussian scale.
GAUSS_MEDIAN = 0.6745
#: f's measured round-off counts this many times over in a difference's bound (:func:`with_measured`:
#: the step study's; the screen's blocks, ``modelled(..., at_least=MEASURED_SAFETY * rho)``).
MEASURED_SAFETY = 3.0
#: Entries on which :func:`measured_sigma` measures f's round-off, and its step (relative).
PROBES = 8
PROBE_STEP = 2.0 ** -12


def modelled(unit: float, values: Sequence[Values], spacing: Values = 1.0,
             at_least: Values | None = None) -> np.ndarray:
    """``unit * (|values[0]| + |values[1]| + ...) / spacing``, summed in that order; with
    ``at_least``, ``max(unit * (...), at_least) / spacing`` (a measured round-off floor)."""
    total = np.abs(values[0])
    for v in values[1:]:
        total = total + np.abs(v)
    if at_least is None:
        return unit * total / spacing
    return np.maximum(unit * total, at_least) / spacing


def fourth_difference(pair_2s: Values, pair_s: Values, pair_half: Values, base: Values) -> np.ndarray:
    """``|K(s)|`` from the sums ``f(x+ts) + f(x-ts)`` at ``t = 2, 1, 1/2`` and ``f(x)`` (module
    docstring; not-finite values pass through as NaN or inf)."""
    return np.abs(pair_2s - 6.0 * pair_s + 8.0 * pair_half - 6.0 * base)


def measured_sigma(differencer: Differencer, values: np.ndarray, base_value: float) -> tuple[float, int]:
    """The standard deviation of f's round-off (absolute), measured, and the evaluations.

    ``u * |f|`` understates it when f is a long float32 sum whose partial sums are far larger
    than its value, or when its result changes in steps of an ulp larger than a step's
    effect; both are systematic over a Richardson stencil, so the spread cannot see them.
    On up to :data:`PROBES` entries of the flat input ``values`` (seeded), ``K(s)`` at
    ``s = 2**-12 max(1, |x|)``, where truncation (fourth derivative times ``s**4``) is far
    below float32 round-off: ``sigma = median|K| / 0.6745 / sqrt(238)``.

    >>> x = np.linspace(0.5, 2.0, 8)
    >>> def diff(idx, h):
    ...     y = float(np.float32(x @ x))   # an f that does not move at these steps: no round-off seen
    ...     return np.full(idx.size, y), np.full(idx.size, y), 2 * h
    >>> sigma, used = measured_sigma(diff, x, float(np.float32(x @ x)))
    >>> float(sigma), used
    (0.0, 48)
    """
    if not np.isfinite(base_value) or not values.size:
        return 0.0, 0
    pick = np.sort(np.random.default_rng(0x32).choice(values.size, size=min(PROBES, values.size), replace=False))
    s = PROBE_STEP * np.maximum(1.0, np.abs(values[pick].astype(np.float64)))
    pair = {}
    for factor in (0.5, 1.0, 2.0):
        fp, fm, _ = differencer(pick, s * factor)
        pair[factor] = np.asarray(fp, dtype=np.float64) + np.asarray(fm, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        k = fourth_difference(pair[2.0], pair[1.0], pair[0.5], base_value)
    k = k[np.isfinite(k)]
    sigma = float(np.median(k)) / GAUSS_MEDIAN / np.sqrt(238.0) if k.size else 0.0
    return sigma, 6 * int(pick.size)


def measured(d_s: Values, d_t: Values, half_s: Values) -> np.ndarray:
    """f's round-off measured from two differences of one entry: ``|D(s) - D(t)| * s``."""
    return np.abs(d_s - d_t) * half_s


def with_measured(k_noise: Values, roundoff: Values, half: Values) -> np.ndarray:
    """The round-off of a difference at step ``half``: the model's ``k * noise`` or, when
    larger, the measured round-off ``roundoff`` over that step, ``3 * roundoff / half``
    (:data:`MEASURED_SAFETY`)."""
    return np.maximum(k_noise, MEASURED_SAFETY * roundoff / half)
