"""The referee under concurrency: an arbitrary-precision computation owns its precision.

mpmath keeps one working precision per process. A check's exact derivatives, a dispute's
exact values and ``gradcheck.mp.evaluate`` must not depend on it: these tests run them while
other threads compute at other precisions or change mpmath's global precision in a loop, and
require results identical, bit for bit, to the same runs made alone. They also require that
gradcheck leaves mpmath's global precision as it found it, without changing it even while
``f`` runs, also when ``f`` raises.

Threads are made to switch every 10 microseconds (``sys.setswitchinterval``) instead of every
5 ms, so that they interleave inside a single adjudication rather than between checks.
"""
from __future__ import annotations

import math
import os
import random
import subprocess
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import ml_dtypes
import mpmath
import numpy as np
import pytest

import gradcheck
from gradcheck import Verdict, dispute
from gradcheck.mp import NotAdjudicable, evaluate

X = np.random.default_rng(0).standard_normal((6, 5))
BUG = (4, 1)


def tour_f(x):
    """The README's 30-second tour."""
    return (np.tanh(x) * x[::-1]).sum()


def tour_grad(x):
    """Its hand-written gradient with the tour's planted bug: 1e-5 relative at (4, 1)."""
    g = (1 - np.tanh(x) ** 2) * x[::-1] + np.tanh(x[::-1])
    g[BUG] *= 1 + 1e-5
    return g


def _report_bits(report) -> tuple:
    """Everything the referee decides, as bytes: exact values, certified digits, verdicts,
    causes, one-sided values."""
    return tuple(np.asarray(a).tobytes() for a in (
        report.exact, report.digits, report.codes, report.causes, report.left, report.right))


def _tour(digits: int):
    return gradcheck.check(tour_f, X, grad=tour_grad, digits=digits)


def _dispute_bits(result) -> tuple:
    exact = tuple(v._t for v in np.asarray(result.exact).reshape(-1))
    return exact, tuple(e.tobytes() for e in result.errors.values()), result.closer.tobytes()


def _bf16_dispute():
    x = np.linspace(-3, 3, 200).astype(ml_dtypes.bfloat16)
    fast = np.exp(x.astype(np.float32)).astype(ml_dtypes.bfloat16)
    return dispute(lambda v: np.exp(v) / 3, (x,), {"fast": fast}, "bfloat16", dps=40)


@pytest.fixture
def fast_switching():
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    yield
    sys.setswitchinterval(old)


def _in_threads(jobs: list[Callable[[], Any]]) -> list[Any]:
    """Run the jobs at the same time, one thread each; their results, or the first error."""
    start = threading.Barrier(len(jobs))
    results: list[Any] = [None] * len(jobs)

    def run(k: int) -> None:
        start.wait()
        try:
            results[k] = jobs[k]()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the test's thread
            results[k] = exc

    threads = [threading.Thread(target=run, args=(k,)) for k in range(len(jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for r in results:
        if isinstance(r, BaseException):
            raise r
    return results


class _Meddler:
    """A thread that uses mpmath the way any other code may, in a loop: short computations
    under ``mpmath.workdps(6)``, and assignments of a random ``mpmath.mp.dps``."""

    def __enter__(self) -> _Meddler:
        self._stop = threading.Event()
        self._prec = mpmath.mp.prec
        self._thread = threading.Thread(target=self._meddle, daemon=True)
        self._thread.start()
        return self

    def _meddle(self) -> None:
        rng = random.Random(0)
        while not self._stop.is_set():
            with mpmath.workdps(6):
                mpmath.mpf(1) / 3
            mpmath.mp.dps = rng.randint(3, 80)
            mpmath.mpf(2) ** 0.5

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        mpmath.mp.prec = self._prec


def test_the_tour_is_adjudicated_at_each_precision():
    """The reference the concurrency tests compare with: alone, the tour's planted bug is a
    MISMATCH confirmed against the exact derivative, with its digits certified."""
    for digits in (20, 30, 45):
        r = _tour(digits)
        assert r.entries(Verdict.MISMATCH) == [BUG]
        assert r.digits[BUG] >= 2 * digits // 3
        assert abs(r.exact[BUG] - 1.1617829031945783) < 1e-15


def test_threads_adjudicating_at_different_digits_match_their_runs_alone(fast_switching):
    """Four threads check the tour at 20, 30, 45 and 60 digits at the same time, three times
    each: every report equals, bit for bit, the report of the same check run alone."""
    levels = (20, 30, 45, 60)
    alone = {d: _report_bits(_tour(d)) for d in levels}
    together = _in_threads([lambda d=d: [_report_bits(_tour(d)) for _ in range(3)]
                            for d in levels])
    for d, runs in zip(levels, together):
        assert all(run == alone[d] for run in runs), f"digits={d}"


def test_a_thread_changing_mpmath_precision_does_not_change_the_report(fast_switching):
    """While another thread changes mpmath's global precision in a loop, twenty checks of the
    tour give exactly the report of the check run alone (on the unfixed code most of them
    came out with 'exact' values like -8e+40 at 0 certified digits)."""
    alone = _report_bits(_tour(30))
    with _Meddler():
        runs = [_report_bits(_tour(30)) for _ in range(20)]
    assert sum(run != alone for run in runs) == 0


def test_a_thread_changing_mpmath_precision_does_not_change_a_dispute(fast_switching):
    """A dispute's exact values and ulp errors, computed while another thread changes
    mpmath's global precision, are those of the dispute run alone."""
    alone = _dispute_bits(_bf16_dispute())
    with _Meddler():
        runs = [_dispute_bits(_bf16_dispute()) for _ in range(10)]
    assert sum(run != alone for run in runs) == 0


_PYTHON_BACKEND_RUN = """
import sys
sys.path.insert(0, {tests!r})
sys.setswitchinterval(1e-5)
from test_mp_concurrency import _Meddler, _report_bits, _tour
from gradcheck.mp import backend
alone = _report_bits(_tour(30))
with _Meddler():
    runs = [_report_bits(_tour(30)) for _ in range(5)]
print(backend(), sum(run != alone for run in runs), b"|".join(alone).hex())
"""


def test_pure_python_backend_is_as_safe_and_gives_the_same_report():
    """Without gmpy2 (MPMATH_NOGMPY=1, in a subprocess) mpmath's pure-Python backend does the
    arithmetic: checks under a thread changing mpmath's precision still equal the check run
    alone, and that report is, bit for bit, the one computed with gmpy2 in this process."""
    env = dict(os.environ, MPMATH_NOGMPY="1")
    code = _PYTHON_BACKEND_RUN.format(tests=str(Path(__file__).parent))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         check=True, timeout=120).stdout.split()
    assert out == ["python", "0", b"|".join(_report_bits(_tour(30))).hex()]


def _threaded_rows(v):
    """f that spreads its rows over threads it starts itself (they see no context variable)."""
    with ThreadPoolExecutor(2) as pool:
        return sum(pool.map(lambda row: np.tanh(row).sum() / 3, v))


def test_threads_started_by_f_compute_at_the_evaluations_precision():
    """An f that hands its rows to threads of its own gets exactly the value of the same
    computation in one thread: the values carry their evaluation's precision with them."""
    mpmath.mp.dps = 8
    threaded = evaluate(_threaded_rows, X, dps=40)
    serial = evaluate(lambda v: sum(np.tanh(row).sum() / 3 for row in v), X, dps=40)
    assert threaded._t == serial._t
    with mpmath.workdps(50):
        want = mpmath.fsum(mpmath.tanh(mpmath.mpf(float(v))) for v in X.ravel()) / 3
        assert abs(threaded.value - want) < mpmath.mpf(10) ** -38


def _kinked(scale: float):
    """``scale * relu`` at 14 points exactly on the kink: each entry goes to the referee."""

    def f(v):
        return scale * np.maximum(v, 0.0).sum()

    def g(v):
        return scale * (v > 0).astype(float)

    return f, np.zeros(14), g


def test_concurrent_checks_that_fork_the_referee_pool_keep_their_own_function(fast_switching):
    """Two threads whose checks each adjudicate 14 entries on a forked process pool: each
    pool works on its own check's function (the one-sided derivatives say which), as when
    run alone."""
    cases = [_kinked(1.0), _kinked(5.0)]
    reports = [gradcheck.check(f, x, g) for f, x, g in cases]
    assert [r.adjudication["entries"] for r in reports] == [14, 14]
    assert [r.right.max() for r in reports] == [1.0, 5.0]
    alone = [_report_bits(r) for r in reports]
    for _ in range(3):
        together = _in_threads([lambda c=c: _report_bits(gradcheck.check(*c)) for c in cases])
        assert together == alone


# ---- mpmath's global precision is left alone ----------------------------------------------------
class _Raises(Exception):
    pass


def _recording(seen: list, fail_on_mp_call: int | None, error: type[Exception]):
    """The tour's f, recording mpmath's global precision at every call; it raises ``error``
    on its ``fail_on_mp_call``-th arbitrary-precision call."""
    mp_calls = [0]

    def f(x):
        seen.append(mpmath.mp.prec)
        if x.dtype == object:
            mp_calls[0] += 1
            if mp_calls[0] == fail_on_mp_call:
                raise error("f fails at high precision")
        return tour_f(x)

    return f


@pytest.mark.parametrize(("fail_on_mp_call", "error"), [
    (None, None),           # adjudicated normally
    (1, ValueError),        # the probe fails: not adjudicable
    (4, ValueError),        # a derivative fails half way: that entry keeps its verdict
    (4, _Raises),           # an error the referee does not expect: it propagates
])
def test_check_leaves_mpmath_precision_as_it_found_it(fail_on_mp_call, error):
    """mpmath's global precision is the caller's at every call of f (also while the referee
    works at 30 and 50 digits) and after the check, whether f runs or raises."""
    mpmath.mp.prec = 77
    seen: list[int] = []
    f = _recording(seen, fail_on_mp_call, error)
    if error is _Raises:
        with pytest.raises(_Raises):
            gradcheck.check(f, X, grad=tour_grad)
    else:
        r = gradcheck.check(f, X, grad=tour_grad)
        assert r.entries(Verdict.MISMATCH) == [BUG]
        assert (r.digits[BUG] > 0) == (fail_on_mp_call is None)
    assert mpmath.mp.prec == 77
    assert len(seen) > 60 and set(seen) == {77}


def test_check_whose_f_raises_on_float_input_leaves_mpmath_precision_alone():
    """An f that fails outright: the check raises and mpmath's precision is untouched."""
    mpmath.mp.prec = 77

    def f(x):
        raise ValueError("broken")

    with pytest.raises(Exception, match="broken"):
        gradcheck.check(f, X, grad=tour_grad)
    assert mpmath.mp.prec == 77


def _leaky(v):
    return np.array([math.exp(e) for e in v])  # math.exp leaves arbitrary precision


def _raises(v):
    raise _Raises("math_fn fails")


@pytest.mark.parametrize(("math_fn", "error"), [
    (lambda v: np.exp(v) / 3, None),
    (_leaky, NotAdjudicable),
    (_raises, _Raises),
])
def test_dispute_leaves_mpmath_precision_as_it_found_it(math_fn, error):
    """mpmath's global precision is the caller's while math_fn runs at 60 digits and after
    the dispute, whether math_fn runs, leaves arbitrary precision or raises."""
    mpmath.mp.prec = 77
    seen: list[int] = []

    def recorded(v):
        seen.append(mpmath.mp.prec)
        return math_fn(v)

    x = np.linspace(0, 1, 4)
    candidates = {"c": np.exp(x).astype(ml_dtypes.bfloat16)}
    if error is None:
        dispute(recorded, (x,), candidates, "bfloat16", dps=60)
    else:
        with pytest.raises(error):
            dispute(recorded, (x,), candidates, "bfloat16", dps=60)
    assert mpmath.mp.prec == 77
    assert seen and set(seen) == {77}
