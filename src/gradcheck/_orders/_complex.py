"""Complex inputs and outputs in this feature, under ``check``'s one convention.

A complex array is a real one of twice the length (its real view ``[Re a, Im a]``), and every
inner product here is the real one of those views,

    <a, b> = Re sum(conj(a) b) = sum(Re a Re b + Im a Im b),

the inner product under which complex ``check`` reduces an output (``L = Re sum(conj(v) y)``,
``gradcheck._pipeline.complex``). Derivatives are R-linear maps of the real views:

* a JVP ``jvp(x, t) = J t`` is the pushforward, ``d/ds f(x + s t)`` at ``s = 0``, the same in
  every convention (torch's and jax's forward modes); ``t`` is complex where ``x`` is;
* the adjoint ``J* v`` of ``J`` under ``<.,.>`` is the gradient of ``<v, f>`` in the
  ``"torch"`` convention (``dL/dRe z + i dL/dIm z``): a torch-convention VJP is ``vjp(x, v) =
  J* v``; a ``"jax"`` one is its conjugate called with ``conj(v)``, ``vjp(x, w) =
  conj(J* conj(w))`` (``jax.vjp``'s transpose), so ``J* v = conj(vjp(x, conj(v)))``;
* a gradient of a real ``f`` is ``J* 1`` (torch: ``2 z`` for ``|z|^2``; jax: ``2 conj(z)``),
  a Hessian-vector product the derivative of that gradient along ``v`` (jax: its conjugate).

``complex_convention`` chooses (``"torch"``, ``"jax"``, or None: ``"jax"`` for jax input and
``"torch"`` otherwise), as for ``check``. Nothing here casts a complex value to a real one: a
claim that drops an imaginary part is compared as the complex number it is, and fails.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, SupportsFloat, cast

import numpy as np

from ._links import (
    Along,
    Backend,
    OutputError,
    PerPoint,
    Target,
    at_x,
    default_convention,
    float_dtype_name,
    make_runner,
    output_array,
    require_real_output,
    validate_convention,
)

__all__ = ["adjoint_of", "along", "convention_of", "evaluate", "inner", "note", "random_like", "real_view",
           "require_input", "to_torch"]


def require_input(x_np: np.ndarray) -> bool:
    """Whether ``x`` is complex, after refusing what has no derivative: a real floating or
    complex array passes; an integer, bool or object array is refused as ``check`` refuses it."""
    if x_np.dtype.kind == "c":
        return True
    float_dtype_name(x_np)  # UnsupportedInputError saying what x is and what to pass
    return False


def evaluate(inner: Backend, f: Callable[..., object], z: np.ndarray, where: str, like: np.ndarray | None = None) -> np.ndarray:
    """``f(z)`` through the backend as numpy, at a point of its own (``x`` itself: the points
    along a direction go through :func:`along`). ``f`` raising is :class:`FunctionError`, a
    value that is not real or complex numbers (None, a string) is :class:`OutputError`, and so
    is another shape, or complex where ``like`` (``f(x)``) is real (or real where it is
    complex): each saying ``where`` (``"at x"``); an ``f`` that writes into ``z`` is
    :class:`InputMutationError`, as in ``check`` (the evaluation layer's :func:`at_x`)."""
    return at_x(lambda: _output(inner, f, z, where, like), where, work=z)


def _output(inner: Backend, f: Callable[..., object], z: np.ndarray, where: str, like: np.ndarray | None) -> np.ndarray:
    """``f(z)`` as numpy, refused (:class:`OutputError`) when it is not numbers or not ``like``."""
    y = output_array(inner.evaluate(f, z))
    if y.dtype.kind != "c":
        require_real_output(y, "f", None, where)
    if like is not None and (y.shape != like.shape or (y.dtype.kind == "c") != (like.dtype.kind == "c")):
        raise OutputError(f"{y.dtype} of shape {y.shape}", None, where, tail=(
            f", after {like.dtype} of shape {like.shape} at x; f must return the same shape and kind of number "
            "at every point"))
    return y


def along(inner: Backend, f: Callable[..., object], x: np.ndarray, direction: np.ndarray,
          reduce: Callable[[np.ndarray], SupportsFloat | Sequence[float]], scales: Sequence[float],
          labels: Sequence[str], like: np.ndarray | None = None, *, engine: str = "serial", executor: object = None,
          answers: int = 1) -> np.ndarray:
    """``reduce(f(x + s direction))`` for each of ``scales`` (float64), the points evaluated by a
    runner of the evaluation layer (``engine``; ``executor`` for ``"executor"``) on a private copy
    of ``x``: the layer restores it, detects a write by ``f`` and names an error by the point's
    label (``labels[j]``): ``f`` raising is :class:`FunctionError`, its output refused as
    :func:`evaluate` refuses it :class:`OutputError`. The runner is closed before it returns.
    With ``answers`` k > 1, ``reduce`` returns k floats, each point is evaluated once and the
    values are shaped ``(len(scales), k)`` (the layer's :class:`PerPoint` reduction)."""
    work = np.array(x, copy=True)

    def output() -> np.ndarray:
        return _output(inner, f, work, "at a point along the direction", like)

    if answers == 1:
        one = cast(Callable[[np.ndarray], SupportsFloat], reduce)
        target = Target(f=f, work=work, evaluate=lambda: float(one(output())), backend=inner, executor=executor)
    else:
        several = PerPoint(cast(Callable[[object], Sequence[float]], reduce), answers, () if like is None else like.shape)
        target = Target(f=f, work=work, evaluate=output, backend=inner, executor=executor, slices=several)
    runner = make_runner(engine, target)
    try:
        return Along(runner, work, direction, answers).values(scales, labels)
    finally:
        runner.close()


def convention_of(convention: Any, backend: Any) -> str:
    """The convention asked for (validated), or the backend's default (check's rule)."""
    validate_convention(convention)
    return convention or default_convention(backend)


def to_torch(g: np.ndarray, convention: str) -> np.ndarray:
    """A complex claim (gradient, VJP, Hessian-vector product) in the ``"torch"`` form
    ``J* v``: itself, or its conjugate for ``"jax"``; a real claim as it is."""
    return np.conj(g) if convention == "jax" and np.iscomplexobj(g) else g


def adjoint_of(vjp: Any, convention: str) -> Any:
    """``v -> J* v`` from a VJP in ``convention`` (jax's is called with ``conj(v)``)."""
    if convention == "torch":
        return vjp
    return lambda v: to_torch(np.asarray(vjp(np.conj(v))), "jax")


def real_view(a: Any, like_complex: bool = False) -> np.ndarray:
    """``a`` flat in float64: ``[Re a_0, Im a_0, Re a_1, ...]`` for a complex ``a`` (or a real
    one when ``like_complex``: imaginary parts 0), the values themselves for a real one."""
    a = np.asarray(a)
    if a.dtype.kind == "c" or like_complex:
        c = np.asarray(a, dtype=np.complex128).reshape(-1)
        return np.stack([c.real, c.imag], axis=-1).reshape(-1)
    return np.asarray(a, dtype=np.float64).reshape(-1)


def inner(a: Any, b: Any) -> tuple[float, float]:
    """``(<a, b>, sum |Re a Re b| + |Im a Im b|)`` in float64, pairwise summation: the real
    inner product of the real views (a real array against a complex one: imaginary parts 0)."""
    both = np.iscomplexobj(a) or np.iscomplexobj(b)
    p = real_view(a, both) * real_view(b, both)
    return float(np.add.reduce(p)), float(np.add.reduce(np.abs(p)))


def random_like(rng: np.random.Generator, shape: tuple[int, ...], complex_: bool) -> np.ndarray:
    """Seeded standard normals shaped ``shape``; complex (real and imaginary parts both
    drawn) when ``complex_``."""
    re = rng.standard_normal(shape)
    return re + 1j * rng.standard_normal(shape) if complex_ else re


def note(convention: str) -> str:
    """What a result says about a complex problem."""
    vjp = ("vjp(x, v) = J* v (dL/dRe z + i dL/dIm z)" if convention == "torch"
           else "vjp(x, w) = conj(J* conj(w)) (jax's transpose; the gradient is dL/dRe z - i dL/dIm z)")
    return (f"complex: inner products <a, b> = Re sum(conj(a) b) of the real views; convention "
            f"{convention!r}: {vjp}")
