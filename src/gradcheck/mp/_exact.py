"""Exact kernels inside arbitrary-precision evaluations.

Two ways a definition's contractions (:mod:`gradcheck.mp._vocabulary`: ``@``, ``np.dot``,
``np.einsum``, ``np.sum``, ``np.cumsum``, ``np.convolve``, ...) reach the exact kernels:

* **On MPArrays** (:func:`intercept`, called by ``MPArray``'s numpy hooks): when a
  contraction has :data:`INTERCEPT_FROM` operand entries or more and every operand holds
  values that float64 holds exactly (inputs in bfloat16, float16,
  float32 or float64, and exact constants), the contraction is computed exactly by the
  kernels and rounded once to the computation's precision, instead of element by element
  at that precision (which also rounds every product and partial sum). Anything else
  (values computed at arbitrary precision, ``MPVar`` of a gradient) goes the ordinary way.
* **The probe** (:func:`probe`): a definition made only of contractions of its inputs and
  of exact rearrangements (indexing, reshapes, transposes, concatenation, negation) runs on
  :class:`Exact` stand-ins without any element becoming a Python object: the kernels see
  the inputs' float64 arrays directly. Any other operation abandons the probe, and the
  caller evaluates the definition on MPArrays instead. The probe also returns each
  output's sensitivity to a relative perturbation of the inputs, from the same
  contraction on magnitudes (:func:`gradcheck.mp._vocabulary.sensitivity`).

:func:`disabled` turns both off for the current thread (to time or cross-check the path
without kernels).
"""
from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator, Sequence
from types import EllipsisType
from typing import Any, SupportsIndex

import numpy as np
from mpmath import libmp
from numpy.typing import ArrayLike, DTypeLike

from ._context import Context
from ._exactsum import components_for
from ._scalar import MPFloat, _exact_tuple, _wrap
from ._vocabulary import components, name_of, sensitivity

#: A shape (``reshape``) and an axis argument (``sum``, ``squeeze``), as numpy takes them.
ShapeLike = SupportsIndex | Sequence[SupportsIndex]
Axis = SupportsIndex | tuple[SupportsIndex, ...] | None
#: One component of an index, and an index.
_KeyPart = SupportsIndex | slice | EllipsisType | np.ndarray | None
Key = _KeyPart | tuple[_KeyPart, ...]

#: Contractions of fewer operand entries stay on numpy's object loop (a few hundred
#: microseconds at most), so that a small arbitrary-precision evaluation (the referee's) never
#: waits for numba to load.
INTERCEPT_FROM = 4096

_enabled: contextvars.ContextVar[bool] = contextvars.ContextVar("gradcheck_mp_exact_kernels",
                                                                default=True)
_from_float = libmp.from_float


@contextlib.contextmanager
def disabled() -> Iterator[None]:
    """No exact kernels in arbitrary-precision evaluations of this thread, in the block."""
    token = _enabled.set(False)
    try:
        yield
    finally:
        _enabled.reset(token)


def enabled() -> bool:
    """Whether contractions may use the exact kernels here."""
    return _enabled.get()


# -- conversions -----------------------------------------------------------------------------


def as_float64(a: object) -> np.ndarray | None:
    """``a`` as a float64 array holding exactly its values, or None when float64 cannot
    (values with more than 53 significant bits, non-finite values, non-numbers)."""
    if not isinstance(a, np.ndarray):
        return None
    if a.dtype != object:
        kind = a.dtype.kind
        floats = (kind == "f" or a.dtype.name == "bfloat16") and a.dtype.itemsize <= 8
        integers = kind in "iub" and (kind == "b" or not a.size or int(np.max(np.abs(a))) < 2**53)
        if not (floats or integers):
            return None
        out = a.astype(np.float64)
        return out if np.isfinite(out).all() else None
    flat = a.reshape(-1)
    out = np.empty(flat.size)
    for i, v in enumerate(flat):
        t = v._t if type(v) is MPFloat else _exact_tuple(v)
        if t is None or (not t[1] and t[3]):  # not a number, or inf / nan
            return None
        if t[1] and (t[3] > 53 or t[2] < -1074 or t[2] + t[3] > 1024):
            return None
        out[i] = libmp.to_float(t)
    return out.reshape(a.shape)


def from_components(comps: np.ndarray, ctx: Context | None) -> np.ndarray:
    """An object array of the exact values (``MPFloat``) whose float64 components lie on the
    last axis of ``comps``, each rounded once to ``ctx``'s precision (None: kept exact)."""
    shape = comps.shape[:-1]
    flat = comps.reshape(-1, comps.shape[-1])
    prec, rnd = (0, libmp.round_nearest) if ctx is None else ctx._prec_rounding
    out = np.empty(flat.shape[0], dtype=object)
    single = np.zeros(flat.shape[0], dtype=bool)
    if prec == 0 or prec >= 53:  # one component: a float64, exact at any such precision
        single = ~np.any(flat[:, 1:] != 0, axis=1)
        out[single] = [_wrap(_from_float(v), ctx) for v in flat[single, 0].tolist()]
    for i in np.flatnonzero(~single).tolist():
        t = _from_float(float(flat[i, 0]))
        for c in flat[i, 1:].tolist():
            if c == 0.0:
                break
            t = libmp.mpf_add(t, _from_float(c), 0)
        out[i] = _wrap(libmp.mpf_pos(t, prec, rnd) if prec else t, ctx)
    return out.reshape(shape)


class Expansions:
    """Exact values held as float64 expansions (``comps``: shape + (ncomp,)), standing in
    for the object array of ``MPFloat`` that :func:`from_components` would make: indexing
    makes only the entries read, ``np.asarray(e, dtype=object)`` all of them.

    >>> e = Expansions(np.array([[1.0, 2.0**-80], [3.0, 0.0]]))
    >>> e.shape, float(e[1].value), type(np.asarray(e, dtype=object)[0]).__name__
    ((2,), 3.0, 'MPFloat')
    """

    dtype = np.dtype(object)

    def __init__(self, comps: np.ndarray) -> None:
        self.comps = comps

    shape = property(lambda self: self.comps.shape[:-1])
    ndim = property(lambda self: self.comps.ndim - 1)
    size = property(lambda self: int(np.prod(self.comps.shape[:-1], dtype=np.int64)))

    def __len__(self) -> int:
        return len(self.comps)

    def __getitem__(self, key: Key) -> MPFloat | np.ndarray:
        tail = key + (slice(None),) if isinstance(key, tuple) else (key, Ellipsis, slice(None))
        part = from_components(np.asarray(self.comps[tail]), None)
        return part[()] if part.ndim == 0 else part

    def reshape(self, *shape: ShapeLike) -> Expansions:
        target = tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        return Expansions(self.comps.reshape(tuple(target) + self.comps.shape[-1:]))

    def __array__(self, dtype: DTypeLike | None = None, copy: bool | None = None) -> np.ndarray:
        return from_components(self.comps, None)

    def __repr__(self) -> str:
        return f"Expansions(shape={self.shape}, components={self.comps.shape[-1]})"


# -- on MPArrays ------------------------------------------------------------------------------


def intercept(name: str, operands: tuple[Any, ...], params: dict[str, object],
              ctx: Context) -> np.ndarray | None:
    """The contraction ``name`` (:mod:`gradcheck.mp._vocabulary`) of ``operands`` computed
    exactly and rounded once to ``ctx``'s precision (an object array), or None when its
    operands are not all arrays exact in float64 (one of them of arbitrary precision), or
    kernels are off."""
    if not _enabled.get() or not all(isinstance(o, np.ndarray) for o in operands):
        return None
    if not any(o.dtype == object for o in operands):
        return None  # no arbitrary-precision operand: not ours to compute
    if sum(o.size for o in operands) < INTERCEPT_FROM:
        return None  # small: the object loop is quick, and numba need not even load
    floats = tuple(as_float64(o) for o in operands)
    if any(f is None for f in floats):
        return None
    # No threads: an arbitrary-precision evaluation may run in a forked worker (the referee's).
    comps = components(name, floats, params, components_for(ctx.prec))  # type: ignore[arg-type]
    return None if comps is None else from_components(comps, ctx)


def vocabulary_params(name: str, args: tuple, kwargs: dict[str, object]) -> tuple[tuple, dict] | None:
    """(operands, params) of a call of the vocabulary function ``name`` with numpy's
    arguments, or None for arguments outside the forms the kernels compute (``out=``,
    ``dtype=``, ``initial=``, ``where=``, an einsum ``optimize`` path, ...)."""
    kw = dict(kwargs)
    for key, ok in (("out", None), ("dtype", None), ("where", True), ("initial", None),
                    ("optimize", False)):
        if key in kw and not (kw[key] is ok or kw[key] is getattr(np, "_NoValue", None)
                              or (key == "dtype" and kw[key] is object)):
            return None
        kw.pop(key, None)
    if kw.get("casting") == "same_kind":
        kw.pop("casting")
    if "order" in kw and kw["order"] in ("K", None):
        kw.pop("order")
    if name == "einsum":
        if not args or not isinstance(args[0], str) or kw:
            return None
        return tuple(args[1:]), {"subscripts": args[0]}
    arity = 1 if name in ("sum", "cumsum") else 2
    operands, rest = tuple(args[:arity]), args[arity:]
    names = {"sum": ("axis", "keepdims"), "cumsum": ("axis",), "tensordot": ("axes",),
             "convolve": ("mode",), "correlate": ("mode",)}.get(name, ())
    if len(rest) > len(names):
        return None
    params = dict(zip(names, rest))
    for key, value in kw.items():
        if key not in names or key in params:
            return None
        params[key] = value
    if params.get("keepdims") is getattr(np, "_NoValue", None):
        params["keepdims"] = False
    return operands, params


# -- the probe --------------------------------------------------------------------------------


class _Abandon(Exception):
    """The probe met an operation outside the vocabulary."""


#: numpy functions that rearrange values exactly (applied component by component).
_REARRANGING = {np.reshape, np.transpose, np.moveaxis, np.swapaxes, np.squeeze, np.expand_dims,
                np.concatenate, np.stack, np.ravel, np.flip, np.broadcast_to, np.atleast_1d,
                np.atleast_2d, np.atleast_3d, np.copy, np.hstack, np.vstack}
#: Of those, the ones whose first argument is a sequence of arrays.
_JOINING = {np.concatenate, np.stack, np.hstack, np.vstack}


class Exact:
    """Exact values standing in for an array while the probe runs: float64 components
    (``comps``, shape + (ncomp,)), the sensitivity of each value to a relative perturbation
    of the inputs (``kappa``), and whether it may enter a contraction (``operand``: an input
    or constant, rearranged; a contraction's result may not)."""

    __slots__ = ("comps", "kappa", "operand")
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, comps: np.ndarray, kappa: np.ndarray, operand: bool) -> None:
        self.comps, self.kappa, self.operand = comps, kappa, operand

    shape = property(lambda self: self.kappa.shape)
    ndim = property(lambda self: self.kappa.ndim)
    size = property(lambda self: self.kappa.size)
    dtype = property(lambda self: np.dtype(np.float64))
    T = property(lambda self: self._each(np.transpose, (), {}))

    def __len__(self) -> int:
        return len(self.kappa)

    def _each(self, func: Callable, args: tuple, kwargs: dict) -> Exact:
        return _rearranged(func, (self, *args), kwargs)

    def __getitem__(self, key: Key) -> Exact:
        if isinstance(key, Exact) or (isinstance(key, tuple) and any(isinstance(k, Exact) for k in key)):
            raise _Abandon("indexing by computed values")
        return Exact(self.comps[key + (slice(None),) if isinstance(key, tuple) else (key, Ellipsis, slice(None))]
                     if key is not Ellipsis else self.comps, self.kappa[key], self.operand)

    def reshape(self, *shape: ShapeLike, **kw: object) -> Exact:
        return self._each(np.reshape, (shape[0] if len(shape) == 1 else shape,), kw)

    def transpose(self, *axes: ShapeLike | None) -> Exact:
        return self._each(np.transpose, (axes[0] if len(axes) == 1 else (axes or None),), {})

    def swapaxes(self, a: int, b: int) -> Exact:
        return self._each(np.swapaxes, (a, b), {})

    def squeeze(self, axis: Axis = None) -> Exact:
        return self._each(np.squeeze, (axis,), {})

    def ravel(self) -> Exact:
        return self._each(np.ravel, (), {})

    flatten = ravel

    def copy(self) -> Exact:
        return self

    def sum(self, axis: Axis = None, keepdims: bool = False, **kw: object) -> Exact:
        return _contract(np.sum, "__call__", (self, axis), dict(kw, keepdims=keepdims))

    def cumsum(self, axis: SupportsIndex | None = None, **kw: object) -> Exact:
        return _contract(np.cumsum, "__call__", (self, axis), kw)

    def dot(self, other: Exact | ArrayLike) -> Exact:
        return _contract(np.dot, "__call__", (self, other), {})

    def __matmul__(self, other: Exact | ArrayLike) -> Exact:
        return _contract(np.matmul, "__call__", (self, other), {})

    def __rmatmul__(self, other: Exact | ArrayLike) -> Exact:
        return _contract(np.matmul, "__call__", (other, self), {})

    def __neg__(self) -> Exact:
        return Exact(-self.comps, self.kappa, self.operand)

    def __pos__(self) -> Exact:
        return self

    def __array__(self, *args: object, **kwargs: object) -> np.ndarray:
        raise _Abandon("conversion to a plain array")

    def __bool__(self) -> bool:
        raise _Abandon("truth value")

    def __float__(self) -> float:
        raise _Abandon("float()")

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Exact:
        if method == "__call__" and ufunc in (np.negative, np.positive) and not kwargs:
            return -inputs[0] if ufunc is np.negative else inputs[0]
        return _contract(ufunc, method, inputs, kwargs)

    def __array_function__(self, func: Callable, types: tuple, args: tuple, kwargs: dict) -> Exact:
        if func in _REARRANGING:
            return _rearranged(func, args, kwargs)
        return _contract(func, "__call__", args, kwargs)


def _pick(obj: object, get: Callable[[Exact], np.ndarray],
          plain: Callable[[np.ndarray], np.ndarray]) -> Any:
    """The arguments with each Exact replaced by ``get(it)`` and each array by
    ``plain(it)``; other arguments (axes, shapes) unchanged."""
    if isinstance(obj, Exact):
        return get(obj)
    if isinstance(obj, (list, tuple)):
        return type(obj)(_pick(o, get, plain) for o in obj)
    if isinstance(obj, np.ndarray):
        return plain(obj)
    return obj


def _exacts(args: object) -> list[Exact]:
    if isinstance(args, Exact):
        return [args]
    if isinstance(args, (list, tuple)):
        return [e for a in args for e in _exacts(a)]
    return []


def _constant(a: np.ndarray) -> np.ndarray:
    f = as_float64(a)
    if f is None:
        raise _Abandon("a constant that float64 does not hold")
    return f


def _component(c: int) -> Callable[[Exact], np.ndarray]:
    return lambda e: e.comps[..., c] if c < e.comps.shape[-1] else np.zeros(e.shape)


def _kappa(e: Exact) -> np.ndarray:
    return e.kappa


def _rearranged(func: Callable, args: tuple, kwargs: dict) -> Exact:
    """``func`` applied to every component and to the sensitivities alike."""
    if func in _JOINING and not all(isinstance(a, (Exact, np.ndarray)) for a in args[0]):
        raise _Abandon("joining values that are not arrays")
    found = _exacts(args)
    ncomp = max(e.comps.shape[-1] for e in found)
    parts = [func(*_pick(args, _component(c), _constant if c == 0 else np.zeros_like), **kwargs)
             for c in range(ncomp)]
    kappa = func(*_pick(args, _kappa, np.zeros_like), **kwargs)
    return Exact(np.stack([np.asarray(p, dtype=np.float64) for p in parts], axis=-1),
                 np.asarray(kappa, dtype=np.float64), all(e.operand for e in found))


def _contract(func: Callable, method: str, args: tuple, kwargs: dict) -> Exact:
    name = name_of(func, method)
    parsed = None if name is None else vocabulary_params(name, args, kwargs)
    if parsed is None:
        raise _Abandon(f"{getattr(func, '__name__', func)}.{method}")
    operands, params = parsed
    if any(isinstance(o, Exact) and not o.operand for o in operands):
        raise _Abandon("a contraction of a contraction")
    if not all(isinstance(o, (Exact, np.ndarray)) for o in operands):
        raise _Abandon("a scalar operand")
    values = tuple(o.comps[..., 0] if isinstance(o, Exact) else _constant(o) for o in operands)
    weights = tuple(o.kappa if isinstance(o, Exact) else np.zeros(o.shape) for o in operands)
    comps = components(name, values, params, _NCOMP.get(), threads=True)  # type: ignore[arg-type]
    kappa = sensitivity(name, values, weights, params)  # type: ignore[arg-type]
    if comps is None or kappa is None:
        raise _Abandon(f"{name} in a form outside the vocabulary")
    return Exact(comps, kappa, False)


_NCOMP: contextvars.ContextVar[int] = contextvars.ContextVar("gradcheck_mp_probe_ncomp", default=3)


def probe(f: Callable[..., object], args: tuple[np.ndarray, ...], prec: int) -> Exact | None:
    """``f(*args)`` when ``f`` is made only of contractions of its inputs and exact
    rearrangements: its exact values (components enough for ``prec`` bits) and each
    output's sensitivity to a relative perturbation of the inputs; None otherwise (any
    other operation, or anything ``f`` raises: the ordinary evaluation will say it).

    >>> import numpy as np
    >>> r = probe(lambda a, b: a @ b, (np.array([[2.0**60, 1.0, -2.0**60]]), np.ones((3, 1))), 53)
    >>> r.comps[..., 0].tolist(), r.kappa.tolist()
    [[[3.0]], [[4.611686018427388e+18]]]
    """
    if not _enabled.get():
        return None
    inputs = []
    for a in args:
        f64 = as_float64(a) if isinstance(a, np.ndarray) and a.dtype.kind != "b" else None
        inputs.append(a if f64 is None else Exact(f64[..., None], np.abs(f64), True))
    token = _NCOMP.set(components_for(prec))
    try:
        out = f(*inputs)
    except Exception:  # noqa: BLE001 - abandoned, or f's own error: the ordinary path decides
        return None
    finally:
        _NCOMP.reset(token)
    return out if isinstance(out, Exact) else None


__all__ = ["disabled", "enabled", "as_float64", "from_components", "Expansions", "intercept",
           "vocabulary_params", "probe", "Exact"]
