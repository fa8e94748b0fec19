"""The budget of a screen: evaluations of ``f``, or seconds turned into evaluations.

``budget=None`` gives :data:`DEFAULT_EVALUATIONS`; an ``int`` is a number of evaluations;
a string like ``"90s"`` or ``"5min"``, or a ``datetime.timedelta``, is wall time, turned
into evaluations with the time one evaluation took (so the screen stays within about that
time, plus the entry-wise look at what it localized).

>>> parse_budget(None, 0.1), parse_budget(500, 0.1), parse_budget("90s", 0.1)
(2000, 500, 900)
"""
from __future__ import annotations

import datetime
import re
from typing import Any

#: Default budget: the screen itself takes a few hundred evaluations; the rest localizes.
DEFAULT_EVALUATIONS = 2000
_UNITS = {"s": 1.0, "sec": 1.0, "min": 60.0, "h": 3600.0}


def parse_budget(budget: Any, seconds_per_call: float) -> int:
    """Evaluations allowed (see the module docstring); a clear error for anything else."""
    if budget is None:
        return DEFAULT_EVALUATIONS
    if isinstance(budget, bool):
        raise TypeError(f"budget must be evaluations (an int), seconds ('90s', '5min') or a timedelta; got {budget!r}")
    if isinstance(budget, int):
        if budget < 1:
            raise ValueError(f"budget must be at least 1 evaluation, got {budget}")
        return budget
    seconds = None
    if isinstance(budget, datetime.timedelta):
        seconds = budget.total_seconds()
    elif isinstance(budget, str):
        match = re.fullmatch(r"\s*([0-9.]+(?:e[-+]?[0-9]+)?)\s*(s|sec|min|h)\s*", budget)
        if match:
            seconds = float(match.group(1)) * _UNITS[match.group(2)]
    if seconds is None or not seconds > 0:
        raise ValueError(
            f"budget={budget!r} is not understood: give evaluations of f (an int, e.g. 1000), "
            "wall time as a string ('90s', '5min', '1h') or a datetime.timedelta"
        )
    return max(1, int(seconds / max(seconds_per_call, 1e-9)))
