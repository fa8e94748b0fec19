"""Screening's evaluations on the evaluation layer: a block's jobs are points.

Evaluations along different directions are independent, so they run like ``check``'s
entries, on the layer's runners (:mod:`gradcheck._evaluate`): ``serial`` (in process),
``batched`` (a ``vectorized=True`` f: many blocks per call, the points joined), ``processes``
(one fork pool), ``executor`` (any ``concurrent.futures.Executor``, e.g. dask's
``client.get_executor()``) and ``compiled`` (an ``@njit`` f or a C f through cffi: one parallel
numba kernel), and ``auto``: ``batched`` for a vectorized f (as ``check``'s auto), else the
layer's :class:`~gradcheck._evaluate.Adaptive`, which decides from the median of the
evaluations it timed in this screen. A job ``(idx, values)`` is a point,
``x`` with ``x[idx] = values``; a batch of jobs goes to the runner as blocks
(:meth:`~gradcheck._evaluate.Points.of_blocks`: consecutive jobs of one block saved and put back
once), and the values are the same bits whichever runner ran them (given an ``f`` that computes
the same on every worker). Complex jobs (the complex step) run in process, on the layer's
serial loop with a complex working copy of ``x`` (:class:`._complex.ComplexCopy`).

An engine is ``run(jobs) -> values`` plus ``close()``.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from .._core import arguments as _arguments
from .._evaluate import (
    Adaptive,
    BatchedRunner,
    CompiledRunner,
    ExecutorOptions,
    ExecutorRunner,
    Points,
    ProcessesRunner,
    Runner,
    SerialRunner,
    Target,
    fork_hazard,
)
from ..backends import NumpyBackend
from ._complex import ComplexCopy
from ._prepare import Prepared

SCREEN_ENGINES = ("auto", "serial", "batched", "processes", "executor", "compiled")


class Engine:
    """A screen engine: its jobs as blocks on a runner of the evaluation layer (``auto``: the
    layer's :class:`~gradcheck._evaluate.Adaptive`), complex jobs on :attr:`complex`."""

    def __init__(self, runner: Runner | Adaptive, prep: Prepared, complex_copy: ComplexCopy | None = None) -> None:
        self.runner, self.who = runner, prep.label
        self.complex = complex_copy or ComplexCopy(prep.target.f, prep.target.work, prep.cotangent, prep.label)

    @property
    def name(self) -> str:
        return str(self.runner.name)

    @property
    def why(self) -> str | None:
        """``auto``'s choice in words, once the screen has run (None for a runner asked for)."""
        return getattr(self.runner, "why", None)

    def run(self, jobs: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
        if not jobs:
            return np.zeros(0)
        if jobs[0][1].dtype.kind == "c":
            return self.complex.values(jobs)  # the complex step: serially, on its complex copy
        return self.runner.run(Points.of_blocks(jobs, self.who))

    def close(self) -> None:
        self.runner.close()


def _target(prep: Prepared, backend: Any = None, executor: Any = None) -> Target:
    return replace(prep.target, backend=backend, executor=executor)


def runner_for(name: str, prep: Prepared, executor: Any = None, backend: Any = None,
               vectorized: bool = False) -> Runner:
    """The layer's runner called ``name`` for the screen of ``prep`` (not ``auto``); ``backend``:
    the compiled runner's (default numpy's); ``vectorized``: f takes a leading batch axis."""
    if name == "serial":
        return SerialRunner(_target(prep))
    if name == "batched":  # check's refusal, in screen's words
        if not vectorized:
            raise ValueError("engine='batched' needs an f that accepts a leading batch axis; "
                             "declare it with screen(..., vectorized=True)")
        return BatchedRunner(replace(prep.target, vectorized=True))
    if name == "processes":  # chunks of jobs on one fork pool that lives as long as the screen
        return ProcessesRunner(_target(prep))
    if name == "executor":  # the target travels once per worker
        return ExecutorRunner(_target(prep, executor=executor))
    # An f the kernel cannot run (not @njit nor a C f, a C f of an array output): the layer's refusal.
    return CompiledRunner(_target(prep, backend if backend is not None else NumpyBackend()))


def select(name: str, prep: Prepared, *, executor: Any, vectorized: bool = False) -> tuple[Engine, str]:
    """The engine for ``name`` and why (said in the report's notes; for ``"auto"`` without an
    executor, ``batched`` for a vectorized f, else the layer's adaptive chooser, whose ``why``
    is final once the screen has run)."""
    if name not in SCREEN_ENGINES:
        raise ValueError(f"engine={name!r} is not one of {SCREEN_ENGINES} for screen")
    _arguments.engine_with_executor(name, executor)
    fork_safe = prep.backend.name == "numpy"
    if name == "executor" or (name == "auto" and executor is not None):
        if executor is None:
            raise ValueError("engine='executor' needs screen(..., executor=...): a concurrent.futures.Executor")
        return Engine(runner_for("executor", prep, executor), prep), \
            f"executor: directions run on {type(ExecutorOptions.of(executor).executor).__name__}"
    if name == "processes":
        if not fork_safe:
            raise ValueError("engine='processes' forks worker processes, and a child forked after a "
                             "framework (torch, jax) has started its thread pools can deadlock: use "
                             "engine='serial', or executor= with worker processes of their own")
        hazard = fork_hazard()
        return Engine(runner_for("processes", prep), prep), \
            ("processes: asked for" if hazard is None else
             f"processes: asked for, although {hazard}: f must not call into jax")
    if name in ("compiled", "serial", "batched"):
        return Engine(runner_for(name, prep, backend=prep.backend, vectorized=vectorized), prep), \
            f"{name}: asked for"
    if vectorized:  # check's auto: many blocks per call of f
        return Engine(runner_for("batched", prep, vectorized=True), prep), \
            "batched: f takes a leading batch axis (vectorized): many directions per call"
    auto = Adaptive(_target(prep), fork_safe=fork_safe, make=lambda chosen: runner_for(chosen, prep))
    return Engine(auto, prep), auto.why
