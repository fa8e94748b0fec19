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
    noise   = |R1 - R2| / 4 + max(u (|f(x+h)| + |f(x-h)|), 4 sigma) / |realized step|

The estimate and its bound are THE Richardson's (:func:`gradcheck._differences.spread_estimate`,
where the quarter of the spread is argued), the model term THE round-off model's with ``sigma``,
f's own round-off measured on a few entries (:func:`gradcheck._differences.measured_sigma`), in
place of ``u |f|`` where it is larger (a float32 sum whose partial sums dwarf its value); this
module asks for the points. 6 evaluations per entry instead of 2, plus 48. Measured on
sin(x) x^2, logsumexp, ``tanh(A @ W) * B``, layer norms and ``x^3 - x`` over 1e-2..1e2 (7,296
entries, 6 seeds, f computing in float32): the numeric error stayed within 0.61 of the whole
tolerance (k = 3); with the whole spread and k = 2 it reached 0.90, with 2 points more of
UNCHECKED entries. Entries whose noise is above 1e-4 of their value are UNCHECKED: float32
evaluations of f cannot resolve them (a logsumexp over 128 entries: gradients ~1/128 against
|f| ~ 5). The verdict rule is the usual one (``_classify``) with the :data:`PRESET` below: rtol 2e-4,
PASS share 5e-4, so a claim 1e-3 off is never a PASS.
"""
from __future__ import annotations

import numpy as np

from .._core.config import Config
from .._differences import Differencer, measured_sigma, modelled, spread_estimate

__all__ = ["F32_STEP", "PRESET", "estimates"]

#: Base relative step for float32 Richardson: 2**-5 (then 2**-4 and 2**-3).
F32_STEP = 2.0 ** -5
#: The forced-float32 preset: the numeric side is good to ~1e-5..1e-4 of an entry.
PRESET = Config(step=F32_STEP, rtol=2e-4, atol=0.0, noise_factor=3.0, resolution=5e-4, refine=False,
                refine_noisy=False, dtype="float32")
_UNIT = 2.0 ** -24


def estimates(differencer: Differencer, steps: np.ndarray, first: tuple[np.ndarray, np.ndarray, np.ndarray],
              values: np.ndarray, base_value: float) -> tuple[tuple[np.ndarray, np.ndarray], int]:
    """``((numeric, noise), evaluations)`` for every entry of the flat input ``values``:
    ``first``, the differences at ``steps``, and two more passes at ``2*steps`` and
    ``4*steps``; f's round-off measured around ``base_value = f(x)``. ``differencer`` returns
    the realized step f sees as its denominator.

    >>> x = np.array([0.3, -1.2], np.float32).astype(np.float64)
    >>> def diff(idx, h):
    ...     xp, xm = (x[idx] + h).astype(np.float32), (x[idx] - h).astype(np.float32)
    ...     return (np.sin(xp).astype(np.float64), np.sin(xm).astype(np.float64),
    ...             xp.astype(np.float64) - xm.astype(np.float64))
    >>> h = np.full(2, F32_STEP)
    >>> (n, noise), used = estimates(diff, h, diff(np.arange(2), h), x, float(np.sin(np.float32(0.3))))
    >>> bool(np.all(np.abs(n - np.cos(x)) < 1e-5)), used
    (True, 20)
    """
    sigma, probed = measured_sigma(differencer, values, base_value)
    everyone = np.arange(steps.size)
    plus, minus, denom = (np.asarray(d, dtype=np.float64) for d in first)
    d_h, d_2h, d_4h = (_slope(*diffs) for diffs in (
        (plus, minus, denom), differencer(everyone, 2 * steps), differencer(everyone, 4 * steps)))
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        model = modelled(_UNIT, (plus, minus), np.abs(denom), at_least=4.0 * sigma)
    return spread_estimate(d_h, d_2h, d_4h, model), 4 * int(steps.size) + probed


def _slope(fp: np.ndarray, fm: np.ndarray, denom: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        return (np.asarray(fp, dtype=np.float64) - np.asarray(fm, dtype=np.float64)) / np.asarray(denom, np.float64)
