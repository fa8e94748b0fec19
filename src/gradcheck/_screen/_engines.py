"""Screening's evaluations on the evaluation layer: a block's jobs are points.

Evaluations along different directions are independent, so they run like ``check``'s
entries, on the layer's runners (:mod:`gradcheck._evaluate`): ``serial`` (in process, the
probe itself), ``processes`` (one fork pool), ``executor`` (any ``concurrent.futures.Executor``,
e.g. dask's ``client.get_executor()``) and ``compiled`` (an ``@njit`` f or a C f through cffi:
one parallel numba kernel). A job ``(idx, values)`` is a point: ``x`` with ``x[idx] = values``;
the values are the same bits whichever runner ran them (given an ``f`` that computes the same
on every worker). Complex jobs (the complex step) run in process.

An engine is ``run(jobs) -> values`` plus ``close()``; :class:`AutoEngine` is screen's
``engine="auto"``, which decides from the median of the evaluations it timed in this screen.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .._evaluate import (
    CompiledRunner,
    ExecutorRunner,
    Points,
    ProcessesRunner,
    Runner,
    Target,
    fork_available,
    fork_hazard,
    kind_of,
    usable_cores,
)
from ..backends import NumpyBackend
from ._probe import Probe, run_jobs

SCREEN_ENGINES = ("auto", "serial", "processes", "executor", "compiled")
#: auto forks a pool when one batch of evaluations would take longer than this on one core
#: (what forking costs is measured: see KEEP_SHARE).
AUTO_MIN_SECONDS = 1.0
#: auto runs an njit (or C) f in the compiled kernel from this batch time (compiling it takes ~1 s).
COMPILED_MIN_SECONDS = 0.5
#: auto decides from the median time of at least this many serial runs of f in this screen
#: (the step search makes ~14, of two evaluations each), never from one call.
MIN_TIMED = 6
#: auto keeps a pool only if its first batch took at most this share of the serial time per
#: evaluation (fork included): where it did not (no idle core, f's own threads fighting the
#: workers'), the pool is closed and the screen goes on in process.
KEEP_SHARE = 0.8


def applies(f: Any) -> bool:
    """Whether ``f`` runs in the compiled kernel: a numba ``@njit`` function or a C loss
    through cffi, without importing numba otherwise."""
    return kind_of(f) is not None


def points_of(jobs: list[tuple[np.ndarray, np.ndarray]]) -> Points:
    """The jobs as points of the evaluation layer (each job a point of its block's entries)."""
    sizes = np.array([idx.size for idx, _ in jobs], dtype=np.int64)
    starts = np.zeros(len(jobs) + 1, dtype=np.int64)
    np.cumsum(sizes, out=starts[1:])
    idx = np.concatenate([i for i, _ in jobs]).astype(np.int64) if jobs else np.zeros(0, np.int64)
    values = np.concatenate([v for _, v in jobs]) if jobs else np.zeros(0)
    return Points(idx, values, starts, labels=("along a block of {count} entries",))


class SerialEngine:
    name = "serial"

    def __init__(self, probe: Probe) -> None:
        self.probe = probe

    def run(self, jobs: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
        return run_jobs(self.probe, jobs)

    def close(self) -> None:
        pass


class _OnRunner:
    """A screen engine: the jobs as points on a runner of the evaluation layer."""

    def __init__(self, probe: Probe, runner: Runner) -> None:
        self.probe, self.runner = probe, runner

    @property
    def name(self) -> str:
        return str(self.runner.name)

    def run(self, jobs: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
        if not jobs or jobs[0][1].dtype.kind == "c":
            return run_jobs(self.probe, jobs)  # the complex step: in process
        return self.runner.run(points_of([(i, np.asarray(v, dtype=self.probe.work.dtype)) for i, v in jobs]))

    def close(self) -> None:
        self.runner.close()


def _target(probe: Probe, backend: Any = None, executor: Any = None) -> Target:
    cotangent = None if probe.cotangent is None else probe.cotangent.reshape(probe.cotangent_shape)
    return Target(f=probe.f, work=probe.work, evaluate=probe.evaluate, backend=backend, cotangent=cotangent,
                  executor=executor)


def ProcessesEngine(probe: Probe, workers: int | None = None) -> _OnRunner:  # noqa: N802 - an engine's name
    """Chunks of jobs on one fork pool that lives as long as the screen."""
    return _OnRunner(probe, ProcessesRunner(_target(probe), workers=workers))


def ExecutorEngine(probe: Probe, executor: Any) -> _OnRunner:  # noqa: N802
    """Chunks of jobs on any ``concurrent.futures.Executor``; the probe travels once per worker."""
    return _OnRunner(probe, ExecutorRunner(_target(probe, executor=executor)))


def CompiledEngine(probe: Probe, backend: Any = None) -> _OnRunner:  # noqa: N802
    """The jobs in one parallel numba kernel (an ``@njit`` f, or a C f through cffi)."""
    if not applies(probe.f):
        raise ValueError(f"engine='compiled' needs a numba @njit f or a C f through cffi "
                         f"(gradcheck.native.NativeFunction), got {type(probe.f).__name__}; "
                         "use engine='serial' or 'auto'")
    if kind_of(probe.f) == "native" and probe.cotangent is not None:
        raise ValueError("engine='compiled' runs a C f that returns a scalar; use engine='serial'")
    return _OnRunner(probe, CompiledRunner(_target(probe, backend if backend is not None else NumpyBackend())))


def select(name: str, probe: Probe, *, executor: Any, fork_safe: bool, backend: Any = None) -> tuple[Any, str]:
    """The engine for ``name`` and why (said in the report's notes; for ``"auto"`` without
    an executor, an :class:`AutoEngine`, whose ``why`` is final once the screen has run)."""
    if name not in SCREEN_ENGINES:
        raise ValueError(f"engine={name!r} is not one of {SCREEN_ENGINES} for screen")
    if executor is not None and name not in ("auto", "executor"):
        raise ValueError(f"an executor runs engine='executor'; got engine={name!r} as well (drop one)")
    if name == "executor" or (name == "auto" and executor is not None):
        if executor is None:
            raise ValueError("engine='executor' needs screen(..., executor=...): a concurrent.futures.Executor")
        return ExecutorEngine(probe, executor), f"executor: directions run on {type(executor).__name__}"
    if name == "processes":
        if not fork_safe:
            raise ValueError("engine='processes' forks worker processes, and a child forked after a "
                             "framework (torch, jax) has started its thread pools can deadlock: use "
                             "engine='serial', or executor= with worker processes of their own")
        hazard = fork_hazard()
        return ProcessesEngine(probe), ("processes: asked for" if hazard is None else
                                        f"processes: asked for, although {hazard}: f must not call into jax")
    if name == "compiled":
        return CompiledEngine(probe, backend), "compiled: asked for"
    if name == "serial":
        return SerialEngine(probe), "serial: asked for"
    auto = AutoEngine(probe, fork_safe=fork_safe)
    return auto, auto.why


def auto_choice(seconds_per_call: float, batch: int, *, cores: int, compiled: bool, fork_ok: bool) -> tuple[str, str]:
    """``("compiled" | "processes" | "serial", why)`` for one batch of ``batch`` evaluations
    at ``seconds_per_call`` each (serial, measured), from these numbers alone.

    ``compiled``: f runs in the compiled kernel (an @njit or C f, numpy backend);
    ``fork_ok``: a pool may be forked now (cores to share, fork available, no framework's
    threads running).

    >>> auto_choice(3e-5, 96, cores=2, compiled=False, fork_ok=True)[0]   # a cheap f
    'serial'
    >>> auto_choice(0.1, 96, cores=2, compiled=False, fork_ok=True)[0]    # ~10 s a batch
    'processes'
    """
    serial = batch * seconds_per_call
    if compiled and serial > COMPILED_MIN_SECONDS:
        return "compiled", f"a batch of {batch} evaluations takes ~{serial:.2g} s from Python"
    if not serial > AUTO_MIN_SECONDS:
        return "serial", (f"a batch of {batch} evaluations at {seconds_per_call:.2g} s each takes ~{serial:.2g} s "
                          "on one core: too little to pay for a process pool")
    if not fork_ok:
        return "serial", (f"a batch of {batch} evaluations takes ~{serial:.2g} s on one core, but no process "
                          "pool applies (one core, no fork, or a framework's threads are running)")
    return "processes", (f"a batch of {batch} evaluations at {seconds_per_call:.3g} s each "
                         f"(~{serial:.2g} s on one core), spread over {cores} processes")


class AutoEngine:
    """``engine="auto"`` without an executor: f runs in process, each run timed, until a batch
    large enough to share arrives; then :func:`auto_choice` decides for that batch from the
    median seconds per evaluation over the runs so far in this screen (the step search's
    ~14 at least: one call timed before the screen can be descheduled, 100x off on a loaded
    machine). While serial, each larger batch (a re-cut's) is decided again; a kernel, once
    chosen, serves the rest of the screen, and so does a pool whose first batch (its fork
    included) took at most :data:`KEEP_SHARE` of the serial time per evaluation; one that did
    not is closed, and the screen stays in process. The values are the same bits whichever
    runs them, so switching mid-screen changes no result."""

    def __init__(self, probe: Probe, *, fork_safe: bool, clock: Any = None) -> None:
        import time

        self.probe = probe
        self.fork_safe = fork_safe
        self.clock = clock or time.perf_counter
        self.timed: list[float] = []     # seconds per evaluation, one per serial run
        self.chosen: Any = None
        self.trial = False               # the pool's first batch is still to be timed
        self.closed_pool = False         # a pool was tried and was no faster: never again
        self.why = "serial: evaluations are quick or no process pool applies"

    @property
    def name(self) -> str:
        return "serial" if self.chosen is None else self.chosen.name

    def run(self, jobs: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
        if self.chosen is None and not self.closed_pool and len(jobs) > 2 and len(self.timed) >= MIN_TIMED:
            self._decide(len(jobs))
        if self.trial and len(jobs) > 2:
            return self._trial_batch(jobs)
        if self.chosen is not None:
            return self.chosen.run(jobs)
        start = self.clock()
        values = run_jobs(self.probe, jobs)
        if jobs:
            self.timed.append((self.clock() - start) / len(jobs))
        return values

    def _decide(self, batch: int) -> None:
        per_call = float(np.median(self.timed))
        compiled = applies(self.probe.f) and self.fork_safe
        # numpy code only: a child forked after torch (or jax) has started its thread pools
        # can deadlock on its first parallel operation.
        cores = usable_cores()
        fork_ok = cores >= 2 and fork_available() and self.fork_safe and fork_hazard() is None
        choice, why = auto_choice(per_call, batch, cores=cores, compiled=compiled, fork_ok=fork_ok)
        if choice == "compiled":
            kind = "a numba @njit function" if kind_of(self.probe.f) == "njit" else "a C function (cffi)"
            self.chosen, why = CompiledEngine(self.probe), f"f is {kind} and {why}"
        elif choice == "processes":
            self.chosen, self.trial = ProcessesEngine(self.probe), True
        self.why = f"{choice}: {why} (median of {len(self.timed)} timed runs of f in this screen)"

    def _trial_batch(self, jobs: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
        """The pool's first batch, timed against the serial median; a pool no faster is closed."""
        serial = float(np.median(self.timed))
        start = self.clock()
        values = self.chosen.run(jobs)
        pooled = (self.clock() - start) / len(jobs)
        self.trial = False
        if not pooled <= KEEP_SHARE * serial:
            self.chosen.close()
            self.chosen, self.closed_pool = None, True
            self.why = (f"serial: a process pool was tried on a batch of {len(jobs)} evaluations and took "
                        f"{pooled:.2g} s per evaluation (its fork included) against {serial:.2g} s in process: "
                        "no faster, so it was closed (no idle core, or f's own threads compete with the workers)")
        return values

    def close(self) -> None:
        if self.chosen is not None:
            self.chosen.close()
