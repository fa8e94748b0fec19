"""HTML tables: cells are given as HTML (escape user text before), optionally with a class."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..._core.verdict import Verdict
from .heatmap import severity_order, verdict_colour
from .page import esc

Cell = str | tuple[str, str]  # HTML, or (HTML, css class)


def table(head: Sequence[str], rows: Sequence[Sequence[Any]], *, caption: str = "", cls: str = "") -> str:
    """``head`` is plain text (escaped here); ``rows`` hold cells (:data:`Cell`); ``caption`` is HTML."""
    th = "".join(f"<th>{esc(h)}</th>" for h in head)
    body = []
    for row in rows:
        cells = []
        for cell in row:
            text, css = (cell, "") if isinstance(cell, str) else cell
            cells.append(f'<td class="{css}">{text}</td>' if css else f"<td>{text}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    cap = f"<caption>{caption}</caption>" if caption else ""
    klass = f"gc-table {cls}".strip()
    return (f'<div class="gc-scroll"><table class="{klass}">{cap}<thead><tr>{th}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table></div>')


def verdict_cell(v: Verdict, mark: str = "") -> Cell:
    """A verdict name with its colour swatch."""
    swatch = f'<span class="gc-swatch" style="background:{verdict_colour(v)};margin-left:0"></span>'
    return swatch + esc(v.name) + esc(mark), "gc-v"


def counts_table(counts: Mapping[Verdict, int]) -> str:
    """Entries per verdict, every verdict that occurs, most severe first."""
    total = sum(counts.values())
    rows = []
    for v in reversed(severity_order()):
        n = int(counts.get(v, 0))
        if n:
            share = f"{100 * n / total:.3g}%" if total else "-"
            rows.append([verdict_cell(v), str(n), share])
    return table(["verdict", "entries", "share"], rows) if rows else ""
