"""A report as text: the summary line, the table of the worst entries, one entry explained,
and ``str(report)`` (what a terminal or a failing test shows), which ends with the next step
for its status (:mod:`.next_step`)."""
from __future__ import annotations

import math

import numpy as np

from .._classify.rule import resolved_share
from .._core import status as _status
from .._core.verdict import Cause, Verdict
from .next_step import next_steps

# Cause codes (see gradcheck._core.verdict.Cause) -> the mark shown after a verdict in the table.
_CAUSE_MARK = {0: "", 1: "*", 2: "*", 3: "~", 4: "^", 5: "^", 6: "~"}


def _fmt(v: float) -> str:
    return f"{v: .6e}" if np.isfinite(v) else f"{v!s:>13}"


class ReportText:
    """What :class:`~gradcheck.Report` shows as text (mixed in; reads the report's fields)."""

    __slots__ = ()

    def explain(self, index: tuple[int, ...]) -> str:
        """One line on one entry: verdict, values, and how it was settled."""
        v = Verdict(int(self.codes[index]))
        cause = self.cause(index)
        text = f"{index}: {v.name} (claimed {self.analytic[index]:.10g}, numeric {self.numeric[index]:.10g}; {cause})"
        if cause in (Cause.EXACT, Cause.EXACT_ZERO):
            text += f"; exact {self.measured_at('exact', index):.17g} with {int(self.digits[index])} certified digits"
        if cause in (Cause.KINK_STEPS, Cause.KINK_EXACT):
            left, right = self.measured_at("left", index), self.measured_at("right", index)
            text += f"; one-sided derivatives {left:.10g} and {right:.10g}"
        if v is Verdict.UNCHECKED:
            share = float(resolved_share(self.analytic[index], self.numeric[index], self.tolerance[index]))
            needed = getattr(self.config, "resolution", None)
            reached = f"resolved only to {100 * share:.2g}% of the value" if share < 1 else \
                "not resolved: the tolerance is at or above the value (both sides within noise)"
            text += f"; {reached}" + (f" (a PASS needs {100 * needed:.2g}%)" if needed else "")
        return text

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
        lines += [f"  next: {step}" for step in next_steps(self)]
        return "\n".join(lines)


# -- figures in prose (a dispute's verdict, its HTML page) -------------------------------------
def figure(v: float) -> str:
    """A figure for prose: 3 significant digits, no exponent below 1e5."""
    if v is None:
        return "-"
    if not math.isfinite(v):
        return "inf" if v > 0 else str(v)
    if v == 0:
        return "0"
    if abs(v) >= 1e5:
        return f"{v:.3g}"
    if abs(v) >= 100:
        return f"{v:.0f}"
    return f"{v:.3g}"


def percent(p: float | None) -> str:
    if p is None:
        return "-"
    if 0.999 < p < 1.0:
        return f"{100 * p:.3f}%"
    if 0.0 < p < 0.001:
        return f"{100 * p:.3f}%"
    return f"{100 * p:.1f}%"
