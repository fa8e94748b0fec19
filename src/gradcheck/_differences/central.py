"""The entry-wise pass as a point generator: entry ``i`` at ``x_i + h_i``, then at ``x_i - h_i``.

:class:`CentralDifferences` answers ``differences(flat_indices, steps) -> (f_plus, f_minus,
denominator)`` (what ``check``'s first pass, its second look, ``check_params`` and the screen's
entry-wise look ask for) by handing two points per entry to a runner of the evaluation layer
(:mod:`gradcheck._evaluate`). The points' values are rounded in ``x``'s dtype and the realized
denominators computed here, vectorized (:func:`~.arithmetic.perturbed_points`), so every runner
gives the same bits. An entry that is not finite is not perturbed (NaN results): no point.

>>> import numpy as np
>>> from gradcheck._evaluate import SerialRunner, Target
>>> work = np.array([1.0, 2.0])
>>> target = Target(f=None, work=work, evaluate=lambda: float((work ** 2).sum()), backend=None)
>>> fp, fm, den = CentralDifferences(SerialRunner(target), work).differences(np.arange(2), np.full(2, 0.5))
>>> ((fp - fm) / den).tolist()
[2.0, 4.0]
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._core.arguments import takes
from .._evaluate import Points, Runner, flat_handle
from .arithmetic import perturbed_points

Diffs = tuple[np.ndarray, np.ndarray, np.ndarray]
#: ``on_chunk(positions, f_plus, f_minus, denominators)``: differences finished, at positions of the request.
OnChunk = Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray], None]

#: Entries per call of the runner (bounds the points' arrays: ~100 MiB at most).
BLOCK = 1 << 21


class CentralDifferences:
    """Central differences of the target's ``f`` through ``runner`` (see the module docstring).
    ``name`` and ``notes`` are the runner's (the report says which ran)."""

    def __init__(self, runner: Runner, work: np.ndarray) -> None:
        self.runner, self.work = runner, work

    @property
    def name(self) -> str:
        return str(self.runner.name)

    @property
    def notes(self) -> tuple[str, ...]:
        return tuple(getattr(self.runner, "notes", ()))

    @property
    def reports_chunks(self) -> bool:
        """Whether :meth:`differences` calls ``on_chunk`` as the runner's chunks finish (the
        executor runner's), not only once at the end."""
        return takes(self.runner.run, "on_chunk")

    def close(self, terminate: bool = False) -> None:
        self.runner.close(terminate)

    def differences(self, flat_indices: Any, steps: Any, progress: Callable[[int], None] | None = None,
                    on_chunk: OnChunk | None = None) -> Diffs:
        """``(f(x + h e_i), f(x - h e_i), (x+h) - (x-h))`` for each flat index, float64;
        ``progress(entries done)`` as they finish; ``on_chunk`` (runners that report chunks:
        the executor) receives each finished chunk, the checkpoint saves it."""
        idx = np.asarray(flat_indices, dtype=np.int64).reshape(-1)
        steps = np.asarray(steps, dtype=np.float64).reshape(-1)
        old = np.asarray(flat_handle(self.work)[idx], dtype=self.work.dtype).reshape(-1)
        xp, xm, denom, finite = perturbed_points(old, steps)
        f_plus, f_minus = np.full(idx.size, np.nan), np.full(idx.size, np.nan)
        live = np.flatnonzero(finite)
        skipped = idx.size - live.size
        if on_chunk is not None and skipped:  # never perturbed: finished as they are
            gone = np.flatnonzero(~finite)
            on_chunk(gone, f_plus[gone], f_minus[gone], denom[gone])
        for lo in range(0, live.size, BLOCK):
            part = live[lo:lo + BLOCK]
            points = Points.pairs(idx[part], xp[part], xm[part])
            kwargs: dict[str, Any] = {}
            if progress is not None:
                kwargs["progress"] = lambda done, base=skipped + lo: progress(base + done)
            if on_chunk is not None and self.reports_chunks:
                kwargs["on_chunk"] = lambda a, b, values, part=part: self._chunk(on_chunk, part[a // 2:b // 2],
                                                                                values, denom)
            values = self.runner.run(points, **kwargs)
            f_plus[part], f_minus[part] = values[0::2], values[1::2]
            if on_chunk is not None and "on_chunk" not in kwargs:
                on_chunk(part, f_plus[part], f_minus[part], denom[part])
        return f_plus, f_minus, denom

    @staticmethod
    def _chunk(on_chunk: OnChunk, positions: np.ndarray, values: np.ndarray, denom: np.ndarray) -> None:
        on_chunk(positions, values[0::2], values[1::2], denom[positions])
