"""A model's check (:class:`~gradcheck.ParamsReport`): the per-name table in backward order,
the diagnosis, and each name's own section."""
from __future__ import annotations

from typing import Any

from .heatmap import severity_order
from .page import badge, details, esc, next_section, notes_list, num, status_of
from .report import report_body
from .tables import table

#: Passing names whose own section (counts, maps, worst entries) the page shows, in backward order.
MAX_PASSING_SECTIONS = 20


def names_table(params: Any) -> str:
    """One row per name in backward order: status, counts of every verdict that occurs, worst
    relative error among the judged entries."""
    present = [v for v in reversed(severity_order())
               if any(r.counts[v] for r in params.reports.values())]
    worst = params.worst
    rows = []
    for n in params.order:
        r = params.reports[n]
        rows.append([(esc(n), "gc-l"), badge(status_of(r)), esc(r.shape)]
                    + [str(r.counts[v]) for v in present] + [num(worst[n], ".2e")])
    head = ["name", "status", "shape"] + [v.name for v in present] + ["worst rel. error"]
    return table(head, rows, caption="names in backward order (from the loss to the inputs)")


def render_params(params: Any, full: bool) -> tuple[str, str]:
    status = status_of(params)
    total = sum(r.size for r in params.reports.values())
    h = "h1" if full else "h3"
    parts = [f"<{h}>{badge(status)} check_params</{h}>",
             f'<p class="gc-meta">{len(params.reports)} tensors, {total} entries, {params.seconds:.3g} s</p>']
    if not params.deterministic:
        parts.append(f'<p class="gc-warn">NONDETERMINISTIC: the loss changed by {params.drift:.3g} '
                     "between two evaluations</p>")
    parts.append(notes_list(params.notes))
    parts.append(f'<p><b>Diagnosis:</b> {esc(params.diagnosis.text)}</p>')
    parts.append(names_table(params))
    failing = params.failing
    for n in failing if full else failing[:3]:
        parts.append(report_body(params.reports[n], full, "h2" if full else "h4"))
    if full:
        passing = [n for n in params.order if n not in failing]
        if passing:
            inner = "".join(report_body(params.reports[n], False, "h3") for n in passing[:MAX_PASSING_SECTIONS])
            if len(passing) > MAX_PASSING_SECTIONS:
                inner += (f'<p class="gc-cap">{len(passing) - MAX_PASSING_SECTIONS} more passing names: '
                          "their counts are in the table above</p>")
            parts.append(details(f"Names that pass ({len(passing)})", inner))
    elif len(failing) > 3:
        parts.append(f'<p class="gc-cap">{len(failing) - 3} more failing names: report.to_html() '
                     "has them all</p>")
    parts.append(next_section(params))
    return f"gradcheck: check_params: {status}", "".join(parts)
