"""``taylor_test``: the Taylor remainder test of dolfin-adjoint/pyadjoint.

Along a direction ``d`` (seeded random by default), at steps ``h_k = h0 / 2^k``::

    R1(h) = |f(x + h d) - f(x) - grad . (h d)|                   -> O(h^2) if grad is right
    R2(h) = |f(x + h d) - f(x) - grad . (h d) - h^2/2 d . H d|    -> O(h^3) if H d is right too

and the observed order between consecutive steps is ``log2(R(h_k) / R(h_k+1))``. A wrong
gradient leaves an ``O(h)`` term: the order falls to 1 as ``h`` shrinks.

Which steps count (stated in every result): a remainder counts only if it stands at least
``MARGIN`` (100) times above the round-off floor, so that round-off moves an observed
order by at most ``2 log2(1.01 / 0.99) ~ 0.06``. The floor is the larger of a model,
``u (|f(x + h d)| + |f(x)| + sum|g_i h d_i|)``, and a measurement: the remainder at three
tiny steps (``h0 / 2^40 .. 2^48``), where any truncation is far below round-off. The
linear term uses the realized step ``(x + h d) - x``, so the rounding of ``x + h d`` is
not mistaken for a remainder.

The verdict: the observed order is the minimum over the three smallest-step pairs that
count (the asymptotic end of the table; larger steps may be pre-asymptotic), a pair
across a sign change of the remainder having no order (a remainder ``h^2 c - h e`` of a
slightly wrong gradient passes through zero before its ``O(h)`` end shows); PASS needs
it ``>= 1.9`` (gradient) and, with ``hvp``, the second-order remainder's ``>= 2.9``.
Fewer than two counted pairs: when even the largest step's remainder is under the
threshold, the model matches ``f`` to round-off at every step, and that is a PASS if the
resolution it implies (threshold / size of the term tested) is within 1%; otherwise the
test is INCONCLUSIVE.
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ._complex import along, convention_of, evaluate, note, random_like, require_input, to_torch
from ._complex import inner as real_inner
from ._hvp import DIRECTION_STREAM, require_calls
from ._hvp import _claim as hvp_claim
from ._links import (
    ShapeMismatchError,
    as_gradient,
    as_seed,
    backends,
    call_watched,
    dtype_name,
    integer,
    label_of,
    modelled,
    moved,
    positive,
    text,
    unit_roundoff_of,
)
from ._result import FAIL, INCONCLUSIVE, PASS, ResultMixin
from ._taylor_plot import plot_taylor

MARGIN = 100.0
STEPS = 20
FLOOR_EXPONENTS = (40, 44, 48)
#: Required orders: (gradient, gradient + Hessian).
REQUIRED = (1.9, 2.9)
#: An exact-to-round-off model is a PASS only when it resolves the tested term to 1%.
RESOLUTION = 0.01
ASYMPTOTIC_PAIRS = 3


@dataclass(frozen=True, eq=False, repr=False)  # repr: ResultMixin's one short line
class TaylorResult(ResultMixin):
    """Remainders per step, observed orders, which steps counted, and the verdict.

    ``remainders[0]`` is ``R1`` (gradient), ``remainders[1]`` is ``R2`` (with the Hessian;
    absent without ``hvp``). ``orders[j][k]`` compares steps ``k`` and ``k+1``;
    ``counted[j][k]`` says whether step ``k``'s remainder stood above the threshold.

    Examples
    --------
    >>> import numpy as np, gradcheck
    >>> t = gradcheck.taylor_test(lambda x: np.sum(np.sin(x)), np.array([0.3, -1.2, 0.8]), np.cos)
    >>> t.passed, len(t.remainders), round(t.orders[0][1], 1)
    (True, 1, 2.0)
    """

    name: str
    steps: tuple[float, ...]
    remainders: tuple[tuple[float, ...], ...]
    orders: tuple[tuple[float, ...], ...]
    counted: tuple[tuple[bool, ...], ...]
    floor: float
    threshold: float
    observed: tuple[float, ...]           # the verdict's order per remainder (NaN: too few steps)
    resolution: tuple[float, ...]         # threshold / size of the tested term at h0
    dtype: str
    evaluations: int
    seconds: float
    notes: tuple[str, ...] = field(default_factory=tuple)

    def _status_of(self, j: int) -> str:
        if math.isfinite(self.observed[j]):
            return PASS if self.observed[j] >= REQUIRED[j] else FAIL
        if not any(self.counted[j]) and self.resolution[j] <= RESOLUTION:
            return PASS  # exact to round-off at every step, and that resolves the term
        return INCONCLUSIVE

    @property
    def status(self) -> str:
        each = [self._status_of(j) for j in range(len(self.remainders))]
        if not all(math.isfinite(r) for rem in self.remainders for r in rem[:1]):
            return FAIL
        return FAIL if FAIL in each else (INCONCLUSIVE if INCONCLUSIVE in each else PASS)

    def summary(self) -> str:
        parts = [f"order {o:.2f} (needs >= {REQUIRED[j]})" if math.isfinite(o)
                 else f"order not measured ({self._status_of(j)})" for j, o in enumerate(self.observed)]
        what = ["gradient", "gradient + Hessian"]
        said = "; ".join(f"{what[j]}: {p}" for j, p in enumerate(parts))
        return f"{self.name}: {self.status} -- Taylor test, {len(self.steps)} steps; {said}"

    def lines(self) -> list[str]:
        out = [f"dtype {self.dtype}, {self.evaluations} evaluations in {self.seconds:.3g} s; round-off floor "
               f"{self.floor:.2e}, a remainder counts from {self.threshold:.2e} (x{MARGIN:g}) on"]
        head = f"{'h':>10} {'R1 (grad)':>12} {'order':>6}"
        if len(self.remainders) > 1:
            head += f" {'R2 (+Hessian)':>14} {'order':>6}"
        out.append(head)
        for k, h in enumerate(self.steps):
            row = f"{h:>10.3e}"
            for j, rem in enumerate(self.remainders):
                order = self.orders[j][k] if k < len(self.orders[j]) else math.nan
                mark = " " if self.counted[j][k] else "."
                width = 12 if j == 0 else 14
                shown = f"{order:>6.2f}" if math.isfinite(order) else " " * 6
                row += f" {rem[k]:>{width}.3e}{mark}{shown}"
            out.append(row)
        out.append(". = under the threshold (round-off dominates): not counted")
        for j, res in enumerate(self.resolution):
            if not any(self.counted[j]):
                out.append(f"remainder {j + 1} never rose above round-off: the model is exact to {res:.1e} "
                           "of the term it tests")
        if self.status == INCONCLUSIVE:
            out.append(f"too few steps stand above round-off to measure an order ({self.dtype}): run f in "
                       "float64, or choose a larger h0 (at the risk of pre-asymptotic orders)")
        out.extend(f"note: {n}" for n in self.notes)
        return out

    def _fields(self) -> dict[str, Any]:
        return {"steps": list(self.steps), "remainders": [list(r) for r in self.remainders],
                "orders": [list(o) for o in self.orders], "counted": [list(c) for c in self.counted],
                "floor": self.floor, "threshold": self.threshold, "observed_orders": list(self.observed),
                "required_orders": list(REQUIRED[:len(self.remainders)]), "resolution": list(self.resolution),
                "dtype": self.dtype, "evaluations": self.evaluations, "seconds": self.seconds,
                "notes": list(self.notes)}

    def plot(self, path: Any) -> Path:
        """Write the log-log picture (remainders against the step, reference slopes 1, 2,
        3, the threshold) to ``path`` as PNG; returns it. Needs matplotlib."""
        return plot_taylor(self, path)


def taylor_test(f: Callable[..., Any], x: Any, grad: Any = None, hvp: Any = None, direction: Any = None, *,
                backend: Any = None, steps: int = STEPS, h0: float | None = None, seed: int = 0,
                name: str | None = None, complex_convention: str | None = None) -> TaylorResult:
    """The Taylor remainder test of a claimed gradient (and Hessian) of a scalar ``f``.

    ``grad`` is an array or ``grad(x)`` (torch/jax: ``None`` means the framework's);
    ``hvp(x, v)`` (or ``"backend"``: torch/jax double backward) adds the second-order
    remainder. ``direction`` defaults to a seeded standard normal. The rules (which steps
    count, the orders required) are in this module's docstring.

    A complex ``x`` (``f`` real-valued): the direction is complex, the linear term is
    ``<g, h d> = Re sum(conj(g) h d)`` with ``g`` the gradient in ``complex_convention``
    (``"torch"``: ``dL/dRe z + i dL/dIm z``, the default; ``"jax"``: its conjugate, the default
    for jax input), and ``hvp`` is the derivative of that gradient along ``v``
    (``gradcheck._orders._complex``): a gradient missing its imaginary part, or conjugated,
    fails.

    Parameters
    ----------
    f : callable
        A real scalar function ``f(x)``.
    x : array_like
        The point (numpy, torch or jax).
    grad : array_like or callable, optional
        The claimed gradient, an array or ``grad(x)``; None: the framework's (torch, jax).
    hvp : callable or "backend", optional
        The claimed Hessian-vector product ``hvp(x, v)``, or ``"backend"`` for torch/jax
        double backward: adds the second-order remainder.
    direction : array_like, optional
        The direction ``d`` to move along, shaped like ``x`` (default: seeded standard normal).
    backend : str or backend object, optional
        As for :func:`gradcheck.check`; default: inferred from ``x``.
    steps : int, default 20
        How many halving steps ``h0, h0/2, ...`` (at least 2: an order compares two).
    h0 : float, optional
        The largest step (default ``2**-7 * max(1, |x|)`` over ``|d|``).
    seed : int, default 0
        Seeds the default direction.
    name : str, optional
        What the result calls ``f``.
    complex_convention : {"torch", "jax"}, optional
        For a complex ``x``: which complex number the gradient (and ``hvp``) is, as for
        :func:`gradcheck.check` (default ``"jax"`` for jax input, ``"torch"`` otherwise).

    Returns
    -------
    TaylorResult
        The remainders at each step, the measured orders and the verdict: ``print`` it for
        the table, ``.plot(path)`` for the picture, ``.assert_pass()`` in a test.

    Raises
    ------
    ShapeMismatchError
        The claimed gradient or the direction is not shaped like ``x``.
    ValueError
        ``f`` is not a real scalar function, or the direction is zero; a keyword out of range.
    TypeError
        A keyword of the wrong type (each names itself and what it accepts).
    FunctionError, OutputError, InputMutationError
        ``f`` raised, returned something that is not a real number, or wrote into its input
        (each says at which point).

    Examples
    --------
    >>> import numpy as np, gradcheck
    >>> x = np.array([0.3, -1.2, 0.8])
    >>> gradcheck.taylor_test(lambda x: np.sum(np.sin(x)), x, np.cos).passed
    True
    >>> gradcheck.taylor_test(lambda x: np.sum(np.sin(x)), x, lambda x: np.cos(x) + 1e-3).passed
    False
    """
    started = time.perf_counter()
    steps = integer("steps", steps, minimum=2, meaning=" (halvings of h0: an order needs two steps)")
    h0, seed, name = positive("h0", h0, none=True), as_seed(seed), text("name", name)
    if hvp is not None and not callable(hvp) and not (isinstance(hvp, str) and hvp == "backend"):
        raise TypeError(f"hvp must be a function hvp(x, v), 'backend' (the framework's double backward) or "
                        f"None, got {hvp!r}")
    require_calls(None if isinstance(hvp, str) else hvp, grad)
    inner = backends.resolve(backend, x)
    convention = convention_of(complex_convention, inner)
    x_np = np.array(inner.to_numpy(x), copy=True)
    require_input(x_np)
    d = _direction(direction, x_np, seed)  # before f runs
    y0 = _scalar_output(f, inner, x_np)
    f0 = float(y0.reshape(()))
    claimed = inner.claimed_gradient(f, x_np.copy(), None, grad) if not callable(grad) else call_watched(
        lambda z: inner.claimed_gradient(f, z, None, grad), (x_np,), ("x",), "the claimed gradient grad(x)")
    g = to_torch(_gradient(claimed, x_np), convention)
    scale = max(1.0, float(np.abs(x_np).max(initial=0))) / max(float(np.abs(d).max(initial=0)), 1e-300)
    h0 = 2.0 ** -7 * scale if h0 is None else h0
    hd = None
    if hvp is not None:
        fn = hvp_claim(f, inner, None if isinstance(hvp, str) else hvp)
        hd = to_torch(_gradient(fn(x_np.copy(), d.astype(x_np.dtype)), x_np, "hvp(x, d)"), convention)
    unit = max(unit_roundoff_of(x_np), unit_roundoff_of(np.empty(0, y0.dtype)))
    hs = [h0 * 2.0 ** -k for k in range(steps)]
    tiny = [h0 * 2.0 ** -e for e in FLOOR_EXPONENTS]
    # every point x + h d on the evaluation layer: the halving steps, then the floor's tiny ones
    fz = along(inner, f, x_np, d, lambda y: y.reshape(()), hs + tiny, [f"at x + h d (h = {h:.3g})" for h in hs + tiny],
               like=y0)
    rows = [_remainders(x_np, fz[k], f0, g, d, hd, h, unit) for k, h in enumerate(hs)]
    floors = [_remainders(x_np, fz[len(hs) + k], f0, g, d, hd, h, unit) for k, h in enumerate(tiny)]
    floor = max([r[-1] for r in rows] + [max(abs(v) for v in r[:-1]) for r in floors])
    threshold = MARGIN * floor
    result = _assemble(rows, hs, floor, threshold, g, d, hd, h0)
    label = name or f"taylor test of {label_of(f)}"
    notes = ["direction: seeded standard normal" if direction is None else "direction: given"]
    notes += [note(convention)] if x_np.dtype.kind == "c" else []
    return TaylorResult(name=label, steps=tuple(hs), dtype=str(dtype_name(x_np.dtype)),
                        evaluations=1 + len(hs) + len(floors), seconds=time.perf_counter() - started,
                        notes=tuple(notes), floor=floor, threshold=threshold, **result)


def _scalar_output(f, inner, x_np: np.ndarray) -> np.ndarray:
    """``f(x)`` through the backend (f raising: FunctionError; None or a string: OutputError),
    refused unless it is one real number."""
    y = evaluate(inner, f, x_np.copy(), "at x")
    if y.size != 1 or y.dtype.kind == "c":
        raise ValueError(f"taylor_test takes a real scalar f; f returned {y.dtype} of shape {y.shape} "
                         "at x (reduce it to a real number, e.g. v . f)")
    return y


def _gradient(claimed: Any, x_np: np.ndarray, what: str = "claimed gradient") -> np.ndarray:
    """The claim shaped like ``x``: float64 for a real ``x`` (a complex claim refused), complex128
    for a complex one (a real claim kept as the complex number it is: its imaginary part 0)."""
    if x_np.dtype.kind != "c":
        return as_gradient(claimed, x_np.shape, what)
    arr = np.asarray(claimed)
    if arr.dtype.kind not in "fiuc":
        return as_gradient(claimed, x_np.shape, what)  # refuses it, saying what it is
    if arr.shape != x_np.shape:
        raise ShapeMismatchError(what, x_np.shape, arr.shape)
    return arr.astype(np.complex128)


def _direction(direction, x_np: np.ndarray, seed: int) -> np.ndarray:
    if direction is None:
        # Its own stream, never default_rng(seed)'s: x drawn with the same seed would be the
        # direction itself (degenerate for a scale-invariant f: f(x + h x) = f(x)).
        return random_like(np.random.default_rng([int(seed), DIRECTION_STREAM]), x_np.shape, x_np.dtype.kind == "c")
    d = np.asarray(direction)
    kinds = "fiuc" if x_np.dtype.kind == "c" else "fiu"
    if d.dtype.kind not in kinds:
        raise TypeError(f"direction must be a {'complex' if kinds == 'fiuc' else 'real'} array shaped like x "
                        f"{x_np.shape}, or None (seeded random), got {d.dtype} values")
    d = d.astype(np.complex128 if x_np.dtype.kind == "c" else np.float64)
    if d.shape != x_np.shape:
        raise ShapeMismatchError("direction", x_np.shape, d.shape)
    if not np.any(d):
        raise ValueError("direction is zero: the Taylor test needs a direction to move along")
    if not np.all(np.isfinite(d)):
        raise ValueError("direction is not finite (NaN or inf): the Taylor test needs a direction to move along")
    return d


def _remainders(x_np, fz, f0, g, d, hd, h, unit) -> tuple[float, ...]:
    """``(R1, R2?, noise model)`` at step ``h`` from ``fz = f(x + h d)``, the remainders signed
    (the realized step for the linear term)."""
    z = moved(x_np, d, h)
    wide = np.complex128 if x_np.dtype.kind == "c" else np.float64
    delta = z.astype(wide) - x_np.astype(wide)
    fz = float(fz)
    linear, size = real_inner(g, delta)  # <g, delta> = Re sum(conj(g) delta)
    r1 = fz - f0 - linear
    noise = float(modelled(unit, (fz, f0, size)))  # THE round-off model (gradcheck._differences.noise)
    if hd is None:
        return r1, noise
    quadratic = 0.5 * h * real_inner(delta, hd)[0]
    return r1, r1 - quadratic, noise + unit * abs(quadratic)


def _assemble(rows, hs, floor, threshold, g, d, hd, h0) -> dict[str, Any]:
    count = len(rows[0]) - 1
    signed = tuple(tuple(r[j] for r in rows) for j in range(count))
    remainders = tuple(tuple(abs(v) for v in rem) for rem in signed)
    orders, counted, observed, resolution = [], [], [], []
    terms = [h0 * abs(real_inner(g, d)[0])]
    if hd is not None:
        terms.append(0.5 * h0 * h0 * abs(real_inner(d, hd)[0]))
    for j, rem in enumerate(remainders):
        ok = tuple(bool(r >= threshold) for r in rem)
        # no order across a sign change: the remainder passes through zero there
        pair = [math.log2(rem[k] / rem[k + 1]) if ok[k] and ok[k + 1] and signed[j][k] * signed[j][k + 1] > 0
                else math.nan for k in range(len(rem) - 1)]
        good = [o for o in pair if math.isfinite(o)]
        observed.append(min(good[-ASYMPTOTIC_PAIRS:]) if len(good) >= 2 else math.nan)
        orders.append(tuple(pair))
        counted.append(ok)
        resolution.append(threshold / terms[j] if terms[j] > 0 else math.inf)
    return {"remainders": remainders, "orders": tuple(orders), "counted": tuple(counted),
            "observed": tuple(observed), "resolution": tuple(resolution)}
