"""Forking worker processes safely: who may fork, how many, one pool owner, workers that die
with their parent.

Every fork pool of gradcheck is a :class:`ForkPool`: the processes runner's and the referee's
(:func:`fork_map`). A forked worker inherits ``f`` and the inputs without pickling them.
Forking is refused (the caller then runs in-process) when the platform has no ``fork`` start
method, and when jax has started its runtime in this process: jax's threads may hold locks at
the moment of the fork, and a child that then calls into jax deadlocks (jax warns about exactly
this). A worker that dies breaks the pool: :class:`~gradcheck.WorkerDiedError`, never a raw
``BrokenProcessPool``. Ctrl-C or an error terminates and joins the workers (they ignore SIGINT
themselves), and on Linux the kernel kills them when the parent dies without a chance to clean
up (SIGTERM's default action, SIGKILL, a crash). A Ctrl-C that arrives while the pool forks is
held back until the forks are done (:func:`interrupts_held`): raised inside CPython's at-fork
handlers it would be printed and lost, and the check would go on.

>>> usable_cores() >= 1
True
"""
from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import sys
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def usable_cores() -> int:
    """Cores this process may run on (its affinity mask where the OS tells it)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def fork_available() -> bool:
    return "fork" in multiprocessing.get_all_start_methods()


def fork_hazard() -> str | None:
    """Why forking this process now is unsafe, or None."""
    if not fork_available():
        return "this platform has no 'fork' start method"
    bridge = sys.modules.get("jax._src.xla_bridge")
    initialized = getattr(bridge, "backends_are_initialized", None)
    if initialized is not None:
        try:
            if initialized():
                return ("jax's runtime is running in this process, and a forked child that "
                        "calls into jax may deadlock")
        except Exception:  # pragma: no cover - another jax version's internals
            return "jax is loaded in this process, and a forked child may deadlock in it"
    return None


def die_with(parent: int) -> None:
    """In a forked worker (Linux): ask the kernel to SIGKILL it when the process that forked
    it dies, however it dies (nothing runs in the parent then, and the worker would otherwise
    wait on its queue forever). Elsewhere a no-op."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):  # pragma: no cover - no prctl: keep the old behaviour
        return
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)


def shutdown_pool(pool: Any, terminate: bool) -> None:
    """Shut a ProcessPoolExecutor down; ``terminate=True`` (Ctrl-C, an error): kill its
    workers and join them instead of waiting for their queued work."""
    if not terminate:
        pool.shutdown(wait=True, cancel_futures=True)
        return
    if hasattr(pool, "kill_workers"):  # Python >= 3.14
        pool.kill_workers()
        pool.shutdown(wait=True, cancel_futures=True)
        return
    processes = list((getattr(pool, "_processes", None) or {}).values())
    manager = getattr(pool, "_executor_manager_thread", None)  # shutdown() forgets it
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in processes:
        if proc.is_alive():
            proc.terminate()
    for proc in processes:
        proc.join(timeout=5)
        if proc.is_alive():
            proc.kill()
            proc.join()
    if manager is not None:
        # Let the pool's manager thread finish closing its wakeup pipe now: otherwise the
        # interpreter's exit hook may write to that pipe while the thread closes it, and
        # print an OSError traceback after gradcheck's own one-line error.
        manager.join(timeout=5)


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


@contextlib.contextmanager
def interrupts_held() -> Iterator[None]:
    """Hold SIGINT back for the block (the main thread only: Python handles signals there): one
    that arrives is recorded and delivered to the handler that was in place once the block is
    done. An interrupt raised inside the at-fork handlers CPython runs in the parent around
    ``fork()`` (logging's lock release among them) is "ignored": Ctrl-C would be lost."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: held.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if held:
            signal.raise_signal(signal.SIGINT)  # to the handler in place again: KeyboardInterrupt


# -- in a worker ---------------------------------------------------------------------------
_STATE: Any = None


def _install(state: Any, parent: int, prepare: Callable[[Any], Any] | None) -> None:
    global _STATE
    die_with(parent)
    _STATE = state if prepare is None else prepare(state)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's: it terminates the pool


def _call(func: Callable[[Any, Any], Any], item: Any) -> Any:
    return func(_STATE, item)


class WorkerDied(Exception):
    """A worker of a :class:`ForkPool` died (the pool is closed); ``how`` says how, ``broken``
    lists the positions of the submitted items whose futures the broken pool failed."""

    def __init__(self, how: str, broken: list[int]) -> None:
        super().__init__(how)
        self.how, self.broken = how, broken


class ForkPool:
    """One fork ``ProcessPoolExecutor`` of ``workers`` processes, each holding ``state`` (the
    fork's copy: never pickled; ``prepare(state)`` in place of it when given, run in each
    worker as it starts), started on first use and shut down by :meth:`close` or when the
    owner is collected. :meth:`submit` runs ``func(state, item)`` on a worker (``func``: a
    module-level function, which travels by name)."""

    def __init__(self, state: Any, workers: int, prepare: Callable[[Any], Any] | None = None) -> None:
        self.state, self.workers, self.prepare = state, max(1, int(workers)), prepare
        self._pool: ProcessPoolExecutor | None = None
        self._finalizer: weakref.finalize | None = None
        self.hazard: str | None = None  # set when the pool was forked in spite of one

    def submit(self, func: Callable[[Any, Any], Any], item: Any) -> Future:
        if self._pool is not None:
            return self._pool.submit(_call, func, item)
        self.hazard = fork_hazard()
        with interrupts_held():  # the first submit forks every worker
            self._pool = ProcessPoolExecutor(max_workers=self.workers, mp_context=multiprocessing.get_context("fork"),
                                             initializer=_install, initargs=(self.state, os.getpid(), self.prepare))
            self._finalizer = weakref.finalize(self, shutdown_pool, self._pool, False)
            return self._pool.submit(_call, func, item)

    def died(self, futures: Iterable[Future], exc: BrokenProcessPool) -> WorkerDied:
        """After ``exc``: the pool closed (its workers killed), and how the dead one died."""
        pool = self._pool
        processes = list((getattr(pool, "_processes", None) or {}).values())
        self.close(terminate=True)
        broken = [k for k, fut in enumerate(futures)
                  if fut.done() and not fut.cancelled() and isinstance(fut.exception(), BrokenProcessPool)]
        return WorkerDied(how_it_died(processes), broken)

    def close(self, terminate: bool = False) -> None:
        """Shut the pool down (``terminate=True``: kill the workers and join them)."""
        pool, self._pool = self._pool, None
        if self._finalizer is not None:
            self._finalizer.detach()
            self._finalizer = None
        if pool is not None:
            shutdown_pool(pool, terminate)


def fork_map(func: Callable[[Any, Any], Any], items: list[Any], *, state: Any, workers: int) -> list[Any]:
    """``[func(state, item) for item in items]`` on a fork pool of ``workers`` processes, in
    order; the pool is shut down after (killed on an error or Ctrl-C). A dead worker raises
    :class:`WorkerDied`."""
    pool = ForkPool(state, workers)
    futures: list[Future] = []
    try:
        futures = [pool.submit(func, item) for item in items]
        results = [fut.result() for fut in futures]
    except BrokenProcessPool as exc:
        raise pool.died(futures, exc) from exc
    except BaseException:
        pool.close(terminate=True)  # Ctrl-C or an error: no waiting for the rest
        raise
    pool.close()
    return results
