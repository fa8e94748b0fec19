"""``dispute``: settle a low-precision disagreement against the exact value.

A fast kernel and a reference disagree in bfloat16 (or float16, float32). Comparing both
with a float32 run and picking a tolerance by experience sometimes blames the wrong side:
in MLX's rotary embedding the fast kernel was about 60x more accurate than the reference.
``dispute`` evaluates the mathematical definition ``math_fn`` (plain numpy code) at
arbitrary precision on the inputs taken exactly, and measures every candidate in ulps of
the target format against that exact value (``gradcheck._core.formats``: ulps of the exact value,
subnormal-aware; correct rounding decided from the exact value, never via float64).

How the verdict is reached (each rule is also stated in the printed result):

* **most accurate**: the candidate with the smallest mean ulp error; "N x more accurate" is
  the ratio of mean ulp errors (the 99th percentile and the maximum are printed next to
  it). Candidates whose mean errors are within :data:`TIE_RATIO` of each other are tied
  (``most_accurate`` is None).
* **broken**: a candidate with an entry beyond its bound. The default bound of entry i is

      bound_i = BASE_BOUND_ULPS + BOUND_FACTOR * A_i / ulp(exact_i)      (in ulps)

  where ``A_i`` is the largest *absolute* error of a float32 evaluation of ``math_fn``
  (unrounded) among the :data:`NEIGHBOURS` entries nearest to entry i in magnitude. The
  float32 evaluation's error at an entry is the larger of two: ``math_fn`` run with float32
  arithmetic emulated on ``gradcheck.mp`` values (every operation and every float constant
  rounded to 24 bits, :mod:`gradcheck._lowp.dispute_bound`), which measures float32 arithmetic
  even when ``math_fn`` promotes to float64 (a float64 frequency table), and ``math_fn`` run
  on float32 numpy arrays (numpy's libm). A
  kernel that computes in float32 and rounds once is within 0.5 ulp plus what float32
  arithmetic itself loses; the float32 evaluation measures the latter on these very
  inputs. Where the output is well conditioned that is tiny and the bound is 2 ulps: one
  rounding in the target format beyond the final one. Where it is not (at rotary
  positions near 8000 a float32 angle is off by ~5e-4 rad, which is tens or thousands of
  ulps on outputs that nearly cancel) the bound widens by twice what float32 loses there.
  Absolute errors, pooled over neighbours in magnitude, are used because the error of any
  float32 computation at a near-cancellation is a random draw of the same size for every
  implementation: comparing a candidate with the float32 evaluation entry by entry, or
  max with max, would call an equally good kernel broken by chance, and a bound from the
  single worst entry would grow with the sample. Pass ``bound_ulps=`` for a plain bound.
"""
from __future__ import annotations

import inspect
import math
import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from .._core import arguments as _arguments
from .._core.errors import ShapeMismatchError
from .._core.formats import (
    FLOAT64,
    FloatFormat,
    from_bits,
    is_correctly_rounded,
    resolve_format,
    round_to_format,
    ulp,
    ulp_error,
)
from .._report.text import figure
from .dispute_bound import float32_arithmetic
from .dispute_gradient import gradient_definition, require_kind
from .dispute_timing import ROUNDS, Timing, run_and_time
from .result import CandidateStats, DisputeResult

__all__ = ["dispute", "DisputeResult", "CandidateStats", "TIE_RATIO", "BASE_BOUND_ULPS",
           "BOUND_FACTOR", "NEIGHBOURS", "FLOAT32_EVALUATION"]

#: Mean errors within this factor of each other are a tie.
TIE_RATIO = 1.25
#: The smallest default bound: room for one rounding in the target format beyond the last.
BASE_BOUND_ULPS = 2.0
#: The default bound adds this many times the float32 evaluation's absolute error.
BOUND_FACTOR = 2.0
#: How many entries nearest in magnitude pool their float32 absolute errors (odd).
NEIGHBOURS = 101
#: The float32 evaluation's name (in ``result.errors`` and ``result.float32.name``).
FLOAT32_EVALUATION = "float32 evaluation"


def _dispute_keywords(dps: Any, bound_ulps: Any, name: Any, float32_evaluation: Any,
                      rounds: Any = ROUNDS) -> None:
    """The types of dispute's keywords, refused at the boundary with what they accept."""
    _arguments.integer("rounds", rounds, minimum=1, meaning=" (timed rounds per callable candidate)")
    _arguments.integer("dps", dps, minimum=_arguments.MIN_DIGITS,
                       meaning=" (significant digits of the exact values)")
    _arguments.positive("bound_ulps", bound_ulps, none=True)
    _arguments.text("name", name)
    _arguments.flag("float32_evaluation", float32_evaluation)


def dispute(math_fn: Callable[..., Any], inputs: Any, candidates: Any, dtype: Any = None, *,
            dps: int = 40, bound_ulps: float | None = None, name: str | None = None,
            float32_evaluation: bool = True, of: str = "value", wrt: int = 0,
            cotangent: Any = None, rounds: int = ROUNDS) -> DisputeResult:
    """Judge each candidate output against the exact value of ``math_fn(*inputs)``.

    Parameters
    ----------
    math_fn : callable
        The definition, numpy code run unmodified at ``dps`` significant digits
        (:func:`gradcheck.mp.evaluate`) on the inputs converted exactly; it must not leave
        arbitrary precision (``math.tanh``, ``astype(float)``, C code): that raises
        :class:`gradcheck.mp.NotAdjudicable` saying where.
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
        The error beyond which an entry makes a candidate broken (default: per entry, see
        the module docstring; ``result.bounds`` and ``result.bound_reason`` say what it was).
    name : str, optional
        What the result calls ``math_fn`` (default: its ``__name__``).
    float32_evaluation : bool, default True
        Measure a float32 evaluation of ``math_fn`` alongside (float inputs as float32, its
        result rounded once to ``dtype``); False skips it.
    of : {"value", "gradient"}, default "value"
        ``"gradient"``: the candidates are gradients, of ``sum(cotangent * math_fn(*inputs))``
        with respect to ``inputs[wrt]``, judged against the exact gradient computed at
        ``dps`` digits by reverse mode over ``gradcheck.mp`` values
        (:mod:`gradcheck._lowp.dispute_gradient`); the bound is widened by the same reverse
        pass in 24-bit arithmetic.
    wrt : int, default 0
        With ``of="gradient"``: which input the gradient is taken with respect to.
    cotangent : array_like, optional
        With ``of="gradient"``: shaped like ``math_fn``'s result; None when it returns a
        scalar.
    rounds : int, default 7
        Timing rounds for callable candidates.

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

    Cost: the exact evaluation calls an mpmath function per element and operation, about
    5-15 us each with gmpy2 (``benchmarks/bench_dispute.py``: 1e5 rotary-embedding
    entries in about 5 s on one core); the float32-arithmetic evaluation that sets the
    default bound is a second such pass (a dispute takes about 1.5-2x one exact evaluation;
    ``bound_ulps=`` or ``float32_evaluation=False`` skips it); measuring the candidates is
    vectorized. A gradient dispute costs a few exact evaluations (reverse mode).

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
    _dispute_keywords(dps, bound_ulps, name, float32_evaluation, rounds)
    of = require_kind(of)
    args = _as_inputs(inputs)
    label = _arguments.label_of(math_fn, name)
    _require_arity(math_fn, args, label)
    if of == "gradient":
        math_fn, label = gradient_definition(math_fn, args, wrt, cotangent, label)
    named = _named_candidates(candidates)
    timings: dict[str, Timing] = {}
    timed = {k: v for k, v in named.items() if callable(v)}
    if timed:  # called with the inputs as given, before anything else runs
        outputs, timings = run_and_time(timed, tuple(inputs) if isinstance(inputs, (tuple, list))
                                        else (inputs,), rounds=rounds)
        named = {k: outputs.get(k, v) for k, v in named.items()}
    fmt = _target_format(dtype, named)
    # Checked before the exact evaluation, which can take a while.
    converted = {k: _as_candidate(v, fmt, k) for k, v in named.items()}
    exact = _exact_values(math_fn, args, dps)
    numpy_f32 = float32_evaluation and of == "value"  # no numpy evaluation of a gradient
    fields = _judge(math_fn, args, converted, exact, fmt, bound_ulps, float32_evaluation, numpy_f32)
    return DisputeResult(function=label, dtype=fmt.name, dps=dps, tie_ratio=TIE_RATIO,
                         seconds=time.perf_counter() - started, timings=timings, of=of, **fields)


def _judge(math_fn, args, converted, exact, fmt, bound_ulps, float32_evaluation,
           numpy_f32) -> dict[str, Any]:
    """Every figure of the result but its names and times: the candidates measured against
    the exact values, the float32 evaluations, the bounds, the closest candidate per entry."""
    shape = np.shape(exact)
    exact_obj = np.asarray(exact, dtype=object).reshape(-1)
    notes: list[str] = []
    values = {k: _shaped(v, k, shape).reshape(-1) for k, v in converted.items()}

    exact_hi = round_to_format(exact_obj, FLOAT64, as_dtype=True)
    want = _correct_rounding(exact_hi, exact_obj, fmt)
    if fmt is FLOAT64:
        exact_hi = exact_obj  # the errors of float64 candidates need the exact value itself
    errors, stats = {}, {}
    for key, c in values.items():
        errors[key], stats[key] = _measure(key, c, exact_hi, exact_obj, want, fmt, shape, notes)

    f32_stats, y32_raw = None, None
    if numpy_f32:
        y32_raw, y32, note = _float32_run(math_fn, args, shape, fmt)
        if note:
            notes.append(note)
        if y32 is not None:
            errors[FLOAT32_EVALUATION], f32_stats = _measure(
                FLOAT32_EVALUATION, y32, exact_hi, exact_obj, want, fmt, shape, notes)

    widening, source = None, ""
    if float32_evaluation and bound_ulps is None and fmt is not FLOAT64:
        widening, source = _float32_losses(math_fn, args, shape, y32_raw, exact_hi, notes)
    bounds, base, bound_reason = _bounds(bound_ulps, widening, exact_hi, fmt, source)
    closer_index = _closer(np.stack([errors[k] for k in values]))
    names = tuple(values)
    for j, key in enumerate(names):
        stats[key] = _judged(stats[key], errors[key], bounds, shape, closer_index == j)
    if f32_stats is not None:
        f32_stats = _judged(f32_stats, errors[FLOAT32_EVALUATION], bounds, shape, None)
    closer = np.array([None, *names], dtype=object)[closer_index + 1].reshape(shape)
    return {
        "shape": tuple(shape), "names": names, "stats": stats, "float32": f32_stats,
        "values": {k: v.reshape(shape) for k, v in values.items()},
        "errors": {k: v.reshape(shape) for k, v in errors.items()},
        "exact": exact_obj.reshape(shape),
        "correctly_rounded": from_bits(round_to_format(want, fmt), fmt).reshape(shape),
        "closer": closer, "closer_index": closer_index.reshape(shape), "bound_ulps": base,
        "bounds": bounds.reshape(shape), "bound_reason": bound_reason, "notes": tuple(notes)}


# -- inputs and candidates ------------------------------------------------------------------


def _to_numpy(value: Any) -> np.ndarray:
    """numpy view of an array-like; torch tensors converted (bfloat16 through its bits)."""
    if type(value).__module__.split(".")[0] == "torch":
        t = value.detach().cpu()
        if str(t.dtype) == "torch.bfloat16":
            import ml_dtypes
            import torch

            return t.contiguous().view(torch.int16).numpy().view(ml_dtypes.bfloat16)
        return t.numpy()
    return np.asarray(value)


def _as_inputs(inputs: Any) -> tuple[np.ndarray, ...]:
    if isinstance(inputs, (tuple, list)):
        return tuple(_to_numpy(a) for a in inputs)
    return (_to_numpy(inputs),)


def _named_candidates(candidates: Any) -> dict[str, Any]:
    if isinstance(candidates, Mapping):
        named = {str(k): v for k, v in candidates.items()}
    elif isinstance(candidates, (tuple, list)):
        named = {str(k): v for k, v in enumerate(candidates)}
    else:
        raise TypeError("candidates must be a dict {name: array} (or a sequence of arrays), "
                        f"got {type(candidates).__name__}")
    if not named:
        raise ValueError("dispute needs at least one candidate")
    if FLOAT32_EVALUATION in named:
        raise ValueError(f"{FLOAT32_EVALUATION!r} is reserved for the float32 evaluation; rename that candidate")
    return named


def _is_float(dt: np.dtype) -> bool:
    return dt.kind == "f" or dt.name == "bfloat16"


def _target_format(dtype: Any, named: dict[str, Any]) -> FloatFormat:
    if dtype is not None:
        return resolve_format(dtype)  # ValueError listing the valid names
    kinds = {k: _to_numpy(v).dtype for k, v in named.items()}
    found = {dt.name for dt in kinds.values() if _is_float(dt)}
    if len(found) == 1 and len(kinds) == len([d for d in kinds.values() if _is_float(d)]):
        return resolve_format(found.pop())
    listing = ", ".join(f"{k}: {dt}" for k, dt in kinds.items())
    raise ValueError(f"pass dtype= (float16, bfloat16, float32 or float64): the candidates do "
                     f"not share one float dtype ({listing})")


def _require_arity(math_fn: Callable[..., Any], args: tuple[np.ndarray, ...], label: str) -> None:
    """``math_fn`` must take the inputs as its positional arguments: a wrong count is the
    caller's mistake, to be said as such (called anyway, it would raise a TypeError that
    reads like an operation with no arbitrary-precision form)."""
    fn = inspect.unwrap(math_fn)
    if isinstance(fn, np.ufunc):
        if fn.nin != len(args):
            raise TypeError(f"math_fn {label} (a ufunc) takes {fn.nin} input(s), but {len(args)} "
                            "were given: pass one array per argument, in order")
        return
    try:
        sig = inspect.signature(math_fn)
    except (TypeError, ValueError):  # no signature to read (some C functions): the call will tell
        return
    try:
        sig.bind(*args)
    except TypeError as exc:
        raise TypeError(f"math_fn {label}{sig} cannot be called with the {len(args)} input(s) given "
                        f"({exc}): pass one array per positional argument, in order") from None


def _as_candidate(value: Any, fmt: FloatFormat, key: str) -> np.ndarray:
    """The candidate's values as float64 (exact widening), checked for type, for entries,
    and for being values of ``fmt``."""
    arr = _to_numpy(value)
    if arr.dtype in (np.uint16, np.int16) and fmt.bits == 16:
        arr = arr.view(np.uint16).view(fmt.dtype)  # bit patterns of the target format
    if not _is_float(arr.dtype) or arr.dtype.itemsize > 8:
        raise TypeError(f"candidate {key!r} has dtype {arr.dtype}; expected a float array "
                        "(float16, bfloat16, float32, float64; uint16 bit patterns for 16-bit targets)")
    if arr.size == 0:
        raise ValueError(f"candidate {key!r} has no entries (shape {arr.shape}): there is nothing to judge (are the inputs empty?)")
    with np.errstate(invalid="ignore"):
        values = arr.astype(np.float64)
    _require_representable(values, arr.dtype, fmt, key)
    return values.reshape(arr.shape)


def _require_representable(values: np.ndarray, dtype: np.dtype, fmt: FloatFormat, key: str) -> None:
    """Refuse a candidate holding values that are not values of ``fmt`` (a wider result
    never rounded to it): its ulp errors and "correctly rounded" fraction would measure
    something else than the output of a ``fmt`` kernel and read as a verdict on one."""
    flat = values.reshape(-1)
    with np.errstate(invalid="ignore"):
        nearest = from_bits(round_to_format(flat, fmt), fmt).astype(np.float64)
        outside = np.flatnonzero((nearest != flat) & ~np.isnan(flat))
    if not outside.size:
        return
    j = int(outside[0])
    where = tuple(int(i) for i in np.unravel_index(j, values.shape))
    raise ValueError(
        f"candidate {key!r} is not a {fmt.name} output: {outside.size} of {flat.size} entries are not "
        f"{fmt.name} values (entry {where} is {float(flat[j])!r}, the nearest {fmt.name} value {float(nearest[j])!r}). "
        f"Round it to {fmt.name} as the kernel's output would be, or judge it at its own precision "
        f"(dtype={dtype.name!r})")


def _shaped(values: np.ndarray, key: str, shape: tuple) -> np.ndarray:
    if values.shape != tuple(shape):
        raise ShapeMismatchError(f"candidate {key!r} (compared with math_fn(*inputs))", shape, values.shape)
    return values


def _exact_values(math_fn: Callable[..., Any], args: tuple[np.ndarray, ...], dps: int) -> Any:
    from ..mp import NotAdjudicable
    from ..mp._context import owned
    from ..mp._convert import to_mp_in
    from ..mp._evaluate import run_checked

    if dps < 1:
        raise ValueError(f"dps must be a positive number of digits; got {dps}")
    try:
        with owned(dps) as ctx:  # this dispute's own precision: no other thread can change it
            xs = tuple(to_mp_in(a, ctx, dps if _is_float(a.dtype) else None) for a in args)
            return run_checked(lambda _: math_fn(*xs), None, ctx)
    except NotAdjudicable as exc:
        raise NotAdjudicable(exc.reason, "math_fn cannot be evaluated at arbitrary precision, so "
                             f"it cannot settle the dispute: {exc.detail}") from exc


def _float32_run(math_fn, args, shape, fmt) -> tuple[Any, Any, str]:
    """math_fn on float32 inputs: its result (float64 values, flat), the same rounded once to
    fmt, and a note (both None if it could not run)."""
    xs = tuple(a.astype(np.float32) if _is_float(a.dtype) else a for a in args)
    what = "the float32 evaluation of math_fn"
    try:
        with np.errstate(all="ignore"):
            y = _to_numpy(math_fn(*xs))
    except Exception as exc:  # noqa: BLE001 - informational only: say so and go on
        return None, None, f"{what} raised {type(exc).__name__}: {exc} (no float32 comparison)"
    if not _is_float(y.dtype) or y.shape != tuple(shape):
        return None, None, f"{what} returned {y.dtype} of shape {y.shape} (no float32 comparison)"
    note = ""
    if y.dtype != np.float32:
        note = (f"{what} came out {y.dtype} (numpy promoted a float32 value): its row measures "
                f"a {y.dtype} evaluation")
    rounded = from_bits(round_to_format(y, fmt), fmt)  # one rounding, straight from its bits
    with np.errstate(invalid="ignore"):
        return y.astype(np.float64).reshape(-1), rounded.astype(np.float64).reshape(-1), note


# -- measuring ----------------------------------------------------------------------------


def _correct_rounding(exact_hi: np.ndarray, exact_obj: np.ndarray, fmt: FloatFormat) -> np.ndarray:
    """The exact values rounded to nearest-even in fmt, as float64 values.

    Rounded from ``exact_hi`` (the exact values rounded to float64), which is the same as
    rounding the exact value except where ``exact_hi`` is itself a midpoint of fmt (a
    float64 number for every format up to float32): rounding to nearest is monotonic, so
    an exact value strictly between two midpoints has its float64 rounding between them
    too. Those entries (and non-finite ones) are rounded again from the exact value.
    """
    if fmt is FLOAT64:
        return exact_hi
    with np.errstate(invalid="ignore"):
        want = from_bits(round_to_format(exact_hi, fmt), fmt).astype(np.float64)
        tie = np.abs(exact_hi - want) == 0.5 * ulp(exact_hi, fmt)
    redo = np.flatnonzero(tie | ~np.isfinite(exact_hi) | ~np.isfinite(want))
    if redo.size:
        want[redo] = from_bits(round_to_format(exact_obj[redo], fmt), fmt).astype(np.float64)
    return want


def _ulp_errors(c: np.ndarray, exact_hi: np.ndarray, exact_obj: np.ndarray,
                fmt: FloatFormat) -> np.ndarray:
    """Errors in ulps of fmt. Against the exact value rounded to float64 (the figure then
    differs from the exact ratio by < 2**-40 ulp for formats up to float32), except where
    that rounding may have crossed a power of two (the ulp would differ), which is redone
    from the exact value; float64 targets always use the exact value."""
    if fmt is FLOAT64 or exact_hi.dtype == object:
        return ulp_error(c, exact_obj, fmt)
    err = ulp_error(c, exact_hi, fmt)
    mant, _ = np.frexp(exact_hi)
    redo = np.flatnonzero((np.abs(mant) == 0.5) | ~np.isfinite(exact_hi) | (exact_hi == 0))
    if redo.size:
        err[redo] = ulp_error(c[redo], exact_obj[redo], fmt)
    return err


def _measure(key, c, exact_hi, exact_obj, want, fmt, shape, notes) -> tuple[np.ndarray, CandidateStats]:
    err = _ulp_errors(c, exact_hi, exact_obj, fmt)
    rounded = is_correctly_rounded(c, want, fmt)  # want is representable: RN(want) == want
    err[rounded & np.isinf(want)] = 0.0           # overflow rounded correctly to inf
    nonfinite = int(np.sum(~np.isfinite(c) & np.isfinite(want)))
    if nonfinite:
        notes.append(f"{key}: {nonfinite} entries are NaN/inf where the exact value is finite "
                     "(infinite error)")
    finite = err[np.isfinite(err)]
    worst = int(np.argmax(np.where(np.isnan(err), np.inf, err))) if err.size else 0
    with np.errstate(invalid="ignore"):  # percentiles of infinite errors
        return err, _stats(key, err, c, rounded, exact_obj, finite, worst, nonfinite, shape)


def _stats(key, err, c, rounded, exact_obj, finite, worst, nonfinite, shape) -> CandidateStats:
    return CandidateStats(
        name=key,
        max_ulp=float(err.max()) if err.size else 0.0,
        mean_ulp=float(err.mean()) if err.size else 0.0,
        p99_ulp=float(np.percentile(err, 99)) if err.size else 0.0,
        median_ulp=float(np.median(err)) if err.size else 0.0,
        correctly_rounded=float(rounded.mean()) if err.size else 1.0,
        within_1ulp=float(np.mean(err <= 1.0)) if err.size else 1.0,
        nonfinite=nonfinite,
        worst_index=tuple(int(i) for i in np.unravel_index(worst, shape)) if err.size else (),
        worst_value=float(c[worst]) if err.size else math.nan,
        worst_exact=float(round_to_format(exact_obj[worst:worst + 1], FLOAT64, as_dtype=True)[0])
        if err.size else math.nan,
        finite_max_ulp=float(finite.max()) if finite.size else 0.0,
    )


def _closer(errors: np.ndarray) -> np.ndarray:
    """Per entry, the index of the candidate strictly closest to the exact value; -1 for a
    tie (equal errors, e.g. both correctly rounded)."""
    if errors.shape[0] == 1:
        return np.zeros(errors.shape[1], dtype=np.int64)
    safe = np.where(np.isnan(errors), np.inf, errors)
    best = np.argmin(safe, axis=0)
    low = np.take_along_axis(safe, best[None], axis=0)[0]
    ties = (safe == low).sum(axis=0) > 1
    return np.where(ties, -1, best).astype(np.int64)


def _float32_losses(math_fn, args, shape, y32_raw, exact_hi, notes) -> tuple[np.ndarray | None, str]:
    """Per entry, the absolute error of float32 arithmetic on these inputs: the larger of
    the float32-arithmetic evaluation's (24-bit, whatever dtypes math_fn uses) and the
    numpy float32 evaluation's (its libm), where the latter really ran in float32."""
    y24, note = float32_arithmetic(math_fn, args, shape)
    if note:
        notes.append(note)
    with np.errstate(invalid="ignore", over="ignore"):
        losses = [np.abs(y - exact_hi) for y in (y24, y32_raw) if y is not None]
    # where an evaluation overflowed or gave NaN it measures nothing: no widening there
    losses = [np.where(np.isfinite(e), e, 0.0) for e in losses]
    if not losses:
        return None, ""
    named = " and ".join(n for n, y in (("24-bit", y24), ("numpy float32", y32_raw)) if y is not None)
    return np.maximum.reduce(losses), f"the float32 evaluations' ({named}, the larger)"


def _bounds(bound_ulps: float | None, losses: np.ndarray | None, exact_hi: np.ndarray,
            fmt: FloatFormat, source: str = "") -> tuple[np.ndarray, float, str]:
    """Per-entry bounds in ulps, the base bound, and how they were set (module docstring).
    ``losses``: per entry, what float32 arithmetic loses (``_float32_losses``)."""
    size = exact_hi.size
    if bound_ulps is not None:
        if not (isinstance(bound_ulps, (int, float)) and bound_ulps > 0):
            raise ValueError(f"bound_ulps must be a positive number, got {bound_ulps!r}")
        return np.full(size, float(bound_ulps)), float(bound_ulps), f"{figure(bound_ulps)} ulp (given)"
    base = BASE_BOUND_ULPS
    if fmt is FLOAT64 or losses is None:
        why = "float64 target" if fmt is FLOAT64 else "no float32 evaluation to widen it"
        return np.full(size, base), base, f"{figure(base)} ulp at every entry ({why})"
    with np.errstate(invalid="ignore", over="ignore"):
        absolute = losses
        order = np.argsort(np.abs(exact_hi), kind="stable")
        half = min(NEIGHBOURS, size) // 2
        padded = np.concatenate([np.zeros(half), absolute[order], np.zeros(half)])
        pooled = np.empty(size)
        pooled[order] = np.lib.stride_tricks.sliding_window_view(padded, 2 * half + 1).max(axis=1)
        bounds = base + BOUND_FACTOR * pooled / ulp(exact_hi, fmt)
    bounds = np.where(np.isnan(bounds), np.inf, bounds)
    low, mid, high = (float(np.min(bounds)), float(np.median(bounds)), float(np.max(bounds))) if size else (base,) * 3
    spread = f"{figure(low)} ulp everywhere" if high <= low * 1.001 else (
        f"{figure(low)} to {figure(high)} ulp here, median {figure(mid)}")
    return bounds, base, (f"{figure(base)} ulp + {figure(BOUND_FACTOR)} x {source} absolute error "
                          f"(largest among the {2 * half + 1} entries nearest in magnitude), in ulps of "
                          f"each entry: {spread}")


def _judged(stats: CandidateStats, err: np.ndarray, bounds: np.ndarray, shape: tuple,
            closest: np.ndarray | None) -> CandidateStats:
    """The figures that depend on the bounds and on the other candidates."""
    if not err.size:
        return stats
    with np.errstate(invalid="ignore", divide="ignore"):
        over = np.where(err > bounds, err / bounds, 0.0)
        beyond = int(np.count_nonzero(err > bounds))
        j = int(np.argmax(np.nan_to_num(over, nan=np.inf))) if beyond else int(np.argmax(
            np.nan_to_num(err - bounds, nan=np.inf)))
    return stats.with_judgement(
        beyond_bound=beyond / err.size, beyond_count=beyond,
        excess_index=tuple(int(i) for i in np.unravel_index(j, shape)),
        excess_ulp=float(err[j]), excess_bound=float(bounds[j]),
        closer=None if closest is None else float(np.mean(closest)))
