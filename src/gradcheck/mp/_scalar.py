"""``MPFloat``: an ``mpmath.mpf`` that numpy's object-dtype loops can compute with.

numpy runs a ufunc on an object array by calling, element by element, the Python operator
(``+``, ``<``, ``abs``) or a method named after the ufunc (``np.tanh`` calls ``v.tanh()``).
``MPFloat`` provides both, so unmodified numpy code runs at mpmath's working precision.
Turning an ``MPFloat`` into a float is the one thing it refuses: ``__float__`` records the
event and raises :class:`PrecisionLossError`, so a silent drop to 53 bits cannot go unseen.
"""
from __future__ import annotations

import contextvars
import decimal
import os
import sys
from typing import Any

import mpmath
import numpy as np
from mpmath import libmp

from ._errors import PrecisionLossError

_mpf = mpmath.mpf
_mpc = mpmath.mpc
_make_mpf = mpmath.mp.make_mpf
_NAN = mpmath.mpf("nan")

# Events seen by __float__ during an evaluation. A context variable (not a global) so that
# an evaluation sees its own events even if the function under test swallows the exception.
_float_events: contextvars.ContextVar[list[PrecisionLossError] | None] = contextvars.ContextVar(
    "gradcheck_mp_float_events", default=None
)
_SKIP_DIRS = (os.path.dirname(np.__file__), os.path.dirname(__file__))


def _caller() -> str:
    """``file:line`` of the first frame outside numpy and this package: the line to fix."""
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename.startswith(_SKIP_DIRS):
        frame = frame.f_back
    if frame is None:
        return "<unknown>"
    return f"{frame.f_code.co_filename}:{frame.f_lineno} in {frame.f_code.co_name}"


def exact_mpf(value: Any) -> Any:
    """The exact ``mpf`` of a real number (int, float, numpy or ml_dtypes scalar, ``MPFloat``).

    No rounding happens, whatever mpmath's working precision: a float64 keeps its 53 bits.
    Returns ``None`` for anything that is not a real number.

    >>> exact_mpf(0.1) == mpmath.mpf(0.1)
    True
    """
    if isinstance(value, MPFloat):
        return value._v
    if isinstance(value, float):  # includes np.float64
        return _make_mpf(libmp.from_float(value))
    if isinstance(value, (int, np.integer)):  # includes bool
        return _make_mpf(libmp.from_int(int(value)))
    if isinstance(value, _mpf):
        return value
    if isinstance(value, np.longdouble):
        # float() would round the 64-bit mantissa; the ratio is exact (a power-of-two denominator).
        num, den = value.as_integer_ratio()
        return _make_mpf(libmp.from_man_exp(num, -(den.bit_length() - 1)))
    if isinstance(value, (np.floating, np.bool_)) or _is_ml_dtypes(value):
        # float16, float32, bfloat16, float8: every value is a float64 value.
        return _make_mpf(libmp.from_float(float(value)))
    return None


def _is_ml_dtypes(value: Any) -> bool:
    return isinstance(value, np.generic) and type(value).__module__.startswith("ml_dtypes")


def _real(z: Any) -> Any:
    """numpy's real-valued semantics: outside a function's real domain the answer is NaN."""
    if isinstance(z, _mpc):
        return z.real if z.imag == 0 else _NAN
    return z


def _wrap(v: Any) -> MPFloat:
    out = object.__new__(MPFloat)
    out._v = v
    return out


def _operand(other: Any) -> Any:
    """The mpf to combine with, or ``None`` (then the operator returns NotImplemented)."""
    if type(other) is MPFloat:
        return other._v
    if type(other) is float or type(other) is int:
        return other  # mpmath converts these exactly
    return exact_mpf(other)


class MPFloat:
    """A real number at mpmath's working precision that numpy object arrays can compute with.

    Arithmetic rounds to ``mpmath.mp.prec`` (scope it with :func:`gradcheck.mp.evaluate`);
    construction is exact. ``float(v)`` raises :class:`PrecisionLossError`.

    >>> import numpy as np
    >>> with mpmath.workdps(30):
    ...     y = np.tanh(np.array([MPFloat(1), MPFloat(2)], dtype=object))
    >>> str(y[0])
    '0.761594155955764888119458282605'
    """

    __slots__ = ("_v",)
    # Higher than ndarray's so that numpy's own binary operators defer to us where they look.
    __array_priority__ = 1000.0

    def __init__(self, value: Any) -> None:
        v = exact_mpf(value)
        if v is None:
            if isinstance(value, str):
                v = _mpf(value)  # a decimal string rounds at the working precision
            else:
                raise TypeError(f"MPFloat needs a real number, got {type(value).__name__}")
        self._v = v

    @property
    def value(self) -> Any:
        """The wrapped ``mpmath.mpf``."""
        return self._v

    @property
    def _mpf_(self) -> tuple:
        # Lets mpmath functions (mpmath.erf(v), mpmath.fdot) take an MPFloat directly.
        return self._v._mpf_

    # -- display ---------------------------------------------------------------------------
    def __repr__(self) -> str:
        return f"MPFloat('{mpmath.nstr(self._v, mpmath.mp.dps)}')"

    def __str__(self) -> str:
        return mpmath.nstr(self._v, mpmath.mp.dps)

    def __format__(self, spec: str) -> str:
        # Decimal formats e/f/g specs from the digits themselves, never through a float.
        return format(decimal.Decimal(mpmath.nstr(self._v, mpmath.mp.dps + 3)), spec)

    # -- the refused conversion --------------------------------------------------------------
    def __float__(self) -> float:
        raise _record("float()")

    def __complex__(self) -> complex:
        raise _record("complex()")

    # Integer conversions are exact (truncation, floor, ceil): piecewise-constant, no loss.
    def __int__(self) -> int:
        return int(self._v)

    def __trunc__(self) -> int:
        return int(self._v)

    def __floor__(self) -> int:
        return int(mpmath.floor(self._v))

    def __ceil__(self) -> int:
        return int(mpmath.ceil(self._v))

    def __round__(self, ndigits: int | None = None) -> Any:
        if ndigits is None:
            return int(mpmath.nint(self._v))
        scale = _mpf(10) ** ndigits
        return _wrap(mpmath.nint(self._v * scale) / scale)

    # -- comparisons, truth, hash -----------------------------------------------------------
    def __eq__(self, other: object) -> Any:
        o = _operand(other)
        return NotImplemented if o is None else self._v == o

    def __ne__(self, other: object) -> Any:
        o = _operand(other)
        return NotImplemented if o is None else self._v != o

    def __lt__(self, other: Any) -> Any:
        o = _operand(other)
        return NotImplemented if o is None else self._v < o

    def __le__(self, other: Any) -> Any:
        o = _operand(other)
        return NotImplemented if o is None else self._v <= o

    def __gt__(self, other: Any) -> Any:
        o = _operand(other)
        return NotImplemented if o is None else self._v > o

    def __ge__(self, other: Any) -> Any:
        o = _operand(other)
        return NotImplemented if o is None else self._v >= o

    def __bool__(self) -> bool:
        return bool(self._v)

    def __hash__(self) -> int:
        return hash(self._v)  # equal to hash(float) for values a float can hold

    # -- arithmetic -------------------------------------------------------------------------
    def __neg__(self) -> MPFloat:
        return _wrap(-self._v)

    def __pos__(self) -> MPFloat:
        return self

    def __abs__(self) -> MPFloat:
        return _wrap(abs(self._v))

    def __add__(self, other: Any) -> Any:
        o = _operand(other)
        return NotImplemented if o is None else _wrap(self._v + o)

    def __radd__(self, other: Any) -> Any:
        o = _operand(other)
        return NotImplemented if o is None else _wrap(o + self._v)

    def __sub__(self, other: Any) -> Any:
        o = _operand(other)
        return NotImplemented if o is None else _wrap(self._v - o)

    def __rsub__(self, other: Any) -> Any:
        o = _operand(other)
        return NotImplemented if o is None else _wrap(o - self._v)

    def __mul__(self, other: Any) -> Any:
        o = _operand(other)
        return NotImplemented if o is None else _wrap(self._v * o)

    def __rmul__(self, other: Any) -> Any:
        o = _operand(other)
        return NotImplemented if o is None else _wrap(o * self._v)

    def __truediv__(self, other: Any) -> Any:
        o = _operand(other)
        return NotImplemented if o is None else _wrap(self._v / o)

    def __rtruediv__(self, other: Any) -> Any:
        o = _operand(other)
        return NotImplemented if o is None else _wrap(o / self._v)

    def __floordiv__(self, other: Any) -> Any:
        o = _operand(other)
        return NotImplemented if o is None else _wrap(_divmod(self._v, o)[0])

    def __rfloordiv__(self, other: Any) -> Any:
        o = _operand(other)
        return NotImplemented if o is None else _wrap(_divmod(o, self._v)[0])

    def __mod__(self, other: Any) -> Any:
        o = _operand(other)
        return NotImplemented if o is None else _wrap(_divmod(self._v, o)[1])

    def __rmod__(self, other: Any) -> Any:
        o = _operand(other)
        return NotImplemented if o is None else _wrap(_divmod(o, self._v)[1])

    def __divmod__(self, other: Any) -> Any:
        o = _operand(other)
        if o is None:
            return NotImplemented
        q, r = _divmod(self._v, o)
        return _wrap(q), _wrap(r)

    def __rdivmod__(self, other: Any) -> Any:
        o = _operand(other)
        if o is None:
            return NotImplemented
        q, r = _divmod(o, self._v)
        return _wrap(q), _wrap(r)

    def __pow__(self, other: Any) -> Any:
        o = _operand(other)
        return NotImplemented if o is None else _wrap(_power(self._v, o))

    def __rpow__(self, other: Any) -> Any:
        o = _operand(other)
        return NotImplemented if o is None else _wrap(_power(o, self._v))

    # -- numpy: scalar ufunc calls and the methods object loops look up ---------------------
    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        # np.float64(2) * v or float_array * v lands here: run numpy's object loop on exact
        # object operands instead of letting numpy try float(v).
        args = [_as_object_operand(a) for a in inputs]
        return getattr(ufunc, method)(*args, **kwargs)

    def exp(self) -> MPFloat:
        return _wrap(mpmath.exp(self._v))

    def exp2(self) -> MPFloat:
        return _wrap(mpmath.power(2, self._v))

    def expm1(self) -> MPFloat:
        return _wrap(mpmath.expm1(self._v))

    def log(self) -> MPFloat:
        return _wrap(_real(mpmath.log(self._v)))

    def log2(self) -> MPFloat:
        return _wrap(_real(mpmath.log(self._v, 2)))

    def log10(self) -> MPFloat:
        return _wrap(_real(mpmath.log10(self._v)))

    def log1p(self) -> MPFloat:
        return _wrap(_real(mpmath.log1p(self._v)))

    def sqrt(self) -> MPFloat:
        return _wrap(_real(mpmath.sqrt(self._v)))

    def cbrt(self) -> MPFloat:
        # mpmath.cbrt(-8) is the complex principal root; numpy's is -2.
        root = mpmath.cbrt(abs(self._v))
        return _wrap(-root if self._v < 0 else root)

    def sin(self) -> MPFloat:
        return _wrap(mpmath.sin(self._v))

    def cos(self) -> MPFloat:
        return _wrap(mpmath.cos(self._v))

    def tan(self) -> MPFloat:
        return _wrap(mpmath.tan(self._v))

    def arcsin(self) -> MPFloat:
        return _wrap(_real(mpmath.asin(self._v)))

    def arccos(self) -> MPFloat:
        return _wrap(_real(mpmath.acos(self._v)))

    def arctan(self) -> MPFloat:
        return _wrap(mpmath.atan(self._v))

    def sinh(self) -> MPFloat:
        return _wrap(mpmath.sinh(self._v))

    def cosh(self) -> MPFloat:
        return _wrap(mpmath.cosh(self._v))

    def tanh(self) -> MPFloat:
        return _wrap(mpmath.tanh(self._v))

    def arcsinh(self) -> MPFloat:
        return _wrap(mpmath.asinh(self._v))

    def arccosh(self) -> MPFloat:
        return _wrap(_real(mpmath.acosh(self._v)))

    def arctanh(self) -> MPFloat:
        return _wrap(_real(mpmath.atanh(self._v)))

    def deg2rad(self) -> MPFloat:
        return _wrap(mpmath.radians(self._v))

    radians = deg2rad

    def rad2deg(self) -> MPFloat:
        return _wrap(mpmath.degrees(self._v))

    degrees = rad2deg

    def fabs(self) -> MPFloat:
        return _wrap(abs(self._v))

    def rint(self) -> MPFloat:
        return _wrap(mpmath.nint(self._v))  # half to even, like np.rint

    def conjugate(self) -> MPFloat:
        return self

    def arctan2(self, other: Any) -> MPFloat:
        return _wrap(mpmath.atan2(self._v, exact_mpf(other)))

    def hypot(self, other: Any) -> MPFloat:
        return _wrap(mpmath.hypot(self._v, exact_mpf(other)))


def _record(operation: str) -> PrecisionLossError:
    error = PrecisionLossError(operation, where=_caller())
    events = _float_events.get()
    if events is not None:
        events.append(error)
    return error


def _divmod(a: Any, b: Any) -> tuple[Any, Any]:
    """Python's floor division and modulo (result takes the divisor's sign), as numpy does."""
    q = mpmath.floor(a / b)
    r = a - q * b
    # a / b rounds: when it rounds up onto an integer the remainder comes out of range.
    if r != 0 and (r < 0) != (b < 0):
        q -= 1
        r += b
    return q, r


def _power(a: Any, b: Any) -> Any:
    if a == 0 and b < 0:
        raise ZeroDivisionError("0.0 cannot be raised to a negative power")
    return _real(mpmath.power(a, b))


def _as_object_operand(a: Any) -> Any:
    """An operand numpy can put through its object loop without converting it to float."""
    if isinstance(a, MPFloat):
        # A 0-d object array: passing the MPFloat itself would dispatch back to us forever.
        box = np.empty((), dtype=object)
        box[()] = a
        return box
    if isinstance(a, np.ndarray):
        if a.dtype == object:
            return a
        if a.dtype == np.longdouble and np.finfo(np.longdouble).nmant > 52:
            # astype(object) keeps np.longdouble scalars, which would come straight back here.
            return np.frompyfunc(MPFloat, 1, 1)(a)
        return a.astype(object)  # float16/32/64 and ml_dtypes become exact Python floats
    converted = exact_mpf(a)
    return a if converted is None or isinstance(a, (int, float)) else _wrap(converted)
