"""The second look: step study, kinks, and the arbitrary-precision referee.

References are closed-form derivatives and dual numbers, never the referee itself.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from zoo import CASES

import gradcheck
from gradcheck import Cause, Config, Verdict, check
from gradcheck._pipeline.prepare import make_cotangent

KINKS = [
    # (name, f, claimed gradient as frameworks define it at the kink, kink entries)
    ("relu", lambda x: np.maximum(x, 0.0).sum(), lambda x: (x > 0).astype(float), [(1,), (3,)]),
    ("abs", lambda x: np.abs(x).sum(), np.sign, [(1,), (3,)]),
    # np.max with a tie; the claim picks the first maximal entry, as frameworks do
    ("max", lambda x: x.max() * 3.0, lambda x: 3.0 * (np.arange(x.size) == np.argmax(x)), [(1,), (2,)]),
]
X_KINK = np.array([-1.5, 0.0, 0.0, 0.0, 2.0])  # entries 1..3 sit on kinks


@pytest.mark.parametrize("adjudicate", [False, "auto"])
@pytest.mark.parametrize("name, f, g, kinks", KINKS, ids=[k[0] for k in KINKS])
def test_points_on_a_kink_are_kink_not_mismatch(name, f, g, kinks, adjudicate):
    """relu/abs/max exactly at their kinks: KINK (subgradient choice), never MISMATCH, both
    from the step study alone and certified at high precision; one-sided values recorded."""
    x = X_KINK if name != "max" else np.array([0.3, 1.0, 1.0, -2.0])
    r = check(f, x, g, adjudicate=adjudicate)
    assert r.entries(Verdict.MISMATCH) == [], str(r)
    assert set(r.entries(Verdict.KINK)) >= set(kinks), str(r)
    for ix in r.entries(Verdict.KINK):
        lo, hi = sorted((r.left[ix], r.right[ix]))
        assert lo <= r.analytic[ix] <= hi and hi - lo >= 0.99
        assert r.cause(ix) is (Cause.KINK_EXACT if adjudicate else Cause.KINK_STEPS)


def test_claim_outside_the_subdifferential_is_a_mismatch():
    """At a kink, a claimed value outside [left, right] is still a bug."""
    r = check(lambda x: np.maximum(x, 0.0).sum(), np.array([0.0, 1.0]), np.array([3.0, 1.0]))
    assert r.entries(Verdict.MISMATCH) == [(0,)]


SPAN = 10.0 ** -np.arange(17)          # gradients from 1 down to 1e-16


def sixteen_orders(x):
    return (SPAN * x).sum() + 1e3 * np.tanh(x[0] / 7) + x[1] ** 2


def sixteen_orders_grad(x):
    g = SPAN.copy()
    g[0] += 1e3 / 7 * (1 - np.tanh(x[0] / 7) ** 2)
    g[1] += 2 * x[1]
    return g


def test_gradients_spanning_sixteen_orders_pass_by_adjudication():
    """Entries far below finite-difference noise are settled against the exact derivative
    (not left UNCHECKED by the differences), and none is MISMATCH. An entry PASSes when the
    backward's round-off allowance k*u*max|claim| is within 1% of it (``resolution``), when
    its exact value is itself within that allowance of zero (EXACT_ZERO), or when the claim
    agrees with the exact value to rtol and its own ulps; the two entries in between (1e-11,
    1e-12: the allowance, 1.3e-13, is 1.3% and 13% of them) PASS only that last way: there a
    claim 1% off agrees within the allowance, and is UNCHECKED, never PASS."""
    x = np.linspace(-1, 1, 17)
    fd_only = check(sixteen_orders, x, sixteen_orders_grad, adjudicate=False)
    assert fd_only.counts[Verdict.UNCHECKED] >= 5 and fd_only.counts[Verdict.MISMATCH] == 0
    r = check(sixteen_orders, x, sixteen_orders_grad)
    allowance = r.config.noise_factor * 2.0**-53 * np.abs(r.analytic).max()
    between = [ix for ix in np.ndindex(17) if allowance < abs(SPAN[ix]) < allowance / r.config.resolution]
    assert between == [(11,), (12,)]
    assert r.counts[Verdict.PASS] == 17 and all(r.cause(ix) is Cause.EXACT for ix in between), str(r)
    off = lambda x: sixteen_orders_grad(x) * np.where(np.arange(17) >= 11, 1.01, 1.0)
    r_off = check(sixteen_orders, x, off)
    assert r_off.entries(Verdict.UNCHECKED) == between, str(r_off)
    assert all(r.cause(ix) is Cause.EXACT_ZERO for ix in [(13,), (14,), (15,), (16,)])
    adjudicated = [ix for ix in np.ndindex(17) if r.cause(ix) is Cause.EXACT]
    assert len(adjudicated) >= 5
    for ix in adjudicated:  # the referee's exact values vs the closed form
        assert r.exact[ix] == pytest.approx(sixteen_orders_grad(x)[ix], rel=1e-13)
        assert r.digits[ix] >= 15


ZOO64 = [c for c in CASES if c.x.dtype == np.float64]


@pytest.mark.parametrize("case", ZOO64, ids=[c.name for c in ZOO64])
def test_planted_bugs_stay_mismatch_confirmed_against_exact(case):
    """Every planted bug is still MISMATCH at exactly its entries with the referee on, and
    the exact values the referee reports agree with the closed-form gradient."""
    r = check(case.f, case.x, case.buggy)
    assert set(r.entries(Verdict.MISMATCH)) == case.bug_entries, str(r)
    confirmed = [ix for ix in r.entries(Verdict.MISMATCH) if r.cause(ix) is Cause.EXACT]
    assert confirmed, "at least the worst mismatches are confirmed against the exact value"
    v = make_cotangent(case.x.shape, case.config or Config())  # the check's cotangent
    truth = case.grad(case.x, v) if case.f.__name__ == "softmax" else case.grad(case.x)
    for ix in confirmed:
        assert r.exact[ix] == pytest.approx(truth[ix], rel=1e-12, abs=1e-300)


def test_referee_agrees_with_dual_numbers():
    """The referee's exact derivatives equal the dual-number gradient (an independent algorithm)."""
    from gradcheck.dual import dual_gradient

    W = np.random.default_rng(3).standard_normal((4, 4))
    f = lambda x: np.tanh(x @ W).sum() * 1e-9 + (x * x).sum() * 1e6  # noqa: E731  tiny term below noise
    x = np.random.default_rng(4).standard_normal((2, 4))
    claimed = dual_gradient(f, x)
    r = check(f, x, claimed, adjudicate=True)
    from gradcheck.mp import mp_derivative

    for ix in [(0, 0), (1, 3)]:
        d = mp_derivative(f, x, ix, dps=30)
        assert float(d.value) == pytest.approx(claimed[ix], rel=1e-13)
    assert r.passed


def test_finite_difference_noise_is_explained_away():
    """A function with heavy internal cancellation has far more round-off than the model
    u*|f| says. The first pass used to be fooled (a MISMATCH on a correct claim); now the
    MISMATCH triggers a measurement of f's round-off that explains it away, and says so,
    even without the step study; the step study then resolves every entry to PASS."""
    f = lambda x: ((1e8 + x * x) - 1e8).sum()  # noqa: E731
    g = lambda x: 2 * x  # noqa: E731
    x = np.array([0.3, -0.7, 1.1])
    raw = check(f, x, g, refine=False, adjudicate=False)
    assert raw.counts[Verdict.MISMATCH] == 0
    assert any("measured round-off" in n and "cancels large intermediate values" in n for n in raw.notes)
    r = check(f, x, g, adjudicate=False)
    assert r.counts[Verdict.MISMATCH] == 0 and r.counts[Verdict.PASS] == 3


@pytest.mark.parametrize("drop", ["math", "float", "astype"])
def test_function_dropping_to_float_is_not_adjudicable(drop):
    """A function that silently leaves arbitrary precision is reported as not adjudicable,
    with the reason, and its entries keep their finite-difference verdicts."""
    def f(x):  # x[2] is unused: its true gradient 0 is what the referee would settle
        y = x[:2]
        if drop == "math":
            return sum(math.tanh(v) for v in y) + (y * y).sum()
        if drop == "float":
            return float(y[0]) + (y * y).sum()
        return (y.astype(np.float32)).sum() + (y * y).sum()

    def g(x):
        return np.array([2 * x[0] + (1 - math.tanh(x[0]) ** 2 if drop == "math" else 1.0),
                         2 * x[1] + ((1 - math.tanh(x[1]) ** 2) if drop == "math" else 1.0 if drop == "astype" else 0.0),
                         0.0])

    x = np.array([0.5, -0.25, 3.0])
    r = check(f, x, g, adjudicate=True)
    note = " ".join(r.notes)
    assert "not adjudicable" in note and "float" in note
    assert r.counts[Verdict.MISMATCH] == 0 and r.verdicts[2] is Verdict.UNCHECKED


def _relu_and_tiny(x):
    """Dead relu units (x[:2]: true gradient 0), live ones, and entries 1e-14 of the rest."""
    h = np.maximum(x[:4], 0.0)
    return np.sum(h * h) + 1e-14 * np.sum(np.tanh(x[4:6])) + np.sum(x[6:] ** 2)


def _relu_and_tiny_grad(x):
    g = 2 * np.maximum(x, 0.0)
    g[4:6] = 1e-14 * (1 - np.tanh(x[4:6]) ** 2)
    g[6:] = 2 * x[6:]
    return g


FINAL_CONVERSIONS = [
    ("float()", lambda x: float(_relu_and_tiny(x))),
    (".item()", lambda x: _relu_and_tiny(x).item()),
    ("np.float64()", lambda x: np.float64(_relu_and_tiny(x))),
]


@pytest.mark.parametrize(("name", "f"), FINAL_CONVERSIONS, ids=[c[0] for c in FINAL_CONVERSIONS])
def test_a_final_float_conversion_is_adjudicated(name, f):
    """``return float(loss)`` loses nothing the referee needs: relu-dead entries PASS as
    exact zeros and entries 1e-14 of the rest PASS against their exact values, where the
    differences alone leave both UNCHECKED. Negative controls: a dead unit claimed 1e-3 is
    a MISMATCH, a tiny entry 2% off is not a PASS."""
    x = np.array([-0.7, -0.3, 0.5, 1.2, 0.4, -0.8, 1.5, -2.0])
    fd_only = check(f, x, _relu_and_tiny_grad, adjudicate=False)
    assert fd_only.entries(Verdict.UNCHECKED) == [(0,), (1,), (4,), (5,)], str(fd_only)
    r = check(f, x, _relu_and_tiny_grad, adjudicate=True)
    assert r.counts[Verdict.PASS] == 8 and not any("not adjudicable" in n for n in r.notes), str(r)
    assert [r.cause((i,)) for i in (0, 1)] == [Cause.EXACT_ZERO] * 2
    assert [r.cause((i,)) for i in (4, 5)] == [Cause.EXACT] * 2
    for i in (4, 5):
        assert r.exact[i] == pytest.approx(1e-14 / np.cosh(x[i]) ** 2, rel=1e-12)
    wrong = _relu_and_tiny_grad(x)
    wrong[0], wrong[4] = 1e-3, wrong[4] * 1.02
    bad = check(f, x, wrong, adjudicate=True)
    assert bad.verdicts[0] is Verdict.MISMATCH and bad.verdicts[4] is not Verdict.PASS, str(bad)


def test_a_float_conversion_mid_computation_is_refused_with_its_line():
    """A float() whose value feeds the rest of the computation is refused, the line named;
    the differences' verdicts stand."""
    def f(x):
        scale = float(np.sum(x[6:] ** 2))  # a conversion in the middle of the computation
        return float(_relu_and_tiny(x) + 0.0 * scale)

    x = np.array([-0.7, -0.3, 0.5, 1.2, 0.4, -0.8, 1.5, -2.0])
    r = check(f, x, _relu_and_tiny_grad, adjudicate=True)
    note = " ".join(r.notes)
    assert "not adjudicable" in note and "in the middle" in note, note
    assert "test_referee.py:" in note and " in f" in note, note
    assert r.entries(Verdict.UNCHECKED) == [(0,), (1,), (4,), (5,)]


def test_adjudicate_false_never_calls_the_referee():
    """adjudicate=False leaves doubtful entries UNCHECKED and says nothing about the referee."""
    r = check(lambda x: (x[:1] ** 2).sum(), np.array([1.0, 2.0]), np.array([2.0, 0.0]), adjudicate=False)
    assert r.counts[Verdict.UNCHECKED] == 1 and not r.adjudication.get("attempted")


def test_report_says_what_was_adjudicated_and_at_what_cost():
    """The report names the adjudicated entries, the digits and the time spent."""
    r = check(lambda x: (x[:1] ** 2).sum(), np.array([1.0, 2.0]), np.array([2.0, 0.0]))
    assert r.adjudication["attempted"] and r.adjudication["entries"] == 1
    assert any("adjudicated 1 entries" in n for n in r.notes)
    assert r.cause((1,)) is Cause.EXACT_ZERO and r.verdicts[1] is Verdict.PASS
    assert r.to_dict()["adjudication"]["digits"] == 30


_DEAD_WORKER_SCRIPT = """
import json, os, sys
import numpy as np
import gradcheck
from gradcheck._adjudicate.referee import PARALLEL_MIN, Referee

PARENT = os.getpid()

def dies_in_a_worker(x):
    # sum(x**2), except that a worker process (not this one) exits abruptly at arbitrary
    # precision: a crash in the referee's pool, not in the float check
    if x.dtype == object and os.getpid() != PARENT:
        os._exit(7)
    return (x * x).sum()

x = np.linspace(0.5, 2.0, 2 * PARALLEL_MIN).reshape(2, PARALLEL_MIN)
try:
    Referee(dies_in_a_worker, x, None, digits=20)._all_derivatives(np.arange(x.size))
except gradcheck.WorkerDiedError as err:
    print(json.dumps({"count": err.count, "first": list(err.first), "last": list(err.last),
                      "expected_last": [1, PARALLEL_MIN - 1], "size": int(x.size), "text": str(err),
                      "cause": type(err.__cause__).__name__}))
    sys.exit(0)
sys.exit("no WorkerDiedError")
"""


def test_a_dead_referee_worker_is_a_worker_died_error_naming_the_entries():
    """The referee's own fork pool breaking (a worker exits) raises WorkerDiedError with the
    entries and how the worker ended, not a raw BrokenProcessPool. Run in a fresh
    interpreter: this test session may have started jax, after which the referee (rightly)
    does not fork, and the pool would never be tested in CI's full run."""
    import json
    import pathlib
    import subprocess
    import sys

    from gradcheck._evaluate import fork_available, usable_cores

    if usable_cores() < 2 or not fork_available():
        pytest.skip("the referee forks a pool only with two cores and the fork start method")
    source = str(pathlib.Path(gradcheck.__file__).resolve().parents[1])
    out = subprocess.run([sys.executable, "-c", _DEAD_WORKER_SCRIPT], capture_output=True, text=True,
                         timeout=300, env={**__import__("os").environ, "PYTHONPATH": source})
    assert out.returncode == 0, out.stdout + out.stderr
    err = json.loads(out.stdout.strip().splitlines()[-1])
    assert err["count"] == err["size"] and err["first"] == [0, 0] and err["last"] == err["expected_last"]
    assert "exited with status 7" in err["text"] and "referee" in err["text"]
    assert "adjudicate=False" in err["text"]
    assert err["cause"] == "BrokenProcessPool"


def test_whether_the_referee_may_run_is_asked_of_the_backend_and_of_f():
    """One function decides: numpy code on an mp-capable backend may go to the referee; a
    numba function or a native C function may not (whatever the backend), nor may any f on
    a backend that is not mp-capable (torch). A check that asked for the referee on
    compiled code says why it did not run; numpy code does get adjudicated."""
    import numba

    from gradcheck._adjudicate.referee import COMPILED_F, referee_may_run
    from gradcheck.backends import NumpyBackend
    from gradcheck.native import native_function

    def f(x):
        return float((x ** 3).sum())

    njit_f = numba.njit(f)  # not compiled yet: only its type is asked about
    be = NumpyBackend()
    assert referee_may_run(be, f) == (True, None)
    assert referee_may_run(be, njit_f) == (False, COMPILED_F)
    assert referee_may_run(be, numba.vectorize(lambda v: v)) == (False, COMPILED_F)  # numba's DUFunc
    assert referee_may_run(be, native_function("rosenbrock")) == (False, COMPILED_F)

    class NotMp:
        name, mp_capable = "not-mp", False

    assert referee_may_run(NotMp(), f) == (False, None)
    x = np.array([0.5, -1.25, 2.0])
    compiled = check(njit_f, x, grad=lambda v: 3 * v ** 2, adjudicate=True, engine="serial")
    assert f"no exact derivatives (not adjudicable): {COMPILED_F}" in compiled.notes
    plain = check(f, x, grad=lambda v: 3 * v ** 2, adjudicate=True)
    assert not any(COMPILED_F in n for n in plain.notes) and plain.adjudication


def test_a_function_that_cannot_run_at_arbitrary_precision_is_said_in_user_words():
    """issue 27: f casting to bfloat16 (ml_dtypes) cannot run on arbitrary-precision numbers; the
    note says so, names the line of f where it failed and what runs instead, never the internal
    code "unsupported_operation" or numpy's "object-dtype loop"."""
    import ml_dtypes

    def f(x):
        return np.sin(x.astype(ml_dtypes.bfloat16)).sum()

    report = check(f, np.linspace(0.1, 1.3, 6), grad=np.cos)
    (note,) = [n for n in report.notes if "adjudicable" in n]
    assert note.startswith("no exact derivatives (not adjudicable): f cannot run on arbitrary-precision numbers")
    assert f"test_referee.py:{f.__code__.co_firstlineno + 1} (in f)" in note
    assert "unsupported_operation" not in note and "object-dtype" not in note and "astype" in note
