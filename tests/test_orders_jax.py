"""The jax parts of the adjoint test and of complex inputs.

Kept apart from tests/test_adjoint.py and tests/test_complex.py only for the order of the
session: pytest runs files alphabetically, and a process that has started jax's runtime
must not fork afterwards (jax warns of deadlocks), while tests/test_control.py and
tests/test_engine_*.py fork process pools. This file runs after them, like
tests/test_jax_adapter.py.
"""
from __future__ import annotations

import numpy as np
import optional_deps

import gradcheck
from gradcheck import Verdict, check, check_adjoint

RNG = np.random.default_rng(21)
Z = RNG.standard_normal((3, 4)) + 1j * RNG.standard_normal((3, 4))
W = np.linspace(-1.5, 1.3, 12).reshape(3, 4)
A = RNG.standard_normal((3, 4)) + 1j * RNG.standard_normal((3, 4))
B = RNG.standard_normal((4, 2)) + 1j * RNG.standard_normal((4, 2))


def framework(name):
    """torch / jax, or a skip where absent (a failure in CI's full run: tests/optional_deps.py)."""
    return optional_deps.need(name)


def test_jax_forward_and_reverse_modes_are_adjoint():
    """jax.jvp and jax.vjp of f pass the test; the jax adjoint control holds."""
    jax = framework("jax")
    w = np.random.default_rng(8).standard_normal((6, 8))
    f = lambda z: jax.numpy.tanh(w @ z)  # noqa: E731
    assert check_adjoint(None, None, np.linspace(-1, 1, 8), f=f, backend="jax").passed
    gradcheck.assert_detects_wrong_gradient("jax", kind="adjoint")


def test_jax_gradients_use_the_conjugate_convention_by_default():
    """jax's gradient of an |z|^2 loss passes under the default (jax) convention and
    fails under 'torch'; a custom_vjp rule off at (0, 2) is caught there alone."""
    jax = framework("jax")
    jnp = jax.numpy
    fj = lambda t: (W * jnp.abs(t) ** 2).sum() + (t[0] * t[2]).real.sum()  # noqa: E731
    assert check(fj, Z, backend="jax").passed
    assert not check(fj, Z, backend="jax", complex_convention="torch").passed
    assert check(lambda a, b: a @ b, (A, B), backend="jax").passed

    @jax.custom_vjp
    def abs_squared(z):
        return jnp.abs(z) ** 2

    def fwd(z):
        return abs_squared(z), z

    def bwd(z, g):
        return (2 * g * jnp.conj(z) * jnp.ones(z.shape).at[0, 2].set(1 + 1e-4),)

    abs_squared.defvjp(fwd, bwd)
    r = check(lambda t: (W * abs_squared(t)).sum(), Z, backend="jax")
    assert r.entries(Verdict.MISMATCH) == [(0, 2)]
    gradcheck.assert_detects_wrong_gradient("jax", kind="complex")
