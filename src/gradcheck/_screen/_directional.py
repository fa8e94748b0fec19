"""Directional derivatives by central differences along a signed block, with bounds.

Along the direction ``d`` (``d_i = s_i w_i`` on the block's entries, 0 elsewhere; ``s_i``
the draw's sign, ``w_i = max(1, |x_i|)`` the entry's step scale, as in ``check``) the
points ``x +- t d`` are rounded in ``x``'s dtype; the realized step of entry ``i`` is
``delta_i = (x_i + t d_i) - (x_i - t d_i)``. The claimed slope along the realized step is
``C(t) = sum_i a_i delta_i / 2t`` (summed exactly: products split without error, then
``math.fsum``), the numeric one ``D(t) = (f(x + t d) - f(x - t d)) / 2t``. Their
difference ``Delta(t) = C(t) - D(t)`` estimates ``sum_i s_i w_i e_i`` (``e`` the claim's
error) up to truncation and round-off. Steps are powers of two, so ``/ 2t`` is exact.

Each direction is measured at ``t, 2t, 4t``. The estimate and its bound are THE estimator's
(:func:`gradcheck._differences.best_estimate`, the step study's): the candidates ``Delta(t)``,
``Delta(2t)`` (bound: round-off plus ``|Delta(2s) - Delta(s)| / 3``, the measured O(s^2)
truncation) and the Richardson value ``R(t) = (4 Delta(t) - Delta(2t)) / 3`` (bound: its
round-off plus ``|R(t) - R(2t)|``); the candidate with the smallest bound is kept. Round-off
is THE model's (:func:`gradcheck._differences.modelled`): the larger of ``k u (|f+| + |f-|)``
and ``3 rho``, over ``2s``, where ``rho`` is f's round-off measured once by
:func:`choose_step` (as the step study measures it, :func:`gradcheck._differences.measured`:
``|D(s) - D(2s)| s`` at small steps).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .._differences import MEASURED_SAFETY, best_estimate, measured, modelled, truncation
from ._fsum import fdot, fsum2

#: The steps each direction is measured at, as multiples of the chosen step ``t``.
FACTORS = (1.0, 2.0, 4.0)
#: Step search range (exponents of two) and where it starts relative to ``config.step``.
MIN_EXPONENT, MAX_EXPONENT = -44, -1
SEARCH_WIDTH = 5
#: f's round-off is measured at steps near ``u**NOISE_EXPONENT`` (2**-40 in float64).
NOISE_EXPONENT = 0.75
#: The search walks up until a longer step's bound is this many times the best one: the
#: truncation of the Richardson value (~t**4, 16x per doubling) shows, so the best step is
#: behind. Stopping at the first dip instead stops at the plain difference's optimum, where
#: the bound only levels off (see :func:`choose_step`).
RISE = 4.0


def split_product(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``a*b`` as ``p + err`` exactly (Dekker's TwoProduct, vectorized)."""
    with np.errstate(over="ignore", invalid="ignore"):
        p = a * b
        ah, al = _split(a)
        bh, bl = _split(b)
        err = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    bad = ~np.isfinite(err)
    if bad.any():  # |a|, |b| near overflow: the product alone (a rounding of u|ab| at most)
        err = np.where(bad, 0.0, err)
    return p, err


def _split(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    c = 134217729.0 * a  # 2**27 + 1
    hi = c - (c - a)
    return hi, a - hi


def exact_dot(a: np.ndarray, b: np.ndarray) -> float:
    """``sum(a * b)`` correctly rounded (every product split exactly, then ``math.fsum``).

    >>> exact_dot(np.array([1e16, 1.0, -1e16]), np.array([1.0, 1.0, 1.0]))
    1.0
    """
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    fast = fdot(a, b)  # the same sum in one kernel pass (a whole model's blocks); NaN: not applicable
    if not np.isnan(fast):
        return fast
    p, err = split_product(a, b)
    return fsum2(p, err)  # math.fsum's result, summed in a kernel


@dataclass(frozen=True)
class Points:
    """The two points of one central difference along a block: the values written at the
    block's entries (in ``x``'s dtype) and the realized steps ``delta`` (float64)."""

    idx: np.ndarray
    plus: np.ndarray
    minus: np.ndarray
    delta: np.ndarray


def points(x_flat: np.ndarray, idx: np.ndarray, direction: np.ndarray, t: float,
           old: np.ndarray | None = None) -> Points:
    """``x +- t d`` on the block ``idx`` (``direction`` = ``s_i w_i`` there), rounded in
    ``x``'s dtype exactly as the evaluation will see them. ``old``: ``x_flat[idx]``, when the
    caller has it (a block measured at three steps gathers it once)."""
    old = x_flat[idx] if old is None else old
    h = (t * direction).astype(x_flat.dtype, copy=False)
    with np.errstate(over="ignore", invalid="ignore"):
        plus, minus = old + h, old - h
        delta = np.subtract(plus, minus, dtype=np.float64)
    return Points(idx, plus, minus, delta)


def claimed_slope(analytic_flat: np.ndarray, pts: Points, t: float, claim: np.ndarray | None = None) -> float:
    """``C(t) = sum_i a_i delta_i / 2t``, correctly rounded. ``claim``: ``analytic_flat[pts.idx]``,
    when the caller has it."""
    claim = analytic_flat[pts.idx] if claim is None else claim
    return exact_dot(claim, pts.delta) / (2.0 * t)


@dataclass(frozen=True)
class Estimate:
    """``Delta`` (claimed minus numeric slope) per direction and a bound on its error."""

    delta: np.ndarray
    bound: np.ndarray


def roundoff_per_step(f_plus, f_minus, t, *, unit: float, k: float, rho: float):
    """Round-off of ``D(t)``: THE model, ``k u (|f+| + |f-|)`` or the measured ``rho`` when
    larger, over ``2t``."""
    with np.errstate(invalid="ignore", over="ignore"):
        return modelled(k * unit, (f_plus, f_minus), 2.0 * t, at_least=MEASURED_SAFETY * rho)


def estimate(deltas: np.ndarray, noises: np.ndarray) -> Estimate:
    """The best of ``Delta(t)``, ``Delta(2t)``, ``R(t)`` and its bound, per direction: THE
    estimator (:func:`gradcheck._differences.best_estimate`).

    ``deltas`` and ``noises`` have shape ``(3, M)``: ``Delta`` and its round-off at ``t,
    2t, 4t`` for ``M`` directions.
    """
    with np.errstate(invalid="ignore", over="ignore"):
        delta, bound = best_estimate(list(deltas), list(noises))
    return Estimate(delta, bound)


def along_trio(samples: dict[float, tuple[float, float, float]], t: float, *, unit: float, k: float,
               rho: float) -> tuple[Estimate, float]:
    """One direction's estimate from its samples at ``t, 2t, 4t`` (``samples[s] = (f(x+sd),
    f(x-sd), C(s))``, as :func:`choose_step` keeps them), and the rounding of its claimed
    slopes, ``u max |C|``."""
    trio = [samples[t * f] for f in FACTORS]
    steps = t * np.asarray(FACTORS)[:, None]
    fp, fm, claims = (np.array([[v[j]] for v in trio]) for j in range(3))
    with np.errstate(invalid="ignore", over="ignore"):
        deltas = claims - (fp - fm) / (2.0 * steps)
    noises = roundoff_per_step(fp, fm, steps, unit=unit, k=k, rho=rho)
    return estimate(deltas, noises), unit * float(np.max(np.abs(claims)))


@dataclass(frozen=True)
class StepChoice:
    """The step every direction is measured at, and f's measured round-off ``rho``."""

    t: float
    rho: float
    bound: float                       # the best bound reached on the calibration direction
    evaluations: int
    samples: dict[float, tuple[float, float, float]]  # t -> (f+, f-, C) on that direction

    def estimate(self, *, unit: float, k: float, rho: float) -> tuple[Estimate, float]:
        """The direction's estimate at the chosen step, and its claim's rounding (:func:`along_trio`)."""
        return along_trio(self.samples, self.t, unit=unit, k=k, rho=rho)


def choose_step(
    sample: Callable[[float], tuple[float, float, float]], start: float, *, unit: float, k: float,
) -> StepChoice:
    """The step ``t`` (a power of two) at which one direction's estimate has the smallest
    bound. ``sample(t)`` returns ``(f(x+td), f(x-td), C(t))``.

    First f's round-off ``rho`` is measured where nothing else shows: at steps near
    ``u**0.75`` (three of them), truncation and kinks within the step are negligible and
    ``|D(s) - D(2s)| s`` is round-off alone. Then the search starts at the powers of two
    around ``start`` and walks up until a longer step's bound has risen to :data:`RISE`
    times the best (or down while the best sits at the short end and truncation dominates
    there), as far as ``2**MIN_EXPONENT .. 2**MAX_EXPONENT``.

    Why not stop at the first dip: each step's bound is the smallest of three candidates',
    the plain differences' (round-off ~1/t, truncation ~t**2) and Richardson's (round-off
    ~1/t, truncation ~t**4). Where the plain differences' truncation starts to show, their
    bound turns up while Richardson's is still falling with its round-off: the smallest
    levels off, with a shallow dip whose position round-off decides, often several doublings
    below Richardson's own optimum (on a tanh layer, 16-entry blocks: ``2**-16`` and a bound
    ~10x above the one at ``2**-11``). Only Richardson's truncation, 16x per doubling, makes
    the bound rise steeply; a bound at :data:`RISE` x the best above it marks the optimum as
    passed."""
    tiny = int(round(NOISE_EXPONENT * math.log2(unit)))
    probe = {2.0 ** e: sample(2.0 ** e) for e in (tiny, tiny + 1, tiny + 2)}
    rho = _measured_roundoff(probe, sorted(probe))
    k0 = int(np.clip(round(math.log2(start)), MIN_EXPONENT, MAX_EXPONENT - SEARCH_WIDTH + 1))
    exps = list(range(k0, k0 + SEARCH_WIDTH))
    got: dict[float, tuple[float, float, float]] = {}
    while True:
        for e in exps:
            t = 2.0 ** e
            if t not in got:
                got[t] = sample(t)
        steps = sorted(got)
        bounds = [_triple_bound(got, steps[j], unit, k, rho) for j in range(len(steps) - 2)]
        best = int(np.nanargmin(bounds)) if np.isfinite(bounds).any() else 0
        lo, hi = int(round(math.log2(steps[0]))), int(round(math.log2(steps[-1])))
        if hi < MAX_EXPONENT and not _risen(bounds, best):
            exps = [hi + 1, hi + 2]
        elif best == 0 and lo > max(MIN_EXPONENT, tiny) and _truncation_dominated(got, steps[0], unit, k, rho):
            exps = [lo - 2, lo - 1]
        else:
            break
        exps = [e for e in exps if MIN_EXPONENT <= e <= MAX_EXPONENT]
        if not exps:
            break
    t = steps[best]
    evaluations = 2 * (len(got) + len(probe))
    return StepChoice(t=t, rho=rho, bound=float(bounds[best]), evaluations=evaluations, samples=got)


def _risen(bounds: list[float], best: int) -> bool:
    """Whether a step longer than the best has a bound at :data:`RISE` x the best (or an
    infinite one: f stopped being finite along the direction)."""
    return any(not b < RISE * bounds[best] for b in bounds[best + 1:])


def _deltas(got, t) -> tuple[float, float]:
    fp, fm, c = got[t]
    return c - (fp - fm) / (2.0 * t), fp


def _measured_roundoff(got, steps) -> float:
    """f's round-off in absolute units from the three smallest steps (an upper bound: it
    includes whatever truncation is left there), as the step study measures it."""
    out = 0.0
    for s in steps[:3]:
        if 2 * s in got:
            d1 = _deltas(got, s)[0]
            d2 = _deltas(got, 2 * s)[0]
            if np.isfinite(d1) and np.isfinite(d2):
                out = max(out, float(measured(d1, d2, s)))
    return out


def _triple_bound(got, t, unit, k, rho) -> float:
    if 4 * t not in got:
        return np.inf
    return float(along_trio(got, t, unit=unit, k=k, rho=rho)[0].bound[0])


def _truncation_dominated(got, t, unit, k, rho) -> bool:
    """Whether the smallest step's bound is mostly truncation (a smaller step may help)."""
    if 2 * t not in got:
        return False
    d1 = _deltas(got, t)[0]
    d2 = _deltas(got, 2 * t)[0]
    fp, fm, _ = got[t]
    noise = roundoff_per_step(fp, fm, t, unit=unit, k=k, rho=rho)
    return bool(truncation(d1, d2) > noise)
