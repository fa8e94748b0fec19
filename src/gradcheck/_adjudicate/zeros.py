"""Exact zeros proven together: one batched referee pass instead of one per entry.

An entry whose claim is 0 (within the backward's round-off ``k u max|a|``) and whose finite
differences see nothing but noise goes to the referee, which used to compute its exact
derivative alone: about 20 evaluations of f at 30 digits each (131 such entries of a
180-entry check: 2,600 evaluations, 3.7 s of its 3.9 s). Here they are taken together: the
exact directional derivative ``D = sum_j c_j g_j`` along seeded random coefficients
``c_j = ±U(1, 2)`` on all of them, at the referee's precision, in :data:`DRAWS` draws.

The argument: if some entry has ``|g_j| > r`` (``r`` the round-off a PASS forgives), then
with the other coefficients fixed, ``D`` is within ``eps = SHARE * r`` of zero only when
``c_j g_j`` falls in an interval of width ``2 eps``: probability at most ``eps / |g_j| <
SHARE`` for a coefficient of density 1/2 on [1, 2]. Each draw passes only when
``|D| + bound(D) <= eps`` and the directional one-sided slopes show no kink, so a nonzero
entry slips through both draws with probability below ``SHARE**2`` (1e-12). (A certified
``D`` of 1e-9 is no zero: the test is on its value, never on its digits.) With every claim 0
(``r = 0``) no draw can pass: those entries go to the per-entry referee. When a draw fails (some entry is not zero, or sits on a kink) every candidate gets
its own exact derivative, as before.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .._core.verdict import Cause, Verdict

if TYPE_CHECKING:
    from .._core.judged import Judged
    from .referee import Referee

#: Independent draws of the coefficients.
DRAWS = 2
#: A draw passes when |D| + its bound is below this share of the forgiven round-off.
SHARE = 1e-6
#: Fewest candidates worth a batch (below, each entry alone costs about as much).
BATCH_MIN = 3


def zero_candidates(positions: np.ndarray, codes: np.ndarray, analytic: np.ndarray, round_off: float) -> np.ndarray:
    """The UNCHECKED entries among ``positions`` whose claim is within ``round_off`` of 0."""
    unchecked = positions[codes[positions] == Verdict.UNCHECKED]
    return unchecked[np.abs(analytic[unchecked]) <= round_off]


def all_zero(referee: Referee, flat_indices: np.ndarray, round_off: float, seed: int = 0) -> tuple[bool, int]:
    """Whether the exact gradient is zero (to ``round_off``) at every entry of ``flat_indices``,
    by :data:`DRAWS` exact directional derivatives; and the evaluations of f it made."""
    from ..mp import NotAdjudicable, mp_directional_derivative

    rng = np.random.default_rng(seed)
    x64 = np.asarray(referee.x, dtype=np.float64)
    used = 0
    for _ in range(DRAWS):
        direction = np.zeros(x64.size)
        count = flat_indices.size
        direction[flat_indices] = rng.uniform(1.0, 2.0, count) * rng.choice([-1.0, 1.0], count)
        try:
            d = mp_directional_derivative(referee.f_mp, x64, direction.reshape(x64.shape), dps=referee.digits,
                                          cotangent=referee.cotangent)
        except (NotAdjudicable, ArithmeticError, ValueError):
            return False, used
        used += int(d.evaluations)
        if d.is_kink or not abs(float(d.value)) + float(d.error) <= SHARE * round_off:
            return False, used
    return True, used


def prove_zeros(judged: Judged, referee: Referee, positions: np.ndarray, analytic: np.ndarray, idx_map: Any,
                round_off: float, info: dict[str, Any]) -> np.ndarray:
    """Settle the zero candidates among ``positions`` in one batch when they are all zero:
    PASS (cause EXACT_ZERO, exact value 0). Returns the positions left for the per-entry
    referee; ``info`` gets the batch's accounts."""
    if not getattr(referee, "batches_zeros", False):
        return positions
    zeros = zero_candidates(positions, judged.codes, analytic, round_off)
    if zeros.size < BATCH_MIN:
        return positions
    proven, used = all_zero(referee, np.asarray(idx_map[zeros]), round_off)
    judged.evaluations += used
    info["zero_batch"] = {"entries": int(zeros.size), "proven": proven, "evaluations": used}
    if not proven:
        return positions
    judged.codes[zeros], judged.causes[zeros] = Verdict.PASS, Cause.EXACT_ZERO
    judged.exact[zeros] = np.zeros(zeros.size)
    judged.digits[zeros] = 0
    judged.refined[zeros] = True
    return np.setdiff1d(positions, zeros)
