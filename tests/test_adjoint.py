"""check_adjoint: the dot-product test <J t, v> = <t, J^T v> against a bound made of the
round-off of the two inner products and the operators' measured linearity defect. It
flags a transposed-wrong VJP (and, with f, names the inconsistent side), passes correct
pairs without crying wolf (cancellation, float32), and runs on 10^5-entry operators (its
speed there is measured in benchmarks/bench_speed_claims.py, never asserted here).
(The jax cases are in tests/test_orders_jax.py, for the session's order.)"""
from __future__ import annotations

import json

import numpy as np
import optional_deps
import pytest

import gradcheck
from gradcheck import AdjointResult, GradientAssertionError, ShapeMismatchError, check_adjoint


def framework(name):
    """torch / jax, or a skip where absent (a failure in CI's full run: tests/optional_deps.py)."""
    return optional_deps.need(name)


A = np.random.default_rng(1).standard_normal((316, 316))  # 99,856 entries
KERNEL = np.random.default_rng(2).standard_normal(9)


@pytest.mark.parametrize("operator", ["dense 316x316", "convolution of 1e5 entries"])
def test_correct_pair_passes_and_transposed_wrong_vjp_fails_on_1e5_entries(operator):
    """A correct tangent/adjoint pair passes; the same pair with the adjoint not transposed
    (A v instead of A^T v; a convolution instead of a correlation) fails by ~1e11 times
    its bound. (Its time: benchmarks/bench_speed_claims.py.)"""
    if operator.startswith("dense"):
        jvp, vjp, wrong, shape = (lambda t: A @ t), (lambda v: A.T @ v), (lambda v: A @ v), (316,)
    else:
        jvp = lambda t: np.convolve(t, KERNEL, mode="full")  # noqa: E731
        vjp = lambda v: np.correlate(v, KERNEL, mode="valid")  # noqa: E731
        wrong = lambda v: np.convolve(v, KERNEL, mode="valid")  # noqa: E731
        shape = (100_000,)
    good = check_adjoint(jvp, vjp, in_shape=shape)
    bad = check_adjoint(jvp, wrong, in_shape=shape)
    assert good.passed
    assert not bad.passed
    assert min(d / b for d, b in zip(bad.differences, bad.bound)) > 1e6


def test_blame_names_the_side_inconsistent_with_f():
    """With f given, each side is compared with finite differences of v . f: a
    transposed-wrong vjp is named, and so is a wrong jvp."""
    w = np.random.default_rng(3).standard_normal((20, 20))
    x = np.random.default_rng(4).standard_normal(20) * 0.3
    f = lambda z: np.tanh(w @ z)  # noqa: E731
    jvp = lambda z, t: (1 - f(z) ** 2) * (w @ t)  # noqa: E731
    vjp = lambda z, v: w.T @ ((1 - f(z) ** 2) * v)  # noqa: E731
    good = check_adjoint(jvp, vjp, x, f=f)
    assert good.passed and good.blame["jvp_agrees"] and good.blame["vjp_agrees"]
    bad_vjp = check_adjoint(jvp, lambda z, v: w @ ((1 - f(z) ** 2) * v), x, f=f)
    assert not bad_vjp.passed and "vjp (adjoint) is inconsistent" in bad_vjp.blame["verdict"]
    bad_jvp = check_adjoint(lambda z, t: (1 - f(z) ** 2) * (w.T @ t), vjp, x, f=f)
    assert not bad_jvp.passed and "jvp (tangent-linear) is inconsistent" in bad_jvp.blame["verdict"]
    assert "DISAGREES" in str(bad_jvp)


def test_blame_evaluates_f_once_at_each_point():
    """The blame's differences cost one evaluation of f per point (four along t: v . f and
    sum |v f| are both reduced from it) plus f(x) twice (the determinism check): six calls,
    counted by hand, at x, x, then x + s t for s = h, -h, h/2, -h/2 (the step halved)."""
    w = np.random.default_rng(3).standard_normal((20, 20))
    x = np.random.default_rng(4).standard_normal(20) * 0.3
    seen = []

    def f(z):
        seen.append(z.copy())
        return np.tanh(w @ z)

    jvp = lambda z, t: (1 - np.tanh(w @ z) ** 2) * (w @ t)  # noqa: E731
    vjp = lambda z, v: w.T @ ((1 - np.tanh(w @ z) ** 2) * v)  # noqa: E731
    result = check_adjoint(jvp, vjp, x, f=f)
    assert result.passed and len(seen) == 6
    assert all(np.array_equal(z, x) for z in seen[:2])  # f(x), then f(x) again
    steps = [z - x for z in seen[2:]]  # x + s t at s = h, -h, h/2, -h/2
    assert np.allclose(steps[1], -steps[0]) and np.allclose(steps[2], steps[0] / 2)


def test_operator_round_off_is_not_a_failure():
    """An operator computed with heavy cancellation ((t + c) - c with c = 1e6: J = I up
    to ~1e-10 per entry) against its exact adjoint passes: its measured linearity defect
    enters the bound. The inner products' round-off alone would have failed it (the
    differences are far above 8 * gamma * sum|t v|, the bound without the operator term)."""
    c = np.full(1000, 1e6)
    r = check_adjoint(lambda t: (t + c) - c, lambda v: v.copy(), in_shape=(1000,))
    assert r.passed, r
    rng = np.random.default_rng(0)  # the draws check_adjoint makes with seed=0
    t1, _, v1 = rng.standard_normal(1000), rng.standard_normal(1000), rng.standard_normal(1000)
    inner_only = 8 * (np.ceil(np.log2(1000)) + 2) * 2**-53 * 2 * np.sum(np.abs(t1 * v1))
    assert r.differences[0] > 10 * inner_only


def test_float32_operator_passes_and_its_transpose_bug_is_still_caught():
    """A float32 pair (float32 products: the bound uses float32's unit round-off) passes;
    the transposed-wrong float32 adjoint still fails."""
    a32 = A.astype(np.float32)
    jvp = lambda t: a32 @ t.astype(np.float32)  # noqa: E731
    assert check_adjoint(jvp, lambda v: a32.T @ v.astype(np.float32), in_shape=(316,)).passed
    assert not check_adjoint(jvp, lambda v: a32 @ v.astype(np.float32), in_shape=(316,)).passed


def test_a_nonlinear_jvp_fails_and_is_named():
    """A 'tangent-linear' model that is not linear in t (an additive constant) fails the
    linearity clause, whatever the inner products say."""
    r = check_adjoint(lambda t: A @ t + 1.0, lambda v: A.T @ v, in_shape=(316,))
    assert not r.passed and r.nonlinear == ("jvp",)
    assert "not linear" in str(r)


def test_result_answers_like_a_report():
    """passed, assert_pass (raising GradientAssertionError with the table), str, to_dict."""
    good = check_adjoint(lambda t: A @ t, lambda v: A.T @ v, in_shape=(316,))
    bad = check_adjoint(lambda t: A @ t, lambda v: A @ v, in_shape=(316,))
    assert isinstance(good, AdjointResult) and good.assert_pass() is good
    with pytest.raises(GradientAssertionError, match="<J t, v>") as err:
        bad.assert_pass()
    assert err.value.report is bad
    d = json.loads(bad.to_json())
    assert d["status"] == "FAIL" and d["passed"] is False and len(d["forward"]) == 3
    assert "PASS" in str(good).splitlines()[0]


def test_bad_input_gets_clear_errors():
    """A linear operator without in_shape, and a vjp of the wrong shape, are refused; the
    point x is never modified."""
    with pytest.raises(TypeError, match="in_shape"):
        check_adjoint(lambda t: A @ t, lambda v: A.T @ v)
    with pytest.raises(ShapeMismatchError, match="vjp"):
        check_adjoint(lambda t: A @ t, lambda v: (A.T @ v)[:5], in_shape=(316,))
    with pytest.raises(TypeError, match="framework"):
        check_adjoint(None, None, np.zeros(3), f=np.sin)
    x = np.linspace(-1, 1, 316)
    check_adjoint(lambda z, t: A @ (t * z), lambda z, v: z * (A.T @ v), x, f=lambda z: A @ (z * z / 2))
    assert x.tobytes() == np.linspace(-1, 1, 316).tobytes()  # the point is unchanged


def test_negative_control_adjoint_numpy():
    """The adjoint control: a transposed-wrong vjp fails and is named; the correct passes."""
    gradcheck.assert_detects_wrong_gradient("numpy", kind="adjoint")


def test_torch_forward_and_reverse_modes_are_adjoint_and_a_wrong_backward_is_named():
    """torch's forward and reverse modes of f are each other's adjoints; a custom
    Function whose backward forgets the transpose fails, and the vjp is named."""
    torch = framework("torch")
    a = torch.from_numpy(np.random.default_rng(6).standard_normal((8, 8)))

    class Linear(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return a @ x

        @staticmethod
        def backward(ctx, g):
            return a @ g  # should be a.T @ g

        @staticmethod
        def jvp(ctx, t):
            return a @ t

    x = np.random.default_rng(7).standard_normal(8)
    assert check_adjoint(None, None, torch.tensor(x), f=lambda t: torch.tanh(a @ t)).passed
    bad = check_adjoint(None, None, torch.tensor(x), f=lambda t: torch.tanh(Linear.apply(t)))
    assert not bad.passed and "vjp (adjoint)" in bad.blame["verdict"]
    gradcheck.assert_detects_wrong_gradient("torch", kind="adjoint")
