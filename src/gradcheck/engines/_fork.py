"""Forking worker processes safely: who may fork, how many, and workers that die with
their parent.

gradcheck forks in two places, the processes engine and the referee's pool, because a
forked worker inherits ``f`` and the inputs without pickling them. Forking is refused
(the caller then runs in-process) when the platform has no ``fork`` start method, and
when jax has started its runtime in this process: jax's threads may hold locks at the
moment of the fork, and a child that then calls into jax deadlocks (jax warns about
exactly this).

>>> usable_cores() >= 1
True
"""
from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import weakref
from concurrent.futures import ProcessPoolExecutor
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
    """In a forked worker (Linux): ask the kernel to SIGKILL it when the process that
    forked it dies, however it dies (SIGTERM's default action, SIGKILL, a crash: nothing
    runs in the parent then, and the worker would otherwise wait on its queue forever).
    Elsewhere a no-op."""
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


class ForkPoolOwner:
    """Owns one fork ``ProcessPoolExecutor`` (``self.workers`` processes), started on first
    use and shut down by :meth:`close` or when the owner is collected. The engines of
    ``check``, ``screen`` and ``independent_axes`` share it."""

    workers: int
    _pool: ProcessPoolExecutor | None = None
    _finalizer: weakref.finalize | None = None

    def close(self, terminate: bool = False) -> None:
        """Shut the pool down (``terminate=True``: kill the workers and join them)."""
        pool, self._pool = self._pool, None
        if self._finalizer is not None:
            self._finalizer.detach()
            self._finalizer = None
        if pool is not None:
            shutdown_pool(pool, terminate)

    def _fork_pool(self, initializer: Any, initargs: tuple) -> ProcessPoolExecutor:
        """The pool, forked now if it is not running (``initargs`` are inherited through
        fork, never pickled)."""
        if self._pool is None:
            self._pool = ProcessPoolExecutor(max_workers=self.workers, mp_context=multiprocessing.get_context("fork"),
                                             initializer=initializer, initargs=initargs)
            self._finalizer = weakref.finalize(self, shutdown_pool, self._pool, False)
        return self._pool
