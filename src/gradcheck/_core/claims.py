"""A callable claim at the door: its call signature checked before it is ever called, and
its one probe call watched for writes into its arguments. The one place for both rules.

A claim is called by gradcheck in one way for each role: ``grad(x)`` for a scalar ``f``,
``grad(x, v)`` (a VJP) for an array-valued one, ``jvp(x, t)``, ``hvp(x, v)``. A function
that cannot take those arguments would fail inside the library with Python's own message
(``<lambda>() takes 1 positional argument but 2 were given``); it is refused here with the
call it must accept and a fix. A numpy ufunc of one argument (``np.cos``) called with two
writes its result into the second through numpy's ``out=`` and returns it: the cotangent is
overwritten and the report would blame ``f``. It is refused with the lambda to pass instead.
A claim that writes into the arrays it is given (the probe call runs on private copies) is
blamed on the claim, by name (:func:`call_watched`).

>>> import numpy as np
>>> require_call(np.cos, "grad", ("x", "v"), why="f returns an array")
Traceback (most recent call last):
...
TypeError: grad=np.cos is a numpy ufunc of 1 argument: called as grad(x, v) it would write its result into v (numpy's out= argument) instead of multiplying by it; pass lambda x, v: np.cos(x) * v
"""
from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import TypeVar

import numpy as np

from .arrays import same_bits
from .errors import InputMutationError

_T = TypeVar("_T")  # what the watched call returns


def _ufunc_fix(fn: np.ufunc, params: Sequence[str]) -> str:
    head = ", ".join(params)
    return f"lambda {head}: np.{fn.__name__}({params[0]}) * {params[-1]}"


def _name(fn: object) -> str:
    return getattr(fn, "__name__", None) or type(fn).__name__


def require_call(fn: Callable[..., object], role: str, params: Sequence[str], *, why: str, returns: str = "",
                 fix: str = "", ufunc_fix: str = "") -> None:
    """Refuse ``fn`` unless it can be called as ``role(*params)`` (positionally).

    ``why`` says why gradcheck calls it that way (``"f returns an array of shape (3,)"``),
    ``returns`` what the call must return, ``fix`` a way out for the commonest mistake. A
    numpy ufunc taking fewer inputs than ``params`` is refused: the extra argument would be
    its ``out=`` (``ufunc_fix`` replaces the lambda the message offers, for calls whose last
    argument is not a cotangent). Functions whose signature Python cannot inspect are let
    through.
    """
    call = f"{role}({', '.join(params)})"
    if isinstance(fn, np.ufunc):
        if fn.nin < len(params) and ufunc_fix:
            raise TypeError(f"{role}=np.{fn.__name__} is a numpy ufunc of {fn.nin} argument"
                            f"{'s' if fn.nin != 1 else ''}: called as {call} it would write its result into "
                            f"{params[-1]} (numpy's out= argument); {ufunc_fix}")
        if fn.nin < len(params):
            raise TypeError(f"{role}=np.{fn.__name__} is a numpy ufunc of {fn.nin} argument"
                            f"{'s' if fn.nin != 1 else ''}: called as {call} it would write its result into "
                            f"{params[-1]} (numpy's out= argument) instead of multiplying by it; pass "
                            f"{_ufunc_fix(fn, params)}")
        return
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # no signature to bind against (some builtins): the call itself will say
        return
    try:
        signature.bind(*params)
    except TypeError:
        must = f" and must return {returns}" if returns else ""
        raise TypeError(f"{why}, so {role} is called as {call}{must}; {_name(fn)} takes {signature}"
                        f"{'; ' + fix if fix else ''}") from None


def scalar_or_vjp(fn: Callable[..., object], *, x_shape: tuple[int, ...], y_shape: tuple[int, ...] | None,
                  role: str = "grad") -> None:
    """The claimed gradient's call for ``f``'s output: ``grad(x)`` for a scalar (``y_shape``
    None or ``()``), a VJP ``grad(x, v)`` for an array (:func:`require_call`)."""
    if not y_shape:
        require_call(fn, role, ("x",), why="f returns a scalar",
                     returns=f"the gradient, shaped like x {tuple(x_shape)}",
                     fix=f"a VJP {role}(x, v) is for an array-valued f")
        return
    require_call(fn, role, ("x", "v"), why=f"f returns an array of shape {tuple(y_shape)}",
                 returns=f"v . J (a VJP, v shaped like f(x)), shaped like x {tuple(x_shape)}",
                 fix="for an elementwise f whose derivative is d(x), pass lambda x, v: d(x) * v")


def input_names(count: int) -> tuple[str, ...]:
    """What errors call the inputs of ``check(f, (x1, x2, ...))``: ``("x1", "x2", ...)``."""
    return tuple(f"x{k + 1}" for k in range(count))


def shapes_text(names: Sequence[str], shapes: Sequence[tuple[int, ...]]) -> str:
    """``"x1 (3,) and x2 (2, 4)"``: each input with its shape."""
    items = [f"{n} {tuple(s)}" for n, s in zip(names, shapes)]
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def of_inputs(fn: Callable[..., object], role: str, *, x_shapes: Sequence[tuple[int, ...]], y_shape: tuple[int, ...] | None,
              one: int | None = None) -> tuple[str, ...]:
    """The call of a claim of ``check(f, (x1, ..., xn))``, checked as :func:`scalar_or_vjp`
    checks one input's: ``grad(x1, ..., xn)`` for a scalar ``f``, the VJP
    ``grad(x1, ..., xn, v)`` for an array; it returns a tuple of n gradients shaped like the
    inputs, or, for ``one=k`` (the k-th claim of a tuple of claims), input k's gradient.
    Returns the call's parameter names."""
    names = input_names(len(x_shapes))
    params = names if not y_shape else names + ("v",)
    kind = "gradient" if not y_shape else "VJP (v . J, v shaped like f's output)"
    if one is None:
        kinds = "gradients" if not y_shape else "VJPs (v . J for each input, v shaped like f's output)"
        returns = f"a tuple of {len(names)} {kinds}, shaped like {shapes_text(names, x_shapes)}"
    else:
        returns = f"the {kind} for {names[one]}, shaped like {names[one]} {tuple(x_shapes[one])}"
    why = f"f takes {len(names)} inputs and returns " + ("a scalar" if not y_shape else
                                                         f"an array of shape {tuple(y_shape)}")
    fix = (f"a VJP {role}({', '.join(names)}, v) is for an array-valued f" if not y_shape else
           f"the cotangent v comes last, after the {len(names)} inputs")
    require_call(fn, role, params, why=why, returns=returns, fix=fix,
                 ufunc_fix=f"pass a function {role}({', '.join(params)}) that returns {returns}")
    return params


def claim_label(role: str, params: Sequence[str]) -> str:
    """What errors call the claim: ``"the claimed gradient grad(x, v)"``."""
    return f"the claimed gradient {role}({', '.join(params)})"


def call_watched(call: Callable[..., _T], arrays: Sequence[np.ndarray | None], names: Sequence[str],
                 who: str) -> _T:
    """``call(*copies)`` on private copies of ``arrays`` (None stays None); a claim that wrote
    into one of them raises :class:`InputMutationError` naming ``who`` and the argument."""
    copies = [None if a is None else np.array(a, copy=True) for a in arrays]
    value = call(*copies)
    for name, before, after in zip(names, arrays, copies):
        if before is not None and not same_bits(before, after):
            raise claim_wrote(who, name)
    return value


def claim_wrote(who: str, name: str) -> InputMutationError:
    """The one message for a claim that wrote into its argument ``name``."""
    return InputMutationError(
        f"{who} wrote into its argument {name}; a claim must not modify the arrays it is given "
        f"(gradcheck passes it private copies, so yours are unchanged): copy inside it, or drop an out= "
        f"that points at {name}")
