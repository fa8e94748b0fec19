"""The result of one check: always returned, never a flag that changes its type."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Iterable

import numpy as np

from ._core import status as _status
from ._classify.rule import relative_error, resolved_share
from ._core.errors import GradientAssertionError
from ._html import HtmlViews
from ._core.verdict import FAILING, Verdict

_VERDICT_BY_CODE = np.array(list(Verdict), dtype=object)
# Cause codes (see _causes.Cause) -> the mark shown after a verdict in the table.
_CAUSE_MARK = {0: "", 1: "*", 2: "*", 3: "~", 4: "^", 5: "^", 6: "~"}


def _fmt(v: float) -> str:
    return f"{v: .6e}" if np.isfinite(v) else f"{v!s:>13}"


@dataclass(frozen=True, eq=False)
class Report(HtmlViews):
    """Per-entry verdicts of one check, with everything needed to judge them.

    Arrays are shaped like the checked input: ``analytic`` (the claimed gradient),
    ``numeric`` (central difference, refined where a step study ran), ``noise``
    (estimated round-off of the numeric value), ``tolerance`` and ``codes`` (verdict
    codes; ``verdicts`` gives :class:`Verdict` members).

    ``status`` is ``"PASS"``, ``"FAIL"`` (a MISMATCH or NONFINITE entry, or a
    nondeterministic ``f``) or ``"INCONCLUSIVE"`` (no entry could be verified: not one
    PASS, e.g. all UNCHECKED because ``f`` returns bfloat16); ``passed`` is true for PASS
    only. ``gradcheck._core.status`` states the rule and its edge cases.

    >>> import numpy as np, gradcheck
    >>> r = gradcheck.check(lambda x: (x**3).sum(), np.array([1.0, 2.0]), grad=lambda x: 3*x**2)
    >>> r.passed, r.counts[gradcheck.Verdict.PASS]
    (True, 2)
    """

    name: str
    analytic: np.ndarray
    numeric: np.ndarray
    noise: np.ndarray
    tolerance: np.ndarray
    codes: np.ndarray
    refined: np.ndarray
    dtype: str
    engine: str
    config: Any
    deterministic: bool = True
    drift: float = 0.0
    evaluations: int = 0
    seconds: float = 0.0
    notes: tuple[str, ...] = field(default_factory=tuple)
    # Second look (None when not recorded): how each verdict was reached (Cause codes), the
    # exact derivative and its certified digits where the referee ran (NaN / -1 elsewhere),
    # and one-sided slopes where a kink test ran.
    causes: np.ndarray | None = None
    exact: np.ndarray | None = None
    digits: np.ndarray | None = None
    left: np.ndarray | None = None
    right: np.ndarray | None = None
    adjudication: dict[str, Any] = field(default_factory=dict)
    # The dtype of f's output ("" when not recorded): says when low precision is why
    # nothing could be verified.
    output_dtype: str = ""
    # f's own unit round-off as measured, when it was far above its output dtype's (f computes
    # in lower precision inside, e.g. float32 in a float64 function); None otherwise.
    measured_roundoff: float | None = None
    # Screening (gradcheck.screen) only: per entry, the smallest error that would have been
    # found (inf where nothing was concluded); None for an entry-wise check.
    detection_limit: np.ndarray | None = None

    # -- views ---------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.codes.shape)

    @property
    def size(self) -> int:
        return int(self.codes.size)

    @property
    def verdicts(self) -> np.ndarray:
        """Object array shaped like ``x`` holding :class:`Verdict` members."""
        return _VERDICT_BY_CODE[self.codes]

    @property
    def rel_error(self) -> np.ndarray:
        """The seed's relative error ``|a-n| / max(|a|, |n|, 1e-12)``."""
        return relative_error(self.analytic, self.numeric)

    @property
    def counts(self) -> dict[Verdict, int]:
        """Number of entries per verdict (every member present, zeros included)."""
        found = np.bincount(self.codes.reshape(-1), minlength=len(Verdict))
        return {v: int(found[v]) for v in Verdict}

    @property
    def status(self) -> str:
        """``"PASS"``, ``"FAIL"`` or ``"INCONCLUSIVE"`` (no entry could be verified)."""
        return _status.status_of(self.counts, self.size, self.deterministic)

    @property
    def passed(self) -> bool:
        """No MISMATCH, no NONFINITE, a deterministic function, and at least one entry
        verified (``status == "PASS"``)."""
        return self.status == _status.PASS

    @property
    def reason(self) -> str:
        """Why nothing could be verified, and the ways out ("" unless INCONCLUSIVE)."""
        if self.status != _status.INCONCLUSIVE:
            return ""
        why, way_out = _status.why_nothing_verified(self)
        return f"{why}. Way out: {way_out}"

    def entries(self, verdict: Verdict | Iterable[Verdict]) -> list[tuple[int, ...]]:
        """Multi-indices (row-major order) of the entries with this verdict (or these)."""
        wanted = [verdict] if isinstance(verdict, Verdict) else list(verdict)
        mask = np.isin(self.codes, np.array([int(v) for v in wanted], dtype=np.uint8))
        return [tuple(int(i) for i in ix) for ix in np.argwhere(mask)]

    @property
    def layout(self) -> Any:
        """Where the MISMATCH entries sit, in words: a
        :class:`~gradcheck._layout.LayoutDescription` such as "the last column (column 4)"
        (its text is ``"none"`` when nothing mismatches)."""
        from ._layout import describe_layout

        return describe_layout(self.codes == Verdict.MISMATCH)

    def cause(self, index: tuple[int, ...]) -> "Cause":
        """How the verdict of the entry at ``index`` was reached."""
        from ._core.verdict import Cause

        return Cause(int(self.causes[index])) if self.causes is not None else Cause.FIRST_PASS

    def explain(self, index: tuple[int, ...]) -> str:
        """One line on one entry: verdict, values, and how it was settled."""
        from ._core.verdict import Cause

        v = Verdict(int(self.codes[index]))
        cause = self.cause(index)
        text = f"{index}: {v.name} (claimed {self.analytic[index]:.10g}, numeric {self.numeric[index]:.10g}; {cause})"
        if cause in (Cause.EXACT, Cause.EXACT_ZERO):
            text += f"; exact {self.exact[index]:.17g} with {int(self.digits[index])} certified digits"
        if cause in (Cause.KINK_STEPS, Cause.KINK_EXACT):
            text += f"; one-sided derivatives {self.left[index]:.10g} and {self.right[index]:.10g}"
        if v is Verdict.UNCHECKED:
            share = float(resolved_share(self.analytic[index], self.numeric[index], self.tolerance[index]))
            needed = getattr(self.config, "resolution", None)
            reached = f"resolved only to {100 * share:.2g}% of the value" if share < 1 else \
                "not resolved: the tolerance is at or above the value (both sides within noise)"
            text += f"; {reached}" + (f" (a PASS needs {100 * needed:.2g}%)" if needed else "")
        return text

    def excess(self) -> np.ndarray:
        """``|a - n| / tolerance``: above 1 means outside tolerance."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.abs(self.analytic - self.numeric) / self.tolerance

    def worst(self, count: int = 10) -> list[tuple[int, ...]]:
        """Multi-indices of the entries furthest outside (or closest to) tolerance;
        failing verdicts first."""
        flat_codes = self.codes.reshape(-1)
        ex = np.nan_to_num(self.excess().reshape(-1), nan=np.inf, posinf=np.inf)
        ex[flat_codes == Verdict.SCREENED] = -np.inf  # screening: never looked at alone, listed last
        failing = np.isin(flat_codes, [int(v) for v in FAILING])
        order = np.lexsort((-ex, ~failing))[:count]
        return [tuple(int(i) for i in np.unravel_index(j, self.shape)) for j in order]

    # -- judging -------------------------------------------------------------------
    def assert_pass(self, *, allow_unchecked: bool | None = None) -> "Report":
        """Raise :class:`GradientAssertionError` (an AssertionError) unless the check passed.

        ``allow_unchecked``: ``None`` (the default) accepts UNCHECKED entries beside
        verified ones but fails an INCONCLUSIVE check (no entry verified), saying why and
        the way out; ``True`` also accepts an INCONCLUSIVE check; ``False`` fails on any
        UNCHECKED entry (nothing proven there). A FAIL always raises.
        Returns the report, so it can be chained.
        """
        refused = _status.refusal(self.status, self.counts[Verdict.UNCHECKED], allow_unchecked)
        if refused:
            raise GradientAssertionError(f"{refused}\n{self}", self)
        return self

    # -- rendering -----------------------------------------------------------------
    def summary(self) -> str:
        c = self.counts
        parts = ", ".join(f"{c[v]} {v.name}" for v in Verdict if c[v]) or "none"
        status = self.status
        if status == _status.INCONCLUSIVE:
            return f"{self.name}: {status} -- {_status.NOTHING_VERIFIED}: {parts}"
        return f"{self.name}: {status} -- {self.size} entries: {parts}"

    def table(self, count: int = 10) -> str:
        """The worst entries by multi-index, never a dump of whole arrays."""
        rows = [f"  {'entry':<18} {'verdict':<10} {'claimed':>14} {'numeric':>14} {'rel_err':>9} {'err/tol':>9}"]
        rel = self.rel_error
        ex = self.excess()
        for ix in self.worst(count):
            code = Verdict(int(self.codes[ix]))
            tag = code.name + _CAUSE_MARK.get(int(self.causes[ix]) if self.causes is not None else 0,
                                              "*" if self.refined[ix] else "")
            rows.append(
                f"  {str(ix):<18} {tag:<10} {_fmt(self.analytic[ix]):>14} {_fmt(self.numeric[ix]):>14}"
                f" {rel[ix]:9.2e} {ex[ix]:9.2e}"
            )
        return "\n".join(rows)

    def __str__(self) -> str:
        lines = [self.summary()]
        if self.status == _status.INCONCLUSIVE:
            why, way_out = _status.why_nothing_verified(self)
            lines += [f"  why: {why}", f"  way out: {way_out}"]
        returns = f" (f returns {self.output_dtype})" if _status.coarser(self.output_dtype, self.dtype) else ""
        lines.append(
            f"  dtype {self.dtype}{returns}, engine {self.engine}, {self.evaluations} evaluations in {self.seconds:.3g} s"
        )
        if not self.deterministic:
            lines.append(f"  NONDETERMINISTIC: f(x) changed by {self.drift:.3g} between two evaluations")
        for note in self.notes:
            lines.append(f"  note: {note}")
        if self.counts[Verdict.MISMATCH]:
            lines.append(f"  MISMATCH at: {self.layout.text}")
        if self.size:
            lines.append(self.table())
            if self.refined.any():
                lines.append("  (* = judged after a step study, ^ = against the exact derivative, ~ = kink test)")
            for ix in self.worst(3):
                if self.causes is not None and int(self.causes[ix]) >= 3 and int(self.codes[ix]) != Verdict.PASS:
                    lines.append("  " + self.explain(ix))
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<Report {self.summary()}>"

    def to_dict(self, *, arrays: bool = False, limit: int = 1000) -> dict[str, Any]:
        """A JSON-ready dict: counts, settings, and the non-PASS entries (up to ``limit``)
        with their values. ``arrays=True`` adds the full arrays as nested lists."""
        out: dict[str, Any] = {
            "name": self.name,
            "status": self.status,
            "passed": self.passed,
            "reason": self.reason,
            "shape": list(self.shape),
            "dtype": self.dtype,
            "output_dtype": self.output_dtype,
            "measured_roundoff": self.measured_roundoff,
            "engine": self.engine,
            "deterministic": self.deterministic,
            "drift": self.drift,
            "evaluations": self.evaluations,
            "seconds": self.seconds,
            "counts": {v.name: n for v, n in self.counts.items()},
            "config": {k: getattr(self.config, k) for k in self.config.__dataclass_fields__},
            "notes": list(self.notes),
            "adjudication": dict(self.adjudication),
        }
        if self.detection_limit is not None:  # screening
            finite = self.detection_limit[np.isfinite(self.detection_limit)]
            out["detection_limit"] = {"median": _jsonable(np.median(finite)) if finite.size else "inf",
                                      "max": _jsonable(finite.max()) if finite.size else "inf"}
        flagged = self.entries([v for v in Verdict if v not in (Verdict.PASS, Verdict.SCREENED)])
        rel = self.rel_error
        out["entries"] = [
            {
                "index": list(ix),
                "verdict": Verdict(int(self.codes[ix])).name,
                "claimed": _jsonable(self.analytic[ix]),
                "numeric": _jsonable(self.numeric[ix]),
                "noise": _jsonable(self.noise[ix]),
                "rel_error": _jsonable(rel[ix]),
                "refined": bool(self.refined[ix]),
                "cause": self.cause(ix).name,
                **({"exact": _jsonable(self.exact[ix]), "certified_digits": int(self.digits[ix])}
                   if self.exact is not None and np.isfinite(self.exact[ix]) else {}),
                **({"left": _jsonable(self.left[ix]), "right": _jsonable(self.right[ix])}
                   if self.left is not None and np.isfinite(self.left[ix]) else {}),
            }
            for ix in flagged[:limit]
        ]
        out["entries_truncated"] = len(flagged) > limit
        if arrays:
            for key in ("analytic", "numeric", "noise", "tolerance"):
                out[key] = [_jsonable(v) for v in getattr(self, key).reshape(-1)]
            out["verdicts"] = [Verdict(int(c)).name for c in self.codes.reshape(-1)]
            if self.detection_limit is not None:
                out["detection_limit_entries"] = [_jsonable(v) for v in self.detection_limit.reshape(-1)]
        return out

    def plot(self, path: Any, **options: Any) -> Any:
        """Write a PNG heat map of the verdicts and relative errors to ``path`` (returned as
        a ``Path``); ``parts=`` and ``title=`` as in :func:`gradcheck._plot.plot_report`.
        Needs matplotlib: ``pip install "gradcheck[plot]"``."""
        from ._plot import plot_report

        return plot_report(self, path, **options)

    def to_json(self, **kwargs: Any) -> str:
        """``to_dict`` as a JSON string (NaN/inf written as strings)."""
        return json.dumps(self.to_dict(**kwargs))


def _jsonable(v: Any) -> float | str:
    v = float(v)
    return v if np.isfinite(v) else str(v)
