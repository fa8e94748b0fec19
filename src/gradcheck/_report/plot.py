"""Pictures of reports: heat maps of where a check fails, and grids of which shapes fail.

matplotlib is an optional extra (``pip install "gradcheck[plot]"``), imported only when a
picture is asked for. Figures are drawn with the Agg canvas directly, never through
``pyplot``, so plotting neither needs a display nor changes the caller's backend.
"""
from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .._core.verdict import Verdict
from .layout import describe_layout, split_parts

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from .layout import PartsSpec

#: One colour per verdict code (PASS green, MISMATCH red, UNCHECKED grey, ...).
VERDICT_COLOURS = {
    Verdict.PASS: "#5aae61",
    Verdict.MISMATCH: "#d7191c",
    Verdict.UNCHECKED: "#bdbdbd",
    Verdict.NONFINITE: "#7b3294",
    Verdict.KINK: "#fdae61",
    Verdict.SKIPPED: "#ffffff",
    Verdict.SCREENED: "#b8e186",  # screening: cleared in blocks, a paler green than PASS
}
PASS_COLOUR, FAIL_COLOUR, EMPTY_COLOUR = "#5aae61", "#d7191c", "#f0f0f0"
_PANEL_INCHES = 3.2
_GRID_LINES_UP_TO = 40  # draw cell borders when a panel has at most this many rows/columns
_DPI = 110


def _matplotlib():
    """The Figure class and Agg canvas, or an ImportError that says what to install."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:  # pragma: no cover - exercised in a subprocess test
        raise ImportError(
            'plotting needs matplotlib, which is an optional extra: pip install "gradcheck[plot]"'
        ) from exc
    return Figure, FigureCanvasAgg


def _title(fig: Figure, lines: Sequence[str]) -> None:
    """A suptitle wrapped to the figure's width (about 13 characters per inch at 10 pt)."""
    width = max(40, int(fig.get_figwidth() * 13))
    fig.suptitle("\n".join(textwrap.fill(line, width) for line in lines), fontsize=10)


def _save(fig: Figure, canvas_cls: type[FigureCanvasAgg], path: str | Path) -> Path:
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    canvas_cls(fig)
    fig.savefig(out, dpi=_DPI, format="png")
    return out


def _as_2d(array: np.ndarray, fill: float) -> tuple[np.ndarray, str, str]:
    """A 2-D view for a heat map, with axis labels. 1-D vectors wrap into near-square
    rows (padding shown blank); N-D tensors flatten their leading axes into rows."""
    a = np.asarray(array)
    if a.ndim == 2:
        return a, "row", "column"
    if a.ndim == 0:
        return a.reshape(1, 1), "", ""
    if a.ndim > 2:
        lead = " × ".join(f"axis {i}" for i in range(a.ndim - 1))
        return a.reshape(-1, a.shape[-1]), f"{lead} (flattened)", f"axis {a.ndim - 1}"
    n = a.size
    if n <= 32:
        return a.reshape(1, n), "", "entry"
    width = math.ceil(math.sqrt(n))
    rows = math.ceil(n / width)
    padded = np.full(rows * width, fill, dtype=np.result_type(a.dtype, type(fill)))
    padded[:n] = a
    return padded.reshape(rows, width), f"entry // {width}", f"entry % {width}"


def _cell_borders(ax: Axes, shape: tuple[int, int]) -> None:
    # Line collections, not minor ticks: ticks cost a text layout each.
    rows, cols = shape
    if max(rows, cols) > _GRID_LINES_UP_TO:
        return
    ax.hlines(np.arange(0.5, rows - 1), -0.5, cols - 0.5, colors="white", linewidth=0.8)
    ax.vlines(np.arange(0.5, cols - 1), -0.5, rows - 0.5, colors="white", linewidth=0.8)


def _integer_ticks(ax: Axes, shape: tuple[int, int], xvalues=None, yvalues=None) -> None:
    rows, cols = shape
    xs = np.arange(cols) if cols <= 16 else np.linspace(0, cols - 1, 9).round().astype(int)
    ys = np.arange(rows) if rows <= 16 else np.linspace(0, rows - 1, 9).round().astype(int)
    ax.set_xticks(xs)
    ax.set_yticks(ys)
    ax.set_xticklabels([str(xvalues[i]) if xvalues is not None else str(i) for i in xs], fontsize=7)
    ax.set_yticklabels([str(yvalues[i]) if yvalues is not None else str(i) for i in ys], fontsize=7)


def plot_report(report: Any, path: str | Path, *, parts: PartsSpec | None = None, title: str | None = None) -> Path:
    """Write a PNG heat map of one check: the verdict of every entry (top) and its relative
    error ``|a-n| / max(|a|, |n|)`` on a log scale (bottom).

    ``parts`` (e.g. ``{"A": (4, 3), "B": (4, 5)}``) splits a flat input into named pieces,
    drawn side by side each in its own shape. Returns the path written.
    """
    Figure, Canvas = _matplotlib()
    from matplotlib.colors import BoundaryNorm, ListedColormap
    from matplotlib.patches import Patch

    codes = np.asarray(report.codes)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_rel = np.log10(np.maximum(report.rel_error, 1e-17))
    if parts is not None:
        pieces = [(name, c, r) for (name, c), (_, r) in
                  zip(split_parts(codes, parts), split_parts(log_rel, parts))]
    else:
        pieces = [("", codes, log_rel)]

    cmap = ListedColormap([VERDICT_COLOURS[v] for v in Verdict]).with_extremes(bad=EMPTY_COLOUR)
    norm = BoundaryNorm(np.arange(len(Verdict) + 1) - 0.5, len(Verdict))
    finite = log_rel[np.isfinite(log_rel)]
    vmin = min(-16.0, float(finite.min())) if finite.size else -16.0
    vmax = max(0.0, float(finite.max())) if finite.size else 0.0

    shapes2d = [_as_2d(c, -1)[0].shape for _, c, _ in pieces]
    ratios = [min(3.0, max(0.6, cols / rows)) for rows, cols in shapes2d]
    if len(pieces) == 1:  # verdicts | relative error, side by side
        fig = Figure(figsize=(max(8.0, 2 * _PANEL_INCHES * ratios[0] + 2.0), _PANEL_INCHES + 1.8),
                     layout="constrained")
        grid = fig.subplots(1, 2, squeeze=False)
        slots = [(grid[0, 0], grid[0, 1])]
        rel_axes = [grid[0, 1]]
    else:  # one column per part: verdicts above, relative error below
        fig = Figure(figsize=(max(8.0, sum(ratios) * _PANEL_INCHES + 1.5), 2 * _PANEL_INCHES + 1.8),
                     layout="constrained")
        grid = fig.subplots(2, len(pieces), squeeze=False, gridspec_kw={"width_ratios": ratios})
        slots = [(grid[0, j], grid[1, j]) for j in range(len(pieces))]
        rel_axes = list(grid[1, :])
    rel_image = None
    for (name, c, r), (top, bottom) in zip(pieces, slots):
        c2, ylab, xlab = _as_2d(c.astype(float), np.nan)
        r2, _, _ = _as_2d(r, np.nan)
        top.imshow(np.ma.masked_invalid(c2), cmap=cmap, norm=norm, interpolation="nearest",
                   aspect="equal")
        rel_image = bottom.imshow(np.ma.masked_invalid(r2), cmap="magma", vmin=vmin, vmax=vmax,
                                  interpolation="nearest", aspect="equal")
        for ax, what in ((top, "verdicts"), (bottom, "log10 relative error")):
            _cell_borders(ax, c2.shape)
            _integer_ticks(ax, c2.shape)
            ax.set_xlabel(xlab, fontsize=8)
            ax.set_ylabel(ylab, fontsize=8)
            ax.set_title(f"{name} {c.shape}: {what}" if name else f"{what}, shape {c.shape}",
                         fontsize=9)
        mism = c == int(Verdict.MISMATCH)
        if mism.any():
            top.set_xlabel(f"{xlab}\nMISMATCH at: {describe_layout(mism).text}", fontsize=8)
    fig.colorbar(rel_image, ax=rel_axes, shrink=0.8, label="log10 rel. error")
    present = [v for v in Verdict if (codes == int(v)).any()]
    fig.legend(handles=[Patch(color=VERDICT_COLOURS[v], label=v.name) for v in present],
               loc="outside lower center", fontsize=8, ncol=len(present))
    _title(fig, [title or report.summary()])
    return _save(fig, Canvas, path)


def _rule_dims(sweep: Any) -> list[int]:
    rule = sweep.rule
    if rule is None or rule.predicate is None:
        return []
    dims: list[int] = []
    for feat in rule.predicate.features:
        for d in feat.dims:
            if d not in dims:
                dims.append(d)
    return dims


def _dim_index(sweep: Any, which: str | int, ndim: int) -> int:
    if isinstance(which, str):
        if which not in sweep.dim_names:
            raise ValueError(f"unknown dimension {which!r}; the sweep's dimensions are {sweep.dim_names}")
        return sweep.dim_names.index(which)
    index = int(which)
    if not 0 <= index < ndim:
        raise ValueError(f"dimension {which} out of range for shapes of {ndim} dimensions")
    return index


def _layout_dims(sweep: Any, ndim: int, rows: str | int | None, cols: str | int | None,
                 panels: str | int | None
                 ) -> tuple[int | None, int | None, int | None]:
    """(rows, cols, panels) dimension indices (None: not used). Explicit choices first;
    then the dimensions the rule uses become the image axes, so the rule reads as the same
    pattern in every panel; the next free dimension makes the panels."""
    chosen = {k: _dim_index(sweep, v, ndim) for k, v in
              (("rows", rows), ("cols", cols), ("panels", panels)) if v is not None}
    if ndim == 1 and not chosen:
        return None, 0, None  # one strip of cells
    free = [d for d in dict.fromkeys(_rule_dims(sweep) + list(range(ndim)))
            if d not in chosen.values()]
    need = [k for k in ("rows", "cols") if k not in chosen]
    image = sorted(free[: len(need)])
    for k, d in zip(need, image):
        chosen[k] = d
    rest = [d for d in free if d not in image]
    if "panels" not in chosen and rest:
        chosen["panels"] = rest[0]
    return chosen.get("rows"), chosen.get("cols"), chosen.get("panels")


def _sweep_grid(sweep: Any, shapes: np.ndarray, failed: np.ndarray, unverified: np.ndarray,
                dims: tuple[int | None, int | None, int | None]
                ) -> tuple[list[int], list[int], list[int], np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The values along rows, columns and panels, and per (panel, row, column) cell the
    counts of failing, swept, wrongly predicted and unverified shapes."""
    r_dim, c_dim, p_dim = dims

    def values(d: int | None) -> list[int]:
        if d is None:
            return [0]
        if sweep.axes is not None:
            return sorted(set(sweep.axes[d]))
        return sorted(set(shapes[:, d].tolist()))

    rv, cv, pv = values(r_dim), values(c_dim), values(p_dim)
    fails = np.zeros((len(pv), len(rv), len(cv)))
    seen = np.zeros_like(fails)
    wrong = np.zeros_like(fails)  # shapes where the (inexact) rule predicts the other outcome
    unsure = np.zeros_like(fails)
    predicate = sweep.rule.predicate if sweep.rule is not None else None
    predicted = predicate.evaluate(shapes) if predicate is not None else failed
    for s, bad, guess, none in zip(shapes, failed, predicted, unverified):
        p = pv.index(int(s[p_dim])) if p_dim is not None else 0
        i = rv.index(int(s[r_dim])) if r_dim is not None else 0
        j = cv.index(int(s[c_dim])) if c_dim is not None else 0
        fails[p, i, j] += bad
        seen[p, i, j] += 1
        wrong[p, i, j] += bool(bad) != bool(guess)
        unsure[p, i, j] += none
    return rv, cv, pv, fails, seen, wrong, unsure


def plot_sweep(sweep: Any, path: str | Path, *, rows: str | int | None = None,
               cols: str | int | None = None, panels: str | int | None = None) -> Path:
    """Write a PNG grid of the swept shapes: one panel per value of the ``panels``
    dimension, rows × columns inside each, failing shapes red, passing green, shapes not
    swept blank. Dimensions beyond three are pooled: a cell then shows the fraction of its
    shapes that fail. ``rows``/``cols``/``panels`` take dimension names or indices; by
    default the dimensions the rule uses become the image axes. Cells where an inexact
    rule is wrong are marked ×. Returns the path written.
    """
    Figure, Canvas = _matplotlib()
    from matplotlib.colors import LinearSegmentedColormap
    from matplotlib.patches import Patch

    shapes = np.asarray(sweep.shapes, dtype=np.int64)
    if shapes.ndim != 2:
        raise ValueError("plotting a sweep needs shapes that all have the same number of dimensions")
    ndim = shapes.shape[1]
    failed = np.array([r.failed for r in sweep.results])  # INCONCLUSIVE shapes do not fail...
    unverified = np.array([r.status == "INCONCLUSIVE" for r in sweep.results])  # ...they get a "?"
    r_dim, c_dim, p_dim = _layout_dims(sweep, ndim, rows, cols, panels)

    rv, cv, pv, fails, seen, wrong, unsure = _sweep_grid(sweep, shapes, failed, unverified, (r_dim, c_dim, p_dim))
    with np.errstate(invalid="ignore", divide="ignore"):
        frac = np.where(seen > 0, fails / np.maximum(seen, 1), np.nan)

    n_pan = len(pv)
    ncols = min(4, n_pan)
    nrows = math.ceil(n_pan / ncols)
    cell = min(0.45, 2.8 / max(len(rv), len(cv)))
    pw = max(1.8, len(cv) * cell + 0.6)
    ph = max(1.6, len(rv) * cell + 0.8)
    fig = Figure(figsize=(max(6.0, ncols * pw + 0.5), nrows * ph + 1.4), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False)
    cmap = LinearSegmentedColormap.from_list("passfail", [PASS_COLOUR, FAIL_COLOUR]
                                             ).with_extremes(bad=EMPTY_COLOUR)
    names = sweep.dim_names
    for idx in range(nrows * ncols):
        ax = axes[idx // ncols, idx % ncols]
        if idx >= n_pan:
            ax.set_axis_off()
            continue
        ax.imshow(np.ma.masked_invalid(frac[idx]), cmap=cmap, vmin=0, vmax=1,
                  interpolation="nearest", aspect="equal")
        for i, j in zip(*np.nonzero(wrong[idx])):
            ax.text(j, i, "×", ha="center", va="center", color="black", fontsize=9)
        for i, j in zip(*np.nonzero(unsure[idx] * (wrong[idx] == 0))):
            ax.text(j, i, "?", ha="center", va="center", color="black", fontsize=9)
        _cell_borders(ax, frac[idx].shape)
        _integer_ticks(ax, frac[idx].shape, xvalues=cv if c_dim is not None else [""],
                       yvalues=rv if r_dim is not None else [""])
        ax.set_ylabel(names[r_dim] if r_dim is not None else "", fontsize=8)
        ax.set_xlabel(names[c_dim] if c_dim is not None else "", fontsize=8)
        if p_dim is not None:
            n_bad = int(fails[idx].sum())
            ax.set_title(f"{names[p_dim]} = {pv[idx]}  ({n_bad} fail)", fontsize=9)
    handles = [Patch(color=FAIL_COLOUR, label="fails"), Patch(color=PASS_COLOUR, label="passes")]
    if (seen == 0).any():
        handles.append(Patch(facecolor=EMPTY_COLOUR, edgecolor="#999999", label="not swept"))
    if seen.max() > 1:
        handles[0].set_label("fails (cell colour: fraction of its shapes)")
    fig.legend(handles=handles, loc="outside lower center", ncol=len(handles), fontsize=8)
    rule = f"rule: {sweep.rule}" if sweep.rule is not None else "no rule sought"
    if wrong.any():
        rule += "  (× = the rule is wrong here)"
    if unsure.any():
        rule += "  (? = verified nothing there)"
    _title(fig, [sweep.summary(), rule])
    return _save(fig, Canvas, path)

