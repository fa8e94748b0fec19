"""The global tests beyond the gradient: the adjoint (dot-product) test
(``AdjointResult``) and the Taylor test (``TaylorResult``).

Rendered from their fields alone (this package imports no feature): for the adjoint test
the per-draw table of both inner products, their difference and the bound, the linearity
defects and which model disagrees with finite differences; for the Taylor test the
remainder table (steps, remainders, observed orders, which steps counted) and the log-log
picture as an inline SVG (no matplotlib needed).
"""
from __future__ import annotations

import math
from typing import Any

from .page import badge, esc, next_section, notes_list, num, status_of
from .tables import Cell, table

_DRAWS = ("t1, v1", "t2, v2", "sums")
_SVG_W, _SVG_H, _PAD = 420, 260, 44
_SERIES = (("#4c78a8", "R1 (gradient)"), ("#e45756", "R2 (+ Hessian)"))


def _heading(result: Any, full: bool, what: str) -> tuple[str, list[str]]:
    status = status_of(result)
    h = "h1" if full else "h3"
    parts = [f"<{h}>{badge(status)} {esc(result.name)}</{h}>",
             f'<p class="gc-summary"><code>{esc(result.summary())}</code></p>']
    return f"gradcheck: {what}: {esc(result.name)}: {status}", parts


def render_adjoint(result: Any, full: bool) -> tuple[str, str]:
    """``<J t, v>`` against ``<t, J^T v>`` per draw, with the bound each must stay under."""
    title, parts = _heading(result, full, "adjoint test")
    parts.append(f'<p class="gc-meta">x {esc(result.in_shape)} → y {esc(result.out_shape)}, {esc(result.dtype)}, '
                 f"{result.calls} operator calls in {result.seconds:.3g} s</p>")
    rows = []
    for i, (a, b, bound) in enumerate(zip(result.forward, result.adjoint, result.bound)):
        held = math.isfinite(a - b) and abs(a - b) <= bound
        rows.append([(esc(_DRAWS[i] if i < len(_DRAWS) else i), "gc-l"), num(a, ".16e"), num(b, ".16e"),
                     num(abs(a - b), ".3e"), num(bound, ".3e"), badge("PASS" if held else "FAIL")])
    parts.append(table(["draw", "<J t, v>", "<t, J^T v>", "|difference|", "bound", ""], rows,
                       caption="the dot-product test: each difference must stay under its round-off bound"))
    lin = result.linearity
    parts.append(f"<p>Linearity defect (relative): jvp {num(lin['jvp'], '.2e')}, vjp {num(lin['vjp'], '.2e')}; "
                 f"beyond {num(lin['limit'], '.1e')} is not round-off"
                 + (f' <span class="gc-warn">(not linear: {esc(", ".join(result.nonlinear))})</span>'
                    if result.nonlinear else "") + "</p>")
    if result.blame:
        b = result.blame
        said = {True: "agrees", False: "DISAGREES"}
        parts.append(f"<p><b>Against finite differences of v · f along t</b> ({num(b['numeric'], '.12e')} ± "
                     f"{num(b['error'], '.1e')}): jvp {said[bool(b['jvp_agrees'])]}, vjp "
                     f"{said[bool(b['vjp_agrees'])]}. <b>Verdict on the models:</b> {esc(b['verdict'])}</p>")
    parts += [notes_list(result.notes), next_section(result)]
    return title, "".join(parts)


def _log(v: float) -> float:
    return math.log10(v) if v > 0 and math.isfinite(v) else math.nan


def taylor_svg(result: Any) -> str:
    """The remainders against the step on log-log axes (counted steps filled, the others
    hollow) and the threshold as a dashed line; "" when nothing is finite to draw."""
    xs = [_log(h) for h in result.steps]
    ys = [_log(r) for rem in result.remainders for r in rem] + [_log(result.threshold)]
    finite = [y for y in ys if not math.isnan(y)]
    if not finite or not any(not math.isnan(x) for x in xs):
        return ""
    x0, x1 = min(xs), max(xs)
    y0, y1 = min(finite) - 0.5, max(finite) + 0.5
    sx = (_SVG_W - 2 * _PAD) / max(x1 - x0, 1e-9)
    sy = (_SVG_H - 2 * _PAD) / max(y1 - y0, 1e-9)

    def pt(x: float, y: float) -> str:
        return f"{_PAD + (x - x0) * sx:.1f},{_SVG_H - _PAD - (y - y0) * sy:.1f}"

    shapes = [f'<rect x="{_PAD}" y="{_PAD}" width="{_SVG_W - 2 * _PAD}" height="{_SVG_H - 2 * _PAD}" '
              'fill="none" stroke="#888"/>']
    ty = _log(result.threshold)
    if not math.isnan(ty) and y0 <= ty <= y1:
        shapes.append(f'<polyline points="{pt(x0, ty)} {pt(x1, ty)}" stroke="#888" stroke-dasharray="4 3" fill="none"/>')
    for j, rem in enumerate(result.remainders):
        colour, _ = _SERIES[min(j, len(_SERIES) - 1)]
        pts = [(x, _log(r), c) for x, r, c in zip(xs, rem, result.counted[j]) if not math.isnan(_log(r))]
        if not pts:
            continue
        shapes.append(f'<polyline points="{" ".join(pt(x, y) for x, y, _ in pts)}" stroke="{colour}" fill="none"/>')
        shapes += [f'<circle cx="{pt(x, y).split(",")[0]}" cy="{pt(x, y).split(",")[1]}" r="3" stroke="{colour}" '
                   f'fill="{colour if c else "#fff"}"/>' for x, y, c in pts]
    labels = (f'<text x="{_SVG_W / 2}" y="{_SVG_H - 8}" text-anchor="middle" font-size="12">log10 h '
              f"({x0:.1f} … {x1:.1f})</text>"
              f'<text x="12" y="{_SVG_H / 2}" font-size="12" transform="rotate(-90 12 {_SVG_H / 2})" '
              f'text-anchor="middle">log10 remainder ({y0:.1f} … {y1:.1f})</text>')
    legend = ", ".join(f'<span class="gc-swatch" style="background:{c};margin-left:0"></span>{esc(name)}'
                       for c, name in _SERIES[:len(result.remainders)])
    return (f'<figure class="gc-fig"><svg xmlns="http://www.w3.org/2000/svg" width="{_SVG_W}" height="{_SVG_H}" '
            f'role="img" aria-label="Taylor remainders against the step">{"".join(shapes)}{labels}</svg>'
            f"<figcaption>remainders against the step, log-log: {legend}; filled points counted, hollow "
            "ones under the round-off threshold (dashed). Expected slopes: 2 for R1, 3 for R2"
            "</figcaption></figure>")


def render_taylor(result: Any, full: bool) -> tuple[str, str]:
    """The remainder table with the observed orders, and the log-log picture."""
    title, parts = _heading(result, full, "Taylor test")
    parts.append(f'<p class="gc-meta">{esc(result.dtype)}, {result.evaluations} evaluations in '
                 f"{result.seconds:.3g} s; round-off floor {num(result.floor, '.2e')}, a remainder counts from "
                 f"{num(result.threshold, '.2e')} on</p>")
    head = ["h", "R1 (grad)", "order"] + (["R2 (+Hessian)", "order"] if len(result.remainders) > 1 else [])
    rows = []
    for k, h in enumerate(result.steps):
        row: list[Cell] = [num(h, ".3e")]
        for j, rem in enumerate(result.remainders):
            order = result.orders[j][k] if k < len(result.orders[j]) else math.nan
            row.append(num(rem[k], ".3e") + ("" if result.counted[j][k] else " ·"))
            row.append(num(order, ".2f") if math.isfinite(order) else "")
        rows.append(row)
    parts.append(table(head, rows, caption="· = under the threshold (round-off dominates): not counted"))
    parts += [taylor_svg(result), notes_list(result.notes), next_section(result)]
    return title, "".join(parts)
