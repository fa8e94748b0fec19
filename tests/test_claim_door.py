"""A callable claim is checked at the door (issue 27): its call (``grad(x)`` for a scalar f,
``grad(x, v)`` for an array f, ``jvp(x, t)``, ``hvp(x, v)``, the adjoint's models) before any
differencing, with an error that shows the call it must accept; a one-input numpy ufunc as a
two-argument claim is refused with the lambda to pass; a claim that writes into its arguments
is blamed on the claim, never on f. Correct claims (a ufunc as ``grad(x)``, a two-argument
VJP, a builtin Python cannot inspect) still pass: the negative controls."""
from __future__ import annotations

import numpy as np
import pytest

import gradcheck as gc

X = np.linspace(-1.2, 1.4, 50)


class Counted:
    """``f`` that counts its calls: the door must refuse before the 2N differences."""

    def __init__(self, fn):
        self.fn, self.calls, self.__name__ = fn, 0, fn.__name__

    def __call__(self, x):
        self.calls += 1
        return self.fn(x)


def scalar_f(x):
    return np.sin(x).sum()


def vector_f(x):
    return np.sin(x)


def test_a_one_argument_gradient_of_an_array_f_is_refused_with_the_vjp_signature():
    """The issue's case: a raw "<lambda>() takes 1 positional argument but 2 were given" from
    inside the library; now the call grad(x, v) it must accept, what it takes, and the fix,
    raised before any difference (f ran only for f(x) and the float32 probe)."""
    f, x = Counted(vector_f), X.copy()
    with pytest.raises(TypeError) as info:
        gc.check(f, x, lambda x: np.cos(x))
    said = str(info.value)
    assert said.startswith("f returns an array of shape (50,), so grad is called as grad(x, v)")
    assert "<lambda> takes (x)" in said and "lambda x, v: d(x) * v" in said
    assert "positional argument" not in said
    assert f.calls <= 3 < 2 * X.size
    np.testing.assert_array_equal(x, X)


def test_a_two_argument_gradient_of_a_scalar_f_is_refused_with_grad_of_x():
    with pytest.raises(TypeError, match=r"f returns a scalar, so grad is called as grad\(x\).*takes \(x, v\)"):
        gc.check(scalar_f, X, lambda x, v: np.cos(x) * v)


def test_a_ufunc_as_a_vjp_is_refused_with_the_fix_not_blamed_on_f():
    """grad=np.cos for an array f: called as np.cos(x, v) it wrote cos(x) into v through out=,
    and the report said "NONDETERMINISTIC: f(x) changed by 1.63". Now refused, with the lambda;
    the fix it names passes (its own negative control: the same lambda 1e-3 off fails)."""
    with pytest.raises(TypeError) as info:
        gc.check(vector_f, X, np.cos)
    said = str(info.value)
    assert said == ("grad=np.cos is a numpy ufunc of 1 argument: called as grad(x, v) it would write its result "
                    "into v (numpy's out= argument) instead of multiplying by it; pass lambda x, v: np.cos(x) * v")
    assert gc.check(vector_f, X, lambda x, v: np.cos(x) * v).passed
    assert not gc.check(vector_f, X, lambda x, v: np.cos(x) * v * (1 + 1e-3)).passed


def test_a_ufunc_is_a_fine_gradient_of_a_scalar_f():
    """np.cos as grad(x) of sum(sin(x)): one argument, as the ufunc takes: it passes."""
    assert gc.check(scalar_f, X, np.cos).passed


@pytest.mark.parametrize("claim, argument", [
    (lambda x: np.cos(x, out=x), "x"),
    (lambda x: (x.__imul__(1.0), np.cos(x))[1], None),  # writes the same values: the same bits, no blame
])
def test_a_gradient_that_writes_into_x_is_blamed_on_the_claim(claim, argument):
    """The claim runs on a private copy: the user's x is unchanged, and a write is reported as the
    claim's (by its call), never as f's."""
    x = X.copy()
    if argument is None:
        assert gc.check(scalar_f, x, claim).passed
        return
    with pytest.raises(gc.InputMutationError) as info:
        gc.check(scalar_f, x, claim)
    assert str(info.value).startswith(f"the claimed gradient grad(x) wrote into its argument {argument}")
    np.testing.assert_array_equal(x, X)


def test_a_vjp_that_writes_into_v_is_blamed_on_the_claim():
    with pytest.raises(gc.InputMutationError, match=r"^the claimed gradient grad\(x, v\) wrote into its argument v"):
        gc.check(vector_f, X, lambda x, v: np.multiply(np.cos(x), v, out=v))


def test_a_misshaped_callable_claim_names_its_call():
    with pytest.raises(gc.ShapeMismatchError, match=r"the claimed gradient grad\(x\) has shape \(3,\), but it "
                       r"must have shape \(50,\)"):
        gc.check(scalar_f, X, lambda x: np.cos(x)[:3])


class Opaque:
    """A callable whose signature Python cannot read (as for some builtins and extensions)."""

    @property
    def __signature__(self):
        raise ValueError("no signature found")

    def __call__(self, *args):
        return self.fn(*args)


@pytest.mark.parametrize("claim, passes", [(lambda x: 2 * x, True), (lambda x: 2 * x + 1e-3, False)])
def test_a_claim_without_a_readable_signature_is_called_and_judged(claim, passes):
    """What cannot be inspected is let through, called and judged as usual (a wrong one fails);
    so is a ``*args`` callable such as np.vectorize."""
    opaque = Opaque()
    opaque.fn = claim
    assert gc.check(lambda x: (x**2).sum(), X, opaque).passed is passes
    assert gc.check(lambda x: (x**2).sum(), X, np.vectorize(claim)).passed is passes


def test_screen_checks_the_claim_at_the_door():
    x = np.linspace(-1, 1, 600)
    with pytest.raises(TypeError, match=r"pass lambda x, v: np\.cos\(x\) \* v"):
        gc.screen(vector_f, x, np.cos)
    with pytest.raises(TypeError, match=r"so grad is called as grad\(x, v\)"):
        gc.screen(vector_f, x, lambda x: np.cos(x))
    assert gc.screen(vector_f, x, lambda x, v: np.cos(x) * v).passed


@pytest.mark.parametrize("call, words", [
    (lambda: gc.check_jvp(vector_f, X, np.cos), r"jvp=np\.cos is a numpy ufunc.*lambda x, t: np\.cos\(x\) \* t"),
    (lambda: gc.check_jvp(vector_f, X, lambda x: np.cos(x)), r"jvp is called as jvp\(x, t\).*takes \(x\)"),
    (lambda: gc.check_hvp(scalar_f, X, lambda x: -np.sin(x)), r"hvp is called as hvp\(x, v\).*takes \(x\)"),
    (lambda: gc.check_hvp(scalar_f, X, lambda x, v: -np.sin(x) * v, grad=lambda x, v: np.cos(x)),
     r"grad is called as grad\(x\)"),
    (lambda: gc.taylor_test(scalar_f, X, lambda x, v: np.cos(x)), r"grad is called as grad\(x\)"),
    (lambda: gc.taylor_test(scalar_f, X, np.cos, lambda x: -np.sin(x)), r"hvp is called as hvp\(x, v\)"),
    (lambda: gc.check_adjoint(lambda x, t: np.cos(x) * t, np.cos, X),
     r"vjp=np\.cos is a numpy ufunc.*lambda x, v: np\.cos\(x\) \* v"),
    (lambda: gc.check_adjoint(lambda x, t: t, lambda v: v, in_shape=(3,)),
     r"jvp is called as jvp\(t\).*takes \(x, t\)"),
])
def test_the_orders_functions_check_their_claims_at_the_door(call, words):
    with pytest.raises(TypeError, match=words):
        call()


def test_orders_claims_that_write_into_their_arguments_are_blamed():
    with pytest.raises(gc.InputMutationError, match=r"^the claimed jvp \(<lambda>\) wrote into its argument t"):
        gc.check_jvp(vector_f, X, lambda x, t: np.multiply(np.cos(x), t, out=t))
    with pytest.raises(gc.InputMutationError, match=r"^the claimed gradient grad\(x\) wrote into its argument x"):
        gc.taylor_test(scalar_f, X.copy(), lambda x: np.cos(x, out=x))


def test_correct_orders_claims_still_pass():
    """The negative control of the door: right signatures are let through and pass."""
    assert gc.check_jvp(vector_f, X, lambda x, t: np.cos(x) * t).passed
    assert gc.check_hvp(scalar_f, X, lambda x, v: -np.sin(x) * v, grad=np.cos).passed
    assert gc.taylor_test(scalar_f, X, np.cos, lambda x, v: -np.sin(x) * v).passed
    assert gc.check_adjoint(lambda x, t: np.cos(x) * t, lambda x, v: np.cos(x) * v, X).passed
