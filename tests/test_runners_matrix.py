"""Every feature on every runner of the evaluation layer (issue 26), one table.

For each feature that asks the layer for its points (``check``, ``check_params``,
``independent_axes``, ``screen`` and ``check_params(screen=True)`` (blocks along signed
directions), ``check_jvp``, ``check_hvp``, and the points along a direction of ``taylor_test``,
``check_adjoint`` and ``check_hvp``) and each runner (serial, batched, compiled, processes,
executor):

* the report is serial's, bit for bit (every per-entry array, the verdicts, the counts; a
  screen's detection limit and notes too), with a planted error it must find;
* ``f`` raising at one perturbed entry is :class:`FunctionError` at that entry and side (a
  screen's block: at the block's first entry, ``"along a block of N entries"``);
* ``f`` writing into its input is :class:`InputMutationError`;
* a worker process that dies (``os._exit``) is :class:`WorkerDiedError` (processes; in ``check_params``
  naming the parameter of each end of its range, screen=True too), or the
  executor's :class:`ChunkFailedError` after its retries, never a raw ``BrokenProcessPool``;
* Ctrl-C (``KeyboardInterrupt`` in the checking thread) leaves no worker process behind;
* the user's arrays are bit-identical afterwards, whatever happened.

A runner a feature does not offer is refused with a clear error, asserted too (``check_params``,
with ``screen=True`` too: batched and compiled; ``screen``: batched without ``vectorized=True``,
compiled for a Python ``f``).
"""
from __future__ import annotations

import _thread
import concurrent.futures as cf
import dataclasses
import gc
import multiprocessing
import os
import threading
import time

import numpy as np
import pytest
from njit_subjects import rowwise, rowwise_vjp

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


def no_workers_left(grace: float = 30.0) -> bool:
    """No child process of this one is left: a worker that was told to go is given ``grace``
    seconds to exit (on a loaded machine a terminated fork worker can take a while to be
    reaped), never more; one still there after it is an orphan."""
    deadline = time.monotonic() + grace
    while True:
        gc.collect()
        left = multiprocessing.active_children()  # also reaps the ones that have exited
        if not left:
            return True
        if time.monotonic() > deadline:
            print(f"workers left: {left}")
            return False
        time.sleep(0.05)


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


@pytest.mark.parametrize("feature", ["check", "screen"])
@pytest.mark.parametrize("runner", ["processes", "executor"])
def test_a_dead_worker_is_never_a_raw_broken_pool(runner, feature):
    """check's entries and screen's blocks (run_screen: below): processes: WorkerDiedError
    naming a range that holds (3, 2); an executor whose process pool broke: ChunkFailedError
    after its retries, the broken pool chained."""
    needs("processes")
    x = X.copy()
    run = run_check if feature == "check" else run_screen
    if runner == "processes":
        with pytest.raises(WorkerDiedError) as died:
            run("processes", f=dying, x=x)
        flat = np.ravel_multi_index
        assert flat(died.value.first, X.shape) <= flat((3, 2), X.shape) <= flat(died.value.last, X.shape)
    else:
        pool = cf.ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("fork"))
        with pytest.raises(ChunkFailedError) as failed:
            run("executor", f=dying, x=x, pool=pool, retries=0)
        assert type(failed.value.__cause__).__name__ == "BrokenProcessPool"
        # what the unchecked rest of the pass is counted in: check's entries, screen's blocks
        assert failed.value.unit == ("entries" if feature == "check" else "blocks")
        assert (" entries of this pass are unchecked" in str(failed.value)) == (feature == "check")
    assert same_bits(x, X) and no_workers_left()


def slow(z):
    time.sleep(0.02)  # 40 evaluations: longer than the interrupt takes to arrive
    return f_py(z)


@pytest.mark.parametrize("feature", ["check", "screen"])
@pytest.mark.parametrize("runner", RUNNERS)
def test_ctrl_c_leaves_no_worker(runner, feature):
    """KeyboardInterrupt arrives in the checking thread while f runs (or the pool works, or a
    kernel runs: then as it returns), in check's entries or screen's blocks (run_screen: below):
    it propagates, no worker process is left, x is untouched."""
    needs(runner)
    x = X.copy()
    run = run_check if feature == "check" else run_screen
    if runner == "compiled":  # warm: an interrupt inside numba's compiler leaves it unable to compile that kernel again
        run(runner, x=X.copy())
    timer = threading.Timer(0.2, _thread.interrupt_main)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            run(runner, f=None if runner == "compiled" else slow, x=x)
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


def run_params(runner: str, loss_fn=loss, p=None, **kw):
    """``check_params`` on ``runner`` (the executor: a thread pool, or ``kw['pool']``)."""
    p = params() if p is None else p
    pool = kw.pop("pool", None)
    if runner == "executor":
        with pool or cf.ThreadPoolExecutor(2) as ex:
            return check_params(loss_fn, p, claims(), executor=gradcheck.ExecutorOptions(ex, retries=kw.pop("retries", 2)))
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


@pytest.mark.parametrize("screen", [False, True])
@pytest.mark.parametrize("runner", PARAMS_RUNNERS)
def test_check_params_errors_name_the_parameter_and_entry(runner, screen):
    """Entry by entry: FunctionError at w[3, 2], +h. With screen=True (run_params_screen:
    below) the joint screen's one block (24 entries: w's 20, then b's 4) raises as w[3, 2]
    moves: at its first entry, w[0, 0], ``along a block of 24 entries``. A write into the
    loss's input is InputMutationError; the dict is untouched either way."""
    needs(runner)
    p = params()

    def raising_loss(q):
        if q["w"][3, 2] > X[3, 2]:
            raise ZeroDivisionError("planted")
        return loss(q)

    run = run_params_screen if screen else run_params
    with pytest.raises(FunctionError) as info:
        run(runner, raising_loss, p)
    where = ((0, 0), "along a block of 24 entries") if screen else ((3, 2), "+h")
    assert (info.value.index, info.value.side, info.value.param) == (*where, "w")
    assert isinstance(info.value.__cause__, ZeroDivisionError)
    assert same_bits(p["w"], X) and no_workers_left()

    def writing_loss(q):  # screen=True: where the runner evaluates, at a perturbed point (the base: below)
        if not screen or q["w"][3, 2] != X[3, 2]:
            q["w"][0, 0] += 1.0
        return loss(q)

    with pytest.raises(InputMutationError):
        run(runner, writing_loss, p)
    assert same_bits(p["w"], X) and same_bits(p["b"], X[0]) and no_workers_left()


# -- independent_axes (the colouring's rounds: one entry of every row per point) ------------------
AXES_RUNNERS = RUNNERS
LOW, KEEP = float(X[3, 2]), float(X[3, 0])
#: Modes set at X[4, 3]: where the colouring's round 2 is at -h (X[3, 2] moved down while X[3, 0]
#: is not: never one of the declaration's probes, which move single entries up or whole rows),
#: f raises, writes into another entry, writes into the perturbed entry itself, or exits.
RAISE, WRITE_OTHER, WRITE_PERTURBED, EXIT = 1000.0, 2000.0, 3000.0, 4000.0
#: The compiled runner's subject is the shared @njit ``rowwise`` (tests/njit_subjects.py), which
#: misbehaves past thresholds instead; on this input its round 0 at +h raises, its round 1 at -h
#: writes into another entry, its round 1 at +h writes into the entry (1, 1) it perturbs.
X_NJIT = np.random.default_rng(79).standard_normal((4, 3))
NJIT_MODES = {RAISE: ((0, 0), 10.0 - 1e-9), WRITE_OTHER: ((0, 0), -10.0 + 1e-9),
              WRITE_PERTURBED: ((3, 0), 30.0 - 1e-9)}


def rows(x):
    """Each output row from its own input row (``independent_axes=(0,)``); vectorizable.
    Misbehaves at the round described above, as the mode at ``x[4, 3]`` says."""
    hit = (x[..., 3, 2] < LOW) & (x[..., 3, 0] == KEEP)
    mode = x[..., 4, 3]
    if np.any(hit & (mode == RAISE)):
        raise ZeroDivisionError("planted")
    if np.any(hit & (mode == EXIT)) and os.getpid() != PARENT:
        os._exit(3)
    y = np.sin(x) * (x ** 2).sum(axis=-1, keepdims=True)
    if np.any(hit & (mode == WRITE_OTHER)):
        x[..., 0, 0] += np.where(hit, 1.0, 0.0)
    if np.any(hit & (mode == WRITE_PERTURBED)):
        x[..., 3, 2] = np.where(hit, 0.0, x[..., 3, 2])
    return y


def rows_vjp(x, g):
    out = g * np.cos(x) * (x ** 2).sum(axis=-1, keepdims=True) + 2 * x * (g * np.sin(x)).sum(axis=-1, keepdims=True)
    out[BAD] *= 1 + 1e-4  # a planted error: a MISMATCH and a step study of its round
    return out


def njit_vjp(x, g):
    out = rowwise_vjp(x, g)
    out[BAD] *= 1 + 1e-4
    return out


def axes_subject(runner: str, mode: float | None = None):
    """``(f, claim, x)``: the compiled runner's (the shared @njit subject), or the others'."""
    if runner == "compiled":
        x = (X if mode is None else X_NJIT).copy()
        if mode is not None:
            at, value = NJIT_MODES[mode]
            x[at] = value
        return rowwise, njit_vjp, x
    x = X.copy()
    if mode is not None:
        x[4, 3] = mode
    return rows, rows_vjp, x


def run_axes(runner: str, f, claim, x, **kw):
    """``check(..., independent_axes=(0,))`` on ``runner`` (the executor: a thread pool, or ``kw['pool']``)."""
    pool = kw.pop("pool", None)
    if runner == "executor":
        with pool or cf.ThreadPoolExecutor(2) as ex:
            return check(f, x, claim, independent_axes=(0,),
                         executor=gradcheck.ExecutorOptions(ex, retries=kw.pop("retries", 2)), **kw)
    return check(f, x, claim, independent_axes=(0,), engine=runner, vectorized=runner == "batched", **kw)


@pytest.mark.parametrize("runner", AXES_RUNNERS)
def test_axes_gives_serials_report(runner):
    needs(runner)
    f, claim, x = axes_subject(runner)
    serial = check(f, x, claim, independent_axes=(0,), engine="serial")
    got = run_axes(runner, f, claim, x)
    assert got.engine == f"{runner} (coloured)" and serial.engine == "serial (coloured)"
    assert_same(got, serial)
    assert got.codes[BAD] == gradcheck.Verdict.MISMATCH and got.passed is False
    assert same_bits(x, axes_subject(runner)[2])


@pytest.mark.parametrize("runner", AXES_RUNNERS)
def test_axes_f_raising_is_named_at_its_round(runner):
    """Serial's FunctionError: the first entry of the point that raised (round 2 at -h starts
    at (0, 2); the njit subject's round 0 at +h at (0, 0)), its side and kind, f's exception
    as the cause."""
    needs(runner)
    f, claim, x = axes_subject(runner, RAISE)
    before = x.copy()
    with pytest.raises(FunctionError) as serial:
        check(f, x.copy(), claim, independent_axes=(0,), engine="serial")
    with pytest.raises(FunctionError) as info:
        run_axes(runner, f, claim, x)
    assert (info.value.index, info.value.side) == (serial.value.index, serial.value.side)
    assert info.value.side == ("+h, coloured: 4 entries perturbed together" if runner == "compiled"
                               else "-h, coloured: 5 entries perturbed together")
    assert type(info.value.__cause__) is type(serial.value.__cause__)
    assert same_bits(x, before) and no_workers_left()


@pytest.mark.parametrize("mode", [WRITE_OTHER, WRITE_PERTURBED])
@pytest.mark.parametrize("runner", AXES_RUNNERS)
def test_axes_f_writing_into_its_input_is_refused(runner, mode):
    """A write into another entry, or into the entry perturbed there (putting the entry back
    would hide it: the compiled kernel compares it with what it set first). Control: the same
    f and x without the mode pass through every runner (test_axes_gives_serials_report)."""
    needs(runner)
    f, claim, x = axes_subject(runner, mode)
    before = x.copy()
    with pytest.raises(InputMutationError):
        run_axes(runner, f, claim, x)
    assert same_bits(x, before) and no_workers_left()


@pytest.mark.parametrize("runner", ["processes", "executor"])
def test_axes_a_dead_worker_is_never_a_raw_broken_pool(runner):
    """processes: WorkerDiedError naming a range that holds round 2's entries; an executor
    whose process pool broke: ChunkFailedError after its retries, the broken pool chained."""
    needs("processes")
    f, claim, x = axes_subject(runner, EXIT)
    before = x.copy()
    if runner == "processes":
        with pytest.raises(WorkerDiedError) as died:
            run_axes("processes", f, claim, x)
        flat = np.ravel_multi_index
        assert flat(died.value.first, X.shape) <= flat((3, 2), X.shape) <= flat(died.value.last, X.shape)
        assert "coloured" in str(died.value)
    else:
        pool = cf.ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("fork"))
        with pytest.raises(ChunkFailedError) as failed:
            run_axes("executor", f, claim, x, pool=pool, retries=0)
        assert type(failed.value.__cause__).__name__ == "BrokenProcessPool"
        assert failed.value.unit == "rounds" and "entries of this pass" not in str(failed.value)
    assert same_bits(x, before) and no_workers_left()


def slow_rows(z):
    # Slow where the runner evaluates (a worker, a thread), quick in the checking thread: the
    # declaration's probes (in the checking thread) are done before the interrupt arrives.
    away = os.getpid() != PARENT or threading.current_thread() is not threading.main_thread()
    time.sleep(0.2 if away else 0.02)
    return rows(z)


@pytest.mark.parametrize("runner", AXES_RUNNERS)
def test_axes_ctrl_c_leaves_no_worker(runner):
    needs(runner)
    f, claim, x = axes_subject(runner)
    kept = x.copy()
    timer = threading.Timer(0.6, _thread.interrupt_main)  # the probes (~0.2 s) are done, the pool is up
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            run_axes(runner, f if runner == "compiled" else slow_rows, claim, x)
            time.sleep(5)  # (a kernel that ran to its end: the interrupt arrives here)
    finally:
        timer.cancel()
    assert same_bits(x, kept) and no_workers_left()


# -- screen (its blocks along signed directions: Points.of_blocks) --------------------------------
#: Small and deterministic: two blocks per draw; no referee (adjudicate="auto" decides from a
#: timing: not reproducible), no exact path, no complex step (its jobs run in process on every
#: runner), a fixed seed (the blocks a test computes below are the screen's).
SCREEN = dict(blocks=2, adjudicate=False, exact=False, complex_step=False, seed=0)


def run_screen(runner: str, f=None, x=X, claim=grad, **kw):
    """``screen`` on ``runner`` (the executor: a thread pool, or ``kw['pool']``)."""
    f = (f_jit() if runner == "compiled" else f_py) if f is None else f
    pool = kw.pop("pool", None)
    if runner == "executor":
        with pool or cf.ThreadPoolExecutor(2) as ex:
            return gradcheck.screen(f, x, claim, executor=gradcheck.ExecutorOptions(ex, retries=kw.pop("retries", 2)),
                                    **SCREEN, **kw)
    return gradcheck.screen(f, x, claim, engine=runner, vectorized=runner == "batched", **SCREEN, **kw)


def assert_same_screen(got, want, runner: str):
    """Serial's screen report: every per-entry array, the detection limit, the counts and the
    notes, but the engine's own (why it runs: ``"executor: directions run on ThreadPoolExecutor"``)
    and its name where a note says it."""
    assert_same(got, want)
    assert got.detection_limit.tobytes() == want.detection_limit.tobytes()
    assert got.engine == f"screen/{runner}" and want.engine == "screen/serial"
    own = [n for n in got.notes if n.startswith(f"{runner}: ")]
    assert len(own) <= 1
    assert [n.replace(f"engine {runner}", "engine serial") for n in got.notes if n not in own] == list(want.notes)


@pytest.mark.parametrize("runner", RUNNERS)
def test_screen_gives_serials_report(runner):
    needs(runner)
    x = X.copy()
    serial = gradcheck.screen(f_jit() if runner == "compiled" else f_py, X.copy(), grad, engine="serial", **SCREEN)
    got = run_screen(runner, x=x)
    assert_same_screen(got, serial, runner)
    if runner == "executor":  # the executor's own type, not the options it came in
        assert "executor: directions run on ThreadPoolExecutor" in got.notes
    # the negative control: the planted error is found (localized and judged), the rest screened
    assert got.codes[BAD] == gradcheck.Verdict.MISMATCH and not got.passed
    assert got.counts[gradcheck.Verdict.MISMATCH] == 1 and got.counts[gradcheck.Verdict.SCREENED] > 0
    assert same_bits(x, X)


def test_screen_of_a_correct_gradient_passes_on_every_runner():
    """The control beside the planted error: the true gradient is cleared (nothing MISMATCH)."""
    x = X.copy()
    for runner in [r for r in RUNNERS if r != "compiled" and (r != "processes" or fork_available())]:
        got = run_screen(runner, x=x, claim=g_true)
        assert got.passed and got.counts[gradcheck.Verdict.MISMATCH] == 0, runner
    assert same_bits(x, X)


def test_screen_auto_runs_a_vectorized_f_batched():
    """As check's auto: vectorized=True (or f.gradcheck_vectorized) runs the batched runner,
    serial's report; without it, auto stays in process for this cheap f (the control)."""
    serial = gradcheck.screen(f_py, X.copy(), grad, engine="serial", **SCREEN)

    def declared(x):
        return f_py(x)

    declared.gradcheck_vectorized = True  # type: ignore[attr-defined]
    for got in (gradcheck.screen(f_py, X.copy(), grad, vectorized=True, **SCREEN),
                gradcheck.screen(declared, X.copy(), grad, **SCREEN)):
        assert "batched: f takes a leading batch axis (vectorized): many directions per call" in got.notes
        got = dataclasses.replace(got, notes=tuple(n for n in got.notes if not n.startswith("batched: ")))
        assert_same_screen(got, serial, "batched")
    assert gradcheck.screen(f_py, X.copy(), grad, **SCREEN).engine == "screen/serial"


def test_screen_refuses_a_runner_that_does_not_apply():
    """batched needs vectorized=True (check's refusal, in screen's words); compiled an @njit
    or C f: the layer's refusal, check's type and words (CompiledRunner: compiled.unsupported)."""
    with pytest.raises(ValueError, match=r"engine='batched' needs an f that accepts a leading batch axis; "
                                         r"declare it with screen\(\.\.\., vectorized=True\)"):
        gradcheck.screen(f_py, X.copy(), grad, engine="batched", **SCREEN)
    refusal = "engine='compiled' cannot check this function: f is a function, not a numba @njit function"
    with pytest.raises(TypeError, match=refusal) as checked:
        check(f_py, X.copy(), grad, engine="compiled")
    with pytest.raises(TypeError, match=refusal) as screened:
        gradcheck.screen(f_py, X.copy(), grad, engine="compiled", **SCREEN)
    assert str(screened.value) == str(checked.value)


def first_of_the_block_holding(entry: tuple[int, ...], shape: tuple[int, ...]) -> tuple[tuple[int, ...], int]:
    """The first entry of the first draw's block that holds ``entry``, and its size: where f
    raises first when it raises as ``entry`` moves (the step search and the first draw's top
    level run before anything else), named as the layer names a block."""
    from gradcheck._screen._partition import draw

    flat = np.ravel_multi_index(entry, shape)
    block = next(b for b in draw(int(np.prod(shape)), SCREEN["blocks"], seed=SCREEN["seed"], number=0).blocks
                 if flat in b)
    return tuple(int(i) for i in np.unravel_index(int(block[0]), shape)), int(block.size)


def screen_subject(runner: str, mode: str | None = None):
    """``(f, x)``: the compiled runner's misbehaving subject is the shared @njit ``rosen``
    (tests/njit_subjects.py: it raises when x[0] > 1e3, writes 0 into x[1] when x[1] > 2 and its
    last entry is WRITES_WHEN_PERTURBED); the others' are raising and writing above."""
    if runner != "compiled":
        return {"raise": raising, "write": writing}[mode], X.copy()
    from njit_subjects import WRITES_WHEN_PERTURBED, rosen

    x = np.linspace(-0.5, 0.5, 8)
    if mode == "raise":
        x[0] = 1e3 - 1e-9
    else:
        x[1], x[-1] = 2.0 - 1e-9, WRITES_WHEN_PERTURBED
    return rosen, x


def rosen_claim(x):
    from njit_subjects import rosen_grad

    return rosen_grad(x)


@pytest.mark.parametrize("runner", RUNNERS)
def test_screen_f_raising_is_named_at_its_block(runner):
    """Serial's FunctionError: the first entry of the first block f raised along, ``along a
    block of N entries``, f's exception as the cause (the compiled runner: the @njit rosen
    raising as x[0] moves up)."""
    needs(runner)
    f, x = screen_subject(runner, "raise")
    before, claim = x.copy(), rosen_claim if runner == "compiled" else grad
    with pytest.raises(FunctionError) as serial:
        gradcheck.screen(f, x.copy(), claim, engine="serial", **SCREEN)
    with pytest.raises(FunctionError) as info:
        run_screen(runner, f=f, x=x, claim=claim)
    at, size = first_of_the_block_holding((0,) if runner == "compiled" else (3, 2), x.shape)
    assert (info.value.index, info.value.side) == (serial.value.index, serial.value.side) == \
        (at, f"along a block of {size} entries")
    assert type(info.value.__cause__) is type(serial.value.__cause__)
    assert isinstance(info.value.__cause__, ValueError if runner == "compiled" else ZeroDivisionError)
    assert same_bits(x, before) and no_workers_left()


@pytest.mark.parametrize("runner", RUNNERS)
def test_screen_f_writing_into_its_input_is_refused(runner):
    """A write into another entry (the compiled runner: rosen writing into the entry x[1] it
    perturbs, which putting the entry back would hide). Control: the same runners without the
    write (test_screen_gives_serials_report)."""
    needs(runner)
    f, x = screen_subject(runner, "write")
    before = x.copy()
    with pytest.raises(InputMutationError):
        run_screen(runner, f=f, x=x, claim=rosen_claim if runner == "compiled" else grad)
    assert same_bits(x, before) and no_workers_left()


# -- check_params(screen=True): one screen over every name ----------------------------------------
def run_params_screen(runner: str, loss_fn=loss, p=None, **kw):
    """``check_params(..., screen=True)`` on ``runner`` (the executor: a thread pool, or ``kw['pool']``)."""
    p = params() if p is None else p
    pool = kw.pop("pool", None)
    opts = dict(screen=True, adjudicate=False, budget=400)
    if runner == "executor":
        with pool or cf.ThreadPoolExecutor(2) as ex:
            return check_params(loss_fn, p, claims(), executor=gradcheck.ExecutorOptions(ex, retries=kw.pop("retries", 2)),
                                **opts)
    return check_params(loss_fn, p, claims(), engine=runner, **opts)


@pytest.mark.parametrize("runner", PARAMS_RUNNERS)
def test_check_params_screen_gives_serials_report(runner):
    needs(runner)
    p = params()
    got, serial = run_params_screen(runner, p=p), run_params_screen("serial")
    for name in ("w", "b"):
        assert_same_screen(got[name], serial[name], runner)
    assert got["w"].codes[BAD] == gradcheck.Verdict.MISMATCH and not got.passed  # the negative control
    assert got["b"].counts[gradcheck.Verdict.MISMATCH] == 0
    assert same_bits(p["w"], X) and same_bits(p["b"], X[0])


@pytest.mark.parametrize("runner", ["batched", "compiled"])
def test_check_params_screen_refuses_what_it_does_not_offer(runner):
    """loss(params) is a Python function of a dict of named arrays: no batch axis, no kernel."""
    with pytest.raises(ValueError, match=f"engine='{runner}' is not one of"):
        check_params(loss, params(), claims(), engine=runner, screen=True)


def test_check_params_screen_leaves_the_dict_as_it_was_when_the_loss_writes_at_the_base():
    """A loss that writes into its input at every call (the base point included): refused, and
    the dict as it was (as check_params without screen=True leaves it)."""
    p = params()

    def writing_loss(q):
        q["w"][0, 0] += 1.0
        return loss(q)

    with pytest.raises(InputMutationError):
        run_params_screen("serial", writing_loss, p)
    assert same_bits(p["w"], X) and same_bits(p["b"], X[0])


def dying_loss(q):
    if q["w"][3, 2] != X[3, 2] and os.getpid() != PARENT:
        os._exit(3)
    return loss(q)


@pytest.mark.parametrize("screen", [False, True])
@pytest.mark.parametrize("runner", ["processes", "executor"])
def test_check_params_a_dead_worker_is_never_a_raw_broken_pool(runner, screen):
    """Named by parameter, never by positions of the joined vector: processes: WorkerDiedError,
    entry by entry a range of w's entries that holds w[3, 2], with screen=True the joint
    screen's one block (every entry: from w[0, 0] to b[3]); the executor: ChunkFailedError
    after its retries, the broken pool chained, its entries (parameter, index) too."""
    needs("processes")
    p = params()
    run = run_params_screen if screen else run_params
    every = [("w", tuple(int(k) for k in i)) for i in np.ndindex(X.shape)] + [("b", (j,)) for j in range(X.shape[1])]
    if runner == "processes":
        with pytest.raises(WorkerDiedError) as died:
            run("processes", dying_loss, p)
        err = died.value
        if screen:  # the joint screen's one block is every entry (test_check_params_errors_name_the_parameter_and_entry)
            assert (err.param, err.first, err.last_param, err.last, err.count) == ("w", (0, 0), "b", (3,), 24)
            assert "one of the 24 entries from (0, 0) of parameter 'w' to (3,) of parameter 'b'" in str(err)
        else:
            assert (err.param, err.last_param) == ("w", "w") and err.first <= (3, 2) <= err.last
            assert f"from {err.first} to {err.last} of parameter 'w'" in str(err)
    else:
        pool = cf.ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("fork"))
        with pytest.raises(ChunkFailedError) as failed:
            run("executor", dying_loss, p, pool=pool, retries=0)
        err = failed.value
        assert type(err.__cause__).__name__ == "BrokenProcessPool"
        named = list(zip(err.params, err.entries))
        if screen:
            assert err.unit == "blocks" and "entries of this pass" not in str(err) and named == every
        else:  # whichever chunk the broken pool failed first: entries of w
            assert err.unit == "entries" and len(named) == len(err.entries) and set(named) <= set(every[:X.size])
    assert same_bits(p["w"], X) and same_bits(p["b"], X[0]) and no_workers_left()


@pytest.mark.parametrize("runner", PARAMS_RUNNERS)
def test_check_params_screen_ctrl_c_leaves_no_worker(runner):
    needs(runner)
    p = params()

    def slow_loss(q):
        time.sleep(0.02)
        return loss(q)

    timer = threading.Timer(0.2, _thread.interrupt_main)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            run_params_screen(runner, slow_loss, p)
            time.sleep(5)
    finally:
        timer.cancel()
    assert same_bits(p["w"], X) and same_bits(p["b"], X[0]) and no_workers_left()


# -- Ctrl-C while the pool forks its workers --------------------------------------------------------
_ARMED = {"interrupt": False}


def _interrupt_after_a_fork() -> None:
    if _ARMED["interrupt"]:
        _ARMED["interrupt"] = False
        _thread.interrupt_main()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_parent=_interrupt_after_a_fork)  # inert unless armed


@pytest.mark.parametrize("feature", ["check", "independent_axes", "screen"])
def test_ctrl_c_while_the_pool_forks_is_not_lost(feature):
    """An interrupt that arrives in CPython's at-fork handlers (here: raised from one, as a
    Ctrl-C during the fork would be) is printed and dropped there; the pool holds it back until
    its workers are forked, so the check stops with KeyboardInterrupt instead of running on."""
    needs("processes")
    x = X.copy()
    _ARMED["interrupt"] = True
    try:
        with pytest.raises(KeyboardInterrupt):
            if feature == "check":
                run_check("processes", x=x)
            elif feature == "screen":
                run_screen("processes", x=x)
            else:
                run_axes("processes", rows, rows_vjp, x)
    finally:
        _ARMED["interrupt"] = False
    assert same_bits(x, X) and no_workers_left()


# -- the orders: check_jvp and check_hvp (check's pass on each runner), and the points along a
# direction (taylor_test, check_adjoint's differences, check_hvp's offset: gradcheck._orders._complex.along)
def g_true(x):
    return np.cos(x) * x ** 2 + 2 * x * np.sin(x)


def jvp_bad(x, t):
    """J t of the scalar f_py, with grad's planted error at BAD (stacked tangents too)."""
    return np.sum(grad(x) * t, axis=(-2, -1))


def hvp(x, v):
    return (-np.sin(x) * x ** 2 + 4 * x * np.cos(x) + 2 * np.sin(x)) * v


def run_order(kind: str, runner: str, x):
    f = f_jit() if runner == "compiled" else f_py
    if kind == "jvp":
        call = lambda **kw: gradcheck.check_jvp(f, x, jvp_bad, batched=runner == "batched", **kw)  # noqa: E731
    else:
        call = lambda **kw: gradcheck.check_hvp(f, x, hvp, grad=g_true, **kw)  # noqa: E731
    if runner == "executor":
        with cf.ThreadPoolExecutor(2) as ex:
            return call(executor=ex)
    return call(engine=runner, vectorized=runner == "batched")


@pytest.mark.parametrize("runner", RUNNERS)
def test_check_jvp_gives_serials_report(runner):
    needs(runner)
    x = X.copy()
    got, serial = run_order("jvp", runner, x), run_order("jvp", "serial", X.copy())
    assert got.engine == runner and got.codes[BAD] == gradcheck.Verdict.MISMATCH
    if runner == "compiled":  # the @njit f's own bits: its serial report is the reference
        serial = gradcheck.check_jvp(f_jit(), X.copy(), jvp_bad, engine="serial")
    assert_same(got, serial)
    assert same_bits(x, X)


@pytest.mark.parametrize("runner", ["serial", "processes", "executor"])
def test_check_hvp_gives_serials_report(runner):
    """(The gradient map check_hvp differences is a Python function: batched and compiled do
    not apply to it, and refuse, as the golden corpus records.)"""
    needs(runner)
    x = X.copy()
    got, serial = run_order("hvp", runner, x), run_order("hvp", "serial", X.copy())
    assert got.engine == runner and got.passed
    assert_same(got, serial)
    assert same_bits(x, X)


ALONG_RUNNERS = ["serial", "processes", "executor"]
D = np.random.default_rng(7).standard_normal(X.shape)
SCALES = (1e-2, -1e-2, 5e-3, -5e-3)
LABELS = tuple(f"at x + s d (s = {s:g})" for s in SCALES)


def along_on(runner: str, f, x):
    from gradcheck._orders._complex import along

    with cf.ThreadPoolExecutor(2) as ex:
        return along(gradcheck.backends.NumpyBackend(), f, x, D, float, SCALES, LABELS, engine=runner,
                     executor=ex if runner == "executor" else None)


@pytest.mark.parametrize("runner", ALONG_RUNNERS)
def test_points_along_a_direction_give_serials_values(runner):
    needs(runner)
    x = X.copy()
    got, serial = along_on(runner, f_py, x), along_on("serial", f_py, X.copy())
    assert got.tobytes() == serial.tobytes()
    want = [f_py((X + s * D).astype(X.dtype)) for s in SCALES]  # independent: f at each point, by hand
    assert got.tolist() == [float(w) for w in want]
    assert same_bits(x, X) and no_workers_left()


def raising_far(x):
    if np.any(x[..., 0, 0] > X[0, 0] + 0.75e-2 * abs(D[0, 0])):
        raise ZeroDivisionError("planted")
    return f_py(x)


@pytest.mark.parametrize("runner", ALONG_RUNNERS)
def test_points_along_a_direction_name_the_point_f_raised_at(runner):
    """f raises at the points where entry (0, 0) moved by more than 0.75e-2 d: the first is
    s = 1e-2 or s = -1e-2, whichever moves it up (the sign of d); FunctionError names the point by
    its label, at no entry (the whole input moved); f writing into its input is refused."""
    needs(runner)
    x = X.copy()
    with pytest.raises(FunctionError) as info:
        along_on(runner, raising_far, x)
    first = 0 if D[0, 0] > 0 else 1
    assert info.value.index is None and info.value.side == LABELS[first]
    assert isinstance(info.value.__cause__, ZeroDivisionError)
    with pytest.raises(InputMutationError):
        along_on(runner, writing, x)
    assert same_bits(x, X) and no_workers_left()


def test_points_along_a_direction_a_dead_worker_is_worker_died():
    needs("processes")
    x = X.copy()
    with pytest.raises(WorkerDiedError):
        along_on("processes", dying_anywhere, x)
    assert same_bits(x, X) and no_workers_left()


def dying_anywhere(x):
    if os.getpid() != PARENT:
        os._exit(3)
    return f_py(x)


def test_taylor_test_names_the_point_f_raised_at():
    """taylor_test's points go through the layer: f raising at a step is FunctionError at that
    point (``at x + h d (h = ...)``), x untouched."""
    x = X.copy()

    def f(z):
        if not same_bits(z, X):
            raise ZeroDivisionError("planted")
        return f_py(z)

    with pytest.raises(FunctionError) as info:
        gradcheck.taylor_test(f, x, g_true)
    assert info.value.index is None and info.value.side.startswith("at x + h d (h = ")
    assert same_bits(x, X)
