"""The referee on complex values (issue 17): gradcheck.mp.MPComplex runs unmodified numpy
code on complex arbitrary-precision numbers, so check on complex input (or output)
adjudicates entries in doubt against exact derivatives, in both conventions.

The subjects are small (a 4x5 complex matrix): the point is the exact value, not speed.
The doubt is made by a large constant (1e12) on top of the loss: finite differences of f
then resolve nothing (every entry UNCHECKED without the referee), the referee settles each.
"""
from __future__ import annotations

import cmath

import mpmath
import numpy as np
import pytest

import gradcheck
from gradcheck import Cause, Verdict, check
from gradcheck.mp import (
    MPComplex,
    MPFloat,
    NotAdjudicable,
    complex_from_parts,
    complex_parts,
    evaluate,
    mp_derivative,
)

RNG = np.random.default_rng(3)
W = (RNG.standard_normal((4, 5)) + 1j * RNG.standard_normal((4, 5))) / 2
Z = RNG.standard_normal(5) + 1j * RNG.standard_normal(5)
OFFSET = 1e12


def counts(report) -> dict[str, int]:
    return {k.name: v for k, v in report.counts.items() if v}


# -- MPComplex ------------------------------------------------------------------------------------


def test_mpcomplex_arithmetic_matches_python_complex():
    """Every operation against Python's complex arithmetic (to double precision), with
    MPFloat, float, int and complex operands on either side; conjugate and abs exact."""
    a, b = 1.25 - 0.5j, -0.75 + 2.0j
    A, B = MPComplex(a), MPComplex(b.real, b.imag)
    with mpmath.workdps(40):
        pairs = [(A + B, a + b), (A - B, a - b), (A * B, a * b), (A / B, a / b), (A ** 2, a ** 2),
                 (A ** B, a ** b), (2 * A, 2 * a), (A - 3.5, a - 3.5), (MPFloat(2) * A, 2 * a),
                 (1j * A, 1j * a), (A / (1 + 1j), a / (1 + 1j)), (-A, -a), (A.conjugate(), a.conjugate()),
                 (A.exp(), cmath.exp(a)), (A.log(), cmath.log(a)), (A.sqrt(), cmath.sqrt(a)),
                 (A.sin(), cmath.sin(a)), (A.tanh(), cmath.tanh(a))]
        for got, want in pairs:
            assert abs(complex(got.value) - want) <= 1e-15 * max(1.0, abs(want)), (got, want)
        assert abs(A).value == mpmath.sqrt(mpmath.mpf(1.25) ** 2 + mpmath.mpf(0.5) ** 2)
    assert (a == A) and (b != A) and (MPComplex(2.0) == 2)


def test_mpcomplex_refuses_conversion_and_ordering():
    """complex() and float() would drop to 53 bits: refused (and, inside an evaluation,
    reported as leaving arbitrary precision); ordering is not defined for complex numbers."""
    with pytest.raises(gradcheck.mp.PrecisionLossError):
        complex(MPComplex(1, 2))
    with pytest.raises(TypeError):
        _ = MPComplex(1, 2) < MPComplex(0, 1)
    x = np.array([0.5, -1.0])
    with pytest.raises(NotAdjudicable, match="left arbitrary precision"):
        evaluate(lambda r: np.sum(np.abs(np.array([complex(v) for v in complex_from_parts(r, r)]))), x, dps=30)


def test_object_arrays_real_and_imag_are_the_parts():
    """numpy gives an object array's .real as itself and .imag as zeros; MPArray gives the
    parts (and np.real/np.imag follow), so z.real in f is the real part at high precision."""
    z = complex_from_parts(np.array([MPFloat(1), MPFloat(2)]), np.array([MPFloat(-3), MPFloat(4)]))
    assert [str(v) for v in z.real] == ["1.0", "2.0"] and [str(v) for v in np.imag(z)] == ["-3.0", "4.0"]
    re, im = complex_parts(z * z)
    assert [str(v) for v in re] == ["-8.0", "-12.0"] and [str(v) for v in im] == ["-6.0", "16.0"]
    real = np.array([MPFloat(5)], dtype=object).view(type(z))
    assert real.real is real and str(real.imag[0]) == "0.0"


def test_exact_derivative_of_a_complex_function_through_the_real_view():
    """d/dRe z_k and d/dIm z_k of |W z|^2 at 30 digits, against the closed form
    2 W^H W z (PyTorch's convention: the real part is d/dRe, the imaginary d/dIm)."""
    def f_real(r):
        z = complex_from_parts(r[..., 0], r[..., 1])
        return np.sum(np.abs(W @ z) ** 2)

    r = np.stack([Z.real, Z.imag], axis=-1)
    g = 2 * W.conj().T @ (W @ Z)
    for k in range(5):
        d_re, d_im = mp_derivative(f_real, r, (k, 0)), mp_derivative(f_real, r, (k, 1))
        assert d_re.digits >= 20 and d_im.digits >= 20
        assert abs(float(d_re.value) - g[k].real) <= 1e-13 * abs(g[k])
        assert abs(float(d_im.value) - g[k].imag) <= 1e-13 * abs(g[k])


# -- check on complex problems: the referee settles what finite differences cannot ---------------------


def loss(z):
    return OFFSET + np.sum(np.abs(W @ z) ** 2)


def grad_torch(z):
    return 2 * W.conj().T @ (W @ z)


def grad_jax(z):
    return np.conj(grad_torch(z))


@pytest.mark.parametrize("convention, grad", [("torch", grad_torch), ("jax", grad_jax)])
def test_complex_input_is_adjudicated_in_both_conventions(convention, grad):
    """Finite differences alone resolve nothing here (every entry UNCHECKED); with the
    referee the correct claim passes against exact values (which the report holds, complex,
    in the convention asked for), and an error of 1e-3 in one imaginary part is a MISMATCH at
    exactly that entry, its imaginary part, its real part passing."""
    G = grad(Z)
    assert counts(check(loss, Z, G, complex_convention=convention, adjudicate=False)) == {"UNCHECKED": 5}
    ok = check(loss, Z, G, complex_convention=convention)
    assert ok.passed and counts(ok) == {"PASS": 5}
    assert all(ok.cause((k,)) == Cause.EXACT for k in range(5))
    assert np.max(np.abs(ok.exact - G)) <= 1e-13 * np.max(np.abs(G))
    assert any("adjudicated 10 entries against exact derivatives" in n for n in ok.notes)
    bad = G.copy()
    bad[2] += 1e-3 * abs(G[2]) * 1j
    r = check(loss, Z, bad, complex_convention=convention)
    assert r.entries(Verdict.MISMATCH) == [(2,)] and r.cause((2,)) == Cause.EXACT
    assert list(r.parts.codes[2]) == [Verdict.PASS, Verdict.MISMATCH]


def vjp_torch(z, v):
    """VJP of y = tanh(W z) + c in PyTorch's convention (cotangent v)."""
    return W.conj().T @ (np.conj(1 - np.tanh(W @ z) ** 2) * v)


def vjp_jax(z, v):
    """JAX's: called with conj(v), returns the conjugate."""
    return np.conj(vjp_torch(z, np.conj(v)))


@pytest.mark.parametrize("convention, vjp", [("torch", vjp_torch), ("jax", vjp_jax)])
def test_complex_matmul_output_is_adjudicated_in_both_conventions(convention, vjp):
    """A complex output (complex matmul, tanh) reduced by a complex cotangent: the referee
    reads the output's parts back at high precision; a 1e-3 error in one entry of the VJP
    is a MISMATCH there, the correct VJP passes."""
    def f(z):
        return np.tanh(W @ z) + OFFSET

    ok = check(f, Z, vjp, complex_convention=convention)
    assert ok.passed and counts(ok) == {"PASS": 5} and ok.cause((0,)) == Cause.EXACT

    def wrong(z, v):
        out = vjp(z, v)
        out[3] *= 1 + 1e-3
        return out

    r = check(f, Z, wrong, complex_convention=convention)
    assert r.entries(Verdict.MISMATCH) == [(3,)] and r.cause((3,)) == Cause.EXACT


def test_real_part_and_conj_inside_f_and_compiled_f_not_adjudicated():
    """z.real, np.real and .conj() in f run at high precision (the referee passes the
    correct claim and flags a planted error); an f that leaves numpy (complex() on the
    values) is reported as not adjudicable and keeps its step-study verdicts."""
    k = np.arange(5)

    def h(z):
        return OFFSET + np.sum((z * z.conj()).real * k) + np.sum(np.real(W @ z) ** 2)

    def gh(z):
        return 2 * k * z + 2 * W.conj().T @ np.real(W @ z)

    assert check(h, Z, gh).passed
    bad = gh(Z)
    bad[4] *= 1 + 1e-3
    assert check(h, Z, bad).entries(Verdict.MISMATCH) == [(4,)]

    def leaves(z):
        return OFFSET + sum(abs(complex(v)) ** 2 for v in W @ z)

    r = check(leaves, Z, grad_torch, adjudicate=True)
    assert any("left arbitrary precision" in n for n in r.notes) and counts(r) == {"UNCHECKED": 5}
