"""A low-precision dispute (:class:`~gradcheck.DisputeResult`): the per-candidate table, the
verdict in sentences, and a histogram of each candidate's errors in ulps."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..text import figure, percent
from .page import badge, esc, next_section, notes_list, status_of
from .tables import table

#: Upper edges of the ulp-error bins (the first bin is "exactly 0").
ULP_EDGES = (0.5, 1.0, 2.0, 4.0, 16.0, 256.0)


def ulp_histogram(errors: np.ndarray) -> list[int]:
    """Counts per bin: exact, (0, 0.5], (0.5, 1], ..., beyond the last edge, non-finite."""
    e = np.asarray(errors, dtype=np.float64).reshape(-1)
    finite = e[np.isfinite(e)]
    counts = [int((finite == 0).sum())]
    lower = 0.0
    for upper in ULP_EDGES:
        counts.append(int(((finite > lower) & (finite <= upper)).sum()))
        lower = upper
    counts.append(int((finite > lower).sum()))
    counts.append(int(e.size - finite.size))
    return counts


def _bin_names() -> list[str]:
    names, lower = ["0 (exact)"], 0.0
    for upper in ULP_EDGES:
        names.append(f"({lower:g}, {upper:g}]")
        lower = upper
    return names + [f"> {lower:g}", "non-finite"]


def histogram_table(result: Any) -> str:
    """Rows are ulp bins, columns the candidates (and the float32 evaluation): count and bar."""
    columns = list(result.names) + [k for k in result.errors if k not in result.names]
    hists = {k: ulp_histogram(result.errors[k]) for k in columns}
    rows = []
    for b, name in enumerate(_bin_names()):
        row = [(esc(name), "gc-l")]
        for k in columns:
            n, total = hists[k][b], max(1, sum(hists[k]))
            width = 120 * n / total
            row.append((f'<span class="gc-bar" style="width:{width:.1f}px"></span>{n}', "gc-l"))
        rows.append(row)
    return table(["error (ulps)"] + columns, rows,
                 caption="entries per error bin, in ulps of the target format against the exact value")


def _stats_table(result: Any) -> str:
    rows = [(k, result.stats[k]) for k in result.names]
    if result.float32 is not None:
        rows.append((f"({result.float32.name})", result.float32))
    body = [[(esc(k), "gc-l"), figure(s.max_ulp), figure(s.mean_ulp), figure(s.p99_ulp), percent(s.correctly_rounded),
             percent(s.within_1ulp), percent(s.beyond_bound), percent(s.closer),
             (badge("broken") if k in result.broken else "", "gc-l")] for k, s in rows]
    return table(["candidate", "max ulp", "mean ulp", "p99 ulp", "correctly rounded", "≤ 1 ulp", "> bound",
                  "closer", ""], body)


def render_dispute(result: Any, full: bool) -> tuple[str, str]:
    status = status_of(result)
    h = "h1" if full else "h3"
    verdict = "".join(f"<li>{esc(line)}</li>" for line in result.verdict.splitlines())
    parts = [f"<{h}>{badge(status)} dispute over {esc(result.function)} in {esc(result.dtype)}</{h}>",
             f'<p class="gc-summary"><code>{esc(result.summary())}</code></p>',
             _stats_table(result),
             f'<p class="gc-meta">bound: {esc(result.bound_reason)}</p>',
             f"<p><b>Verdict:</b></p><ul>{verdict}</ul>",
             notes_list(result.notes),
             "<h3>Errors in ulps</h3>" + histogram_table(result), next_section(result)]
    return f"gradcheck: dispute over {result.function}: {status}", "".join(parts)
