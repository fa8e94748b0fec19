"""The executor engine: chunks of entries through any ``concurrent.futures.Executor``.

``check(f, x, grad, executor=ex)`` sends the 2N evaluations to ``ex``: a
``dask.distributed`` cluster (``Client(...).get_executor()``), a
``ProcessPoolExecutor``, a ``ThreadPoolExecutor`` (only for an ``f`` that releases the
GIL), or anything else with ``submit``. ``executor=ExecutorOptions(ex, retries=...)``
tunes it. With dask::

    from dask.distributed import Client, LocalCluster
    import gradcheck

    with Client(LocalCluster(n_workers=2, threads_per_worker=1)) as client:
        report = gradcheck.check(f, x, grad, executor=client.get_executor(),
                                 checkpoint="f-check.npz")   # optional: resumable

``f`` travels by cloudpickle: a function of a module the workers can import, or one defined in
``__main__`` or inside a function (shipped by value), works; so does any closure over
picklable data.

Same numbers as ``serial``, bit for bit: every chunk is differenced on a worker by the
serial code (:func:`central_differences`) on the worker's own copy of the private
working array, and entries are independent of each other, so neither the chunking nor
the worker changes a bit. (``f`` itself must compute the same on a worker as here: a
BLAS with a different thread count may round a large ``A @ x`` differently.)

What travels
    The problem (``f``, the reduction, the working array) is cloudpickled ONCE, into a
    payload named by a random token, kept by each worker process in a small cache keyed
    by that token and deserialized once per worker thread (each thread perturbs its own
    copy). On dask the payload is put into every worker's cache up front
    (``client.run``: one transfer per worker); on any other executor, which cannot
    address its workers, the first ``slots`` tasks carry it. Every other task carries
    only the token. A worker that has not seen the token (a worker that joined or was
    restarted after a crash, or a pool worker that got no payload-carrying task) answers
    ``missing``, a round trip with no work, and that chunk is sent again with the payload
    (to whichever worker takes it: on a generic executor the payload travels
    ``slots + misses`` times in all, and only workers still without it miss). (A scattered future would be simpler on dask, but
    when the only worker holding it dies, tasks that depend on it can wait forever.) A
    chunk's own message is its indices and steps (16 bytes per entry) and its results
    (24 bytes per entry).

Chunk size (the rule)
    Per-task overhead (a scheduler round trip: ~1-5 ms on dask, ~0.1 ms on a local
    pool) is amortized when a task computes for much longer than that, so chunks
    aim at :data:`TARGET_CHUNK_SECONDS` of evaluations (>= 100x the overhead). The first
    wave has :data:`FIRST_CHUNK_ENTRIES` entries per chunk and measures the per-entry
    time on the workers; later chunks are ``TARGET_CHUNK_SECONDS / seconds_per_entry``
    entries, at most :data:`MAX_CHUNK_ENTRIES` (bounds message size and the work a lost
    worker takes with it) and at most ``remaining / (2 * slots)`` (guided scheduling: the
    tail is split finely so no worker idles while one finishes a big chunk). At most
    ``IN_FLIGHT_PER_SLOT * slots`` chunks are in flight, so each worker has its next
    chunk queued while it computes.

Faults
    A chunk whose task raises (worker lost, ``KilledWorker``, ``BrokenProcessPool``,
    ``CancelledError``, ``OSError``, ...) is resubmitted, at most ``retries`` times, then
    :class:`ChunkFailedError` names its entries. dask reschedules a killed worker's
    tasks by itself; either way each entry's result is recorded exactly once. An
    exception raised by the user's ``f`` is deterministic: it is not retried but
    re-raised as :class:`FunctionError` at the first failing entry in index order, as
    ``serial`` reports it. A worker whose ``f`` wrote into its input reports it, and the
    check raises :class:`InputMutationError`.
"""
from __future__ import annotations

import asyncio
import collections
import concurrent.futures as cf
import math
import os
import pickle
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._core.errors import FunctionError, GradcheckError
from ._chunks import difference_chunk, rebuild_error, worker_mutation_error

#: Resubmissions of a chunk whose task failed (not counting the first attempt).
RETRIES = 2
#: Chunks aim at this much evaluation time on a worker (>= 100x a task's overhead).
TARGET_CHUNK_SECONDS = 0.5
#: Entries per chunk of the first wave, which measures the time per entry.
FIRST_CHUNK_ENTRIES = 4
#: No chunk has more entries than this (bounds messages and the work a lost worker loses).
MAX_CHUNK_ENTRIES = 1 << 16
#: Chunks in flight per slot (a slot: one task running at a time on some worker).
IN_FLIGHT_PER_SLOT = 2
#: Payloads a worker process keeps, and deserialized problems a worker thread keeps.
CACHE_SIZE = 2


@dataclass(frozen=True)
class ExecutorOptions:
    """An executor with settings: ``check(..., executor=ExecutorOptions(ex, retries=0))``.

    Parameters
    ----------
    executor : concurrent.futures.Executor
        Where the chunks run: any object with ``.submit`` (a process or thread pool, a dask
        cluster's ``client.get_executor()``).
    retries : int, default 2
        Resubmissions of a chunk whose task failed (a lost worker, a broken pool), before
        :class:`ChunkFailedError`. An exception raised by ``f`` itself is never retried.
    chunk_entries : int, optional
        A fixed chunk size instead of the timing rule (``gradcheck.engines._executor``
        explains the rule).
    slots : int, optional
        Tasks the executor runs at once (default: asked from the executor: dask's thread
        count, a pool's ``max_workers``, else the cores).

    Raises
    ------
    TypeError
        ``executor`` has no ``submit`` method.
    ValueError
        A negative ``retries``, or ``chunk_entries`` / ``slots`` below 1.

    Examples
    --------
    >>> import numpy as np, gradcheck
    >>> from concurrent.futures import ThreadPoolExecutor
    >>> with ThreadPoolExecutor(2) as pool:
    ...     options = gradcheck.ExecutorOptions(pool, retries=0)
    ...     r = gradcheck.check(lambda x: np.sin(x).sum(), np.linspace(0, 1, 8), np.cos, executor=options)
    >>> r.passed, r.engine
    (True, 'executor')
    """

    executor: Any
    retries: int = RETRIES
    chunk_entries: int | None = None
    slots: int | None = None

    def __post_init__(self) -> None:
        if not callable(getattr(self.executor, "submit", None)):
            raise TypeError(
                f"executor must be a concurrent.futures.Executor (something with .submit), "
                f"got {type(self.executor).__name__}; for dask use Client(...).get_executor()"
            )
        if int(self.retries) < 0:
            raise ValueError(f"retries must be >= 0, got {self.retries!r}")
        if self.chunk_entries is not None and int(self.chunk_entries) < 1:
            raise ValueError(f"chunk_entries must be >= 1, got {self.chunk_entries!r}")
        if self.slots is not None and int(self.slots) < 1:
            raise ValueError(f"slots must be >= 1, got {self.slots!r}")


class ChunkFailedError(GradcheckError, RuntimeError):
    """A chunk of entries could not be differenced: its task failed ``attempts`` times
    for reasons outside ``f`` (a lost worker, a broken pool, ...).

    ``entries`` are the multi-indices of the chunk, ``attempts`` how often it was tried,
    ``unfinished`` how many entries of the call had no result; the last failure is
    chained as ``__cause__``.
    """

    def __init__(self, entries: list[tuple[int, ...]], attempts: int, unfinished: int,
                 cause: BaseException) -> None:
        self.entries, self.attempts, self.unfinished = list(entries), int(attempts), int(unfinished)
        shown = ", ".join(str(e) for e in self.entries[:8])
        more = f" and {len(self.entries) - 8} more" if len(self.entries) > 8 else ""
        super().__init__(
            f"a chunk of {len(self.entries)} entries ({shown}{more}) failed {self.attempts} times "
            f"on the executor, last with {type(cause).__name__}: {cause}; {self.unfinished} "
            "entries of this pass are unchecked. The executor or its workers are failing, not "
            "f; fix them and run again (with checkpoint=... the finished entries are kept)"
        )


def auto_reason(problem: Any) -> str | None:
    """``auto`` picks this engine whenever ``check`` was given an executor."""
    options = getattr(problem, "executor", None)
    if options is None:
        return None
    ex = options.executor if isinstance(options, ExecutorOptions) else options
    return f"check was given an executor ({type(ex).__name__}): chunks of entries run on it"


def make_engine(problem: Any) -> ExecutorEngine:
    options = getattr(problem, "executor", None)
    if options is None:
        raise ValueError("engine='executor' needs check(..., executor=...): a concurrent.futures.Executor")
    if not isinstance(options, ExecutorOptions):
        options = ExecutorOptions(options)
    return ExecutorEngine(problem, options)


@dataclass
class ExecutorStats:
    """What an engine sent and got back (for tests and curious users)."""

    chunks: int = 0            # chunks whose results were recorded
    entries: int = 0           # entries recorded (each exactly once per call)
    retries: int = 0           # resubmissions after a failed task
    misses: int = 0            # tasks answered "missing" (sent again with the payload)
    payload_sends: int = 0     # payload transfers: tasks that carried it, workers primed with it
    chunk_sizes: list[int] = field(default_factory=list)


class ExecutorEngine:
    name = "executor"

    def __init__(self, problem: Any, options: ExecutorOptions) -> None:
        self.problem = problem
        self.options = options
        self.executor = options.executor
        self.shape = problem.work.shape
        self._client = _dask_client(self.executor)
        self.slots = int(options.slots) if options.slots else _slots(self.executor, self._client)
        self.token = uuid.uuid4().hex
        self.payload = _serialize(problem)
        self.stats = ExecutorStats()
        self._primed = False
        self._per_entry: float | None = None

    # -- the engine interface -------------------------------------------------------
    def differences(
        self,
        flat_indices: np.ndarray,
        steps: np.ndarray,
        progress: Callable[[int], None] | None = None,
        on_chunk: Callable[[int, int, np.ndarray, np.ndarray, np.ndarray], None] | None = None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(f_plus, f_minus, denominator)`` for ``flat_indices``, in chunks on the
        executor. ``progress(done)`` is called as chunks finish; ``on_chunk(lo, hi, fp,
        fm, den)`` receives each chunk's results (positions ``lo:hi`` of this call) the
        moment they arrive (the checkpoint saves them)."""
        idx = np.asarray(flat_indices, dtype=np.int64).reshape(-1)
        steps = np.asarray(steps, dtype=np.float64).reshape(-1)
        return _Pass(self, idx, steps, progress, on_chunk).run()

    def close(self) -> None:
        """Ask dask workers to drop the payload now (they also drop it by LRU, keeping
        :data:`CACHE_SIZE` payloads)."""
        if self._client is not None and self._primed:
            try:
                # wait=False is for coroutine functions only (dask refuses it for a plain
                # function and logs an error on every worker): a quick blocking call instead.
                self._client.run(_forget, self.token, on_error="ignore")
            except Exception:  # a closed client: nothing left to free
                pass

    # -- helpers used by a pass ---------------------------------------------------------
    def _chunk_size(self, remaining: int) -> int:
        if self.options.chunk_entries is not None:
            return max(1, min(remaining, int(self.options.chunk_entries)))
        size: float
        if self._per_entry is None:
            size = FIRST_CHUNK_ENTRIES
        elif self._per_entry > 0:
            size = TARGET_CHUNK_SECONDS / self._per_entry
        else:
            size = MAX_CHUNK_ENTRIES
        guided = math.ceil(remaining / (2 * self.slots))
        return int(max(1, min(size, guided, MAX_CHUNK_ENTRIES, remaining)))

    def _observe(self, entries: int, seconds: float) -> None:
        per_entry = seconds / max(1, entries)
        # A running mean that follows a function whose cost changes (e.g. the step study).
        self._per_entry = per_entry if self._per_entry is None else 0.5 * (self._per_entry + per_entry)

    def _payload_argument(self, force: bool) -> Any:
        """What a task carries besides the token: the payload bytes on a miss, and for
        the first ``slots`` tasks on an executor whose workers cannot be primed."""
        if not self._primed:
            self._primed = True
            if self._client is not None:
                try:
                    primed = self._client.run(_store_payload, self.token, self.payload)
                    self.stats.payload_sends += len(primed)
                except Exception:  # a worker went away meanwhile: misses will cover it
                    pass
        if force or (self._client is None and self.stats.payload_sends < self.slots):
            self.stats.payload_sends += 1
            return self.payload
        return None

    def _submit(self, idx: np.ndarray, steps: np.ndarray, force_payload: bool) -> cf.Future:
        payload = self._payload_argument(force_payload)
        if self._client is not None:
            # pure=False: a resubmitted chunk must be a new task, not the failed one's key.
            return self.executor.submit(_run_chunk, self.token, payload, idx, steps, pure=False)
        return self.executor.submit(_run_chunk, self.token, payload, idx, steps)

    def _entries(self, positions: np.ndarray) -> list[tuple[int, ...]]:
        return [tuple(int(k) for k in np.unravel_index(int(i), self.shape)) for i in positions]


@dataclass
class _Chunk:
    lo: int
    hi: int
    attempt: int = 0
    force_payload: bool = False


class _Pass:
    """One call of ``differences``: submit chunks in a window, collect, retry, report."""

    def __init__(self, engine: ExecutorEngine, idx, steps, progress, on_chunk) -> None:
        self.engine, self.idx, self.steps = engine, idx, steps
        self.progress, self.on_chunk = progress, on_chunk
        count = idx.size
        self.count = count
        self.fp = np.full(count, np.nan)
        self.fm = np.full(count, np.nan)
        self.den = np.full(count, np.nan)
        self.filled = np.zeros(count, dtype=bool)
        self.next_lo = 0
        self.queue: collections.deque[_Chunk] = collections.deque()
        self.in_flight: dict[cf.Future, _Chunk] = {}
        self.failures: list[tuple[int, tuple]] = []   # (lo, error payload) from f
        self.stop_at: int | None = None                # no chunk after an f error's chunk

    def run(self):
        eng = self.engine
        window = IN_FLIGHT_PER_SLOT * eng.slots
        try:
            while True:
                while len(self.in_flight) < window:
                    chunk = self._next_chunk()
                    if chunk is None:
                        break
                    self._launch(chunk)
                if not self.in_flight:
                    break
                finished, _ = cf.wait(list(self.in_flight), return_when=cf.FIRST_COMPLETED)
                for fut in finished:
                    chunk = self.in_flight.pop(fut, None)
                    if chunk is not None:  # None: dropped after an error of f in an earlier chunk
                        self._collect(fut, chunk)
        finally:
            # KeyboardInterrupt, a chunk out of retries, an error of f: nothing keeps running.
            for fut in self.in_flight:
                fut.cancel()
            self.in_flight.clear()
        if self.failures:
            raise _rebuild_error(min(self.failures, key=lambda item: item[0])[1])
        missing = np.flatnonzero(~self.filled)
        if missing.size:  # cannot happen: every chunk is recorded or raises
            raise RuntimeError(f"executor engine lost {missing.size} entries; please report this")
        return self.fp, self.fm, self.den

    def _next_chunk(self) -> _Chunk | None:
        while self.queue:
            chunk = self.queue.popleft()
            if self.stop_at is None or chunk.lo < self.stop_at:
                return chunk
        if self.next_lo >= self.count or (self.stop_at is not None and self.next_lo > self.stop_at):
            return None
        lo = self.next_lo
        hi = lo + self.engine._chunk_size(self.count - lo)
        self.next_lo = hi
        return _Chunk(lo, hi)

    def _launch(self, chunk: _Chunk) -> None:
        eng = self.engine
        try:
            fut = eng._submit(self.idx[chunk.lo:chunk.hi], self.steps[chunk.lo:chunk.hi], chunk.force_payload)
        except (Exception, cf.CancelledError, asyncio.CancelledError) as exc:
            # A broken or shut-down pool refuses at submit: same budget as a failed task.
            self._failed(chunk, exc)
            return
        self.in_flight[fut] = chunk

    def _failed(self, chunk: _Chunk, exc: BaseException) -> None:
        eng = self.engine
        if chunk.attempt >= eng.options.retries:
            positions = self.idx[chunk.lo:chunk.hi]
            raise ChunkFailedError(eng._entries(positions), chunk.attempt + 1,
                                   int((~self.filled).sum()), exc) from exc
        eng.stats.retries += 1
        self.queue.append(_Chunk(chunk.lo, chunk.hi, chunk.attempt + 1, chunk.force_payload))

    def _collect(self, fut: cf.Future, chunk: _Chunk) -> None:
        if self.stop_at is not None and chunk.lo > self.stop_at:
            return  # after f's first error: serial would never have reached it
        try:
            outcome = fut.result()
        except (Exception, cf.CancelledError, asyncio.CancelledError) as exc:
            self._failed(chunk, exc)
            return
        status = outcome[0]
        eng = self.engine
        if status == "missing":
            eng.stats.misses += 1
            self.queue.appendleft(_Chunk(chunk.lo, chunk.hi, chunk.attempt, force_payload=True))
        elif status == "ok":
            _, fp, fm, den, seconds = outcome
            lo, hi = chunk.lo, chunk.hi
            if self.filled[lo:hi].any():  # each entry recorded exactly once
                raise RuntimeError(f"executor engine got entries {lo}:{hi} twice; please report this")
            self.fp[lo:hi], self.fm[lo:hi], self.den[lo:hi] = fp, fm, den
            self.filled[lo:hi] = True
            eng.stats.chunks += 1
            eng.stats.entries += hi - lo
            eng.stats.chunk_sizes.append(hi - lo)
            eng._observe(hi - lo, seconds)
            if self.on_chunk is not None:
                self.on_chunk(lo, hi, self.fp[lo:hi], self.fm[lo:hi], self.den[lo:hi])
            if self.progress is not None:
                self.progress(int(self.filled.sum()))
        elif status == "error":
            self.failures.append((chunk.lo, outcome[1]))
            self.stop_at = chunk.lo if self.stop_at is None else min(self.stop_at, chunk.lo)
            for other_fut, other in list(self.in_flight.items()):
                if other.lo > self.stop_at:
                    other_fut.cancel()
                    del self.in_flight[other_fut]
        elif status == "mutated":
            raise worker_mutation_error(self.engine._entries(self.idx[chunk.lo:chunk.lo + 1])[0])
        else:  # pragma: no cover - a worker running another gradcheck version
            raise RuntimeError(f"unexpected answer {status!r} from a worker")


# -- in the parent ------------------------------------------------------------------------
def _serialize(problem: Any) -> bytes:
    """``(evaluate, work)`` in one cloudpickle call: the closure's array and ``work``
    stay one object on the worker, so perturbing ``work`` is what ``evaluate`` sees."""
    try:
        import cloudpickle
    except ModuleNotFoundError as exc:  # pragma: no cover - dask and friends bring it
        raise ModuleNotFoundError(
            "the executor engine needs cloudpickle (pip install cloudpickle, or gradcheck[dask])"
        ) from exc
    try:
        return cloudpickle.dumps((problem.evaluate, problem.work), protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:
        raise TypeError(
            f"the executor engine ships f to other processes, but f (or the backend) cannot be "
            f"pickled: {type(exc).__name__}: {exc}. Use engine='serial' or 'processes', or make f "
            "picklable (a module-level function, or a closure over picklable data)"
        ) from exc


def _dask_client(executor: Any) -> Any:
    """The dask Client behind ``client.get_executor()``, else None."""
    if type(executor).__module__.split(".")[0] == "distributed":
        return getattr(executor, "_client", None)
    return None


def _slots(executor: Any, client: Any) -> int:
    if client is not None:
        try:
            return max(1, int(sum(client.nthreads().values())))
        except Exception:
            return max(1, os.cpu_count() or 1)
    workers = getattr(executor, "_max_workers", None)
    if isinstance(workers, int) and workers > 0:
        return workers
    return max(1, os.cpu_count() or 1)


def _rebuild_error(payload: tuple) -> FunctionError:
    return rebuild_error(payload, "on a worker of the executor")


# -- on a worker ----------------------------------------------------------------------------
_PAYLOADS: collections.OrderedDict[str, bytes] = collections.OrderedDict()
_PAYLOADS_LOCK = threading.Lock()
_LOCAL = threading.local()


def _remember(cache: collections.OrderedDict, key: str, value: Any) -> None:
    cache[key] = value
    cache.move_to_end(key)
    while len(cache) > CACHE_SIZE:
        cache.popitem(last=False)


def _problem_for(token: str, payload: bytes | None):
    """This thread's ``(evaluate, work, pristine)`` for ``token``, or None when this
    process has never received the payload."""
    problems = getattr(_LOCAL, "problems", None)
    if problems is None:
        problems = _LOCAL.problems = collections.OrderedDict()
    if token in problems:
        problems.move_to_end(token)
        return problems[token]
    with _PAYLOADS_LOCK:
        if payload is not None:
            _remember(_PAYLOADS, token, payload)
        payload = _PAYLOADS.get(token)
    if payload is None:
        return None
    evaluate, work = pickle.loads(payload)
    entry = (evaluate, work, work.copy())
    _remember(problems, token, entry)
    return entry


def _store_payload(token: str, payload: bytes) -> bool:
    """Put ``payload`` into this process's cache (dask primes its workers with it)."""
    with _PAYLOADS_LOCK:
        _remember(_PAYLOADS, token, payload)
    return True


def _forget(token: str) -> None:
    """Drop ``token`` from this thread's and this process's caches."""
    problems = getattr(_LOCAL, "problems", None)
    if problems is not None:
        problems.pop(token, None)
    with _PAYLOADS_LOCK:
        _PAYLOADS.pop(token, None)


def _run_chunk(token: str, payload: bytes | None, idx: np.ndarray, steps: np.ndarray) -> tuple:
    """Serial differences of one chunk on this thread's copy of the working array.

    Answers ``("ok", fp, fm, den, seconds)``, ``("error", details)`` when f raised,
    ``("missing",)`` without the payload, ``("mutated",)`` when f wrote into its input.
    f's errors come back as data: FunctionError does not survive pickling (its
    constructor takes structured fields), and the original exception may not pickle.
    """
    problem = _problem_for(token, payload)
    if problem is None:
        return ("missing",)
    evaluate, work, pristine = problem
    started = time.perf_counter()
    answer = difference_chunk(evaluate, work, pristine, idx, steps)
    if answer[0] == "mutated":
        _forget(token)  # this copy is spoiled; a later task starts from the payload again
    if answer[0] != "ok":
        return answer
    return answer + (time.perf_counter() - started,)
