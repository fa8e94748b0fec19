"""The verdicts of a check so far, and how each was reached: what the judging stages pass along.

Classify fills a :class:`Judged`; the second look (``gradcheck._refine.study``) and the referee
(``gradcheck._adjudicate``) update it in place; the pipeline turns it into a report.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class Judged:
    numeric: np.ndarray
    noise: np.ndarray
    codes: np.ndarray
    refined: np.ndarray
    evaluations: int
    causes: np.ndarray
    exact: np.ndarray
    digits: np.ndarray
    left: np.ndarray
    right: np.ndarray
    adjudication: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # e.g. f's round-off measured far above its dtype's
    model_unit: float | None = None  # the output dtype's unit round-off, when a measured one replaced it
    measured_unit: float | None = None  # f's own round-off (relative to |f|), when it replaced the model's

    def second_look(self, shape: tuple[int, ...], positions: np.ndarray | None = None) -> dict[str, Any]:
        """The report's second-look fields (causes, exact, digits, one-sided slopes,
        adjudication) in ``shape``; with ``positions`` (flat), these entries are the
        judged ones and the others get the "not looked at" fill values."""
        fills = {"causes": (0, np.uint8), "exact": (np.nan, np.float64), "digits": (-1, np.int16),
                 "left": (np.nan, np.float64), "right": (np.nan, np.float64)}
        out: dict[str, Any] = {"adjudication": self.adjudication, "measured_roundoff": self.measured_unit}
        size = int(np.prod(shape, dtype=np.int64))
        for name, (fill, dtype) in fills.items():
            values = getattr(self, name)
            if positions is None:
                out[name] = values.reshape(shape)
            else:
                full = np.full(size, fill, dtype=dtype)
                full[positions] = values
                out[name] = full.reshape(shape)
        return out
