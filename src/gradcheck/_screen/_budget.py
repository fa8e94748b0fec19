"""The budget of a screen: evaluations of ``f``, or seconds turned into evaluations.

``budget=None`` gives :data:`DEFAULT_EVALUATIONS`; an ``int`` is a number of evaluations;
a string like ``"90s"`` or ``"5min"``, or a ``datetime.timedelta``, is wall time, turned
into evaluations with the time one evaluation took (so the screen stays within about that
time, plus the entry-wise look at what it localized).

>>> parse_budget(None, 0.1), parse_budget(500, 0.1), parse_budget("90s", 0.1)
(2000, 500, 900)
"""
from __future__ import annotations

from typing import Any

from .._core.arguments import as_budget

#: Default budget: the screen itself takes a few hundred evaluations; the rest localizes.
DEFAULT_EVALUATIONS = 2000


def parse_budget(budget: Any, seconds_per_call: float) -> int:
    """Evaluations allowed (see the module docstring); a clear error for anything else
    (:func:`gradcheck._core.arguments.as_budget`, which ``screen`` also calls at the door)."""
    allowed = as_budget(budget)
    if allowed is None:
        return DEFAULT_EVALUATIONS
    if isinstance(allowed, int):
        return allowed
    return max(1, int(allowed / max(seconds_per_call, 1e-9)))
