"""What to do next (issue 27): every text report ends with the next step for its status, and
the step it names works (the rerun with a lower rtol finds the difference it was told of)."""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
from html_subjects import PLANTED, f, planted_grad

import gradcheck as gc
from gradcheck import Verdict
from gradcheck._report.next_step import next_steps

RNG = np.random.default_rng(0)
A, B = RNG.standard_normal((8, 32)), RNG.standard_normal((8, 32))
W = RNG.standard_normal((32, 32))


def layer(w):
    return (np.tanh(A @ w) * B).sum()


def layer_grad(w):
    t = np.tanh(A @ w)
    return A.T @ ((1 - t**2) * B)


def off_at(ix, rel):
    def grad(w):
        g = layer_grad(w)
        g[ix] *= 1 + rel
        return g
    return grad


def last_lines(report) -> list[str]:
    lines = str(report).splitlines()
    steps = [ln for ln in lines if ln.startswith("  next: ")]
    assert steps and lines[-len(steps):] == steps, "the report must end with its next steps"
    return [ln[len("  next: "):] for ln in steps]


def test_a_failing_check_ends_with_where_to_fix_and_the_entry_to_start_with():
    """FAIL: the next step names the layout and the worst entry, with the call that explains it."""
    x = np.random.default_rng(0).standard_normal((6, 5))
    (step,) = last_lines(gc.check(f, x, planted_grad))
    assert step.startswith(f"fix the claimed gradient at a single entry at {PLANTED}: start with {PLANTED}")
    assert f"report.explain({PLANTED})" in step and "exact derivative" in step


def test_a_clean_pass_ends_with_keeping_it_as_a_test():
    (step,) = last_lines(gc.check(layer, W, layer_grad))
    assert step.startswith("nothing to fix: keep the check in a test")


def test_an_inconclusive_check_ends_with_its_way_out():
    """INCONCLUSIVE (f returns float16): the first way out of the report's own "way out"."""
    report = gc.check(lambda x: np.float16(np.sin(x).sum()), np.linspace(0.1, 1.3, 6), grad=np.cos)
    assert report.status == "INCONCLUSIVE"
    (step,) = last_lines(report)
    assert step == "make the check conclusive: upcast the input or let f compute and return float64 (no cast to " \
                   "float16), then rerun"


def test_a_difference_traced_within_the_tolerance_ends_with_the_rerun_that_finds_it():
    """A screen that traced a 1e-6 difference within rtol 1e-6 (a PASS) ends with the rerun at a
    lower rtol; that very rerun calls the entry a MISMATCH. Negative control: the same rerun of
    the correct gradient finds nothing."""
    report = gc.screen(layer, W, off_at((3, 7), 1e-6))
    assert report.status == "PASS"
    (step,) = last_lines(report)
    assert step.startswith("a difference at (3, 7) (1e-06 relative) is within the tolerance (rtol 1e-06)")
    call = re.search(r"gradcheck\.screen\(f, x, grad, rtol=([0-9.e-]+)\)", step)
    assert call is not None, step
    rtol = float(call.group(1))
    assert rtol < 1e-6
    rerun = gc.screen(layer, W, off_at((3, 7), 1e-6), rtol=rtol)  # the call as the line spells it
    assert rerun.entries(Verdict.MISMATCH) == [(3, 7)]
    clean = gc.screen(layer, W, layer_grad, rtol=rtol)
    assert clean.counts[Verdict.MISMATCH] == 0


def test_a_screen_of_a_dense_error_ends_with_the_entry_wise_check():
    """Every entry 1e-5 off: the screen localizes examples and leaves the rest UNCHECKED; the
    next step is the entry-wise check, with its cost."""
    report = gc.screen(layer, W, lambda w: layer_grad(w) * (1 + 1e-5))
    assert report.status == "FAIL" and report.counts[Verdict.UNCHECKED]
    steps = last_lines(report)
    assert steps[0].startswith("fix the claimed gradient at")
    assert steps[1].startswith("the screen localized examples of a dense error") and "gradcheck.check(f, x, grad)" in steps[1]
    assert f"({2 * W.size} evaluations" in steps[1]


@pytest.mark.parametrize("kind", ["MultiReport", "DisputeResult"])
def test_other_results_have_a_next_step(kind):
    """Several inputs and disputes get their own next step (their HTML pages end with it)."""
    if kind == "MultiReport":
        x = np.random.default_rng(0).standard_normal((6, 5))
        result = gc.check(lambda a, b: f(a) + f(b), (x, x), grad=lambda a, b: (planted_grad(a), planted_grad(b)))
        assert next_steps(result)[0].startswith("input 0: fix the claimed gradient")
    else:
        from gradcheck.subjects import matvec_fast, matvec_inputs, matvec_math, matvec_reference

        a, v = matvec_inputs(rows=8, n=256, seed=1)
        result = gc.dispute(matvec_math, (a, v), {"fast": matvec_fast(a, v), "reference": matvec_reference(a, v)},
                            "bfloat16")
        assert next_steps(result) == ["fix or replace fast: beyond its bound at the entries above; reference is the "
                                      "most accurate"]


def test_a_complex_mismatch_names_both_parts_of_the_claim():
    """The next step of a complex report quotes the claim and the truth as complex numbers
    (a cast to float dropped the imaginary part and warned)."""
    z = np.array([1 + 2j, 0.5 - 1j])
    with warnings.catch_warnings():
        warnings.simplefilter("error", np.exceptions.ComplexWarning)
        report = gc.check(lambda z: np.sum(np.abs(z) ** 2), z, lambda z: 2.2 * z)
        text = str(report)
    assert "claims 2.2+4.4j where the exact derivative is 2+4j" in text, text


def test_a_params_report_ends_with_the_first_failing_name_or_keeping_it_as_a_test():
    """check_params: the first failing name in backward order with its diagnosis; a clean
    model: keep the check."""
    p = {"w": np.array([1.0, 2.0]), "b": np.array([0.5])}
    loss = lambda p: float((p["w"] ** 2).sum() + 3 * p["b"][0])  # noqa: E731
    (step,) = last_lines(gc.check_params(loss, p, {"w": 2 * p["w"], "b": np.array([2.0])}))
    assert step.startswith("start with b (b fails alone") and "fix its gradient at" in step
    (step,) = last_lines(gc.check_params(loss, p, {"w": 2 * p["w"], "b": np.array([3.0])}))
    assert step.startswith("nothing to fix: every name passes")


AM = np.random.default_rng(3).standard_normal((5, 4))
XA = np.full(4, 0.1)


def adj_f(x):
    return np.tanh(AM @ x)


def adj_jvp(x, t):
    return (1 - np.tanh(AM @ x) ** 2) * (AM @ t)


def adj_vjp(x, v):
    return AM.T @ ((1 - np.tanh(AM @ x) ** 2) * v)


def bad_vjp(x, v):
    return 1.01 * adj_vjp(x, v)


def test_an_adjoint_result_ends_with_the_model_to_fix_and_the_call_that_says_where():
    """A vjp 1% off, with f: fix the vjp, and the named call (check(f, x, vjp)) does find it;
    without f: pass f= to learn which; a correct pair: keep it, and pass f= to test against f."""
    (step,) = last_lines(gc.check_adjoint(adj_jvp, bad_vjp, XA, f=adj_f))
    assert step.startswith("fix the vjp: inconsistent with finite differences of f")
    assert "gradcheck.check(f, x, vjp) shows at which entries" in step
    assert not gc.check(adj_f, XA, bad_vjp).passed and gc.check(adj_f, XA, adj_vjp).passed
    (step,) = last_lines(gc.check_adjoint(adj_jvp, bad_vjp, XA))
    assert step.startswith("the jvp and the vjp are not transposes of each other: pass f=")
    (step,) = last_lines(gc.check_adjoint(adj_jvp, adj_vjp, XA))
    assert step.startswith("nothing to fix: the models are adjoint") and "pass f=" in step
    (step,) = last_lines(gc.check_adjoint(adj_jvp, adj_vjp, XA, f=adj_f))
    assert "pass f=" not in step


XT = np.array([0.3, -1.2, 0.8])


def sum_sin(x):
    return np.sum(np.sin(x))


@pytest.mark.parametrize("grad, hvp, start", [
    (np.cos, None, "nothing to fix: keep the test"),
    (lambda x: np.cos(x) + 1e-3, None, "fix the gradient: its remainder does not shrink"),
    (np.cos, lambda x, v: -1.1 * np.sin(x) * v, "fix the Hessian-vector product"),
])
def test_a_taylor_result_ends_with_what_to_fix(grad, hvp, start):
    (step,) = last_lines(gc.taylor_test(sum_sin, XT, grad, hvp))
    assert step.startswith(start)


def test_an_inconclusive_taylor_result_ends_with_its_way_out():
    """An f that rounds to float16: round-off at every step; the way out is float64 or a larger h0."""
    report = gc.taylor_test(lambda x: np.float16(np.sin(x).sum()), XT.astype(np.float32), np.cos)
    assert report.status == "INCONCLUSIVE"
    (step,) = last_lines(report)
    assert step.startswith("make it conclusive: run f in float64, or pass a larger h0=")


def test_a_dispute_text_ends_with_its_next_step():
    from gradcheck.subjects import matvec_fast, matvec_inputs, matvec_math, matvec_reference

    a, v = matvec_inputs(rows=8, n=256, seed=1)
    result = gc.dispute(matvec_math, (a, v), {"fast": matvec_fast(a, v), "reference": matvec_reference(a, v)},
                        "bfloat16")
    assert str(result).splitlines()[-1] == ("next: fix or replace fast: beyond its bound at the entries above; "
                                            "reference is the most accurate")
