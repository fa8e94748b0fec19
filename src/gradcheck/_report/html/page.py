"""The page skeleton, its inline stylesheet, escaping, and the small pieces every renderer uses."""
from __future__ import annotations

import html
import math
from collections.abc import Iterable
from typing import Any

from ..._version import __version__
from ..next_step import next_steps

# Scoped under .gradcheck so a notebook's own styles are left alone. No web fonts, no
# external sheet: the page must open offline, as a CI artifact.
CSS = """
.gradcheck{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;font-size:14px;line-height:1.4;max-width:1100px}
.gradcheck h1{font-size:20px;margin:.2em 0 .4em}
.gradcheck h2{font-size:17px;margin:1.2em 0 .4em;border-bottom:1px solid #ddd}
.gradcheck h3{font-size:15px;margin:1em 0 .3em}
.gradcheck .gc-badge{display:inline-block;padding:1px 8px;border-radius:4px;color:#fff;font-weight:600;font-size:13px}
.gradcheck .gc-pass{background:#1a7f37}.gradcheck .gc-fail{background:#cf222e}
.gradcheck .gc-inconclusive,.gradcheck .gc-other{background:#8c6d1f}
.gradcheck .gc-meta{color:#555;margin:.2em 0}
.gradcheck .gc-warn{color:#9a3412;font-weight:600}
.gradcheck table.gc-table{border-collapse:collapse;margin:.4em 0;font-size:13px}
.gradcheck table.gc-table th,.gradcheck table.gc-table td{border:1px solid #d0d7de;padding:2px 8px;text-align:right;white-space:nowrap}
.gradcheck table.gc-entries{font-size:12.5px}
.gradcheck table.gc-entries th,.gradcheck table.gc-entries td{padding:2px 6px}
.gradcheck table.gc-table th{background:#f6f8fa;text-align:center}
.gradcheck table.gc-table td.gc-l{text-align:left;white-space:normal}
.gradcheck table.gc-table td.gc-ix{text-align:left}
.gradcheck table.gc-table caption{text-align:left;color:#555;caption-side:bottom;font-size:12px;padding-top:2px}
.gradcheck table.gc-table td.gc-v{font-weight:600;white-space:nowrap;text-align:left}
.gradcheck .gc-scroll{overflow-x:auto;max-width:100%}
.gradcheck .gc-cap{color:#555;font-size:12px}
.gradcheck .gc-maps{display:flex;flex-wrap:wrap;gap:18px;align-items:flex-start}
.gradcheck figure{margin:.3em 0}
.gradcheck figcaption{color:#555;font-size:12px;max-width:420px}
.gradcheck .gc-swatch{display:inline-block;width:11px;height:11px;margin:0 3px 0 10px;vertical-align:-1px;border:1px solid #999}
.gradcheck .gc-bar{display:inline-block;height:10px;background:#4c78a8;vertical-align:middle;margin-right:4px}
.gradcheck details{margin:.4em 0}
.gradcheck summary{cursor:pointer;font-weight:600}
.gradcheck code{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12.5px}
.gradcheck footer{color:#777;font-size:12px;margin-top:2em}
.gradcheck .gc-why{margin:.2em 0}
.gradcheck .gc-next{border-left:3px solid #4c78a8;padding:0 .8em;margin:1em 0;background:#f6f8fa}
.gradcheck .gc-next h3{margin:.4em 0 .2em}
.gradcheck .gc-next ul{margin:.2em 0 .5em;padding-left:1.2em}
"""


def esc(value: object) -> str:
    """Any value as HTML text: ``<``, ``>``, ``&`` and both quotes escaped (safe in attributes)."""
    return html.escape(str(value), quote=True)


def num(v: Any, spec: str = ".6e") -> str:
    """A float for a table cell; NaN and infinities as words."""
    try:
        v = float(v)
    except (TypeError, ValueError):
        return esc(v)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return format(v, spec)


def status_of(obj: Any) -> str:
    """The overall status word: ``obj.status`` when the result has one, else PASS / FAIL."""
    status = getattr(obj, "status", None)
    if status is None:
        return "PASS" if obj.passed else "FAIL"
    return str(getattr(status, "name", status))


def badge(status: str) -> str:
    word = status.upper()
    kind = {"PASS": "gc-pass", "FAIL": "gc-fail", "BROKEN": "gc-fail", "INCONCLUSIVE": "gc-inconclusive"}.get(word, "gc-other")
    return f'<span class="gc-badge {kind}">{esc(word)}</span>'


def notes_list(notes: Iterable[str]) -> str:
    items = "".join(f"<li>{esc(n)}</li>" for n in notes)
    return f'<ul class="gc-notes">{items}</ul>' if items else ""


def next_section(result: object) -> str:
    """What to do next (:func:`gradcheck._report.next_step.next_steps`), the page's last section."""
    items = "".join(f"<li>{esc(step)}</li>" for step in next_steps(result))
    return f'<div class="gc-next"><h3>Next</h3><ul>{items}</ul></div>' if items else ""


def details(summary: str, body: str, *, open_: bool = False) -> str:
    """A collapsible block (no script needed); ``summary`` is HTML."""
    return f"<details{' open' if open_ else ''}><summary>{summary}</summary>{body}</details>"


def fragment(body: str) -> str:
    """HTML for a notebook cell: the scoped stylesheet and the body, no document around it."""
    return f'<div class="gradcheck"><style>{CSS}</style>{body}</div>'


def page(title: str, body: str) -> str:
    """A whole HTML document: no script, no external resource."""
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>body{{margin:16px}}{CSS}</style></head>\n"
        f'<body><div class="gradcheck">{body}'
        f"<footer>written by gradcheck {esc(__version__)}; a self-contained page (no script, "
        "nothing fetched)</footer></div></body></html>\n"
    )
