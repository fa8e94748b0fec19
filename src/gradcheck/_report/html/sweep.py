"""A shape sweep (:class:`~gradcheck.SweepReport`): the rule, the grid of which shapes fail,
where they fail, and the kept reports of a few failing shapes."""
from __future__ import annotations

from typing import Any

from ..plot import EMPTY_COLOUR, FAIL_COLOUR, PASS_COLOUR
from .page import badge, esc, next_section, status_of
from .report import report_body
from .tables import table

MAX_PANELS = 24        # panels of the shape grid (one per value of the leading dimensions)
MAX_SHAPES_LISTED = 200
MAX_KEPT_REPORTS = 3   # failing shapes whose full report the page shows


def _panels(sweep: Any) -> dict[tuple[int, ...], dict[tuple[int, int], Any]]:
    """Results by panel (the leading dimensions) and by (row, column) = the last two."""
    out: dict[tuple[int, ...], dict[tuple[int, int], Any]] = {}
    for r in sweep.results:
        s = r.shape
        key, cell = (s[:-2], (s[-2], s[-1])) if len(s) >= 2 else ((), (0, s[0] if s else 0))
        out.setdefault(key, {})[cell] = r
    return out


def _cell(result: Any, rule: Any) -> str:
    if result is None:
        return f'<td style="background:{EMPTY_COLOUR}"></td>'
    colour = FAIL_COLOUR if not result.passed else PASS_COLOUR
    word = "✗" if not result.passed else "✓"
    title = f"{result.shape}: " + (result.where or "passes")
    style = f"background:{colour};color:#fff;text-align:center"
    if rule is not None and rule.predicate is not None and bool(rule.predicate(result.shape)) == result.passed:
        style += ";outline:3px solid #111;outline-offset:-3px"  # the rule gets this shape wrong
    return f'<td style="{style}" title="{esc(title)}">{word}</td>'


def shape_grid(sweep: Any) -> str:
    """One table per panel: rows and columns are the last two dimensions."""
    names = sweep.dim_names
    panels = _panels(sweep)
    html = []
    for key in sorted(panels)[:MAX_PANELS]:
        cells = panels[key]
        rows = sorted({rc[0] for rc in cells})
        cols = sorted({rc[1] for rc in cells})
        rname = names[-2] if len(names) >= 2 else ""
        cname = names[-1] if names else "n"
        head = f"<th>{esc(rname)} \\ {esc(cname)}</th>" + "".join(f"<th>{c}</th>" for c in cols)
        body = "".join(f"<tr><th>{r}</th>" + "".join(_cell(cells.get((r, c)), sweep.rule) for c in cols) + "</tr>"
                       for r in rows)
        label = ", ".join(f"{n} = {v}" for n, v in zip(names, key))
        cap = f"<caption>{esc(label)}</caption>" if label else ""
        html.append(f'<div class="gc-scroll"><table class="gc-table gc-grid">{cap}<thead><tr>{head}</tr></thead>'
                    f"<tbody>{body}</tbody></table></div>")
    if len(panels) > MAX_PANELS:
        html.append(f'<p class="gc-cap">{len(panels) - MAX_PANELS} more panels not drawn</p>')
    legend = ('<p class="gc-cap">✓ passes, ✗ fails (hover a cell for where); a black outline marks a shape '
              "the rule gets wrong</p>")
    return '<div class="gc-maps">' + "".join(html) + "</div>" + legend


def _where_table(sweep: Any) -> str:
    rows = [[str(len(members)), (esc(text), "gc-l"), (esc(", ".join(str(s) for s in members[:3])), "gc-l")]
            for text, members in sweep.where_groups()]
    return table(["shapes", "where the mismatches sit", "e.g."], rows) if rows else ""


def _failing_table(sweep: Any) -> str:
    failing = [r for r in sweep.results if not r.passed]
    if not failing:
        return ""
    shown = failing[:MAX_SHAPES_LISTED]
    rows = [[(esc(r.shape), "gc-l"), str(r.size), (esc(", ".join(f"{n} {v}" for v, n in r.counts.items())), "gc-l"),
             (esc(r.where), "gc-l")] for r in shown]
    cap = (f"first {len(shown)} of {len(failing)} failing shapes (sweep.failed lists all)"
           if len(shown) < len(failing) else f"all {len(failing)} failing shapes")
    return table(["shape", "entries", "verdicts", "where"], rows, caption=esc(cap))


def render_sweep(sweep: Any, full: bool) -> tuple[str, str]:
    status = status_of(sweep)
    h = "h1" if full else "h3"
    rule = "none sought (the shapes do not all have the same number of dimensions)" if sweep.rule is None \
        else str(sweep.rule)
    parts = [f"<{h}>{badge(status)} {esc(sweep.name)}</{h}>",
             f'<p class="gc-summary"><code>{esc(sweep.summary())}</code></p>',
             f"<p><b>Rule:</b> {esc(rule)}</p>"]
    if sweep.rule is not None and sweep.rule.found and sweep.rule.alternatives:
        parts.append(f"<p>Equally good on these shapes: {esc('; '.join(sweep.rule.alternatives))}</p>")
    counts = ", ".join(f"{n} {v}" for v, n in sweep.counts.items())
    parts.append(f'<p class="gc-meta">{sum(r.size for r in sweep.results)} entries checked: {esc(counts or "none")}; '
                 f"{sweep.n_total} checks in {sweep.seconds:.3g} s</p>")
    parts += [shape_grid(sweep), _where_table(sweep)]
    if full:
        parts.append(_failing_table(sweep))
        kept = [r for r in sweep.results if not r.passed and r.report is not None][:MAX_KEPT_REPORTS]
        for r in kept:
            parts.append(report_body(r.report, False, "h2"))
    parts.append(next_section(sweep))
    return f"gradcheck: {sweep.name}: {status}", "".join(parts)
