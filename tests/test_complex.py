"""Complex inputs and outputs in check: real and imaginary parts differenced separately,
one verdict per complex entry, in PyTorch's convention (dL/dRe z + i dL/dIm z, the
default for numpy and torch) or JAX's conjugate one (the default for jax, and on request).
Planted errors are caught at exactly their entries, correct claims pass, in both.
(The jax cases are in tests/test_orders_jax.py, for the session's order.)"""
from __future__ import annotations

import json

import numpy as np
import optional_deps
import pytest

import gradcheck
from gradcheck import ComplexReport, Report, Verdict, check

RNG = np.random.default_rng(21)
Z = RNG.standard_normal((3, 4)) + 1j * RNG.standard_normal((3, 4))
W = np.linspace(-1.5, 1.3, 12).reshape(3, 4)
A = RNG.standard_normal((3, 4)) + 1j * RNG.standard_normal((3, 4))
B = RNG.standard_normal((4, 2)) + 1j * RNG.standard_normal((4, 2))


def framework(name):
    """torch / jax, or a skip where absent (a failure in CI's full run: tests/optional_deps.py)."""
    return optional_deps.need(name)


def loss(z):
    """A real loss built on |z|^2: sum(w |z|^2) + Re sum(z0 * z2)."""
    return np.sum(W * np.abs(z) ** 2) + np.sum((z[0] * z[2]).real)


def loss_grad(z):
    """PyTorch's convention: dL/dRe z + i dL/dIm z."""
    g = 2 * W * z
    g[0] = g[0] + np.conj(z[2])
    g[2] = g[2] + np.conj(z[0])
    return g


def corrupt(g, ix, delta):
    g = g.copy()
    g[ix] += delta
    return g


def test_abs_squared_loss_in_both_conventions():
    """|z|^2 -> 2z (torch) and 2 conj(z) (jax, on request); each claim fails in the other
    convention at every entry with a non-zero imaginary part."""
    assert check(lambda z: np.sum(np.abs(z) ** 2), Z, lambda z: 2 * z).passed
    assert check(lambda z: np.sum(np.abs(z) ** 2), Z, lambda z: 2 * np.conj(z), complex_convention="jax").passed
    wrong = check(lambda z: np.sum(np.abs(z) ** 2), Z, lambda z: 2 * np.conj(z))
    assert wrong.counts[Verdict.MISMATCH] == Z.size


@pytest.mark.parametrize("convention", ["torch", "jax"])
@pytest.mark.parametrize("ix, delta", [((1, 2), 1e-4), ((2, 0), 1e-4j), ((0, 3), -0.5 + 0.5j)])
def test_planted_errors_are_caught_at_exactly_their_complex_entry(convention, ix, delta):
    """An error in the real part, the imaginary part or both of one entry is MISMATCH at
    that entry alone; the correct claim passes every entry."""
    claim = loss_grad if convention == "torch" else (lambda z: np.conj(loss_grad(z)))
    good = check(loss, Z, claim, complex_convention=convention)
    assert isinstance(good, ComplexReport) and isinstance(good, Report)
    assert good.passed and good.counts[Verdict.PASS] == Z.size
    bad = check(loss, Z, lambda z: corrupt(claim(z), ix, delta), complex_convention=convention)
    assert bad.entries(Verdict.MISMATCH) == [ix]


def test_complex_matmul_vjps_in_both_conventions():
    """A @ B with complex output: the VJPs v B^H, A^H v (torch) and v B^T, A^T v on
    conj(v) (jax) pass; forgetting the conjugate in the torch convention fails every
    entry; a planted error at B[3, 1] is caught there alone."""
    mm = lambda a, b: a @ b  # noqa: E731
    torch_vjps = (lambda a, b, v: v @ b.conj().T, lambda a, b, v: a.conj().T @ v)
    jax_vjps = (lambda a, b, v: v @ b.T, lambda a, b, v: a.T @ v)
    assert check(mm, (A, B), torch_vjps).passed
    assert check(mm, (A, B), jax_vjps, complex_convention="jax").passed
    no_conj = check(mm, (A, B), jax_vjps)
    assert no_conj[0].counts[Verdict.MISMATCH] == A.size and no_conj[1].counts[Verdict.MISMATCH] == B.size
    planted = (torch_vjps[0], lambda a, b, v: corrupt(a.conj().T @ v, (3, 1), 1e-5))
    r = check(mm, (A, B), planted)
    assert r[0].passed and r[1].entries(Verdict.MISMATCH) == [(3, 1)]


def test_real_input_with_complex_output():
    """f(x) = w exp(i x): the real VJP Re(conj(v) i w exp(ix)) passes; a claim off at (1,)
    is caught there."""
    x = np.array([0.3, -1.2, 0.8, 2.1])
    w = np.array([1.0, -0.5, 2.0, 0.7])
    f = lambda x: w * np.exp(1j * x)  # noqa: E731
    vjp = lambda x, v: np.real(np.conj(v) * 1j * w * np.exp(1j * x))  # noqa: E731
    good = check(f, x, vjp)
    assert good.passed and good.shape == (4,) and any("complex output" in n for n in good.notes)
    assert check(f, x, lambda x, v: corrupt(vjp(x, v), (1,), 1e-4)).entries(Verdict.MISMATCH) == [(1,)]
    with pytest.raises(gradcheck.UnsupportedInputError, match="real array"):
        check(f, x, lambda x, v: vjp(x, v) + 0j)


def test_report_is_per_complex_entry_and_serializes():
    """The report is shaped like z, holds complex claimed/numeric values, keeps the real
    view's report in .parts (last axis: re, im), says the convention and that the referee
    confirmed the failure against exact values (f is numpy code: it runs on MPComplex), and
    to_dict is JSON with [re, im] pairs."""
    r = check(loss, Z, lambda z: corrupt(loss_grad(z), (1, 1), 1e-3j))
    assert r.shape == Z.shape and np.iscomplexobj(r.analytic) and r.parts.shape == Z.shape + (2,)
    assert r.parts.entries(Verdict.MISMATCH) == [(1, 1, 1)]  # the imaginary part
    assert any("convention 'torch'" in n for n in r.notes)
    assert any("adjudicated" in n and "exact derivatives" in n for n in r.notes)
    assert r.cause((1, 1)) == gradcheck.Cause.EXACT
    d = json.loads(json.dumps(r.to_dict()))
    assert d["convention"] == "torch" and d["entries"][0]["index"] == [1, 1]
    assert len(d["entries"][0]["claimed"]) == 2 and d["parts"]["shape"] == [3, 4, 2]
    assert "(1, 1)" in str(r)


def test_input_unchanged_complex64_and_bad_convention():
    """z is unchanged bit for bit; complex64 is checked with the float32 preset; an unknown
    convention is refused with the valid ones named."""
    z = Z.copy()
    check(loss, z, loss_grad)
    assert z.tobytes() == Z.tobytes()
    r = check(loss, Z.astype(np.complex64), lambda z: loss_grad(z.astype(np.complex128)))
    assert r.passed and r.dtype == "float32"
    with pytest.raises(ValueError, match="'torch', 'jax'"):
        check(loss, Z, loss_grad, complex_convention="numpy")


def test_negative_control_complex_numpy():
    """The complex control: corrupted at (1, 2) and (2, 0), flagged there; correct passes."""
    gradcheck.assert_detects_wrong_gradient("numpy", kind="complex")


def test_torch_autograd_on_complex_inputs():
    """torch's gradient (its convention) of an |z|^2 loss and of a complex matmul passes;
    a custom Function whose backward is off at (2, 1) is caught there alone."""
    torch = framework("torch")
    zt = torch.tensor(Z)
    w = torch.from_numpy(W)
    assert check(lambda t: (w * t.abs() ** 2).sum() + (t[0] * t[2]).real.sum(), zt).passed
    assert check(lambda a, b: a @ b, (torch.tensor(A), torch.tensor(B))).passed

    class AbsSquared(torch.autograd.Function):
        @staticmethod
        def forward(ctx, z):
            ctx.save_for_backward(z)
            return z.abs() ** 2

        @staticmethod
        def backward(ctx, g):
            (z,) = ctx.saved_tensors
            out = 2 * g * z
            out[2, 1] = out[2, 1] * (1 + 1e-4)
            return out

    r = check(lambda t: (w * AbsSquared.apply(t)).sum(), zt)
    assert r.entries(Verdict.MISMATCH) == [(2, 1)]
    gradcheck.assert_detects_wrong_gradient("torch", kind="complex")
