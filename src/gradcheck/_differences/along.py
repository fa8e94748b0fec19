"""Points along a direction, as a point generator: ``x + s d`` for a few scales ``s``.

What the tests of ``gradcheck._orders`` evaluate ``f`` at (the Taylor test's halving steps, the
adjoint test's differences along ``t``, the second differences of ``check_hvp``): each point
moves EVERY entry, ``x_i + s d_i`` rounded in ``x``'s dtype (complex where ``x`` is), and is
handed to a runner of the evaluation layer (:mod:`gradcheck._evaluate`), which owns the
restore, the write detection, ``FunctionError`` at the point (named by its label, ``"at x +
h d (h = 0.01)"``: the whole input moved, no one entry) and the counting. The values are
made here, so every runner gives the same bits.

>>> from gradcheck._evaluate import SerialRunner, Target
>>> work = np.array([1.0, 2.0])
>>> target = Target(f=None, work=work, evaluate=lambda: float((work ** 2).sum()), backend=None)
>>> Along(SerialRunner(target), work, np.array([1.0, 0.0])).values([0.5, -0.5]).tolist()
[6.25, 4.25]
>>> work.tolist()
[1.0, 2.0]
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .._evaluate import ALONG, Points, Runner

#: Entries per call of the runner (a batch of points holds at most about this many values).
BLOCK = 1 << 21


def moved(x: np.ndarray, direction: np.ndarray, scale: float) -> np.ndarray:
    """``x + scale * direction`` in ``x``'s dtype (THE rounding of a point along ``direction``)."""
    return (x + scale * direction).astype(x.dtype)


class Along:
    """Points ``work + s direction`` through ``runner`` (see the module docstring)."""

    def __init__(self, runner: Runner, work: np.ndarray, direction: np.ndarray, answers: int = 1) -> None:
        self.runner, self.work, self.direction, self.answers = runner, work, direction, answers

    def values(self, scales: Sequence[float], labels: Sequence[str] | None = None) -> np.ndarray:
        """The reduced ``f`` at ``work + s direction`` for each of ``scales`` (float64, in
        order; with ``answers`` k > 1, the runner's target answering k values per point
        (:class:`~gradcheck._evaluate.PerPoint`): shape ``(len(scales), k)``); ``labels[j]``
        names point ``j`` in errors (default ``"at x + s d (s = ...)"``)."""
        scales = [float(s) for s in scales]
        said = tuple(labels) if labels is not None else tuple(f"at x + s d (s = {s:.3g})" for s in scales)
        n, k = self.work.size, self.answers
        out = np.full(len(scales) * k, np.nan)
        per_call = max(1, BLOCK // max(n, 1))
        for lo in range(0, len(scales), per_call):
            part = range(lo, min(len(scales), lo + per_call))
            out[lo * k:part.stop * k] = self.runner.run(self._points([scales[j] for j in part], said[lo:part.stop]))
        return out if k == 1 else out.reshape(-1, k)

    def _points(self, scales: list[float], labels: tuple[str, ...]) -> Points:
        x = np.ascontiguousarray(self.work).reshape(-1)
        d = np.asarray(self.direction).reshape(-1)
        n = x.size
        values = np.concatenate([moved(x, d, s) for s in scales]) if scales else x[:0]
        idx = np.tile(np.arange(n, dtype=np.int64), len(scales))
        starts = np.arange(len(scales) + 1, dtype=np.int64) * n
        return Points(idx, values, starts, 1, labels, ALONG)
