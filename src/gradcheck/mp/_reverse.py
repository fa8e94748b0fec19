"""Exact gradients at arbitrary precision: reverse mode over :class:`MPFloat` values.

:func:`mp_vjp` runs unmodified numpy code on object arrays of :class:`MPVar` (an
``MPFloat`` value that records the operation that made it and its local partial
derivatives, themselves ``MPFloat`` values), then walks the record backwards once. The
cost is a few times one evaluation whatever the number of inputs. Every value and partial
rounds to the running computation's precision, so at 40 digits the gradient is exact for
any low-precision purpose, and at 24 bits (``dispute``'s float32-arithmetic evaluation) it
is what a float32 backward kernel computing the same formulas would get.

At a kink the derivative is the one of the branch numpy's code takes (``np.maximum(x, 0)``
at ``x == 0`` picks one operand). Leaving arbitrary precision (``float(v)``) is refused as
in :func:`gradcheck.mp.evaluate`.
"""
from __future__ import annotations

import contextvars
from collections.abc import Callable
from typing import Union, overload

import numpy as np
from numpy.typing import ArrayLike

from ._array import MPArray, _exact_tuple_or_raise
from ._scalar import MPFloat, Real, _record, _wrap

# The record of the running gradient computation: MPVars that have parents, in creation order.
_tape: contextvars.ContextVar[list[MPVar] | None] = contextvars.ContextVar(
    "gradcheck_mp_tape", default=None)
#: A value in numpy's object loop: an MPFloat or a constant (a Python or numpy number).
Scalar = MPFloat | float | np.number
#: What an operator of MPVar meets there: another MPVar or a value.
Operand = Union["MPVar", Scalar]


def _mp(v: Real) -> MPFloat:
    if type(v) is MPFloat:
        return v
    return _wrap(_exact_tuple_or_raise(v))


class MPVar:
    """An ``MPFloat`` value in a reverse-mode record: ``value``, its parents and partials.

    >>> import numpy as np
    >>> g = mp_vjp(lambda x: np.sum(np.sin(x) * x), (np.array([0.5, 2.0]),), 0, None, dps=30)
    >>> [round(float(v.value), 12) for v in g]   # sin(x) + x cos(x)
    [0.918216819549, 0.077003753731]
    """

    __slots__ = ("adjoint", "parents", "value")

    def __init__(self, value: Real, parents: tuple = ()) -> None:
        self.value = _mp(value)
        self.parents = parents
        self.adjoint: MPFloat | None = None
        if parents:
            tape = _tape.get()
            if tape is None:  # the gradient would silently miss this operation
                raise RuntimeError("an operation on MPVar values outside the gradient computation "
                                   "that made them (in a thread math_fn started?): its derivative "
                                   "cannot be recorded")
            tape.append(self)

    # -- refused and exact conversions
    def __float__(self) -> float:
        raise _record("float()")

    def __complex__(self) -> complex:
        raise _record("complex()")

    def __int__(self) -> int:
        return int(self.value)

    def __bool__(self) -> bool:
        return bool(self.value)

    def __repr__(self) -> str:
        return f"MPVar({self.value})"

    # -- comparisons: on values
    def __lt__(self, o: Operand) -> bool: return self.value < _value(o)
    def __le__(self, o: Operand) -> bool: return self.value <= _value(o)
    def __gt__(self, o: Operand) -> bool: return self.value > _value(o)
    def __ge__(self, o: Operand) -> bool: return self.value >= _value(o)
    def __eq__(self, o: object) -> bool: return self.value == _value(o)  # type: ignore[override]
    def __ne__(self, o: object) -> bool: return self.value != _value(o)  # type: ignore[override]
    __hash__ = None  # type: ignore[assignment]

    # -- arithmetic
    def __add__(self, o: Operand) -> MPVar: return _add(self, o)
    def __radd__(self, o: Operand) -> MPVar: return _add(o, self)
    def __sub__(self, o: Operand) -> MPVar: return _sub(self, o)
    def __rsub__(self, o: Operand) -> MPVar: return _sub(o, self)
    def __mul__(self, o: Operand) -> MPVar: return _mul(self, o)
    def __rmul__(self, o: Operand) -> MPVar: return _mul(o, self)
    def __truediv__(self, o: Operand) -> MPVar: return _div(self, o)
    def __rtruediv__(self, o: Operand) -> MPVar: return _div(o, self)
    def __pow__(self, o: Operand) -> MPVar: return _pow(self, o)
    def __rpow__(self, o: Operand) -> MPVar: return _pow(o, self)

    def __neg__(self) -> MPVar:
        return MPVar(-self.value, ((self, _mp(-1)),))

    def __pos__(self) -> MPVar:
        return self

    def __abs__(self) -> MPVar:
        v = self.value
        return MPVar(abs(v), ((self, _mp(0 if v == 0 else (1 if v > 0 else -1))),))

    fabs = __abs__

    def conjugate(self) -> MPVar:
        return self


@overload
def _value(o: Operand) -> Scalar: ...
@overload
def _value(o: object) -> object: ...
def _value(o: object) -> object:
    return o.value if isinstance(o, MPVar) else o


def _node(value: Scalar, *pairs: tuple[Operand, Callable[[], Scalar]]) -> MPVar:
    """An MPVar of ``value`` whose parents are the MPVars among ``pairs`` (operand, partial)."""
    parents = tuple((a, _mp(d())) for a, d in pairs if isinstance(a, MPVar))
    return MPVar(value, parents)


def _add(a: Operand, b: Operand) -> MPVar:
    return _node(_value(a) + _value(b), (a, lambda: 1), (b, lambda: 1))


def _sub(a: Operand, b: Operand) -> MPVar:
    return _node(_value(a) - _value(b), (a, lambda: 1), (b, lambda: -1))


def _mul(a: Operand, b: Operand) -> MPVar:
    x, y = _value(a), _value(b)
    return _node(x * y, (a, lambda: y), (b, lambda: x))


def _div(a: Operand, b: Operand) -> MPVar:
    x, y = _value(a), _value(b)
    z = x / y
    return _node(z, (a, lambda: 1 / y), (b, lambda: -z / y))


def _pow(a: Operand, b: Operand) -> MPVar:
    x, y = _mp(_value(a)), _mp(_value(b))
    z = x ** y
    return _node(z, (a, lambda: y * x ** (y - 1)), (b, lambda: z * x.log()))


def _unary(name: str, derivative: Callable[[MPFloat, MPFloat], Scalar]) -> Callable[[MPVar], MPVar]:
    """The method numpy's object loop calls for ``np.<name>``, with its derivative
    ``derivative(x, z)`` (x the argument, z the result)."""

    def method(self: MPVar) -> MPVar:
        x = self.value
        z = getattr(x, name)()
        return MPVar(z, ((self, _mp(derivative(x, z))),))

    method.__name__ = name
    return method


for _name, _d in {
    "exp": lambda x, z: z,
    "expm1": lambda x, z: z + 1,
    "exp2": lambda x, z: z * _mp(2).log(),
    "log": lambda x, z: 1 / x,
    "log1p": lambda x, z: 1 / (x + 1),
    "log2": lambda x, z: 1 / (x * _mp(2).log()),
    "log10": lambda x, z: 1 / (x * _mp(10).log()),
    "sqrt": lambda x, z: 1 / (2 * z),
    "cbrt": lambda x, z: 1 / (3 * z * z),
    "sin": lambda x, z: x.cos(),
    "cos": lambda x, z: -x.sin(),
    "tan": lambda x, z: 1 + z * z,
    "arcsin": lambda x, z: 1 / (1 - x * x).sqrt(),
    "arccos": lambda x, z: -1 / (1 - x * x).sqrt(),
    "arctan": lambda x, z: 1 / (1 + x * x),
    "sinh": lambda x, z: x.cosh(),
    "cosh": lambda x, z: x.sinh(),
    "tanh": lambda x, z: 1 - z * z,
    "arcsinh": lambda x, z: 1 / (x * x + 1).sqrt(),
    "arccosh": lambda x, z: 1 / (x * x - 1).sqrt(),
    "arctanh": lambda x, z: 1 / (1 - x * x),
}.items():
    setattr(MPVar, _name, _unary(_name, _d))


def mp_vjp(f: Callable[..., object], inputs: tuple[ArrayLike, ...], wrt: int,
           cotangent: ArrayLike | None, *,
           dps: int | None = None) -> MPArray:
    """The gradient of ``sum(cotangent * f(*inputs))`` with respect to ``inputs[wrt]``.

    ``inputs``: float arrays (converted exactly) or object arrays of ``MPFloat``;
    ``cotangent``: shaped like ``f``'s result (None: ``f`` returns a scalar, cotangent 1),
    taken exactly. With ``dps`` the computation runs in a private context at that precision
    (with the float checks of :func:`gradcheck.mp.evaluate`); without, at the running
    computation's precision (inside :func:`gradcheck.mp._evaluate.run_checked`). Returns an
    object array of ``MPFloat`` shaped like ``inputs[wrt]``.
    """
    if dps is not None:
        from ._context import owned
        from ._convert import to_mp_in
        from ._evaluate import run_checked

        with owned(dps) as ctx:
            exact = tuple(to_mp_in(a, ctx) for a in inputs)
            return run_checked(lambda _: mp_vjp(f, exact, wrt, cotangent), None, ctx)
    leaves = np.frompyfunc(MPVar, 1, 1)(np.asarray(inputs[wrt], dtype=object))
    xs: list[ArrayLike] = list(inputs)
    xs[wrt] = np.asarray(leaves, dtype=object).view(MPArray)
    tape: list[MPVar] = []
    token = _tape.set(tape)
    try:
        y = f(*xs)
    finally:
        _tape.reset(token)
    _seed(y, cotangent)
    for node in reversed(tape):
        if node.adjoint is not None:
            for parent, partial in node.parents:
                step = node.adjoint * partial
                parent.adjoint = step if parent.adjoint is None else parent.adjoint + step
    zero = _mp(0)
    flat = [v.adjoint if v.adjoint is not None else zero for v in np.asarray(leaves).reshape(-1)]
    out = np.empty(len(flat), dtype=object)
    out[:] = flat
    return out.reshape(np.shape(leaves)).view(MPArray)


def _seed(y: object, cotangent: ArrayLike | None) -> None:
    """Set the adjoints of ``f``'s outputs to the cotangent (added, for repeated outputs)."""
    ys = np.asarray(y, dtype=object)
    if cotangent is None:
        if ys.ndim:
            raise ValueError(f"f returned an array of shape {ys.shape}; pass a cotangent of that "
                             "shape to reduce it to a scalar")
        cots = np.ones((), dtype=object)
    else:
        cots = np.asarray(cotangent)
        if cots.shape != ys.shape:
            raise ValueError(f"cotangent shape {cots.shape} does not match the output shape "
                             f"{ys.shape}")
    for out, c in zip(ys.reshape(-1), cots.reshape(-1)):
        if isinstance(out, MPVar):
            c = _mp(c)
            out.adjoint = c if out.adjoint is None else out.adjoint + c
