"""The claimed gradient's own round-off, measured per entry (for the referee's allowance).

The referee forgives a claim ``k*u*max|a|`` of round-off: right for a backward whose terms
are the size of its results. A backward that computes an entry by *cancellation* (a layer
norm's VJP: terms of order 1, a result of 1e-10) rounds at ``u * (size of its terms)``, far
above ``u*|a|``; judged against the exact value, that rounding is a false MISMATCH.

No call with a rescaled cotangent sees that rounding: most of it sits in quantities the
backward computes from ``x`` alone (a normalised input, an inverse deviation), the same at
every cotangent, so the claim is exactly linear in ``v`` with a slightly wrong Jacobian.
What does see it is the claim's sensitivity to its inputs at the level of their own rounding:
the claim is called once more at ``x`` and ``v`` each moved by a few ulps (random, per
entry); a backward-stable claim is entitled to that change, and every rounding inside it
changes. One draw per entry is a noisy sample (an entry can change by 0 by chance), so the
estimate of an entry is the larger of its own change and the median change over all entries.
Measured on the layer-norm VJP at ``x = 5 + v`` (scratch study, 131072 entries):
the claim's true error is at most 1.2 times that estimate (``SAFETY`` = 4 covers it thrice);
a rescaled cotangent ``v*(1 + 2**-40)`` underestimated it up to 13000 times.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

#: How far each input entry moves, in units of its dtype's unit round-off (at most).
NUDGE_ULPS = 8.0
#: The allowance is this many times the measured change.
SAFETY = 4.0

Reclaim = Callable[[np.ndarray, "np.ndarray | None"], np.ndarray]


def measure_claim_rounding(reclaim: Reclaim, x: np.ndarray, cotangent: np.ndarray | None,
                           analytic: np.ndarray, seed: int = 0, positions: np.ndarray | None = None) -> np.ndarray:
    """Per entry of ``analytic`` (flat, aligned with ``x.reshape(-1)``): ``SAFETY`` times the
    larger of ``|claim(x', v') - claim(x, v)|`` and its median over the finite entries, where
    ``x'`` and ``v'`` are ``x`` and ``v`` with each entry moved by at most ``NUDGE_ULPS`` of
    its own rounding. One call of ``reclaim(x', v')``. Entries where either claim is not
    finite get 0: no measured round-off, the referee's old allowance (a claim that turns NaN
    an ulp away is no licence to forgive). With ``positions`` (flat), only those entries'
    estimates are returned; beside the claim's own call, the measurement holds one array of
    the claim's size (the nudged inputs are dropped before the changes are taken, and the
    median partitions the changes in place).

    >>> import numpy as np
    >>> x = np.linspace(1.0, 2.0, 5)
    >>> est = measure_claim_rounding(lambda z, v: 3 * z**2, x, None, 3 * x**2)
    >>> bool(np.all(est <= 4 * 8 * 2**-52 * 3 * x**2 * 4))  # a few ulps of 3x^2 at most
    True
    """
    rng = np.random.default_rng([int(seed), 0xC1A1])
    xn = _nudged(x, rng)
    vn = None if cotangent is None else _nudged(np.asarray(cotangent), rng)
    again = np.asarray(reclaim(xn, vn), dtype=np.float64).reshape(-1)
    del xn, vn
    a = np.asarray(analytic, dtype=np.float64).reshape(-1)
    if again.shape != a.shape:
        raise ValueError(f"the claimed gradient changed shape from {a.shape} to {again.shape} "
                         "when called again at a nudged input")
    change = again if again.flags.writeable and not np.shares_memory(again, a) else again.copy()
    with np.errstate(invalid="ignore", over="ignore"):
        np.subtract(change, a, out=change)
        np.abs(change, out=change)
    mine = change.copy() if positions is None else change[np.asarray(positions)]
    finite = np.isfinite(change)
    if finite.all():
        pooled = float(np.median(change, overwrite_input=True))
    else:
        pooled = float(np.median(change[finite], overwrite_input=True)) if finite.any() else 0.0
    del change, again, finite
    out = SAFETY * np.maximum(mine, pooled)
    out[~np.isfinite(mine)] = 0.0
    return out


def _nudged(z: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``z`` with each entry times ``1 + r*NUDGE_ULPS*u`` (``r`` uniform in [-1, 1], ``u``
    the unit round-off of z's dtype), in z's dtype; a new array (the user's is untouched)."""
    z = np.asarray(z)
    if not np.issubdtype(z.dtype, np.floating):
        return z.copy()
    u = float(np.finfo(z.dtype).eps) / 2
    factor = rng.uniform(-1.0, 1.0, z.shape)  # 1 + NUDGE_ULPS*u*r, made in place (one array)
    factor *= NUDGE_ULPS * u
    factor += 1
    np.multiply(z, factor, out=factor)
    return factor.astype(z.dtype, copy=False) if z.dtype != factor.dtype else factor
