"""The executor runner: chunks of points through any ``concurrent.futures.Executor``.

``check(f, x, grad, executor=ex)`` sends the evaluations to ``ex``: a ``dask.distributed``
cluster (``Client(...).get_executor()``), a ``ProcessPoolExecutor``, a ``ThreadPoolExecutor``
(threads need no pickling of anything but the payload once), or anything else with ``submit``.
``executor=ExecutorOptions(ex, retries=...)`` tunes it. With dask::

    from dask.distributed import Client, LocalCluster
    import gradcheck

    with Client(LocalCluster(n_workers=2, threads_per_worker=1)) as client:
        report = gradcheck.check(f, x, grad, executor=client.get_executor(),
                                 checkpoint="f-check.npz")   # optional: resumable

``f`` travels by cloudpickle: a function of a module the workers can import, or one defined in
``__main__`` or inside a function (shipped by value), works; so does any closure over picklable
data. cloudpickle is needed only for executors that run tasks in other processes (dask, a
``ProcessPoolExecutor``; ``gradcheck[dask]`` brings it). A ``ThreadPoolExecutor`` runs in this
process: nothing is pickled (``f`` need not be picklable), its threads share the one working
array, and its tasks run one at a time (:func:`in_process`); for parallel work on one machine
use ``engine="processes"``. Same numbers as ``serial``, bit for bit: every chunk is evaluated on a worker by the
serial loop on the worker's own copy of the working array, and points are independent of each
other, so neither the chunking nor the worker changes a bit.

What travels
    The target (``f``'s reduced evaluation and the working array) is cloudpickled ONCE, into a
    payload named by a random token, kept by each worker process in a small cache keyed by that
    token and deserialized once per worker thread (each thread perturbs its own copy). On dask
    the payload is put into every worker's cache up front (``client.run``: one transfer per
    worker); on any other executor, which cannot address its workers, the first ``slots`` tasks
    carry it. Every other task carries only the token and its points (never whole copies of
    ``x``). A worker that has not seen the token answers ``missing``, a round trip with no work,
    and that chunk is sent again with the payload.

Chunk size (the rule), in groups of points (entries, for the entry-wise pass)
    Chunks aim at :data:`TARGET_CHUNK_SECONDS` of evaluations (>= 100x a task's overhead). The
    first wave has :data:`FIRST_CHUNK_ENTRIES` groups per chunk and measures the time per
    group on the workers; later chunks are ``TARGET_CHUNK_SECONDS / seconds_per_group``, at
    most :data:`MAX_CHUNK_ENTRIES` and at most ``remaining / (2 * slots)`` (guided scheduling).
    At most ``IN_FLIGHT_PER_SLOT * slots`` chunks are in flight.

Faults
    A chunk whose task raises (worker lost, ``KilledWorker``, ``BrokenProcessPool``,
    ``CancelledError``, ``OSError``, ...) is resubmitted, at most ``retries`` times, then
    :class:`ChunkFailedError` names its entries; each point's value is recorded exactly once. An
    exception raised by the user's ``f`` is deterministic: it is not retried but raised as
    :class:`~gradcheck.FunctionError` at the first failing point, as ``serial`` reports it. A
    worker whose ``f`` wrote into its input reports it: :class:`~gradcheck.InputMutationError`.
"""
from __future__ import annotations

import asyncio
import collections
import concurrent.futures as cf
import functools
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

from .._core.arguments import integer
from .._core.errors import GradcheckError
from .answers import answer, failure, mutated_on_worker
from .points import Points, Shift
from .target import Slices, Target, entry_of

#: Resubmissions of a chunk whose task failed (not counting the first attempt).
RETRIES = 2
#: Chunks aim at this much evaluation time on a worker (>= 100x a task's overhead).
TARGET_CHUNK_SECONDS = 0.5
#: Groups (entries) per chunk of the first wave, which measures the time per group.
FIRST_CHUNK_ENTRIES = 4
#: No chunk has more groups than this (bounds messages and the work a lost worker loses).
MAX_CHUNK_ENTRIES = 1 << 16
#: Chunks in flight per slot (a slot: one task running at a time on some worker).
IN_FLIGHT_PER_SLOT = 2
#: Payloads a worker process keeps, and deserialized targets a worker thread keeps.
CACHE_SIZE = 2

OnChunk = Callable[[int, int, np.ndarray], None]


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
        A fixed chunk size (entries) instead of the timing rule (``gradcheck._evaluate.executor``
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
    >>> import concurrent.futures
    >>> with concurrent.futures.ThreadPoolExecutor(2) as pool:
    ...     ExecutorOptions(pool, retries=0).retries
    0
    >>> import numpy as np, gradcheck
    >>> with concurrent.futures.ThreadPoolExecutor(2) as pool:
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
        integer("retries", self.retries, minimum=0)
        integer("chunk_entries", self.chunk_entries, minimum=1, none=True)
        integer("slots", self.slots, minimum=1, none=True)

    @classmethod
    def of(cls, executor: Any) -> ExecutorOptions:
        return executor if isinstance(executor, ExecutorOptions) else cls(executor)


class ChunkFailedError(GradcheckError, RuntimeError):
    """A chunk of entries could not be evaluated: its task failed ``attempts`` times for
    reasons outside ``f`` (a lost worker, a broken pool, ...).

    ``entries`` are the multi-indices of the entries the chunk perturbs (in
    :func:`gradcheck.check_params`, of the parameters ``params`` names, one per entry; else
    None), ``attempts`` how often it was tried, ``unfinished`` how many of the call's points had
    no result, counted in ``unit``: the entry-wise pass's entries, a screen's blocks, the
    colouring's rounds, the points along a direction (``size``: the chunk's own, in ``unit``;
    None for entries, which ``entries`` counts); the last failure is chained as ``__cause__``.
    """

    def __init__(self, entries: list[tuple[int, ...]], attempts: int, unfinished: int,
                 cause: BaseException, unit: str = "entries", size: int | None = None,
                 params: list[str] | None = None) -> None:
        self.entries, self.attempts, self.unfinished = list(entries), int(attempts), int(unfinished)
        self.unit, self.size, self.cause = unit, size, cause
        self.params = None if params is None else list(params)
        one = self.params is not None and len(set(self.params)) == 1  # of one parameter: said once
        names = [""] * len(self.entries) if self.params is None or one else [f" of {n!r}" for n in self.params]
        shown = ", ".join(f"{e}{n}" for e, n in zip(self.entries[:8], names))
        more = f" and {len(self.entries) - 8} more" if len(self.entries) > 8 else ""
        of = f" of parameter {self.params[0]!r}" if one and self.params else ""
        what = f"{len(self.entries)} entries ({shown}{more}){of}" if size is None else (
            f"{_counted(size, unit)} ({len(self.entries)} entries{of}: {shown}{more})")
        lost = f"{self.unfinished} entries of this pass are" if unit == "entries" else (
            f"{_counted(self.unfinished, unit)} of this pass {'is' if self.unfinished == 1 else 'are'}")
        # checkpoint= is check's (its entry-wise pass and its colouring's rounds), not check_params'
        kept = " (with checkpoint=... the finished entries are kept)" if unit in ("entries", "rounds") and \
            self.params is None else ""
        super().__init__(
            f"a chunk of {what} failed {self.attempts} times on the executor, last with "
            f"{type(cause).__name__}: {cause}; {lost} unchecked. "
            f"The executor or its workers are failing, not f; fix them and run again{kept}"
        )

    def at(self, locate: Callable[[int], tuple[str, tuple[int, ...]]]) -> ChunkFailedError:
        """The same failure, its entries named ``(parameter, index)`` by ``locate`` (check_params'
        joint screen, whose workers see one flat vector of every parameter)."""
        named = [locate(int(e[0])) for e in self.entries]
        return ChunkFailedError([i for _, i in named], self.attempts, self.unfinished, self.cause, self.unit,
                                self.size, [n for n, _ in named])


def _counted(n: int, unit: str) -> str:
    """``"1 block"``, ``"2 blocks"`` (units: blocks, rounds, points)."""
    return f"{n} {unit[:-1] if n == 1 else unit}"


@dataclass
class ExecutorStats:
    """What a runner sent and got back (for tests and curious users); counts in groups."""

    chunks: int = 0            # chunks whose results were recorded
    entries: int = 0           # groups recorded (each exactly once per call)
    retries: int = 0           # resubmissions after a failed task
    misses: int = 0            # tasks answered "missing" (sent again with the payload)
    payload_sends: int = 0     # payload transfers: tasks that carried it, workers primed with it
    chunk_sizes: list[int] = field(default_factory=list)


class ExecutorRunner:
    name = "executor"
    notes: tuple[str, ...] = ()

    def __init__(self, target: Target, options: ExecutorOptions | None = None) -> None:
        options = ExecutorOptions.of(target.executor if options is None else options)
        self.target = target
        self.options = options
        self._client = dask_client(options.executor)
        self.slots = int(options.slots) if options.slots else _slots(options.executor, self._client)
        self.executor = in_process(options.executor)  # threads: no pickling, one task at a time
        self.token = uuid.uuid4().hex
        self.payload = payload_for((target.evaluate, target.work, target.slices), options.executor)
        self.stats = ExecutorStats()
        self.evaluations = 0
        self._primed = False
        self._per_entry: float | None = None

    def run(self, points: Points, progress: Callable[[int], None] | None = None,
            on_chunk: OnChunk | None = None) -> np.ndarray:
        """The reduced ``f`` at each point, in chunks on the executor. ``progress(groups done)``
        as chunks finish; ``on_chunk(lo, hi, values)`` receives each chunk's values (points
        ``lo:hi`` of this call) the moment they arrive (the checkpoint saves them)."""
        points = points.joined(self.target.work.dtype)  # blocks travel as arrays
        values = _Pass(self, points, progress, on_chunk).run()
        self.evaluations += len(points)
        return values

    def close(self, terminate: bool = False) -> None:
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
        """What a task carries besides the token: the payload bytes on a miss, and for the
        first ``slots`` tasks on an executor whose workers cannot be primed."""
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

    def _submit(self, points: Points, force_payload: bool) -> cf.Future:
        payload = self._payload_argument(force_payload)
        # What travels: the points' entries and values (and where each point starts), or a
        # shift's step rule.
        args = (self.token, payload, points.idx, points.values, points.starts, points.shift)
        if self._client is not None:
            # pure=False: a resubmitted chunk must be a new task, not the failed one's key.
            return self.executor.submit(_run_chunk, *args, pure=False)
        return self.executor.submit(_run_chunk, *args)

    def _entries(self, positions: np.ndarray) -> list[tuple[int, ...]]:
        return [entry_of(i, self.target.work.shape) for i in positions]


@dataclass
class _Chunk:
    lo: int          # groups lo:hi of the pass
    hi: int
    attempt: int = 0
    force_payload: bool = False


class _Pass:
    """One call of ``run``: submit chunks in a window, collect, retry, report."""

    def __init__(self, runner: ExecutorRunner, points: Points, progress, on_chunk) -> None:
        self.runner, self.points = runner, points
        self.progress, self.on_chunk = progress, on_chunk
        self.width = points.width
        self.count = points.groups
        self.slices = runner.target.slices
        self.out = np.full(points.answer_count(self.slices), np.nan)
        self.filled = np.zeros(self.count, dtype=bool)
        self.next_lo = 0
        self.queue: collections.deque[_Chunk] = collections.deque()
        self.in_flight: dict[cf.Future, _Chunk] = {}
        self.failures: list[tuple[int, tuple]] = []   # (first point, error answer) from f
        self.stop_at: int | None = None                # no chunk after an f error's chunk

    def run(self) -> np.ndarray:
        window = IN_FLIGHT_PER_SLOT * self.runner.slots
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
            lo, got = min(self.failures, key=lambda item: item[0])
            t = self.runner.target
            raise failure(self.points, lo, got, t.work.shape, t.param, "on a worker of the executor")
        missing = np.flatnonzero(~self.filled)
        if missing.size:  # cannot happen: every chunk is recorded or raises
            raise RuntimeError(f"executor engine lost {missing.size} entries; please report this")
        return self.out

    def _next_chunk(self) -> _Chunk | None:
        while self.queue:
            chunk = self.queue.popleft()
            if self.stop_at is None or chunk.lo < self.stop_at:
                return chunk
        if self.next_lo >= self.count or (self.stop_at is not None and self.next_lo > self.stop_at):
            return None
        lo = self.next_lo
        hi = lo + self.runner._chunk_size(self.count - lo)
        self.next_lo = hi
        return _Chunk(lo, hi)

    def _part(self, chunk: _Chunk) -> Points:
        return self.points.part(chunk.lo * self.width, chunk.hi * self.width)

    def _launch(self, chunk: _Chunk) -> None:
        try:
            fut = self.runner._submit(self._part(chunk), chunk.force_payload)
        except (Exception, cf.CancelledError, asyncio.CancelledError) as exc:
            # A broken or shut-down pool refuses at submit: same budget as a failed task.
            self._failed(chunk, exc)
            return
        self.in_flight[fut] = chunk

    def _failed(self, chunk: _Chunk, exc: BaseException) -> None:
        runner = self.runner
        if chunk.attempt >= runner.options.retries:
            entries = self.points.flat_entries(chunk.lo * self.width, chunk.hi * self.width)
            unit, counted = self.points.unit, self.points.counted
            size = None if unit == "entries" else counted(np.arange(chunk.lo, chunk.hi))
            param = runner.target.param
            raise ChunkFailedError(runner._entries(entries), chunk.attempt + 1, counted(np.flatnonzero(~self.filled)),
                                   exc, unit, size, None if param is None else [param] * entries.size) from exc
        runner.stats.retries += 1
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
        runner = self.runner
        if status == "missing":
            runner.stats.misses += 1
            self.queue.appendleft(_Chunk(chunk.lo, chunk.hi, chunk.attempt, force_payload=True))
        elif status == "ok":
            self._record(chunk, outcome[1], outcome[2])
        elif status == "error":
            self.failures.append((chunk.lo * self.width, outcome))
            self.stop_at = chunk.lo if self.stop_at is None else min(self.stop_at, chunk.lo)
            for other_fut, other in list(self.in_flight.items()):
                if other.lo > self.stop_at:
                    other_fut.cancel()
                    del self.in_flight[other_fut]
        elif status == "mutated":
            raise mutated_on_worker(runner._entries(np.array([self.points.first(chunk.lo * self.width) or 0]))[0])
        else:  # pragma: no cover - a worker running another gradcheck version
            raise RuntimeError(f"unexpected answer {status!r} from a worker")

    def _record(self, chunk: _Chunk, values: np.ndarray, seconds: float) -> None:
        lo, hi, stats = chunk.lo, chunk.hi, self.runner.stats
        if self.filled[lo:hi].any():  # each point recorded exactly once
            raise RuntimeError(f"executor engine got entries {lo}:{hi} twice; please report this")
        a, b = lo * self.width, hi * self.width
        self.out[self.points.answer_span(a, b, self.slices)] = values
        self.filled[lo:hi] = True
        stats.chunks += 1
        stats.entries += hi - lo
        stats.chunk_sizes.append(hi - lo)
        self.runner._observe(hi - lo, seconds)
        if self.on_chunk is not None:
            self.on_chunk(a, b, self.out[a:b])
        if self.progress is not None:
            self.progress(int(self.filled.sum()))


# -- in the parent ------------------------------------------------------------------------
@dataclass(frozen=True)
class InProcess:
    """The payload for an executor whose tasks run in this process: the objects themselves."""

    objects: tuple


class _OneAtATime:
    """An in-process executor whose tasks hold one lock: they share the one working array."""

    def __init__(self, executor: Any) -> None:
        self.inner, self.lock = executor, threading.Lock()

    def submit(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> cf.Future:
        return self.inner.submit(functools.partial(_locked, self.lock, fn), *args, **kwargs)


def _locked(lock: threading.Lock, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    with lock:
        return fn(*args, **kwargs)


def runs_in_process(executor: Any) -> bool:
    """Whether ``executor``'s tasks run in this process (a ``ThreadPoolExecutor``)."""
    return isinstance(executor, cf.ThreadPoolExecutor)


def in_process(executor: Any) -> Any:
    """``executor``, or for one whose tasks run in this process a wrapper whose tasks run one
    at a time (they perturb the same working array)."""
    return _OneAtATime(executor) if runs_in_process(executor) else executor


def payload_for(objects: tuple, executor: Any) -> bytes | InProcess:
    """What travels to the workers: ``objects`` (the evaluation, its working array, the slices) as they
    are for an in-process executor, else in one cloudpickle call (the closure's array and
    ``work`` stay one object on the worker, so perturbing ``work`` is what ``evaluate`` sees)."""
    if runs_in_process(executor):
        return InProcess(objects)
    try:
        import cloudpickle
    except ModuleNotFoundError as exc:
        raise ModuleNotFoundError(
            f"an executor that runs tasks in other processes ({type(executor).__name__}) needs cloudpickle "
            "to ship f there: pip install cloudpickle (gradcheck[dask] brings it); a ThreadPoolExecutor, "
            "or engine='processes' (fork), needs none"
        ) from exc
    try:
        return cloudpickle.dumps(objects, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:
        raise TypeError(
            f"the executor engine ships f to other processes, but f (or the backend) cannot be "
            f"pickled: {type(exc).__name__}: {exc}. Use engine='serial' or 'processes' (or a "
            "ThreadPoolExecutor), or make f picklable (a module-level function, or a closure over picklable data)"
        ) from exc


def dask_client(executor: Any) -> Any:
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


# -- on a worker ----------------------------------------------------------------------------
_PAYLOADS: collections.OrderedDict[str, bytes] = collections.OrderedDict()
_PAYLOADS_LOCK = threading.Lock()
_LOCAL = threading.local()


def _remember(cache: collections.OrderedDict, key: str, value: Any) -> None:
    cache[key] = value
    cache.move_to_end(key)
    while len(cache) > CACHE_SIZE:
        cache.popitem(last=False)


def _target_for(token: str, payload: bytes | InProcess | None) -> tuple[Callable[[], object], np.ndarray, np.ndarray, Slices | None] | None:
    """This thread's ``(evaluate, work, pristine, slices)`` for ``token``, or None when this
    process has never received the payload."""
    targets = getattr(_LOCAL, "targets", None)
    if targets is None:
        targets = _LOCAL.targets = collections.OrderedDict()
    if token in targets:
        targets.move_to_end(token)
        return targets[token]
    with _PAYLOADS_LOCK:
        if payload is not None:
            _remember(_PAYLOADS, token, payload)
        payload = _PAYLOADS.get(token)
    if payload is None:
        return None
    evaluate, work, slices = payload.objects if isinstance(payload, InProcess) else pickle.loads(payload)
    entry = (evaluate, work, work.copy(), slices)
    _remember(targets, token, entry)
    return entry


def _store_payload(token: str, payload: bytes) -> bool:
    """Put ``payload`` into this process's cache (dask primes its workers with it)."""
    with _PAYLOADS_LOCK:
        _remember(_PAYLOADS, token, payload)
    return True


def _forget(token: str) -> None:
    """Drop ``token`` from this thread's and this process's caches."""
    targets = getattr(_LOCAL, "targets", None)
    if targets is not None:
        targets.pop(token, None)
    with _PAYLOADS_LOCK:
        _PAYLOADS.pop(token, None)


def _run_chunk(token: str, payload: bytes | None, idx: np.ndarray, values: np.ndarray,
               starts: np.ndarray | None, shift: Shift | None = None) -> tuple:
    """One chunk of points on this thread's copy of the working array: ``("ok", values,
    seconds)``, ``("error", j, cause, traceback)``, ``("missing",)`` without the payload, or
    ``("mutated",)`` (see :mod:`.answers`)."""
    got = _target_for(token, payload)
    if got is None:
        return ("missing",)
    evaluate, work, pristine, slices = got
    started = time.perf_counter()
    result = answer(evaluate, work, pristine, Points(idx, values, starts, shift=shift), slices)
    if result[0] == "mutated":
        _forget(token)  # this copy is spoiled; a later task starts from the payload again
    if result[0] != "ok":
        return result
    return result + (time.perf_counter() - started,)
