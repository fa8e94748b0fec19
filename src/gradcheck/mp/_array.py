"""``MPArray``: an object array of ``MPFloat`` that also runs the ufuncs with no object loop.

numpy 2.4 has no object-dtype loop for ``isfinite``, ``isnan``, ``isinf``, ``signbit``,
``copysign``, ``heaviside``, ``logaddexp``, ``logaddexp2``, ``float_power``, ``divmod``, ``modf``,
``ldexp`` and ``frexp``: on a plain object array they raise ``TypeError``. ``MPArray`` intercepts
ufuncs and numpy functions, computes those elementwise with mpmath, and keeps its type through
numpy functions so the next operation is intercepted too. ``spacing`` and ``nextafter`` stay
unsupported on purpose: they are questions about float64, with no arbitrary-precision answer.
``.ctypes`` is refused (recorded like ``float()``): C code would read object pointers as
doubles. Python 3.11 gives no hook to refuse the buffer protocol (``memoryview``,
``ffi.from_buffer``); a kernel reached that way returns a float, which the result check catches.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NoReturn, SupportsInt

import numpy as np
from mpmath import libmp
from numpy.typing import ArrayLike

from ._complex import MPComplex, _parts_of
from ._context import GLOBAL, Context, Mpf
from ._context import active as _active
from ._errors import PrecisionLossError
from ._exact import intercept, vocabulary_params
from ._scalar import MPFloat, Real, _exact_tuple, _record, _wrap
from ._vocabulary import name_of


class MPArray(np.ndarray):
    """An object ndarray of :class:`MPFloat`, made by :func:`gradcheck.mp.to_mp`.

    It behaves as any object array; in addition ufuncs without an object loop work on it.

    >>> import numpy as np
    >>> from gradcheck.mp import to_mp
    >>> x = to_mp(np.array([0.0, 1.0]), dps=30)
    >>> bool(np.isfinite(np.logaddexp(x, x)).all())
    True
    """

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: object, **kwargs: Any) -> object:
        exact = _exactly(ufunc, method, inputs, kwargs)
        if exact is not None:
            return exact
        return apply_ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func: Callable, types: tuple, args: tuple, kwargs: dict) -> object:
        exact = _exactly(func, "__call__", args, kwargs)
        if exact is not None:
            return exact
        # Keep the type through np.einsum, np.where, np.concatenate, ... so that the ufuncs
        # applied to their results are intercepted too.
        return _as_mparray(super().__array_function__(func, types, args, kwargs))

    @property  # type: ignore[misc]  # read-only on purpose: the parts of exact complex values
    def real(self) -> np.ndarray:
        """The real parts: the array itself when it holds real numbers only; for
        :class:`~gradcheck.mp.MPComplex` elements, their real parts (numpy's object arrays
        would return the complex elements themselves)."""
        if not _holds_complex(self):
            return self
        return complex_parts(self)[0]

    @property  # type: ignore[misc]  # read-only, like real
    def imag(self) -> np.ndarray:
        """The imaginary parts (exact zeros for real elements; numpy's object arrays give
        zeros even for complex elements)."""
        return complex_parts(self)[1]

    @property
    def ctypes(self) -> NoReturn:
        """Refused: C code given this pointer would read object pointers as doubles."""
        raise _record(".ctypes (a raw pointer for C code)")


def _holds_complex(a: np.ndarray) -> bool:
    return any(isinstance(v, (MPComplex, complex, np.complexfloating)) for v in a.reshape(-1))


def _exactly(func: Callable, method: str, args: tuple, kwargs: dict) -> object:
    """A contraction computed by the exact kernels (:mod:`gradcheck.mp._exact`), or None."""
    name = name_of(func, method)
    parsed = None if name is None else vocabulary_params(name, args, kwargs)
    if parsed is None:
        return None
    operands, params = parsed
    firsts = [o.reshape(-1)[0] for o in operands
              if isinstance(o, np.ndarray) and o.dtype == object and o.size]
    return _as_mparray(intercept(name, tuple(operands), params, _context_of(*firsts)))


def _context_of(*values: object) -> Context:
    """The context an elementwise operation on ``values`` rounds to (see ``_context.py``)."""
    ctx = _active()
    if ctx is None:
        ctx = next((v._ctx for v in values if type(v) is MPFloat and v._ctx), None) or GLOBAL
    return ctx


def _num(v: Real, ctx: Context) -> Mpf:
    return ctx.make_mpf(_exact_tuple_or_raise(v))


def _exact_tuple_or_raise(v: object) -> tuple:
    t = _exact_tuple(v)
    if t is None:
        raise TypeError(f"expected a real number, got {type(v).__name__}")
    return t


def _mp(value: Mpf, ctx: Context) -> MPFloat:
    return _wrap(value._mpf_, ctx)


def _as_mpfloat(v: Real) -> MPFloat:
    """``v`` itself if it is an MPFloat (keeping its context), else its exact MPFloat."""
    return v if type(v) is MPFloat else MPFloat(v)


def _signbit(v: Real) -> bool:
    if isinstance(v, float):
        return math.copysign(1.0, v) < 0  # the sign of -0.0, which mpmath has no notion of
    t = _exact_tuple(v)
    return t is not None and t != libmp.fnan and t[0] == 1


def _copysign(a: Real, b: Real) -> MPFloat:
    ctx = _context_of(a, b)
    magnitude = abs(_num(a, ctx))
    return _mp(-magnitude if _signbit(b) else magnitude, ctx)


def _heaviside(x: Real, at_zero: Real) -> MPFloat:
    ctx = _context_of(x, at_zero)
    v = _num(x, ctx)
    if ctx.isnan(v):
        return _mp(v, ctx)
    return _mp(_num(at_zero, ctx) if v == 0 else ctx.mpf(int(v > 0)), ctx)


def _logaddexp(a: Real, b: Real, base: int | None = None) -> MPFloat:
    ctx = _context_of(a, b)
    x, y = _num(a, ctx), _num(b, ctx)
    hi, lo = (x, y) if x >= y else (y, x)
    if ctx.isinf(hi) or ctx.isnan(lo):
        return _mp(hi if not ctx.isnan(lo) else lo, ctx)
    if base is None:
        return _mp(hi + ctx.log1p(ctx.exp(lo - hi)), ctx)
    return _mp(hi + ctx.log1p(ctx.power(base, lo - hi)) / ctx.log(base), ctx)


def _divmod(a: Real, b: Real) -> tuple[MPFloat, MPFloat]:
    return divmod(_as_mpfloat(a), _as_mpfloat(b))


def _modf(x: Real) -> tuple[MPFloat, MPFloat]:
    v = _as_mpfloat(x)
    whole = _wrap(libmp.from_int(int(v)), v._ctx)
    return v - whole, whole


def _ldexp(x: Real, n: SupportsInt) -> MPFloat:
    v = _as_mpfloat(x)
    return _wrap(libmp.mpf_shift(v._t, int(n)), v._ctx)


def _frexp(x: Real) -> tuple[MPFloat, int]:
    v = _as_mpfloat(x)
    t = v._t
    if not t[1]:
        return v, 0
    exponent = t[2] + t[3]  # value = man * 2**exp with man of bc bits: mantissa in [0.5, 1)
    return _wrap(libmp.mpf_shift(t, -exponent), v._ctx), exponent


def _is(test: str) -> Callable[[Real], bool]:
    """``np.isnan`` and friends: exact questions, at no precision."""
    return lambda v: bool(getattr(GLOBAL, test)(GLOBAL.make_mpf(_exact_tuple_or_raise(v))))


# ufunc -> (elementwise implementation, outputs that numpy types as bool)
_MISSING: dict[np.ufunc, tuple[Callable, bool]] = {
    np.isfinite: (_is("isfinite"), True),
    np.isnan: (_is("isnan"), True),
    np.isinf: (_is("isinf"), True),
    np.signbit: (_signbit, True),
    np.copysign: (_copysign, False),
    np.heaviside: (_heaviside, False),
    np.logaddexp: (_logaddexp, False),
    np.logaddexp2: (lambda a, b: _logaddexp(a, b, 2), False),
    np.float_power: (lambda a, b: _as_mpfloat(a) ** _as_mpfloat(b), False),
    np.divmod: (_divmod, False),
    np.modf: (_modf, False),
    np.ldexp: (_ldexp, False),
    np.frexp: (_frexp, False),
}
_ELEMENTWISE = {
    ufunc: (np.frompyfunc(fn, ufunc.nin, ufunc.nout), as_bool)
    for ufunc, (fn, as_bool) in _MISSING.items()
}


def apply_ufunc(ufunc: np.ufunc, method: str, inputs: tuple, kwargs: dict) -> object:
    """Run ``ufunc.method`` on object operands, never converting an ``MPFloat`` to float.

    Used by ``MPFloat.__array_ufunc__`` and ``MPArray.__array_ufunc__``.
    """
    args = [_object_operand(a) for a in inputs]
    if "out" in kwargs:
        kwargs["out"] = tuple(np.asarray(o) if isinstance(o, MPArray) else o for o in kwargs["out"])
    if ufunc in _ELEMENTWISE:
        elementwise, as_bool = _ELEMENTWISE[ufunc]
        args = [a.astype(object) if isinstance(a, np.ndarray) else a for a in args]
        result = getattr(elementwise, method)(*args, **kwargs)
        if as_bool:
            result = np.asarray(result, dtype=bool)[()]
        elif ufunc is np.frexp:
            mantissa, exponent = result
            result = (mantissa, np.asarray(exponent, dtype=np.intc)[()])
        return _as_mparray(result)
    try:
        return _as_mparray(getattr(ufunc, method)(*args, **kwargs))
    except PrecisionLossError:
        raise
    except TypeError:
        # A constant among the elements (the 0.0 of np.maximum(x, 0.0)) has no .exp() method:
        # make every number an MPFloat, exactly, and try once more.
        if "out" in kwargs:
            raise
        normalized = [_normalize(a) for a in args]
        return _as_mparray(getattr(ufunc, method)(*normalized, **kwargs))


def _scalar_array_ufunc(self: MPFloat, ufunc: np.ufunc, method: str, *inputs: object,
                        **kwargs: Any) -> object:
    """``MPFloat.__array_ufunc__``."""
    # np.float64(2) * v and float_array * v land here: run numpy's object loop on exact
    # object operands instead of letting numpy convert v with float().
    return apply_ufunc(ufunc, method, inputs, kwargs)


# MPFloat's numpy hook lives here, beside apply_ufunc, so that _scalar need not import this
# module (which imports it): installed when gradcheck.mp is imported, before any MPFloat exists.
MPFloat.__array_ufunc__ = _scalar_array_ufunc  # type: ignore[method-assign]
MPComplex.__array_ufunc__ = _scalar_array_ufunc  # type: ignore[attr-defined]


def _object_operand(a: object) -> object:
    """An operand numpy puts through its object loop without ever calling ``float()`` on it."""
    if isinstance(a, (MPFloat, MPComplex)):
        # A 0-d object array: passing the MPFloat itself would dispatch back to it forever.
        box = np.empty((), dtype=object)
        box[()] = a
        return box
    if isinstance(a, np.ndarray):
        if type(a) is not np.ndarray:
            a = a.view(np.ndarray)
        if a.dtype == np.longdouble and np.finfo(np.longdouble).nmant > 52:
            # astype(object) would keep np.longdouble scalars, which come straight back here.
            return _to_mpfloat(a)
        return a
    if isinstance(a, np.generic) and _exact_tuple(a) is not None:
        return MPFloat(a)
    return a


_to_mpfloat = np.frompyfunc(lambda v: v if isinstance(v, (MPFloat, MPComplex)) else _maybe_mp(v), 1, 1)


def _maybe_mp(v: object) -> object:
    if isinstance(v, (complex, np.complexfloating)):
        return MPComplex(v)  # a complex constant meets an MPFloat: exactly, as an MPComplex
    t = _exact_tuple(v)
    return v if t is None else _wrap(t)


def _normalize(a: object) -> object:
    if isinstance(a, np.ndarray) and a.dtype == object:
        return _to_mpfloat(a)
    if isinstance(a, (int, float, np.generic)):
        return _maybe_mp(a)
    return a


def _as_mparray(result: object) -> object:
    if isinstance(result, tuple):
        return tuple(_as_mparray(r) for r in result)
    if isinstance(result, list):
        return [_as_mparray(r) for r in result]
    if type(result) is np.ndarray and result.dtype == object:
        return result.view(MPArray)
    return result


def complex_from_parts(re: ArrayLike, im: ArrayLike) -> np.ndarray:
    """The object array (an ``MPArray``) of :class:`MPComplex` ``re + i im``, elementwise;
    ``re`` and ``im`` hold MPFloat (or any real numbers, taken exactly).

    >>> z = complex_from_parts(np.array([MPFloat(1)]), np.array([MPFloat(-2)]))
    >>> z.dtype, type(z[0]).__name__, print(z.imag[0])
    -2.0
    (dtype('O'), 'MPComplex', None)
    """
    re, im = np.broadcast_arrays(np.asarray(re, dtype=object), np.asarray(im, dtype=object))
    out = np.empty(re.shape, dtype=object)
    flat, r, i = out.reshape(-1), re.reshape(-1), im.reshape(-1)
    for k in range(flat.size):
        flat[k] = MPComplex(r[k], i[k])
    return out.view(MPArray)


def complex_parts(a: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """``(real parts, imaginary parts)`` of an object array of MPComplex, MPFloat and
    Python numbers (real numbers have imaginary part 0), as ``MPArray`` of MPFloat; exact."""
    arr = np.asarray(a, dtype=object)
    re, im = np.empty(arr.shape, dtype=object), np.empty(arr.shape, dtype=object)
    fr, fi, src = re.reshape(-1), im.reshape(-1), arr.reshape(-1)
    for k in range(src.size):
        v = src[k]
        parts = _parts_of(v)
        if parts is None:
            raise TypeError(f"element {k} is a {type(v).__name__}, not a number")
        ctx = v._ctx if type(v) in (MPFloat, MPComplex) else None
        fr[k], fi[k] = _wrap(parts[0], ctx), _wrap(parts[1], ctx)
    return re.view(MPArray), im.view(MPArray)
