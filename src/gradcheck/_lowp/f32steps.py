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

``|R1 - R2|`` is the *measured* spread: R2's truncation (16 times R1's, so a quarter of it
still covers R1's four times over) and the round-off of both, as f produced it; the model
term covers R1's round-off where the spread happens to cancel, with ``sigma``, f's own
round-off measured on a few entries (:func:`measure_roundoff`), in place of ``u |f|`` where
it is larger (a float32 sum whose partial sums dwarf its value). 6 evaluations per entry
instead of 2, plus 48. Measured on sin(x) x^2, logsumexp, ``tanh(A @ W) * B``, layer norms
and ``x^3 - x`` over 1e-2..1e2 (7,296 entries, 6 seeds, f computing in float32): the
numeric error stayed within 0.61 of the whole tolerance (k = 3); with the whole spread and
k = 2 it reached 0.90, with 2 points more of UNCHECKED entries. Entries whose noise is above
1e-4 of their value are UNCHECKED: float32 evaluations of f cannot resolve them (a
logsumexp over 128 entries: gradients ~1/128 against |f| ~ 5). The
verdict rule is the usual one (``_classify``) with the :data:`PRESET` below: rtol 2e-4,
PASS share 5e-4, so a claim 1e-3 off is never a PASS.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .._core.config import Config

__all__ = ["F32_STEP", "PRESET", "measure_roundoff", "richardson"]

#: Base relative step for float32 Richardson: 2**-5 (then 2**-4 and 2**-3).
F32_STEP = 2.0 ** -5
#: The forced-float32 preset: the numeric side is good to ~1e-5..1e-4 of an entry.
PRESET = Config(step=F32_STEP, rtol=2e-4, atol=0.0, noise_factor=3.0, resolution=5e-4, refine=False,
                refine_noisy=False, dtype="float32")
_UNIT = 2.0 ** -24
#: |R1 - R2| is mostly R2's truncation (16 times R1's) or the round-off of both: a quarter
#: of it still covers R1's truncation 4 times over; the model term covers the round-off.
SPREAD_SHARE = 4.0


#: Entries on which f's own round-off is measured, and the probe's step (relative).
PROBES = 8
PROBE_STEP = 2.0 ** -12


def measure_roundoff(differencer: Callable, values: np.ndarray, base_value: float) -> tuple[float, int]:
    """The standard deviation of f's round-off (absolute), measured, and the evaluations.

    ``u * |f|`` understates it when f is a long float32 sum whose partial sums are far larger
    than its value, or when its result changes in steps of an ulp larger than a step's
    effect; both are systematic over a Richardson stencil, so the spread cannot see them.
    On up to :data:`PROBES` entries (seeded), ``K(s) = f(x+2s) + f(x-2s) - 6 (f(x+s) +
    f(x-s)) + 8 (f(x+s/2) + f(x-s/2)) - 6 f(x)`` (zero on cubics and on ``|t - x|``;
    ``sqrt(238) sigma`` from round-off) at ``s = 2**-12 max(1, |x|)``, where truncation
    (fourth derivative times ``s**4``) is far below float32 round-off:
    ``sigma = median|K| / 0.6745 / sqrt(238)``.
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
        k = np.abs(pair[2.0] - 6.0 * pair[1.0] + 8.0 * pair[0.5] - 6.0 * base_value)
    k = k[np.isfinite(k)]
    sigma = float(np.median(k)) / 0.6745 / np.sqrt(238.0) if k.size else 0.0
    return sigma, 6 * int(pick.size)


def richardson(differencer: Callable, flat_idx: np.ndarray, steps: np.ndarray,
               first: tuple[np.ndarray, np.ndarray, np.ndarray],
               sigma: float = 0.0) -> tuple[np.ndarray, np.ndarray, int]:
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
    plus = minus = denom = np.empty(0)  # set at k == 0
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
        model = np.maximum(_UNIT * (np.abs(plus) + np.abs(minus)), 4.0 * sigma) / np.abs(denom)
        noise = np.abs(r1 - r2) / SPREAD_SHARE + model
        # A step that left f's domain (not finite at 2h or 4h): the plain difference there,
        # with the spread to 2h as its noise (NaN, hence NONFINITE, if that is not finite).
        bad = ~np.isfinite(r1) | ~np.isfinite(noise)
        r1[bad], noise[bad] = d1[bad], (np.abs(d1 - d2) + model)[bad]
    return r1, noise, 4 * int(np.size(flat_idx))
