"""The coloured differencer on a ``concurrent.futures.Executor``: ``check(..., executor=ex)``.

Each evaluation of the coloured differencer (one round's entries, one in every slice, all at
``+h`` or all at ``-h``) is a task of its own, as on the processes engine (:mod:`.processes`).
What travels is the layer's executor runner's (:mod:`gradcheck._evaluate.executor`): the differencer
(``f``, the cotangent, the private working array) is cloudpickled once into a payload named by
a token, cached by each worker process and unpickled once per worker thread; a task carries the
token, the perturbed entries, their values and their slices. A worker that has not seen the
payload answers ``missing`` and the task is sent again with it; a task that fails for reasons
outside ``f`` (a lost worker, a broken pool) is resubmitted up to ``retries`` times, then
:class:`~gradcheck._evaluate.ChunkFailedError` names its entries. ``f`` raising is
:class:`~gradcheck.FunctionError` at the earliest failing evaluation, as serial reports it (not
retried); a write by ``f`` into its input, seen on the worker, is
:class:`~gradcheck.InputMutationError`. A worker evaluates with the serial code
(:meth:`Coloured.point`): the numbers are serial's, bit for bit.
"""
from __future__ import annotations

import asyncio
import concurrent.futures as cf
import copy
import time
from typing import Any, cast

import numpy as np

from .._evaluate import ChunkFailedError, ExecutorOptions, ExecutorRunner, Target
from .._evaluate.executor import IN_FLIGHT_PER_SLOT, _forget, _target_for  # transitional: see .workers
from .colour import BUDGET_BYTES, Coloured, wire_ids
from .workers import rebuild_error, worker_answer, worker_mutation_error


class ExecutorColoured(Coloured):
    """:class:`Coloured` whose evaluations are tasks on ``executor`` (an Executor or
    :class:`ExecutorOptions`)."""

    IN_PLACE = False  # each evaluation's entries and values are shipped to its runner

    def __init__(self, *args: Any, executor: Any, **kwargs: Any) -> None:
        kwargs["vectorized"] = False  # a task evaluates one point
        super().__init__(*args, **kwargs)
        options = executor if isinstance(executor, ExecutorOptions) else ExecutorOptions(executor)
        # The workers' differencer: a copy that does not hold the executor (it must pickle).
        view = copy.copy(self)
        # (transitional) the payload is the differencer itself: the workers call its point()
        self.engine = ExecutorRunner(Target(f=view.point, work=view.work, evaluate=cast(Any, view), backend=None),
                                     options)
        per_round = max(1, self.axes.slices if not self.axes.elementwise else self.work.size)
        self.rows = max(2, min(2 * IN_FLIGHT_PER_SLOT * self.engine.slots, BUDGET_BYTES // (32 * per_round)))

    def _run(self, points) -> None:
        """Each point a task; every answer recorded once; the earliest failure of f raised."""
        eng = self.engine
        attempts = [0] * len(points)
        in_flight = {self._submit(points[k], False): k for k in range(len(points))}
        failures: list[tuple[int, tuple]] = []
        try:
            while in_flight:
                finished, _ = cf.wait(list(in_flight), return_when=cf.FIRST_COMPLETED)
                for fut in finished:
                    k = in_flight.pop(fut)
                    try:
                        answer = fut.result()
                    except (Exception, cf.CancelledError, asyncio.CancelledError) as exc:
                        if attempts[k] >= eng.options.retries:
                            unfinished = sum(points[j][1].size for j in {k, *in_flight.values()})
                            raise ChunkFailedError(eng._entries(points[k][1]), attempts[k] + 1, unfinished,
                                                   exc) from exc
                        attempts[k] += 1
                        eng.stats.retries += 1
                        in_flight[self._submit(points[k], False)] = k
                        continue
                    if answer[0] == "missing":
                        eng.stats.misses += 1
                        in_flight[self._submit(points[k], True)] = k
                    elif answer[0] == "mutated":
                        raise worker_mutation_error(eng._entries(points[k][1][:1])[0] if points[k][1].size else ())
                    elif answer[0] == "error":
                        failures.append((k, answer[1]))
                    else:
                        pos, out = points[k][0], points[k][5]
                        out[pos] = answer[1]
                        eng.stats.chunks += 1
        finally:
            for fut in in_flight:  # KeyboardInterrupt, a task out of retries: nothing keeps running
                fut.cancel()
        if failures:
            raise rebuild_error(min(failures, key=lambda item: item[0])[1], "on a worker of the executor")
        self.evaluations += len(points)

    def _submit(self, point, force_payload: bool) -> cf.Future:
        _, ids, values, _, mine, _, side = point
        ids = wire_ids(ids, self.work.size)  # a round of every entry travels without its indices
        eng = self.engine
        payload = eng._payload_argument(force_payload)
        if eng._client is not None:  # pure=False: a resubmitted task must be a new one
            return eng.executor.submit(_evaluate_point, eng.token, payload, ids, values, mine, side, pure=False)
        return eng.executor.submit(_evaluate_point, eng.token, payload, ids, values, mine, side)

    def close(self) -> None:
        """Ask dask workers to drop the payload now."""
        self.engine.close()


def _evaluate_point(token: str, payload: bytes | None, ids: np.ndarray, values: np.ndarray, mine: np.ndarray,
                    side: str) -> tuple:
    """One evaluation on this thread's copy: ``("ok", reductions, seconds)``, ``("error",
    payload)``, ``("missing",)`` without the payload, or ``("mutated",)``."""
    problem = _target_for(token, payload)
    if problem is None:
        return ("missing",)
    coloured, work, pristine = problem
    started = time.perf_counter()
    answer = worker_answer(lambda: (coloured.point(ids, values, pristine.reshape(-1)[ids], mine, side),),
                           work, pristine)
    if answer[0] == "mutated":
        _forget(token)  # this copy is spoiled; a later task starts from the payload again
    return answer + (time.perf_counter() - started,) if answer[0] == "ok" else answer
