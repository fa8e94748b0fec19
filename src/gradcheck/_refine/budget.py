"""The second look's budget: how many differences it may take, and which suspects it serves.

A first pass costs 2N evaluations. Its second look studies every MISMATCH and, in float64,
the PASS entries whose tolerance is mostly round-off (the quick look at 8h and 16h, then the
full study of what it cannot certify) and the UNCHECKED ones. When f's value is large
against its slopes (a sum of 30,000 terms), round-off dominates every entry's tolerance and
that second look cost 1.4 times the first pass again (205,000 evaluations for 30,000 entries).

The budget bounds the optional part: at most ``Config.second_look`` times the first pass's
2N difference evaluations (counted per entry: an evaluation of a coloured pass that moves
one entry of each of B slices counts B), never fewer than :data:`FLOOR`. The MISMATCH
studies are never cut (a failing verdict is confirmed or explained away whatever it costs);
the noisy PASS entries are served most suspicious first (largest ``|a - n|`` against
``rtol * scale``), then the UNCHECKED ones. A PASS entry the budget cannot serve is not
left a PASS: its agreement was shown only to within f's round-off, so it is UNCHECKED with
cause :attr:`~gradcheck.Cause.BUDGET`, and the report says how many and how to afford them.

>>> allowance(1000, 1.0), allowance(10**5, 1.0), allowance(10**5, None)
(20000, 200000, None)
"""
from __future__ import annotations

import numpy as np

from .quick import QUICK_FACTORS
from .study import STUDY_FACTORS

#: The least budget (difference evaluations): checks up to a few thousand entries keep their
#: whole second look whatever their round-off.
FLOOR = 20_000
#: Difference evaluations per entry: the quick look (8h, 16h), the study after it (the three
#: steps it lacks), a full study (every step but h, which the first pass took).
QUICK_COST = 2 * len(QUICK_FACTORS)
STUDY_COST = 2 * (len(STUDY_FACTORS) - 1)
REST_COST = STUDY_COST - QUICK_COST
#: The share of the optional budget the quick look may take; the rest studies its leftovers.
QUICK_SHARE = 0.75


def allowance(entries: int, share: float | None) -> int | None:
    """The budget in difference evaluations for ``entries`` judged entries (None: unbounded)."""
    if share is None:
        return None
    return max(FLOOR, int(share * 2 * entries))


def by_suspicion(positions: np.ndarray, analytic: np.ndarray, numeric: np.ndarray, rtol: float) -> np.ndarray:
    """``positions`` ordered most suspicious first: by ``|a - n| / (rtol * max(|a|, |n|))``,
    largest first (ties by position)."""
    a, n = analytic[positions], numeric[positions]
    with np.errstate(divide="ignore", invalid="ignore"):
        excess = np.abs(a - n) / (rtol * np.maximum(np.abs(a), np.abs(n)))
    excess = np.where(np.isnan(excess), np.inf, excess)
    return positions[np.lexsort((positions, -excess))]


class Budget:
    """What the second look may still spend; ``spent()`` reads the recording differencer's
    count, so reuse of differences already taken costs nothing."""

    def __init__(self, limit: int | None, counter) -> None:
        self.limit, self._counter = limit, counter
        self._start = self._count()

    def _count(self) -> int:
        return int(getattr(self._counter, "evaluations", 0))

    def spent(self) -> int:
        return self._count() - self._start

    def left(self, reserved: int = 0) -> float:
        """Difference evaluations still free, ``reserved`` of them held back."""
        if self.limit is None:
            return float("inf")
        return max(0.0, float(self.limit - self.spent() - reserved))

    def take(self, ordered: np.ndarray, cost: int, reserved: int = 0, share: float = 1.0
             ) -> tuple[np.ndarray, np.ndarray]:
        """The first entries of ``ordered`` the budget affords at ``cost`` each (``share`` of
        what is left), and the rest."""
        if self.limit is None:
            return ordered, ordered[:0]
        can = self.left(reserved) * share // cost
        if can >= ordered.size:
            return ordered, ordered[:0]
        k = int(can)
        return ordered[:k], ordered[k:]


def budget_note(info: dict | None) -> list[str]:
    """The report's note on the second look's budget: only when it left entries unserved."""
    if not info or not info.get("unafforded"):
        return []
    return [f"{info['unafforded']} entries UNCHECKED (cause budget): the second look's budget of {info['limit']} "
            f"difference evaluations (Config.second_look first passes, at least {FLOOR}) ran out after "
            f"{info['spent']}; their first pass agreed only within f's round-off, not to rtol. Way out: "
            "Config(second_look=None) studies them all (about 4-10 evaluations each), or check a slice "
            "of x on its own"]
