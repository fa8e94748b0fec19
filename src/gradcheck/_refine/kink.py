"""The kink test: one-sided slopes whose gap does not shrink with the step."""
from __future__ import annotations

import numpy as np

from .._core.tolerance import Tolerance
from .._differences import modelled

#: A gap between the one-sided slopes is significant above its round-off plus this many rtol.
KINK_RTOLS = 10


def kink_threshold(rtol: float, k: float) -> Tolerance:
    """The tolerance a slope gap must exceed to be a kink: ``k*noise + 10*rtol*scale``."""
    return Tolerance(KINK_RTOLS * rtol, 0.0, k)


def one_sided(raw_s, f0, unit: float):
    """``(left, right, gap, noise)`` at one step from ``raw_s = (f(x+h), f(x-h), denominator)``
    and ``f0 = f(x)``: the one-sided slopes, ``right - left``, and the gap's round-off (THE
    model, ``gradcheck._differences.noise``: ``f(x+h)``, ``f(x-h)``, ``2 f(x)`` over ``h``)."""
    fp, fm, den = raw_s
    half = den / 2.0
    right, left = (fp - f0) / half, (f0 - fm) / half
    return left, right, right - left, modelled(unit, (fp, fm, 2 * f0), half)


def kink_test(raw, base_value, unit, rtol, k):
    """One-sided slopes at steps h/2, h, 2h. At a smooth point their gap is ~f''*h and
    doubles with h; at a kink it stays put. A kink needs a gap well above round-off and
    stable (within 25%) across the three steps. ``base_value`` is f at x, a scalar or one per
    entry (an entry whose base value is not finite gets no kink)."""
    count = raw[1.0][0].shape[0]
    if base_value is None or not np.isfinite(base_value).any():
        nan = np.full(count, np.nan)
        return nan, nan.copy(), np.zeros(count, dtype=bool)
    f0 = np.asarray(base_value, dtype=np.float64)  # a scalar, or one per entry (its slice's)
    gaps, lefts, rights, noise = [], [], [], []
    with np.errstate(invalid="ignore", divide="ignore"):
        for s in (0.5, 1.0, 2.0):
            for out, value in zip((lefts, rights, gaps, noise), one_sided(raw[s], f0, unit)):
                out.append(value)
        g0, g1, g2 = gaps
        scale = np.maximum(np.abs(lefts[0]), np.abs(rights[0]))
        significant = np.abs(g0) > kink_threshold(rtol, k).bound(scale, noise[0])
        stable = (np.abs(g0 - g1) <= 0.25 * np.abs(g0)) & (np.abs(g1 - g2) <= 0.25 * np.abs(g1))
        kink = significant & stable & np.isfinite(g0)
    return lefts[0], rights[0], kink
