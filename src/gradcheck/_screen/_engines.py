"""Screening engines: how the evaluations along many directions run.

Evaluations along different directions are independent, so they run like ``check``'s
entries: ``serial`` (in process), ``processes`` (a fork pool: each worker inherits the
probe, its own copy of ``x`` and ``f``; only indices and values travel) and ``executor``
(any ``concurrent.futures.Executor``, e.g. dask's ``client.get_executor()``: the probe is
cloudpickled once and cached on the workers, as the executor engine of ``check`` does) and
``compiled`` (an ``@njit`` f or a C f through cffi: one parallel numba kernel,
:mod:`._compiled`).
Every engine runs :func:`._probe.run_jobs` on its share, so the values are the same bits
whichever engine ran them (given an ``f`` that computes the same on every worker).

An engine is ``run(jobs) -> values`` plus ``close()``; ``jobs`` are ``(idx, values)`` pairs.
"""
from __future__ import annotations

import os
import signal
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import numpy as np

from .._core.errors import FunctionError, InputMutationError, mutation_error
from ..engines import _executor  # the payload cache and dask helpers
from ..engines._chunks import picklable, rebuild_error
from ..engines._executor import _problem_for
from ..engines._fork import ForkPoolOwner, die_with, fork_available, fork_hazard, usable_cores
from ._compiled import CompiledEngine, applies
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


def _is_njit(f: Any) -> bool:
    return type(f).__name__ == "CPUDispatcher"


class SerialEngine:
    name = "serial"

    def __init__(self, probe: Probe) -> None:
        self.probe = probe

    def run(self, jobs: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
        return run_jobs(self.probe, jobs)

    def close(self) -> None:
        pass


def select(name: str, probe: Probe, *, executor: Any, fork_safe: bool) -> tuple[Any, str]:
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
        return CompiledEngine(probe), "compiled: asked for"
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
            kind = "a numba @njit function" if _is_njit(self.probe.f) else "a C function (cffi)"
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


# -- processes ---------------------------------------------------------------------------
_PROBE: Probe | None = None


def _install(probe: Probe, parent: int) -> None:
    global _PROBE
    die_with(parent)
    _PROBE = probe
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle


def _answer(probe: Probe, jobs: list) -> tuple:
    """A worker's answer as data (FunctionError does not survive pickling)."""
    try:
        values = run_jobs(probe, jobs)
    except InputMutationError:
        return ("mutated", str(probe.label))
    except FunctionError as err:
        cause = err.__cause__ if err.__cause__ is not None else err
        return ("error", (err.index, err.side, picklable(cause), ""))
    if not probe.unchanged():
        return ("mutated", str(probe.label))
    return ("ok", values)


def _run_in_worker(jobs: list) -> tuple:
    assert _PROBE is not None, "the probe is installed before the pool forks"
    return _answer(_PROBE, jobs)


def _unpack(answer: tuple, where: str) -> np.ndarray:
    if answer[0] == "ok":
        return answer[1]
    if answer[0] == "mutated":
        raise mutation_error(answer[1], f" (seen {where})")
    raise rebuild_error(answer[1], where)


class ProcessesEngine(ForkPoolOwner):
    """Chunks of jobs on a fork pool that lives as long as the screen."""

    name = "processes"

    def __init__(self, probe: Probe, workers: int | None = None) -> None:
        if not fork_available():
            raise RuntimeError("engine='processes' needs the 'fork' start method (Linux, macOS); "
                               "use engine='serial' on this platform")
        self.probe = probe
        self.workers = max(1, workers or usable_cores())

    def run(self, jobs: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
        if len(jobs) < 2:
            return run_jobs(self.probe, jobs)
        chunks = [c for c in np.array_split(np.arange(len(jobs)), min(len(jobs), 2 * self.workers)) if c.size]
        pool = self._ensure_pool()
        try:
            futures = [pool.submit(_run_in_worker, [jobs[j] for j in c]) for c in chunks]
            parts = [_unpack(fut.result(), "in a worker process") for fut in futures]
        except BaseException:
            self.close(terminate=True)
            raise
        return np.concatenate(parts)

    def _ensure_pool(self) -> ProcessPoolExecutor:
        return self._fork_pool(_install, (self.probe, os.getpid()))


# -- executor ----------------------------------------------------------------------------
class ExecutorEngine:
    """Chunks of jobs on any ``concurrent.futures.Executor``; the probe travels once per
    worker process (cached under a token, as in ``check``'s executor engine)."""

    name = "executor"

    def __init__(self, probe: Probe, executor: Any) -> None:
        import uuid

        ex = _executor
        self._ex = ex
        options = executor if isinstance(executor, ex.ExecutorOptions) else ex.ExecutorOptions(executor)
        self.retries = int(options.retries)
        self._client = ex._dask_client(options.executor)
        self.slots = int(options.slots) if options.slots else ex._slots(options.executor, self._client)
        self.executor = ex.in_process(options.executor)  # threads: no pickling, one task at a time
        self.token = uuid.uuid4().hex
        self.payload = ex.payload_for((probe, probe.work), options.executor)
        self._primed = False
        self._sent = 0

    def run(self, jobs: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
        self._prime()
        chunks = [c for c in np.array_split(np.arange(len(jobs)), min(len(jobs), 2 * self.slots)) if c.size]
        results: dict[int, np.ndarray] = {}
        attempts = {k: 0 for k in range(len(chunks))}
        pending = {self._submit([jobs[j] for j in c], self._carry()): k for k, c in enumerate(chunks)}
        import concurrent.futures as cf

        while pending:
            done, _ = cf.wait(list(pending), return_when=cf.FIRST_COMPLETED)
            for fut in done:
                k = pending.pop(fut)
                try:
                    answer = fut.result()
                except Exception:
                    attempts[k] += 1
                    if attempts[k] > self.retries:
                        raise
                    answer = ("missing",)
                if answer[0] == "missing":
                    pending[self._submit([jobs[j] for j in chunks[k]], self.payload)] = k
                    continue
                results[k] = _unpack(answer, "on a worker of the executor")
        return np.concatenate([results[k] for k in range(len(chunks))])

    def close(self) -> None:
        if self._client is not None and self._primed:
            try:
                self._client.run(self._ex._forget, self.token, on_error="ignore")
            except Exception:
                pass

    def _prime(self) -> None:
        if not self._primed:
            self._primed = True
            if self._client is not None:
                try:
                    self._client.run(self._ex._store_payload, self.token, self.payload)
                except Exception:  # a worker went away: misses cover it
                    pass

    def _carry(self) -> bytes | _executor.InProcess | None:
        """The payload rides along on the first ``slots`` tasks of an executor whose
        workers cannot be primed (misses cover the rest)."""
        if self._client is None and self._sent < self.slots:
            self._sent += 1
            return self.payload
        return None

    def _submit(self, jobs: list, payload: bytes | _executor.InProcess | None):
        if self._client is not None:
            return self.executor.submit(_run_remote, self.token, payload, jobs, pure=False)
        return self.executor.submit(_run_remote, self.token, payload, jobs)


def _run_remote(token: str, payload: bytes | None, jobs: list) -> tuple:
    cached = _problem_for(token, payload)
    if cached is None:
        return ("missing",)
    probe = cached[0]
    return _answer(probe, jobs)
