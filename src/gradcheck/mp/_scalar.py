"""``MPFloat``: a real number at arbitrary precision that numpy object arrays can use.

numpy runs a ufunc on an object array by calling, element by element, the Python operator
(``+``, ``<``, ``abs``) or a method named after the ufunc (``np.tanh`` calls ``v.tanh()``).
``MPFloat`` provides both, so unmodified numpy code runs at arbitrary precision. The value is
an exact mpf tuple; the precision an operation rounds to is its computation's private mpmath
context (``_context``), never mpmath's global one while a computation runs.
Turning an ``MPFloat`` into a float is the one thing it refuses: outside an evaluation
``__float__`` raises :class:`PrecisionLossError`; inside one (:func:`gradcheck.mp.evaluate`) it
records the event, with the value and the float it became, and lets ``f`` go on, so that the
evaluation can accept a conversion of the value ``f`` returns (``return float(loss)``) and
refuse one in the middle of the computation with its line. A drop to 53 bits cannot go unseen.
"""
from __future__ import annotations

import contextvars
import decimal
import functools
import os
import sys
from collections.abc import Callable
from types import FrameType
from typing import Any, Union

import mpmath
import numpy as np
from mpmath import libmp

from ._context import GLOBAL, Context, Mpc, Mpf
from ._context import active as _active
from ._errors import PrecisionLossError

# An exact mpmath.mpf of the global context: what the public API hands out (``value``). Making
# one from a tuple rounds nothing, so it reads no precision.
_make_mpf = GLOBAL.make_mpf
# Any context's mpf and mpc (each MPContext has its own subclasses of these).
_MPF = mpmath.ctx_mp_python._mpf
_MPC = mpmath.ctx_mp_python._mpc
_from_int = libmp.from_int
# Constants captured by the function (weights, data) meet MPFloats again at every evaluation.
_from_float = functools.lru_cache(maxsize=1 << 16)(libmp.from_float)

# Events seen by __float__ during an evaluation. A context variable, not a global, so that an
# evaluation sees its own events even when the function under test swallows the exception.
_float_events: contextvars.ContextVar[list[PrecisionLossError] | None] = contextvars.ContextVar(
    "gradcheck_mp_float_events", default=None
)
#: A real number MPFloat takes exactly: int, float, a numpy or ml_dtypes scalar, an mpf.
Real = Union[float, np.generic, "MPFloat", Mpf]
_SKIP_DIRS = (os.path.dirname(np.__file__) + os.sep, os.path.dirname(__file__) + os.sep)


def exact_mpf(value: object) -> Mpf | None:
    """The exact ``mpmath.mpf`` of a real number, or ``None`` if ``value`` is not one.

    Accepts int, float, numpy and ml_dtypes scalars, ``mpf`` and ``MPFloat``. Nothing is
    rounded, whatever mpmath's working precision: a float64 keeps its 53 bits.

    >>> with mpmath.workdps(5):   # mpmath.mpf(0.1) rounds to 5 digits here; exact_mpf does not
    ...     exact_mpf(0.1) == mpmath.mpf(0.1)
    False
    """
    t = _exact_tuple(value)
    return None if t is None else _make_mpf(t)


def _exact_tuple(value: object) -> tuple | None:
    if isinstance(value, MPFloat):
        return value._t
    if isinstance(value, float):  # includes np.float64
        return _from_float(value)
    if isinstance(value, (int, np.integer)):  # includes bool
        return _from_int(int(value))
    if isinstance(value, _MPF):
        return value._mpf_
    if isinstance(value, np.longdouble):
        # float() would round an 80-bit mantissa; the ratio's denominator is a power of two.
        num, den = value.as_integer_ratio()
        return libmp.from_man_exp(num, -(den.bit_length() - 1))
    if isinstance(value, (np.floating, np.bool_)) or (
        isinstance(value, np.generic) and type(value).__module__.startswith("ml_dtypes")
    ):
        # float16, float32, bfloat16, float8: every value of these is a float64 value.
        return _from_float(float(value))
    return None


def _operand(other: Any) -> tuple | None:
    """The mpf tuple to combine with, or ``None`` (the operator then returns NotImplemented)."""
    kind = type(other)
    if kind is MPFloat:
        return other._t
    if kind is float:
        return _from_float(other)
    if kind is int:
        return _from_int(other)
    return _exact_tuple(other)


def _wrap(t: tuple, ctx: Context | None = None) -> MPFloat:
    """An MPFloat of the exact tuple ``t``, made in context ``ctx``; one made in the global
    context (or None) records none, so that it never overrides a computation's."""
    out = object.__new__(MPFloat)
    out._t = t
    out._ctx = None if ctx is GLOBAL else ctx
    return out


def _context(a: MPFloat, other: object = None) -> Context:
    """The context an operation on ``a`` (and ``other``) rounds to (see ``_context.py``)."""
    return _active() or _resting(a, other)


def _resting(a: MPFloat, other: object) -> Context:
    """Outside this thread's computation: the operands' context, else mpmath's global one."""
    return a._ctx or (other._ctx if type(other) is MPFloat else None) or GLOBAL


# mpmath 1.3 has a negative zero (fnzero); 1.4 has only fzero.
_ZEROS = tuple(z for z in (libmp.fzero, getattr(libmp, "fnzero", None)) if z is not None)


def _to_real_tuple(z: Mpf | Mpc) -> tuple:
    """numpy's real-valued semantics: outside a function's real domain the answer is NaN."""
    if isinstance(z, _MPC):
        re, im = z._mpc_
        return re if im in _ZEROS else libmp.fnan
    return z._mpf_


def _caller() -> str:
    """``file:line in function`` of the first frame outside numpy and this package."""
    frame: FrameType | None = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename.startswith(_SKIP_DIRS):
        frame = frame.f_back
    if frame is None:
        return "<unknown>"
    return f"{frame.f_code.co_filename}:{frame.f_lineno} in {frame.f_code.co_name}"


def _record(operation: str) -> PrecisionLossError:
    error = PrecisionLossError(operation, where=_caller())
    events = _float_events.get()
    if events is not None:
        events.append(error)
    return error


def _convert(v: MPFloat, operation: str) -> float:
    """``float(v)`` inside an evaluation (recorded with the value, then allowed: the
    evaluation judges whether the conversion was the last step of ``f``); a raised
    :class:`PrecisionLossError` outside one."""
    error = _record(operation)
    if _float_events.get() is None:
        raise error
    rounded = libmp.to_float(v._t, rnd=libmp.round_nearest)
    error.value, error.rounded = v, rounded
    return rounded


def _binary(op: Callable[..., tuple]) -> tuple[Callable, Callable]:
    """``__op__`` and ``__rop__`` for an mpf-tuple operation ``op(s, t, prec, rounding)``."""

    def forward(self: MPFloat, other: object) -> MPFloat:
        o = _operand(other)
        if o is None:
            return NotImplemented
        ctx = _active() or _resting(self, other)  # _context, inlined: the hottest path
        return _wrap(op(self._t, o, *ctx._prec_rounding), ctx)

    def reverse(self: MPFloat, other: object) -> MPFloat:
        o = _operand(other)
        if o is None:
            return NotImplemented
        ctx = _active() or _resting(self, other)
        return _wrap(op(o, self._t, *ctx._prec_rounding), ctx)

    return forward, reverse


def _binary_in_context(op: Callable[..., tuple]) -> tuple[Callable, Callable]:
    """``__op__`` and ``__rop__`` for ``op(s, t, ctx)``, which needs mpmath's functions."""

    def forward(self: MPFloat, other: object) -> MPFloat:
        o = _operand(other)
        if o is None:
            return NotImplemented
        ctx = _context(self, other)
        return _wrap(op(self._t, o, ctx), ctx)

    def reverse(self: MPFloat, other: object) -> MPFloat:
        o = _operand(other)
        if o is None:
            return NotImplemented
        ctx = _context(self, other)
        return _wrap(op(o, self._t, ctx), ctx)

    return forward, reverse


def _compare(op: Callable[[tuple, tuple], bool]) -> Callable:
    def compare(self: MPFloat, other: object) -> bool:
        o = _operand(other)
        return NotImplemented if o is None else op(self._t, o)

    return compare


def _unary(name: str, fn: Callable[[Context, Mpf], Mpf | Mpc] | None = None) -> Callable:
    """The method numpy's object loop calls for ``np.<name>``: ``fn(ctx, v)``, by default
    mpmath's function of that name (``ctx.tanh``), in the operation's context."""

    def method(self: MPFloat) -> MPFloat:
        ctx = _context(self)
        v = ctx.make_mpf(self._t)
        return _wrap(_to_real_tuple(getattr(ctx, name)(v) if fn is None else fn(ctx, v)),
                     ctx)

    method.__name__ = name
    method.__doc__ = f"``np.{name}`` at the working precision (NaN outside the real domain)."
    return method


def _floordiv(s: tuple, t: tuple, ctx: Context) -> tuple:
    return _divmod(s, t, ctx)[0]


def _mod(s: tuple, t: tuple, ctx: Context) -> tuple:
    return _divmod(s, t, ctx)[1]


def _divmod(s: tuple, t: tuple, ctx: Context) -> tuple[tuple, tuple]:
    """Python's floor division and modulo (the remainder takes the divisor's sign)."""
    a, b = ctx.make_mpf(s), ctx.make_mpf(t)
    if not b:
        raise ZeroDivisionError("MPFloat division by zero")
    q = ctx.floor(a / b)
    r = a - q * b
    # a / b rounds; when it rounds up onto an integer the remainder comes out of range.
    if r != 0 and (r < 0) != (b < 0):
        q -= 1
        r += b
    return q._mpf_, r._mpf_


def _pow(s: tuple, t: tuple, ctx: Context) -> tuple:
    sign, man, exp, bits = t
    if not sign and man and exp >= 0 and bits + exp <= 10:
        # A small positive integer exponent (x ** 2): repeated multiplication, any base sign.
        return libmp.mpf_pow_int(s, int(man) << exp, *ctx._prec_rounding)
    base, exponent = ctx.make_mpf(s), ctx.make_mpf(t)
    if not base and exponent < 0:
        raise ZeroDivisionError("0.0 cannot be raised to a negative power")
    return _to_real_tuple(ctx.power(base, exponent))


class MPFloat:
    """A real number at arbitrary precision that numpy object arrays can compute with.

    Construction is exact. Inside :func:`gradcheck.mp.evaluate` (and the derivatives and
    disputes built on it) arithmetic rounds to that computation's own precision, which no
    other thread and no change of ``mpmath.mp`` can alter; outside any computation it rounds
    to ``mpmath.mp.prec`` (scope it with ``mpmath.workdps``). ``float(v)`` raises
    :class:`PrecisionLossError`; use :func:`gradcheck.mp.from_mp` to round deliberately.

    >>> import numpy as np
    >>> with mpmath.workdps(30):
    ...     y = np.tanh(np.array([MPFloat(1), MPFloat(2)], dtype=object))
    ...     print(y[0])
    0.761594155955764888119458282605
    """

    # _t: the exact mpf tuple. _ctx: the private context of the computation that made the
    # value, None if made outside one (see _context.py).
    __slots__ = ("_ctx", "_t")

    def __init__(self, value: Real | str) -> None:
        self._ctx = None
        t = _exact_tuple(value)
        if t is None:
            if not isinstance(value, str):
                raise TypeError(f"MPFloat needs a real number, got {type(value).__name__}")
            t = libmp.from_str(value, *_context(self)._prec_rounding)  # rounds: working precision
        self._t = t

    @property
    def value(self) -> Mpf:
        """The exact ``mpmath.mpf``."""
        return _make_mpf(self._t)

    @property
    def _mpf_(self) -> tuple:
        # Lets mpmath functions take an MPFloat directly: mpmath.erf(v), mpmath.fdot(...). They
        # round to their own context: mpmath.erf to the global precision, even inside f.
        return self._t

    def __reduce__(self) -> tuple:
        # Pickle the tuple (exact), not a decimal string: process pools must not round.
        return (_wrap, (self._t,))

    # -- display
    def __repr__(self) -> str:
        return f"MPFloat('{self}')"

    def __str__(self) -> str:
        return libmp.to_str(self._t, _context(self).dps)

    def __format__(self, spec: str) -> str:
        if not spec:
            return str(self)
        # Decimal formats e/f/g specifications from the digits, never through a float.
        return format(decimal.Decimal(libmp.to_str(self._t, _context(self).dps + 3)), spec)

    # -- the refused conversions
    def __float__(self) -> float:
        return _convert(self, "float()")

    def item(self) -> float:
        """``float(self)``, as numpy scalars' ``.item()`` (``return np.sum(v).item()``)."""
        return _convert(self, ".item()")

    def __complex__(self) -> complex:
        raise _record("complex()")

    # Integer conversions are exact (truncation, floor, ceiling): piecewise constant, no loss.
    def __int__(self) -> int:
        return int(libmp.to_int(self._t))

    __trunc__ = __int__

    def __floor__(self) -> int:
        return int(libmp.to_int(libmp.mpf_floor(self._t)))

    def __ceil__(self) -> int:
        return int(libmp.to_int(libmp.mpf_ceil(self._t)))

    def __round__(self, ndigits: int | None = None) -> int | MPFloat:
        ctx = _context(self)
        v = ctx.make_mpf(self._t)
        if ndigits is None:
            return int(ctx.nint(v))
        scale = ctx.mpf(10) ** ndigits
        return _wrap((ctx.nint(v * scale) / scale)._mpf_, ctx)

    # -- comparisons, truth, hash
    __eq__ = _compare(libmp.mpf_eq)
    __lt__ = _compare(libmp.mpf_lt)
    __le__ = _compare(libmp.mpf_le)
    __gt__ = _compare(libmp.mpf_gt)
    __ge__ = _compare(libmp.mpf_ge)

    def __ne__(self, other: object) -> bool:
        o = _operand(other)
        return NotImplemented if o is None else not libmp.mpf_eq(self._t, o)

    def __bool__(self) -> bool:
        return self._t != libmp.fzero

    def __hash__(self) -> int:
        return libmp.mpf_hash(self._t)  # equals hash(x) for an int or float of the same value

    # -- arithmetic
    def __neg__(self) -> MPFloat:
        return _wrap(libmp.mpf_neg(self._t))

    def __pos__(self) -> MPFloat:
        return self

    def __abs__(self) -> MPFloat:
        return _wrap(libmp.mpf_abs(self._t))

    __add__, __radd__ = _binary(libmp.mpf_add)
    __sub__, __rsub__ = _binary(libmp.mpf_sub)
    __mul__, __rmul__ = _binary(libmp.mpf_mul)
    __truediv__, __rtruediv__ = _binary(libmp.mpf_div)
    __floordiv__, __rfloordiv__ = _binary_in_context(_floordiv)
    __mod__, __rmod__ = _binary_in_context(_mod)
    __pow__, __rpow__ = _binary_in_context(_pow)

    def __divmod__(self, other: object) -> tuple[MPFloat, MPFloat]:
        o = _operand(other)
        if o is None:
            return NotImplemented
        ctx = _context(self, other)
        q, r = _divmod(self._t, o, ctx)
        return _wrap(q, ctx), _wrap(r, ctx)

    def __rdivmod__(self, other: object) -> tuple[MPFloat, MPFloat]:
        o = _operand(other)
        if o is None:
            return NotImplemented
        ctx = _context(self, other)
        q, r = _divmod(o, self._t, ctx)
        return _wrap(q, ctx), _wrap(r, ctx)

    # -- numpy: ``__array_ufunc__`` is installed by ``_array`` (see ``_scalar_array_ufunc``
    # there), beside the object loop it runs: that module imports this one, not the reverse.

    # The methods numpy's object loops look up by the ufunc's name.
    exp = _unary("exp")
    exp2 = _unary("exp2", lambda ctx, v: ctx.power(2, v))
    expm1 = _unary("expm1")
    log = _unary("log")
    log2 = _unary("log2", lambda ctx, v: ctx.log(v, 2))
    log10 = _unary("log10")
    log1p = _unary("log1p")
    sqrt = _unary("sqrt")
    # mpmath's cbrt(-8) is the complex principal root; numpy's is -2.
    cbrt = _unary("cbrt", lambda ctx, v: -ctx.cbrt(-v) if v < 0 else ctx.cbrt(v))
    sin = _unary("sin")
    cos = _unary("cos")
    tan = _unary("tan")
    arcsin = _unary("arcsin", lambda ctx, v: ctx.asin(v))
    arccos = _unary("arccos", lambda ctx, v: ctx.acos(v))
    arctan = _unary("arctan", lambda ctx, v: ctx.atan(v))
    sinh = _unary("sinh")
    cosh = _unary("cosh")
    tanh = _unary("tanh")
    arcsinh = _unary("arcsinh", lambda ctx, v: ctx.asinh(v))
    arccosh = _unary("arccosh", lambda ctx, v: ctx.acosh(v))
    arctanh = _unary("arctanh", lambda ctx, v: ctx.atanh(v))
    deg2rad = radians = _unary("deg2rad", lambda ctx, v: ctx.radians(v))
    rad2deg = degrees = _unary("rad2deg", lambda ctx, v: ctx.degrees(v))
    fabs = _unary("fabs", lambda ctx, v: abs(v))
    rint = _unary("rint", lambda ctx, v: ctx.nint(v))  # half to even, like np.rint

    def conjugate(self) -> MPFloat:
        """``np.conjugate``: a real number is its own conjugate."""
        return self

    def arctan2(self, other: Real) -> MPFloat:
        """``np.arctan2(self, other)``."""
        ctx = _context(self, other)
        y = ctx.atan2(ctx.make_mpf(self._t), ctx.make_mpf(_operand(other)))
        return _wrap(y._mpf_, ctx)

    def hypot(self, other: Real) -> MPFloat:
        """``np.hypot(self, other)``."""
        ctx = _context(self, other)
        y = ctx.hypot(ctx.make_mpf(self._t), ctx.make_mpf(_operand(other)))
        return _wrap(y._mpf_, ctx)

    def fmod(self, other: Real) -> MPFloat:
        """``np.fmod``: C's remainder, which takes the dividend's sign."""
        ctx = _context(self, other)
        q, r = _divmod(libmp.mpf_abs(self._t), libmp.mpf_abs(_operand(other)), ctx)
        return _wrap(libmp.mpf_neg(r) if self._t[0] else r, ctx)

    def logical_xor(self, other: object) -> bool:
        """``np.logical_xor``: truth values differ."""
        return bool(self) != bool(other)
