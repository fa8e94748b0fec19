"""``check_adjoint``: the dot-product test ``<J t, v> = <t, J^T v>``.

A tangent-linear model ``jvp`` and an adjoint model ``vjp`` written by hand must be
transposes of each other. For seeded random ``t`` and ``v`` (three draws: ``(t1, v1)``,
``(t2, v2)`` and their sums) the two inner products are compared against a bound:

    |<J t, v> - <t, J^T v>| <= k * ( g_out * sum|J t * v| + g_in * sum|t * J^T v|
                                      + sum|d_J| * |v|  + sum|d_JT| * |t| )

* ``g_n = (ceil(log2 n) + 2) * u`` bounds the round-off of an inner product of ``n``
  terms summed pairwise (numpy's ``add.reduce``; one more ``u`` for the products), ``u``
  the unit round-off of the lowest precision among ``x``, ``J t`` and ``J^T v``;
* ``d_J = J(t1 + t2) - J t1 - J t2`` (and ``d_JT`` likewise) is the measured round-off of
  the operators themselves: a correct operator is linear up to its own round-off, so its
  linearity defect is what the two products may legitimately differ by beyond the sums'
  rounding (a matrix product with cancellation, a solver with a tolerance);
* ``k`` is ``noise_factor`` (8, as in ``check``).

An operator whose linearity defect exceeds ``sqrt(u)`` of its output's size is not a
linear map at all: that fails the test too, naming it. With ``f`` given, each side is
also compared with a central difference of ``v . f`` along ``t`` (Richardson-extrapolated),
so a failure says which of the two models is inconsistent with ``f``.
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._complex import adjoint_of, along, convention_of, evaluate, note, random_like, require_input
from ._complex import inner as real_inner
from ._jvp import call_user
from ._links import (
    ShapeMismatchError,
    UnsupportedInputError,
    as_seed,
    as_shape,
    backends,
    dtype_name,
    modelled,
    positive,
    require_call,
    richardson,
    same_bits,
    text,
    truncation,
    unit_roundoff_of,
)
from ._result import FAIL, PASS, ResultMixin


@dataclass(frozen=True, eq=False, repr=False)  # repr: ResultMixin's one short line
class AdjointResult(ResultMixin):
    """The dot-product test: per draw ``<J t, v>``, ``<t, J^T v>``, their difference and
    the bound it must stay under; the operators' linearity defects; and, when ``f`` was
    given, which side agrees with finite differences (``blame``).

    Examples
    --------
    >>> import numpy as np, gradcheck
    >>> A = np.random.default_rng(0).standard_normal((5, 4))
    >>> f = lambda x: np.tanh(A @ x)
    >>> jvp = lambda x, t: (1 - np.tanh(A @ x) ** 2) * (A @ t)
    >>> vjp = lambda x, v: 2 * A.T @ ((1 - np.tanh(A @ x) ** 2) * v)     # twice too large
    >>> result = gradcheck.check_adjoint(jvp, vjp, np.array([0.3, -1.2, 0.7, 0.1]), f=f)
    >>> result.passed, result.blame["verdict"]
    (False, 'the vjp (adjoint) is inconsistent with f; the jvp agrees')
    """

    name: str
    forward: tuple[float, ...]          # <J t, v> per draw
    adjoint: tuple[float, ...]          # <t, J^T v> per draw
    bound: tuple[float, ...]
    linearity: dict[str, float]         # relative defects of jvp and vjp, and the limit
    in_shape: tuple[int, ...]
    out_shape: tuple[int, ...]
    dtype: str
    seconds: float
    calls: int
    blame: dict[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    @property
    def differences(self) -> tuple[float, ...]:
        return tuple(abs(a - b) for a, b in zip(self.forward, self.adjoint))

    @property
    def nonlinear(self) -> tuple[str, ...]:
        """The models whose linearity defect is beyond round-off."""
        limit = self.linearity["limit"]
        return tuple(k for k in ("jvp", "vjp") if not self.linearity[k] <= limit)

    @property
    def inconsistent(self) -> tuple[str, ...]:
        """The models that disagree with finite differences of ``f`` (``blame``; empty
        without ``f``)."""
        return tuple(k for k in ("jvp", "vjp") if self.blame and not self.blame[f"{k}_agrees"])

    @property
    def status(self) -> str:
        """FAIL when a draw's difference exceeds its bound (or is not finite), when a model
        is not linear, or when a model disagrees with ``f`` (the blame): two models that
        are transposes of each other but not derivatives of ``f`` are wrong too."""
        finite = all(math.isfinite(v) for v in self.forward + self.adjoint + self.bound)
        held = finite and all(d <= b for d, b in zip(self.differences, self.bound))
        return PASS if held and not self.nonlinear and not self.inconsistent else FAIL

    def summary(self) -> str:
        worst = max((d / b if b > 0 else (0.0 if d == 0 else math.inf))
                    for d, b in zip(self.differences, self.bound))
        against = f"; {self.blame['verdict']}" if self.inconsistent else ""
        return (f"{self.name}: {self.status} -- adjoint test <J t, v> = <t, J^T v>, {len(self.forward)} draws, "
                f"x {self.in_shape} -> y {self.out_shape}; worst |difference|/bound {worst:.2g}{against}")

    def lines(self) -> list[str]:
        out = [f"dtype {self.dtype}, {self.calls} operator calls in {self.seconds:.3g} s"]
        out.append(f"{'draw':<8} {'<J t, v>':>24} {'<t, J^T v>':>24} {'|difference|':>13} {'bound':>10}")
        labels = ("t1, v1", "t2, v2", "sums")
        for i, (a, b, bd) in enumerate(zip(self.forward, self.adjoint, self.bound)):
            out.append(f"{labels[i]:<8} {a:>24.16e} {b:>24.16e} {abs(a - b):>13.3e} {bd:>10.3e}")
        lin = self.linearity
        out.append(f"linearity defect (relative): jvp {lin['jvp']:.2e}, vjp {lin['vjp']:.2e}; "
                   f"beyond {lin['limit']:.1e} is not round-off")
        for which in self.nonlinear:
            out.append(f"{which} is not linear in its {'tangent' if which == 'jvp' else 'cotangent'}: "
                       f"J(a + b) differs from J a + J b far beyond round-off")
        out.extend(self._blame_lines())
        out.extend(f"note: {n}" for n in self.notes)
        return out

    def _blame_lines(self) -> list[str]:
        if not self.blame:
            return []
        b = self.blame
        said = {True: "agrees", False: "DISAGREES"}
        line = (f"finite differences of v . f along t: {b['numeric']:.12e} (+- {b['error']:.1e}); "
                f"jvp {said[b['jvp_agrees']]}, vjp {said[b['vjp_agrees']]}")
        return [line, f"verdict on the models: {b['verdict']}"]

    def _fields(self) -> dict[str, Any]:
        return {"forward": list(self.forward), "adjoint": list(self.adjoint), "bound": list(self.bound),
                "differences": list(self.differences), "linearity": dict(self.linearity),
                "nonlinear": list(self.nonlinear), "inconsistent": list(self.inconsistent), "in_shape": list(self.in_shape),
                "out_shape": list(self.out_shape), "dtype": self.dtype, "seconds": self.seconds,
                "calls": self.calls, "blame": dict(self.blame), "notes": list(self.notes)}


def check_adjoint(jvp: Callable[..., Any] | None, vjp: Callable[..., Any] | None, x: Any = None, *,
                  f: Callable[..., Any] | None = None, in_shape: tuple[int, ...] | None = None,
                  backend: Any = None, seed: int = 0, noise_factor: float = 8.0,
                  name: str | None = None, complex_convention: str | None = None) -> AdjointResult:
    """The dot-product test of a tangent-linear model ``jvp`` against its adjoint ``vjp``.

    With a point ``x``: ``jvp(x, t) = J t`` and ``vjp(x, v) = J^T v`` (the Jacobian of
    some ``f`` at ``x``); with ``x=None`` (a linear operator): ``jvp(t)``, ``vjp(v)`` and
    ``in_shape`` gives the shape of ``t`` (real tangents: for a complex input space pass
    ``x``). For torch tensors and jax arrays, ``jvp=None`` and ``vjp=None`` mean the
    framework's forward and reverse modes of ``f``. With ``f`` given, each side is also
    compared with finite differences of ``f`` (``result.blame`` names the inconsistent one,
    and a model inconsistent with ``f`` fails the test). The bound is in this module's
    docstring.

    Complex ``x`` or output: ``t`` and ``v`` are drawn complex, the inner products are
    ``<a, b> = Re sum(conj(a) b)`` (check's), and ``complex_convention`` says what ``vjp``
    returns: ``"torch"`` (the default; ``J^H v`` for a holomorphic ``f``, ``J* v`` in general)
    or ``"jax"`` (the default for jax input; jax's transpose, ``J^T v`` for a holomorphic
    ``f``). ``gradcheck._orders._complex`` states the rule. Nothing is cast: ``A^T`` where
    ``A^H`` is right, or a dropped imaginary part, fails.

    Parameters
    ----------
    jvp : callable or None
        The tangent-linear model: ``jvp(x, t)``, or ``jvp(t)`` for a linear operator; None
        means the framework's forward mode of ``f``.
    vjp : callable or None
        Its adjoint: ``vjp(x, v)``, or ``vjp(v)``; None means the framework's reverse mode.
    x : array_like, optional
        The point of linearization; None for a linear operator (then ``in_shape`` is needed).
    f : callable, optional
        The function both models linearize: each side is then also compared with a central
        difference of ``v . f`` along ``t``.
    in_shape : tuple of int, optional
        The shape of a tangent ``t`` for a linear operator (``x=None``).
    backend : str or backend object, optional
        As for :func:`gradcheck.check`; default: inferred from ``x``.
    seed : int, default 0
        Seeds the random tangents and cotangents.
    noise_factor : float, default 8.0
        How many modelled round-off units of the inner products to forgive.
    name : str, optional
        What the result calls the pair.
    complex_convention : {"torch", "jax"}, optional
        For complex ``x`` or output: what ``vjp`` returns, as for :func:`gradcheck.check`
        (default ``"jax"`` for jax input, ``"torch"`` otherwise; see above).

    Returns
    -------
    AdjointResult
        The three draws' inner products, their bounds, the linearity defects and, with ``f``,
        which model disagrees with it (``.passed``, ``.assert_pass()``, ``str()``).

    Raises
    ------
    TypeError
        A missing ``in_shape`` (linear operator), ``jvp``/``vjp`` None without a framework
        ``f`` and ``x``, or a missing model without ``x``.
    ShapeMismatchError
        ``vjp(v)`` is not shaped like the input, or ``jvp`` returns different shapes.
    FunctionError, OutputError, InputMutationError
        ``f`` raised, returned something that is not numbers (or another shape), or wrote into
        its input, at the point named.
    ValueError, UnsupportedInputError
        A keyword out of range; an integer, bool or object ``x``.

    Examples
    --------
    >>> import numpy as np, gradcheck
    >>> A = np.random.default_rng(0).standard_normal((300, 200))
    >>> gradcheck.check_adjoint(lambda t: A @ t, lambda v: A.T @ v, in_shape=(200,)).passed
    True
    >>> gradcheck.check_adjoint(lambda t: A @ t, lambda v: A[:, ::-1].T @ v, in_shape=(200,)).passed
    False
    """
    started = time.perf_counter()
    seed, noise_factor = as_seed(seed), positive("noise_factor", noise_factor)
    in_shape = None if in_shape is None else as_shape("in_shape", in_shape)
    name = text("name", name)
    for label, fn in (("jvp", jvp), ("vjp", vjp), ("f", f)):
        if fn is not None and not callable(fn):
            raise TypeError(f"{label} must be a function or None, got {fn!r}")
    _require_calls(jvp, vjp, with_point=x is not None)
    inner, point, fwd, adj, label = _operators(jvp, vjp, x, f, in_shape, backend, name)
    convention = convention_of(complex_convention, inner)
    shape = point.shape if point is not None else tuple(in_shape or ())
    y0 = None if f is None or point is None else evaluate(inner, f, point.copy(), "at x")
    ts, vs, jt, jtv = _draws(fwd, adjoint_of(adj, convention), point, shape, seed, y0)
    unit = max(unit_roundoff_of(a) for a in (ts[0], jt[0], jtv[0]))
    defect_j = jt[2] - jt[0] - jt[1]
    defect_jt = jtv[2] - jtv[0] - jtv[1]
    rows = [_draw(t, v, a, b, defect_j, defect_jt, unit, noise_factor) for t, v, a, b in zip(ts, vs, jt, jtv)]
    limit = math.sqrt(unit)
    linearity = {"jvp": _relative(defect_j, jt), "vjp": _relative(defect_jt, jtv), "limit": limit}
    blame = {}
    if f is not None and point is not None:
        blame = _blame(f, point, inner, (ts[0], vs[0], jtv[0], y0), rows[0], unit, noise_factor)
    notes = (note(convention),) if any(np.iscomplexobj(a) for a in (ts[0], vs[0])) else ()
    return AdjointResult(name=label, forward=tuple(r[0] for r in rows), adjoint=tuple(r[1] for r in rows),
                         bound=tuple(r[2] for r in rows), linearity=linearity, in_shape=tuple(shape),
                         out_shape=tuple(jt[0].shape), dtype=str(dtype_name(ts[0].dtype)),
                         seconds=time.perf_counter() - started, calls=6, blame=blame, notes=notes)


def _draws(fwd, adj, point, shape, seed: int, y0: np.ndarray | None) -> tuple[list, list, list, list]:
    """``(t, v, J t, J* v)`` for the three draws (two seeded, then their sums): ``t`` complex
    where ``x`` is, ``v`` where ``J t`` (or ``f(x)``, ``y0`` when ``f`` was given) is."""
    complex_out = y0 is not None and y0.dtype.kind == "c"
    rng = np.random.default_rng(seed)
    dtype = point.dtype if point is not None else np.dtype(np.float64)
    ts = [random_like(rng, shape, dtype.kind == "c").astype(dtype) for _ in range(2)]
    jt = [fwd(t) for t in ts]
    kind = jt[0].dtype.kind
    v_dtype = jt[0].dtype if kind in "fc" else np.dtype(np.complex128 if complex_out else np.float64)
    if complex_out and kind != "c":
        v_dtype = np.result_type(v_dtype, np.complex64)
    vs = [random_like(rng, jt[0].shape, v_dtype.kind == "c").astype(v_dtype) for _ in range(2)]
    ts.append(ts[0] + ts[1])
    vs.append(vs[0] + vs[1])
    jt.append(fwd(ts[2]))
    jtv = [adj(v) for v in vs]
    _require_shapes(jt, jtv, shape, vs[0].shape)
    if y0 is not None and jt[0].shape != y0.shape:
        raise ShapeMismatchError("jvp(t) (it must be shaped like f(x))", y0.shape, jt[0].shape)
    for what, values, real in (("vjp(v)", jtv, dtype.kind != "c"), ("jvp(t)", jt, not complex_out and kind != "c")):
        if real and any(np.iscomplexobj(a) and np.any(a.imag != 0) for a in values):
            raise UnsupportedInputError(
                f"{what} returned complex values with an imaginary part where the "
                f"{'input x' if what == 'vjp(v)' else 'output f(x)'} is real: that derivative is real")
    return ts, vs, jt, jtv


def _require_calls(jvp: Any, vjp: Any, *, with_point: bool) -> None:
    """``jvp(x, t)`` and ``vjp(x, v)`` (``jvp(t)``, ``vjp(v)`` for a linear operator) at the door."""
    point = ("x",) if with_point else ()
    how = "with the point x" if with_point else "without x (a linear operator)"
    for role, fn, arg, returns in (("jvp", jvp, "t", "J t"), ("vjp", vjp, "v", "J^T v")):
        if fn is not None:
            require_call(fn, role, point + (arg,), why=f"check_adjoint calls the models {how}", returns=returns)


def _operators(jvp, vjp, x, f, in_shape, backend, name):
    """``(backend, x as numpy or None, t -> J t, v -> J^T v, label)``, numpy in and out."""
    if x is None:
        if in_shape is None:
            raise TypeError("check_adjoint(jvp, vjp) of a linear operator needs in_shape= (the shape of t); "
                            "for the Jacobian of f at x pass x")
        if jvp is None or vjp is None:
            raise TypeError("without x, pass both jvp(t) and vjp(v)")
        label = name or f"{getattr(jvp, '__name__', 'jvp')} / {getattr(vjp, '__name__', 'vjp')}"
        return None, None, lambda t: np.asarray(jvp(t.copy())), lambda v: np.asarray(vjp(v.copy())), label
    inner = backends.resolve(backend, x)
    point = np.array(inner.to_numpy(x), copy=True)
    require_input(point)
    if (jvp is None or vjp is None) and (f is None or not hasattr(inner, "jvp")):
        raise TypeError("jvp=None / vjp=None mean the framework's own modes: pass f and a torch or jax x")
    if jvp is None:
        fwd = lambda t: inner.jvp(f, point, t[None])[0][0]  # noqa: E731
    else:
        fwd = lambda t: call_user(inner, jvp, point, t, role="jvp")  # noqa: E731
    if vjp is None:
        adj = lambda v: np.array(inner.claimed_gradient(f, point.copy(), v, None), copy=True)  # noqa: E731
    else:
        adj = lambda v: call_user(inner, vjp, point, v, role="vjp", names=("x", "v"))  # noqa: E731
    subject = getattr(f, "__name__", "f") if f is not None else getattr(jvp, "__name__", "jvp")
    label = name or f"adjoint test of {subject}"
    return inner, point, fwd, adj, label


def _require_shapes(jt, jtv, in_shape, out_shape) -> None:
    if jtv[0].shape != tuple(in_shape):
        raise ShapeMismatchError("vjp(v) (it must be shaped like the input)", tuple(in_shape), jtv[0].shape)
    for a in jt[1:]:
        if a.shape != out_shape:
            raise ShapeMismatchError("jvp(t) on a second tangent", out_shape, a.shape)


def _dot(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """``(<a, b>, sum |a_k b_k|)`` in float64 (pairwise summation): the real inner product of
    the real views (:func:`._complex.inner`; for real arrays ``sum a*b``)."""
    return real_inner(a, b)


def _gamma(n: int, unit: float) -> float:
    return (math.ceil(math.log2(max(n, 1))) + 2) * unit


def _draw(t, v, jt, jtv, defect_j, defect_jt, unit, k) -> tuple[float, float, float]:
    """``(<J t, v>, <t, J^T v>, bound)`` for one draw."""
    lhs, abs_l = _dot(jt, v)
    rhs, abs_r = _dot(t, jtv)
    operators = _dot(np.abs(defect_j), np.abs(v))[0] + _dot(np.abs(defect_jt), np.abs(t))[0]
    bound = k * (_gamma(v.size, unit) * abs_l + _gamma(t.size, unit) * abs_r + operators)
    return lhs, rhs, bound


def _relative(defect: np.ndarray, outputs: list[np.ndarray]) -> float:
    size = sum(float(np.abs(o).astype(np.float64).sum()) for o in outputs)
    d = float(np.abs(defect).astype(np.float64).sum())
    return 0.0 if d == 0 else (d / size if size > 0 else math.inf)


def _blame(f, point, inner, draw, row, unit, k) -> dict[str, Any]:
    """Compare both sides of the first draw (``(t, v, J* v, f(x))``) with a
    Richardson-extrapolated central difference of ``<v, f>`` along ``t``; say which side is
    inconsistent with ``f``."""
    t, v, jtv, y0 = draw
    if not same_bits(evaluate(inner, f, point.copy(), "at x, again"), y0):  # check's rule: FAIL
        return {"numeric": math.nan, "error": math.nan, "jvp_agrees": False, "vjp_agrees": False,
                "verdict": "f is nondeterministic (f(x) changed between two calls): neither model can be judged "
                           "against its differences"}
    h = unit ** (1 / 3) * max(1.0, float(np.abs(point).max(initial=0))) / max(float(np.abs(t).max(initial=0)), 1e-300)
    scales = (h, -h, h / 2, -h / 2)
    labels = [f"at x + s t (s = {s:.3g}, the adjoint test's differences)" for s in scales]
    # one evaluation per point, two answers: <v, f(z)> and the size of that sum, sum |v f(z)|
    values = along(inner, f, point, t, lambda y: _dot(y, v), scales, labels, like=y0, answers=2)
    phi, sizes = values[:, 0].tolist(), values[:, 1]  # Python floats
    d1 = (phi[0] - phi[1]) / (2 * h)
    d2 = (phi[2] - phi[3]) / h
    numeric = float(richardson(d2, d1, 0.0, 0.0)[0])  # the one estimator (gradcheck._differences)
    # f's own round-off (the size of the sum <v, f(z)> at the points themselves; at x it may be 0),
    # and the rounding of x + s t (the realized step is not s t exactly)
    roundoff = float(modelled(unit, (float(np.max(np.abs(sizes))) / h, float(
        np.abs(point).reshape(-1) @ np.abs(jtv).reshape(-1)) / float(np.abs(t).max(initial=1)))))
    error = k * (float(truncation(d2, d1)) + roundoff)
    lhs, rhs, _ = row
    jvp_ok, vjp_ok = abs(lhs - numeric) <= error, abs(rhs - numeric) <= error
    if jvp_ok and not vjp_ok:
        verdict = "the vjp (adjoint) is inconsistent with f; the jvp agrees"
    elif vjp_ok and not jvp_ok:
        verdict = "the jvp (tangent-linear) is inconsistent with f; the vjp agrees"
    elif jvp_ok:
        verdict = "both agree with f along this direction"
    else:
        verdict = "both disagree with f along this direction"
    return {"numeric": numeric, "error": error, "jvp_agrees": bool(jvp_ok), "vjp_agrees": bool(vjp_ok),
            "verdict": verdict}
