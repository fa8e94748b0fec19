"""Where in a tensor do the failing entries sit? A description in words.

:func:`describe_layout` turns a boolean mask (the failing entries of one tensor) into a short
phrase: "the last column", "odd rows", "a block rows 2–4 × columns 1–3", "the main diagonal".
Every description except ``"scattered"`` is exact: the set it names is the mask, and
``details`` holds enough to rebuild it.

Kinds and their ``details`` (all carry ``shape`` and ``count``):

=========================  ==================================================================
kind                       details
=========================  ==================================================================
``none`` / ``all``         nothing more
``single``                 ``index`` (tuple)
``row`` ``column``         ``axis``, ``indices``: whole rows / columns (2-D)
``slice``                  ``axis``, ``indices``: whole slices along one axis (N-D, N >= 3)
``entries`` ``run``        ``axis`` (0), ``indices``: a list / a contiguous run (1-D)
``parity``                 ``axis``, ``indices``, ``parity`` ("even" / "odd")
``stride``                 ``axis``, ``indices``, ``step``, ``offset``
``block``                  ``start``, ``stop`` (half-open, per axis)
``product``                a grid: the product of one index set per axis
``diagonal``               ``offset`` (as ``np.eye(r, c, offset)``), ``anti`` (flip columns)
``except``                 ``except_kind``, ``except``: the details of the complement
``plus``                   ``parts``: exact descriptions (each a dict with its ``kind``) whose
                           union is the mask but for ``entries``, up to three single indices
                           named on their own ("column 5 and one entry (10, 20)")
``scattered``              ``examples``: up to 10 indices (the only inexact kind)
=========================  ==================================================================

Every product-shaped kind (``single`` to ``product`` in the table) also carries
``index_sets``: one tuple of indices per axis whose product is exactly the mask.

Example:
    >>> import numpy as np
    >>> m = np.zeros((4, 5), bool); m[:, -1] = True
    >>> describe_layout(m).text
    'the last column (column 4)'
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

_MAX_LISTED = 6  # longer index lists are summarised ("9 rows (0, 2, 3, 5, 7, …)")
_N_EXAMPLES = 10
#: Single entries a description may name beside a structured part ("column 5 and one entry (10, 20)").
MAX_STRAYS = 3


@dataclass(frozen=True)
class LayoutDescription:
    """Words for where a mask's True entries sit, a machine kind and exact details.

    Example:
        >>> d = describe_layout(np.eye(3, dtype=bool))
        >>> d.kind, d.text, d.details["offset"]
        ('diagonal', 'the main diagonal', 0)
    """

    text: str
    kind: str
    details: dict[str, Any] = field(default_factory=dict, compare=False)

    def __str__(self) -> str:
        return self.text


def _join(values: list[int]) -> str:
    """``[1, 3, 6]`` -> ``"1, 3 and 6"``."""
    words = [str(v) for v in values]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _nouns(ndim: int, axis: int) -> tuple[str, str, str]:
    """(singular, plural, suffix) naming positions along ``axis``."""
    if ndim == 1:
        return "entry", "entries", ""
    if ndim == 2:
        return ("row", "rows", "") if axis == 0 else ("column", "columns", "")
    return "index", "indices", f" along axis {axis}"


def _phrase(idx: list[int], n: int, ndim: int, axis: int, in_product: bool
            ) -> tuple[str, str, dict[str, Any]] | None:
    """Describe a proper, non-empty index set along one axis: (text, shape, extra details).

    ``shape`` is "single", "run", "parity", "stride", "list" or "many".
    """
    sing, plural, suffix = _nouns(ndim, axis)
    if len(idx) == 1:
        i = idx[0]
        if i == n - 1 and not in_product:
            return f"the last {sing}{suffix} ({sing} {i})", "single", {}
        return f"{sing} {i}{suffix}", "single", {}
    if idx == list(range(idx[0], idx[-1] + 1)):
        lead = "a run of " if ndim == 1 else ""
        return f"{lead}{plural} {idx[0]}–{idx[-1]}{suffix}", "run", {}
    step, offset = idx[1] - idx[0], idx[0]
    # Three or more hits, running from the first possible position to the end: a period.
    if len(idx) >= 3 and offset < step and idx == list(range(offset, n, step)):
        if step == 2:
            parity = ("even", "odd")[offset]
            return f"{parity} {plural}{suffix}", "parity", {"parity": parity}
        text = f"every {_ordinal(step)} {sing}{suffix} from {sing} {offset}"
        return text, "stride", {"step": step, "offset": offset}
    if len(idx) <= _MAX_LISTED:
        return f"{plural} {_join(idx)}{suffix}", "list", {}
    head = ", ".join(str(i) for i in idx[:5])
    return f"{len(idx)} {plural}{suffix} ({head}, …)", "many", {}


def _product(arr: np.ndarray, allow_many: bool) -> LayoutDescription | None:
    """The mask as a product of one index set per axis, if it is one."""
    ndim = arr.ndim
    sets = [np.flatnonzero(arr.any(axis=tuple(a for a in range(ndim) if a != ax)))
            for ax in range(ndim)]
    rebuilt = np.zeros(arr.shape, bool)
    rebuilt[np.ix_(*sets)] = True
    if not np.array_equal(rebuilt, arr):
        return None
    index_sets = tuple(tuple(int(i) for i in s) for s in sets)
    base: dict[str, Any] = {"index_sets": index_sets}
    partial = [ax for ax in range(ndim) if len(sets[ax]) < arr.shape[ax]]
    phrases = []
    for ax in partial:
        ph = _phrase(list(index_sets[ax]), arr.shape[ax], ndim, ax, in_product=len(partial) > 1)
        assert ph is not None
        if ph[1] == "many" and not (allow_many and ndim >= 2):
            return None  # a long irregular list is not structure worth a name
        phrases.append(ph)
    if len(partial) == 1:
        ax = partial[0]
        text, shape, extra = phrases[0]
        if shape in ("parity", "stride"):
            kind = shape
        elif ndim == 1:
            kind = "run" if shape == "run" else "entries"
        else:
            kind = ("row", "column")[ax] if ndim == 2 else "slice"
        return LayoutDescription(text, kind, {**base, "axis": ax,
                                              "indices": index_sets[ax], **extra})
    joined = " × ".join(p[0] for p in phrases)
    if all(p[1] in ("single", "run") for p in phrases):
        start = tuple(s[0] for s in index_sets)
        stop = tuple(s[-1] + 1 for s in index_sets)
        return LayoutDescription(f"a block {joined}", "block",
                                 {**base, "start": start, "stop": stop})
    return LayoutDescription(f"a grid of {joined}", "product", base)


def _diagonal(arr: np.ndarray) -> LayoutDescription | None:
    """A (2-D) mask that is exactly one diagonal or anti-diagonal, if it is one."""
    if arr.ndim != 2:
        return None
    rows, cols = arr.shape
    for anti in (False, True):
        view = arr[:, ::-1] if anti else arr
        i, j = np.argwhere(view)[0]
        offset = int(j - i)
        if np.array_equal(view, np.eye(rows, cols, offset, dtype=bool)):
            what = "anti-diagonal" if anti else "diagonal"
            if offset == 0:
                text = f"the {what}" if anti else "the main diagonal"
            else:
                side = "above" if offset > 0 else "below"
                text = f"the {what} {abs(offset)} {side} the main one"
            return LayoutDescription(text, "diagonal", {"offset": offset, "anti": anti})
    return None


def _structured(arr: np.ndarray, allow_many: bool) -> LayoutDescription | None:
    """An exact description of a mask with 0 < count < size, or None."""
    if int(arr.sum()) == 1:
        index = tuple(int(i) for i in np.argwhere(arr)[0])
        if arr.ndim == 1:
            n, i = arr.shape[0], index[0]
            text = f"the last entry (entry {i})" if i == n - 1 else f"entry {i}"
        else:
            text = f"a single entry at {index}"
        return LayoutDescription(text, "single",
                                 {"index": index, "index_sets": tuple((i,) for i in index)})
    return _product(arr, allow_many) or _diagonal(arr)


def _full_slices(arr: np.ndarray, axis: int) -> np.ndarray:
    """The whole slices along ``axis`` that are True throughout, as a mask (2-D and up)."""
    others = tuple(a for a in range(arr.ndim) if a != axis)
    full = arr.all(axis=others)
    return np.broadcast_to(np.expand_dims(full, others), arr.shape)


def _cores(arr: np.ndarray) -> list[list[np.ndarray]]:
    """Candidate structured parts of a mask, each a list of masks whose union it describes:
    the whole slices along one axis; whole rows and whole columns together (2-D); the
    entries on lines (along every axis) holding two or more; the runs of three or more (1-D)."""
    if arr.ndim == 1:
        padded = np.concatenate(([False], arr, [False])).astype(np.int8)
        starts, stops = np.flatnonzero(np.diff(padded) == 1), np.flatnonzero(np.diff(padded) == -1)
        runs = np.zeros_like(arr)
        for a, b in zip(starts, stops):
            if b - a >= 3:
                runs[a:b] = True
        return [[runs]]
    full = [_full_slices(arr, ax) for ax in range(arr.ndim)]
    cores = [[m] for m in full]
    if arr.ndim == 2 and full[0].any() and full[1].any():
        cores.append([full[0], full[1]])
    dense = [arr.sum(axis=tuple(a for a in range(arr.ndim) if a != ax)) >= 2 for ax in range(arr.ndim)]
    on_lines = np.zeros(arr.shape, bool)
    on_lines[np.ix_(*dense)] = True
    cores.append([arr & on_lines])
    return cores


def _stray_words(entries: list[tuple[int, ...]], ndim: int) -> str:
    if ndim == 1:
        values = [e[0] for e in entries]
        return f"entry {values[0]}" if len(values) == 1 else f"entries {_join(values)}"
    words = [str(e) for e in entries]
    if len(words) == 1:
        return f"one entry {words[0]}"
    return "entries " + ", ".join(words[:-1]) + " and " + words[-1]


def _with_strays(arr: np.ndarray) -> LayoutDescription | None:
    """A structured part and at most :data:`MAX_STRAYS` single entries beside it, the part
    at least twice their number ("column 5 and one entry (10, 20)"), or whole rows and whole
    columns together ("row 3 and column 5"); exact, or None."""
    if arr.ndim == 0 or not arr.any():
        return None
    best: tuple[int, list[LayoutDescription], np.ndarray] | None = None
    for parts in _cores(arr):
        parts = [p for p in parts if p.any()]
        if not parts:
            continue
        core = np.logical_or.reduce(parts)
        rest = arr & ~core
        n_rest = int(rest.sum())
        if n_rest > MAX_STRAYS or (n_rest == 0 and len(parts) == 1) or int(core.sum()) < 2 * n_rest:
            continue
        found = [_structured(np.ascontiguousarray(p), allow_many=True) for p in parts]
        described = [d for d in found if d is not None]
        if len(described) < len(found) or (best is not None and n_rest >= best[0]):
            continue
        best = (n_rest, described, rest)
    if best is None:
        return None
    _, described, rest = best
    entries = [tuple(int(i) for i in ix) for ix in np.argwhere(rest)]
    words = [d.text for d in described] + ([_stray_words(entries, arr.ndim)] if entries else [])
    text = words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]
    parts_details = [{"kind": d.kind, **d.details} for d in described]
    return LayoutDescription(text, "plus", {"parts": parts_details, "entries": entries})


def _as_mask(mask: ArrayLike) -> np.ndarray:
    arr = np.asarray(mask)
    if arr.dtype != bool:
        if not np.isin(arr, (0, 1)).all():
            raise TypeError(f"mask must be boolean (or 0/1), got dtype {arr.dtype}")
        arr = arr.astype(bool)
    return arr


def describe_layout(mask: ArrayLike) -> LayoutDescription:
    """Describe in words where the True entries of ``mask`` (any ndim >= 0) sit.

    Tried in order: none, every entry, a single entry, a product of one index set per axis
    (rows / columns / slices, parities, strides, blocks, grids), a diagonal, everything except
    one of those, one of those (or whole rows and whole columns) with up to
    :data:`MAX_STRAYS` single entries beside it, and finally "scattered" (the only
    description that is not exact).

    Example:
        >>> m = np.zeros((6, 4), bool); m[1::2] = True
        >>> describe_layout(m).text
        'odd rows'
        >>> describe_layout(np.array([0, 0, 0, 1, 0, 1])).text
        'entries 3 and 5'
    """
    arr = _as_mask(mask)
    count, size = int(arr.sum()), int(arr.size)
    common = {"shape": tuple(int(s) for s in arr.shape), "count": count}

    def done(d: LayoutDescription) -> LayoutDescription:
        return LayoutDescription(d.text, d.kind, {**common, **d.details})

    if count == 0:
        return done(LayoutDescription("none", "none"))
    if count == size:
        return done(LayoutDescription("every entry", "all"))
    found = _structured(arr, allow_many=False)
    if found is not None:
        return done(found)
    # "all but a block" is far clearer than a long list of what remains.
    comp = _structured(~arr, allow_many=False)
    if comp is not None:
        what = comp.text
        if comp.kind == "single" and arr.ndim != 1:
            what = str(comp.details["index"])
        return done(LayoutDescription(f"every entry except {what}", "except",
                                      {"except_kind": comp.kind, "except": comp.details}))
    found = _structured(arr, allow_many=True) or _with_strays(arr)
    if found is not None:
        return done(found)
    comp = _with_strays(~arr)
    if comp is not None:
        return done(LayoutDescription(f"every entry except {comp.text}", "except",
                                      {"except_kind": comp.kind, "except": comp.details}))
    examples = tuple(tuple(int(i) for i in ix) for ix in np.argwhere(arr)[:_N_EXAMPLES])
    return done(LayoutDescription(f"scattered: {count} of {size} entries", "scattered",
                                  {"examples": examples}))


# -- parts of a flat input (a check of several tensors flattened into one) -------------------
#: Named parts: ``{"A": (k, m), "B": (k, n)}`` or a sequence of ``(name, shape)`` pairs.
PartsSpec = Mapping[str, Sequence[int]] | Sequence[tuple[str, Sequence[int]]]


def normalise_parts(parts: PartsSpec, size: int) -> list[tuple[str, tuple[int, ...]]]:
    """``{"A": (k, m), "B": (k, n)}`` (or a list of pairs) as ``[(name, shape), ...]``,
    checked to cover exactly ``size`` entries."""
    pairs = list(parts.items()) if isinstance(parts, Mapping) else list(parts)
    out = [(str(name), tuple(int(s) for s in shape)) for name, shape in pairs]
    total = sum(int(np.prod(s)) for _, s in out)
    if total != size:
        listed = ", ".join(f"{n} {s}" for n, s in out)
        raise ValueError(f"parts ({listed}) hold {total} entries, but the checked input has {size}")
    return out


def split_parts(array: np.ndarray, parts: PartsSpec) -> list[tuple[str, np.ndarray]]:
    """Consecutive pieces of ``array.ravel()``, each reshaped to its part's shape."""
    flat = np.asarray(array).reshape(-1)
    out, start = [], 0
    for name, shape in normalise_parts(parts, flat.size):
        stop = start + int(np.prod(shape))
        out.append((name, flat[start:stop].reshape(shape)))
        start = stop
    return out
