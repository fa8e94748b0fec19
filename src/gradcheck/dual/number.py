"""The dual number: :class:`DualArray`, its numpy protocol and the operations on it.

A ``DualArray`` carries a float64 value of shape ``S`` and ``K`` tangent directions of shape
``S + (K,)``. ``__array_ufunc__`` and ``__array_function__`` send numpy's operations to the
functions below (elementwise ones through the derivative tables of :mod:`.rules`,
reductions, shape manipulation, products); each builds a new ``DualArray``. The class and
these functions call each other, so they share this module. What a DualArray refuses, and
the symmetric subgradient at kinks, is said in :mod:`gradcheck.dual`.
"""
from __future__ import annotations

import numbers
from collections.abc import Callable, Iterable, Iterator, Sequence
from types import EllipsisType
from typing import Any, SupportsIndex, Union

import numpy as np
from numpy.typing import ArrayLike, DTypeLike

try:
    from numpy.lib.array_utils import normalize_axis_index, normalize_axis_tuple
except ImportError:  # numpy < 2.0
    from numpy.core.multiarray import normalize_axis_index  # type: ignore[no-redef]
    from numpy.core.numeric import normalize_axis_tuple  # type: ignore[no-redef]

from .rules import BINARY, VALUE_ONLY, unary_rule

#: An axis argument, as numpy's reductions and shape functions take it.
Axis = SupportsIndex | tuple[SupportsIndex, ...] | None
#: What an arithmetic operator or comparison of a DualArray takes: another one, or what numpy reads as an array.
Operand = Union["DualArray", ArrayLike]
#: A shape argument, as numpy's reshape and broadcast_to take it.
ShapeLike = SupportsIndex | Sequence[SupportsIndex]
#: An ``out=`` argument: refused by every reduction here, honoured (DualArray only) by ufuncs.
OutArrays = Union["DualArray", np.ndarray, tuple[Union["DualArray", np.ndarray], ...]]
Out = OutArrays | None
#: One component of an index: what ndarray.__getitem__ takes.
_KeyPart = ArrayLike | slice | EllipsisType | None
#: An index (a component or a tuple of them).
Key = _KeyPart | tuple[_KeyPart, ...]

_NOVALUE: Any = getattr(np, "_NoValue", object())  # numpy's private "argument not given" marker
_LOST = "the tangent would be lost; use .value if you really mean to drop the derivative"


class DualArray:
    """A float64 array with ``K`` forward-mode tangents (vector forward mode).

    ``value`` has shape ``S``; ``tangent`` has shape ``S + (K,)``: ``tangent[..., k]`` is the
    derivative of ``value`` along the k-th input direction.

    >>> import numpy as np
    >>> x = DualArray(np.array([1.0, 2.0]), np.eye(2))
    >>> y = np.exp(x) * 3
    >>> y.tangent.diagonal() / y.value
    array([1., 1.])
    """

    __slots__ = ("value", "tangent")
    __hash__ = None  # type: ignore[assignment]  # == is elementwise, as for ndarray

    def __init__(self, value: ArrayLike, tangent: ArrayLike) -> None:
        value = np.asarray(value)
        tangent = np.asarray(tangent)
        for name, arr in (("value", value), ("tangent", tangent)):
            # A complex or object value would silently change the arithmetic this oracle checks.
            if not (np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)
                    or arr.dtype == np.bool_):
                raise TypeError(f"DualArray {name} must be real numeric, got dtype {arr.dtype}")
        if tangent.ndim != value.ndim + 1 or tangent.shape[:-1] != value.shape:
            raise ValueError(
                f"tangent shape {tangent.shape} must be value shape {value.shape} + (K,)"
            )
        self.value: np.ndarray = value.astype(np.float64, copy=False)
        self.tangent: np.ndarray = tangent.astype(np.float64, copy=False)

    # ---- array-like attributes -------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return self.value.shape

    @property
    def ndim(self) -> int:
        return self.value.ndim

    @property
    def size(self) -> int:
        return self.value.size

    @property
    def dtype(self) -> np.dtype:
        return self.value.dtype

    @property
    def n_tangents(self) -> int:
        """``K``, the number of tangent directions carried."""
        return self.tangent.shape[-1]

    @property
    def T(self) -> DualArray:
        return _transpose(self)

    def __len__(self) -> int:
        return len(self.value)

    def __iter__(self) -> Iterator[DualArray]:
        for i in range(len(self)):
            yield self[i]

    def __repr__(self) -> str:
        return f"DualArray(value={self.value!r}, n_tangents={self.n_tangents})"

    # ---- conversions that would drop the tangent: refuse ----------------------------------
    def __array__(self, dtype: DTypeLike | None = None, copy: bool | None = None) -> np.ndarray:
        raise TypeError(f"converting a DualArray to a numpy array: {_LOST}")

    def __float__(self) -> float:
        raise TypeError(f"float() of a DualArray: {_LOST}")

    def __int__(self) -> int:
        raise TypeError(f"int() of a DualArray: {_LOST}")

    def __complex__(self) -> complex:
        raise TypeError(f"complex() of a DualArray: {_LOST}")

    def __index__(self) -> int:
        raise TypeError(f"using a DualArray as an index: {_LOST}")

    def item(self, *args: SupportsIndex) -> float:
        raise TypeError(f"DualArray.item(): {_LOST}")

    def tolist(self) -> list:
        raise TypeError(f"DualArray.tolist(): {_LOST}")

    def __bool__(self) -> bool:
        # Branching on a value is legitimate: forward mode differentiates the branch taken.
        return bool(self.value)

    def astype(self, dtype: DTypeLike, copy: bool = True) -> DualArray:
        if np.dtype(dtype) != np.float64:
            raise TypeError(
                f"DualArray.astype({np.dtype(dtype)}): the reference is computed in float64; "
                "a cast would make it disagree with the function it claims to differentiate"
            )
        return self.copy() if copy else self

    # ---- numpy protocols ------------------------------------------------------------------
    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Operand,
                        **kwargs: Any) -> DualArray | np.ndarray | np.generic:
        if not all(_is_known(a) for a in inputs):
            return NotImplemented
        out = kwargs.pop("out", None)
        name = (f"numpy.{ufunc.__name__}" if getattr(np, ufunc.__name__, None) is ufunc
                else f"ufunc {ufunc.__name__!r}") + ("" if method == "__call__" else f".{method}")
        if method == "reduce" and ufunc in _REDUCERS and out is None:
            return _ufunc_reduce(ufunc, name, *inputs, **kwargs)
        if method != "__call__":
            raise TypeError(f"DualArray does not support {name}")
        if kwargs:
            raise TypeError(f"DualArray does not support {name} with {sorted(kwargs)}")
        if ufunc in VALUE_ONLY:
            if out is not None:
                raise TypeError(f"DualArray does not support {name} with out=")
            # Predicates and comparisons have no derivative: plain arrays on the values.
            return ufunc(*(_value(a) for a in inputs))
        if ufunc is np.matmul:
            result = _matmul(*inputs)
        elif len(inputs) == 1 and unary_rule(ufunc) is not None:
            result = _unary(ufunc, inputs[0])
        elif ufunc in BINARY and len(inputs) == 2:
            result = _binary(ufunc, *inputs)
        else:
            raise TypeError(
                f"DualArray does not support {name}: no derivative rule is implemented "
                "(raising instead of silently dropping the tangent)"
            )
        return result if out is None else _write_out(name, out, result)

    def __array_function__(self, func: Callable, types: Iterable[type], args: tuple,
                           kwargs: dict) -> object:
        if not all(issubclass(t, (DualArray, np.ndarray)) for t in types):
            return NotImplemented  # another duck array: let it (or numpy) decide
        impl = _FUNCTIONS.get(func)
        if impl is None:
            name = f"{getattr(func, '__module__', 'numpy')}.{func.__name__}"
            raise TypeError(
                f"DualArray does not support {name}: no derivative rule is implemented "
                "(raising instead of silently dropping the tangent)"
            )
        return impl(*args, **kwargs)

    # ---- indexing ---------------------------------------------------------------------------
    def __getitem__(self, key: Key) -> DualArray:
        key = _check_key(key)
        # The trailing full slice keeps the tangent axis out of the way of `...` and fancy keys.
        return DualArray(self.value[key], self.tangent[key + (slice(None),)])

    def __setitem__(self, key: Key, new: Operand) -> None:
        key = _check_key(key)
        tkey = key + (slice(None),)
        if isinstance(new, DualArray):
            _same_k(self, new)
            self.value[key] = new.value
            self.tangent[tkey] = new.tangent
        else:
            self.value[key] = _plain(new, "assigning into a DualArray")
            self.tangent[tkey] = 0.0  # a constant has no derivative

    # ---- methods mirroring ndarray -----------------------------------------------------------
    def sum(self, axis: Axis = None, keepdims: bool = False) -> DualArray:
        return _sum(self, axis=axis, keepdims=keepdims)

    def mean(self, axis: Axis = None, keepdims: bool = False) -> DualArray:
        return _mean(self, axis=axis, keepdims=keepdims)

    def max(self, axis: Axis = None, keepdims: bool = False) -> DualArray:
        return _max(self, axis=axis, keepdims=keepdims)

    def min(self, axis: Axis = None, keepdims: bool = False) -> DualArray:
        return _min(self, axis=axis, keepdims=keepdims)

    def var(self, axis: Axis = None, ddof: float = 0, keepdims: bool = False) -> DualArray:
        return _var(self, axis=axis, ddof=ddof, keepdims=keepdims)

    def std(self, axis: Axis = None, ddof: float = 0, keepdims: bool = False) -> DualArray:
        return _std(self, axis=axis, ddof=ddof, keepdims=keepdims)

    def prod(self, axis: Axis = None, keepdims: bool = False) -> DualArray:
        return _prod(self, axis=axis, keepdims=keepdims)

    def cumsum(self, axis: Axis = None) -> DualArray:
        return _cumsum(self, axis=axis)

    def argmax(self, axis: Axis = None, **kw: Any) -> np.intp | np.ndarray:
        return self.value.argmax(axis=axis, **kw)

    def argmin(self, axis: Axis = None, **kw: Any) -> np.intp | np.ndarray:
        return self.value.argmin(axis=axis, **kw)

    def reshape(self, *shape: ShapeLike, order: str = "C") -> DualArray:
        return _reshape(self, shape[0] if len(shape) == 1 else shape, order=order)

    def ravel(self, order: str = "C") -> DualArray:
        return _reshape(self, -1, order=order)

    def flatten(self, order: str = "C") -> DualArray:
        return _reshape(self, -1, order=order).copy()

    def transpose(self, *axes: ShapeLike | None) -> DualArray:
        return _transpose(self, axes[0] if len(axes) == 1 else (axes or None))

    def swapaxes(self, axis1: int, axis2: int) -> DualArray:
        return _swapaxes(self, axis1, axis2)

    def squeeze(self, axis: Axis = None) -> DualArray:
        return _squeeze(self, axis)

    def clip(self, min: ArrayLike | None = None, max: ArrayLike | None = None) -> DualArray:
        return _clip(self, min, max)

    def dot(self, other: Operand) -> DualArray:
        return _dot(self, other)

    def copy(self) -> DualArray:
        return DualArray(self.value.copy(), self.tangent.copy())

    def conj(self) -> DualArray:
        return self.copy()  # real values: the conjugate is the identity

    conjugate = conj

    # ---- operators: route through the ufuncs so there is one derivative table -------------
    def __add__(self, o: Operand) -> DualArray: return np.add(self, o)
    def __radd__(self, o: Operand) -> DualArray: return np.add(o, self)
    def __sub__(self, o: Operand) -> DualArray: return np.subtract(self, o)
    def __rsub__(self, o: Operand) -> DualArray: return np.subtract(o, self)
    def __mul__(self, o: Operand) -> DualArray: return np.multiply(self, o)
    def __rmul__(self, o: Operand) -> DualArray: return np.multiply(o, self)
    def __truediv__(self, o: Operand) -> DualArray: return np.divide(self, o)
    def __rtruediv__(self, o: Operand) -> DualArray: return np.divide(o, self)
    def __pow__(self, o: Operand) -> DualArray: return np.power(self, o)
    def __rpow__(self, o: Operand) -> DualArray: return np.power(o, self)
    def __matmul__(self, o: Operand) -> DualArray: return np.matmul(self, o)
    def __rmatmul__(self, o: Operand) -> DualArray: return np.matmul(o, self)
    def __floordiv__(self, o: Operand) -> DualArray: return np.floor_divide(self, o)
    def __rfloordiv__(self, o: Operand) -> DualArray: return np.floor_divide(o, self)
    def __mod__(self, o: Operand) -> DualArray: return np.remainder(self, o)
    def __rmod__(self, o: Operand) -> DualArray: return np.remainder(o, self)
    def __neg__(self) -> DualArray: return np.negative(self)
    def __pos__(self) -> DualArray: return np.positive(self)
    def __abs__(self) -> DualArray: return np.absolute(self)
    def __lt__(self, o: Operand) -> np.ndarray: return np.less(self, o)
    def __le__(self, o: Operand) -> np.ndarray: return np.less_equal(self, o)
    def __gt__(self, o: Operand) -> np.ndarray: return np.greater(self, o)
    def __ge__(self, o: Operand) -> np.ndarray: return np.greater_equal(self, o)
    def __eq__(self, o: Operand) -> np.ndarray: return np.equal(self, o)  # type: ignore[override]
    def __ne__(self, o: Operand) -> np.ndarray: return np.not_equal(self, o)  # type: ignore[override]

    # In-place operators write through, so views into a DualArray behave as numpy views do.
    def __iadd__(self, o: Operand) -> DualArray: return np.add(self, o, out=(self,))
    def __isub__(self, o: Operand) -> DualArray: return np.subtract(self, o, out=(self,))
    def __imul__(self, o: Operand) -> DualArray: return np.multiply(self, o, out=(self,))
    def __itruediv__(self, o: Operand) -> DualArray: return np.divide(self, o, out=(self,))
    def __ipow__(self, o: Operand) -> DualArray: return np.power(self, o, out=(self,))


# ---- helpers ---------------------------------------------------------------------------------
def _is_known(a: object) -> bool:
    return isinstance(a, (DualArray, np.ndarray, numbers.Number, np.generic, list, tuple))


def _value(a: Operand) -> ArrayLike:
    return a.value if isinstance(a, DualArray) else a


def _plain(a: Operand, what: str) -> np.ndarray:
    if isinstance(a, DualArray):
        raise TypeError(f"{what}: a DualArray is not allowed here")
    arr = np.asarray(a)
    if np.iscomplexobj(arr) or arr.dtype == object:
        raise TypeError(f"{what}: got dtype {arr.dtype}; DualArray is real float64 only")
    return arr


def _same_k(*duals: DualArray) -> int:
    ks = {d.n_tangents for d in duals}
    if len(ks) != 1:
        raise ValueError(f"DualArrays carry different numbers of tangents: {sorted(ks)}")
    return ks.pop()


def _k_of(args: Iterable[object]) -> int:
    return _same_k(*[a for a in args if isinstance(a, DualArray)])


def _lift(a: Operand, k: int) -> DualArray:
    """A constant as a DualArray with zero tangent (for concatenate, stack, where, ...)."""
    if isinstance(a, DualArray):
        return a
    v = _plain(a, "mixing a constant with DualArrays").astype(np.float64)
    return DualArray(v, np.zeros(v.shape + (k,)))


def _finish(value: ArrayLike, tangent: np.ndarray, k: int) -> DualArray:
    value = np.asarray(value, dtype=np.float64)
    shape = value.shape + (k,)
    if tangent.shape != shape:
        tangent = np.broadcast_to(tangent, shape).copy()
    return DualArray(value, tangent)


def _check_key(key: Key) -> tuple:
    key = key if isinstance(key, tuple) else (key,)
    if any(isinstance(k, DualArray) for k in key):
        raise TypeError(f"indexing with a DualArray: {_LOST}")
    return key


def _axes(axis: Axis, ndim: int) -> tuple[int, ...]:
    """Non-negative value axes, so that they never reach the trailing tangent axis."""
    return tuple(range(ndim)) if axis is None else normalize_axis_tuple(axis, ndim)


def _reject(name: str, **given: object) -> None:
    bad = [k for k, v in given.items() if v is not None and v is not _NOVALUE]
    if bad:
        raise TypeError(f"DualArray does not support {name} with {bad}")


def _write_out(name: str, out: OutArrays, result: DualArray) -> DualArray:
    out = out if isinstance(out, tuple) else (out,)
    if len(out) != 1 or not isinstance(out[0], DualArray):
        raise TypeError(f"{name} with out= a plain ndarray: {_LOST}")
    out[0][...] = result
    return out[0]


# ---- elementwise operations (their derivative tables: .rules) -----------------------------------
def _times(factor: np.ndarray, tangent: np.ndarray) -> np.ndarray:
    """``factor * tangent`` over the tangent axis, where an exactly zero tangent stays zero
    even through a pole (``0 * inf``): a constant built from the input (``x * 0 + 1``) stays
    a constant through ``arccos(-1)``."""
    term = factor[..., None] * tangent
    if not np.isfinite(factor).all():
        term = np.where(tangent == 0, 0.0, term)
    return term


def _unary(ufunc: np.ufunc, x: DualArray) -> DualArray:
    with np.errstate(all="ignore"):  # IEEE results (inf/nan) are the honest answer at poles
        y = ufunc(x.value)
        factor = np.asarray(unary_rule(ufunc)(x.value, y), dtype=np.float64)  # type: ignore[misc]
        return _finish(y, _times(factor, x.tangent), x.n_tangents)


def _binary(ufunc: np.ufunc, a: Operand, b: Operand) -> DualArray:
    k = _k_of((a, b))
    av = _value(a) if isinstance(a, DualArray) else _plain(a, f"numpy.{ufunc.__name__}")
    bv = _value(b) if isinstance(b, DualArray) else _plain(b, f"numpy.{ufunc.__name__}")
    with np.errstate(all="ignore"):
        y = np.asarray(ufunc(av, bv), dtype=np.float64)
        fa, fb = BINARY[ufunc](np.asarray(av, np.float64), np.asarray(bv, np.float64), y)
        tangent = None
        for side, factor in ((a, fa), (b, fb)):
            if isinstance(side, DualArray):  # a constant side contributes nothing
                term = _times(np.asarray(factor, dtype=np.float64), side.tangent)
                tangent = term if tangent is None else tangent + term
    return _finish(y, tangent, k)


def _matmul(a: Operand, b: Operand) -> DualArray:
    k = _k_of((a, b))
    av = np.asarray(_value(a), dtype=np.float64)
    bv = np.asarray(_value(b), dtype=np.float64)
    y = np.matmul(av, bv)
    # Promote 1-D operands to matrices so the batch axes line up; the size-1 axes they add are
    # removed at the end by reshaping to the value's shape.
    a2 = av[None, :] if av.ndim == 1 else av
    b2 = bv[:, None] if bv.ndim == 1 else bv
    tangent = 0.0
    if isinstance(a, DualArray):
        ta = a.tangent[None, :, :] if av.ndim == 1 else a.tangent
        # K sits just before the matrix axes: a batch axis that broadcasts against nothing.
        tangent = tangent + np.matmul(np.moveaxis(ta, -1, -3), b2[..., None, :, :])
    if isinstance(b, DualArray):
        tb = b.tangent[:, None, :] if bv.ndim == 1 else b.tangent
        tangent = tangent + np.matmul(a2[..., None, :, :], np.moveaxis(tb, -1, -3))
    tangent = np.moveaxis(tangent, -3, -1)
    return DualArray(y, tangent.reshape(np.shape(y) + (k,)))


# ---- reductions ------------------------------------------------------------------------------
def _sum(a: DualArray, axis: Axis = None, dtype: DTypeLike | None = None, out: Out = None,
         keepdims: bool = False, initial: float | None = None,
         where: ArrayLike | None = None) -> DualArray:
    _reject("numpy.sum", dtype=dtype, out=out, initial=initial, where=where)
    ax = _axes(axis, a.ndim)
    return DualArray(np.sum(a.value, axis=ax, keepdims=keepdims),
                     np.sum(a.tangent, axis=ax, keepdims=keepdims))


def _mean(a: DualArray, axis: Axis = None, dtype: DTypeLike | None = None, out: Out = None,
          keepdims: bool = False, *, where: ArrayLike | None = None) -> DualArray:
    _reject("numpy.mean", dtype=dtype, out=out, where=where)
    ax = _axes(axis, a.ndim)
    count = int(np.prod([a.shape[i] for i in ax]))
    return _sum(a, ax, keepdims=keepdims) / count


def _extreme(a: DualArray, axis: Axis, keepdims: bool, pick: Callable) -> DualArray:
    ax = _axes(axis, a.ndim)
    m = pick(a.value, axis=ax, keepdims=True)
    hit = a.value == m
    with np.errstate(all="ignore"):
        # Ties share the tangent evenly; a NaN extreme gives 0/0 = NaN, which is honest.
        w = hit / np.sum(hit, axis=ax, keepdims=True)
    t = np.sum(w[..., None] * a.tangent, axis=ax, keepdims=keepdims)
    return DualArray(m if keepdims else np.squeeze(m, axis=ax), t)


def _max(a: DualArray, axis: Axis = None, out: Out = None, keepdims: bool = False,
         initial: float | None = None, where: ArrayLike | None = None) -> DualArray:
    _reject("numpy.max", out=out, initial=initial, where=where)
    return _extreme(a, axis, keepdims, np.max)


def _min(a: DualArray, axis: Axis = None, out: Out = None, keepdims: bool = False,
         initial: float | None = None, where: ArrayLike | None = None) -> DualArray:
    _reject("numpy.min", out=out, initial=initial, where=where)
    return _extreme(a, axis, keepdims, np.min)


def _var(a: DualArray, axis: Axis = None, dtype: DTypeLike | None = None, out: Out = None,
         ddof: float = 0, keepdims: bool = False, *, where: ArrayLike | None = None,
         mean: ArrayLike | None = None, correction: float | None = None) -> DualArray:
    _reject("numpy.var", dtype=dtype, out=out, where=where, mean=mean)
    ddof = ddof if correction is None or correction is _NOVALUE else correction
    ax = _axes(axis, a.ndim)
    count = int(np.prod([a.shape[i] for i in ax]))
    d = a - _mean(a, ax, keepdims=True)
    return _sum(d * d, ax, keepdims=keepdims) / (count - ddof)


def _std(a: DualArray, axis: Axis = None, dtype: DTypeLike | None = None, out: Out = None,
         ddof: float = 0, keepdims: bool = False, *, where: ArrayLike | None = None,
         mean: ArrayLike | None = None, correction: float | None = None) -> DualArray:
    _reject("numpy.std", dtype=dtype, out=out, where=where, mean=mean)
    return np.sqrt(_var(a, axis, ddof=ddof, keepdims=keepdims, correction=correction))


def _prod(a: DualArray, axis: Axis = None, dtype: DTypeLike | None = None, out: Out = None,
          keepdims: bool = False, initial: float | None = None,
          where: ArrayLike | None = None) -> DualArray:
    _reject("numpy.prod", dtype=dtype, out=out, initial=initial, where=where)
    ax = _axes(axis, a.ndim)
    keep = [i for i in range(a.ndim) if i not in ax]
    # Bring the reduced axes last and merge them, then d(prod)/dx_i = prod of the others,
    # built from exclusive left and right cumulative products (exact even with zeros).
    v: np.ndarray = np.transpose(a.value, keep + list(ax)).reshape(
        [a.shape[i] for i in keep] + [-1])
    t = np.transpose(a.tangent, keep + list(ax) + [a.ndim]).reshape(v.shape + (a.n_tangents,))
    ones = np.ones(v.shape[:-1] + (1,))
    left = np.cumprod(np.concatenate([ones, v[..., :-1]], axis=-1), axis=-1)
    right = np.cumprod(np.concatenate([ones, v[..., :0:-1]], axis=-1), axis=-1)[..., ::-1]
    value = np.prod(a.value, axis=ax, keepdims=keepdims)
    tangent = np.sum((left[..., :v.shape[-1]] * right[..., :v.shape[-1]])[..., None] * t, axis=-2)
    return DualArray(value, tangent.reshape(np.shape(value) + (a.n_tangents,)))


def _cumsum(a: DualArray, axis: SupportsIndex | None = None, dtype: DTypeLike | None = None,
            out: Out = None) -> DualArray:
    _reject("numpy.cumsum", dtype=dtype, out=out)
    if axis is None:
        a, axis = _reshape(a, -1), 0
    ax = normalize_axis_index(axis, a.ndim)
    return DualArray(np.cumsum(a.value, axis=ax), np.cumsum(a.tangent, axis=ax))


_REDUCERS = {np.add: _sum, np.maximum: _max, np.minimum: _min}


def _ufunc_reduce(ufunc: np.ufunc, name: str, a: DualArray, axis: Axis = 0,
                  dtype: DTypeLike | None = None, keepdims: bool = False,
                  **kw: object) -> DualArray:
    _reject(name, dtype=dtype, **kw)
    return _REDUCERS[ufunc](a, axis=axis, keepdims=keepdims)


# ---- shape manipulation ----------------------------------------------------------------------
def _reshape(a: DualArray, shape: ShapeLike | None = None, order: str = "C", *,
             newshape: ShapeLike | None = None, copy: bool | None = None) -> DualArray:
    if order != "C":
        raise TypeError(f"DualArray does not support numpy.reshape with order={order!r}")
    v = np.reshape(a.value, newshape if shape is None else shape)
    return DualArray(v, a.tangent.reshape(v.shape + (a.n_tangents,)))


def _ravel(a: DualArray, order: str = "C") -> DualArray:
    return _reshape(a, -1, order=order)


def _transpose(a: DualArray, axes: ShapeLike | None = None) -> DualArray:
    ax = tuple(range(a.ndim))[::-1] if axes is None else normalize_axis_tuple(axes, a.ndim)
    return DualArray(np.transpose(a.value, ax), np.transpose(a.tangent, ax + (a.ndim,)))


def _swapaxes(a: DualArray, axis1: int, axis2: int) -> DualArray:
    i, j = normalize_axis_index(axis1, a.ndim), normalize_axis_index(axis2, a.ndim)
    return DualArray(np.swapaxes(a.value, i, j), np.swapaxes(a.tangent, i, j))


def _moveaxis(a: DualArray, source: ShapeLike, destination: ShapeLike) -> DualArray:
    s, d = normalize_axis_tuple(source, a.ndim), normalize_axis_tuple(destination, a.ndim)
    return DualArray(np.moveaxis(a.value, s, d), np.moveaxis(a.tangent, s, d))


def _squeeze(a: DualArray, axis: Axis = None) -> DualArray:
    # Explicit axes: a bare squeeze would also remove the tangent axis when K == 1.
    ax = tuple(i for i, n in enumerate(a.shape) if n == 1) if axis is None else \
        normalize_axis_tuple(axis, a.ndim)
    return DualArray(np.squeeze(a.value, ax), np.squeeze(a.tangent, ax))


def _expand_dims(a: DualArray, axis: ShapeLike) -> DualArray:
    n_new = len(axis) if isinstance(axis, (tuple, list)) else 1
    ax = normalize_axis_tuple(axis, a.ndim + n_new)
    return DualArray(np.expand_dims(a.value, ax), np.expand_dims(a.tangent, ax))


def _flip(a: DualArray, axis: Axis = None) -> DualArray:
    ax = _axes(axis, a.ndim)
    return DualArray(np.flip(a.value, ax), np.flip(a.tangent, ax))


def _broadcast_to(a: DualArray, shape: ShapeLike, subok: bool = False) -> DualArray:
    v = np.broadcast_to(a.value, shape)
    return DualArray(v, np.broadcast_to(a.tangent, v.shape + (a.n_tangents,)))


def _broadcast_arrays(*args: Operand, subok: bool = False) -> tuple[DualArray | np.ndarray, ...]:
    shape = np.broadcast_shapes(*(np.shape(_value(a)) for a in args))
    return tuple(_broadcast_to(a, shape) if isinstance(a, DualArray) else np.broadcast_to(a, shape)
                 for a in args)


def _concatenate(arrays: Sequence[Operand], axis: SupportsIndex | None = 0, out: Out = None, *,
                 dtype: DTypeLike | None = None, casting: str | None = None) -> DualArray:
    _reject("numpy.concatenate", out=out, dtype=dtype)
    k = _k_of(arrays)
    duals = [_lift(a, k) for a in arrays]
    if axis is None:
        duals, axis = [_reshape(d, -1) for d in duals], 0
    ax = normalize_axis_index(axis, duals[0].ndim)
    return DualArray(np.concatenate([d.value for d in duals], axis=ax),
                     np.concatenate([d.tangent for d in duals], axis=ax))


def _stack(arrays: Sequence[Operand], axis: int = 0, out: Out = None, *,
           dtype: DTypeLike | None = None, casting: str | None = None) -> DualArray:
    _reject("numpy.stack", out=out, dtype=dtype)
    k = _k_of(arrays)
    duals = [_lift(a, k) for a in arrays]
    ax = normalize_axis_index(axis, duals[0].ndim + 1)
    return DualArray(np.stack([d.value for d in duals], axis=ax),
                     np.stack([d.tangent for d in duals], axis=ax))


def _atleast(a: Operand, n: int) -> DualArray | np.ndarray:
    if isinstance(a, DualArray):
        while a.ndim < n:  # numpy.atleast_1d/2d prepend axes
            a = _expand_dims(a, 0)
        return a
    return np.atleast_2d(a) if n == 2 else np.atleast_1d(a)


def _vstack(tup: Sequence[Operand], *, dtype: DTypeLike | None = None,
            casting: str | None = None) -> DualArray:
    _reject("numpy.vstack", dtype=dtype)
    return _concatenate([_atleast(a, 2) for a in tup], axis=0)


def _hstack(tup: Sequence[Operand], *, dtype: DTypeLike | None = None,
            casting: str | None = None) -> DualArray:
    _reject("numpy.hstack", dtype=dtype)
    arrs = [_atleast(a, 1) for a in tup]
    return _concatenate(arrs, axis=0 if np.ndim(_value(arrs[0])) == 1 else 1)


def _take(a: DualArray, indices: ArrayLike, axis: SupportsIndex | None = None, out: Out = None,
          mode: str = "raise") -> DualArray:
    _reject("numpy.take", out=out)
    idx = _plain(indices, "numpy.take indices")
    if axis is None:
        a, axis = _reshape(a, -1), 0
    ax = normalize_axis_index(axis, a.ndim)
    return DualArray(np.take(a.value, idx, axis=ax, mode=mode),
                     np.take(a.tangent, idx, axis=ax, mode=mode))


def _take_along_axis(arr: DualArray, indices: ArrayLike,
                     axis: SupportsIndex | None = -1) -> DualArray:
    idx = _plain(indices, "numpy.take_along_axis indices")
    if axis is None:
        arr, axis = _reshape(arr, -1), 0
    ax = normalize_axis_index(axis, arr.ndim)
    t = np.take_along_axis(arr.tangent, idx[..., None], axis=ax)  # idx broadcasts over K
    return DualArray(np.take_along_axis(arr.value, idx, axis=ax), t)


def _diff(a: DualArray, n: int = 1, axis: int = -1, prepend: ArrayLike = _NOVALUE,
          append: ArrayLike = _NOVALUE) -> DualArray:
    _reject("numpy.diff", prepend=prepend, append=append)
    ax = normalize_axis_index(axis, a.ndim)
    return DualArray(np.diff(a.value, n, axis=ax), np.diff(a.tangent, n, axis=ax))


def _trace(a: DualArray, offset: int = 0, axis1: int = 0, axis2: int = 1,
           dtype: DTypeLike | None = None, out: Out = None) -> DualArray:
    _reject("numpy.trace", dtype=dtype, out=out)
    i, j = normalize_axis_index(axis1, a.ndim), normalize_axis_index(axis2, a.ndim)
    return DualArray(np.trace(a.value, offset, i, j), np.trace(a.tangent, offset, i, j))


def _tri(name: str, fn: Callable) -> Callable:
    def impl(m: DualArray, k: int = 0) -> DualArray:
        if m.ndim < 2:  # numpy would broadcast a vector to a matrix; keep it simple and explicit
            raise TypeError(f"DualArray supports numpy.{name} only for ndim >= 2")
        t = np.moveaxis(fn(np.moveaxis(m.tangent, -1, 0), k), 0, -1)
        return DualArray(fn(m.value, k), t)
    return impl


def _where(condition: Operand, x: Operand | None = None,
           y: Operand | None = None) -> DualArray | tuple[np.ndarray, ...]:
    cond = np.asarray(_value(condition), dtype=bool) if isinstance(condition, DualArray) \
        else _plain(condition, "numpy.where condition").astype(bool)
    if x is None and y is None:
        return np.where(cond)  # indices only: no derivative involved
    k = _k_of((x, y))
    xd, yd = _lift(x, k), _lift(y, k)
    value = np.where(cond, xd.value, yd.value)
    return _finish(value, np.where(cond[..., None], xd.tangent, yd.tangent), k)


def _clip(a: Operand, a_min: Operand | None = _NOVALUE, a_max: Operand | None = _NOVALUE,
          out: Out = None, *, min: Operand | None = _NOVALUE, max: Operand | None = _NOVALUE,
          **kw: object) -> DualArray:
    _reject("numpy.clip", out=out, **kw)
    lo = min if a_min is _NOVALUE else a_min
    hi = max if a_max is _NOVALUE else a_max
    # maximum/minimum carry the tie rule, so clip at a bound splits the tangent like they do.
    if lo is not None and lo is not _NOVALUE:
        a = np.maximum(a, lo)
    if hi is not None and hi is not _NOVALUE:
        a = np.minimum(a, hi)
    return a


def _constant_like(a: DualArray, fill: Operand, dtype: DTypeLike | None,
                   shape: ShapeLike | None) -> DualArray | np.ndarray:
    if isinstance(fill, DualArray):
        raise TypeError("numpy.full_like with a DualArray fill value is not supported")
    shp = a.shape if shape is None else tuple(int(n) for n in np.atleast_1d(shape))
    if dtype is not None and np.dtype(dtype) != np.float64:
        return np.full(shp, fill, dtype=dtype)  # an integer/bool mask is just a constant
    # A DualArray (zero tangent) so that `out = np.zeros_like(x); out[i] = ...` keeps tangents.
    return DualArray(np.full(shp, fill, dtype=np.float64), np.zeros(shp + (a.n_tangents,)))


def _like(fill: float) -> Callable:
    def impl(a: DualArray, dtype: DTypeLike | None = None, order: str | None = "K",
             subok: bool = True, shape: ShapeLike | None = None, *,
             device: str | None = None) -> DualArray | np.ndarray:
        return _constant_like(a, fill, dtype, shape)
    return impl


def _full_like(a: DualArray, fill_value: Operand, dtype: DTypeLike | None = None,
               order: str | None = "K", subok: bool = True, shape: ShapeLike | None = None, *,
               device: str | None = None) -> DualArray | np.ndarray:
    return _constant_like(a, fill_value, dtype, shape)


# ---- products ----------------------------------------------------------------------------------
def _dot(a: Operand, b: Operand, out: Out = None) -> DualArray:
    _reject("numpy.dot", out=out)
    av, bv = np.asarray(_value(a), np.float64), np.asarray(_value(b), np.float64)
    if av.ndim == 0 or bv.ndim == 0:
        return np.multiply(a, b)
    if av.ndim <= 2 and bv.ndim <= 2:
        return np.matmul(a, b)  # same contraction; matmul's tangent rule already handles it
    # General dot: sum over a's last axis and b's second-to-last axis.
    k = _k_of((a, b))
    ca, cb = av.ndim - 1, max(bv.ndim - 2, 0)
    y = np.dot(av, bv)
    tangent: float | np.ndarray = 0.0
    if isinstance(a, DualArray):
        t = np.tensordot(a.tangent, bv, axes=([ca], [cb]))  # a-rest, K, b-rest
        tangent = tangent + np.moveaxis(t, av.ndim - 1, -1)
    if isinstance(b, DualArray):
        tangent = tangent + np.tensordot(av, b.tangent, axes=([ca], [cb]))  # K already last
    return _finish(y, np.asarray(tangent), k)


def _outer(a: Operand, b: Operand, out: Out = None) -> DualArray:
    _reject("numpy.outer", out=out)
    flat = [(_reshape(x, -1) if isinstance(x, DualArray) else np.ravel(x)) for x in (a, b)]
    return flat[0][:, None] * flat[1][None, :]


def _explicit(subscripts: str) -> tuple[list[str], str]:
    """Split einsum subscripts into operand terms and an explicit output term."""
    s = subscripts.replace(" ", "")
    if "->" in s:
        terms, out = s.split("->")
        return terms.split(","), out
    ins = s.split(",")
    letters = "".join(ins).replace(".", "")
    out = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    return ins, ("..." if "..." in s else "") + out


def _einsum(subscripts: str, *operands: Operand, out: Out = None,
            optimize: bool | str = False, **kw: object) -> DualArray:
    _reject("numpy.einsum", out=out, **{k: v for k, v in kw.items() if k != "casting"})
    if not isinstance(subscripts, str):
        raise TypeError("DualArray supports numpy.einsum only with a subscripts string")
    ins, res = _explicit(subscripts)
    if len(ins) != len(operands):
        raise ValueError(f"einsum subscripts {subscripts!r} name {len(ins)} operands, "
                         f"got {len(operands)}")
    k = _k_of(operands)
    free = next(c for c in "zyxwvutsrqponmlkjihgfedcbaZYXWVUTSRQPONMLKJIHGFEDCBA"
                if c not in subscripts)
    values = [np.asarray(_value(o), dtype=np.float64) for o in operands]
    y = np.einsum(",".join(ins) + "->" + res, *values, optimize=optimize)
    # Linearity: the tangent is the sum over operands of einsum with that operand replaced by
    # its tangent, whose K axis gets a fresh letter appended to its term and to the output.
    tangent = 0.0
    for i, o in enumerate(operands):
        if isinstance(o, DualArray):
            terms = [t + free if j == i else t for j, t in enumerate(ins)]
            ops = [o.tangent if j == i else v for j, v in enumerate(values)]
            tangent = tangent + np.einsum(",".join(terms) + "->" + res + free, *ops,
                                          optimize=True)
    return _finish(y, np.asarray(tangent), k)


def _norm(x: DualArray, ord: float | str | None = None, axis: Axis = None,
          keepdims: bool = False) -> DualArray:

    ax = _axes(axis, x.ndim)
    if not (ord is None or (ord == "fro" and len(ax) == 2) or (ord == 2 and len(ax) == 1)):
        raise TypeError(f"DualArray supports numpy.linalg.norm only for the 2-norm and "
                        f"Frobenius norm, not ord={ord!r} over {len(ax)} axes")
    return np.sqrt(_sum(x * x, ax, keepdims=keepdims))


_FUNCTIONS: dict[Callable, Callable] = {
    np.sum: _sum, np.mean: _mean, np.max: _max, np.amax: _max, np.min: _min, np.amin: _min,
    np.var: _var, np.std: _std, np.prod: _prod, np.cumsum: _cumsum,
    np.reshape: _reshape, np.ravel: _ravel, np.transpose: _transpose, np.swapaxes: _swapaxes,
    np.moveaxis: _moveaxis, np.squeeze: _squeeze, np.expand_dims: _expand_dims, np.flip: _flip,
    np.broadcast_to: _broadcast_to, np.broadcast_arrays: _broadcast_arrays,
    np.concatenate: _concatenate, np.stack: _stack, np.vstack: _vstack, np.hstack: _hstack,
    np.take: _take, np.take_along_axis: _take_along_axis, np.diff: _diff, np.trace: _trace,
    np.triu: _tri("triu", np.triu), np.tril: _tri("tril", np.tril),
    np.where: _where, np.clip: _clip, np.dot: _dot, np.outer: _outer, np.einsum: _einsum,
    np.linalg.norm: _norm,
    np.zeros_like: _like(0.0), np.ones_like: _like(1.0), np.empty_like: _like(0.0),
    np.full_like: _full_like,
    np.copy: lambda a, order="K", subok=False: a.copy(),
    np.argmax: lambda a, axis=None, out=None, **kw: np.argmax(a.value, axis, out, **kw),
    np.argmin: lambda a, axis=None, out=None, **kw: np.argmin(a.value, axis, out, **kw),
    np.shape: lambda a: a.shape, np.ndim: lambda a: a.ndim,
    np.size: lambda a, axis=None: np.size(a.value, axis),
}

