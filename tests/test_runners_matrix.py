"""Every feature on every runner of the evaluation layer (issue 26), one table.

For each feature that asks the layer for its points (``check``, ``check_params``; the others
join as they move onto it) and each runner (serial, batched, compiled, processes, executor):

* the report is serial's, bit for bit (every per-entry array, the verdicts, the counts);
* ``f`` raising at one perturbed entry is :class:`FunctionError` at that entry and side;
* ``f`` writing into its input is :class:`InputMutationError`;
* a worker process that dies (``os._exit``) is :class:`WorkerDiedError` (processes), or the
  executor's :class:`ChunkFailedError` after its retries, never a raw ``BrokenProcessPool``;
* Ctrl-C (``KeyboardInterrupt`` in the checking thread) leaves no worker process behind;
* the user's arrays are bit-identical afterwards, whatever happened.

A runner a feature does not offer is refused with a clear error, asserted too.
"""
from __future__ import annotations

import _thread
import concurrent.futures as cf
import gc
import multiprocessing
import os
import threading
import time

import numpy as np
import pytest

import gradcheck
from gradcheck import FunctionError, InputMutationError, WorkerDiedError, check, check_params
from gradcheck._core.arrays import same_bits
from gradcheck._evaluate import ChunkFailedError, fork_available

RUNNERS = ["serial", "batched", "compiled", "processes", "executor"]
X = np.random.default_rng(26).standard_normal((5, 4))
BAD = (2, 1)
ARRAYS = ("analytic", "numeric", "noise", "tolerance", "codes", "refined", "causes")


def f_py(x):
    """Vectorizable: a leading batch axis gives one value per row."""
    return (np.sin(x) * x ** 2).sum(axis=(-2, -1))


def grad(x):
    g = np.cos(x) * x ** 2 + 2 * x * np.sin(x)
    g[BAD] *= 1 + 1e-4  # one planted error: the report holds a MISMATCH and a step study
    return g


_JIT: dict[str, object] = {}


def f_jit():
    if "f" not in _JIT:
        import numba

        _JIT["f"] = numba.njit(cache=False)(lambda x: np.sum(np.sin(x) * x ** 2))
    return _JIT["f"]


def run_check(runner: str, f=None, x=X, **kw):
    """``check`` on ``runner`` (the executor: a thread pool, or ``kw['pool']``)."""
    f = (f_jit() if runner == "compiled" else f_py) if f is None else f
    pool = kw.pop("pool", None)
    if runner == "executor":
        with pool or cf.ThreadPoolExecutor(2) as ex:
            return check(f, x, grad, executor=gradcheck.ExecutorOptions(ex, retries=kw.pop("retries", 2)), **kw)
    return check(f, x, grad, engine=runner, vectorized=runner == "batched", **kw)


def assert_same(got, want):
    for key in ARRAYS:
        a, b = getattr(got, key), getattr(want, key)
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), key
    assert got.counts == want.counts and got.evaluations == want.evaluations


def needs(runner: str):
    if runner == "processes" and not fork_available():
        pytest.skip("needs the fork start method")


def no_workers_left() -> bool:
    gc.collect()
    return multiprocessing.active_children() == []


# -- check --------------------------------------------------------------------------------------
@pytest.mark.parametrize("runner", RUNNERS)
def test_check_gives_serials_report(runner):
    needs(runner)
    x = X.copy()
    serial = check(f_jit() if runner == "compiled" else f_py, x, grad, engine="serial")
    got = run_check(runner, x=x)
    assert got.engine == runner and not got.passed
    assert_same(got, serial)
    assert same_bits(x, X)


def raising(x):
    if np.any(x[..., 3, 2] > X[3, 2]):  # (3, 2) at +h, in a batch too
        raise ZeroDivisionError("planted")
    return f_py(x)


@pytest.mark.parametrize("runner", [r for r in RUNNERS if r != "compiled"])
def test_check_f_raising_is_named_at_its_entry(runner):
    """(compiled: an @njit f raising, test_engine_compiled.)"""
    needs(runner)
    x = X.copy()
    with pytest.raises(FunctionError) as info:
        run_check(runner, f=raising, x=x)
    assert info.value.index == (3, 2) and info.value.side == "+h"
    assert isinstance(info.value.__cause__, ZeroDivisionError)
    assert same_bits(x, X) and no_workers_left()


def writing(x):
    x[..., 0, 0] += 1.0
    return f_py(x)


@pytest.mark.parametrize("runner", [r for r in RUNNERS if r != "compiled"])
def test_check_f_writing_into_its_input_is_refused(runner):
    """(compiled: an @njit f writing, test_engine_compiled.)"""
    needs(runner)
    x = X.copy()
    with pytest.raises(InputMutationError):
        run_check(runner, f=writing, x=x)
    assert same_bits(x, X) and no_workers_left()


def dying(x):
    if x[3, 2] != X[3, 2] and os.getpid() != PARENT:
        os._exit(3)
    return f_py(x)


PARENT = os.getpid()


@pytest.mark.parametrize("runner", ["processes", "executor"])
def test_check_a_dead_worker_is_never_a_raw_broken_pool(runner):
    """processes: WorkerDiedError naming a range that holds (3, 2); an executor whose process
    pool broke: ChunkFailedError after its retries, the broken pool chained."""
    needs("processes")
    x = X.copy()
    if runner == "processes":
        with pytest.raises(WorkerDiedError) as died:
            run_check("processes", f=dying, x=x)
        flat = np.ravel_multi_index
        assert flat(died.value.first, X.shape) <= flat((3, 2), X.shape) <= flat(died.value.last, X.shape)
    else:
        pool = cf.ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("fork"))
        with pytest.raises(ChunkFailedError) as failed:
            run_check("executor", f=dying, x=x, pool=pool, retries=0)
        assert type(failed.value.__cause__).__name__ == "BrokenProcessPool"
    assert same_bits(x, X) and no_workers_left()


def slow(z):
    time.sleep(0.02)  # 40 evaluations: longer than the interrupt takes to arrive
    return f_py(z)


@pytest.mark.parametrize("runner", RUNNERS)
def test_check_ctrl_c_leaves_no_worker(runner):
    """KeyboardInterrupt arrives in the checking thread while f runs (or the pool works, or a
    kernel runs: then as it returns): it propagates, no worker process is left, x is untouched."""
    needs(runner)
    x = X.copy()
    timer = threading.Timer(0.2, _thread.interrupt_main)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            run_check(runner, f=None if runner == "compiled" else slow, x=x)
            time.sleep(5)  # (a kernel that ran to its end: the interrupt arrives here)
    finally:
        timer.cancel()
    assert same_bits(x, X) and no_workers_left()


# -- check_params ---------------------------------------------------------------------------------
PARAMS_RUNNERS = ["serial", "processes", "executor"]


def loss(p):
    return float(f_py(p["w"]) + (np.tanh(p["b"]) * p["b"]).sum())


def params():
    return {"w": X.copy(), "b": X[0].copy()}


def claims():
    b = X[0]
    return {"w": grad(X), "b": (1 - np.tanh(b) ** 2) * b + np.tanh(b)}


def run_params(runner: str, loss_fn=loss, p=None):
    p = params() if p is None else p
    if runner == "executor":
        with cf.ThreadPoolExecutor(2) as ex:
            return check_params(loss_fn, p, claims(), executor=ex)
    return check_params(loss_fn, p, claims(), engine=runner)


@pytest.mark.parametrize("runner", PARAMS_RUNNERS)
def test_check_params_gives_serials_report(runner):
    needs(runner)
    p = params()
    got, serial = run_params(runner, p=p), run_params("serial")
    assert got["w"].engine == runner
    for name in ("w", "b"):
        assert_same(got[name], serial[name])
    assert same_bits(p["w"], X) and same_bits(p["b"], X[0])


@pytest.mark.parametrize("runner", ["batched", "compiled"])
def test_check_params_refuses_what_it_does_not_offer(runner):
    with pytest.raises(ValueError, match=f"engine='{runner}' is not one of"):
        check_params(loss, params(), claims(), engine=runner)


@pytest.mark.parametrize("runner", PARAMS_RUNNERS)
def test_check_params_errors_name_the_parameter_and_entry(runner):
    needs(runner)
    p = params()

    def raising_loss(q):
        if q["w"][3, 2] > X[3, 2]:
            raise ZeroDivisionError("planted")
        return loss(q)

    with pytest.raises(FunctionError) as info:
        run_params(runner, raising_loss, p)
    assert (info.value.index, info.value.side, info.value.param) == ((3, 2), "+h", "w")
    assert same_bits(p["w"], X) and no_workers_left()

    def writing_loss(q):
        q["w"][0, 0] += 1.0
        return loss(q)

    with pytest.raises(InputMutationError):
        run_params(runner, writing_loss, p)
    assert same_bits(p["w"], X) and same_bits(p["b"], X[0]) and no_workers_left()
