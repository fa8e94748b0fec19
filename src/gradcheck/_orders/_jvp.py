"""``check_jvp``: a forward-mode claim checked at every input entry.

The claim is a JVP, ``jvp(x, t) = J t``. Entry ``i`` of the gradient that ``check``
judges is ``v . J e_i`` (``J e_i`` itself for a scalar ``f``), with ``v`` the same seeded
cotangent ``check`` uses: so every input entry is checked, with ``check``'s verdicts,
tolerance, step study and referee (the differences do not involve the claim at all).

Complex ``x`` or output (:mod:`._complex`): entry ``i`` is ``<v, J e_i> + i <v, J (i e_i)>``
(conjugated in the ``"jax"`` convention) with ``<a, b> = Re sum(conj(a) b)``, the gradient
complex ``check`` differences on the real view; the tangents ``e_i`` and ``i e_i`` are complex,
so a complex ``x`` costs 2N JVPs. A JVP with an imaginary part for a real-valued ``f`` is
refused, never cast.

Cost: N JVPs (one per input entry) besides the 2N evaluations of ``f``. They are batched
where that is possible: the torch and jax adapters push chunks of basis tangents through
one ``vmap`` (``torch.func.vmap`` / ``jax.vmap``), a numpy ``jvp`` that accepts a leading
batch axis of tangents says so with ``batched=True``; else they are N calls.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ._complex import convention_of, to_torch
from ._links import (
    ClaimBackend,
    Report,
    UnsupportedInputError,
    backends,
    call_watched,
    check,
    flag,
    label_of,
    require_call,
    text,
    with_notes,
)

#: Basis tangents per batch: at most this many output values per chunk (~32 MB in float64).
CHUNK_VALUES = 1 << 22


def check_jvp(f: Callable[..., Any], x: Any, jvp: Callable[..., Any] | None = None, *,
              batched: bool = False, backend: Any = None, name: str | None = None, **options: Any) -> Report:
    """Check the forward-mode derivative ``jvp(x, t) = J t`` of ``f`` at every entry of ``x``.

    ``jvp`` takes the point and one tangent shaped like ``x`` and returns ``J t``, shaped
    like ``f(x)`` (a scalar for a scalar ``f``); with ``batched=True`` it takes a stack of
    tangents ``(k, *x.shape)`` and returns ``(k, *f(x).shape)``. For torch tensors and jax
    arrays, ``jvp=None`` checks the framework's own forward mode (``torch.func.jvp``,
    ``jax.jvp``; custom rules included). Other keywords are :func:`gradcheck.check`'s
    (``complex_convention`` among them: a JVP is the same in both conventions, the report's
    complex entries are written in it).

    Entry ``i`` of the report is ``v . J e_i`` against the central difference of
    ``v . f``, with ``check``'s seeded cotangent ``v``: the verdicts, tolerance, step study
    and referee are ``check``'s.

    Parameters
    ----------
    f : callable
        The function, ``f(x)``, a scalar or an array.
    x : array_like
        One input array (numpy, torch or jax); for ``f(*xs)``, check each input with the
        others held fixed.
    jvp : callable, optional
        The claim, ``jvp(x, t) -> J t``; None checks the framework's own forward mode.
    batched : bool, default False
        ``jvp`` takes a stack of tangents ``(k, *x.shape)`` and returns ``(k, *f(x).shape)``.
    backend : str or backend object, optional
        As for :func:`gradcheck.check`; default: inferred from ``x``.
    name : str, optional
        What the report calls the claim (default ``"jvp of <f's name>"``).
    **options
        Any other keyword of :func:`gradcheck.check` (``config=``, ``rtol=``, ``eps=``,
        ``engine=``, ...): ``check_jvp(f, x, jvp, rtol=1e-5)``.

    Returns
    -------
    Report
        One verdict per input entry, with :func:`gradcheck.check`'s tolerances and notes.

    Raises
    ------
    TypeError
        ``x`` is a tuple of inputs, or ``jvp=None`` for a backend without forward mode.
    GradcheckError
        As :func:`gradcheck.check` raises for bad inputs or a failing ``f`` (for example
        :class:`~gradcheck.FunctionError`, :class:`~gradcheck.ShapeMismatchError`).

    Examples
    --------
    >>> import numpy as np, gradcheck
    >>> f = lambda x: np.sin(x) * x[::-1]
    >>> jvp = lambda x, t: np.cos(x) * t * x[::-1] + np.sin(x) * t[::-1]
    >>> gradcheck.check_jvp(f, np.array([0.3, -1.2, 2.0]), jvp).passed
    True
    """
    batched, name = bool(flag("batched", batched)), text("name", name)
    if jvp is not None and not callable(jvp):
        raise TypeError(f"jvp must be a function jvp(x, t) returning J t, or None (the framework's own forward "
                        f"mode), got {jvp!r}")
    if isinstance(x, tuple) and x and all(hasattr(e, "shape") for e in x):
        raise TypeError("check_jvp takes one input array; for f(*xs), check each input with the "
                        "others held fixed (functools.partial)")
    if jvp is not None:
        require_call(jvp, "jvp", ("x", "t"), returns="J t, shaped like f(x)" + (" per tangent" if batched else ""),
                     why="check_jvp calls the JVP with the point and " + ("a stack of tangents" if batched
                                                                         else "one tangent"))
    inner = backends.resolve(backend, x)
    if jvp is None and not hasattr(inner, "jvp"):
        raise TypeError(f"the {inner.name} backend has no forward mode of its own: pass jvp=, a "
                        "function jvp(x, t) returning J t")
    claim = ClaimBackend(inner, lambda z, v: z, name=f"jvp-{inner.name}")  # replaced on the next line
    convention = convention_of(options.get("complex_convention"), claim)
    claim.claim = _claim_builder(f, inner, jvp, batched, claim.notes, convention)
    label = name or f"jvp of {label_of(f)}"
    report = check(f, x, None, backend=claim, name=label, **options)
    return with_notes(report, claim.notes)


def _claim_builder(f, inner, jvp, batched: bool, notes: list[str], convention: str):
    """The claimed gradient ``(x, v) -> [<v, J e_i>]_i`` from JVP calls, in chunks; for a
    complex ``x`` also ``<v, J (i e_i)>``, the two combined in ``convention``
    (:mod:`._complex`): the gradient ``check`` compares with its differences of the real view."""

    def claim(x: np.ndarray, cotangent: np.ndarray | None) -> np.ndarray:
        # check passes jax's cotangent conjugated (it is what jax's VJP takes): v itself here
        v = None if cotangent is None else to_torch(np.asarray(cotangent), convention)
        units = (1.0, 1j) if x.dtype.kind == "c" else (1.0,)
        if not x.size:  # nothing to differentiate along
            return np.zeros(x.shape, dtype=np.complex128 if len(units) > 1 else np.float64)
        parts, calls, how = [], 0, ""
        for unit in units:
            part, used, how = _directional(f, inner, jvp, batched, x, unit, v)
            parts.append(part)
            calls += used
        count = x.size * len(units)
        notes.append(f"the claim v . J e_i was built from {count} JVPs ({how}, {calls} call"
                     f"{'s' if calls != 1 else ''})" + ("; complex x: tangents e_i and i e_i" if len(units) > 1 else ""))
        if len(units) == 1:
            return parts[0].reshape(x.shape)
        grad = parts[0] + 1j * parts[1]  # dL/dRe z + i dL/dIm z, the torch form
        return to_torch(grad, convention).reshape(x.shape)

    return claim


def _directional(f, inner, jvp, batched: bool, x: np.ndarray, unit: complex,
                 v: np.ndarray | None) -> tuple[np.ndarray, int, str]:
    """``<v, J (unit e_i)>`` for every entry ``i`` (float64), the calls made and how."""
    size = x.size
    out_size = None
    rows: list[np.ndarray] = []
    how = ""
    start, chunk = 0, 1
    while start < size:
        stop = min(size, start + chunk)
        tangents = np.zeros((stop - start,) + x.shape, dtype=x.dtype)
        tangents.reshape(stop - start, -1)[np.arange(stop - start), np.arange(start, stop)] = unit
        values, how = _jvps(f, inner, jvp, batched, x, tangents)
        values = values.reshape(stop - start, -1)
        rows.append(_reduce(values, v))
        if out_size is None:  # the first call (one tangent) sizes the chunks
            out_size = max(1, values.shape[1])
            chunk = max(1, CHUNK_VALUES // out_size) if (batched or jvp is None) else 1
        start = stop
    return np.concatenate(rows), len(rows), how


def _jvps(f, inner, jvp, batched: bool, x: np.ndarray, tangents: np.ndarray) -> tuple[np.ndarray, str]:
    """``J t`` for each row of ``tangents``, and how it was computed."""
    if jvp is None:
        return inner.jvp(f, x, tangents)
    if batched:
        return call_user(inner, jvp, x, tangents, role="jvp"), "the given jvp, batched"
    rows = [call_user(inner, jvp, x, t, role="jvp") for t in tangents]
    return np.stack(rows), "the given jvp, one call per tangent"


def call_user(inner: Any, fn: Callable[..., Any], *arrays: np.ndarray, role: str = "claim",
              names: tuple[str, ...] = ("x", "t")) -> np.ndarray:
    """``fn(*arrays)`` with the arrays in the backend's type (tensors for torch, jax arrays
    inside the x64 scope for jax; private copies for numpy), the result as numpy. A numpy
    ``fn`` (the claimed ``role``, its arguments ``names``) that writes into its copies
    raises :class:`~gradcheck.InputMutationError` naming it."""
    scope = getattr(inner, "_scope", None)
    convert: Any = getattr(inner, "_tensor", None)
    if inner.name == "jax":
        import jax.numpy as jnp

        convert = jnp.asarray
    args = [np.array(a, copy=True) for a in arrays]
    if scope is not None:
        with scope(args[0]):
            value = fn(*[convert(a) for a in args])
            return np.array(value, copy=True)
    if convert is not None:
        return np.array(inner.to_numpy(fn(*[convert(a) for a in args])), copy=True)
    value = call_watched(fn, args, names, f"the claimed {role} ({label_of(fn)})")
    return np.array(inner.to_numpy(value), copy=True)


def _reduce(values: np.ndarray, cotangent: np.ndarray | None) -> np.ndarray:
    """``<v, J e_i> = Re sum(conj(v) J e_i)`` per row, in float64 (the rows themselves for a
    scalar ``f``). ``J e_i`` of a real ``f`` (``v`` real or None) must be real: complex values
    with an imaginary part are refused, never cast."""
    real_output = cotangent is None or not np.iscomplexobj(cotangent)
    if real_output and np.iscomplexobj(values):
        if np.any(values.imag != 0):
            raise UnsupportedInputError(
                f"jvp returned complex values (imaginary parts up to {float(np.abs(values.imag).max()):.3g}) "
                "for an f with real output: J t of a real f is real (e.g. 2 Re(conj(z) t) for |z|^2)")
        values = values.real
    if cotangent is None:
        if values.shape[1] != 1:
            raise ValueError(f"jvp returned {values.shape[1]} values per tangent for a scalar f")
        return values[:, 0].astype(np.float64)
    v = np.asarray(cotangent).reshape(-1)
    if values.shape[1] != v.size:
        raise ValueError(f"jvp returned {values.shape[1]} values per tangent, but f(x) has {v.size}")
    # a pairwise sum per row, not BLAS: the same bits however the tangents were chunked
    if np.iscomplexobj(v):  # Re(conj(v) y) = Re v Re y + Im v Im y
        c = np.ascontiguousarray(values, dtype=np.complex128)
        return np.add.reduce(c.real * v.real + c.imag * v.imag, axis=1)
    return np.add.reduce(np.ascontiguousarray(values, dtype=np.float64) * v.astype(np.float64), axis=1)
