"""The engines of ``check`` (public): how the 2N evaluations of a check run.

A thin public face of the evaluation layer (``gradcheck._evaluate``): an engine is the
entry-wise pass (:class:`~gradcheck._differences.CentralDifferences`) on one of the layer's
runners (serial, batched, compiled, processes, executor), and ``auto`` is the layer's one
chooser. ``check(..., engine=...)`` takes the names in :data:`ENGINE_NAMES`;
:class:`ExecutorOptions` tunes the executor engine.

>>> import numpy as np
>>> work = np.array([1.0, 2.0])
>>> problem = CheckProblem(f=None, work=work, evaluate=lambda: float((work ** 2).sum()), backend=None)
>>> engine, why = select_engine("serial", problem)
>>> engine.name, why
('serial', 'serial: asked for')
>>> fp, fm, den = engine.differences(np.arange(2), np.full(2, 0.5))
>>> ((fp - fm) / den).tolist()
[2.0, 4.0]
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from ._differences import CentralDifferences
from ._evaluate import RUNNER_NAMES, ChunkFailedError, Declined, ExecutorOptions, Target, choose

#: ``check(..., engine=...)``'s names.
ENGINE_NAMES = RUNNER_NAMES
#: What an engine is asked about: ``f``, the private working array, the reduced evaluation.
CheckProblem = Target


class Engine(Protocol):
    name: str

    def differences(self, flat_indices: np.ndarray, steps: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``f(x+h e_i)``, ``f(x-h e_i)`` (reduced to scalars) and the realized denominator."""


@dataclass(frozen=True)
class Choice:
    """The engine for a check, why it was picked (said in the report), and the calls of ``f``
    the choice made (``auto`` times one or two; the report counts them)."""

    engine: CentralDifferences
    reason: str
    evaluations: int = 0


def choose_engine(name: str, problem: Target) -> Choice:
    """The engine for ``name`` (``"auto"``: the layer's chooser), why, and the calls spent."""
    picked = choose(name, problem)
    return Choice(CentralDifferences(picked.runner, problem.work), picked.reason, picked.evaluations)


def select_engine(name: str, problem: Target) -> tuple[CentralDifferences, str]:
    """``(engine, reason)`` of :func:`choose_engine`."""
    choice = choose_engine(name, problem)
    return choice.engine, choice.reason


__all__ = ["ENGINE_NAMES", "CheckProblem", "Choice", "ChunkFailedError", "Declined", "Engine", "ExecutorOptions",
           "choose_engine", "select_engine"]
