"""Hostile input, complex: the orders module under check's one convention, never a cast.

``check_jvp``, ``check_adjoint``, ``taylor_test`` and ``check_hvp`` at a complex point, for a
holomorphic and non-holomorphic ``f`` each (``c z^2``, ``|z|^2``, ``z conj(z)``, ``exp(i th) z``,
``|z|^4``), in both conventions (``gradcheck._orders._complex``). The references are closed forms
derived by hand (Wirtinger calculus: ``J t = a t + b conj(t)`` with ``a = df/dz``, ``b = df/dconj(z)``,
and ``J* v = conj(a) v + b conj(v)`` under ``<a, b> = Re sum(conj(a) b)``), themselves checked
against mpmath (derivatives of the real and imaginary parts at 30 digits) in
:func:`test_the_closed_forms_are_right_by_mpmath`, never against the code under test.

Before (issue 25): the orders module cast complex values to float64 (numpy's ComplexWarning),
so check_jvp said FAIL for a correct JVP, check_adjoint passed A^T where A^H is right and a
VJP missing its imaginary part, and taylor_test passed a gradient with its imaginary part dropped.
"""
from __future__ import annotations

import warnings

import mpmath
import numpy as np
import pytest
from optional_deps import need

import gradcheck

RNG = np.random.default_rng(25)
Z = RNG.standard_normal(5) + 1j * RNG.standard_normal(5)
W = RNG.standard_normal(5) + 1j * RNG.standard_normal(5)  # the cotangent of the Taylor losses
C = 0.7 - 1.3j
TH = 0.9
CONVENTIONS = ("torch", "jax")


def _conj(fn):
    return lambda *a: np.conj(fn(*a))


# name -> (f, a(z), b(z)): f's Wirtinger derivatives df/dz and df/dconj(z), entry by entry.
FUNCTIONS = {
    "c z^2": (lambda z: C * z**2, lambda z: 2 * C * z, lambda z: 0 * z),
    "|z|^2": (lambda z: np.abs(z) ** 2, lambda z: np.conj(z), lambda z: z),
    "z conj(z)": (lambda z: z * np.conj(z), lambda z: np.conj(z), lambda z: z),
    "exp(i th) z": (lambda z: np.exp(1j * TH) * z, lambda z: np.exp(1j * TH) + 0 * z, lambda z: 0 * z),
}


def jvp_of(a, b, real_out: bool):
    """J t = a t + b conj(t) (real-valued f: its real part, which is all of it)."""
    def jvp(z, t):
        out = a(z) * t + b(z) * np.conj(t)
        return out.real if real_out else out
    return jvp


def vjp_of(a, b, convention: str, real_out: bool):
    """torch: J* v = conj(a) v + b conj(v); jax: conj(J* conj(w)) (its transpose)."""
    def torch_vjp(z, v):
        v = v.real if real_out else v
        return np.conj(a(z)) * v + b(z) * np.conj(v)
    return torch_vjp if convention == "torch" else (lambda z, w: np.conj(torch_vjp(z, np.conj(w))))


#: The same functions written for mpmath (the references' reference: 30 digits, entry by entry).
FUNCTIONS_MP = {
    "c z^2": lambda z: mpmath.mpc(C) * z**2,
    "|z|^2": lambda z: abs(z) ** 2,
    "z conj(z)": lambda z: z * mpmath.conj(z),
    "exp(i th) z": lambda z: mpmath.exp(1j * mpmath.mpf(TH)) * z,
}


def _real_out(name):
    return name == "|z|^2"


@pytest.fixture(autouse=True)
def _no_casts():
    """A ComplexWarning (an imaginary part dropped by a cast) anywhere is an error here."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", np.exceptions.ComplexWarning)
        yield


# -- the references themselves -----------------------------------------------------------------

@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_the_closed_forms_are_right_by_mpmath(name):
    """J t (the pushforward) and J* v (the gradient of Re sum(conj(v) f)) of every subject,
    against mpmath derivatives along s of f(z + s t) and of the real and imaginary parts of z."""
    _, a, b = FUNCTIONS[name]
    fk = FUNCTIONS_MP[name]
    real_out = _real_out(name)
    k, t, v = 2, 0.4 - 0.9j, (1.0 if real_out else 0.3 + 0.8j)
    with mpmath.workdps(30):
        z0 = mpmath.mpc(complex(Z[k]))
        d_along = complex(mpmath.diff(lambda s: mpmath.re(fk(z0 + s * mpmath.mpc(t))), 0)) + 1j * float(
            mpmath.diff(lambda s: mpmath.im(fk(z0 + s * mpmath.mpc(t))), 0))
        loss = lambda zz: mpmath.re(mpmath.conj(mpmath.mpc(v)) * fk(zz))  # noqa: E731
        d_re = mpmath.diff(lambda r: loss(mpmath.mpc(r, z0.imag)), z0.real)
        d_im = mpmath.diff(lambda i: loss(mpmath.mpc(z0.real, i)), z0.imag)
    jt = jvp_of(a, b, real_out)(Z[k:k + 1], np.array([t]))[0]
    jstar = vjp_of(a, b, "torch", real_out)(Z[k:k + 1], np.array([v]))[0]
    assert abs(jt - complex(d_along)) < 1e-8
    assert abs(jstar - complex(float(d_re), float(d_im))) < 1e-8


# -- check_jvp -----------------------------------------------------------------------------------

@pytest.mark.parametrize("convention", CONVENTIONS)
@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_check_jvp_passes_the_jvp_and_fails_its_conjugate_and_a_dropped_imaginary_part(name, convention):
    """The correct JVP passes; conj(a) t + conj(b) conj(t) (the conjugation bug) fails; so does a
    JVP that drops an imaginary part (of J t, or of t where J t is real anyway)."""
    f, a, b = FUNCTIONS[name]
    real_out = _real_out(name)
    good = jvp_of(a, b, real_out)
    conjugated = jvp_of(lambda z: np.conj(a(z)), lambda z: np.conj(b(z)), real_out)
    if name in ("|z|^2", "z conj(z)"):  # J t is real: drop the tangent's imaginary part instead
        dropped = lambda z, t: good(z, t.real + 0j)  # noqa: E731
    else:
        dropped = lambda z, t: good(z, t).real  # noqa: E731
    assert gradcheck.check_jvp(f, Z.copy(), good, complex_convention=convention).passed
    for bug in (conjugated, dropped):
        r = gradcheck.check_jvp(f, Z.copy(), bug, complex_convention=convention)
        assert r.status == "FAIL" and r.counts[gradcheck.Verdict.MISMATCH] > 0


def test_a_jvp_with_an_imaginary_part_for_a_real_f_is_refused_not_cast():
    """|z|^2 is real: 2 conj(z) t (complex) is not its JVP; refused, never its real part taken."""
    with pytest.raises(gradcheck.UnsupportedInputError, match="real output"):
        gradcheck.check_jvp(lambda z: np.abs(z) ** 2, Z.copy(), lambda z, t: 2 * np.conj(z) * t)


# -- check_adjoint -------------------------------------------------------------------------------

@pytest.mark.parametrize("with_f", [False, True])
@pytest.mark.parametrize("convention", CONVENTIONS)
@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_check_adjoint_passes_the_adjoint_and_fails_the_transpose_and_a_dropped_imaginary_part(
        name, convention, with_f):
    """The convention's VJP passes; the other convention's (A^T where A^H is right, or the
    reverse) fails, and so does its real part; with f, the blame agrees with the verdict."""
    f, a, b = FUNCTIONS[name]
    real_out = _real_out(name)
    other = "jax" if convention == "torch" else "torch"
    jvp, good, swapped = jvp_of(a, b, real_out), vjp_of(a, b, convention, real_out), vjp_of(a, b, other, real_out)
    dropped = lambda z, v: good(z, v).real  # noqa: E731
    run = lambda vjp: gradcheck.check_adjoint(jvp, vjp, Z.copy(), f=f if with_f else None,  # noqa: E731
                                              complex_convention=convention)
    passed = run(good)
    assert passed.passed and any("convention" in n for n in passed.notes)
    for bug in (swapped, dropped):
        assert run(bug).status == "FAIL"


@pytest.mark.parametrize("convention", CONVENTIONS)
def test_check_adjoint_of_a_complex_matrix_at_a_real_point(convention):
    """Real x, complex output (y = A x): the VJP is Re(A^H v) (torch) or Re(A^T w) (jax); the
    other one fails."""
    A = RNG.standard_normal((3, 4)) + 1j * RNG.standard_normal((3, 4))
    x = RNG.standard_normal(4)
    adjoint = {"torch": lambda x, v: (A.conj().T @ v).real, "jax": lambda x, w: (A.T @ w).real}
    other = "jax" if convention == "torch" else "torch"
    run = lambda vjp: gradcheck.check_adjoint(lambda x, t: A @ t, vjp, x, f=lambda x: A @ x,  # noqa: E731
                                              complex_convention=convention)
    assert run(adjoint[convention]).passed
    assert run(adjoint[other]).status == "FAIL"


# -- taylor_test ---------------------------------------------------------------------------------

@pytest.mark.parametrize("convention", CONVENTIONS)
@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_taylor_test_passes_the_gradient_and_fails_its_conjugate_and_its_real_part(name, convention):
    """L(z) = Re sum(conj(w) f(z)): its gradient J* w (torch; conjugated for jax) passes, the
    other convention's fails, and so does the gradient with its imaginary part dropped."""
    f, a, b = FUNCTIONS[name]
    real_out = _real_out(name)
    w = W.real if real_out else W
    torch_grad = lambda z: vjp_of(a, b, "torch", real_out)(z, w)  # noqa: E731
    good = torch_grad if convention == "torch" else _conj(torch_grad)
    swapped = _conj(good)
    loss = lambda z: float(np.sum(np.conj(w) * f(z)).real)  # noqa: E731
    assert gradcheck.taylor_test(loss, Z.copy(), good, complex_convention=convention).passed
    for bug in (swapped, lambda z: good(z).real):
        assert gradcheck.taylor_test(loss, Z.copy(), bug, complex_convention=convention).status == "FAIL"


# -- check_hvp (and the Taylor test's second order) ----------------------------------------------

def _quartic():
    """f = sum |z|^4: torch gradient 4|z|^2 z, Hessian-vector product 4(2|z|^2 v + z^2 conj(v))."""
    f = lambda z: float(np.sum(np.abs(z) ** 4))  # noqa: E731
    g = lambda z: 4 * np.abs(z) ** 2 * z  # noqa: E731
    h = lambda z, v: 4 * (2 * np.abs(z) ** 2 * v + z**2 * np.conj(v))  # noqa: E731
    return f, g, h


@pytest.mark.parametrize("reference", ["grad", "f"])
@pytest.mark.parametrize("convention", CONVENTIONS)
def test_check_hvp_of_a_real_function_of_complex_z(convention, reference):
    """The Hessian-vector product in the convention passes (against the gradient's
    differences, or second differences of f along a complex v); conjugated or with its
    imaginary part dropped, it fails."""
    f, g, h = _quartic()
    if convention == "jax":
        g, h, swapped = _conj(g), _conj(h), h
    else:
        swapped = _conj(h)
    run = lambda hvp: gradcheck.check_hvp(f, Z.copy(), hvp, grad=g, reference=reference,  # noqa: E731
                                          complex_convention=convention)
    assert run(h).passed
    for bug in (swapped, lambda z, v: h(z, v).real):
        assert run(bug).status == "FAIL"


@pytest.mark.parametrize("convention", CONVENTIONS)
def test_taylor_test_second_order_at_a_complex_point(convention):
    """The second-order remainder with the Hessian-vector product: passes; conjugated, fails."""
    f, g, h = _quartic()
    if convention == "jax":
        g, h, swapped = _conj(g), _conj(h), h
    else:
        swapped = _conj(h)
    assert gradcheck.taylor_test(f, Z.copy(), g, h, complex_convention=convention).passed
    assert gradcheck.taylor_test(f, Z.copy(), g, swapped, complex_convention=convention).status == "FAIL"


# -- the frameworks' own autodiff: an independent reference of the conventions -------------------

@pytest.mark.parametrize("framework", ["torch", "jax"])
def test_the_frameworks_own_complex_derivatives_pass_in_their_default_conventions(framework):
    """torch's and jax's forward, reverse and double-backward modes on c z^2, |z|^2 and |z|^4
    pass every test in their default convention (torch: "torch", jax: "jax")."""
    if framework == "torch":
        torch = need("torch")
        z = torch.tensor(Z)
        absval, square = (lambda t: t.abs()), (lambda t: C * t**2)
    else:
        jax = need("jax")
        import jax.numpy as jnp

        from gradcheck.backends._jax import _enable_x64

        with _enable_x64():
            z = jnp.asarray(Z)
        absval, square = jnp.abs, (lambda t: C * t**2)
        del jax
    assert gradcheck.check_adjoint(None, None, z, f=square).passed
    assert gradcheck.check_adjoint(None, None, z, f=lambda t: absval(t) ** 2).passed
    assert gradcheck.check_jvp(square, z).passed
    assert gradcheck.check_jvp(lambda t: (absval(t) ** 2).sum(), z).passed
    quartic = lambda t: (absval(t) ** 4).sum()  # noqa: E731
    assert gradcheck.taylor_test(quartic, z, None, "backend").passed
    assert gradcheck.check_hvp(quartic, z).passed
