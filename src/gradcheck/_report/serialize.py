"""A report as a JSON-ready dict and as JSON text."""
from __future__ import annotations

import json
from typing import Any, SupportsFloat

import numpy as np

from .._core.verdict import Verdict


class ReportSerialize:
    """What :class:`~gradcheck.Report` gives as JSON (mixed in; reads the report's fields)."""

    __slots__ = ()

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
                **_measured(self, ix),
                **_study(self, ix),
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

    def to_json(self, **kwargs: Any) -> str:
        """``to_dict`` as a JSON string (NaN/inf written as strings)."""
        return json.dumps(self.to_dict(**kwargs))


def _measured(report: Any, ix: tuple[int, ...]) -> dict[str, Any]:
    """The entry's exact value (and certified digits) and one-sided slopes, where measured;
    read from the report's sparse store, entry by entry."""
    out: dict[str, Any] = {}
    exact = report.measured_at("exact", ix)
    if np.isfinite(exact):
        out.update(exact=_jsonable(exact), certified_digits=int(report.digits[ix]))
    left = report.measured_at("left", ix)
    if np.isfinite(left):
        out.update(left=_jsonable(left), right=_jsonable(report.measured_at("right", ix)))
    return out


def _study(report: Any, ix: tuple[int, ...]) -> dict[str, Any]:
    """The entry's step study (steps and the central difference at each), if it had one."""
    study = (getattr(report, "step_study", None) or {}).get(tuple(ix))
    if study is None:
        return {}
    steps, slopes = study
    return {"step_study": {"steps": [_jsonable(h) for h in steps], "slopes": [_jsonable(d) for d in slopes]}}


def _jsonable(v: SupportsFloat) -> float | str:
    v = float(v)
    return v if np.isfinite(v) else str(v)
