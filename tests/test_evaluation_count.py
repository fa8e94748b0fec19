"""report.evaluations counts every call of f that gradcheck makes: the probes that choose
a plan (a float32 input tried at its float64 upcast, a float64 f tested for computing in
float32), the engine choice's timing call, the referee's trial at high precision, the
sanity call. Each case wraps f in a counter and compares (the serial engine runs in this
process, so the counter sees every call)."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from gradcheck import Verdict, check, check_params, screen
from gradcheck._lowp.f32steps import PRESET

X = np.random.default_rng(3).standard_normal(12)


def counted(f):
    calls = [0]

    def g(*args):
        calls[0] += 1
        return f(*args)
    return g, calls


def generic(x):
    return (np.sin(x) * x * x).sum()


def inside32(x):  # takes float64, computes in float32, returns float64
    return np.float64((np.sin(x.astype(np.float32)) * x.astype(np.float32) ** 2).sum())


def d_generic(x):
    x = np.asarray(x, dtype=np.float64)
    return np.cos(x) * x * x + 2 * x * np.sin(x)


def planted(x):
    g = d_generic(x)
    g[5] *= 1 + 1e-3
    return g


CASES = {
    "float64": (generic, X, d_generic),
    "float64, a planted bug (the referee runs)": (generic, X, planted),
    "float64 input, f computes in float32": (inside32, X, d_generic),
    "float32 input, precision-generic f": (generic, X.astype(np.float32), d_generic),
    "float32 input, f computes in float32": (inside32, X.astype(np.float32), d_generic),
    "bfloat16 input, precision-generic f": (generic, X.astype(ml_dtypes.bfloat16),
                                            lambda x: d_generic(x).astype(ml_dtypes.bfloat16)),
}


@pytest.mark.parametrize("case", list(CASES))
def test_report_evaluations_equal_the_calls_of_f(case):
    f, x, grad = CASES[case]
    g, calls = counted(f)
    report = check(g, x, grad, engine="auto")
    assert calls[0] >= 2 * x.size + 2  # the counter sees the first pass and f at x
    assert report.evaluations == calls[0], (case, report.evaluations, calls[0], report.notes)
    if "planted" in case:  # the referee took part, its probe and evaluations included
        assert report.entries(Verdict.MISMATCH) == [(5,)] and report.adjudication.get("attempted")
    if "computes in float32" in case and x.dtype == np.float64:
        assert report.config == PRESET  # the routed check, whose detection probes are counted


def test_independent_axes_with_the_slice_referee_counts_every_call():
    x = X.reshape(3, 4)
    wrong = np.zeros(x.shape, dtype=bool)
    wrong[1, 2] = True
    g, calls = counted(lambda v: np.sin(v) * v * v)
    report = check(g, x, lambda v, ct: d_generic(v) * ct * np.where(wrong, 1 + 1e-3, 1.0), independent_axes=(0,))
    assert report.entries(Verdict.MISMATCH) == [(1, 2)] and report.adjudication.get("attempted")
    assert any("own slice" in n for n in report.notes), report.notes  # the slice referee's trial call
    assert report.evaluations == calls[0], (report.evaluations, calls[0])


def test_check_params_counts_the_loss_calls_of_the_run_and_of_every_name():
    params = {"w": X[:6].copy(), "b": X[6:9].copy()}
    calls = [0]

    def loss(p):
        calls[0] += 1
        return float(np.tanh(p["w"]).sum() * (p["b"] ** 2).sum())
    grads = {"w": (1 - np.tanh(params["w"]) ** 2) * (params["b"] ** 2).sum(),
             "b": np.tanh(params["w"]).sum() * 2 * params["b"]}
    report = check_params(loss, params, grads)
    assert report.passed
    assert report.evaluations == calls[0] > sum(r.evaluations for r in report.reports.values())
    assert report.to_dict()["evaluations"] == calls[0]


def test_complex_input_and_complex_output_count_the_calls_that_saw_them():
    """A complex x (checked on its real view) and a float32 x whose f returns complex
    values: the calls that found the complex output (and chose the float32 plan) count."""
    z = X[:6] + 1j * X[6:]
    g, calls = counted(lambda v: float(np.sum(np.abs(v) ** 2)))
    report = check(g, z, lambda v: 2 * v)
    assert report.passed and report.evaluations == calls[0], (report.evaluations, calls[0])
    g, calls = counted(lambda v: np.exp(1j * v))
    x32 = X.astype(np.float32)
    report = check(g, x32, lambda v, ct: np.real(np.conj(ct) * 1j * np.exp(1j * v)))
    assert report.passed and report.evaluations == calls[0], (report.evaluations, calls[0])


@pytest.mark.parametrize("bug, exact", [(False, "auto"), (True, "auto"), (True, True)])
def test_screen_counts_every_call(bug, exact):
    """screen: its referee's trial and timing calls at arbitrary precision count too (the
    exact path, and the referee of a localized MISMATCH)."""
    w = X.reshape(3, 4)

    def grad(v):
        g = (1 - np.tanh(v) ** 2) * w
        g[1, 2] *= 1 + 1e-3 if bug else 1
        return g
    g, calls = counted(lambda v: float(np.sum(np.tanh(v) * w)))
    report = screen(g, w, grad, exact=exact)
    assert report.entries(Verdict.MISMATCH) == ([(1, 2)] if bug else []), str(report)
    assert report.evaluations == calls[0], (report.evaluations, calls[0])
