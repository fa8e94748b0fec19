"""Run unmodified numpy code at arbitrary precision, and refuse to trust it if it left mpmath."""
from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, TypeVar

import mpmath
import numpy as np
from numpy.typing import ArrayLike

from ._array import MPArray
from ._context import Context, owned, running
from ._convert import to_mp_in
from ._errors import NotAdjudicable, PrecisionLossError, Reason
from ._scalar import _MPF, MPFloat, _exact_tuple, _float_events, _wrap

_X = TypeVar("_X")  # what f takes: an MPArray, or nothing (a computation closed over its values)

# Exceptions from these packages mean compiled code was handed the object array.
_COMPILED_MODULES = ("numba", "cffi", "ctypes", "_ctypes")


def backend() -> str:
    """mpmath's integer backend: ``"gmpy"`` when gmpy2 is installed (several times faster on
    large precisions), else ``"python"``. mpmath picks it at import; nothing to configure.

    >>> backend() in ("gmpy", "python")
    True
    """
    return str(mpmath.libmp.BACKEND)


def evaluate(f: Callable[[MPArray], object], x: ArrayLike, *, dps: int) -> MPFloat | MPArray:
    """``f(x)`` computed at ``dps`` significant digits: an :class:`MPFloat` or an object array.

    ``x`` is a float array (converted exactly by :func:`to_mp`) or an object array of
    ``MPFloat``; ``f`` receives a private copy. Raises :class:`NotAdjudicable` when the value
    cannot be trusted: ``f`` converted an ``MPFloat`` to float in the middle of the computation
    (a conversion of the value it returns, ``return float(loss)``, is accepted), returned a float, returned nothing computed from ``x``, used an operation with no
    arbitrary-precision form, or produced NaN/inf. Other exceptions from ``f`` propagate.

    The precision belongs to this call: every operation on the ``MPFloat`` values rounds in a
    private mpmath context at ``dps`` digits, so evaluations in concurrent threads (at other
    precisions) and changes of ``mpmath.mp`` cannot alter the result, and mpmath's global
    precision is never touched. mpmath's own functions called directly inside ``f``
    (``mpmath.erf(v)``) round to the global precision instead: take them from
    :func:`gradcheck.mp.context` (``context().erf(v)``), the running computation's context.
    Contractions of exact values (``@``, ``np.sum``, ``np.cumsum``, ... of the inputs) are
    computed exactly by kernels and rounded once (:mod:`gradcheck.mp._exact`).

    >>> import numpy as np
    >>> y = evaluate(lambda v: np.sum(np.exp(v)), np.array([0.0, 1.0]), dps=40)
    >>> mpmath.nstr(y.value, 40)
    '3.718281828459045235360287471352662497757'
    """
    if dps < 1:
        raise ValueError(f"dps must be a positive number of digits; got {dps}")
    with owned(dps) as ctx:
        x_mp = to_mp_in(x, ctx)  # a private copy even of an object array: f may write into it
        return run_checked(f, x_mp, ctx)


def run_checked(f: Callable[[_X], object], x_mp: _X, ctx: Context) -> Any:
    """``f(x_mp)`` computed in the private context ``ctx`` (at its current precision), with
    every way of leaving mpmath detected. The result's values belong to no context."""
    events: list[PrecisionLossError] = []
    token = _float_events.set(events)
    try:
        with running(ctx):
            result = f(x_mp)
    except Exception as exc:  # noqa: BLE001 - classified, re-raised unchanged otherwise
        reason = _classify(exc, events)
        if reason is None:
            raise
        raise reason from exc
    finally:
        _float_events.reset(token)
    if events:
        final = _final_conversion(result, events)
        if final is None:
            raise _float_conversion(events, swallowed=False)
        result = final
    return check_result(result)


def _final_conversion(result: object, events: list[PrecisionLossError]) -> MPFloat | None:
    """The ``MPFloat`` whose conversion ``f`` returned, or None.

    ``return float(loss)`` (or ``loss.item()``, ``np.float64(loss)``) loses nothing the
    referee needs: the value returned is the float64 rounding of the last arbitrary-precision
    scalar, so that scalar is the result. Accepted only when the evaluation saw exactly one
    conversion and ``f`` returned a float64 scalar equal to that conversion's float: any other
    conversion fed the computation. A loss rounded to float16 or float32 on the way out is a
    step function in float; it is refused like a conversion in the middle.
    """
    if len(events) != 1 or events[0].value is None:
        return None
    if isinstance(result, np.ndarray) and result.ndim == 0 and result.dtype == np.float64:
        result = result[()]
    if not isinstance(result, float):  # a Python float or np.float64, nothing narrower
        return None
    rounded = events[0].rounded
    if rounded is None or not (rounded == result or (np.isnan(rounded) and np.isnan(result))):
        return None
    return events[0].value  # type: ignore[return-value]


def _float_conversion(events: list[PrecisionLossError], swallowed: bool) -> NotAdjudicable:
    first = events[0]
    caught = " (f caught the error and went on)" if swallowed else ""
    more = f" (and {len(events) - 1} more)" if len(events) > 1 else ""
    return NotAdjudicable(
        Reason.FLOAT_CONVERSION,
        f"{first.operation} at {first.where}{more}{caught}: the computation left arbitrary "
        "precision in the middle (only a conversion of the value f returns, as in "
        "'return float(loss)', is accepted). Keep it in numpy (np.tanh, not math.tanh; no "
        "astype(float), float() on intermediate values, .ctypes, np.asarray(..., dtype=float))",
    )


def _classify(exc: Exception, events: list[PrecisionLossError]) -> NotAdjudicable | None:
    if events or isinstance(exc, PrecisionLossError):
        return _float_conversion(events or [exc], swallowed=False)  # type: ignore[list-item]
    if isinstance(exc, ZeroDivisionError):
        return NotAdjudicable(Reason.NONFINITE, f"division by zero ({exc}); in float it is inf/nan")
    module = type(exc).__module__.split(".")[0]
    if isinstance(exc, TypeError) or module in _COMPILED_MODULES:
        return NotAdjudicable(
            Reason.UNSUPPORTED_OPERATION,
            f"f cannot run on arbitrary-precision numbers: an operation{_where(exc)} accepts only machine "
            f"floats ({type(exc).__name__}: {exc}). Only numpy code (np.sin, @, sum, indexing) runs at "
            "arbitrary precision; a cast (astype to float32, float16 or bfloat16), math.*, numba, C or "
            "scipy does not",
        )
    return None


def _where(exc: BaseException) -> str:
    """`` at file.py:12 (in f)``: the last frame of the user's code in ``exc``'s traceback
    (not gradcheck's, not numpy's), or "" when there is none."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # gradcheck/
    numpy_dir = os.path.dirname(os.path.abspath(np.__file__)) + os.sep
    found = ""
    tb = exc.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        path = os.path.abspath(code.co_filename)
        if not path.startswith((here, numpy_dir)):
            found = f" at {os.path.basename(path)}:{tb.tb_lineno} (in {code.co_name})"
        tb = tb.tb_next
    return found


def check_result(result: object) -> MPFloat | MPArray:
    """The result as ``MPFloat`` or ``MPArray``, or ``NotAdjudicable`` if it is not high precision.

    Exact constants among ``MPFloat`` elements (the ``0.0`` of ``np.maximum(x, 0.0)``) are kept,
    converted exactly; a result holding no ``MPFloat`` at all did not come from ``x``.
    """
    if isinstance(result, MPFloat):
        return _finite(result, ())
    if isinstance(result, _MPF):
        return _finite(MPFloat(result), ())
    if isinstance(result, (float, np.floating)):
        raise NotAdjudicable(
            Reason.FLOAT_RESULT,
            f"f returned a {type(result).__name__}, not an MPFloat: somewhere the computation "
            "left arbitrary precision without calling float() (compiled code, a float copy)",
        )
    if isinstance(result, (list, tuple)):
        result = np.asarray(result, dtype=object)
    if not isinstance(result, np.ndarray):
        raise NotAdjudicable(
            Reason.RESULT_NOT_MP, f"f returned {type(result).__name__}, not an MPFloat or an array"
        )
    if result.dtype != object:
        reason = Reason.FLOAT_RESULT if result.dtype.kind in "fV" else Reason.RESULT_NOT_MP
        raise NotAdjudicable(
            reason,
            f"f returned a {result.dtype} array, not an object array of MPFloat: the values were "
            "computed outside arbitrary precision (written into np.zeros(...), a float copy)",
        )
    flat = result.reshape(-1)
    if flat.size and not any(isinstance(v, (MPFloat, _MPF)) for v in flat):
        raise NotAdjudicable(
            Reason.RESULT_NOT_MP,
            "no element of the result is an MPFloat: f did not compute from its argument "
            "(does it read a captured float copy of x?)",
        )
    out = np.empty(result.shape, dtype=object)
    out_flat = out.reshape(-1)
    for k, v in enumerate(flat):
        t = _exact_tuple(v)
        if t is None:
            raise NotAdjudicable(
                Reason.RESULT_NOT_MP,
                f"element {tuple(int(i) for i in np.unravel_index(k, result.shape))} of the result is a "
                f"{type(v).__name__}, not a real number",
            )
        out_flat[k] = _finite(_wrap(t), np.unravel_index(k, result.shape))
    return out.view(MPArray)


def _finite(v: MPFloat, index: tuple) -> MPFloat:
    if not mpmath.isfinite(v.value):
        where = f" at index {tuple(int(i) for i in index)}" if index else ""
        raise NotAdjudicable(Reason.NONFINITE, f"f returned {v}{where}")
    return v
