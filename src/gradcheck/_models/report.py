"""The result of ``check_params``: one :class:`Report` per name, the table of all names (with
each name's detection limit after ``screen=True``) and the diagnosis in backward order."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._core import status as _status
from .._core.errors import GradientAssertionError
from .._core.verdict import Verdict
from .._report.html import HtmlViews
from .._report.next_step import next_steps
from .._report.report import Report
from .diagnosis import Diagnosis


@dataclass(frozen=True, eq=False)
class ParamsReport(HtmlViews, _status.PassedAsTruth):
    """One :class:`Report` per parameter name, a table of all names, and a diagnosis
    that reads the names in backward order.

    ``status``: ``"FAIL"`` when a name fails, else ``"INCONCLUSIVE"`` when any name
    verified nothing (e.g. every entry of a key bias UNCHECKED with the referee off), else
    ``"PASS"``; ``passed`` is true for PASS only. ``reports[name]`` is each name's report,
    ``order`` the backward order, ``failing`` the failing names in that order.

    Examples
    --------
    >>> import numpy as np, gradcheck
    >>> p = {"w": np.array([1.0, 2.0]), "b": np.array([0.5])}
    >>> loss = lambda p: float((p["w"] ** 2).sum() + 3 * p["b"][0])
    >>> r = gradcheck.check_params(loss, p, {"w": 2 * p["w"], "b": np.array([2.0])})
    >>> r.status, r.failing, r.reports["w"].passed
    ('FAIL', ['b'], True)
    """

    reports: dict[str, Report]
    order: tuple[str, ...]          # backward order used by the diagnosis
    diagnosis: Diagnosis
    deterministic: bool = True
    drift: float = 0.0
    seconds: float = 0.0
    notes: tuple[str, ...] = field(default_factory=tuple)
    #: Every call of the loss: each name's ``report.evaluations`` and the run's own (the loss
    #: at the start and at the end, and ``engine="auto"``'s timing calls); with ``screen=True``
    #: the one screen of the whole model (each name's report states that screen's count).
    evaluations: int = 0
    #: ``screen=True``: names whose gradient disagrees along their own direction (every entry
    #: of the name, with the draw's signs) beyond the bound, by name, with the evidence; they
    #: fail even where no single entry was localized (their report says so).
    evidence: dict[str, str] = field(default_factory=dict)

    @property
    def status(self) -> str:
        """``"FAIL"`` if a name fails or the loss is nondeterministic, else
        ``"INCONCLUSIVE"`` if any name verified nothing (its gradient was never checked: a
        model check must not say a plain PASS then), else ``"PASS"``."""
        if not self.deterministic or self.evidence:
            return _status.FAIL
        return _status.combine(r.status for r in self.reports.values())

    def _name_status(self, name: str) -> str:
        return _status.FAIL if name in self.evidence else self.reports[name].status

    @property
    def passed(self) -> bool:
        return self.status == _status.PASS

    @property
    def failing(self) -> list[str]:
        """Names with a MISMATCH or NONFINITE entry, or whose own direction disagrees
        (:attr:`evidence`), in backward order."""
        return [n for n in self.order if self._name_status(n) == _status.FAIL]

    @property
    def inconclusive(self) -> list[str]:
        """Names that verified nothing (no entry PASSed, none failed), in backward order."""
        return [n for n in self.order if self._name_status(n) == _status.INCONCLUSIVE]

    @property
    def worst(self) -> dict[str, float]:
        """Per name, the largest relative error over entries that were judged against a
        value above the noise (PASS or MISMATCH): the seed's ``worst`` dict, minus the
        meaningless ratios of two round-off values."""
        out = {}
        for n, r in self.reports.items():
            judged = np.isin(r.codes, [int(Verdict.PASS), int(Verdict.MISMATCH)])
            out[n] = float(r.rel_error[judged].max()) if judged.any() else 0.0
        return out

    def __getitem__(self, name: str) -> Report:
        return self.reports[name]

    def table(self) -> str:
        """The names in backward order: status and counts per verdict, the worst relative
        error judged, and (``screen=True``) the detection limit at the median entry (absolute
        and relative to the claim) and at the worst."""
        screened = any(r.counts[Verdict.SCREENED] for r in self.reports.values())  # screen=True
        width = max([16] + [len(n) for n in self.order])
        extra = f" {'SCREENED':>9}" if screened else ""
        limits = f" {'limit med':>10} {'rel med':>8} {'limit max':>10}" if screened else ""
        head = (f"  {'name':<{width}} {'shape':<12} {'status':<12} {'PASS':>6} {'MISMATCH':>8} {'UNCHECKED':>9}"
                f"{extra} {'other':>6} {'worst rel':>10}{limits}")
        rows = [head]
        worst = self.worst
        for n in self.order:
            r = self.reports[n]
            c = r.counts
            other = c[Verdict.NONFINITE] + c[Verdict.KINK] + c[Verdict.SKIPPED]
            status = "ok" if r.passed and n not in self.evidence else self._name_status(n)
            cell = f" {c[Verdict.SCREENED]:>9}" if screened else ""
            rows.append(
                f"  {n:<{width}} {str(r.shape):<12} {status:<12} {c[Verdict.PASS]:>6} {c[Verdict.MISMATCH]:>8}"
                f" {c[Verdict.UNCHECKED]:>9}{cell} {other:>6} {worst[n]:>10.2e}{_limit_cells(r) if screened else ''}"
            )
        return "\n".join(rows)

    def summary(self) -> str:
        total = sum(r.size for r in self.reports.values())
        unverified = self.inconclusive
        head = f"check_params: {self.status} -- {len(self.reports)} tensors, {total} entries, {self.seconds:.3g} s"
        if unverified:
            head += f"; {len(unverified)} verified nothing: {', '.join(unverified)}"
        return head

    def __repr__(self) -> str:
        # Short (one line, as Report's): a notebook shows _repr_html_, a console this line.
        failing = f", failing {self.failing}" if self.failing else ""
        return f"<ParamsReport {self.summary()}{failing}>"

    def __str__(self) -> str:
        unverified = self.inconclusive
        lines = [self.summary()]
        if not self.deterministic:
            lines.append(f"  NONDETERMINISTIC: the loss changed by {self.drift:.3g} between two evaluations")
        lines.extend(f"  note: {n}" for n in self.notes)
        lines.append("  (names in backward order)")
        lines.append(self.table())
        lines.append(f"diagnosis: {self.diagnosis.text}")
        for n in self.failing[:3]:
            lines.append(f"-- {n}" + (f": {self.evidence[n]}" if n in self.evidence else ""))
            lines.append(self.reports[n].table(5))
        if unverified:
            way_out = ""
            for n in unverified[:3]:
                why, way_out = _status.why_nothing_verified(self.reports[n])
                lines.append(f"-- {n}: {_status.NOTHING_VERIFIED}: {why}")
            lines.append(f"   way out: {way_out}")
        lines += [f"  next: {step}" for step in next_steps(self)]
        return "\n".join(lines)

    def assert_pass(self, *, allow_unchecked: bool | None = None) -> ParamsReport:
        """Raise :class:`GradientAssertionError` with the whole table unless every name
        passed. ``allow_unchecked``: as for :meth:`Report.assert_pass` -- ``None``
        (default) fails when any name verified nothing, ``True`` accepts that, ``False``
        fails on any UNCHECKED entry of any name. A failing name always raises."""
        unchecked = sum(r.counts[Verdict.UNCHECKED] for r in self.reports.values())
        refused = _status.refusal(self.status, unchecked, allow_unchecked)
        if refused:
            raise GradientAssertionError(f"{refused}\n{self}", self)
        return self

    def to_dict(self, **kwargs: Any) -> dict[str, Any]:
        return {
            "status": self.status,
            "passed": self.passed,
            "inconclusive": self.inconclusive,
            "order": list(self.order),
            "deterministic": self.deterministic,
            "drift": self.drift,
            "seconds": self.seconds,
            "evaluations": self.evaluations,
            "diagnosis": self.diagnosis.to_dict(),
            "notes": list(self.notes),
            **({"evidence": dict(self.evidence)} if self.evidence else {}),  # screen=True found names failing
            "params": {n: self.reports[n].to_dict(**kwargs) for n in self.order},
        }

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(**kwargs))


def _limit_cells(report: Report) -> str:
    """A name's detection limit over its SCREENED entries: the median (absolute, and relative
    to the claim over the entries whose claim is not zero) and the largest; dashes where
    nothing was screened (or no claim is nonzero, for the relative one)."""
    if report.detection_limit is None or not report.counts[Verdict.SCREENED]:
        return f" {'-':>10} {'-':>8} {'-':>10}"
    on = report.codes == Verdict.SCREENED
    limit = report.detection_limit[on].astype(np.float64)
    claims = np.abs(report.analytic[on])
    nonzero = claims > 0
    rel = f"{np.median(limit[nonzero] / claims[nonzero]):>8.1e}" if nonzero.any() else f"{'-':>8}"
    return f" {np.median(limit):>10.2e} {rel} {limit.max():>10.2e}"
