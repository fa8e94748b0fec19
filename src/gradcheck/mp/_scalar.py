"""``MPFloat``: a real number at mpmath's working precision that numpy object arrays can use.

numpy runs a ufunc on an object array by calling, element by element, the Python operator
(``+``, ``<``, ``abs``) or a method named after the ufunc (``np.tanh`` calls ``v.tanh()``).
``MPFloat`` provides both, so unmodified numpy code runs at mpmath's working precision.
Turning an ``MPFloat`` into a float is the one thing it refuses: ``__float__`` records the
event and raises :class:`PrecisionLossError`, so a silent drop to 53 bits cannot go unseen.
"""
from __future__ import annotations

import contextvars
import decimal
import functools
import os
import sys
from typing import Any, Callable

import mpmath
import numpy as np
from mpmath import libmp

from ._errors import PrecisionLossError

_ctx = mpmath.mp
_make_mpf = _ctx.make_mpf
_from_int = libmp.from_int
# Constants captured by the function (weights, data) meet MPFloats again at every evaluation.
_from_float = functools.lru_cache(maxsize=1 << 16)(libmp.from_float)

# Events seen by __float__ during an evaluation. A context variable, not a global, so that an
# evaluation sees its own events even when the function under test swallows the exception.
_float_events: contextvars.ContextVar[list[PrecisionLossError] | None] = contextvars.ContextVar(
    "gradcheck_mp_float_events", default=None
)
_SKIP_DIRS = (os.path.dirname(np.__file__) + os.sep, os.path.dirname(__file__) + os.sep)


def exact_mpf(value: Any) -> Any:
    """The exact ``mpmath.mpf`` of a real number, or ``None`` if ``value`` is not one.

    Accepts int, float, numpy and ml_dtypes scalars, ``mpf`` and ``MPFloat``. Nothing is
    rounded, whatever mpmath's working precision: a float64 keeps its 53 bits.

    >>> with mpmath.workdps(5):   # mpmath.mpf(0.1) rounds to 5 digits here; exact_mpf does not
    ...     exact_mpf(0.1) == mpmath.mpf(0.1)
    False
    """
    t = _exact_tuple(value)
    return None if t is None else _make_mpf(t)


def _exact_tuple(value: Any) -> tuple | None:
    if isinstance(value, MPFloat):
        return value._t
    if isinstance(value, float):  # includes np.float64
        return _from_float(value)
    if isinstance(value, (int, np.integer)):  # includes bool
        return _from_int(int(value))
    if isinstance(value, mpmath.mpf):
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


def _wrap(t: tuple) -> MPFloat:
    out = object.__new__(MPFloat)
    out._t = t
    return out


def _to_real_tuple(z: Any) -> tuple:
    """numpy's real-valued semantics: outside a function's real domain the answer is NaN."""
    if isinstance(z, mpmath.mpc):
        return z.real._mpf_ if z.imag == 0 else libmp.fnan
    return z._mpf_


def _caller() -> str:
    """``file:line in function`` of the first frame outside numpy and this package."""
    frame = sys._getframe(2)
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


def _binary(op: Callable[..., tuple]) -> tuple[Callable, Callable]:
    """``__op__`` and ``__rop__`` for an mpf-tuple operation ``op(s, t, prec, rounding)``."""

    def forward(self: MPFloat, other: Any) -> Any:
        o = _operand(other)
        if o is None:
            return NotImplemented
        return _wrap(op(self._t, o, *_ctx._prec_rounding))

    def reverse(self: MPFloat, other: Any) -> Any:
        o = _operand(other)
        if o is None:
            return NotImplemented
        return _wrap(op(o, self._t, *_ctx._prec_rounding))

    return forward, reverse


def _compare(op: Callable[[tuple, tuple], bool]) -> Callable:
    def compare(self: MPFloat, other: Any) -> Any:
        o = _operand(other)
        return NotImplemented if o is None else op(self._t, o)

    return compare


def _unary(fn: Callable[[Any], Any], name: str) -> Callable:
    """The method numpy's object loop calls for ``np.<name>``, computed by mpmath."""

    def method(self: MPFloat) -> MPFloat:
        return _wrap(_to_real_tuple(fn(_make_mpf(self._t))))

    method.__name__ = name
    method.__doc__ = f"``np.{name}`` at the working precision (NaN outside the real domain)."
    return method


def _floordiv(s: tuple, t: tuple, prec: int, rnd: str) -> tuple:
    return _divmod(s, t, prec, rnd)[0]


def _mod(s: tuple, t: tuple, prec: int, rnd: str) -> tuple:
    return _divmod(s, t, prec, rnd)[1]


def _divmod(s: tuple, t: tuple, prec: int, rnd: str) -> tuple[tuple, tuple]:
    """Python's floor division and modulo (the remainder takes the divisor's sign)."""
    a, b = _make_mpf(s), _make_mpf(t)
    if not b:
        raise ZeroDivisionError("MPFloat division by zero")
    q = mpmath.floor(a / b)
    r = a - q * b
    # a / b rounds; when it rounds up onto an integer the remainder comes out of range.
    if r != 0 and (r < 0) != (b < 0):
        q -= 1
        r += b
    return q._mpf_, r._mpf_


def _pow(s: tuple, t: tuple, prec: int, rnd: str) -> tuple:
    sign, man, exp, bits = t
    if not sign and man and exp >= 0 and bits + exp <= 10:
        # A small positive integer exponent (x ** 2): repeated multiplication, any base sign.
        return libmp.mpf_pow_int(s, int(man) << exp, prec, rnd)
    base, exponent = _make_mpf(s), _make_mpf(t)
    if not base and exponent < 0:
        raise ZeroDivisionError("0.0 cannot be raised to a negative power")
    return _to_real_tuple(mpmath.power(base, exponent))


class MPFloat:
    """A real number at mpmath's working precision that numpy object arrays can compute with.

    Construction is exact; arithmetic rounds to ``mpmath.mp.prec`` (scope it with
    :func:`gradcheck.mp.evaluate` or ``mpmath.workdps``). ``float(v)`` raises
    :class:`PrecisionLossError`; use :func:`gradcheck.mp.from_mp` to round deliberately.

    >>> import numpy as np
    >>> with mpmath.workdps(30):
    ...     y = np.tanh(np.array([MPFloat(1), MPFloat(2)], dtype=object))
    ...     print(y[0])
    0.761594155955764888119458282605
    """

    __slots__ = ("_t",)

    def __init__(self, value: Any) -> None:
        t = _exact_tuple(value)
        if t is None:
            if not isinstance(value, str):
                raise TypeError(f"MPFloat needs a real number, got {type(value).__name__}")
            t = libmp.from_str(value, *_ctx._prec_rounding)  # rounds at the working precision
        self._t = t

    @property
    def value(self) -> Any:
        """The exact ``mpmath.mpf``."""
        return _make_mpf(self._t)

    @property
    def _mpf_(self) -> tuple:
        # Lets mpmath functions take an MPFloat directly: mpmath.erf(v), mpmath.fdot(...).
        return self._t

    def __reduce__(self) -> tuple:
        # Pickle the tuple (exact), not a decimal string: process pools must not round.
        return (_wrap, (self._t,))

    # -- display
    def __repr__(self) -> str:
        return f"MPFloat('{libmp.to_str(self._t, _ctx.dps)}')"

    def __str__(self) -> str:
        return libmp.to_str(self._t, _ctx.dps)

    def __format__(self, spec: str) -> str:
        if not spec:
            return str(self)
        # Decimal formats e/f/g specifications from the digits, never through a float.
        return format(decimal.Decimal(libmp.to_str(self._t, _ctx.dps + 3)), spec)

    # -- the refused conversions
    def __float__(self) -> float:
        raise _record("float()")

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

    def __round__(self, ndigits: int | None = None) -> Any:
        if ndigits is None:
            return int(mpmath.nint(self.value))
        scale = mpmath.mpf(10) ** ndigits
        return _wrap((mpmath.nint(self.value * scale) / scale)._mpf_)

    # -- comparisons, truth, hash
    __eq__ = _compare(libmp.mpf_eq)
    __lt__ = _compare(libmp.mpf_lt)
    __le__ = _compare(libmp.mpf_le)
    __gt__ = _compare(libmp.mpf_gt)
    __ge__ = _compare(libmp.mpf_ge)

    def __ne__(self, other: object) -> Any:
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
    __floordiv__, __rfloordiv__ = _binary(_floordiv)
    __mod__, __rmod__ = _binary(_mod)
    __pow__, __rpow__ = _binary(_pow)

    def __divmod__(self, other: Any) -> Any:
        o = _operand(other)
        if o is None:
            return NotImplemented
        q, r = _divmod(self._t, o, *_ctx._prec_rounding)
        return _wrap(q), _wrap(r)

    def __rdivmod__(self, other: Any) -> Any:
        o = _operand(other)
        if o is None:
            return NotImplemented
        q, r = _divmod(o, self._t, *_ctx._prec_rounding)
        return _wrap(q), _wrap(r)

    # -- numpy
    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        # np.float64(2) * v and float_array * v land here: run numpy's object loop on exact
        # object operands instead of letting numpy convert v with float().
        from ._array import apply_ufunc

        return apply_ufunc(ufunc, method, inputs, kwargs)

    # The methods numpy's object loops look up by the ufunc's name.
    exp = _unary(mpmath.exp, "exp")
    exp2 = _unary(lambda v: mpmath.power(2, v), "exp2")
    expm1 = _unary(mpmath.expm1, "expm1")
    log = _unary(mpmath.log, "log")
    log2 = _unary(lambda v: mpmath.log(v, 2), "log2")
    log10 = _unary(mpmath.log10, "log10")
    log1p = _unary(mpmath.log1p, "log1p")
    sqrt = _unary(mpmath.sqrt, "sqrt")
    # mpmath.cbrt(-8) is the complex principal root; numpy's is -2.
    cbrt = _unary(lambda v: -mpmath.cbrt(-v) if v < 0 else mpmath.cbrt(v), "cbrt")
    sin = _unary(mpmath.sin, "sin")
    cos = _unary(mpmath.cos, "cos")
    tan = _unary(mpmath.tan, "tan")
    arcsin = _unary(mpmath.asin, "arcsin")
    arccos = _unary(mpmath.acos, "arccos")
    arctan = _unary(mpmath.atan, "arctan")
    sinh = _unary(mpmath.sinh, "sinh")
    cosh = _unary(mpmath.cosh, "cosh")
    tanh = _unary(mpmath.tanh, "tanh")
    arcsinh = _unary(mpmath.asinh, "arcsinh")
    arccosh = _unary(mpmath.acosh, "arccosh")
    arctanh = _unary(mpmath.atanh, "arctanh")
    deg2rad = radians = _unary(mpmath.radians, "deg2rad")
    rad2deg = degrees = _unary(mpmath.degrees, "rad2deg")
    fabs = _unary(abs, "fabs")
    rint = _unary(mpmath.nint, "rint")  # half to even, like np.rint

    def conjugate(self) -> MPFloat:
        """``np.conjugate``: a real number is its own conjugate."""
        return self

    def arctan2(self, other: Any) -> MPFloat:
        """``np.arctan2(self, other)``."""
        return _wrap(mpmath.atan2(self.value, _make_mpf(_operand(other)))._mpf_)

    def hypot(self, other: Any) -> MPFloat:
        """``np.hypot(self, other)``."""
        return _wrap(mpmath.hypot(self.value, _make_mpf(_operand(other)))._mpf_)

    def fmod(self, other: Any) -> MPFloat:
        """``np.fmod``: C's remainder, which takes the dividend's sign."""
        q, r = _divmod(libmp.mpf_abs(self._t), libmp.mpf_abs(_operand(other)),
                       *_ctx._prec_rounding)
        return _wrap(libmp.mpf_neg(r) if self._t[0] else r)

    def logical_xor(self, other: Any) -> bool:
        """``np.logical_xor``: truth values differ."""
        return bool(self) != bool(other)
