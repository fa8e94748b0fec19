"""The coloured differencer on a pool of forked processes: ``engine="processes"``.

For a costly Python ``f`` and more than one core. Each evaluation of the coloured differencer
(one round's entries, one in every slice, all at ``+h`` or all at ``-h``) is a job of its own:
the jobs are independent, so the workers run them in any order. Each worker is forked from the
checking process and inherits the differencer (``f``, the cotangent, the private working array):
a job carries only the perturbed entries, their values and their slices, and answers with their
reductions. A worker evaluates a job with the same code as the serial differencer
(:meth:`Coloured.point`), so the numbers are serial's, bit for bit.

As on the layer's processes runner (:mod:`gradcheck._evaluate.processes`): ``f`` raising in a
worker is :class:`~gradcheck.FunctionError` at the first entry of the earliest failing
evaluation, as serial would report it; a write by ``f`` into its input is seen on the worker
(its copy against the snapshot it was forked with) and raised as
:class:`~gradcheck.InputMutationError`; a worker that dies breaks the pool, raised as
:class:`~gradcheck.WorkerDiedError` naming the entries the unfinished evaluations perturbed;
Ctrl-C or an error terminates and joins the workers. The declaration's verification and the
referee run in the checking process.
"""
from __future__ import annotations

import copy
from concurrent.futures import FIRST_COMPLETED, Future, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any

import numpy as np

from .._core.errors import WorkerDiedError
from .._evaluate import ForkPool, fork_available, usable_cores
from .colour import BUDGET_BYTES, Coloured, wire_ids
from .workers import rebuild_error, worker_answer, worker_mutation_error

#: Evaluations in flight per worker (each is one job): enough to keep every worker busy.
JOBS_PER_WORKER = 4


def _pristine(coloured: Any) -> tuple[Any, np.ndarray]:
    """In a worker as it starts: the differencer and its array as forked (a write by f shows against it)."""
    return coloured, coloured.work.copy()


def _evaluate_point(state: tuple[Any, np.ndarray], job: tuple) -> tuple:
    """One evaluation on this worker's copy; the answer is data (:mod:`.workers`)."""
    coloured, pristine = state
    ids, values, mine, side = job
    return worker_answer(lambda: (coloured.point(ids, values, pristine.reshape(-1)[ids], mine, side),),
                         coloured.work, pristine)


class PooledColoured(Coloured):
    """:class:`Coloured` whose evaluations run on a fork pool (``workers`` processes)."""

    IN_PLACE = False  # each evaluation's entries and values are shipped to its runner

    def __init__(self, *args: Any, workers: int | None = None, **kwargs: Any) -> None:
        if not fork_available():
            raise RuntimeError("engine='processes' needs the 'fork' start method (Linux, macOS); "
                               "use engine='serial' on this platform")
        kwargs["vectorized"] = False  # a worker evaluates one point at a time
        super().__init__(*args, **kwargs)
        self.workers = max(1, int(workers) if workers is not None else usable_cores())
        # Evaluations gathered before a wave is sent: each holds ~32 bytes per entry of its round.
        per_round = max(1, self.axes.slices if not self.axes.elementwise else self.work.size)
        self.rows = max(2, min(JOBS_PER_WORKER * self.workers, BUDGET_BYTES // (32 * per_round)))
        self.pool: ForkPool | None = None

    def _run(self, points) -> None:
        """Each point an evaluation on the pool; the earliest failure (in point order) raised."""
        pool = self._ensure_pool()
        futures: dict[Future, int] = {}
        try:
            for k, (_, ids, values, _, mine, _, side) in enumerate(points):
                futures[pool.submit(_evaluate_point, (wire_ids(ids, self.work.size), values, mine, side))] = k
            if pool.hazard is not None and not any("forked its workers" in n for n in self.notes):
                self.notes.append(f"engine='processes' forked its workers although {pool.hazard}: f must "
                                  "not call into jax")
            failures: list[tuple[int, tuple]] = []
            pending = set(futures)
            while pending and not failures:
                finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                failures += self._store(finished, futures, points)
            if failures:
                # Jobs not started yet come after every started one (FIFO): cancel them, let
                # the running ones finish, raise the earliest failure, as serial would.
                for fut in pending:
                    fut.cancel()
                failures += self._store(wait(pending).done, futures, points)
                raise rebuild_error(min(failures, key=lambda item: item[0])[1])
        except BrokenProcessPool as exc:
            died = pool.died(list(futures), exc)
            raise self._died(futures, died.broken, points, died.how) from exc
        except BaseException:
            pool.close(terminate=True)  # KeyboardInterrupt or f's error: no worker outlives the check
            raise
        self.evaluations += len(points)

    def close(self, terminate: bool = False) -> None:
        if self.pool is not None:
            self.pool.close(terminate)

    def _store(self, finished, futures: dict[Future, int], points) -> list[tuple[int, tuple]]:
        """Store the answers of ``finished`` jobs; return their failures ``(point, payload)``."""
        failures = []
        for fut in finished:
            if fut.cancelled():
                continue
            k = futures[fut]
            answer = fut.result()
            if answer[0] == "mutated":
                first = np.unravel_index(int(points[k][1][0]), self.work.shape) if points[k][1].size else ()
                raise worker_mutation_error(tuple(int(i) for i in first))
            if answer[0] == "error":
                failures.append((k, answer[1]))
                continue
            pos, out = points[k][0], points[k][5]
            out[pos] = answer[1]
        return failures

    def _died(self, futures: dict[Future, int], broken: list[int], points, how: str) -> WorkerDiedError:
        """The dead worker ran one of the first ``workers + 1`` unfinished evaluations (jobs
        are picked up in order, one per worker and one queued ahead)."""
        order = list(futures.values())
        suspects = sorted(order[b] for b in broken)[:self.workers + 1] or sorted(order)
        flat = np.unique(np.concatenate([points[k][1] for k in suspects]))
        entry = lambda i: tuple(int(c) for c in np.unravel_index(int(i), self.work.shape))  # noqa: E731
        return WorkerDiedError(
            entry(flat.min()), entry(flat.max()), flat.size, how,
            task="a worker process of engine='processes' died ({how}) while evaluating f (coloured: one "
                 "entry of each slice perturbed together) with")

    def _ensure_pool(self) -> ForkPool:
        # The workers' differencer: a shallow copy that does not hold the pool, so this one
        # stays collectable and the pool's finalizer shuts it down.
        if self.pool is None:
            self.pool = ForkPool(copy.copy(self), self.workers, prepare=_pristine)
        return self.pool
