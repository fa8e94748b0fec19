"""The hand-written backward of softreg, checked entry by entry by gradcheck.

The ``gradcheck`` fixture comes from gradcheck's pytest plugin (installed with gradcheck):
each of its checks fails the test with the verdict table unless it passes, and the
negative control of every backend used runs once per session before the first check.
"""
from __future__ import annotations

import numpy as np
import pytest

import gradcheck as gc
from softreg import SoftmaxRegression, softmax, softmax_vjp

RNG = np.random.default_rng(42)
X = RNG.standard_normal((8, 5))
LABELS = RNG.integers(0, 3, size=8)


def test_negative_control():
    """Before trusting any verdict: a corrupted gradient is flagged, a correct one passes."""
    gc.assert_detects_wrong_gradient("numpy")


def test_softmax_vjp(gradcheck):
    """One check: softmax's VJP at every entry (an array output, so a random cotangent)."""
    z = RNG.standard_normal((4, 6))
    gradcheck.check(softmax, z, softmax_vjp)


def test_model_parameters(gradcheck):
    """A model check: every entry of every parameter, one table of all names."""
    model = SoftmaxRegression(5, 3)
    grads = SoftmaxRegression.backward(model.params, X, LABELS)
    report = gradcheck.check_params(
        lambda p: SoftmaxRegression.loss(p, X, LABELS), model.params, {k: grads[k] for k in ("W", "b")}
    )
    assert set(report.reports) == {"W", "b"}


@pytest.mark.gradcheck(backend="numpy", allow_unchecked=False)
def test_input_gradient(gradcheck):
    """The gradient the layer passes back to its input, with nothing left UNCHECKED."""
    model = SoftmaxRegression(5, 3)
    gradcheck.check(
        lambda x: SoftmaxRegression.loss(model.params, x, LABELS), X,
        lambda x: SoftmaxRegression.backward(model.params, x, LABELS)["x"],
    )


def test_a_planted_bug_is_named():
    """The checker finds a classic slip (the bias gradient not divided by the batch size)
    and names the parameter: the plain API returns the report instead of failing."""
    model = SoftmaxRegression(5, 3)
    grads = SoftmaxRegression.backward(model.params, X, LABELS)
    wrong = {"W": grads["W"], "b": grads["b"] * len(LABELS)}
    report = gc.check_params(lambda p: SoftmaxRegression.loss(p, X, LABELS), model.params, wrong)
    assert report.failing == ["b"]
    assert report["W"].passed


def test_softmax_vjp_over_shapes():
    """A shape sweep: the VJP at many (rows, classes) shapes, one full check each."""
    sweep = gc.shape_sweep(
        softmax, gc.grid(rows=range(1, 4), classes=range(1, 6)),
        lambda shape: np.random.default_rng(sum(shape)).standard_normal(shape), softmax_vjp,
    )
    sweep.assert_all_pass()


def test_bfloat16_softmax_dispute():
    """A dispute: two bfloat16 softmax kernels, judged against the exact value in ulps.

    The "fast" one computes in float32 and rounds once; the "naive" one rounds every
    intermediate to bfloat16. gradcheck names the accurate side and the broken one.
    """
    import ml_dtypes

    bf16 = ml_dtypes.bfloat16
    z = (RNG.standard_normal((16, 32)) * 3).astype(bf16)
    fast = softmax(z.astype(np.float32)).astype(bf16)
    e = np.exp((z - z.max(axis=-1, keepdims=True)).astype(bf16)).astype(bf16)
    naive = (e / e.astype(np.float32).sum(axis=-1, keepdims=True).astype(bf16)).astype(bf16)
    result = gc.dispute(softmax, (z,), {"fast": fast, "naive": naive}, dtype="bfloat16")
    assert result.most_accurate == "fast"
    assert result.stats["fast"].max_ulp <= 2
