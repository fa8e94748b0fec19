"""taylor_test: remainders at halving steps and their observed orders. A correct gradient
gives order ~2, a wrong one ~1, a correct Hessian adds an order (~3); round-off is never
counted; the result answers like a Report and draws its log-log picture."""
from __future__ import annotations

import json

import numpy as np
import optional_deps
import pytest

import gradcheck
from gradcheck import GradientAssertionError, TaylorResult, taylor_test

X = np.array([0.3, -1.2, 0.8, 2.1, -0.4])


def f(x):
    return np.sum(np.sin(x)) + x[0] * x[1] ** 2 + np.exp(0.3 * x[3])


def grad(x):
    g = np.cos(x)
    g[0] += x[1] ** 2
    g[1] += 2 * x[0] * x[1]
    g[3] += 0.3 * np.exp(0.3 * x[3])
    return g


def hvp(x, v):
    h = -np.sin(x) * v
    h[0] += 2 * x[1] * v[1]
    h[1] += 2 * x[1] * v[0] + 2 * x[0] * v[1]
    h[3] += 0.09 * np.exp(0.3 * x[3]) * v[3]
    return h


def framework(name):
    """torch / jax, or a skip where absent (a failure in CI's full run: tests/optional_deps.py)."""
    return optional_deps.need(name)


@pytest.mark.parametrize("claim, hessian, expected, status", [
    (grad, None, (2.0,), "PASS"),
    (lambda x: grad(x) * (1 + 1e-3), None, (1.0,), "FAIL"),
    (lambda x: grad(x) + np.array([0, 0, 0, 1e-2, 0]), None, (1.0,), "FAIL"),
    (grad, hvp, (2.0, 3.0), "PASS"),
    (grad, lambda x, v: hvp(x, v) * 1.01, (2.0, 2.0), "FAIL"),
    (lambda x: grad(x) * (1 + 1e-3), hvp, (1.0, 1.0), "FAIL"),
])
def test_observed_orders(claim, hessian, expected, status):
    """Order ~2 for the correct gradient, ~1 for a wrong one (relative 1e-3 everywhere, or
    1e-2 at one entry), ~3 with a correct Hessian, ~2 with a Hessian 1% off."""
    r = taylor_test(f, X, claim, hessian)
    assert r.status == status, r
    np.testing.assert_allclose(r.observed, expected, atol=0.1)


def test_a_subtle_gradient_error_still_lowers_the_order():
    """A relative error of 1e-7 in the gradient is far below what order-counting at large
    steps sees, but the smallest counted steps show it (order < 1.9) along a direction with
    a large slope (here the gradient's own; along a random direction it shows for about
    half of them at 1e-7, for nearly all at 1e-5: the slope g.d sets the sensitivity); the
    correct gradient along the same direction passes (control)."""
    d = grad(X)
    r = taylor_test(f, X, lambda x: grad(x) * (1 + 1e-7), direction=d)
    assert r.status == "FAIL" and r.observed[0] < 1.9
    assert taylor_test(f, X, grad, direction=d).status == "PASS"
    random = [taylor_test(f, X, lambda x: grad(x) * (1 + 1e-5), seed=s).status for s in range(4)]
    assert random == ["FAIL"] * 4


def test_round_off_steps_are_not_counted():
    """Steps whose remainder is within 100x of the measured round-off floor are marked
    and excluded; every counted remainder stands above the threshold."""
    r = taylor_test(f, X, grad, hvp)
    for rem, counted in zip(r.remainders, r.counted):
        assert not all(counted)  # the table reaches round-off
        assert all((x >= r.threshold) == c for x, c in zip(rem, counted))
    assert r.threshold == pytest.approx(100 * r.floor)


def test_an_exact_model_passes_with_its_resolution():
    """For a quadratic f the second-order remainder is round-off at every step: no order
    can be measured, but the model is exact to the stated resolution (<= 1%): PASS."""
    q = lambda x: np.sum(x**2) + x[0] * x[2]  # noqa: E731
    qg = lambda x: 2 * x + np.array([x[2], 0, x[0], 0, 0])  # noqa: E731
    qh = lambda x, v: 2 * v + np.array([v[2], 0, v[0], 0, 0])  # noqa: E731
    r = taylor_test(q, X, qg, qh)
    assert r.status == "PASS" and not any(r.counted[1]) and r.resolution[1] < 1e-6
    assert "never rose above round-off" in str(r)
    bad = taylor_test(q, X, qg, lambda x, v: qh(x, v) * 1.001)
    assert bad.status == "FAIL"


def test_float32_round_off_leaves_it_inconclusive_not_failed():
    """In float32 the round-off floor leaves too few steps: INCONCLUSIVE (not passed, not a
    false FAIL), with the way out said; the same check in float64 passes."""
    x32 = X.astype(np.float32)
    r = taylor_test(f, x32, grad, hvp)
    assert r.status == "INCONCLUSIVE" and not r.passed
    assert "run f in float64" in str(r)
    assert r.assert_pass(allow_unchecked=True) is r
    assert taylor_test(f, X, grad, hvp).passed


def test_result_answers_like_a_report(tmp_path):
    """passed, assert_pass, the printed table, to_dict as JSON, and the log-log PNG."""
    optional_deps.need("matplotlib")
    good = taylor_test(f, X, grad, hvp)
    bad = taylor_test(f, X, lambda x: grad(x) * 1.01)
    assert isinstance(good, TaylorResult) and good.assert_pass() is good
    with pytest.raises(GradientAssertionError, match="R1"):
        bad.assert_pass()
    text = str(good)
    assert "R2 (+Hessian)" in text and "order 2.00" in text.splitlines()[0]
    d = json.loads(good.to_json())
    assert d["status"] == "PASS" and d["required_orders"] == [1.9, 2.9] and len(d["steps"]) == 20
    png = good.plot(tmp_path / "taylor.png")
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_bad_input():
    """A vector f, a zero direction and a gradient of the wrong shape are refused clearly."""
    with pytest.raises(ValueError, match="scalar f"):
        taylor_test(np.sin, X, np.cos)
    with pytest.raises(ValueError, match="direction is zero"):
        taylor_test(f, X, grad, direction=np.zeros(5))
    with pytest.raises(gradcheck.ShapeMismatchError):
        taylor_test(f, X, lambda x: grad(x)[:3])
    x = X.copy()
    taylor_test(f, x, grad, hvp)
    assert x.tobytes() == X.tobytes()


def test_negative_control_taylor_numpy():
    """The Taylor control: corrupted gradient and Hessian fail, correct ones pass."""
    gradcheck.assert_detects_wrong_gradient("numpy", kind="taylor")


def test_torch_and_jax_gradients_and_double_backward():
    """The framework's gradient (grad=None) and double backward (hvp='backend') give
    orders ~2 and ~3; the controls hold."""
    torch = framework("torch")
    jax = framework("jax")
    rt = taylor_test(lambda t: (t.sin() * t).sum(), torch.tensor(X), hvp="backend")
    rj = taylor_test(lambda t: (jax.numpy.sin(t) * t).sum(), X, hvp="backend", backend="jax")
    for r in (rt, rj):
        assert r.passed and r.observed[0] == pytest.approx(2, abs=0.1) and r.observed[1] == pytest.approx(3, abs=0.1)
    gradcheck.assert_detects_wrong_gradient("torch", kind="taylor")
    gradcheck.assert_detects_wrong_gradient("jax", kind="taylor")
