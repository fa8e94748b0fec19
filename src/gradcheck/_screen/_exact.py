"""The arbitrary-precision path: exact directional derivatives of blocks, where ``f`` runs
on :mod:`gradcheck.mp` arrays.

Finite differences along a block know its directional derivative only to their truncation
and round-off (``._directional``); for an ``f`` whose value is large next to its slopes, or
a tolerance tighter than float64 differences can resolve, that bound is what sets the
detection limit. When ``f`` is unmodified numpy code that runs on ``gradcheck.mp`` object
arrays, the directional derivative along a block's signed direction is computed instead
at two working precisions (:func:`gradcheck.mp.mp_directional_derivative`); its certified
error is far below float64's round-off, so a block's threshold becomes the claim's own
rounding plus the relevance slack, and an entry's limit becomes what ``check``'s rule can
tell *against the exact value*: ``atol + rtol |a_i| + k u max|a|`` (:func:`exact_floor`).
Localized entries are then judged against their exact derivatives (the referee), so the
lower limit is one the entry-wise verdict can keep.

This is for small problems only: an evaluation on object arrays costs 10^3-10^4 times a
float64 one, and each block takes about ten of them. The screen uses the path where the
referee would run automatically (``x`` of at most a few thousand entries, ``f`` cheap at
arbitrary precision: its blocks are small) and the limit without it is more than twice
that floor (finite differences cannot resolve the blocks, or check's entry-wise rule on
finite differences cannot tell that small an error); ``exact=True`` asks for it whatever
the cost, ``exact=False`` never.
Before it is trusted it must agree with the finite-difference estimates on every block of
the first draw (within both bounds): an ``f`` that computes another function on object
arrays than on floats (a branch on the dtype) is refused, as the complex step is.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._core.tolerance import Tolerance
from ._directional import exact_dot
from ._measure import BudgetExhausted, Measured, Measurer, disagreement

#: Evaluations of f (at arbitrary precision) per block: five points at two precisions.
EVALS_PER_BLOCK = 10
#: exact="auto": the path's estimated time (top level and bisection) must stay within this.
AUTO_SECONDS = 5.0
#: Precision may rise this many digits above ``digits`` for a block that cancels badly,
#: until MIN_DIGITS agree (far more than a comparison with a float64 claim can use).
EXTRA_DIGITS = 40
MIN_DIGITS = 14
#: exact="auto" uses the path when the median entry's limit without it (finite differences,
#: or the complex step, and check's entry-wise rule) is above this many times the exact floor.
GAIN = 2.0


def exact_floor(analytic: np.ndarray, *, rtol: float, atol: float, k: float, unit: float,
                claim_scale: float) -> np.ndarray:
    """The smallest error ``check``'s rule calls MISMATCH against an exact value (the
    referee's tolerance without the exact value's own, negligible, error bound)."""
    rule = Tolerance(rtol, atol, k)
    return rule.against_exact(np.abs(analytic), rule.round_off(unit, claim_scale)) / max(1e-12, 1.0 - rtol)


@dataclass
class ExactProbe:
    """Exact directional derivatives along blocks (see the module docstring)."""

    f: Callable[[Any], Any]
    x: np.ndarray                       # the pristine copy, in x's shape
    cotangent: np.ndarray | None
    digits: int
    allowance: float                    # seconds the path may take (inf: no cap)
    blocks: int = 0
    evaluations: int = 0
    seconds: float = 0.0
    fallbacks: int = 0                  # blocks measured by finite differences instead

    def usable(self) -> bool:
        return self.seconds < self.allowance

    def measure(self, m: Measurer, blocks: list[tuple[np.ndarray, np.ndarray]]) -> Measured:
        """Per block: ``Delta`` = claimed minus exact slope, its bound, the claim's rounding.
        Blocks where ``f`` cannot be evaluated at arbitrary precision fall back to finite
        differences."""
        if not m.afford(EVALS_PER_BLOCK * len(blocks)):
            raise BudgetExhausted(EVALS_PER_BLOCK * len(blocks))
        n = len(blocks)
        delta, bound, claim = np.empty(n), np.empty(n), np.empty(n)
        failed = []
        for j, (idx, signs) in enumerate(blocks):
            got = self.one(m, idx, signs)
            if got is None:
                failed.append(j)
            else:
                delta[j], bound[j], claim[j] = got
        if failed:
            self.fallbacks += len(failed)
            fd = m.finite_differences([blocks[j] for j in failed])
            delta[failed], bound[failed], claim[failed] = fd.delta, fd.bound, fd.claim
        return Measured(delta, bound, claim, "exact")

    def one(self, m: Measurer, idx: np.ndarray, signs: np.ndarray) -> tuple[float, float, float] | None:
        import mpmath

        from ..mp import NotAdjudicable, mp_directional_derivative

        d = m.direction(idx, signs)
        full = np.zeros(m.x_flat.size)
        full[idx] = d
        started = time.perf_counter()
        try:
            r = mp_directional_derivative(self.f, self.x, full.reshape(self.x.shape), dps=self.digits,
                                          cotangent=self.cotangent, min_digits=MIN_DIGITS,
                                          max_dps=self.digits + EXTRA_DIGITS)
        except (NotAdjudicable, ArithmeticError, ValueError):
            return None
        finally:
            self.seconds += time.perf_counter() - started
        self.blocks += 1
        self.evaluations += r.evaluations
        m.evaluations += r.evaluations
        m.by_method["exact"] = m.by_method.get("exact", 0) + r.evaluations
        c = exact_dot(m.analytic[idx], d)
        with mpmath.workprec(200):  # C - D once rounded; the bounds as floats, rounded up
            if r.is_kink:  # no derivative along this direction: its two slopes bound the claim
                mid = (r.left + r.right) / 2
                half = abs(r.right - r.left) / 2 + r.side_error
                return float(mpmath.mpf(c) - mid), _up(float(half)), m.unit * abs(c)
            delta = float(mpmath.mpf(c) - r.value)
        return delta, _up(float(r.error)) + m.unit * abs(delta), m.unit * abs(c)


def _up(v: float) -> float:
    return float(np.nextafter(v, np.inf)) if np.isfinite(v) else np.inf


def agreement(fd: Measured, ex: Measured, against: str = "finite differences") -> tuple[bool, str]:
    """Whether the exact slopes agree with the first draw's (``against``: finite
    differences, or the complex step) on every block, within both bounds and roundings;
    else the disagreement, in words."""
    where = disagreement(fd, ex)
    if not where:
        return True, ""
    return False, (f"the exact directional derivatives disagree with {against} {where}: f computes "
                   "another function on arbitrary-precision input than on floats (a branch on the dtype?)")
