"""The detection limit per entry, the miss probability of the sign draws, and the words.

Screening limit. In every draw each entry sits in a chain of blocks from its top block
down to the block where it was cleared; a block with bound ``beta`` and claim rounding
``gamma`` disagrees whenever a single error satisfies ``w_i |e_i| > tau = 2 beta + gamma``
(see :mod:`._bisect`). Bisection follows such an error only if every block on its way
down disagrees too, so the entry's limit in a draw is the largest ``tau`` on its chain,
over ``w_i``; blocks below the last one measured are taken to be no worse than the worst
ratio ``tau(half) / tau(block)`` seen in this screen. Over the draws, the largest.

Entry-wise floor. A localized entry is judged by ``check``'s rule, which calls it
MISMATCH only beyond ``atol + rtol max(|a|, |n|) + k noise``; an error below that is not a
failure whatever the screen sees. The stated limit is the larger of the two.

That floor leaves out what check's step study forgives once an entry is a suspect: its
bound at ``h/2 .. 16h`` (measured truncation included, ~5 h^2 times f's third derivative
along the entry), which varies from entry to entry by 1e3x on a tanh layer and cannot be
known without differencing the entry. At rtol=1e-12 it reached 5x-1e4x the stated limit
(a full check on tanh layers 64x64, A, B, W ~ N(0, s^2), s = 0.5 .. 4), and errors 1.5x
the limit came out PASS at 1, 3, 5, 5 of 12 entries. A floor from a sample (the largest
tolerance/h^2 of 8-32 sampled entries, x2-x8 margin; simulated on the s = 4 layer's full
check) left 0.1-7% of the entries below check's tolerance with the median limit inflated
50-780x. So the promise is kept at the judgement instead: a localized entry whose check
verdict cannot exclude an error above this floor (``|a - n|`` plus check's noise bound
reaches it) is measured along its own direction with the screen's estimator (its own
step search, Richardson and bound; :meth:`._entrywise.EntryJudge._along`) and judged by
the same rule with that bound. Only localized entries pay for it (~20 evaluations each).

Miss probability. A single error above the limit disagrees in every draw (a bound, not a
chance). Several errors can cancel inside one block: given the other signs, at most one
of the two signs of ``s_i`` makes ``|s_i w_i e_i + rest| <= tau`` when ``w_i |e_i| > tau``,
so one draw misses with probability at most 1/2, and only if another error shares the
block (chance about ``1/B`` for each other error, the blocks being random). ``R``
independent draws: at most ``2**-R`` whatever the other errors, ``(1/(2B))**R`` for two.
(The argument holds the other errors fixed while ``s_i`` is drawn. Which entries bisection
localizes, and so which errors are left to cancel, depends on the signs too; for two
errors that does not matter and the tests measure the stated rate, for three or more
sharing one block the bound is the natural reading rather than a proof.)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._core.sparse import WhereRead
from .._core.tolerance import Tolerance
from .._differences import MEASURED_SAFETY, modelled

#: The step (times h) at which check's quick look re-differences a noisy PASS
#: (``gradcheck._refine.quick.QUICK_FACTORS[0]``).
QUICK_LOOK_FACTOR = 8.0


class Product(WhereRead):
    """``share * a * b`` per entry, computed where it is read (``p[idx]``, the same bits as
    ``(share * a * b)[idx]``) instead of held: the bisection's relevance slack and the
    measurer's worth, which a whole model would otherwise pay 16 bytes per entry for."""

    def __init__(self, a: Any, b: Any, share: float | None = None) -> None:
        super().__init__(np.size(b))
        self.a, self.b, self.share = a, b, share

    def _at(self, key: Any) -> np.ndarray:
        a = self.a[key]
        return (a if self.share is None else self.share * a) * self.b[key]


def upward32(values: Any) -> np.ndarray:
    """``values`` as float32, each rounded up (a stated limit must never shrink by rounding).

    >>> float(upward32(np.array([0.1]))[0]) >= 0.1
    True
    """
    values = np.asarray(values, dtype=np.float64)
    with np.errstate(over="ignore"):  # beyond float32's range: inf, which is above it
        out = values.astype(np.float32)
    low = out.astype(np.float64) < values
    out[low] = np.nextafter(out[low], np.float32(np.inf))
    return out


def screening_limit(tau: np.ndarray, cleared: np.ndarray, weights: np.ndarray, depth_ratio: float) -> np.ndarray:
    """Per entry (flat): the largest ``tau / w`` over the draws, inf unless cleared in all."""
    with np.errstate(invalid="ignore", divide="ignore"):
        per_draw = tau * max(1.0, depth_ratio) / weights[None, :]
    limit = np.max(per_draw, axis=0)
    return np.where(cleared.all(axis=0), limit, np.inf)


def entrywise_floor(analytic: np.ndarray, *, rtol: float, atol: float, k: float, unit: float,
                    f0: float, steps: np.ndarray, rho: float = 0.0) -> np.ndarray:
    """The smallest error ``check``'s rule calls MISMATCH at each entry. Its round-off
    term is the larger of the model ``u (|f+| + |f-|) / 2s ~ u |f0| / s`` and the step
    study's ``MEASURED_SAFETY rho / 2s`` with ``rho`` f's measured round-off (far above
    ``u |f0|`` when f sums many terms that cancel: measured 60x on a tanh layer, where the
    model alone stated limits 10x below what check's rule can flag at rtol=1e-12), at
    ``s = 8h``, the step at which ``check``'s quick look certifies a PASS whose tolerance
    is mostly round-off (entries whose tolerance is not round-off do not depend on it)."""
    # THE round-off model with f(x +- s) ~ f0: u (|f+| + |f-|) / 2s ~ u |f0| / s
    noise = modelled(unit, (f0,), QUICK_LOOK_FACTOR * steps, at_least=0.5 * MEASURED_SAFETY * rho)
    return Tolerance(rtol, atol, k).bound(np.abs(analytic), noise) / max(1e-12, 1.0 - rtol)


def miss_probability(draws: int, blocks: int) -> tuple[float, float]:
    """(worst case whatever the other errors, two errors of equal size) for one error
    above the limit to escape every draw."""
    return 0.5 ** draws, (1.0 / (2.0 * max(1, blocks))) ** draws


def describe(limit: np.ndarray, analytic: np.ndarray, *, draws: int, blocks: int, screened: int,
             own: np.ndarray | None = None) -> str:
    """The sentence on what the screen could see, e.g. "every entry screened with 2 sign
    draws of 16 blocks; a single-entry error above 3e-07 rms(g) (2e-05 relative at the
    median entry) would have been found ..."."""
    finite = np.isfinite(limit)
    if not finite.any():
        return sentence(Seen(0, limit.size, 0.0, 0.0, 0.0, None), draws=draws, blocks=blocks, screened=screened)
    rms = float(np.sqrt(np.mean(np.square(analytic)))) if analytic.size else 0.0
    med = float(np.median(limit[finite]))
    rel = np.abs(limit[finite]) / np.maximum(np.abs(analytic[finite]), np.finfo(float).tiny)
    alone = None
    if own is not None and np.isfinite(own[finite]).any():
        alone = float(np.median(own[finite]))
    seen = Seen(int(finite.sum()), limit.size, rms, med, float(np.median(rel)), alone)
    return sentence(seen, draws=draws, blocks=blocks, screened=screened)


@dataclass(frozen=True)
class Seen:
    """What :func:`sentence` says: entries with a finite limit (of ``total``), rms of the
    claim, the median limit, the median limit relative to the claim, and the blocks' own
    median limit (None: not known)."""

    finite: int
    total: int
    rms: float
    median: float
    relative: float
    alone: float | None


def sentence(seen: Seen, *, draws: int, blocks: int, screened: int) -> str:
    """:func:`describe`'s words from its numbers (a whole model computes them per name, in chunks)."""
    worst, pair = miss_probability(draws, blocks)
    odds = (f"an error above it escapes only if others cancel it in every draw: probability "
            f"<= {worst:.3g} whatever the others, <= {pair:.2g} for two errors of equal size")
    if not seen.finite:
        return f"no entry was cleared by the screen ({draws} sign draws of {blocks} blocks)"
    rms, med = seen.rms, seen.median
    scale = f"{med / rms:.2g} rms(g)" if rms > 0 else f"{med:.2g}"
    every = "every entry" if seen.finite == seen.total else f"{seen.finite} of {seen.total} entries"
    blocks_alone = ""
    if seen.alone is not None and seen.alone < 0.5 * med:
        blocks_alone = (f"; the blocks alone resolve {seen.alone / rms:.2g} rms(g), check's tolerance "
                        "(config.rtol) sets the rest" if rms > 0 else "")
    return (f"{every} screened with {draws} sign draw{'s' if draws != 1 else ''} of {blocks} blocks "
            f"({screened} cleared without an entry-wise look): a single-entry error above {scale} "
            f"({seen.relative:.2g} relative at the median entry, {med:.3g} absolute) would "
            f"have been found{blocks_alone}; {odds}")
