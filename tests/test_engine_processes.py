"""The processes engine: chunks on forked workers, results identical to serial bit for bit."""
from __future__ import annotations

import collections
import gc
import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
from optional_deps import need
from zoo import CASES

import gradcheck
from gradcheck import FunctionError, check
from gradcheck._differences import CentralDifferences, steps_for
from gradcheck._evaluate import ProcessesRunner, auto_reason, fork_available
from gradcheck._evaluate import auto as _auto
from gradcheck._evaluate.processes import CHUNKS_PER_WORKER
from gradcheck.backends import NumpyBackend
from gradcheck.engines import CheckProblem, select_engine

pytestmark = pytest.mark.skipif(not fork_available(), reason="needs the fork start method")


def _problem(f, x):
    work = np.array(x, order="C", copy=True)
    return CheckProblem(f=f, work=work, evaluate=lambda: float(f(work)), backend=NumpyBackend(),
                        cotangent=None)


def _group_gone(pgid: int, seconds: float = 60.0) -> bool:
    """Whether every process of the group ``pgid`` is gone within ``seconds`` (a bound on
    waiting, not a speed claim: generous, since it returns as soon as they are gone)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)  # anyone left in the group?
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def _no_children_left():
    gc.collect()
    return multiprocessing.active_children() == []


def _assert_processes_equal_serial(case):
    for grad in (case.grad, case.buggy):
        serial = check(case.f, case.x, grad, engine="serial", config=case.config)
        procs = check(case.f, case.x, grad, engine="processes", config=case.config)
        assert procs.engine == "processes"
        np.testing.assert_array_equal(procs.codes, serial.codes)
        np.testing.assert_array_equal(procs.numeric, serial.numeric)
        np.testing.assert_array_equal(procs.noise, serial.noise)
    assert _no_children_left()


#: One zoo case of each kind the processes engine treats differently: a float64 scalar f,
#: a float32 input, an array output (its cotangent).
SMALL_ZOO = [c for c in CASES if c.name in ("single entry 1e-4", "float32", "softmax (constant sum)")]


@pytest.mark.parametrize("case", SMALL_ZOO, ids=[c.name for c in SMALL_ZOO])
def test_processes_report_equals_serial_bit_for_bit(case):
    """Correct and buggy claims, float64, float32 and an array output: the processes engine
    gives serial's verdicts and serial's numbers, bit for bit (every zoo case: the
    ``scale`` test below)."""
    assert len(SMALL_ZOO) == 3
    _assert_processes_equal_serial(case)


@pytest.mark.scale
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_processes_report_equals_serial_bit_for_bit_on_the_whole_zoo(case):
    """On the whole zoo the processes engine gives serial's verdicts and numbers, bit for
    bit (a fork pool per case: ``scale``; its sibling above runs one case of each kind)."""
    _assert_processes_equal_serial(case)


@pytest.mark.parametrize("workers, chunks", [(2, 1), (2, 8), (3, 5)])
def test_differences_equal_serial_for_any_chunking(workers, chunks):
    """f_plus, f_minus and denominators do not depend on how entries are chunked."""
    x = np.random.default_rng(3).standard_normal((7, 5)).astype(np.float32)
    problem = _problem(lambda x: float((np.tanh(x.astype(np.float64)) * x).sum()), x)
    idx = np.arange(x.size)
    steps = steps_for(x.reshape(-1), 1e-3)
    want = select_engine("serial", problem)[0].differences(idx, steps)
    engine = CentralDifferences(ProcessesRunner(problem, workers=workers, chunks_per_worker=chunks), problem.work)
    try:
        got = engine.differences(idx, steps)
        again = engine.differences(idx[::-1], steps[::-1])  # the pool is reused
    finally:
        engine.close()
    for w, g, r in zip(want, got, again):
        np.testing.assert_array_equal(g, w)
        np.testing.assert_array_equal(r, w[::-1])


def test_a_worker_error_names_the_first_failing_entry():
    """f raising in a worker is re-raised in the parent as FunctionError at the first
    failing entry in index order (as serial reports it), with the cause chained."""
    x = np.arange(40.0).reshape(8, 5)

    def f(x):
        if x[1, 3] != 8.0 or x[6, 0] != 30.0:  # both perturbed entries raise, in different chunks
            raise ZeroDivisionError("boom")
        return float(x.sum())

    with pytest.raises(FunctionError) as serial:
        check(f, x, np.ones_like(x), engine="serial")
    with pytest.raises(FunctionError) as procs:
        check(f, x, np.ones_like(x), engine="processes")
    assert procs.value.index == serial.value.index == (1, 3)
    assert procs.value.side == serial.value.side == "+h"
    assert isinstance(procs.value.__cause__, ZeroDivisionError)
    assert _no_children_left()


@pytest.mark.parametrize("death, how", [
    (lambda: os.kill(os.getpid(), signal.SIGKILL), "killed by SIGKILL"),
    (lambda: os._exit(3), "exited with status 3"),
])
def test_a_dead_worker_is_named_with_its_entry_range(death, how):
    """A worker that dies while differencing (killed, out of memory, a native crash,
    os._exit) breaks the pool: WorkerDiedError names how it died and an entry range that
    holds the entry that killed it, never a raw BrokenProcessPool; no worker is left."""
    x = np.arange(40.0).reshape(8, 5)
    parent = os.getpid()

    def f(x):
        if x[4, 2] != 22.0 and os.getpid() != parent:  # only perturbed, only in a worker
            death()
        return float(x.sum())

    with pytest.raises(gradcheck.WorkerDiedError) as info:
        check(f, x, np.ones_like(x), engine="processes")
    err = info.value
    flat = lambda index: int(np.ravel_multi_index(index, x.shape))  # noqa: E731
    assert flat(err.first) <= flat((4, 2)) <= flat(err.last)
    assert 1 <= err.count <= x.size
    assert type(err.__cause__).__name__ == "BrokenProcessPool"
    assert how in str(err) and str(err.first) in str(err) and "out of memory" in str(err)
    assert _no_children_left()


class _Unpicklable(Exception):
    def __init__(self, a, b):
        super().__init__(f"{a} {b}")


def test_an_unpicklable_worker_error_still_arrives():
    """An exception that cannot cross a process boundary is still reported with its entry."""
    x = np.ones((4, 3))

    def f(x):
        if x[2, 1] != 1.0:
            raise _Unpicklable("no", "pickle")
        return float(x.sum())

    with pytest.raises(FunctionError, match="_Unpicklable") as info:
        check(f, x, np.ones_like(x), engine="processes")
    assert info.value.index == (2, 1)
    assert _no_children_left()


def test_the_users_array_is_untouched():
    """x is never written; the parent's private copy is never perturbed either."""
    x = np.random.default_rng(5).standard_normal((6, 4))
    before = x.copy()
    check(lambda x: float((x**3).sum()), x, lambda x: 3 * x**2, engine="processes").assert_pass()
    np.testing.assert_array_equal(x, before)


@pytest.mark.parametrize("trigger, target", [
    (23, 0),    # the last entry's turn writes into the first: another worker's chunk
    (5, 3),     # a write into an entry its own chunk already passed (no probe sees it)
    (3, 5),     # a write ahead of the loop (the per-entry probe sees it)
])
def test_a_write_into_the_input_on_a_worker_is_refused(trigger, target):
    """f writing into its input on a worker: InputMutationError, as serial raises, wherever
    the written entry lies (the parent's own copy is untouched, so only the worker can see
    it); no worker is left behind and x is untouched."""
    x = np.linspace(0.5, 2.0, 24)
    before = x.copy()

    def f(z):
        if z[trigger] != x[trigger]:
            z[target] = 7.0
        return float((z * z).sum())

    for engine in ("serial", "processes"):
        with pytest.raises(gradcheck.InputMutationError, match="wrote into the array"):
            check(f, x, 2 * x, engine=engine)
    assert x.tobytes() == before.tobytes()
    assert _no_children_left()


def test_the_pool_is_shut_down_after_a_check():
    """No worker outlives the check that started it."""
    check(lambda x: float((x**2).sum()), np.ones(6), lambda x: 2 * x, engine="processes")
    assert _no_children_left()


def test_progress_is_reported_as_chunks_finish():
    """The progress callback sees growing counts that end at the number of entries."""
    x = np.ones(24)
    counts = []
    problem = _problem(lambda x: float(x.sum()), x)
    engine = CentralDifferences(ProcessesRunner(problem, workers=2, chunks_per_worker=3), problem.work)
    try:
        engine.differences(np.arange(24), np.full(24, 1e-5), progress=counts.append)
    finally:
        engine.close()
    assert counts == sorted(counts) and counts[-1] == 24


def test_auto_leaves_a_cheap_f_to_others():
    """A cheap f is not worth a pool: auto_reason returns None after one timing."""
    calls = []
    problem = _problem(lambda x: calls.append(1) or float(x.sum()), np.ones(100))
    assert auto_reason("processes", problem) is None
    assert len(calls) == 1


def test_auto_picks_processes_for_a_costly_f(monkeypatch):
    """A check estimated at more than AUTO_MIN_SECONDS on more than one core goes to
    processes, and the reason gives the estimate."""
    monkeypatch.setattr(_auto, "usable_cores", lambda: 4)
    monkeypatch.setattr(_auto, "time_call", lambda evaluate: 0.01)
    # the estimate is under test, not the hazard: jax may be running from an earlier test
    monkeypatch.setattr(_auto, "fork_hazard", lambda: None)
    reason = auto_reason("processes", _problem(lambda x: float(x.sum()), np.ones(200)))
    assert reason is not None and "400 evaluations" in reason and "4 processes" in reason


def test_auto_never_picks_processes_on_one_core(monkeypatch):
    """With one usable core a pool cannot help."""
    monkeypatch.setattr(_auto, "usable_cores", lambda: 1)
    monkeypatch.setattr(_auto, "time_call", lambda evaluate: 10.0)
    assert auto_reason("processes", _problem(lambda x: float(x.sum()), np.ones(200))) is None


def test_negative_control_passes_on_processes():
    """The instrument works on this engine: a corrupted gradient is flagged, a correct
    one passes."""
    gradcheck.assert_detects_wrong_gradient("numpy", engine="processes")
    assert _no_children_left()


_INTERRUPTED = textwrap.dedent(
    """
    import os, sys, time
    import numpy as np
    from gradcheck.engines import CheckProblem
    from gradcheck._differences import CentralDifferences
    from gradcheck._evaluate import ProcessesRunner
    from gradcheck.backends import NumpyBackend

    LOG = sys.argv[1] if len(sys.argv) > 1 else None  # one line per finished evaluation

    def f(x):
        time.sleep(0.1)
        if LOG:
            with open(LOG, "a") as fh:
                fh.write(f"{os.getpid()}\\n")
        return float(x.sum())

    work = np.ones(400)
    problem = CheckProblem(f=f, work=work, evaluate=lambda: f(work), backend=NumpyBackend(),
                           cotangent=None)
    engine = CentralDifferences(ProcessesRunner(problem, workers=2), work)
    print("ready", flush=True)
    try:
        engine.differences(np.arange(400), np.full(400, 1e-5))
    except KeyboardInterrupt:
        print("interrupted", flush=True)
        sys.exit(0)
    print("not interrupted", flush=True)
    sys.exit(1)
    """
)


#: Evaluations in one chunk of _INTERRUPTED: 400 entries in 2 workers x 8 chunks, 2 each.
CHUNK_EVALUATIONS = 2 * 400 // (2 * CHUNKS_PER_WORKER)


def _busy_check(log=None) -> subprocess.Popen:
    """The _INTERRUPTED script in its own session, once its workers are forked and busy
    (each evaluation takes 0.1 s; with ``log``, each worker appends its pid there per
    evaluation)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _INTERRUPTED, *([str(log)] if log else [])], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, start_new_session=True,
    )
    assert proc.stdout.readline().strip() == "ready"
    time.sleep(1.0)
    return proc


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_workers_die_with_a_killed_parent(sig):
    """SIGTERM (default action: no handler, no cleanup) or SIGKILL to the checking process
    alone: its workers do not linger as orphans (the kernel kills them with it)."""
    proc = _busy_check()
    try:
        os.kill(proc.pid, sig)  # the parent only, not its group
        proc.communicate(timeout=30)
        if not _group_gone(proc.pid):
            pytest.fail(f"a worker outlived its parent killed with {sig.name}")
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_ctrl_c_leaves_no_worker_behind(tmp_path):
    """Ctrl-C (SIGINT to the whole process group, as a terminal sends it) stops the check
    at once with KeyboardInterrupt in the parent: no worker runs its chunk to the end (it
    is interrupted about 1 s into chunks of 5 s: counted in evaluations, not timed), the
    workers print nothing, and every worker is gone."""
    log = tmp_path / "evaluations"
    proc = _busy_check(log)
    try:
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 0, out + err
    assert "interrupted" in out
    assert "Traceback" not in err, err
    if not _group_gone(proc.pid):
        pytest.fail("a worker process outlived the interrupted check")
    per_worker = collections.Counter(log.read_text().split()) if log.exists() else collections.Counter()
    assert max(per_worker.values(), default=0) < CHUNK_EVALUATIONS, per_worker


_WITH_JAX = textwrap.dedent(
    """
    import multiprocessing, warnings
    import numpy as np
    warnings.simplefilter("error")  # jax's fork warning would be an error
    import jax.numpy as jnp
    jnp.ones(3).block_until_ready()  # jax's runtime is now running in this process
    from gradcheck import check, check_params
    from gradcheck._evaluate import fork_hazard
    from gradcheck._evaluate import auto as _auto
    from gradcheck._adjudicate.referee import Referee
    import gradcheck._adjudicate.referee as referee_module

    assert "jax" in fork_hazard()
    _auto.PROCESSES_MIN_SECONDS = 0.0          # any f is "costly" now
    x = np.linspace(0.5, 1.5, 40)
    r = check(lambda z: float((z ** 3).sum()), x, lambda z: 3 * z ** 2, adjudicate=False)
    assert r.engine == "serial" and "no process pool is forked" in r.notes[0], r.notes
    p = check_params(lambda q: float((q["w"] ** 3).sum()), {"w": x.copy()}, {"w": 3 * x ** 2},
                     adjudicate=False)
    assert p["w"].engine == "serial" and "jax" in p["w"].notes[0], p["w"].notes
    # asked for explicitly, the pool is forked anyway and the report says so
    warnings.simplefilter("ignore")  # jax's own fork warning
    forced = check(lambda z: float((z ** 3).sum()), x, lambda z: 3 * z ** 2, engine="processes",
                   adjudicate=False)
    assert forced.engine == "processes" and forced.passed
    assert any("forked its workers although jax" in n for n in forced.notes), forced.notes
    # the referee adjudicates in this process instead of forking a pool
    ref = Referee(lambda z: (z ** 3).sum(), x, None, digits=20)
    found = ref._all_derivatives(np.arange(24))
    assert all(d is not None for d in found) and multiprocessing.active_children() == []
    print("ok")
    """
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork")
def test_no_fork_once_jax_runs_in_the_process():
    """With jax's runtime started in the process, auto picks no process pool (check and
    check_params say why) and the referee adjudicates in-process: a forked child calling
    into jax may deadlock, and jax warns about it (an error here)."""
    need("jax")
    out = subprocess.run([sys.executable, "-c", _WITH_JAX], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stdout + out.stderr
