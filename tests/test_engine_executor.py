"""The executor engine: chunks on any concurrent.futures.Executor (dask.distributed in
particular), results identical to serial bit for bit, faults survived or named."""
from __future__ import annotations

import builtins
import concurrent.futures as cf
import concurrent.futures.process  # noqa: F401  (makes cf.process available)
import logging
import os
import re
import signal
import sys
import threading
import time

import numpy as np
import pytest
from optional_deps import need

distributed = need("distributed")
cloudpickle = need("cloudpickle")

import zoo  # noqa: E402
from zoo import CASES  # noqa: E402

import gradcheck  # noqa: E402
from gradcheck import FunctionError, InputMutationError, check, check_params  # noqa: E402
from gradcheck._core.arrays import same_bits  # noqa: E402
from gradcheck._differences import CentralDifferences, steps_for  # noqa: E402
from gradcheck._evaluate import ChunkFailedError, ExecutorOptions, ExecutorRunner  # noqa: E402
from gradcheck._evaluate import executor as _executor  # noqa: E402
from gradcheck.backends import NumpyBackend  # noqa: E402
from gradcheck.engines import CheckProblem, select_engine  # noqa: E402


class ExecutorEngine(CentralDifferences):
    """The executor engine as check runs it: the entry-wise pass on the executor runner (its
    counters, ``stats`` and ``slots``, read through)."""

    def __init__(self, problem, options):
        super().__init__(ExecutorRunner(problem, options), problem.work)

    def __getattr__(self, name):
        return getattr(self.runner, name)


ARRAYS = ("analytic", "numeric", "noise", "tolerance", "codes", "refined", "causes", "exact",
          "digits", "left", "right")


def assert_same_report(got, want):
    """Every per-entry array bit for bit, and everything else but the engine and time."""
    for key in ARRAYS:
        a, b = getattr(got, key), getattr(want, key)
        assert a.dtype == b.dtype and a.shape == b.shape, key
        assert a.tobytes() == b.tobytes(), key
    assert _settled(got) == _settled(want)


def _settled(report):
    """The report as a dict without what may differ between equal runs: timings, the
    engine's name and auto's note on why it picked it."""
    d = report.to_dict()
    del d["seconds"], d["engine"]
    d["adjudication"].pop("seconds", None)
    d["notes"] = [re.sub(r"[0-9.e+-]+ s\b", "<t> s", n) for n in d["notes"]
                  if not re.match(r"(executor|\w+ \(coloured\)):", n)]  # auto's reason names the engine
    return d


@pytest.fixture(scope="module")
def client():
    """One LocalCluster for the module: 2 worker processes, 1 thread each."""
    from distributed import Client, LocalCluster

    # Test functions live in modules the workers cannot import: ship them by value.
    cloudpickle.register_pickle_by_value(zoo)
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                           dashboard_address=":0", silence_logs=logging.CRITICAL)
    c = Client(cluster)
    try:
        yield c
    finally:
        c.close()
        cluster.close()
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
        cloudpickle.unregister_pickle_by_value(zoo)


def _problem(f, x, executor=None):
    work = np.array(x, order="C", copy=True)
    return CheckProblem(f=f, work=work, evaluate=lambda: float(f(work)), backend=NumpyBackend(),
                        cotangent=None, executor=executor)


def _wait_for_workers(client, n=2, timeout=300):  # a bound on waiting: a busy machine restarts a worker slowly
    client.wait_for_workers(n, timeout=timeout)


# -- same results as serial ---------------------------------------------------------------
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_dask_report_equals_serial_bit_for_bit(client, case):
    """On the whole zoo (correct and buggy claims, float32, array outputs, a step that
    leaves the domain) a dask cluster gives serial's report, bit for bit."""
    for grad in (case.grad, case.buggy):
        serial = check(case.f, case.x, grad, engine="serial", config=case.config)
        dask = check(case.f, case.x, grad, executor=client.get_executor(), config=case.config)
        assert dask.engine == "executor"
        assert_same_report(dask, serial)


@pytest.mark.parametrize("chunk_entries", [1, 3, 7, None])
@pytest.mark.parametrize("pool", ["threads", "processes"])
def test_generic_executors_equal_serial_for_any_chunking(pool, chunk_entries):
    """f_plus, f_minus and denominators do not depend on the executor or the chunking."""
    x = np.random.default_rng(3).standard_normal((7, 5)).astype(np.float32)
    problem = _problem(lambda x: float((np.tanh(x.astype(np.float64)) * x).sum()), x)
    idx = np.arange(x.size)
    steps = steps_for(x.reshape(-1), 1e-3)
    want = select_engine("serial", problem)[0].differences(idx, steps)
    make = cf.ThreadPoolExecutor if pool == "threads" else cf.ProcessPoolExecutor
    with make(max_workers=2) as ex:
        engine = ExecutorEngine(problem, ExecutorOptions(ex, chunk_entries=chunk_entries))
        got = engine.differences(idx, steps)
        again = engine.differences(idx[::-1], steps[::-1])
    for w, g, r in zip(want, got, again):
        assert g.tobytes() == w.tobytes()
        assert r.tobytes() == w[::-1].tobytes()
    assert engine.stats.entries == 2 * x.size
    # The payload travels with the first task per slot and once per miss (a worker that
    # had not received it yet answered "missing"): not with every chunk.
    assert engine.stats.payload_sends == engine.slots + engine.stats.misses
    if chunk_entries == 1:
        assert engine.stats.chunks == 2 * x.size and engine.stats.payload_sends < engine.stats.chunks / 4


def test_a_check_through_a_process_pool_equals_serial():
    """check(executor=ProcessPoolExecutor) gives serial's report."""
    case = CASES[0]
    serial = check(case.f, case.x, case.buggy, engine="serial")
    with cf.ProcessPoolExecutor(max_workers=2) as ex:
        got = check(case.f, case.x, case.buggy, executor=ExecutorOptions(ex))
    assert_same_report(got, serial)


# -- shipped once per worker ----------------------------------------------------------------
def _count_load():
    builtins.__dict__["_gradcheck_test_loads"] = builtins.__dict__.get("_gradcheck_test_loads", 0) + 1
    return _LoadCounter()


class _LoadCounter:
    """Counts, in whichever process unpickles it, how often it was unpickled."""

    def __reduce__(self):
        return (_count_load, ())


def _loads_here():
    return builtins.__dict__.get("_gradcheck_test_loads", 0)


def test_dask_ships_the_problem_once_per_worker(client):
    """The function and inputs travel once to each worker (primed by client.run, no task
    carries them) and each worker deserializes them once, however many chunks and passes
    it runs."""
    _wait_for_workers(client)
    before = client.run(_loads_here)
    counter = _LoadCounter()
    x = np.random.default_rng(1).standard_normal(300)

    def f(x):
        assert counter is not None  # the closure carries the counter to the workers
        return float((np.sin(x) * x).sum())

    problem = _problem(f, x, client.get_executor())
    engine = ExecutorEngine(problem, ExecutorOptions(problem.executor, chunk_entries=10))
    steps = steps_for(x, 6e-6)
    engine.differences(np.arange(x.size), steps)
    engine.differences(np.arange(0, x.size, 3), 2 * steps[::3])  # a second pass (a step study)
    after = client.run(_loads_here)
    assert engine.stats.chunks == 30 + 10
    assert engine.stats.payload_sends == 2 and engine.stats.misses == 0
    assert sorted(after[w] - before.get(w, 0) for w in after) == [1, 1]


# -- faults ---------------------------------------------------------------------------------
def _f_that_kills_its_worker_once(marker: str, entry: int, base: np.ndarray):
    def f(x):
        time.sleep(0.001)
        if x.reshape(-1)[entry] != base[entry]:
            try:
                fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                pass
            else:
                os.close(fd)
                os.kill(os.getpid(), signal.SIGKILL)  # the worker process dies mid-chunk
        return float((np.tanh(x) * x).sum())

    return f


def test_a_worker_killed_mid_check_loses_nothing(client, tmp_path):
    """A worker process killed while differencing a chunk: dask moves the chunk to the
    other worker, the check completes, every entry recorded exactly once, serial's report."""
    _wait_for_workers(client)
    x = np.random.default_rng(7).standard_normal((12, 10))
    grad = lambda x: (1 - np.tanh(x) ** 2) * x + np.tanh(x)  # noqa: E731
    marker = tmp_path / "killed"
    f = _f_that_kills_its_worker_once(str(marker), 57, x.reshape(-1).copy())
    marker.touch()  # disarmed: serial runs f in this process
    serial = check(f, x, grad, engine="serial", adjudicate=False)
    marker.unlink()  # armed: the first worker to difference entry 57 dies
    pids_before = set(client.run(os.getpid).values())
    got = check(f, x, grad, executor=client.get_executor(), adjudicate=False)
    assert os.path.exists(marker)  # a worker did die
    assert_same_report(got, serial)
    _wait_for_workers(client)
    assert set(client.run(os.getpid).values()) != pids_before  # the nanny replaced it


def test_a_worker_killed_from_outside_loses_nothing(client):
    """Kill a worker process (SIGKILL, from the checking process) while a check runs:
    each entry's differences are recorded exactly once and equal serial's."""
    _wait_for_workers(client)
    x = np.random.default_rng(8).standard_normal(240)

    def f(x):
        time.sleep(0.002)
        return float((np.cos(x) * x).sum())

    problem = _problem(f, x, client.get_executor())
    idx, steps = np.arange(x.size), steps_for(x, 6e-6)
    want = select_engine("serial", problem)[0].differences(idx, steps)
    victim = list(client.run(os.getpid).values())[0]
    killed = []

    def progress(done):
        if not killed and done >= 20:
            os.kill(victim, signal.SIGKILL)
            killed.append(done)

    engine = ExecutorEngine(problem, ExecutorOptions(problem.executor))
    got = engine.differences(idx, steps, progress=progress)
    assert killed and killed[0] < x.size
    for w, g in zip(want, got):
        assert g.tobytes() == w.tobytes()
    assert engine.stats.entries == x.size == sum(engine.stats.chunk_sizes)
    _wait_for_workers(client)


class _FlakyExecutor(cf.ThreadPoolExecutor):
    """A thread pool whose tasks touching ``entry`` fail ``failures`` times with ``exc``."""

    def __init__(self, entry, failures, exc=None):
        super().__init__(max_workers=2)
        exc = OSError("connection reset by peer") if exc is None else exc
        self.entry, self.left, self.exc, self.calls = entry, failures, exc, 0

    def submit(self, fn, *args, **kwargs):
        idx = args[2]
        if self.entry in idx and self.left > 0:
            self.left -= 1
            self.calls += 1
            fut = cf.Future()
            fut.set_exception(self.exc)
            return fut
        return super().submit(fn, *args, **kwargs)


@pytest.mark.parametrize("exc", [OSError("reset"), cf.CancelledError(), cf.process.BrokenProcessPool("gone"),
                                 distributed.KilledWorker("task", "worker", 3)])
def test_infrastructure_failures_are_retried(exc):
    """A chunk whose task fails for reasons outside f is resubmitted and the results are
    those of serial."""
    x = np.random.default_rng(2).standard_normal(40)
    problem = _problem(lambda x: float((x**3).sum()), x)
    idx, steps = np.arange(40), steps_for(x, 6e-6)
    want = select_engine("serial", problem)[0].differences(idx, steps)
    with _FlakyExecutor(entry=17, failures=2, exc=exc) as ex:
        engine = ExecutorEngine(problem, ExecutorOptions(ex, retries=2, chunk_entries=5))
        got = engine.differences(idx, steps)
    assert engine.stats.retries == 2 and ex.calls == 2
    for w, g in zip(want, got):
        assert g.tobytes() == w.tobytes()


def test_a_chunk_out_of_retries_is_named():
    """After ``retries`` resubmissions the check stops with ChunkFailedError naming the
    chunk's entries (multi-indices), the attempts, and the last failure as cause."""
    x = np.ones((5, 8))
    problem = _problem(lambda x: float(x.sum()), x)
    with _FlakyExecutor(entry=17, failures=10) as ex:
        engine = ExecutorEngine(problem, ExecutorOptions(ex, retries=1, chunk_entries=4))
        with pytest.raises(ChunkFailedError) as info:
            engine.differences(np.arange(40), np.full(40, 1e-5))
    err = info.value
    assert err.entries == [(2, 0), (2, 1), (2, 2), (2, 3)]
    assert err.attempts == 2 and ex.calls == 2
    assert isinstance(err.__cause__, OSError)
    assert "(2, 0)" in str(err) and "failed 2 times" in str(err)
    assert isinstance(err, gradcheck.GradcheckError)


def test_a_broken_process_pool_is_reported_not_hung():
    """A process pool whose worker died is broken for good: the check says so, naming the
    entries, instead of hanging or returning partial results."""
    x = np.random.default_rng(4).standard_normal(30)

    def f(x):
        if x[11] != base[11]:
            os.kill(os.getpid(), signal.SIGKILL)
        return float(x.sum())

    base = x.copy()
    ex = cf.ProcessPoolExecutor(max_workers=2)
    try:
        with pytest.raises(ChunkFailedError) as info:
            check(f, x, np.ones(30), executor=ExecutorOptions(ex, retries=1, chunk_entries=5), adjudicate=False)
    finally:
        ex.shutdown(wait=True, cancel_futures=True)
    assert isinstance(info.value.__cause__, cf.process.BrokenProcessPool)
    assert info.value.entries


def test_dask_killed_worker_is_retried(tmp_path):
    """dask gives up on a task whose worker died (KilledWorker, here at the first death):
    the engine resubmits that chunk and the check completes with serial's report."""
    import dask
    from distributed import Client, LocalCluster

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    x = np.random.default_rng(9).standard_normal(24)
    grad = lambda x: (1 - np.tanh(x) ** 2) * x + np.tanh(x)  # noqa: E731
    marker = tmp_path / "killed"
    f = _f_that_kills_its_worker_once(str(marker), 5, x.copy())
    marker.touch()
    serial = check(f, x, grad, engine="serial", adjudicate=False)
    marker.unlink()
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
        with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0",
                          silence_logs=logging.CRITICAL) as cluster, Client(cluster) as c:
            got = check(f, x, grad, executor=c.get_executor(), adjudicate=False)
    assert os.path.exists(marker)
    assert_same_report(got, serial)


# -- errors of f, and misuse ---------------------------------------------------------------
def test_an_error_in_f_is_not_retried_and_names_the_first_entry(client):
    """f's own exception is deterministic: no retry; FunctionError at the first failing
    entry in index order (as serial reports it), the cause chained."""
    x = np.arange(40.0).reshape(8, 5)

    def f(x):
        if x[1, 3] != 8.0 or x[6, 0] != 30.0:  # both perturbed entries raise, in different chunks
            raise ZeroDivisionError("boom")
        return float(x.sum())

    with pytest.raises(FunctionError) as serial:
        check(f, x, np.ones_like(x), engine="serial")
    problem = _problem(f, x, client.get_executor())
    engine = ExecutorEngine(problem, ExecutorOptions(problem.executor, chunk_entries=3))
    with pytest.raises(FunctionError) as got:
        engine.differences(np.arange(40), np.full(40, 1e-3))
    assert got.value.index == serial.value.index == (1, 3)
    assert got.value.side == serial.value.side == "+h"
    assert isinstance(got.value.__cause__, ZeroDivisionError)
    assert engine.stats.retries == 0


def test_a_function_that_writes_into_its_input_is_caught_on_the_worker():
    """A write by f into the array it is given happens on the worker's copy; the worker
    reports it and the check raises InputMutationError; the user's x is untouched."""
    x = np.linspace(-1, 1, 12)
    before = x.copy()

    def f(x):
        x[0] = 0.0 if x[3] != before[3] else x[0]  # writes only while entry 3 is perturbed
        return float((x**2).sum())

    with cf.ThreadPoolExecutor(max_workers=2) as ex:
        with pytest.raises(InputMutationError):
            check(f, x, 2 * x, executor=ex)
    assert x.tobytes() == before.tobytes()


def test_an_unpicklable_function_is_a_clear_error():
    """f that cannot be pickled, on an executor of other processes: a TypeError saying which
    engines still work. A ThreadPoolExecutor pickles nothing: the same f checks there."""
    lock = threading.Lock()

    def f(x):
        with lock:
            return float(x.sum())

    with cf.ProcessPoolExecutor(max_workers=1) as ex:
        with pytest.raises(TypeError, match="cannot be pickled.*engine='serial'"):
            check(f, np.ones(3), np.ones(3), executor=ex)
    with cf.ThreadPoolExecutor(max_workers=2) as ex:
        assert check(f, np.ones(3), np.ones(3), executor=ex).passed


def test_threads_need_no_cloudpickle(monkeypatch):
    """Without cloudpickle, a ThreadPoolExecutor checks (serial's report, bit for bit) and
    screens; an executor of other processes says to install cloudpickle (or gradcheck[dask])."""
    x = np.random.default_rng(5).standard_normal(12)
    f, g = (lambda x: float(np.sin(x).sum() * x[0])), (lambda x: np.cos(x) * x[0] + np.eye(12)[0] * np.sin(x).sum())
    serial = check(f, x, g, engine="serial")
    monkeypatch.setitem(sys.modules, "cloudpickle", None)  # import cloudpickle now fails
    with cf.ThreadPoolExecutor(max_workers=2) as ex:
        threaded = check(f, x, g, executor=ex)
        screened = gradcheck.screen(f, x, g, engine="executor", executor=ex)
    assert threaded.engine == "executor" and threaded.numeric.tobytes() == serial.numeric.tobytes()
    assert threaded.passed and screened.passed
    with cf.ProcessPoolExecutor(max_workers=1) as ex:
        with pytest.raises(ModuleNotFoundError, match=r"needs cloudpickle.*gradcheck\[dask\].*ThreadPoolExecutor"):
            check(f, x, g, executor=ex)


@pytest.mark.parametrize("kwargs, match", [
    (dict(engine="serial", executor=object()), "executor"),
    (dict(engine="executor"), "needs check"),
])
def test_misuse_is_a_clear_error(kwargs, match):
    """An executor with another engine, or the executor engine without one."""
    with pytest.raises((ValueError, TypeError), match=match):
        check(lambda x: float(x.sum()), np.ones(3), np.ones(3), **kwargs)


def test_options_are_validated():
    """Bad options name themselves."""
    with pytest.raises(TypeError, match="concurrent.futures.Executor"):
        ExecutorOptions(object())
    with cf.ThreadPoolExecutor(1) as ex:
        with pytest.raises(ValueError, match="retries"):
            ExecutorOptions(ex, retries=-1)
        with pytest.raises(ValueError, match="chunk_entries"):
            ExecutorOptions(ex, chunk_entries=0)


def test_auto_says_it_picked_the_executor():
    """With an executor, auto picks the executor engine and says why in the notes."""
    with cf.ThreadPoolExecutor(2) as ex:
        r = check(lambda x: float((x**2).sum()), np.arange(4.0), lambda x: 2 * x, executor=ex)
    assert r.engine == "executor" and "executor" in r.notes[0]


def test_chunk_size_rule():
    """First wave small; then about TARGET_CHUNK_SECONDS of work per chunk, capped by
    MAX_CHUNK_ENTRIES and by guided scheduling (remaining / 2 slots)."""
    with cf.ThreadPoolExecutor(2) as ex:
        eng = ExecutorRunner(_problem(lambda x: float(x.sum()), np.ones(4)), ExecutorOptions(ex))
    assert eng.slots == 2
    assert eng._chunk_size(10_000) == _executor.FIRST_CHUNK_ENTRIES
    eng._observe(10, 10 * 1e-3)  # 1 ms per entry
    assert eng._chunk_size(10_000) == int(_executor.TARGET_CHUNK_SECONDS / 1e-3)
    assert eng._chunk_size(100) == 25  # guided: 100 / (2 * 2)
    eng._per_entry = 1e-9
    assert eng._chunk_size(10**9) == _executor.MAX_CHUNK_ENTRIES
    assert eng._chunk_size(1) == 1


def test_negative_control_passes_on_dask(client):
    """The instrument works on this engine: a corrupted gradient is flagged and only it."""
    x = np.random.default_rng(11).standard_normal((6, 5))
    f = lambda x: (np.tanh(x) * x[::-1]).sum()  # noqa: E731
    g = lambda x: (1 - np.tanh(x) ** 2) * x[::-1] + np.tanh(x[::-1])  # noqa: E731

    def wrong(x):
        out = g(x)
        out[4, 1] *= 1 + 1e-5
        out[0, 2] *= -1
        return out

    ex = client.get_executor()
    check(f, x, g, executor=ex).assert_pass()
    bad = check(f, x, wrong, executor=ex)
    assert set(bad.entries(gradcheck.Verdict.MISMATCH)) == {(4, 1), (0, 2)}


def test_check_params_on_the_cluster_equals_serial_bit_for_bit(client):
    """check_params(executor=...): each name's entries on the dask workers (the loss and its
    parameters shipped together, so perturbing the shipped array is what the loss sees);
    verdicts and differences equal serial's bit for bit, a planted bug is flagged at its
    entry, and the caller's parameters are untouched."""
    from gradcheck import Verdict, check_params

    rng = np.random.default_rng(11)
    params = {"w": rng.standard_normal((6, 5)), "b": rng.standard_normal(5)}
    before = {n: params[n].tobytes() for n in params}
    x = rng.standard_normal((4, 6))

    def loss(p):
        return float((np.tanh(x @ p["w"] + p["b"]) ** 2).sum())

    def grads(p):
        t = np.tanh(x @ p["w"] + p["b"])
        d = 2 * t * (1 - t**2)
        return {"w": x.T @ d, "b": d.sum(axis=0)}

    claim = grads(params)
    claim["w"][2, 3] *= 1.001
    serial = check_params(loss, params, claim, engine="serial", adjudicate=False)
    cluster = check_params(loss, params, claim, executor=client.get_executor(), adjudicate=False)
    assert cluster.failing == serial.failing == ["w"]
    assert cluster["w"].entries(Verdict.MISMATCH) == [(2, 3)]
    for n in params:
        assert cluster[n].engine == "executor"
        assert cluster[n].codes.tobytes() == serial[n].codes.tobytes()
        assert cluster[n].numeric.tobytes() == serial[n].numeric.tobytes()
        assert params[n].tobytes() == before[n]
    with pytest.raises(ValueError, match="needs executor="):
        check_params(loss, params, claim, engine="executor")
    with pytest.raises(ValueError, match="drop one"):
        check_params(loss, params, claim, engine="processes", executor=client.get_executor())


# -- independent_axes: each coloured evaluation a task ---------------------------------------
def _rows_normed(x):
    xc = x - x.mean(axis=1, keepdims=True)
    return xc / np.sqrt((xc**2).mean(axis=1, keepdims=True) + 1e-5)


def _rows_normed_vjp(x, g):
    xc = x - x.mean(axis=1, keepdims=True)
    inv = 1.0 / np.sqrt((xc**2).mean(axis=1, keepdims=True) + 1e-5)
    xh = xc * inv
    out = inv * (g - g.mean(1, keepdims=True) - xh * (g * xh).mean(1, keepdims=True))
    out[2, 1] *= 1.001  # a planted bug: the second look runs on the executor too
    return out


def test_independent_axes_on_dask_equals_serial_bit_for_bit(client):
    x = np.random.default_rng(71).standard_normal((6, 4))
    serial = check(_rows_normed, x, _rows_normed_vjp, independent_axes=(0,))
    dask = check(_rows_normed, x, _rows_normed_vjp, independent_axes=(0,), executor=client.get_executor())
    assert dask.engine == "executor (coloured)"
    assert_same_report(dask, serial)
    assert {tuple(int(k) for k in i) for i in np.argwhere(dask.codes == gradcheck.Verdict.MISMATCH)} == {(2, 1)}


def test_independent_axes_tasks_are_retried_then_named():
    """A coloured evaluation whose task fails outside f is resubmitted (serial's numbers);
    out of retries, ChunkFailedError names the entries it perturbed."""
    x = np.random.default_rng(73).standard_normal((5, 3))
    serial = check(_rows_normed, x, _rows_normed_vjp, independent_axes=(0,))
    with _FlakyExecutor(entry=7, failures=2) as ex:  # entry 7 = (2, 1): in round 1, +h and -h
        retried = check(_rows_normed, x, _rows_normed_vjp, independent_axes=(0,),
                        executor=ExecutorOptions(ex, retries=2))
    assert ex.calls == 2
    assert_same_report(retried, serial)
    with _FlakyExecutor(entry=7, failures=10) as ex:
        with pytest.raises(ChunkFailedError) as info:
            check(_rows_normed, x, _rows_normed_vjp, independent_axes=(0,), executor=ExecutorOptions(ex, retries=1))
    assert (2, 1) in info.value.entries and info.value.attempts == 2
    assert 2 <= ex.calls <= 4  # the +h and the -h evaluation of its round, each at most twice


class _BrokenExecutor(cf.ThreadPoolExecutor):
    """A pool whose every task fails outside f (a lost worker): the first pass on it stops
    with ChunkFailedError, none of its points recorded."""

    def __init__(self):
        super().__init__(max_workers=2)

    def submit(self, fn, *args, **kwargs):
        fut = cf.Future()
        fut.set_exception(OSError("connection reset by peer"))
        return fut


def _broken(run):
    with _BrokenExecutor() as ex, pytest.raises(ChunkFailedError) as info:
        run(ExecutorOptions(ex, retries=0))
    return info.value


def test_a_failed_chunk_counts_what_is_lost_in_the_unit_of_the_points():
    """ChunkFailedError counts the chunk and the unchecked rest of its pass in what a point
    (or a group of points) is: check's entries (its words as they were), the colouring's
    rounds (a round's +h and -h: 3 rounds here, not its 6 points), a screen's blocks
    (check_params(screen=True)'s: below)."""
    x = np.random.default_rng(73).standard_normal((5, 3))
    cube, cube_grad = (lambda x: float((x ** 3).sum())), (lambda x: 3 * x ** 2)
    err = _broken(lambda o: check(cube, x, cube_grad, executor=o))
    assert err.unit == "entries" and err.unfinished == x.size
    assert f"; {x.size} entries of this pass are unchecked. The executor or its workers are failing, not f; " \
           "fix them and run again (with checkpoint=... the finished entries are kept)" in str(err)
    assert re.match(r"a chunk of \d+ entries \(\(", str(err))

    err = _broken(lambda o: check(_rows_normed, x, _rows_normed_vjp, independent_axes=(0,), executor=o))
    assert err.unit == "rounds" and err.unfinished == x.shape[1]  # one round per column of the rows
    assert re.match(r"a chunk of 1 round \(5 entries: ", str(err))
    assert "; 3 rounds of this pass are unchecked." in str(err) and "entries of this pass" not in str(err)

    err = _broken(lambda o: gradcheck.screen(cube, x, cube_grad, blocks=2, adjudicate=False, seed=0, executor=o))
    assert err.unit == "blocks" and err.unfinished >= 1
    assert re.match(r"a chunk of \d+ blocks? \(\d+ entries: ", str(err))
    assert re.search(rf"; {err.unfinished} blocks? of this pass (is|are) unchecked\. ", str(err))
    assert "entries of this pass" not in str(err) and "checkpoint" not in str(err)  # screen has no checkpoint=


def test_a_failed_chunk_of_check_params_names_the_parameters():
    """check_params' ChunkFailedError names each entry's parameter (``params``), entry by entry
    (one name, said once) and with screen=True, whose chunks are blocks of one flat vector of
    every parameter: indices in each parameter's shape, not positions of that vector. No
    checkpoint= to suggest (check_params has none)."""
    x = np.random.default_rng(73).standard_normal((5, 3))
    p = {"w": x.copy(), "b": np.ones(3)}
    loss, claims = (lambda q: float((q["w"] ** 3).sum() + q["b"].sum())), {"w": 3 * x ** 2, "b": np.ones(3)}
    err = _broken(lambda o: check_params(loss, p, claims, adjudicate=False, executor=o))
    assert err.unit == "entries" and err.params == ["w"] * len(err.entries)
    assert all(len(e) == 2 for e in err.entries) and ") of parameter 'w' failed 1 times" in str(err)
    assert "checkpoint" not in str(err)

    err = _broken(lambda o: check_params(loss, p, claims, screen=True, adjudicate=False, executor=o))
    assert err.unit == "blocks" and re.search(rf"; {err.unfinished} blocks? of this pass", str(err))
    assert len(err.params) == len(err.entries) and set(err.params) <= {"w", "b"}
    assert all(len(e) == {"w": 2, "b": 1}[n] for n, e in zip(err.params, err.entries))
    first = err.entries[0]
    assert f"entries: {first} of {err.params[0]!r}, " in str(err)
    assert same_bits(p["w"], x) and same_bits(p["b"], np.ones(3))
