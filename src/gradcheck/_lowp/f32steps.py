"""Differences of a function that computes in float32 whatever it is given.

Such an ``f`` (``astype(np.float32)`` inside, a numba or C float32 kernel) cannot be
differenced on a float64 upcast: it rounds the input back. Its central difference at step
``h`` carries truncation ``~h^2 f'''/6`` and round-off ``~u |f| / h`` with ``u = 2**-24``;
no single step makes both small (at the optimum, ``h ~ 0.01``, each is ~1e-4 of a typical
entry). Richardson extrapolation across steps removes the ``h^2`` term, so the step can be
large and the round-off small:

    D(h) = (f(x+h) - f(x-h)) / realized step          steps h, 2h, 4h  (h = F32_STEP * max(1, |x|))
    R1 = (4 D(h) - D(2h)) / 3      R2 = (4 D(2h) - D(4h)) / 3          truncation O(h^4)
    numeric = R1
    noise   = |R1 - R2| + u (|f(x+h)| + |f(x-h)|) / |realized step|

``|R1 - R2|`` is the *measured* spread: it holds R2's truncation (16 times R1's) and the
round-off of both, as f produced it, so a float32 kernel whose round-off is far above
``u |f|`` (long sums) is measured, not modelled; the model term keeps a floor where the
spread happens to cancel. 6 evaluations per entry instead of 2. Measured on sin(x) x^2,
logsumexp and log1p(x^2) in float32 (64 entries each, steps 2**-6 to 2**-3): the error of
R1 stayed within 0.7 of this noise, so the rule's ``k * noise`` with k = 2 has a margin of 3.
Entries whose noise is above 1.5e-4 of their value are UNCHECKED: float32 evaluations of f
cannot resolve them (a logsumexp over 128 entries: gradients ~1/128 against |f| ~ 5). The verdict rule is the
usual one (``_classify``) with the :data:`PRESET` below: rtol 2e-4, PASS share 5e-4, so a
claim 1e-3 off is never a PASS.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .._core.config import Config

__all__ = ["F32_STEP", "PRESET", "richardson"]

#: Base relative step for float32 Richardson: 2**-5 (then 2**-4 and 2**-3).
F32_STEP = 2.0 ** -5
#: The forced-float32 preset: the numeric side is good to ~1e-5..1e-4 of an entry.
PRESET = Config(step=F32_STEP, rtol=2e-4, atol=0.0, noise_factor=2.0, resolution=5e-4, refine=False,
                refine_noisy=False, dtype="float32")
_UNIT = 2.0 ** -24


def richardson(differencer: Callable, flat_idx: np.ndarray, steps: np.ndarray,
               first: tuple[np.ndarray, np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray, int]:
    """``(numeric, noise, evaluations)`` from ``first`` (the differences at ``steps``) and
    two more passes at ``2*steps`` and ``4*steps``.

    >>> import numpy as np
    >>> x = np.array([0.3, -1.2], np.float32)
    >>> def diff(idx, h):
    ...     xp = (x[idx] + h.astype(np.float32)).astype(np.float32)
    ...     xm = (x[idx] - h.astype(np.float32)).astype(np.float32)
    ...     return (np.sin(xp).astype(np.float64), np.sin(xm).astype(np.float64),
    ...             xp.astype(np.float64) - xm.astype(np.float64))
    >>> h = np.full(2, F32_STEP)
    >>> n, noise, used = richardson(diff, np.arange(2), h, diff(np.arange(2), h))
    >>> bool(np.all(np.abs(n - np.cos(x.astype(np.float64))) < 1e-5)), used
    (True, 8)
    """
    slopes = []
    plus = minus = denom = None
    for k, diffs in enumerate((first, differencer(flat_idx, 2 * steps), differencer(flat_idx, 4 * steps))):
        fp, fm, dn = (np.asarray(d, dtype=np.float64) for d in diffs)
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            slopes.append((fp - fm) / dn)
        if k == 0:
            plus, minus, denom = fp, fm, dn
    d1, d2, d4 = slopes
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        r1 = (4 * d1 - d2) / 3
        r2 = (4 * d2 - d4) / 3
        model = _UNIT * (np.abs(plus) + np.abs(minus)) / np.abs(denom)
        noise = np.abs(r1 - r2) + model
        # A step that left f's domain (not finite at 2h or 4h): the plain difference there,
        # with the spread to 2h as its noise (NaN, hence NONFINITE, if that is not finite).
        bad = ~np.isfinite(r1) | ~np.isfinite(noise)
        r1[bad], noise[bad] = d1[bad], (np.abs(d1 - d2) + model)[bad]
    return r1, noise, 4 * int(np.size(flat_idx))
