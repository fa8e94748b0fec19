"""Which numpy operations have exact kernels, and how each becomes a kernel call.

The vocabulary is plain numpy, as a definition already writes it: ``a @ b``,
``np.matmul``, ``np.dot``, ``np.inner``, ``np.vdot``, ``np.tensordot``, ``np.einsum`` with
one or two operands (a pure contraction or sum: no repeated index in one operand, no
ellipsis), ``np.sum`` / ``x.sum(axis, keepdims)`` (``np.add.reduce``), ``np.cumsum``
(``np.add.accumulate``), ``np.convolve`` and ``np.correlate``. Each is reduced here to one
of the kernels of :mod:`gradcheck.mp._exactsum` (a batch of matrix products, or sums or
prefix sums along rows) and reshaped back the way numpy would shape it.

:func:`components` computes an operation's exact value (float64 components on a last axis),
:func:`sensitivity` its first-order sensitivity to a relative perturbation of the operands
(``sum_j |x_j d(out)/d(x_j)|`` with ``|x_j|`` replaced by a weight per entry: the operand's
magnitude for a perturbed input, 0 for an exact constant); both return None for a form
outside the vocabulary (the caller then computes it the ordinary way).

>>> import numpy as np
>>> c = components("matmul", (np.array([[2.0**60, 1.0, -2.0**60]]), np.array([[1.0], [3.0], [1.0]])), {}, 1)
>>> c[..., 0].tolist()
[[3.0]]
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, SupportsIndex

import numpy as np

from ._exactsum import exact_cumsum, exact_matmul, exact_sum, magnitude_matmul

_NOVALUE = getattr(np, "_NoValue", object())

#: numpy functions (and ufunc methods, as "ufunc.method") in the vocabulary, by name.
NAMES = ("matmul", "dot", "inner", "vdot", "tensordot", "einsum", "sum", "cumsum",
         "convolve", "correlate")


def name_of(func: Callable, method: str = "__call__") -> str | None:
    """The vocabulary name of a numpy function or ufunc method, or None."""
    if func is np.matmul and method == "__call__":
        return "matmul"
    if func is np.add and method == "reduce":
        return "sum"
    if func is np.add and method == "accumulate":
        return "cumsum"
    for name in ("dot", "inner", "vdot", "tensordot", "einsum", "convolve", "correlate",
                 "sum", "cumsum"):
        if func is getattr(np, name):
            return name
    return None


# -- each operation as (batched) matrix products or row sums -----------------------------


class _Matmul:
    """``out = post(A @ B)`` with ``A`` (g, m, k), ``B`` (g, k, n)."""

    def __init__(self, a: np.ndarray, b: np.ndarray, post: Callable[[np.ndarray], np.ndarray]):
        self.a, self.b, self.post = a, b, post


class _Rows:
    """``out = post(sum or cumsum of x along its last axis)`` with ``x`` (r, n)."""

    def __init__(self, x: np.ndarray, cumulative: bool, post: Callable[[np.ndarray], np.ndarray]):
        self.x, self.cumulative, self.post = x, cumulative, post


def _matmul(a: np.ndarray, b: np.ndarray) -> _Matmul | None:
    if a.ndim == 0 or b.ndim == 0:
        return None
    a2 = a[None, :] if a.ndim == 1 else a
    b2 = b[:, None] if b.ndim == 1 else b
    if a2.shape[-1] != b2.shape[-2]:
        return None
    try:
        batch = np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
    except ValueError:
        return None
    m, k, n = a2.shape[-2], a2.shape[-1], b2.shape[-1]
    big_a = np.broadcast_to(a2, batch + (m, k)).reshape(-1, m, k)
    big_b = np.broadcast_to(b2, batch + (k, n)).reshape(-1, k, n)
    shape = batch + ((m,) if a.ndim > 1 else ()) + ((n,) if b.ndim > 1 else ())
    return _Matmul(big_a, big_b, lambda out: out.reshape(shape + out.shape[-1:]))


def _tensordot(a: np.ndarray, b: np.ndarray, axes: int | Sequence[int | Sequence[int]] = 2) -> _Matmul | None:
    try:
        if isinstance(axes, (int, np.integer)):
            ax_a, ax_b = list(range(a.ndim - int(axes), a.ndim)), list(range(int(axes)))
        else:
            ax_a, ax_b = ([int(i) for i in np.atleast_1d(axes[0])], [int(i) for i in np.atleast_1d(axes[1])])
        ax_a = [i % a.ndim for i in ax_a] if a.ndim else ax_a
        ax_b = [i % b.ndim for i in ax_b] if b.ndim else ax_b
    except (TypeError, IndexError, ZeroDivisionError):
        return None
    if len(ax_a) != len(ax_b) or len(set(ax_a)) != len(ax_a) or len(set(ax_b)) != len(ax_b) or any(
            a.shape[i] != b.shape[j] for i, j in zip(ax_a, ax_b)):
        return None
    free_a = [i for i in range(a.ndim) if i not in ax_a]
    free_b = [i for i in range(b.ndim) if i not in ax_b]
    k = int(np.prod([a.shape[i] for i in ax_a], dtype=np.int64))
    left = a.transpose(free_a + ax_a).reshape(1, -1, k)
    right = b.transpose(ax_b + free_b).reshape(1, k, -1)
    shape = tuple(a.shape[i] for i in free_a) + tuple(b.shape[i] for i in free_b)
    return _Matmul(left, right, lambda out: out.reshape(shape + out.shape[-1:]))


def _dot(a: np.ndarray, b: np.ndarray) -> _Matmul | None:
    if a.ndim == 0 or b.ndim == 0:
        return None
    return _tensordot(a, b, ([-1], [0 if b.ndim == 1 else -2]))


def _einsum(subscripts: object, *ops: np.ndarray) -> _Matmul | _Rows | None:
    if not isinstance(subscripts, str) or "." in subscripts or len(ops) not in (1, 2):
        return None
    spec = subscripts.replace(" ", "")
    ins, arrow, out = spec.partition("->")
    terms = ins.split(",")
    if len(terms) != len(ops) or any(len(t) != o.ndim or len(set(t)) != len(t)
                                     for t, o in zip(terms, ops)) or not spec.replace(
                                         ",", "").replace("->", "").isalpha():
        return None
    if not arrow:
        counts = {c: ins.count(c) for c in set(ins) if c.isalpha()}
        out = "".join(sorted(c for c, n in counts.items() if n == 1))
    if len(set(out)) != len(out) or any(c not in ins for c in out):
        return None
    if len(ops) == 1:
        return _einsum_one(terms[0], out, ops[0])
    return _einsum_two(terms[0], terms[1], out, *ops)


def _einsum_one(term: str, out: str, x: np.ndarray) -> _Rows:
    kept = [term.index(c) for c in out]
    summed = [i for i, c in enumerate(term) if c not in out]
    moved = x.transpose(kept + summed)
    shape = moved.shape[:len(kept)]
    n = int(np.prod(moved.shape[len(kept):], dtype=np.int64))
    return _Rows(moved.reshape(-1, n), False, lambda r: r.reshape(shape + r.shape[-1:]))


def _einsum_two(ta: str, tb: str, out: str, a: np.ndarray, b: np.ndarray) -> _Matmul | None:
    if any((c in ta) != (c in tb) and c not in out for c in ta + tb):
        return None  # an index summed within one operand: not a pure contraction
    size = {c: a.shape[ta.index(c)] for c in ta}
    for c in tb:
        if size.setdefault(c, b.shape[tb.index(c)]) != b.shape[tb.index(c)]:
            return None
    batch = [c for c in out if c in ta and c in tb]
    free_a = [c for c in out if c in ta and c not in tb]
    free_b = [c for c in out if c in tb and c not in ta]
    summed = [c for c in ta if c in tb and c not in out]

    def span(letters: list[str]) -> int:
        return int(np.prod([size[c] for c in letters], dtype=np.int64))

    left = a.transpose([ta.index(c) for c in batch + free_a + summed]).reshape(
        span(batch), span(free_a), span(summed))
    right = b.transpose([tb.index(c) for c in batch + summed + free_b]).reshape(
        span(batch), span(summed), span(free_b))
    order = batch + free_a + free_b
    shape = tuple(size[c] for c in order)
    perm = [order.index(c) for c in out] + [len(out)]
    return _Matmul(left, right, lambda r: r.reshape(shape + r.shape[-1:]).transpose(perm))


def _reduction(x: np.ndarray, axis: int | Sequence[int] | None = None,
               keepdims: bool = False) -> _Rows | None:
    try:
        axes = tuple(range(x.ndim)) if axis is None else tuple(
            int(i) % x.ndim for i in np.atleast_1d(axis))
    except (TypeError, ZeroDivisionError):
        return None
    if len(set(axes)) != len(axes):
        return None
    kept = [i for i in range(x.ndim) if i not in axes]
    moved = x.transpose(kept + list(axes))
    shape = tuple(1 if i in axes else x.shape[i] for i in range(x.ndim)) if keepdims else \
        tuple(x.shape[i] for i in kept)
    n = int(np.prod([x.shape[i] for i in axes], dtype=np.int64))
    return _Rows(moved.reshape(-1, n), False, lambda r: r.reshape(shape + r.shape[-1:]))


def _accumulation(x: np.ndarray, axis: SupportsIndex | None = None) -> _Rows | None:
    if axis is None:
        flat = x.reshape(1, -1)
        return _Rows(flat, True, lambda r: r.reshape(r.shape[1:]))
    try:
        ax = int(axis) % x.ndim
    except (TypeError, ZeroDivisionError):
        return None
    moved = np.moveaxis(x, ax, -1)
    shape = moved.shape
    return _Rows(moved.reshape(-1, shape[-1]), True,
                 lambda r: np.moveaxis(r.reshape(shape + r.shape[-1:]), -2, ax))


def _full_correlation(a: np.ndarray, v: np.ndarray) -> _Matmul:
    """full[t] = sum_j a[t - (len(v) - 1) + j] v[j], t = 0 .. len(a) + len(v) - 2."""
    m = v.shape[0]
    padded = np.concatenate([np.zeros(m - 1), a, np.zeros(m - 1)])
    windows = np.lib.stride_tricks.sliding_window_view(padded, m)
    return _Matmul(np.ascontiguousarray(windows)[None], v.reshape(1, m, 1),
                   lambda r: r.reshape(r.shape[1:2] + r.shape[-1:]))


def _correlate(a: np.ndarray, v: np.ndarray, mode: str = "valid") -> _Matmul | None:
    """numpy's correlate: the full correlation, cut to ``mode`` (reversed when ``a`` is the
    shorter, as numpy computes it)."""
    if a.ndim != 1 or v.ndim != 1 or not a.size or not v.size or mode not in ("valid", "same", "full"):
        return None
    inverted = a.size < v.size
    if inverted:
        a, v = v, a
    n, m = a.size, v.size
    start, length = {"valid": (m - 1, n - m + 1), "same": (m - 1 - m // 2, n),
                     "full": (0, n + m - 1)}[mode]
    full = _full_correlation(a, v)

    def post(r: np.ndarray) -> np.ndarray:
        cut = full.post(r)[start:start + length]
        return cut[::-1] if inverted else cut

    return _Matmul(full.a, full.b, post)


def _convolve(a: np.ndarray, v: np.ndarray, mode: str = "full") -> _Matmul | None:
    if a.ndim != 1 or v.ndim != 1:
        return None
    if v.size > a.size:
        a, v = v, a
    return _correlate(a, v[::-1], mode)


def _plan(name: str, values: tuple[np.ndarray, ...], params: dict[str, Any]) -> _Matmul | _Rows | None:
    p = dict(params)
    try:
        if name == "einsum":
            return _einsum(p.pop("subscripts"), *values)
        if name in ("sum", "cumsum"):
            (x,) = values
            return _reduction(x, **p) if name == "sum" else _accumulation(x, **p)
        a, b = values
        if name == "inner" and min(a.ndim, b.ndim):
            return _tensordot(a, b, ([-1], [-1]))
        if name == "vdot":
            return _tensordot(a.reshape(-1), b.reshape(-1), 1)
        builders: dict[str, Callable[..., _Matmul | None]] = {
            "matmul": _matmul, "dot": _dot, "tensordot": _tensordot, "convolve": _convolve,
            "correlate": _correlate}
        build = builders.get(name)
        return None if build is None else build(a, b, **p)
    except (TypeError, ValueError):  # a form outside the vocabulary (or a numpy error)
        return None


def components(name: str, values: tuple[np.ndarray, ...], params: dict[str, Any],
               ncomp: int, *, threads: bool = False) -> np.ndarray | None:
    """The exact result of the operation ``name`` on float64 ``values`` as float64
    components on a last axis of length ``ncomp``, or None outside the vocabulary;
    ``threads``: let the kernels use threads (never inside a worker process)."""
    plan = _plan(name, values, params)
    if plan is None:
        return None
    if isinstance(plan, _Matmul):
        return plan.post(exact_matmul(plan.a, plan.b, ncomp, threads=threads))
    rows = (exact_cumsum if plan.cumulative else exact_sum)(plan.x, ncomp, threads=threads)
    return plan.post(rows)


def sensitivity(name: str, values: tuple[np.ndarray, ...], weights: tuple[np.ndarray, ...],
                params: dict[str, Any]) -> np.ndarray | None:
    """``sum_j w_j |d(out)/d(x_j)|`` over the operands' entries: for a linear operation the
    same operation on the weights, for a bilinear one ``op(|a|, w_b) + op(w_a, |b|)``
    (exact when each operand entry meets each output once), in float64."""
    if len(values) == 1:
        plan = _plan(name, weights, params)
        if plan is None:
            return None
        return _float(plan)
    magnitudes = (np.abs(values[0]), np.abs(values[1]))
    left = _plan(name, (magnitudes[0], weights[1]), params)
    if left is None:
        return None
    if all(w is m or np.array_equal(w, m) for w, m in zip(weights, magnitudes)):
        return 2 * _float(left)  # both operands perturbed by their magnitude: the same product
    right = _plan(name, (weights[0], magnitudes[1]), params)
    if right is None:
        return None
    return _float(left) + _float(right)


def _float(plan: _Matmul | _Rows) -> np.ndarray:
    """The plan computed in float64 (magnitudes: rounding is immaterial)."""
    if isinstance(plan, _Matmul):
        return plan.post(magnitude_matmul(plan.a, plan.b)[..., None])[..., 0]
    rows = np.cumsum(plan.x, axis=-1) if plan.cumulative else plan.x.sum(axis=-1)
    return plan.post(rows[..., None])[..., 0]


__all__ = ["NAMES", "name_of", "components", "sensitivity"]
