"""``dispute``: settle a low-precision disagreement against the exact value.

A fast kernel and a reference disagree in bfloat16 (or float16, float32). Comparing both
with a float32 run and picking a tolerance by experience sometimes blames the wrong side:
in MLX's rotary embedding the fast kernel was about 60x more accurate than the reference.
``dispute`` computes the mathematical definition ``math_fn`` (plain numpy code) exactly on
the inputs taken exactly, and measures every candidate in ulps of the target format
against that exact value (``gradcheck._core.formats``: ulps of the exact value,
subnormal-aware; correct rounding decided from the exact value, never via float64).

The exact value (:mod:`gradcheck._lowp.dispute_exact`): a definition made only of
contractions (``a @ b``, ``np.sum``, ``np.cumsum``, ``np.convolve``, ``np.einsum``, ...) is
computed by exact numba kernels at float speed; anything else at ``dps`` digits with
mpmath, its contractions of exact operands still through the kernels.

How the verdict is reached (each rule is also stated in the printed result):

* **most accurate**: the candidate with the smallest mean ulp error; "N x more accurate" is
  the ratio of mean ulp errors (the 99th percentile and the maximum are printed next to
  it). Candidates whose mean errors are within :data:`TIE_RATIO` of each other are tied
  (``most_accurate`` is None).
* **broken**: a candidate with an entry beyond its bound. The bound of an entry comes from
  the problem, not from how the definition is spelled (:mod:`gradcheck._lowp.dispute_bound`):

      bound_i = 2 ulp + 8 * (|y_i| + kappa_i) * u / ulp(y_i)

  with ``u`` the unit roundoff of the working precision (``working=``, float32 by
  default) and ``kappa_i = sum_j |x_j d y_i / d x_j|`` the sensitivity of output ``i`` to a
  relative rounding of every input entry, from exact derivatives
  (:mod:`gradcheck._lowp.dispute_condition`). Where the function is well conditioned the
  bound is 2 ulp; where it amplifies its inputs' rounding (a rotary embedding at large
  positions, outputs that nearly cancel) it is as wide as the working precision must
  lose there, and the result says why in words. Pass ``bound_ulps=`` for a plain bound.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import DTypeLike

from .._core import arguments as _arguments
from .._core.formats import FLOAT64, FloatFormat, from_bits, resolve_format, round_to_format
from . import dispute_bound as _bound
from .dispute_bound import BASE_BOUND_ULPS, BOUND_FACTOR, WORKING_DEFAULT
from .dispute_condition import Sensitivity, argument_names, sensitivity
from .dispute_exact import ExactValues, exact_values
from .dispute_gradient import gradient_definition, gradient_of_cotangent, require_kind
from .dispute_inputs import (
    FLOAT32_EVALUATION,
    as_candidate,
    as_inputs,
    float32_run,
    named_candidates,
    require_arity,
    shaped,
    target_format,
)
from .dispute_measure import closer, correct_rounding, judged, measure
from .dispute_timing import ROUNDS, Timing, run_and_time
from .result import CandidateStats, DisputeResult

__all__ = ["dispute", "DisputeResult", "CandidateStats", "TIE_RATIO", "BASE_BOUND_ULPS",
           "BOUND_FACTOR", "FLOAT32_EVALUATION"]

#: Mean errors within this factor of each other are a tie.
TIE_RATIO = 1.25

def _dispute_keywords(dps: object, bound_ulps: object, name: object, float32_evaluation: object,
                      rounds: object = ROUNDS, working: object = WORKING_DEFAULT, *, dtype: object = None,
                      of: object = "value", wrt: object = 0, cotangent: object = None) -> tuple[str, float]:
    """The types of dispute's keywords, refused at the boundary with what they accept;
    returns the working precision's (name, unit roundoff)."""
    if dtype is not None:
        try:
            resolve_format(dtype)
        except ValueError as exc:
            raise ValueError(f"dtype={dtype!r}: {exc}") from None
    _arguments.integer("wrt", wrt, minimum=0, meaning=" (the index of an input)")
    if of == "value" and (wrt != 0 or cotangent is not None):
        raise ValueError("wrt= and cotangent= apply to of='gradient' only: a value dispute has neither")
    _arguments.integer("rounds", rounds, minimum=1, meaning=" (timed rounds per callable candidate)")
    _arguments.integer("dps", dps, minimum=_arguments.MIN_DIGITS,
                       meaning=" (significant digits of the exact values)")
    _arguments.positive("bound_ulps", bound_ulps, none=True)
    _arguments.text("name", name)
    _arguments.flag("float32_evaluation", float32_evaluation)
    try:
        return _bound.unit_roundoff(working)
    except (TypeError, ValueError) as exc:  # the valid names, said for this keyword
        raise type(exc)(f"working={working!r}: {exc}") from None


def dispute(math_fn: Callable[..., Any], inputs: Any, candidates: Any, dtype: object = None, *,
            dps: int = 40, bound_ulps: float | None = None, name: str | None = None,
            float32_evaluation: bool = True, of: str = "value", wrt: int = 0,
            cotangent: Any = None, rounds: int = ROUNDS,
            working: DTypeLike = WORKING_DEFAULT) -> DisputeResult:
    """Judge each candidate output against the exact value of ``math_fn(*inputs)``.

    Parameters
    ----------
    math_fn : callable
        The definition, numpy code run unmodified at ``dps`` significant digits
        (:func:`gradcheck.mp.evaluate`) on the inputs converted exactly; it must not leave
        arbitrary precision (``math.tanh``, ``astype(float)``, C code): that raises
        :class:`gradcheck.mp.NotAdjudicable` saying where. A definition that calls mpmath
        functions itself takes them from :func:`gradcheck.mp.context` (it then computes at
        the dispute's precision; ``mpmath.erf`` would round to 53 bits). Contractions
        (``@``, ``np.matmul``, ``np.dot``, ``np.einsum``, ``np.tensordot``, ``np.sum``,
        ``np.cumsum``, ``np.convolve``, ``np.correlate``) of the inputs are computed by
        exact kernels at float speed, alone or inside a larger definition.
    inputs : array_like or tuple of array_like
        Passed positionally (one array is wrapped); floats of any width, integers, torch
        tensors.
    candidates : mapping or sequence
        ``{"fast": y1, "reference": y2, ...}`` (a sequence is named "0", "1", ...), arrays
        shaped like ``math_fn``'s result: numpy float16/float32, ``ml_dtypes.bfloat16``, torch
        tensors; for 16-bit targets uint16/int16 arrays are read as bit patterns. Every value
        must be a value of the target format (a float32 array of bfloat16 values is fine; an
        unrounded float32 result is refused, naming an entry: it is not an output of a kernel
        in that format), and a candidate needs at least one entry. A candidate may also be a
        callable, called as ``fn(*inputs)`` with the inputs as given: it is then timed (one
        warm-up call, whose output is judged, then ``rounds`` interleaved rounds; best and
        median per call in ``result.timings``, the speed next to the accuracy in the
        verdict: "fast: 3.1x faster, 898x more accurate"; see
        :mod:`gradcheck._lowp.dispute_timing` and :meth:`DisputeResult.benchmark_record`).
    dtype : str or dtype, optional
        The target format (float16, bfloat16, float32, float64); default: the candidates'
        common dtype.
    dps : int, default 40
        Significant digits of the exact evaluation.
    bound_ulps : float, optional
        The error beyond which an entry makes a candidate broken (default: per entry, from
        the function's conditioning at that entry, see the module docstring;
        ``result.bounds`` and ``result.bound_reason`` say what it was, ``result.why(index)``
        why an entry's bound is wide).
    name : str, optional
        What the result calls ``math_fn`` (default: its ``__name__``).
    float32_evaluation : bool, default True
        Measure a float32 evaluation of ``math_fn`` alongside, for information (float
        inputs as float32, its result rounded once to ``dtype``; it plays no part in the
        verdict); False skips it.
    of : {"value", "gradient"}, default "value"
        ``"gradient"``: the candidates are gradients, of ``sum(cotangent * math_fn(*inputs))``
        with respect to ``inputs[wrt]``, judged against the exact gradient computed at
        ``dps`` digits by reverse mode over ``gradcheck.mp`` values
        (:mod:`gradcheck._lowp.dispute_gradient`); the bound comes from the gradient's
        sensitivity to the inputs and to the cotangent.
    wrt : int, default 0
        With ``of="gradient"``: which input the gradient is taken with respect to.
    cotangent : array_like, optional
        With ``of="gradient"``: shaped like ``math_fn``'s result; None when it returns a
        scalar.
    rounds : int, default 7
        Timing rounds for callable candidates.
    working : str or dtype, default "float32"
        The working precision a kernel is expected to compute in (float16, bfloat16,
        float32, float64): the default bound allows for its rounding carried through the
        function (said in ``result.bound_reason``).

    Returns
    -------
    DisputeResult
        The table, ``most_accurate``, ``broken``, the bounds and the verdict in words.

    Raises
    ------
    ShapeMismatchError
        A candidate is not shaped like ``math_fn(*inputs)``.
    TypeError
        ``candidates`` is not a dict or sequence of arrays, a candidate is not a float array
        (or a callable), or ``math_fn`` cannot be called with the inputs given.
    ValueError
        No candidate, an empty one, a reserved name, no ``dtype`` where the candidates do not
        imply one, or a non-positive ``dps`` / ``bound_ulps``.
    gradcheck.mp.NotAdjudicable
        ``math_fn`` cannot be evaluated at arbitrary precision (it drops to float, calls C
        code, returns a non-finite value): its value would settle nothing.

    Notes
    -----
    Every candidate is compared, unrounded, with the exact value in ulps of ``dtype``. A
    float32 evaluation of ``math_fn`` (float inputs as float32, its result rounded once to
    ``dtype``) is measured alongside for comparison (``float32_evaluation=False`` skips it).

    Cost: a contraction (``matvec_math`` is ``a @ v``) costs a few nanoseconds per
    multiply-add in the exact kernels (``benchmarks/bench_dispute_exact.py``); any other
    definition calls an mpmath function per element and operation, about 5-15 us each
    with gmpy2 (``benchmarks/bench_dispute.py``: 1e5 rotary-embedding entries in about 5 s
    on one core). The sensitivities behind the bound cost a few float64 evaluations on
    dual numbers (or, for a definition that only runs at arbitrary precision and for
    gradient disputes, a few more exact evaluations). Measuring the candidates is
    vectorized.

    Examples
    --------
    >>> import numpy as np, ml_dtypes
    >>> x = np.linspace(-3, 3, 64).astype(ml_dtypes.bfloat16)
    >>> via_f32 = np.exp(x.astype(np.float32)).astype(ml_dtypes.bfloat16)
    >>> sloppy = (np.exp(x / 2) * np.exp(x / 2))        # two bfloat16 roundings more
    >>> r = dispute(np.exp, (x,), {"via_f32": via_f32, "sloppy": sloppy}, "bfloat16")
    >>> r.most_accurate, r.broken
    ('via_f32', ())
    >>> print(r.verdict.splitlines()[0])   # doctest: +ELLIPSIS
    via_f32 is ...x more accurate than sloppy (mean error ... vs ... ulp; ...

    A gradient dispute: two backward kernels of ``sin`` (cotangent 1).

    >>> g_f32 = np.cos(x.astype(np.float32)).astype(ml_dtypes.bfloat16)
    >>> g_bf16 = np.cos(x)                                # cos evaluated in bfloat16
    >>> r = dispute(np.sin, (x,), {"f32": g_f32, "bf16": g_bf16}, "bfloat16", of="gradient",
    ...             cotangent=np.ones(64))
    >>> r.function, r.broken
    ('gradient of sin with respect to input 0', ())
    """
    started = time.perf_counter()
    working_name, u = _dispute_keywords(dps, bound_ulps, name, float32_evaluation, rounds, working,
                                        dtype=dtype, of=of, wrt=wrt, cotangent=cotangent)
    of = require_kind(of)
    args = as_inputs(inputs)
    label = _arguments.label_of(math_fn, name)
    require_arity(math_fn, args, label)
    definition = math_fn
    if of == "gradient":
        definition, label = gradient_definition(math_fn, args, wrt, cotangent, label)
    named = named_candidates(candidates)
    timings: dict[str, Timing] = {}
    timed = {k: v for k, v in named.items() if callable(v)}
    if timed:  # called with the inputs as given, before anything else runs
        outputs, timings = run_and_time(timed, tuple(inputs) if isinstance(inputs, (tuple, list))
                                        else (inputs,), rounds=rounds)
        named = {k: outputs.get(k, v) for k, v in named.items()}
    fmt = target_format(dtype, named)
    # Checked before the exact evaluation, which can take a while.
    converted = {k: as_candidate(v, fmt, k) for k, v in named.items()}
    exact = exact_values(definition, args, dps)
    fields = _judge(definition, args, converted, exact, fmt, float32_evaluation and of == "value")
    notes = list(fields.pop("notes"))
    sens = None
    if bound_ulps is None and fmt is not FLOAT64:
        with np.errstate(invalid="ignore"):
            needed = np.any([~(e.reshape(-1) <= BASE_BOUND_ULPS) for k, e in fields["errors"].items()
                             if k != FLOAT32_EVALUATION], axis=0)
        sens = _sensitivity(math_fn, args, exact, dps, of, wrt, cotangent, needed)
        notes += sens.notes
    fields.update(_bounded(fields, exact.hi, bound_ulps, sens, fmt, working_name, u))
    return DisputeResult(function=label, dtype=fmt.name, dps=dps, tie_ratio=TIE_RATIO,
                         seconds=time.perf_counter() - started, timings=timings, of=of,
                         notes=tuple(notes), exact_how=exact.how, **fields)


def _sensitivity(math_fn, args, exact: ExactValues, dps, of, wrt, cotangent, needed) -> Sensitivity:
    """The outputs' sensitivities to the inputs (and, for a gradient, to the cotangent)."""
    if of == "value":
        return sensitivity(math_fn, args, exact.obj, exact.hi, dps, contraction=exact.contraction,
                           needed=needed)
    fn, cot = gradient_of_cotangent(math_fn, wrt, cotangent)
    names = (*argument_names(math_fn, len(args)), "cotangent")
    return sensitivity(fn, (*args, cot), exact.obj, exact.hi, dps, float_definition=False,
                       names=names, needed=needed)


def _judge(definition, args, converted, exact: ExactValues, fmt, numpy_f32) -> dict[str, Any]:
    """The candidates measured against the exact values, the float32 evaluation, the
    closest candidate per entry (the figures that do not depend on the bounds)."""
    shape = np.shape(exact.obj)
    exact_obj = exact.obj.reshape(-1)
    notes: list[str] = []
    values = {k: shaped(v, k, shape).reshape(-1) for k, v in converted.items()}
    exact_hi = exact.hi
    want = correct_rounding(exact_hi, exact_obj, fmt)
    if fmt is FLOAT64:
        exact_hi = exact_obj  # the errors of float64 candidates need the exact value itself
    errors, stats = {}, {}
    for key, c in values.items():
        errors[key], stats[key] = measure(key, c, exact_hi, exact_obj, want, fmt, shape, notes)
    f32_stats = None
    if numpy_f32:
        _, y32, note = float32_run(definition, args, shape, fmt)
        if note:
            notes.append(note)
        if y32 is not None:
            errors[FLOAT32_EVALUATION], f32_stats = measure(
                FLOAT32_EVALUATION, y32, exact_hi, exact_obj, want, fmt, shape, notes)
    closer_index = closer(np.stack([errors[k] for k in values]))
    names = tuple(values)
    return {
        "shape": tuple(shape), "names": names, "stats": stats, "float32": f32_stats,
        "values": {k: v.reshape(shape) for k, v in values.items()},
        "errors": {k: v.reshape(shape) for k, v in errors.items()},
        "exact": exact.obj, "correctly_rounded": from_bits(round_to_format(want, fmt), fmt).reshape(shape),
        "closer": np.array([None, *names], dtype=object)[closer_index + 1].reshape(shape),
        "closer_index": closer_index.reshape(shape), "notes": tuple(notes)}


def _bounded(fields: dict[str, Any], hi: np.ndarray, bound_ulps: float | None,
             sens: Sensitivity | None, fmt: FloatFormat, working: str, u: float) -> dict[str, Any]:
    """The bounds, the judgement of every candidate against them, and why they are wide."""
    shape = fields["shape"]
    size = int(np.prod(shape, dtype=np.int64))
    kappa = np.zeros(size)
    if bound_ulps is not None:
        if not (isinstance(bound_ulps, (int, float)) and bound_ulps > 0):
            raise ValueError(f"bound_ulps must be a positive number, got {bound_ulps!r}")
        bounds, text = _bound.plain(bound_ulps, size)
        base = float(bound_ulps)
    elif sens is None:
        bounds, text = _bound.fallback(size, fmt)
        base = BASE_BOUND_ULPS
    else:
        kappa = sens.total
        bounds = _bound.bounds(hi, kappa, fmt, u)
        base = BASE_BOUND_ULPS
        widest = int(np.argmax(bounds)) if size else 0
        words = ""
        if size and bounds[widest] > 2 * BASE_BOUND_ULPS:
            ix = tuple(int(i) for i in np.unravel_index(widest, shape))
            loss = float(_bound.working_loss(hi[widest:widest + 1], kappa[widest:widest + 1], fmt, u)[0])
            parts = [(float(b[widest]), n) for b, n in zip(sens.by_input, sens.names) if b is not None]
            words = "Widest " + _bound.why_wide(ix, float(hi[widest]), parts, loss, working, u,
                                                kappa=float(kappa[widest]))
        text = _bound.reason(bounds, sens, working, u, words)
    stats = dict(fields["stats"])
    for j, key in enumerate(fields["names"]):
        stats[key] = judged(stats[key], fields["errors"][key].reshape(-1), bounds, shape,
                            fields["closer_index"].reshape(-1) == j)
    f32 = fields["float32"]
    if f32 is not None:
        f32 = judged(f32, fields["errors"][FLOAT32_EVALUATION].reshape(-1), bounds, shape, None)
    by_input = {} if sens is None else {n: b.reshape(shape) for n, b in zip(sens.names, sens.by_input)
                                         if b is not None}
    return {"stats": stats, "float32": f32, "bound_ulps": base, "bounds": bounds.reshape(shape),
            "bound_reason": text, "sensitivity": kappa.reshape(shape), "sensitivity_by_input": by_input,
            "working": working, "unit_roundoff": u}
