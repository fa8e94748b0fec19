"""The result of :func:`gradcheck.dispute`: figures per candidate, the verdict, the rules."""
from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

from .._core.formats import FLOAT64, resolve_format, round_to_format
from .._core.status import PassedAsTruth
from .._report.html import HtmlViews
from .._report.next_step import next_steps
from .._report.text import figure, percent
from .dispute_bound import why_wide, working_loss
from .dispute_timing import Timing, _seconds, speed_lines


@dataclass(frozen=True)
class CandidateStats:
    """One candidate's errors in ulps of the target format, against the exact value.

    ``max_ulp`` / ``mean_ulp`` / ``p99_ulp`` / ``median_ulp``: error figures (inf if some
    entry is NaN/inf where the exact value is finite; ``finite_max_ulp`` ignores those).
    ``correctly_rounded``: fraction of entries equal to the exact value rounded to nearest
    even. ``within_1ulp``: fraction with error <= 1 ulp. ``beyond_bound`` /
    ``beyond_count``: share / number of entries whose error exceeds their bound
    (``result.bounds``); ``excess_index`` / ``excess_ulp`` / ``excess_bound``: the entry
    furthest beyond its bound (or closest to it), its error and its bound. ``closer``:
    share of entries where this candidate is strictly the closest of all candidates (None
    for the float32 evaluation, which is not a candidate). ``worst_index`` /
    ``worst_value`` / ``worst_exact``: the entry with the largest error.
    """

    name: str
    max_ulp: float
    mean_ulp: float
    p99_ulp: float
    median_ulp: float
    correctly_rounded: float
    within_1ulp: float
    nonfinite: int
    worst_index: tuple[int, ...]
    worst_value: float
    worst_exact: float
    finite_max_ulp: float
    beyond_bound: float = 0.0
    beyond_count: int = 0
    excess_index: tuple[int, ...] = ()
    excess_ulp: float = math.nan
    excess_bound: float = math.nan
    closer: float | None = None

    def with_judgement(self, **figures: Any) -> CandidateStats:
        return dataclasses.replace(self, **figures)

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["worst_index"] = list(self.worst_index)
        out["excess_index"] = list(self.excess_index)
        return {k: (_json_float(v) if isinstance(v, float) else v) for k, v in out.items()}


def _json_float(v: float) -> float | str:
    return v if math.isfinite(v) else ("inf" if v > 0 else "-inf" if v < 0 else "nan")


@dataclass(frozen=True, eq=False)
class DisputeResult(HtmlViews, PassedAsTruth):
    """What :func:`gradcheck.dispute` found. ``print(result)`` gives the table and verdict.

    ``stats[name]``: :class:`CandidateStats` per candidate; ``float32``: the same figures for
    the float32 evaluation of the definition (None if it could not run). ``errors[name]``:
    per-entry ulp errors (also under ``"float32 evaluation"``); ``values[name]``: the
    candidate's values as float64 (exact widening). ``exact``: the exact values
    (object array of ``MPFloat``; for a contraction a stand-in that makes them when indexed,
    ``np.asarray(result.exact, dtype=object)`` makes all); ``correctly_rounded``: them rounded
    to the target dtype.
    ``closer``: per entry the name of the strictly closest candidate (None where tied);
    ``closer_index`` the same as an index into ``names`` (-1 where tied).
    ``most_accurate``: the candidate with the smallest mean error, or None when the best two
    are within ``tie_ratio``. ``broken``: the candidates with an entry beyond its bound;
    ``bounds`` holds the bound of every entry in ulps, ``bound_ulps`` its base (the bound
    where the function is well conditioned, or the bound you gave), ``bound_reason``
    says how they were set, :meth:`why` why one entry's bound is what it is.
    ``sensitivity``: per entry, ``sum_j |x_j dy/dx_j|`` over the input entries (zeros when
    a bound was given); ``sensitivity_by_input[name]``: the part from each input;
    ``working`` / ``unit_roundoff``: the working precision the bound allows for;
    ``exact_how``: how the exact values were computed (exact kernels or mpmath).
    ``of``: ``"value"`` or ``"gradient"`` (what the candidates are).
    ``timings[name]``: a :class:`~gradcheck._lowp.dispute_timing.Timing` (best and median
    seconds per call) for each candidate given as a callable; the verdict then has a line
    "name: 3.1x faster, 898x more accurate (than slowest ...)" per timed candidate, and
    :meth:`benchmark_record` gives the figures as JSON-able numbers.

    Examples
    --------
    >>> import numpy as np, ml_dtypes, gradcheck
    >>> x = np.linspace(-3, 3, 64).astype(ml_dtypes.bfloat16)
    >>> once = np.exp(x.astype(np.float32)).astype(ml_dtypes.bfloat16)  # rounded once
    >>> r = gradcheck.dispute(np.exp, (x,), {"once": once, "twice": np.exp(x / 2) * np.exp(x / 2)}, "bfloat16")
    >>> r.most_accurate, r.stats["once"].max_ulp <= 0.5
    ('once', True)
    """

    function: str
    dtype: str
    shape: tuple[int, ...]
    dps: int
    names: tuple[str, ...]
    stats: Mapping[str, CandidateStats]
    float32: CandidateStats | None
    values: Mapping[str, np.ndarray]
    errors: Mapping[str, np.ndarray]
    exact: Any
    correctly_rounded: np.ndarray
    closer: np.ndarray
    closer_index: np.ndarray
    bound_ulps: float
    bounds: np.ndarray
    bound_reason: str
    tie_ratio: float
    seconds: float = 0.0
    notes: tuple[str, ...] = field(default_factory=tuple)
    timings: Mapping[str, Timing] = field(default_factory=dict)
    of: str = "value"
    exact_how: str = ""
    sensitivity: np.ndarray | None = None
    sensitivity_by_input: Mapping[str, np.ndarray] = field(default_factory=dict)
    working: str = "float32"
    unit_roundoff: float = 2.0**-24

    def __post_init__(self) -> None:
        object.__setattr__(self, "timings", MappingProxyType(dict(self.timings)))
        object.__setattr__(self, "stats", MappingProxyType(dict(self.stats)))
        object.__setattr__(self, "errors", MappingProxyType(dict(self.errors)))
        object.__setattr__(self, "values", MappingProxyType(dict(self.values)))
        object.__setattr__(self, "sensitivity_by_input", MappingProxyType(dict(self.sensitivity_by_input)))

    # -- the verdict ----------------------------------------------------------------------
    def _ranked(self) -> list[str]:
        return sorted(self.names, key=lambda k: (_nan_last(self.stats[k].mean_ulp), self.names.index(k)))

    def ratio(self, better: str, worse: str) -> float:
        """How many times more accurate ``better`` is than ``worse``: the ratio of their mean
        ulp errors (inf when ``better`` is exact everywhere and ``worse`` is not)."""
        a, b = self.stats[better].mean_ulp, self.stats[worse].mean_ulp
        if a == b:
            return 1.0
        return b / a if a > 0 else math.inf

    def _tied(self, a: str, b: str) -> bool:
        r = self.ratio(a, b)
        return math.isfinite(r) and r < self.tie_ratio

    @property
    def most_accurate(self) -> str | None:
        """The candidate with the smallest mean ulp error; None if the runner-up is within
        ``tie_ratio`` of it."""
        ranked = self._ranked()
        if len(ranked) > 1 and self._tied(ranked[0], ranked[1]):
            return None
        return ranked[0]

    @property
    def broken(self) -> tuple[str, ...]:
        """Candidates with at least one entry beyond its bound, in candidate order."""
        return tuple(k for k in self.names if self.stats[k].beyond_count)

    @property
    def passed(self) -> bool:
        """No candidate is broken."""
        return not self.broken

    @property
    def verdict(self) -> str:
        """The finding in sentences: who is more accurate and by how much, who is broken,
        and for timed candidates how much faster each is than the slowest."""
        lines = [self._accuracy_sentence()]
        lines += speed_lines(self.names, self.timings, self.broken, self.ratio, self.tie_ratio)
        for k in self.names:
            s = self.stats[k]
            if k in self.broken:
                size = int(np.prod(self.shape, dtype=np.int64))
                lines.append(
                    f"{k} is broken: {s.beyond_count} of {size} entries ({percent(s.beyond_bound)}) "
                    f"exceed their bound, furthest at {s.excess_index}: {figure(s.excess_ulp)} ulp against "
                    f"a bound of {figure(s.excess_bound)} ulp ({self._value_at(k, s.excess_index)}); "
                    f"{percent(1 - s.within_1ulp)} of its entries are beyond 1 ulp, max error "
                    f"{figure(s.max_ulp)} ulp." + self._wide(s.excess_index))
            else:
                wide = ""
                if s.max_ulp > self.bound_ulps and s.worst_index:
                    wide = (f" Its largest error is within a bound of "
                            f"{figure(float(self.bounds[s.worst_index]))} ulp" + self._wide(s.worst_index, ":"))
                lines.append(
                    f"{k} is within its bound at every entry: max error {figure(s.max_ulp)} ulp, "
                    f"{percent(s.correctly_rounded)} correctly rounded." + (wide + "." if wide else ""))
        return "\n".join(lines)

    def why(self, index: Any) -> str:
        """Why the bound of entry ``index`` is what it is, in words: the base bound where the
        function is well conditioned there, else the input whose rounding it amplifies most
        and by how much (``"at (3, 7), where y = 0.00123, a relative change in 'positions'
        is amplified 3,984x ..."``)."""
        flat = np.atleast_1d(index) if np.ndim(index) else np.unravel_index(int(index), self.shape)
        ix = tuple(int(i) for i in flat)
        bound = float(self.bounds[ix])
        if self.sensitivity is None or not self.sensitivity_by_input and not np.any(self.sensitivity):
            return f"the bound at {ix} is {figure(bound)} ulp ({self.bound_reason})"
        y = float(round_to_format([self.exact[ix]], FLOAT64, as_dtype=True)[0])
        fmt = resolve_format(self.dtype)
        loss = float(working_loss(np.array([y]), np.array([float(self.sensitivity[ix])]), fmt,
                                  self.unit_roundoff)[0])
        parts = [(float(v[ix]), n) for n, v in self.sensitivity_by_input.items()]
        return f"the bound at {ix} is {figure(bound)} ulp: " + why_wide(
            ix, y, parts, loss, self.working, self.unit_roundoff, kappa=float(self.sensitivity[ix]))

    def _wide(self, ix: tuple[int, ...], lead: str = "") -> str:
        """`` The bound there is wide: ...`` where it is more than twice the base bound."""
        if not ix or float(self.bounds[ix]) <= 2 * self.bound_ulps or self.sensitivity is None:
            return ""
        text = self.why(ix)
        return f"{lead} {text.split(': ', 1)[1]}" if lead else f" The bound there is wide: {text.split(': ', 1)[1]}."

    def _value_at(self, name: str, ix: tuple[int, ...]) -> str:
        exact = round_to_format([self.exact[ix]], FLOAT64, as_dtype=True)[0]
        return f"it gives {float(self.values[name][ix]):.6g}, the exact value is {float(exact):.6g}"

    def _accuracy_sentence(self) -> str:
        ranked = self._ranked()
        best = ranked[0]
        b = self.stats[best]
        if len(ranked) == 1:
            return f"{best}: mean error {figure(b.mean_ulp)} ulp, max {figure(b.max_ulp)} ulp."
        tied = [k for k in ranked[1:] if self._tied(best, k)]
        if tied:
            group = " and ".join([best, *tied])
            means = " vs ".join(figure(self.stats[k].mean_ulp) for k in [best, *tied])
            head = (f"{group} are equally accurate (mean error {means} ulp, within the tie "
                    f"tolerance of {figure(self.tie_ratio)}x)")
        else:
            head = ""
        clauses = []
        for k in ranked[1:]:
            if k in tied:
                continue
            o = self.stats[k]
            r = self.ratio(best, k)
            if math.isinf(r) and b.mean_ulp == 0:
                clauses.append(f"{best} is exact at every entry, {k} is not (mean error "
                               f"{figure(o.mean_ulp)} ulp, max {figure(o.max_ulp)} ulp)")
            elif math.isinf(o.mean_ulp):
                clauses.append(f"{best} is more accurate than {k}, which has {o.nonfinite} "
                               f"non-finite entries where the exact value is finite")
            else:
                clauses.append(
                    f"{best} is {figure(r)}x more accurate than {k} (mean error {figure(b.mean_ulp)} vs "
                    f"{figure(o.mean_ulp)} ulp; p99 {figure(b.p99_ulp)} vs {figure(o.p99_ulp)}; max "
                    f"{figure(b.max_ulp)} vs {figure(o.max_ulp)})")
        return "; ".join(([head] if head else []) + clauses) + "."

    # -- rendering ------------------------------------------------------------------------
    def table(self) -> str:
        rows = [(k, self.stats[k]) for k in self.names]
        if self.float32 is not None:
            rows.append((f"({self.float32.name})", self.float32))
        width = max(9, *(len(k) for k, _ in rows))
        timed = bool(self.timings)
        head = (f"  {'candidate':<{width}} {'max ulp':>9} {'mean ulp':>9} {'p99 ulp':>9} "
                f"{'correctly rounded':>17} {'<= 1 ulp':>9} {'> bound':>8} {'closer':>8}"
                + (f" {'median':>10} {'best':>10}" if timed else ""))
        lines = [head]
        for k, s in rows:
            t = self.timings.get(k)
            times = "" if not timed else (f" {_seconds(t.median):>10} {_seconds(t.best):>10}" if t
                                          else f" {'-':>10} {'-':>10}")
            lines.append(
                f"  {k:<{width}} {figure(s.max_ulp):>9} {figure(s.mean_ulp):>9} {figure(s.p99_ulp):>9} "
                f"{percent(s.correctly_rounded):>17} {percent(s.within_1ulp):>9} "
                f"{percent(s.beyond_bound):>8} {percent(s.closer):>8}" + times)
        return "\n".join(lines)

    def summary(self) -> str:
        size = int(np.prod(self.shape, dtype=np.int64))
        status = "no candidate broken" if self.passed else f"BROKEN: {', '.join(self.broken)}"
        how = self.exact_how or f"mpmath at {self.dps} digits"
        return (f"dispute over {self.function} in {self.dtype}: {size} entries, exact values by "
                f"{how} ({self.seconds:.2f} s) -- {status}")

    def __str__(self) -> str:
        out = [self.summary(), self.table(), f"bound: {self.bound_reason}",
               "accuracy: ratio of mean ulp errors; 'closer' = share of entries where that "
               "candidate is strictly the closest",
               "verdict:"]
        out += ["  " + line for line in self.verdict.splitlines()]
        out += [f"note: {n}" for n in self.notes]
        out += [f"next: {step}" for step in next_steps(self)]
        return "\n".join(out)

    def __repr__(self) -> str:
        return f"<DisputeResult {self.summary()}>"

    def to_dict(self) -> dict[str, Any]:
        return {
            "function": self.function, "dtype": self.dtype, "shape": list(self.shape),
            "dps": self.dps, "candidates": list(self.names),
            "stats": {k: self.stats[k].to_dict() for k in self.names},
            "float32_evaluation": None if self.float32 is None else self.float32.to_dict(),
            "bound_ulps": _json_float(self.bound_ulps), "bound_reason": self.bound_reason,
            "bounds_range": [_json_float(float(np.min(self.bounds))), _json_float(float(np.max(self.bounds)))]
            if self.bounds.size else None,
            "tie_ratio": self.tie_ratio, "most_accurate": self.most_accurate,
            "broken": list(self.broken), "passed": self.passed,
            "ratios": {f"{a}/{b}": _json_float(self.ratio(a, b))
                       for a in self.names for b in self.names if a != b},
            "verdict": self.verdict, "notes": list(self.notes), "seconds": self.seconds,
            "of": self.of, "timings": {k: t.to_dict() for k, t in self.timings.items()},
            "working": self.working, "unit_roundoff": self.unit_roundoff, "exact_how": self.exact_how,
        }

    def benchmark_record(self) -> dict[str, Any]:
        """Speed and accuracy per candidate as flat JSON-able numbers, for a benchmark suite
        (pytest-benchmark's ``benchmark.extra_info.update(...)``, asv's tracked values).

        Per candidate: ``median_s`` / ``best_s`` (None if it was given as an array),
        ``mean_ulp`` / ``p99_ulp`` / ``max_ulp``, ``broken``, and against the slowest timed
        candidate ``speedup`` and ``accuracy_ratio`` (> 1: more accurate).

        >>> import numpy as np, ml_dtypes
        >>> from gradcheck import dispute
        >>> x = np.linspace(-3, 3, 64).astype(ml_dtypes.bfloat16)
        >>> def via_f32(v):
        ...     return np.exp(v.astype(np.float32)).astype(ml_dtypes.bfloat16)
        >>> r = dispute(np.exp, (x,), {"f32": via_f32, "bf16": np.exp}, "bfloat16", rounds=2)
        >>> rec = r.benchmark_record()
        >>> sorted(rec["candidates"]["f32"])[:4], rec["candidates"]["f32"]["median_s"] > 0
        (['accuracy_ratio', 'best_s', 'broken', 'max_ulp'], True)
        """
        timed = [k for k in self.names if k in self.timings]
        base = max(timed, key=lambda k: self.timings[k].median) if timed else None
        out: dict[str, Any] = {"function": self.function, "dtype": self.dtype, "of": self.of,
                               "entries": int(np.prod(self.shape, dtype=np.int64)),
                               "baseline": base, "broken": list(self.broken),
                               "most_accurate": self.most_accurate, "candidates": {}}
        for k in self.names:
            s, t = self.stats[k], self.timings.get(k)
            rec = {"median_s": t.median if t else None, "best_s": t.best if t else None,
                   "mean_ulp": _json_float(s.mean_ulp), "p99_ulp": _json_float(s.p99_ulp),
                   "max_ulp": _json_float(s.max_ulp), "broken": k in self.broken}
            if base is not None and t is not None:
                rec["speedup"] = _json_float(self.timings[base].median / t.median) if t.median else "inf"
                rec["accuracy_ratio"] = _json_float(self.ratio(k, base))
            out["candidates"][k] = rec
        return out

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), **kwargs)


def _nan_last(v: float) -> float:
    return math.inf if math.isnan(v) else v
