"""The verdicts of a check so far, and how each was reached: what the judging stages pass along.

Classify fills a :class:`Judged`; the second look (``gradcheck._refine.study``) and the referee
(``gradcheck._adjudicate``) update it in place; the pipeline turns it into a report.
The values only suspects get (``exact``, ``left``, ``right``) are sparse columns (:class:`~gradcheck._core.sparse.SparseColumn`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .sparse import SparseColumn

#: Per-entry float64 values of the second look, NaN where not measured: stored sparsely.
MEASURED = ("exact", "left", "right")

#: Studied entries whose steps and slopes a report keeps (the verdicts of all are kept).
STUDIES_KEPT = 1000


@dataclass
class Judged:
    numeric: np.ndarray
    noise: np.ndarray
    codes: np.ndarray
    refined: np.ndarray
    evaluations: int
    causes: np.ndarray
    exact: SparseColumn
    digits: np.ndarray
    left: SparseColumn
    right: SparseColumn
    adjudication: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # e.g. f's round-off measured far above its dtype's
    model_unit: float | None = None  # the output dtype's unit round-off, when a measured one replaced it
    measured_unit: float | None = None  # f's own round-off (relative to |f|), when it replaced the model's
    # The second look's budget (gradcheck._refine.budget): limit, spent, unafforded; None when not run.
    budget: dict[str, Any] | None = None
    # The step study of each studied entry: position -> (steps, slopes D(h) at those steps).
    studies: dict[int, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)

    def keep_study(self, positions: np.ndarray, steps: np.ndarray, slopes: np.ndarray) -> None:
        """Record the step study of ``positions`` (rows of ``steps`` and ``slopes``), for
        the report; at most :data:`STUDIES_KEPT` entries, failing verdicts first (a later
        study of the same entry replaces its earlier one)."""
        for j, p in enumerate(np.asarray(positions)):
            self.studies[int(p)] = (np.array(steps[j], dtype=np.float64), np.array(slopes[j], dtype=np.float64))
        if len(self.studies) > STUDIES_KEPT:
            keep = sorted(self.studies, key=lambda q: (int(self.codes[q]) == 0, q))[:STUDIES_KEPT]
            self.studies = {q: self.studies[q] for q in sorted(keep)}

    def second_look(self, shape: tuple[int, ...], positions: np.ndarray | None = None) -> dict[str, Any]:
        """The report's second-look fields (causes, digits, the sparse ``measured`` columns
        exact and one-sided slopes, adjudication) in ``shape``; with ``positions`` (flat),
        these entries are the judged ones and the others get the "not looked at" fill
        values. The measured columns stay sparse (no array of the report's size)."""
        fills = {"causes": (0, np.uint8), "digits": (-1, np.int16)}
        out: dict[str, Any] = {"adjudication": self.adjudication, "measured_roundoff": self.measured_unit}
        size = int(np.prod(shape, dtype=np.int64))
        flat = (lambda p: p) if positions is None else (lambda p: int(positions[p]))  # noqa: E731
        out["step_study"] = {tuple(int(i) for i in np.unravel_index(flat(p), shape)): v
                             for p, v in self.studies.items()}
        for name, (fill, dtype) in fills.items():
            values = getattr(self, name)
            if positions is None:
                out[name] = values.reshape(shape)
            else:
                full = np.full(size, fill, dtype=dtype)
                full[positions] = values
                out[name] = full.reshape(shape)
        columns: dict[str, SparseColumn] = {}
        for name in MEASURED:
            col: SparseColumn = getattr(self, name)
            columns[name] = col.reshape(shape) if positions is None else SparseColumn.from_entries(
                shape, np.asarray(positions)[col.positions], col.values, fill=col.fill)
        out["measured"] = columns
        return out

