"""Measuring candidates against the exact values: ulps, correct rounding, figures.

The exact values come rounded to float64 (``exact_hi``) for speed, with the exact values
themselves (``exact_obj``) for the few entries where that rounding could change the answer:
a float64 value on a midpoint of the target format (correct rounding), or a power of two
(the ulp). Errors are in ulps of the target format at the exact value
(:mod:`gradcheck._core.formats`).
"""
from __future__ import annotations

import math

import numpy as np

from .._core.formats import FLOAT64, FloatFormat, from_bits, is_correctly_rounded, round_to_format, ulp, ulp_error
from .result import CandidateStats


def correct_rounding(exact_hi: np.ndarray, exact_obj: np.ndarray, fmt: FloatFormat) -> np.ndarray:
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


def measure(key, c, exact_hi, exact_obj, want, fmt, shape, notes) -> tuple[np.ndarray, CandidateStats]:
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


def closer(errors: np.ndarray) -> np.ndarray:
    """Per entry, the index of the candidate strictly closest to the exact value; -1 for a
    tie (equal errors, e.g. both correctly rounded)."""
    if errors.shape[0] == 1:
        return np.zeros(errors.shape[1], dtype=np.int64)
    safe = np.where(np.isnan(errors), np.inf, errors)
    best = np.argmin(safe, axis=0)
    low = np.take_along_axis(safe, best[None], axis=0)[0]
    ties = (safe == low).sum(axis=0) > 1
    return np.where(ties, -1, best).astype(np.int64)


def judged(stats: CandidateStats, err: np.ndarray, bounds: np.ndarray, shape: tuple,
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
