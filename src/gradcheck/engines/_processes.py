"""The processes engine: chunks of entries on a pool of forked processes.

For a costly Python ``f`` and more than one core. Each worker is forked from the
checking process, so it inherits ``f`` and its own copy of the private working array
(nothing is pickled but index and result arrays), and differences its chunk with the
serial code (:func:`central_differences`). The results are therefore bit-identical to
``serial``'s: same code, same inputs, same order of operations inside each entry.

The pool lives as long as the engine (one check): the refinement passes reuse it, and it
is shut down when the engine is garbage or :meth:`ProcessesEngine.close` is called. On
Ctrl-C the parent terminates and joins its workers before re-raising, and the workers
ignore SIGINT themselves, so an interrupted check leaves no process behind; on Linux the
kernel also kills the workers when the parent dies without a chance to clean up
(SIGTERM's default action, SIGKILL, a crash). An exception
in ``f`` is re-raised in the parent as :class:`FunctionError` with the entry index it
happened at: the first failing entry in index order, as ``serial`` would report it. A
write by ``f`` into its input is seen on the worker (its copy against the snapshot it was
forked with, after every chunk) and raised as :class:`InputMutationError`. A worker that
dies (killed, out of memory, a crash in native code, ``os._exit``) breaks the pool: that is
raised as :class:`WorkerDiedError`, naming the entries it may have been differencing and
how it died.
"""
from __future__ import annotations

import os
import signal
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any

import numpy as np

from .._core.errors import WorkerDiedError as WorkerDiedError  # re-exported: its old home
from ._base import Declined, time_call
from ._chunks import difference_chunk, rebuild_error, worker_mutation_error
from ._differences import central_differences
from ._fork import ForkPoolOwner, die_with, fork_available, fork_hazard, usable_cores

#: auto picks this engine when 2N evaluations are estimated to take longer than this.
AUTO_MIN_SECONDS = 2.0
#: Chunks per worker: enough for load balance and progress, few enough to stay cheap.
CHUNKS_PER_WORKER = 8


def auto_reason(problem: Any) -> str | None:
    """Pick ``processes`` when the 2N evaluations would take more than
    :data:`AUTO_MIN_SECONDS` on one core and there is more than one core to share them.

    The estimate times the problem's own evaluation: once, and a second time (keeping the
    faster) only when the first says the check is long, so a cheap ``f`` pays for a
    single extra call.
    """
    # e.g. jax: os.fork() after jax has started its threads may deadlock
    choice, why = auto_decision(problem.evaluate, problem.work.size,
                                fork_safe=getattr(problem.backend, "fork_safe", True))
    return why if choice == "processes" else Declined(why) if choice == "declined" else None


def auto_decision(evaluate: Callable[[], Any], n: int, *, fork_safe: bool = True) -> tuple[str, str]:
    """``(choice, why)`` for ``2n`` evaluations of ``evaluate``: ``"processes"`` when they
    would take more than :data:`AUTO_MIN_SECONDS` on one core and there are cores to share
    them, ``"declined"`` when they would but a fork is not safe now, else ``"serial"``. The
    one engine choice between serial and processes (``check``'s auto and ``check_params``').
    """
    cores = usable_cores()
    if cores < 2 or not fork_available():
        return "serial", "one core to run on"
    if not fork_safe:
        return "serial", "the backend is not safe to fork"
    per_call = time_call(evaluate)
    if 2 * n * per_call > AUTO_MIN_SECONDS:  # confirm: one call may have been descheduled
        per_call = min(per_call, time_call(evaluate))
    estimate = 2 * n * per_call
    if estimate <= AUTO_MIN_SECONDS:
        return "serial", f"2N = {2 * n} evaluations estimated at {estimate:.2g} s"
    hazard = fork_hazard()
    if hazard is not None:
        return "declined", (f"2N = {2 * n} evaluations would take ~{_format_seconds(estimate)} on one "
                            f"core, but {hazard}, so no process pool is forked")
    return "processes", (f"2N = {2 * n} evaluations at ~{_format_seconds(per_call)} each would take "
                         f"~{_format_seconds(estimate)} on one core; spread over {cores} processes")


def make_engine(problem: Any, **options: Any) -> ProcessesEngine:
    return ProcessesEngine(problem, **options)


class ProcessesEngine(ForkPoolOwner):
    name = "processes"

    def __init__(
        self, problem: Any, *, workers: int | None = None, chunks_per_worker: int = CHUNKS_PER_WORKER
    ) -> None:
        if not fork_available():
            raise RuntimeError(
                "engine='processes' needs the 'fork' start method (Linux, macOS); "
                "use engine='serial' on this platform"
            )
        self.problem = problem
        self.workers = max(1, int(workers) if workers is not None else usable_cores())
        self.chunks_per_worker = max(1, int(chunks_per_worker))
        self._hazard: str | None = None  # set when a pool was forked in spite of one

    @property
    def notes(self) -> tuple[str, ...]:
        """What the report should say about this engine's run."""
        if self._hazard is None:
            return ()
        return (f"engine='processes' forked its workers although {self._hazard}: f must not call "
                "into jax (auto would have run serial)",)

    # -- the engine interface -------------------------------------------------------
    def differences(
        self,
        flat_indices: np.ndarray,
        steps: np.ndarray,
        progress: Callable[[int], None] | None = None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(f_plus, f_minus, denominator)`` for ``flat_indices``, computed in chunks on
        the pool; ``progress(done)`` is called as chunks finish."""
        idx = np.asarray(flat_indices, dtype=np.int64).reshape(-1)
        steps = np.asarray(steps, dtype=np.float64).reshape(-1)
        count = idx.size
        if count < 2:
            # Nothing to share: difference here (perturbs and restores the private copy).
            result = central_differences(self.problem.evaluate, self.problem.work, idx, steps)
            if progress is not None and count:
                progress(count)
            return result
        n_chunks = min(count, self.workers * self.chunks_per_worker)
        bounds = np.linspace(0, count, n_chunks + 1).astype(np.int64)
        f_plus = np.full(count, np.nan)
        f_minus = np.full(count, np.nan)
        denom = np.full(count, np.nan)
        pool = self._ensure_pool()
        futures: dict[Future, tuple[int, int]] = {}
        try:
            for lo, hi in zip(bounds[:-1], bounds[1:]):
                fut = pool.submit(_difference_chunk, idx[lo:hi], steps[lo:hi])
                futures[fut] = (int(lo), int(hi))
            pending = set(futures)
            done_entries = 0
            failures: list[tuple[int, tuple]] = []
            while pending:
                finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                for fut in finished:
                    lo, hi = futures[fut]
                    answer = fut.result()
                    if answer[0] == "mutated":
                        raise worker_mutation_error(_entry(self.problem.work, int(idx[lo])))
                    if answer[0] == "error":
                        failures.append((lo, answer[1]))
                        continue
                    f_plus[lo:hi], f_minus[lo:hi], denom[lo:hi] = answer[1:]
                    done_entries += hi - lo
                if failures:
                    # Chunks not started yet come after every started one (FIFO queue):
                    # cancel them, let the running ones finish, report the earliest failure.
                    for fut in pending:
                        fut.cancel()
                    for fut in wait(pending).done:
                        if not fut.cancelled():
                            answer = fut.result()
                            if answer[0] == "error":
                                failures.append((futures[fut][0], answer[1]))
                    raise rebuild_error(min(failures, key=lambda item: item[0])[1])
                if progress is not None:
                    progress(done_entries)
        except BrokenProcessPool as exc:
            processes = list((getattr(pool, "_processes", None) or {}).values())
            self.close(terminate=True)
            raise _worker_died(futures, idx, self.problem.work, self.workers, processes) from exc
        except BaseException:
            # KeyboardInterrupt or f's error: no worker outlives the check.
            self.close(terminate=True)
            raise
        return f_plus, f_minus, denom

    # -- the pool ---------------------------------------------------------------------
    def _ensure_pool(self) -> ProcessPoolExecutor:
        if self._pool is None:
            self._hazard = self._hazard or fork_hazard()
        return self._fork_pool(_install, (self.problem, os.getpid()))


# -- in the worker ------------------------------------------------------------------------
_PROBLEM: Any = None
_PRISTINE: np.ndarray | None = None


def _install(problem: Any, parent: int) -> None:
    global _PROBLEM, _PRISTINE
    die_with(parent)
    _PROBLEM = problem
    _PRISTINE = problem.work.copy()  # as forked: a write by f shows against it
    # Ctrl-C is the parent's to handle: it terminates the pool.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _difference_chunk(idx: np.ndarray, steps: np.ndarray) -> tuple:
    """Serial differences of one chunk on this worker's own copy of the array; the answer
    is data (see :mod:`._chunks`)."""
    assert _PRISTINE is not None  # set by the pool's initializer
    return difference_chunk(_PROBLEM.evaluate, _PROBLEM.work, _PRISTINE, idx, steps)


def _worker_died(futures: dict[Future, tuple[int, int]], idx: np.ndarray, work: np.ndarray,
                 workers: int, processes: list[Any]) -> WorkerDiedError:
    """The error for a pool broken by a dead worker. Chunks are picked up in submission
    order, one per worker plus one queued ahead, so the dead worker's chunk is among the
    first ``workers + 1`` chunks that never finished."""
    broken = sorted(lo_hi for fut, lo_hi in futures.items()
                    if fut.done() and not fut.cancelled() and isinstance(fut.exception(), BrokenProcessPool))
    suspects = broken[:workers + 1] or sorted(futures.values())
    flat = np.concatenate([idx[lo:hi] for lo, hi in suspects])
    return WorkerDiedError(_entry(work, int(flat.min())), _entry(work, int(flat.max())), flat.size,
                           how_it_died(processes))


def how_it_died(processes: list[Any]) -> str:
    """How the dead worker ended: the exit of a process the pool did not terminate itself
    (its survivors get SIGTERM), as far as the pool still knows its processes."""
    codes = [p.exitcode for p in processes if p.exitcode not in (None, 0, -signal.SIGTERM)]
    if not codes:
        return "how it ended is unknown"
    code = codes[0]
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"it exited with status {code}"


def _entry(work: np.ndarray, flat_index: int) -> tuple[int, ...]:
    return tuple(int(k) for k in np.unravel_index(flat_index, work.shape))


def _format_seconds(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.3g} us"
    if seconds < 1.0:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds:.3g} s"
