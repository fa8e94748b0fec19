"""Stage 1 of ``check``, prepare: adapt ``f`` and ``x`` through the backend, evaluate ``f(x)``,
choose the cotangent, take the claimed gradient and audit the backend's autodiff contract.

The parts every prepare shares live here, and ``screen``'s (``gradcheck._screen._prepare``)
calls them: the private working copy (:func:`private_copy`), the cotangent
(:func:`make_cotangent`) and the reduction (:func:`reducer`), the refusal of an array claim
for an array output (:func:`require_vjp_for_array_output`), the claim taken at the door
(:func:`take_claim`, :func:`as_claimed`), the reduced ``f`` at the working copy
(:func:`evaluator`) and the unit round-off in use (:func:`unit_in_use`)."""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import _axes
from .. import backends as _backends
from .._core import arguments as _arguments
from .._core import claims as _claims
from .._core.config import Config, dtype_name
from .._core.errors import OutputError
from .._core.inputs import float_dtype_name, output_array, require_real_output, unit_roundoff_of
from .._differences import require_moving_steps
from .._evaluate import at_x
from .._lowp.forced64 import route_float64
from .._lowp.plan import Adjudicate, LowPrecisionPlan, OrdinaryPlan, plan_for
from ..backends import Backend, as_gradient
from .options import CheckOptions


@dataclass
class RealView:
    """``x`` or ``f(x)`` is complex: ``check`` runs on the real view (``_pipeline.complex``)."""

    backend: Backend
    x_np: np.ndarray
    vectorized: bool
    evaluations: int = 0         # calls of f made before the complex output was seen


@dataclass
class Subject:
    """What the later stages need to know of ``f`` at ``x`` (prepare's output)."""

    f: Callable[..., object]
    backend: Backend
    label: str
    dtype: str                   # the input's dtype (before a low-precision upcast)
    lowp: OrdinaryPlan           # a no-op for ordinary dtypes
    config: Config               # may still change: the low-precision plan refines it
    adjudicate: Adjudicate
    vectorized: bool
    work: np.ndarray             # the private copy that is perturbed
    pristine: np.ndarray         # x's values, bit for bit, to detect an f that writes into its input
    y0: np.ndarray | None        # f(x); None once the difference stage is over (release_output)
    output_dtype: str            # the dtype of f(x)
    f0: float                    # the scalar that is differenced, at x
    cotangent: np.ndarray | None
    evaluate: Callable[[], float]
    analytic: np.ndarray         # the claimed gradient, shaped like x
    audit_notes: tuple[str, ...]
    violations: tuple[str, ...]
    unit: float                  # the unit round-off of f's evaluation
    probes: int = 0              # evaluations of f besides f(x) spent choosing the plan
    # The claim called again, reclaim(x, cotangent) -> gradient shaped like x: set for a callable
    # grad in float32/float64 (the referee measures the claim's own round-off with it).
    reclaim: Callable[[np.ndarray, np.ndarray | None], np.ndarray] | None = None
    call_seconds: float | None = None  # how long f(x) took (the cost plan's measured call)

    def release_output(self) -> None:
        """Drop ``y0`` (an array of f's output size) once the difference stage is over: the later
        stages need only its dtype (``output_dtype``) and what the differencer kept of it."""
        self.y0 = None


def prepare(f: Callable[..., Any], x: Any, grad: Any, backend: Any, opts: CheckOptions) -> Subject | RealView:
    """Adapt, evaluate, reduce and take the claim (see the module docstring)."""
    be = _backends.resolve(backend, x)
    # A function may declare that it takes a leading batch axis (the control's does).
    vectorized = opts.vectorized or bool(getattr(f, "gradcheck_vectorized", False))
    x_np = be.to_numpy(x)
    _axes.against_input(opts.independent_axes, x_np.shape)  # before f runs
    if np.iscomplexobj(x_np):
        return RealView(be, x_np, vectorized)
    dtype = float_dtype_name(x_np)
    lowp = plan_for(dtype, f, x_np, be, opts.bound_ulps)  # difference the float64 upcast when f allows it
    lowp, x_np, config, adjudicate = lowp.start(x_np, opts.config, opts.adjudicate)
    cfg, ignored = _tuned(config if config is not None else Config.for_dtype(dtype), opts, lowp)
    lowp, cfg = lowp.noted(*ignored), _refined(cfg, opts.refine)
    label = _arguments.label_of(f, opts.name)
    # A private copy, `work`, is perturbed; `pristine` detects a function that writes to x.
    # Native byte order: the same values, and the differencing code reads them natively.
    work = private_copy(x_np)
    pristine = _pristine(x_np, work)
    require_moving_steps(work, cfg.step)
    began = time.perf_counter()
    y0 = at_x(lambda: be.evaluate(f, work))  # a write is sanity's to see, against pristine, after the first pass
    call_seconds = time.perf_counter() - began  # the cost plan's measured call (gradcheck._pipeline.cost)
    if np.iscomplexobj(y0):  # complex output: the real view (gradcheck._pipeline.complex)
        return RealView(be, x_np, vectorized, lowp.probes + 1)
    require_real_output(output_array(y0), f"f ({label})")
    if opts.independent_axes is not None:  # the declaration against f(x)'s shape, before the claim is taken
        _axes.declare(opts.independent_axes, work.shape, np.shape(y0))
    probes = lowp.probes
    if dtype == "float64" and opts.config is None and opts.independent_axes is None:
        routed, spent = route_float64(f, work, y0, be)  # f computes in float32: float32 steps, Richardson
        probes += spent
        if routed is not None:
            lowp, cfg = routed, _refined(opts.tuning.apply(routed.config), opts.refine)
            require_moving_steps(work, cfg.step)
    cotangent = None if y0.ndim == 0 else lowp.cotangent(make_cotangent(y0.shape, cfg))
    reduce = reducer(cotangent)
    f0 = reduce(y0)
    require_vjp_for_array_output(y0, cotangent, grad, cfg)
    claim_at = lowp.claim_input(work)  # the claim's own dtype
    claimed = take_claim(be, f, claim_at, cotangent, grad, y0.shape)
    # Optional backend hook (torch, jax): the autodiff contract beyond the values (dtype,
    # zero cotangent -> zero gradient, reentrant backward) as (notes, violations).
    audit = getattr(be, "audit", None)
    audit_notes, violations = audit(f, claim_at.copy(), cotangent, grad, claimed) if audit else ((), ())
    analytic = as_claimed(claimed, work.shape, grad, cotangent)
    lowp, cfg = lowp.after_claim(cfg, claimed)
    if callable(grad) or grad is None:  # a float32 claim: its own rounding, measured at the upcast
        lowp = lowp.measure_rounding(lambda: be.claimed_gradient(f, work.copy(), cotangent, grad), analytic)
    unit = unit_in_use(cfg, work, y0)
    evaluate = evaluator(f, be, work, cotangent, reduce)
    reclaim = None
    if callable(grad) and claim_at.dtype == work.dtype and work.dtype in (np.float32, np.float64):
        reclaim = lambda xx, vv: as_gradient(be.claimed_gradient(f, xx, vv, grad), work.shape)  # noqa: E731
    return Subject(f=f, backend=be, label=label, dtype=dtype, lowp=lowp, config=cfg, reclaim=reclaim,
                   adjudicate=adjudicate, vectorized=vectorized, work=work, pristine=pristine, y0=y0,
                   output_dtype=dtype_name(y0.dtype), f0=f0,
                   cotangent=cotangent, evaluate=evaluate, analytic=analytic,
                   audit_notes=tuple(audit_notes), violations=tuple(violations), unit=unit, probes=probes,
                   call_seconds=call_seconds)


def private_copy(x_np: np.ndarray) -> np.ndarray:
    """The private copy of ``x`` that is perturbed: C order, native byte order (the same
    values; the differencing code reads them natively)."""
    return np.array(x_np, dtype=x_np.dtype.newbyteorder("="), order="C", copy=True)


def _pristine(x_np: np.ndarray, work: np.ndarray) -> np.ndarray:
    """The values of ``x``, bit for bit, beside ``work``: ``x_np`` itself when it already is
    them in ``work``'s layout (a C-ordered ndarray of the same native dtype that shares no
    memory with ``work``: ``f`` is only ever given ``work``, and gradcheck never writes into
    ``x``), else a copy of ``work``. One array of N fewer for the common case."""
    if (type(x_np) is np.ndarray and x_np.dtype == work.dtype and x_np.shape == work.shape
            and x_np.flags.c_contiguous and not np.shares_memory(x_np, work)):
        return x_np
    return work.copy()


def _tuned(cfg: Config, opts: CheckOptions, lowp: OrdinaryPlan) -> tuple[Config, tuple[str, ...]]:
    """``cfg`` with the tolerance keywords (``rtol=``, ``eps=``, ...) set, and the plan's note on
    them. On the upcast path a low-precision claim is judged in ulps of its format
    (``bound_ulps=``) with float64 steps, as it is for ``config=``: only ``noise_factor``
    applies there, and the note says so."""
    if not isinstance(lowp, LowPrecisionPlan) or not lowp.upcast:
        return opts.tuning.apply(cfg), ()
    ignored = opts.tuning.names(leaving=("noise_factor",))
    note = (f"{', '.join(k + '=' for k in ignored)} not applied: a {lowp.fmt.name} input of a precision-generic f "
            "is differenced at its float64 upcast with float64 steps and its claim judged in ulps of its format "
            "(bound_ulps= sets that allowance)")
    return opts.tuning.apply(cfg, only=("noise_factor",)), (note,) if ignored else ()


def _refined(cfg: Config, refine: bool | None) -> Config:
    return cfg.replace(refine=bool(refine)) if refine is not None and refine != cfg.refine else cfg


def take_claim(be: Backend, f: Callable[..., object], at: np.ndarray, cotangent: np.ndarray | None, grad: Any,
               y_shape: tuple[int, ...]) -> Any:
    """The claimed gradient at ``at``; a callable claim is checked at the door first (its
    call, ``grad(x)`` or ``grad(x, v)``; a ufunc as a VJP) and called once on private copies
    (a write into them is blamed on the claim): :mod:`gradcheck._core.claims`."""
    if not callable(grad):
        return be.claimed_gradient(f, at.copy(), cotangent, grad)
    _claims.scalar_or_vjp(grad, x_shape=at.shape, y_shape=None if cotangent is None else y_shape)
    params = ("x",) if cotangent is None else ("x", "v")
    return _claims.call_watched(lambda xx, vv: be.claimed_gradient(f, xx, vv, grad), (at, cotangent), params,
                                _claims.claim_label("grad", params))


def claim_what(grad: object, cotangent: np.ndarray | None) -> str:
    """What a shape error calls the claim: its call, for a callable one."""
    if not callable(grad):
        return "claimed gradient"
    return _claims.claim_label("grad", ("x",) if cotangent is None else ("x", "v"))


def as_claimed(claimed: object, shape: tuple[int, ...], grad: object, cotangent: np.ndarray | None) -> np.ndarray:
    """The claim :func:`take_claim` returned as a float gradient shaped like ``x``; a wrong
    shape is refused naming the claim (:func:`claim_what`) and both shapes."""
    return as_gradient(claimed, shape, claim_what(grad, cotangent))


def evaluator(f: Callable[..., object], be: Backend, work: np.ndarray, cotangent: np.ndarray | None,
              reduce: Callable[[np.ndarray], float]) -> Callable[[], float]:
    """The reduced ``f`` at the working copy ``work`` (whatever values it holds when called):
    through the backend and ``reduce``, or for a numpy ``f`` with a scalar output, the hot
    path: ``f`` called directly (no backend per call, no complex value cast to float)."""
    if cotangent is None and isinstance(be, _backends.NumpyBackend):
        return lambda: scalar_output(f(work))
    return lambda: reduce(be.evaluate(f, work))


def unit_in_use(cfg: Config, work: np.ndarray, y0: np.ndarray) -> float:
    """The unit round-off of ``f``'s evaluation: the coarsest of the preset's, the input's and
    the output's."""
    return max(cfg.unit_roundoff, unit_roundoff_of(work), unit_roundoff_of(y0))


def require_vjp_for_array_output(y0: np.ndarray, cotangent: np.ndarray | None, grad: object, cfg: Config) -> None:
    """Refuse an array claim for an array output (it can only be the gradient of a scalar),
    unless ``reduce='sum'`` says it is the gradient of ``sum(f(x))``."""
    if cotangent is not None and grad is not None and not callable(grad) and cfg.reduce != "sum":
        raise TypeError(
            f"f returns an array of shape {y0.shape}, so the claimed gradient must be a VJP "
            "function grad(x, cotangent); an array can only be the gradient of a scalar "
            "(pass config=Config(reduce='sum') if it is the gradient of sum(f(x)))"
        )


#: Tags the cotangent's random stream: ``default_rng([seed, COTANGENT_STREAM])`` is not the
#: stream of ``default_rng(seed)``, the usual way to draw a test input. With the same stream a
#: shape-preserving f got ``v = x`` exactly (``x = default_rng(0).standard_normal(shape)`` and
#: seed 0): for a layer norm (scale- and shift-invariant, ``J x = 0``) every entry of ``J^T v``
#: was ~1e-5 of its natural size, a cancellation the differences cannot resolve (4% of a
#: (4096, 256) check UNCHECKED, 15x the evaluations) and its own round-off above the referee's
#: allowance (false MISMATCHes).
COTANGENT_STREAM = 0xC07A


def make_cotangent(shape: tuple[int, ...], config: Config) -> np.ndarray:
    """The cotangent that reduces an array output to a scalar (seeded, or all ones); its
    stream is never ``default_rng(config.seed)``'s (:data:`COTANGENT_STREAM`)."""
    if config.reduce == "sum":
        return np.ones(shape)
    return np.random.default_rng([int(config.seed), COTANGENT_STREAM]).standard_normal(shape)


def reducer(cotangent: np.ndarray | None) -> Callable[[np.ndarray], float]:
    """Scalar from an output: the output itself, or ``cotangent . output`` in float64
    (``np.add.reduce(v * y)``: every engine reduces with these bits).

    An output gradcheck cannot reduce as it reduced the first one (another shape, complex
    or non-numeric values) raises :class:`OutputError`, which the differencing loop
    locates at its entry: never a conversion error reported as f's, never an imaginary
    part dropped with only numpy's ComplexWarning.
    """
    if cotangent is None:
        return scalar_output
    flat_v = cotangent.reshape(-1)
    shape = cotangent.shape

    def reduce(y: np.ndarray) -> float:
        y = require_real_output(output_array(y))
        if y.shape != shape:
            raise _changed_shape(y.shape, shape)
        # numpy's pairwise sum, not BLAS's dot: the same bits on every machine and thread
        # count, and the compiled engine's in-kernel reduction reproduces them exactly. An inf
        # or NaN in y is the NONFINITE verdict's business, not a numpy warning to the user.
        with np.errstate(invalid="ignore", over="ignore"):
            return float(np.add.reduce(flat_v * np.asarray(y.reshape(-1), dtype=np.float64)))  # float64: no copy

    return reduce


def scalar_output(y: Any) -> float:
    """``y`` as a float, for an ``f`` that returned a scalar at the unperturbed input."""
    if isinstance(y, float):  # a Python float or np.float64: the hot path
        return float(y)
    arr = require_real_output(output_array(y))
    if arr.ndim != 0:
        raise _changed_shape(arr.shape, ())
    return float(arr.astype(np.float64))


def _changed_shape(got: tuple[int, ...], first: tuple[int, ...]) -> OutputError:
    return OutputError(f"shape {got}", tail=f", after returning shape {first} at the unperturbed input; "
                       "f must return the same shape at every point")
