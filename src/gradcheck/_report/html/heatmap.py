"""Heat maps of one tensor's verdicts and relative errors, as inline SVG around a PNG.

A picture has at most :data:`MAX_CELLS` pixels per side: a larger tensor is cut into blocks
and each pixel shows its block's *worst* value (the most severe verdict, the largest relative
error), so a single MISMATCH among a million entries still shows, and the caption says how
many entries a pixel stands for. 1-D tensors wrap into near-square rows; N-D tensors flatten
their leading axes into rows (as in :func:`gradcheck.Report.plot`).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..._core.verdict import Verdict
from ..plot import EMPTY_COLOUR, VERDICT_COLOURS, _as_2d
from .page import esc
from .png import png_data_uri

#: Largest picture side in pixels (blocks of entries beyond that).
MAX_CELLS = 256
_DISPLAY = 360.0      # longest side on screen, in CSS pixels
_MAX_CELL_PX = 24.0   # a tiny tensor's cells stay readable, not poster-sized
_PAD = -1             # rank of "no entry" (padding of a wrapped vector or of a block)
_BACKGROUND = "#ffffff"
_OTHER_COLOUR = "#80b1d3"  # a verdict this module has no colour for (a newer member)
# log10 relative error from 1e-16 to 1 on the magma scale (as report.plot draws it).
_MAGMA = ("#000004", "#180f3d", "#440f76", "#721f81", "#9e2f7f",
          "#cd4071", "#f1605d", "#fd9668", "#feca8d", "#fcfdbf")
_LOG_RANGE = (-16.0, 0.0)


def severity_order() -> list[Verdict]:
    """Verdicts from least to most severe: the order in which a block shows its worst entry.
    Members this module does not know (added later) rank between PASS and UNCHECKED."""
    known_low = [v for v in (getattr(Verdict, n, None) for n in ("SKIPPED", "PASS")) if v is not None]
    known_high = [v for v in (getattr(Verdict, n, None)
                              for n in ("UNCHECKED", "KINK", "NONFINITE", "MISMATCH")) if v is not None]
    others = [v for v in Verdict if v not in known_low and v not in known_high]
    return known_low + others + known_high


def verdict_colour(v: Verdict) -> str:
    return VERDICT_COLOURS.get(v, _OTHER_COLOUR)


def _rgb(hex_colour: str) -> tuple[int, int, int]:
    h = hex_colour.lstrip("#")
    return int(h[0:2], 16), int(h[2:4], 16), int(h[4:6], 16)


def block_max(a: np.ndarray, fill: float, max_cells: int = MAX_CELLS) -> tuple[np.ndarray, tuple[int, int]]:
    """The maximum over blocks of a 2-D array, so neither side exceeds ``max_cells``.
    ``fill`` pads the last blocks of an integer array; a float array's NaN (and its padding)
    count only where a block has no number."""
    rows, cols = a.shape
    br, bc = max(1, math.ceil(rows / max_cells)), max(1, math.ceil(cols / max_cells))
    if br == bc == 1:
        return a, (1, 1)
    out_r, out_c = math.ceil(rows / br), math.ceil(cols / bc)
    floating = np.issubdtype(a.dtype, np.floating)
    padded = np.full((out_r * br, out_c * bc), np.nan if floating else fill, dtype=a.dtype)
    padded[:rows, :cols] = a
    blocks = padded.reshape(out_r, br, out_c, bc)
    if floating:
        return np.fmax.reduce(np.fmax.reduce(blocks, axis=3), axis=1), (br, bc)
    return blocks.max(axis=(1, 3)), (br, bc)


def _verdict_pixels(codes: np.ndarray) -> tuple[np.ndarray, tuple[int, int], str, str, list[Verdict]]:
    order = severity_order()
    rank_of_code = np.zeros(max(int(v) for v in Verdict) + 1, dtype=np.int16)
    for rank, v in enumerate(order):
        rank_of_code[int(v)] = rank
    ranks = rank_of_code[np.asarray(codes, dtype=np.int64)]
    grid, ylab, xlab = _as_2d(ranks, _PAD)
    reduced, block = block_max(grid.astype(np.int16), _PAD)
    palette = np.array([_rgb(verdict_colour(v)) for v in order] + [_rgb(_BACKGROUND)], dtype=np.uint8)
    rgb = palette[np.where(reduced == _PAD, len(order), reduced)]
    present = [v for v in order if (np.asarray(codes) == int(v)).any()]
    return rgb, block, ylab, xlab, present


def _error_pixels(rel: np.ndarray) -> tuple[np.ndarray, tuple[int, int]]:
    with np.errstate(divide="ignore", invalid="ignore"):
        logs = np.log10(np.maximum(np.asarray(rel, dtype=np.float64), 10.0 ** (_LOG_RANGE[0] - 1)))
    grid, _, _ = _as_2d(logs, -np.inf)  # -inf: padding; NaN: no value (skipped, nonfinite)
    reduced, block = block_max(grid, -np.inf)
    lo, hi = _LOG_RANGE
    t = np.clip((reduced - lo) / (hi - lo), 0.0, 1.0)
    stops = np.array([_rgb(c) for c in _MAGMA], dtype=np.float64)
    pos = np.nan_to_num(t, nan=0.0) * (len(_MAGMA) - 1)
    i = np.minimum(pos.astype(int), len(_MAGMA) - 2)
    frac = (pos - i)[..., None]
    rgb = (stops[i] * (1 - frac) + stops[i + 1] * frac).round().astype(np.uint8)
    rgb[np.isnan(reduced)] = _rgb(EMPTY_COLOUR)
    rgb[np.isneginf(reduced)] = _rgb(_BACKGROUND)
    return rgb, block


def _svg(rgb: np.ndarray, block: tuple[int, int], shape2d: tuple[int, int], label: str,
         ylab: str, xlab: str) -> str:
    """The picture with its axes: tick labels at the first and last entry of each axis."""
    rows, cols = shape2d
    scale = min(_MAX_CELL_PX, _DISPLAY / max(rows, cols))
    w, h = max(8.0, cols * scale), max(8.0, rows * scale)
    left, top, bottom = 44.0, 4.0, 30.0
    width, height = left + w + 8, top + h + bottom
    parts = [
        (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
         f'viewBox="0 0 {width:.1f} {height:.1f}" role="img" aria-label="{esc(label)}" class="gc-map">'),
        f"<title>{esc(label)}</title>",
        (f'<image x="{left}" y="{top}" width="{w:.2f}" height="{h:.2f}" preserveAspectRatio="none" '
         f'style="image-rendering:pixelated;image-rendering:crisp-edges" href="{png_data_uri(rgb)}"/>'),
        f'<rect x="{left}" y="{top}" width="{w:.2f}" height="{h:.2f}" fill="none" stroke="#888" stroke-width="0.6"/>',
        '<g font-size="10" fill="#555" font-family="sans-serif">',
        f'<text x="{left - 3}" y="{top + 9}" text-anchor="end">0</text>',
        (f'<text x="{left - 3}" y="{top + h}" text-anchor="end">{rows - 1}</text>' if rows > 1 else ""),
        f'<text x="{left}" y="{top + h + 11}">0</text>',
        (f'<text x="{left + w}" y="{top + h + 11}" text-anchor="end">{cols - 1}</text>' if cols > 1 else ""),
        f'<text x="{left + w / 2:.1f}" y="{top + h + 24}" text-anchor="middle">{esc(xlab)}</text>',
        f'<text transform="translate(12 {top + h / 2:.1f}) rotate(-90)" text-anchor="middle">{esc(ylab)}</text>',
        "</g></svg>",
    ]
    return "".join(parts)


def _block_words(block: tuple[int, int], shape2d: tuple[int, int], rgb: np.ndarray, what: str) -> str:
    if block == (1, 1):
        return f"one pixel per entry; {what}"
    return (f"downsampled from {shape2d[0]} × {shape2d[1]} to {rgb.shape[0]} × {rgb.shape[1]} pixels: "
            f"each pixel is a block of {block[0]} × {block[1]} entries showing its {what}")


def _verdict_legend(present: list[Verdict]) -> str:
    return "".join(f'<span class="gc-swatch" style="background:{verdict_colour(v)}"></span>{esc(v.name)}'
                   for v in present)


def _error_legend() -> str:
    # A CSS gradient, not an SVG one: no element ids, so many maps can share a page.
    ramp = ", ".join(_MAGMA)
    return (f'<span class="gc-cap">1e-16 <span style="display:inline-block;width:140px;height:10px;'
            f'vertical-align:middle;border:1px solid #888;background:linear-gradient(to right, {ramp})">'
            f'</span> 1</span>')


def heat_maps(report: Any, label: str) -> str:
    """Both maps of one report side by side (HTML), or "" for a scalar."""
    codes = np.asarray(report.codes)
    if codes.ndim == 0 or codes.size < 2:
        return ""
    v_rgb, block, ylab, xlab, present = _verdict_pixels(codes)
    shape2d = _as_2d(codes, 0)[0].shape
    e_rgb, _ = _error_pixels(report.rel_error)
    shape = tuple(codes.shape)
    verdicts = (f'<figure class="gc-fig">{_svg(v_rgb, block, shape2d, f"verdicts of {label}, shape {shape}", ylab, xlab)}'
                f'<figcaption>verdicts: {_verdict_legend(present)}<br>'
                f'{esc(_block_words(block, shape2d, v_rgb, "most severe verdict"))}</figcaption></figure>')
    errors = (f'<figure class="gc-fig">{_svg(e_rgb, block, shape2d, f"relative error of {label}, shape {shape}", ylab, xlab)}'
              f'<figcaption>relative error |a−n| / max(|a|, |n|), log scale {_error_legend()}<br>'
              f'{esc(_block_words(block, shape2d, e_rgb, "largest relative error"))}; '
              f'grey: no value</figcaption></figure>')
    return f'<div class="gc-maps">{verdicts}{errors}</div>'
