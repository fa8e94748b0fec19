"""One check (:class:`~gradcheck.Report`) and several inputs (:class:`~gradcheck.MultiReport`)."""
from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ..._core import status as _status
from ..._core.verdict import Cause, Verdict
from .heatmap import heat_maps
from .page import badge, details, esc, next_section, notes_list, num, status_of
from .tables import counts_table, table, verdict_cell

#: Rows of the page's table of non-PASS entries; the rest are counted, not listed.
PAGE_ROWS = 500
#: Rows of the refereed-entries table.
REFEREED_ROWS = 100
NOTEBOOK_ROWS = 10


_KINKS = (int(Cause.KINK_STEPS), int(Cause.KINK_EXACT))


def _columns(report: Any, flat: np.ndarray) -> tuple[bool, bool]:
    """Whether the rows at ``flat`` need the exact-value and the one-sided-slope columns (the
    slopes only where a row's verdict rests on them: a kink)."""
    exact = bool(np.isfinite(_values(report, "exact", flat)).any())
    causes = getattr(report, "causes", None)
    kinks = causes is not None and bool(np.isin(causes.reshape(-1)[flat], _KINKS).any())
    slopes = kinks and bool(np.isfinite(_values(report, "left", flat)).any())
    return exact, slopes


def _values(report: Any, name: str, flat: np.ndarray) -> np.ndarray:
    """The second-look values ``name`` at the flat indices ``flat`` (NaN where not measured),
    from the report's sparse store (``report.exact`` would make an array of the report's size)."""
    col = getattr(report, "measured", {}).get(name)
    return np.full(np.shape(flat), np.nan) if col is None else col.take(flat)


def _index(report: Any, j: int) -> tuple[int, ...]:
    return tuple(int(i) for i in np.unravel_index(int(j), report.shape))


def study_table(report: Any, flat: np.ndarray) -> str:
    """The step studies of the entries at ``flat`` (those that had one), one row per step: a
    table of its own, so that the entry tables keep one line per entry and fit the page."""
    studies = getattr(report, "step_study", None) or {}
    rows = []
    for j in flat:
        ix = _index(report, int(j))
        study = studies.get(ix)
        if study is None:
            continue
        for k, (h, d) in enumerate(zip(*study)):
            rows.append([(esc(ix) if k == 0 else "", "gc-ix"), num(h, ".3g"), num(d, ".12g")])
    if not rows:
        return ""
    caption = "the central difference D(h) at each step h of an entry's step study (Richardson extrapolation from these)"
    return details(f"Step studies of the entries above ({len({r[0] for r in rows if r[0][0]})})",
                   table(["entry", "step h", "D(h)"], rows, caption=esc(caption)))


def entry_table(report: Any, flat: np.ndarray, *, caption: str = "") -> str:
    """One row per entry (flat indices, in the order given), one line each: values, errors,
    how it was settled (step studies in :func:`study_table`)."""
    if flat.size == 0:
        return ""
    with_exact, with_slopes = _columns(report, flat)
    head = ["entry", "verdict", "claimed", "numeric"]
    head += ["exact", "digits"] if with_exact else []
    head += ["left slope", "right slope"] if with_slopes else []
    head += ["rel. error", "err / tol", "settled by"]
    a, n = report.analytic.reshape(-1), report.numeric.reshape(-1)
    rel, ex = report.rel_error.reshape(-1), report.excess().reshape(-1)
    exact, left, right = (_values(report, k, flat) for k in ("exact", "left", "right"))
    rows = []
    for r, j in enumerate(flat):
        ix = tuple(int(i) for i in np.unravel_index(int(j), report.shape))
        row = [(esc(ix), "gc-ix"), verdict_cell(Verdict(int(report.codes.reshape(-1)[j]))),
               num(a[j], ".7g"), num(n[j], ".7g")]
        if with_exact:
            d = int(report.digits.reshape(-1)[j]) if report.digits is not None else -1
            row += [_measured(exact[r], ".17g"), str(d) if d >= 0 else ""]
        if with_slopes:
            row += [_measured(left[r], ".8g"), _measured(right[r], ".8g")]
        row += [num(rel[j], ".2e"), num(ex[j], ".2e"), (esc(report.cause(ix)), "gc-v")]
        rows.append(row)
    if with_exact:
        caption = (caption + "; " if caption else "") + esc("digits: the exact value's certified digits")
    return table(head, rows, caption=caption, cls="gc-entries")


def _measured(v: float, spec: str) -> str:
    """A second-look value, blank where it was not measured (stored as NaN)."""
    return "" if np.isnan(v) else num(v, spec)


def _meta(report: Any) -> str:
    lines = [(f"shape {esc(report.shape)}, dtype {esc(report.dtype)}, engine {esc(report.engine)}, "
              f"{report.evaluations} evaluations in {report.seconds:.3g} s")]
    if not report.deterministic:
        lines.append(f'<span class="gc-warn">NONDETERMINISTIC: f(x) changed by {report.drift:.3g} '
                     "between two evaluations</span>")
    limit = getattr(report, "detection_limit", None)
    if limit is not None:
        lines.append(f"detection limit: {_limit_words(limit)}")
    if report.counts[Verdict.MISMATCH]:
        lines.append(f"MISMATCH at: <b>{esc(report.layout.text)}</b>")
    return "".join(f'<p class="gc-meta">{line}</p>' for line in lines)


def _limit_words(limit: str | ArrayLike) -> str:
    arr = np.asarray(limit, dtype=np.float64) if not isinstance(limit, str) else None
    if arr is None or arr.dtype == object:
        return esc(limit)
    if arr.ndim == 0:
        return num(arr, ".3g")
    finite = arr[np.isfinite(arr)]
    if finite.size == 0:
        return "none stated"
    return f"per entry, median {num(np.median(finite), '.3g')}, largest {num(finite.max(), '.3g')}"


def _non_pass(report: Any) -> str:
    flat = np.flatnonzero(report.codes.reshape(-1) != int(Verdict.PASS))
    if flat.size == 0:
        return "<p>Every entry is PASS.</p>"
    shown = report.rank(flat, first=PAGE_ROWS)
    caption = (f"the {shown.size} most severe of {flat.size} entries that are not PASS; the rest are "
               f"counted above, not listed (report.to_json() lists up to 1000, "
               f"report.entries(verdict) all)" if shown.size < flat.size else
               f"all {flat.size} entries that are not PASS")
    return details(f"Entries that are not PASS ({flat.size})", entry_table(report, shown, caption=esc(caption))
                   + study_table(report, shown), open_=True)


def _refereed(report: Any) -> str:
    col = getattr(report, "measured", {}).get("exact")
    if col is None:
        return ""
    flat = col.finite_positions()
    if flat.size == 0:
        return ""
    shown = report.rank(flat, first=REFEREED_ROWS)
    more = f" (the {shown.size} most severe shown)" if shown.size < flat.size else ""
    body = entry_table(report, shown, caption=esc(
        "exact: the derivative at arbitrary precision; certified digits: those on which two working "
        "precisions agree"))
    return details(f"Entries judged against the exact derivative ({flat.size}){esc(more)}", body)


def _settings(report: Any) -> str:
    cfg = report.config
    fields = getattr(cfg, "__dataclass_fields__", {})
    rows = [[(esc(k), "gc-l"), (esc(getattr(cfg, k)), "gc-l")] for k in fields]
    return details("Settings", table(["setting", "value"], rows)) if rows else ""


def _why(report: Any) -> str:
    """An INCONCLUSIVE report's why and way out, as the text report says them."""
    if report.status != _status.INCONCLUSIVE:
        return ""
    why, way_out = _status.why_nothing_verified(report)
    return (f'<p class="gc-why"><b>Why:</b> {esc(why)}</p>'
            f'<p class="gc-why"><b>Way out:</b> {esc(way_out)}</p>')


def report_body(report: Any, full: bool, heading: str = "h2") -> str:
    """The section for one report: heading, facts (an INCONCLUSIVE one's why and way out),
    counts, maps, worst entries (and on a page, every non-PASS entry, the refereed ones and
    the settings)."""
    label = esc(report.name)
    parts = [f"<{heading}>{badge(status_of(report))} {label}</{heading}>",
             f'<p class="gc-summary"><code>{esc(report.summary())}</code></p>', _why(report), _meta(report)]
    if report.notes:
        parts.append(notes_list(report.notes))
    parts.append(counts_table(report.counts))
    parts.append(heat_maps(report, report.name))
    if report.size:
        worst = np.array([np.ravel_multi_index(ix, report.shape) for ix in report.worst(NOTEBOOK_ROWS)],
                         dtype=np.int64)
        caption = ("failing verdicts first, then by err / tol (how far beyond its tolerance); an entry the "
                   "layout names on its own comes right after the worst")
        parts.append(f"<h3>Worst entries</h3>{entry_table(report, worst, caption=esc(caption))}")
        if not full:
            parts.append(study_table(report, worst))
    if full and report.size:
        parts += [_non_pass(report), _refereed(report), _settings(report)]
    return "".join(parts)


def render_report(report: Any, full: bool) -> tuple[str, str]:
    title = f"gradcheck: {report.name}: {status_of(report)}"
    return title, report_body(report, full, "h1" if full else "h3") + next_section(report)


def render_multi(multi: Any, full: bool) -> tuple[str, str]:
    rows = [[(esc(r.name), "gc-l"), badge(status_of(r)), esc(r.shape), str(r.size)] for r in multi.reports]
    parts = [f"<{'h1' if full else 'h3'}>{badge(status_of(multi))} {esc(multi.name)}</{'h1' if full else 'h3'}>",
             f'<p class="gc-summary"><code>{esc(multi.summary())}</code></p>',
             table(["input", "status", "shape", "entries"], rows)]
    for r in multi.reports:
        parts.append(report_body(r, full, "h2" if full else "h4"))
    parts.append(next_section(multi))
    return f"gradcheck: {multi.name}: {status_of(multi)}", "".join(parts)
