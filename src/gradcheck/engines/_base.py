"""What every engine shares: the problem it is given, the protocol it answers, and the
choice of engine for a check (``select_engine``: by name, or ``auto``)."""
from __future__ import annotations

import importlib
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Protocol

import numpy as np

from ._serial import SerialEngine

ENGINE_NAMES = ("auto", "serial", "batched", "compiled", "processes", "executor")


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
    executor: Any = None                   # check(executor=...): a concurrent.futures.Executor


@dataclass(frozen=True)
class Choice:
    """The engine for a check, why it was picked (said in the report), and the calls of
    ``f`` the choice made (``auto`` times one or two; the report counts them)."""

    engine: Engine
    reason: str
    evaluations: int = 0


def select_engine(name: str, problem: CheckProblem) -> tuple[Engine, str]:
    """``(engine, reason)`` of :func:`choose_engine`."""
    choice = choose_engine(name, problem)
    return choice.engine, choice.reason


def choose_engine(name: str, problem: CheckProblem) -> Choice:
    """The engine for ``name``, the reason it was picked, and the evaluations spent.

    ``auto``: ``executor`` when ``check`` was given one; ``compiled`` for a numba
    ``@njit`` function or a native (cffi) function with the numpy backend, when the
    check is big enough to repay compiling (or launching) its kernel; ``batched``
    when ``vectorized=True``; ``processes`` when the estimated serial time is long and
    there is more than one core; else ``serial``.
    """
    if name not in ENGINE_NAMES:
        raise ValueError(f"engine={name!r} is not one of {ENGINE_NAMES}")
    if name == "serial":
        return Choice(SerialEngine(problem), "serial: asked for")
    spent = 0
    if name == "auto":
        name, reason, spent = _auto(problem)
    else:
        reason = f"{name}: asked for"
    if name == "serial":
        return Choice(SerialEngine(problem), reason, spent)
    module = importlib.import_module(f"._{name}", __package__)
    return Choice(module.make_engine(problem), reason, spent)


def time_call(evaluate: Callable[[], Any]) -> float:
    """Seconds one call of ``evaluate`` takes (0 if it raises: the check's own pass reports
    that, at the entry where it happens). The one timer behind every engine's auto choice."""
    start = time.perf_counter()
    try:
        evaluate()
    except Exception:
        return 0.0
    return time.perf_counter() - start


class Declined(str):
    """What an engine's ``auto_reason`` returns when it applies to ``f`` but does not pay
    off for this check: the reason ``auto`` gives if serial ends up running it."""


def _auto(problem: CheckProblem) -> tuple[str, str, int]:
    """The engine's name, why, and the calls of ``f`` the candidates made to time it."""
    calls = 0

    def timed() -> Any:
        nonlocal calls
        calls += 1  # counted before the call: a call that raises was made too
        return problem.evaluate()
    probing = replace(problem, evaluate=timed)
    serial_reason = "serial: a general Python callable (no faster engine applies)"
    for candidate in ("executor", "compiled", "batched", "processes"):
        try:
            module = importlib.import_module(f"._{candidate}", __package__)
        except ModuleNotFoundError:
            continue
        why = module.auto_reason(probing)
        if isinstance(why, Declined):
            serial_reason = f"serial: {why}"
        elif why:
            return candidate, f"{candidate}: {why}", calls
    return "serial", serial_reason, calls
