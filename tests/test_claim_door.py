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


# -- several inputs: check(f, (x1, x2), grad) goes through the same door ----------------------
A, B = np.linspace(-1.0, 1.3, 5), np.linspace(0.2, 0.9, 12).reshape(3, 4)


class CountedTwo:
    """``f(a, b)`` that counts its calls: the door must refuse before any input is differenced
    (it evaluates f once, to know whether f returns a scalar or an array)."""

    def __init__(self, fn):
        self.fn, self.calls, self.__name__ = fn, 0, fn.__name__

    def __call__(self, a, b):
        self.calls += 1
        return self.fn(a, b)


def scalar_two(a, b):
    return np.sin(a).sum() * np.cos(b).sum()


def scalar_two_grads(a, b):
    return np.cos(a) * np.cos(b).sum(), -np.sin(b) * np.sin(a).sum()


def vector_two(a, b):
    return np.sin(a) * np.cos(b).sum()


def vector_two_vjp(a, b, v):
    return v * np.cos(a) * np.cos(b).sum(), -np.sin(b) * (v * np.sin(a)).sum()


def refused(f, claim, error=TypeError):
    """The message of the error ``check(f, (A, B), claim)`` raises at the door, having called f
    at most once (the output's shape, for a callable claim) and never differenced; the user's
    inputs unchanged."""
    counted, a, b = CountedTwo(f), A.copy(), B.copy()
    with pytest.raises(error) as info:
        gc.check(counted, (a, b), claim)
    assert counted.calls <= 1, counted.calls
    np.testing.assert_array_equal(a, A)
    np.testing.assert_array_equal(b, B)
    return str(info.value)


@pytest.mark.parametrize("f, claim, said", [
    (scalar_two, lambda a: (np.cos(a), np.cos(a)),
     "f takes 2 inputs and returns a scalar, so grad is called as grad(x1, x2) and must return a tuple of 2 "
     "gradients, shaped like x1 (5,) and x2 (3, 4); <lambda> takes (a); a VJP grad(x1, x2, v) is for an "
     "array-valued f"),
    (scalar_two, vector_two_vjp,
     "f takes 2 inputs and returns a scalar, so grad is called as grad(x1, x2) and must return a tuple of 2 "
     "gradients, shaped like x1 (5,) and x2 (3, 4); vector_two_vjp takes (a, b, v)"),
    (vector_two, scalar_two_grads,
     "f takes 2 inputs and returns an array of shape (5,), so grad is called as grad(x1, x2, v) and must "
     "return a tuple of 2 VJPs (v . J for each input, v shaped like f's output), shaped like x1 (5,) and "
     "x2 (3, 4); scalar_two_grads takes (a, b); the cotangent v comes last, after the 2 inputs"),
])
def test_several_inputs_a_claim_of_the_wrong_arity_is_refused_with_the_signature(f, claim, said):
    """The call the claim must accept (grad(x1, x2) for a scalar f, grad(x1, x2, v) for an array
    f), what it must return with every input's shape, and what it takes: before any differencing
    (was: input 0 checked, then Python's "takes 1 positional argument but 2 were given")."""
    assert refused(f, claim).startswith(said)


@pytest.mark.parametrize("f, claim, said", [
    (scalar_two, lambda a, b: (np.cos(a),),
     "the claimed gradient grad(x1, x2) returned 1 gradient ((5,)), but f takes 2 inputs: it must return 2 "
     "gradients shaped like x1 (5,) and x2 (3, 4), one per input, in the order f takes them"),
    (scalar_two, lambda a, b: np.cos(a),
     "the claimed gradient grad(x1, x2) returned a single array of shape (5,), not a tuple of 2 gradients "
     "shaped like x1 (5,) and x2 (3, 4)"),
    (vector_two, lambda a, b, v: (*vector_two_vjp(a, b, v), v),
     "the claimed gradient grad(x1, x2, v) returned 3 gradients ((5,), (3, 4), (5,)), but f takes 2 inputs: "
     "it must return 2 gradients shaped like x1 (5,) and x2 (3, 4)"),
])
def test_several_inputs_a_wrong_number_of_gradients_names_every_shape(f, claim, said):
    assert refused(f, claim).startswith(said)


@pytest.mark.parametrize("f, claim", [
    (scalar_two, lambda a, b: (scalar_two_grads(a, b)[0], scalar_two_grads(a, b)[1].T)),
    (vector_two, lambda a, b, v: (vector_two_vjp(a, b, v)[0], vector_two_vjp(a, b, v)[1].T)),
])
def test_several_inputs_a_misshaped_gradient_names_both_shapes_before_any_differencing(f, claim):
    """x2's gradient transposed: named with both shapes before input 0 is differenced (it used
    to be found only when input 1's turn came, after input 0's whole check)."""
    said = refused(f, claim, gc.ShapeMismatchError)
    call = "grad(x1, x2)" if f is scalar_two else "grad(x1, x2, v)"
    assert said == (f"the claimed gradient {call}[1], the gradient for x2, has shape (4, 3), but it must have "
                    "shape (3, 4)")


@pytest.mark.parametrize("claims, error, said", [
    ((lambda a, b: scalar_two_grads(a, b)[0], lambda b: -np.sin(b)), TypeError,
     "f takes 2 inputs and returns a scalar, so grad[1] is called as grad[1](x1, x2) and must return the "
     "gradient for x2, shaped like x2 (3, 4); <lambda> takes (b)"),
    ((lambda a, b: scalar_two_grads(a, b)[0], lambda a, b: scalar_two_grads(a, b)[1].ravel()),
     gc.ShapeMismatchError,
     "the claimed gradient grad[1](x1, x2), the gradient for x2, has shape (12,), but it must have shape (3, 4)"),
    ((lambda a, b: scalar_two_grads(a, b)[0], np.zeros(12)), gc.ShapeMismatchError,
     "grad[1] (the claim for x2) has shape (12,), but it must have shape (3, 4)"),
    ((np.cos, lambda a, b: scalar_two_grads(a, b)[1]), TypeError,
     "grad[0]=np.cos is a numpy ufunc of 1 argument: called as grad[0](x1, x2) it would write its result into "
     "x2 (numpy's out= argument); pass a function grad[0](x1, x2) that returns the gradient for x1"),
])
def test_several_inputs_a_tuple_of_claims_is_checked_claim_by_claim(claims, error, said):
    assert refused(scalar_two, claims, error).startswith(said)


def test_several_inputs_a_claim_that_writes_into_an_input_is_blamed_on_the_claim():
    """A write into x2 by the claim is the claim's (it was blamed on f, "f wrote into input 1",
    after both inputs' checks); the user's arrays are unchanged."""
    def writes(a, b):
        ga, gb = scalar_two_grads(a, b)
        b *= 2
        return ga, gb

    said = refused(scalar_two, writes, gc.InputMutationError)
    assert said.startswith("the claimed gradient grad(x1, x2) wrote into its argument x2")


@pytest.mark.parametrize("f, claim", [
    (scalar_two, scalar_two_grads),
    (scalar_two, [lambda a, b: scalar_two_grads(a, b)[0], lambda a, b: scalar_two_grads(a, b)[1]]),
    (scalar_two, (None, lambda a, b: scalar_two_grads(a, b)[1])),
    (vector_two, vector_two_vjp),
    (vector_two, (lambda a, b, v: vector_two_vjp(a, b, v)[0], lambda a, b, v: vector_two_vjp(a, b, v)[1])),
])
def test_several_inputs_right_claims_pass_and_a_planted_error_still_fails(f, claim):
    """The negative control: every form of a right claim passes the door and the check; the same
    claim with x2's gradient 1e-3 off at one entry fails at input 1."""
    if isinstance(claim, (tuple, list)) and claim[0] is None:  # the numpy backend needs every claim
        with pytest.raises(TypeError, match="the numpy backend needs the claimed gradient"):
            gc.check(f, (A, B), claim)
        return
    assert gc.check(f, (A, B), claim).passed

    def off(g):
        g = np.array(g, copy=True)
        g[1, 2] *= 1 + 1e-3
        return g

    if callable(claim):
        bad = lambda *args: (claim(*args)[0], off(claim(*args)[1]))  # noqa: E731
    else:
        bad = (claim[0], lambda *args: off(claim[1](*args)))
    r = gc.check(f, (A, B), bad)
    assert r.status == "FAIL" and r[0].passed and not r[1].passed
    assert r[1].entries(gc.Verdict.MISMATCH) == [(1, 2)]


def test_several_complex_inputs_the_door_holds_claims_to_shapes_only():
    """A complex input's gradient is complex: the door checks its shape, not its dtype (the
    check judges it on its real view), so the right claim passes and a misshaped one is refused
    naming both shapes; a claim that returns None is told it may lack a return."""
    z, b = np.array([0.3 + 0.4j, -1.1 + 0.2j, 0.5 - 0.7j]), B.copy()

    def f(z, b):
        return (np.abs(z) ** 2).sum() * np.cos(b).sum()

    def grads(z, b):
        return 2 * z * np.cos(b).sum(), -np.sin(b) * (np.abs(z) ** 2).sum()

    assert gc.check(f, (z, b), grads).passed
    with pytest.raises(gc.ShapeMismatchError, match=r"grad\(x1, x2\)\[0\], the gradient for x1, has shape \(2,\), "
                       r"but it must have shape \(3,\)"):
        gc.check(f, (z, b), lambda z, b: (grads(z, b)[0][:2], grads(z, b)[1]))
    with pytest.raises(gc.UnsupportedInputError, match=r"for x2, is None.*is a `return` missing"):
        gc.check(f, (z, b), lambda z, b: (grads(z, b)[0], None))


@pytest.mark.parametrize("f, claim, door", [
    (scalar_two, scalar_two_grads, 1),
    (scalar_two, (lambda a, b: scalar_two_grads(a, b)[0], lambda a, b: scalar_two_grads(a, b)[1]), 1),
    (scalar_two, (lambda a, b: scalar_two_grads(a, b)[0], scalar_two_grads(A, B)[1]), 1),
    (vector_two, vector_two_vjp, 1),
    (scalar_two, scalar_two_grads(A, B), 0),  # arrays: held to their shapes, f not called at the door
])
def test_several_inputs_every_call_of_f_is_counted(f, claim, door):
    """The door's evaluation of f(*xs) (to know the output's shape) is counted in input 0's
    report: the reports' evaluations add up to the calls f received, and input 0 counts the
    door's call beyond what the same check of input 0 alone (no door) counts."""
    counted = CountedTwo(f)
    r = gc.check(counted, (A, B), claim)
    assert r.passed
    assert sum(rep.evaluations for rep in r) == counted.calls
    alone = CountedTwo(f)
    claim0 = claim[0] if isinstance(claim, tuple) else claim
    grad0 = (lambda a, *v: claim0(a, B, *v)[0]) if claim0 is claim and callable(claim) else (
        (lambda a, *v: claim0(a, B, *v)) if callable(claim0) else claim0)
    single = gc.check(lambda a: alone(a, B), A, grad0)
    assert r[0].evaluations == single.evaluations + door == alone.calls + door
