"""The runner for a target: by name, or ``auto`` (the one chooser), and the one timer.

``auto``: ``executor`` when one was given; ``compiled`` for a numba ``@njit`` function or a
native (cffi) function with the numpy backend, when the evaluations are many enough to repay
compiling (or launching) its kernel; ``batched`` when ``vectorized=True``; ``processes`` when
the estimated serial time is long and there is more than one core; else ``serial``. The
reason is said in the report; the calls of ``f`` the choice made (timing) are counted. A
generator whose evaluations are few by construction (the colouring's ``2 D``) asks for a choice
without timing (``timing=False``): then ``auto`` is ``executor``, ``batched`` or ``serial``,
and no call of ``f`` is spent.

A generator that asks for many batches as it goes (the screen) gets the same chooser as a
runner, :class:`Adaptive`: it runs the batches serially while it times them, decides at each
large batch from the median seconds per evaluation so far (:func:`batch_choice`), and keeps a
pool only if its first batch was faster. Every timing here reads one clock, :func:`now`.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .batched import BatchedRunner
from .compiled import CompiledRunner, is_warm, kind_of, unsupported
from .executor import ExecutorOptions, ExecutorRunner
from .fork import fork_available, fork_hazard, usable_cores
from .points import Points
from .processes import ProcessesRunner
from .serial import SerialRunner
from .target import Runner, Target

#: The one clock of every automatic choice (seconds, monotonic).
now = time.perf_counter

RUNNER_NAMES = ("auto", "serial", "batched", "compiled", "processes", "executor")

#: auto picks processes when the evaluations are estimated to take longer than this on one core.
PROCESSES_MIN_SECONDS = 2.0
#: auto picks compiled when the evaluations from Python are estimated to take longer than this
#: (seconds), since compiling the kernel for a new njit function takes about a second; once the
#: kernel is compiled for ``f``, see :data:`COMPILED_WARM_MIN_SECONDS`.
COMPILED_MIN_SECONDS = {"njit": 2.0, "native": 0.5}
#: With the kernel already compiled for ``f``, ``auto`` still leaves a check to serial when its
#: evaluations from Python are estimated under this (seconds): each launch of the parallel kernel
#: has a fixed cost, and a check that refines entries launches it several times (six in these
#: runs). Measured on 2 cores (numba's omp threading layer), whole ``check`` of a warm njit
#: Rosenbrock, medians of 11, compiled vs serial, by estimated serial time: idle, 0.09 ms (48
#: entries): 0.72 vs 0.61 ms; 0.5 ms: 2.3 vs 2.0; 0.9 ms: 2.5 vs 2.8; 4.1 ms: 4.1 vs 7.6. With
#: the other core busy (launches then stall 4-8 ms): 0.5 ms: 5.5 vs 2.1; 2.5 ms: 7.5 vs 5.3; 4.1
#: ms: 8.6 vs 8.0; 9.9 ms: 10.5 vs 12.4. So compiled pays off from ~1 ms idle and ~5-10 ms
#: loaded; under 5 ms, serial costs at most a few milliseconds more, and never the stalls.
COMPILED_WARM_MIN_SECONDS = 0.005


@dataclass(frozen=True)
class Choice:
    """The runner, why it was picked (said in the report), and the calls of ``f`` the choice
    made (``auto`` times one or two; the report counts them)."""

    runner: Runner
    reason: str
    evaluations: int = 0
    call_seconds: float | None = None  # the fastest timed call of f, when the choice timed any


class Declined(str):
    """Why ``auto`` passed over a runner that applies to ``f`` but does not pay off for this
    check: the reason ``auto`` gives if serial ends up running it."""


def time_call(evaluate: Callable[[], object]) -> float:
    """Seconds one call of ``evaluate`` takes (0 if it raises: the check's own pass reports
    that, at the entry where it happens). The one timer behind every automatic choice."""
    start = now()
    try:
        evaluate()
    except Exception:
        return 0.0
    return now() - start


def make_runner(name: str, target: Target) -> Runner:
    """The runner called ``name`` for ``target`` (a clear error when it does not apply)."""
    if name == "serial":
        return SerialRunner(target)
    if name == "batched":
        return BatchedRunner(target)
    if name == "compiled":
        return CompiledRunner(target)
    if name == "processes":
        return ProcessesRunner(target)
    if name == "executor":
        if target.executor is None:
            raise ValueError("engine='executor' needs check(..., executor=...): a concurrent.futures.Executor")
        return ExecutorRunner(target)
    raise ValueError(f"engine={name!r} is not one of {RUNNER_NAMES}")


def choose(name: str, target: Target, evaluations: int | None = None, *, timing: bool = True) -> Choice:
    """The runner for ``name`` (``"auto"``: the chooser above), the reason and the calls of
    ``f`` spent choosing. ``evaluations``: how many points the target will be asked for
    (default ``2 * work.size``: the entry-wise pass). ``timing=False``: ``auto`` times nothing
    and passes over the runners that need a timing (compiled, processes)."""
    if name not in RUNNER_NAMES:
        raise ValueError(f"engine={name!r} is not one of {RUNNER_NAMES}")
    if name != "auto":
        return Choice(make_runner(name, target), f"{name}: asked for")
    count = 2 * target.work.size if evaluations is None else int(evaluations)
    calls = 0
    took: list[float] = []

    def timed() -> object:
        nonlocal calls
        calls += 1  # counted before the call: a call that raises was made too
        start = now()
        try:
            return target.evaluate()
        finally:
            took.append(now() - start)

    picked, reason = _auto(target, count, timed, UNTIMED if not timing else CANDIDATES)
    return Choice(make_runner(picked, target), reason, calls, min(took) if took else None)


def auto_reason(name: str, target: Target, count: int | None = None,
                timed: Callable[[], object] | None = None) -> str | None:
    """Why ``auto`` would pick the runner ``name`` for ``count`` evaluations (default: the
    entry-wise pass's ``2 * work.size``): None when it does not apply, a :class:`Declined`
    reason when it applies but would not pay off. ``timed``: the evaluation to time (default
    ``target.evaluate``); only compiled and processes time ``f``."""
    count = 2 * target.work.size if count is None else int(count)
    timed = target.evaluate if timed is None else timed
    if name == "executor":
        return _executor_reason(target)
    if name == "compiled":
        return _compiled_reason(target, count, timed)
    if name == "batched":
        return "f takes a leading batch axis (vectorized): many perturbations per call" if target.vectorized else None
    if name == "processes":
        choice, text = auto_decision(timed, count, fork_safe=getattr(target.backend, "fork_safe", True))
        return text if choice == "processes" else Declined(text) if choice == "declined" else None
    return None


#: The runners ``auto`` considers, in order (then serial); without a timing, those that need none.
CANDIDATES = ("executor", "compiled", "batched", "processes")
UNTIMED = ("executor", "batched")


def _auto(target: Target, count: int, timed: Callable[[], object], candidates: tuple[str, ...]) -> tuple[str, str]:
    serial_reason = "serial: a general Python callable (no faster engine applies)"
    for candidate in candidates:
        why = auto_reason(candidate, target, count, timed)
        if isinstance(why, Declined):
            serial_reason = f"serial: {why}"
        elif why:
            return candidate, f"{candidate}: {why}"
    return "serial", serial_reason


def _executor_reason(target: Target) -> str | None:
    if target.executor is None:
        return None
    ex = ExecutorOptions.of(target.executor).executor
    return f"check was given an executor ({type(ex).__name__}): chunks of entries run on it"


def _compiled_reason(target: Target, count: int, timed: Callable[[], object]) -> str | None:
    """Why ``auto`` should pick compiled, None when it does not apply, or a :class:`Declined`
    reason when it applies but would not pay off. Cheap: no numba import unless ``f`` already is
    a numba or native function; times one evaluation (twice when the first says yes)."""
    if unsupported(target) is not None:
        return None
    kind = kind_of(target.f)
    what = "a numba @njit function" if kind == "njit" else "a native (cffi) C function"
    if kind == "njit" and getattr(target.f, "targetoptions", {}).get("parallel"):
        return None  # f runs its own threads; nesting them in the kernel's gains nothing
    warm = is_warm(target)
    minimum = COMPILED_WARM_MIN_SECONDS if warm else COMPILED_MIN_SECONDS[str(kind)]
    per_call = time_call(timed)
    if count * per_call >= minimum:  # confirm: one call may have been descheduled
        per_call = min(per_call, time_call(timed))
    estimate = count * per_call
    if estimate < minimum:  # too small to repay compiling (or, warm, launching) the kernel
        cost = "launching the compiled kernel" if warm else "compiling a kernel for it (seconds)"
        return Declined(f"f is {what}, but its {count} evaluations from Python take about "
                        f"{_seconds(estimate)}, too little to repay {cost}; engine='compiled' forces it")
    if warm:
        return (f"f is {what} and the kernel for it is compiled: {count} evaluations "
                f"(about {estimate * 1e3:.0f} ms from Python) in parallel threads")
    return (f"f is {what} and {count} evaluations from Python would take about "
            f"{estimate:.1f} s: they run in a parallel numba kernel")


def auto_decision(evaluate: Callable[[], object], count: int, *, fork_safe: bool = True) -> tuple[str, str]:
    """``(choice, why)`` for ``count`` evaluations of ``evaluate``: ``"processes"`` when they
    would take more than :data:`PROCESSES_MIN_SECONDS` on one core and there are cores to share
    them, ``"declined"`` when they would but a fork is not safe now, else ``"serial"``. The one
    choice between serial and processes (``check``'s auto and ``check_params``')."""
    cores = usable_cores()
    if cores < 2 or not fork_available():
        return "serial", "one core to run on"
    if not fork_safe:
        return "serial", "the backend is not safe to fork"
    per_call = time_call(evaluate)
    if count * per_call > PROCESSES_MIN_SECONDS:  # confirm: one call may have been descheduled
        per_call = min(per_call, time_call(evaluate))
    estimate = count * per_call
    if estimate <= PROCESSES_MIN_SECONDS:
        return "serial", f"2N = {count} evaluations estimated at {estimate:.2g} s"
    hazard = fork_hazard()
    if hazard is not None:
        return "declined", (f"2N = {count} evaluations would take ~{_format_seconds(estimate)} on one "
                            f"core, but {hazard}, so no process pool is forked")
    return "processes", (f"2N = {count} evaluations at ~{_format_seconds(per_call)} each would take "
                         f"~{_format_seconds(estimate)} on one core; spread over {cores} processes")


def _seconds(value: float) -> str:
    if value < 0.01:
        return f"{value * 1e3:.1f} ms"
    return f"{value * 1e3:.0f} ms" if value < 1.0 else f"{value:.1f} s"


def _format_seconds(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.3g} us"
    if seconds < 1.0:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds:.3g} s"


# -- auto for many batches: the screen's ----------------------------------------------------------

#: :class:`Adaptive` forks a pool when one batch would take longer than this on one core (what
#: forking costs is measured: see :data:`KEEP_SHARE`).
BATCH_PROCESSES_MIN_SECONDS = 1.0
#: :class:`Adaptive` runs an njit (or C) f in the compiled kernel from this batch time
#: (compiling it takes ~1 s).
BATCH_COMPILED_MIN_SECONDS = 0.5
#: :class:`Adaptive` decides from the median time of at least this many serial runs (the
#: screen's step search makes ~14, of two evaluations each), never from one call.
MIN_TIMED = 6
#: :class:`Adaptive` keeps a pool only if its first batch took at most this share of the serial
#: time per evaluation (fork included): where it did not (no idle core, f's own threads
#: fighting the workers'), the pool is closed and the batches go on in process.
KEEP_SHARE = 0.8


def batch_choice(seconds_per_call: float, batch: int, *, cores: int, compiled: bool,
                 fork_ok: bool) -> tuple[str, str]:
    """``("compiled" | "processes" | "serial", why)`` for one batch of ``batch`` evaluations
    at ``seconds_per_call`` each (serial, measured), from these numbers alone.

    ``compiled``: f runs in the compiled kernel (an @njit or C f, numpy backend);
    ``fork_ok``: a pool may be forked now (cores to share, fork available, no framework's
    threads running).

    >>> batch_choice(3e-5, 96, cores=2, compiled=False, fork_ok=True)[0]   # a cheap f
    'serial'
    >>> batch_choice(0.1, 96, cores=2, compiled=False, fork_ok=True)[0]    # ~10 s a batch
    'processes'
    """
    serial = batch * seconds_per_call
    if compiled and serial > BATCH_COMPILED_MIN_SECONDS:
        return "compiled", f"a batch of {batch} evaluations takes ~{serial:.2g} s from Python"
    if not serial > BATCH_PROCESSES_MIN_SECONDS:
        return "serial", (f"a batch of {batch} evaluations at {seconds_per_call:.2g} s each takes ~{serial:.2g} s "
                          "on one core: too little to pay for a process pool")
    if not fork_ok:
        return "serial", (f"a batch of {batch} evaluations takes ~{serial:.2g} s on one core, but no process "
                          "pool applies (one core, no fork, or a framework's threads are running)")
    return "processes", (f"a batch of {batch} evaluations at {seconds_per_call:.3g} s each "
                         f"(~{serial:.2g} s on one core), spread over {cores} processes")


class Adaptive:
    """``auto`` as a runner, for a generator that asks for many batches (the screen): the
    points run serially, each run timed, until a batch large enough to share arrives; then
    :func:`batch_choice` decides for that batch from the median seconds per evaluation over
    the runs so far (at least :data:`MIN_TIMED`: one call timed can be descheduled, 100x off
    on a loaded machine). While serial, each larger batch is decided again; a kernel, once
    chosen, serves the rest, and so does a pool whose first batch (its fork included) took at
    most :data:`KEEP_SHARE` of the serial time per evaluation; one that did not is closed, and
    the rest runs in process. The values are the same bits whichever runner ran them, so
    switching mid-way changes no result. ``make(name)``: the runner called ``name``
    (``"compiled"``, ``"processes"``) for the target; ``fork_safe``: the backend may fork (and
    run f in the compiled kernel); :attr:`why`: the choice, in words, for the report."""

    notes: tuple[str, ...] = ()

    def __init__(self, target: Target, *, fork_safe: bool, make: Callable[[str], Any] | None = None,
                 clock: Callable[[], float] | None = None) -> None:
        self.target, self.fork_safe = target, fork_safe
        self.make = make if make is not None else (lambda name: make_runner(name, target))
        self.clock = clock if clock is not None else now
        self.serial = SerialRunner(target)
        self.timed: list[float] = []     # seconds per evaluation, one per serial run
        self.chosen: Any = None
        self.trial = False               # the pool's first batch is still to be timed
        self.closed_pool = False         # a pool was tried and was no faster: never again
        self.evaluations = 0
        self.why = "serial: evaluations are quick or no process pool applies"

    @property
    def name(self) -> str:
        return "serial" if self.chosen is None else str(self.chosen.name)

    def run(self, points: Points, progress: Callable[[int], None] | None = None) -> np.ndarray:
        count = len(points)
        if self.chosen is None and not self.closed_pool and count > 2 and len(self.timed) >= MIN_TIMED:
            self._decide(count)
        if self.trial and count > 2:
            values = self._trial_batch(points, progress)
        elif self.chosen is not None:
            values = self.chosen.run(points, progress)
        else:
            start = self.clock()
            values = self.serial.run(points, progress)
            if count:
                self.timed.append((self.clock() - start) / count)
        self.evaluations += count
        return values

    def _decide(self, batch: int) -> None:
        per_call = float(np.median(self.timed))
        compiled = kind_of(self.target.f) is not None and self.fork_safe
        # numpy code only: a child forked after torch (or jax) has started its thread pools
        # can deadlock on its first parallel operation.
        cores = usable_cores()
        fork_ok = cores >= 2 and fork_available() and self.fork_safe and fork_hazard() is None
        choice, why = batch_choice(per_call, batch, cores=cores, compiled=compiled, fork_ok=fork_ok)
        if choice == "compiled":
            kind = "a numba @njit function" if kind_of(self.target.f) == "njit" else "a C function (cffi)"
            self.chosen, why = self.make("compiled"), f"f is {kind} and {why}"
        elif choice == "processes":
            self.chosen, self.trial = self.make("processes"), True
        self.why = f"{choice}: {why} (median of {len(self.timed)} timed runs of f in this screen)"

    def _trial_batch(self, points: Points, progress: Callable[[int], None] | None) -> np.ndarray:
        """The pool's first batch, timed against the serial median; a pool no faster is closed."""
        serial = float(np.median(self.timed))
        start = self.clock()
        values = self.chosen.run(points, progress)
        pooled = (self.clock() - start) / len(points)
        self.trial = False
        if not pooled <= KEEP_SHARE * serial:
            self.chosen.close()
            self.chosen, self.closed_pool = None, True
            self.why = (f"serial: a process pool was tried on a batch of {len(points)} evaluations and took "
                        f"{pooled:.2g} s per evaluation (its fork included) against {serial:.2g} s in process: "
                        "no faster, so it was closed (no idle core, or f's own threads compete with the workers)")
        return values

    def close(self, terminate: bool = False) -> None:
        if self.chosen is not None:
            self.chosen.close(terminate)
