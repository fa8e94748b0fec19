"""The processes runner: chunks of points on one fork pool (:class:`~.fork.ForkPool`).

For a costly Python ``f`` and more than one core. Each worker is forked from the checking
process, so it inherits ``f`` and its own copy of the working array (nothing is pickled but
the points' index and value arrays, and the values back), and evaluates its chunk with the
serial loop: the results are bit-identical to ``serial``'s.

The pool lives as long as the runner (one check, or one parameter of check_params): the
refinement passes reuse it, and it is shut down when the runner is closed or collected. An
exception in ``f`` is raised in the parent as :class:`~gradcheck.FunctionError` at the first
failing point in point order, as ``serial`` would report it; a write by ``f`` into its input is
seen on the worker (its copy against the snapshot it was forked with, after every chunk) and
raised as :class:`~gradcheck.InputMutationError`. A worker that dies (killed, out of memory, a
crash in native code, ``os._exit``) breaks the pool: :class:`~gradcheck.WorkerDiedError`, naming
the entries it may have been evaluating and how it died. Ctrl-C terminates and joins the
workers before it is raised again.
"""
from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, wait
from concurrent.futures.process import BrokenProcessPool

import numpy as np

from .._core.errors import WorkerDiedError
from .answers import answer, failure, mutated_on_worker
from .fork import ForkPool, fork_available, usable_cores
from .points import Points
from .serial import run_here
from .target import Target, entry_of

#: Chunks per worker: enough for load balance and progress, few enough to stay cheap.
CHUNKS_PER_WORKER = 8


def _pristine(target: Target) -> tuple[Target, np.ndarray]:
    """In a worker as it starts: the target and its array as forked (a write by f shows against it)."""
    return target, target.work.copy()


def _run_chunk(state: tuple[Target, np.ndarray], points: Points) -> tuple:
    target, pristine = state
    return answer(target.evaluate, target.work, pristine, points, target.slices)


class ProcessesRunner:
    name = "processes"

    def __init__(self, target: Target, *, workers: int | None = None,
                 chunks_per_worker: int = CHUNKS_PER_WORKER) -> None:
        if not fork_available():
            raise RuntimeError(
                "engine='processes' needs the 'fork' start method (Linux, macOS); "
                "use engine='serial' on this platform"
            )
        self.target = target
        self.workers = max(1, int(workers) if workers is not None else usable_cores())
        self.chunks_per_worker = max(1, int(chunks_per_worker))
        self.pool = ForkPool(target, self.workers, prepare=_pristine)
        self.evaluations = 0

    @property
    def notes(self) -> tuple[str, ...]:
        """What the report should say about this runner's run."""
        if self.pool.hazard is None:
            return ()
        return (f"engine='processes' forked its workers although {self.pool.hazard}: f must not call "
                "into jax (auto would have run serial)",)

    def run(self, points: Points, progress: Callable[[int], None] | None = None) -> np.ndarray:
        """The reduced ``f`` at each point, in chunks on the pool; ``progress(groups done)`` as
        chunks finish."""
        t = self.target
        points = points.joined(t.work.dtype)  # blocks travel as arrays
        count = len(points)
        if points.groups < 2:
            # Nothing to share: evaluate here (perturbs and restores the working array).
            values = run_here(t.evaluate, t.work, points, param=t.param, slices=t.slices)
            if progress is not None and count:
                progress(points.groups)
            self.evaluations += count
            return values
        bounds = points.bounds(self.workers * self.chunks_per_worker)
        out = np.full(points.answer_count(t.slices), np.nan)
        futures: dict[Future, tuple[int, int]] = {}
        try:
            for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
                futures[self.pool.submit(_run_chunk, points.part(lo, hi))] = (lo, hi)
            self._collect(points, futures, out, progress)
        except BrokenProcessPool as exc:
            died = self.pool.died(list(futures), exc)
            chunks = list(futures.values())
            raise self._died(points, [chunks[k] for k in died.broken], chunks, died.how) from exc
        except BaseException:
            self.pool.close(terminate=True)  # KeyboardInterrupt or f's error: no worker outlives the check
            raise
        self.evaluations += count
        return out

    def close(self, terminate: bool = False) -> None:
        self.pool.close(terminate)

    def _collect(self, points: Points, futures: dict[Future, tuple[int, int]], out: np.ndarray,
                 progress: Callable[[int], None] | None) -> None:
        t = self.target
        pending = set(futures)
        done = 0
        failures: list[tuple[int, tuple]] = []
        while pending:
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            for fut in finished:
                lo, hi = futures[fut]
                got = fut.result()
                if got[0] == "mutated":
                    raise mutated_on_worker(entry_of(points.first(lo) or 0, t.work.shape))
                if got[0] == "error":
                    failures.append((lo, got))
                    continue
                out[points.answer_span(lo, hi, t.slices)] = got[1]
                done += (hi - lo) // points.width
            if failures:
                # Chunks not started yet come after every started one (FIFO queue): cancel
                # them, let the running ones finish, report the earliest failure.
                for fut in pending:
                    fut.cancel()
                for fut in wait(pending).done:
                    if not fut.cancelled() and fut.result()[0] == "error":
                        failures.append((futures[fut][0], fut.result()))
                lo, got = min(failures, key=lambda item: item[0])
                raise failure(points, lo, got, t.work.shape, t.param, "in a worker process")
            if progress is not None:
                progress(done)

    def _died(self, points: Points, broken: list[tuple[int, int]], chunks: list[tuple[int, int]],
              how: str) -> WorkerDiedError:
        """Chunks are picked up in submission order, one per worker plus one queued ahead, so
        the dead worker's chunk is among the first ``workers + 1`` chunks that never finished."""
        suspects = sorted(broken)[:self.workers + 1] or sorted(chunks)
        flat = np.unique(np.concatenate([points.flat_entries(lo, hi) for lo, hi in suspects]))
        shape = self.target.work.shape
        if not flat.size:
            flat = np.zeros(1, dtype=np.int64)  # points that set no entry: f at x itself
        task = "a worker process of engine='processes' died ({how}) while differencing"
        if points.kind is not None:
            task += f" ({points.kind}: several entries perturbed together)"
        return WorkerDiedError(entry_of(flat.min(), shape), entry_of(flat.max(), shape), flat.size, how, task=task,
                               param=self.target.param)

