"""HTML renderings of results: a notebook fragment (``_repr_html_``) and a self-contained page
(``to_html``) for CI artifacts.

In: a result object (Report, MultiReport, ParamsReport, SweepReport, DisputeResult,
AdjointResult, TaylorResult).
Out: HTML text; no file is read, nothing is fetched, no script runs in the page. Pictures are
drawn here by hand (inline SVG around a PNG written with zlib), so no optional dependency is
needed. Every string that comes from the user (names, notes, rules) is escaped.
Must not import: the engines, the classify kernel, matplotlib, or any framework.

Modules: ``page`` (skeleton, CSS, escaping, numbers), ``png`` (a PNG writer),
``heatmap`` (downsampled verdict and error maps), ``tables`` (HTML tables),
``report`` (one check and several inputs), ``models`` (check_params), ``sweep``
(shape sweeps), ``dispute`` (low-precision disputes), ``orders`` (the adjoint and Taylor
tests). A feature's result is rendered here
from its fields alone: this package imports no feature (the renderer is looked up by the
result's type name).
"""
from __future__ import annotations

import importlib
import os
from pathlib import Path

from .page import fragment, page

# Result type name -> (module, renderer). By name, so this package imports none of them.
_RENDERERS = {
    "Report": ("report", "render_report"),
    "MultiReport": ("report", "render_multi"),
    "ParamsReport": ("models", "render_params"),
    "SweepReport": ("sweep", "render_sweep"),
    "DisputeResult": ("dispute", "render_dispute"),
    "AdjointResult": ("orders", "render_adjoint"),
    "TaylorResult": ("orders", "render_taylor"),
}


def _renderer(obj: object):
    """The body renderer for ``obj``'s type (or its nearest base): ``render(obj, full) -> (title, body)``."""
    for cls in type(obj).__mro__:
        if cls.__name__ in _RENDERERS:
            module, name = _RENDERERS[cls.__name__]
            return getattr(importlib.import_module(f"{__name__}.{module}"), name)
    raise TypeError(f"no HTML rendering for {type(obj).__name__}; expected a gradcheck report or result")


def notebook_html(obj: object) -> str:
    """The short HTML shown by Jupyter for ``obj`` (summary, counts, worst entries, heat map)."""
    _, body = _renderer(obj)(obj, full=False)
    return fragment(body)


def page_html(obj: object, path: str | os.PathLike[str] | None = None) -> str:
    """The whole self-contained page for ``obj``; written (UTF-8) to ``path`` when given."""
    title, body = _renderer(obj)(obj, full=True)
    text = page(title, body)
    if path is not None:
        out = Path(path)
        if out.parent != Path(""):
            out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
    return text


class HtmlViews:
    """What a result type gains by inheriting this: ``_repr_html_`` (the convention Jupyter,
    pandas and xarray follow) and ``to_html(path=None)``. Plain ``repr`` is left alone."""

    __slots__ = ()

    def _repr_html_(self) -> str:
        """What a notebook shows: the summary, counts, heat maps and the worst entries."""
        return notebook_html(self)

    def to_html(self, path: str | os.PathLike[str] | None = None) -> str:
        """The result as one self-contained HTML page (no script, nothing fetched), for a
        reviewer or a CI artifact: everything the text shows, every non-PASS entry (the
        most severe 500 per tensor listed, the rest counted), heat maps downsampled to at
        most 256 pixels a side (each pixel shows its block's worst entry), exact values of
        refereed entries. Written to ``path`` (UTF-8) when given; returned either way.

        >>> import numpy as np, gradcheck
        >>> r = gradcheck.check(lambda x: (x**2).sum(), np.arange(3.0), grad=lambda x: 2*x)
        >>> r.to_html().startswith("<!DOCTYPE html>")
        True
        """
        return page_html(self, path)
