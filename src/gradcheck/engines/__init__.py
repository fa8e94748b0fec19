"""Engines: how the 2N evaluations of a check run.

An engine is built for one check (one function, one private working array) and answers
one question: ``differences(flat_indices, steps) -> (f_plus, f_minus, denominator)``,
the reduced function values at ``x +- h e_i`` and the realized ``(x+h) - (x-h)``.
Everything else (verdicts, refinement, reports) is shared and knows nothing of engines.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Protocol

import numpy as np

from ._serial import SerialEngine

ENGINE_NAMES = ("auto", "serial")


class Engine(Protocol):
    name: str

    def differences(
        self, flat_indices: np.ndarray, steps: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``f(x+h e_i)``, ``f(x-h e_i)`` (reduced to scalars) and the realized denominator."""


@dataclass(frozen=True)
class CheckProblem:
    """What an engine needs to know about a check."""

    f: Callable[..., Any]
    work: np.ndarray                       # private, C-contiguous, perturbed in place
    evaluate: Callable[[], float]          # reduced f at the current contents of ``work``
    backend: Any
    cotangent: np.ndarray | None
    vectorized: bool = False


def select_engine(name: str, problem: CheckProblem) -> tuple[Engine, str]:
    """The engine for ``name`` and, for ``"auto"``, the reason it was picked."""
    if name not in ENGINE_NAMES:
        raise ValueError(f"engine={name!r} is not one of {ENGINE_NAMES}")
    if name in ("auto", "serial"):
        reason = "serial: the only engine for a general Python callable" if name == "auto" else "serial: asked for"
        return SerialEngine(problem), reason
    raise AssertionError("unreachable")  # pragma: no cover
