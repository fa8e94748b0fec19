"""Shape sweeps: one check per shape, which shapes fail, the rule that says so, and where.

A gradient bug often lives only in some shapes (a transposed matmul wrong only when two
dimensions are both odd) and only in part of the tensor (its last column). A single check
at a single shape misses the first kind most of the time. :func:`shape_sweep` runs a full
check at every shape of a list or a :func:`grid`, asks :func:`find_shape_rule` for the
simplest rule over shape features that separates failing from passing shapes, and
describes where in the tensor each failing shape's mismatches sit.

Example:
    >>> import numpy as np
    >>> from gradcheck import shape_sweep, grid
    >>> def f(x): return (x ** 3).sum()
    >>> def grad(x):                       # wrong whenever the last dimension is even
    ...     g = 3 * x ** 2
    ...     if x.shape[-1] % 2 == 0:
    ...         g[:, -1] = 0.0
    ...     return g
    >>> sweep = shape_sweep(f, grid(m=range(1, 4), n=range(1, 5)),
    ...                     lambda s: np.linspace(1, 2, s[0] * s[1]).reshape(s), grad)
    >>> str(sweep.rule)
    'n is even (exact: 6 of 12 shapes fail)'
    >>> sweep.result((2, 4)).where
    'the last column (column 3)'
"""
from __future__ import annotations

import itertools
import re
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .._core import arguments as _arguments
from .._core import status as _status
from .._core.config import Config, as_config
from .._core.errors import GradientAssertionError
from .._core.verdict import Verdict
from .._evaluate import RUNNER_NAMES as ENGINE_NAMES
from .._pipeline.check import check
from .._report.html import HtmlViews
from .._report.layout import LayoutDescription, PartsSpec, describe_layout, split_parts
from .._report.next_step import next_steps
from .._report.plot import plot_sweep
from .pattern import ShapeRule, find_shape_rule

if TYPE_CHECKING:
    from .._report.report import Report

Shape = tuple[int, ...]
Parts = Callable[[Shape], "Mapping[str, Sequence[int]] | Sequence[tuple[str, Sequence[int]]]"]

KEEP_CHOICES = ("failing", "all", "none")
_LISTED_SHAPES = 16   # failing shapes listed in str(); the rest are counted
_WHERE_GROUPS = 6     # distinct "where" phrases in str()'s table; the rest are counted
_EXAMPLES = 3         # example shapes per "where" phrase


class Grid(Sequence):
    """Every combination of the values of each axis, as a sequence of shape tuples.

    Built by :func:`grid`; remembers its axes (and their names) so reports and plots can
    lay shapes out along them.

    Example:
        >>> g = grid(m=range(1, 3), n=(4, 8))
        >>> list(g), g.dim_names
        ([(1, 4), (1, 8), (2, 4), (2, 8)], ('m', 'n'))
    """

    def __init__(self, axes: Sequence[Sequence[int]], dim_names: Sequence[str] | None = None):
        if isinstance(axes, (str, bytes)) or any(isinstance(ax, (str, bytes)) for ax in axes):
            raise TypeError(f"grid axes are sizes (iterables of ints), got {axes!r}")
        self.axes: tuple[tuple[int, ...], ...] = tuple(
            tuple(_arguments.integer(f"grid axis {i}", v, minimum=0, meaning=" (a size)") for v in ax)
            for i, ax in enumerate(axes))
        if not self.axes or any(not ax for ax in self.axes):
            raise ValueError("grid needs at least one axis, and every axis at least one value")
        self.dim_names = tuple(dim_names) if dim_names is not None else None
        if self.dim_names is not None and len(self.dim_names) != len(self.axes):
            raise ValueError(f"{len(self.dim_names)} names for {len(self.axes)} axes")
        self._shapes = list(itertools.product(*self.axes))

    def __len__(self) -> int:
        return len(self._shapes)

    def __getitem__(self, i):  # type: ignore[override]
        return self._shapes[i]

    def __iter__(self) -> Iterator[Shape]:
        return iter(self._shapes)

    def __repr__(self) -> str:
        names = self.dim_names or tuple(f"d{i}" for i in range(len(self.axes)))
        spans = ", ".join(f"{n}={_span(ax)}" for n, ax in zip(names, self.axes))
        return f"grid({spans})"


def _span(values: tuple[int, ...]) -> str:
    if len(values) > 2 and values == tuple(range(values[0], values[-1] + 1)):
        return f"{values[0]}..{values[-1]}"
    return "(" + ", ".join(map(str, values)) + ")"


def grid(*axes: Iterable[int], **named_axes: Iterable[int]) -> Grid:
    """Every shape whose i-th dimension takes each value of the i-th axis.

    Give the axes positionally (dimensions named ``d0, d1, ...``) or by keyword (named in
    order; the names then appear in rules, tables and plots), not both.

    Parameters
    ----------
    *axes : iterable of int
        The values of each dimension, in order (dimensions named ``d0, d1, ...``).
    **named_axes : iterable of int
        The same, by name: ``grid(m=range(1, 9), n=(16, 32))``.

    Returns
    -------
    Grid
        The shapes, in order (the last dimension varies fastest), with the dimension names;
        pass it to :func:`shape_sweep`.

    Raises
    ------
    TypeError
        Axes given both positionally and by name.
    ValueError
        No axis, or an axis without values.

    Examples
    --------
    >>> len(grid(m=range(1, 9), k=range(1, 9), n=range(1, 9)))
    512
    >>> list(grid(m=(1, 2), n=(3,)))
    [(1, 3), (2, 3)]
    """
    if axes and named_axes:
        raise TypeError("give grid axes either positionally or by name, not both")
    if named_axes:
        return Grid([tuple(ax) for ax in named_axes.values()], tuple(named_axes))
    return Grid([tuple(ax) for ax in axes])


@dataclass(frozen=True, eq=False)
class ShapeResult:
    """The outcome of the check at one shape, kept compactly.

    ``status`` is the check's ``"PASS"``, ``"FAIL"`` or ``"INCONCLUSIVE"`` (no entry
    verified; ``passed`` is then False, but the shape does not *fail*: ``failed`` is False).
    ``counts`` maps verdict names to their (non-zero) counts; ``layout`` describes where
    the MISMATCH entries sit (``None`` when there are none); ``part_layouts`` does so per
    named part when the sweep was given ``parts``; ``report`` is the full :class:`Report`
    when the sweep kept it (by default, for failing shapes only).
    """

    shape: Shape
    passed: bool
    size: int
    counts: dict[str, int]
    engine: str
    evaluations: int
    seconds: float
    layout: LayoutDescription | None
    part_layouts: tuple[tuple[str, LayoutDescription], ...] = ()
    report: Any = None
    status: str = ""

    @property
    def failed(self) -> bool:
        """Whether the check at this shape found something wrong (status FAIL)."""
        return self.status == _status.FAIL if self.status else not self.passed

    @property
    def mismatches(self) -> int:
        return self.counts.get(Verdict.MISMATCH.name, 0)

    @property
    def where(self) -> str:
        """Where the mismatches sit, in words ("" when there are none).

        With parts: ``"A: the last column (column 2); B: the last column (column 4)"``.
        """
        if self.part_layouts:
            return "; ".join(f"{name}: {d.text}" for name, d in self.part_layouts)
        if self.layout is not None:
            return self.layout.text
        if not self.passed:
            other = ", ".join(f"{n} {v}" for v, n in self.counts.items() if v != Verdict.PASS.name)
            return f"no MISMATCH ({other})"
        return ""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "shape": list(self.shape), "status": self.status, "passed": self.passed, "size": self.size,
            "counts": dict(self.counts), "engine": self.engine,
            "evaluations": self.evaluations, "seconds": self.seconds,
        }
        if self.layout is not None:
            out["where"] = self.where
            out["layout_kind"] = self.layout.kind
            if self.part_layouts:
                out["parts"] = {name: {"text": d.text, "kind": d.kind} for name, d in self.part_layouts}
        return out


def _wrap_items(items: list[str], first: str, indent: str, width: int = 96) -> list[str]:
    """Comma-separated items on lines of at most ``width`` characters, never split."""
    lines, current = [], first
    for k, item in enumerate(items):
        piece = item + ("," if k + 1 < len(items) else "")
        if len(current) + len(piece) + 1 > width and current.strip():
            lines.append(current.rstrip())
            current = indent
        current += piece + " "
    lines.append(current.rstrip())
    return lines


def _normalise_where(text: str) -> str:
    """Drop the indices that differ from shape to shape, so shapes can be grouped:
    "the last column (column 4)" -> "the last column", "a single entry at (0, 2)" ->
    "a single entry"."""
    text = re.sub(r" \((?:entry|row|column|index) \d+[^)]*\)", "", text)
    return re.sub(r"a single entry at \([\d, ]*\)", "a single entry", text)


@dataclass(frozen=True, eq=False)
class SweepReport(HtmlViews, _status.PassedAsTruth):
    """The checks of a shape sweep: which shapes fail, the rule, and where they fail.

    ``results`` holds one :class:`ShapeResult` per shape, in sweep order. ``rule`` is the
    :class:`~gradcheck._sweeps.pattern.ShapeRule` that separates failing from passing shapes
    (``rule.found`` is False for "no simple rule"); it is ``None`` only when the shapes do
    not all have the same number of dimensions.

    Examples
    --------
    >>> import numpy as np, gradcheck
    >>> grad = lambda x: 2 * x + (x.size == 3)              # wrong at length 3 only
    >>> sweep = gradcheck.shape_sweep(lambda x: (x * x).sum(), [(n,) for n in range(1, 6)],
    ...                               lambda s: np.linspace(0.5, 1.5, s[0]), grad, adjudicate=False)
    >>> [r.shape for r in sweep.results if r.failed]
    [(3,)]
    """

    name: str
    results: tuple[ShapeResult, ...]
    dim_names: tuple[str, ...]
    rule: ShapeRule | None
    seconds: float
    axes: tuple[tuple[int, ...], ...] | None = None
    parts: Parts | None = None

    # -- views ---------------------------------------------------------------------
    @property
    def shapes(self) -> list[Shape]:
        return [r.shape for r in self.results]

    @property
    def failed(self) -> list[Shape]:
        """The failing shapes (status FAIL), in sweep order: the rule separates these."""
        return [r.shape for r in self.results if r.failed]

    @property
    def inconclusive(self) -> list[Shape]:
        """The shapes whose check verified nothing (status INCONCLUSIVE), in sweep order."""
        return [r.shape for r in self.results if r.status == _status.INCONCLUSIVE]

    @property
    def n_total(self) -> int:
        return len(self.results)

    @property
    def n_failed(self) -> int:
        return sum(r.failed for r in self.results)

    @property
    def status(self) -> str:
        """``"FAIL"`` if any shape fails, else ``"INCONCLUSIVE"`` if any shape verified
        nothing (that shape was never checked), else ``"PASS"``."""
        return _status.combine(r.status or ("PASS" if r.passed else "FAIL") for r in self.results)

    @property
    def passed(self) -> bool:
        return self.status == _status.PASS

    @property
    def counts(self) -> dict[str, int]:
        """Entry verdicts summed over every shape (non-zero counts only)."""
        total: Counter[str] = Counter()
        for r in self.results:
            total.update(r.counts)
        return {v.name: total[v.name] for v in Verdict if total[v.name]}

    @property
    def engines(self) -> dict[str, int]:
        """How many shapes each engine checked."""
        return dict(Counter(r.engine for r in self.results))

    def result(self, shape: Sequence[int]) -> ShapeResult:
        """The result at ``shape`` (KeyError listing a few swept shapes if it was not swept)."""
        key = tuple(int(s) for s in shape)
        for r in self.results:
            if r.shape == key:
                return r
        raise KeyError(f"shape {key} was not swept; swept e.g. {self.shapes[:5]}")

    def report(self, shape: Sequence[int]) -> Report:
        """The full :class:`Report` at ``shape`` (kept for failing shapes by default)."""
        r = self.result(shape)
        if r.report is None:
            raise KeyError(f"the report at {r.shape} was not kept (shape_sweep(..., keep='all') keeps every one)")
        return r.report

    def where_groups(self) -> list[tuple[str, list[Shape]]]:
        """The failing shapes grouped by where their mismatches sit (the indices that vary
        with the shape dropped), largest group first:
        ``[("A: the last column; B: the last column", [(3, 2, 3), ...]), ...]``."""
        groups: dict[str, list[Shape]] = {}
        for r in self.results:
            if r.failed:
                groups.setdefault(_normalise_where(r.where), []).append(r.shape)
        return sorted(groups.items(), key=lambda item: -len(item[1]))

    # -- judging -------------------------------------------------------------------
    def assert_all_pass(self, *, allow_unchecked: bool | None = None) -> SweepReport:
        """Raise :class:`GradientAssertionError` (an AssertionError) unless every shape
        passed; the message is the sweep's table. Returns the sweep otherwise.

        ``allow_unchecked``: ``None`` (default) also raises when a shape verified nothing
        (INCONCLUSIVE); ``True`` accepts such shapes; ``False`` raises on any UNCHECKED
        entry at any shape."""
        unchecked = sum(r.counts.get(Verdict.UNCHECKED.name, 0) for r in self.results)
        refused = _status.refusal(self.status, unchecked, allow_unchecked)
        if refused:
            raise GradientAssertionError(f"shape sweep: {refused}\n{self}", self)
        return self

    # -- rendering -----------------------------------------------------------------
    def summary(self) -> str:
        dims = "(" + ", ".join(self.dim_names) + ")"
        text = f"{self.name}: {self.status} -- {self.n_failed} of {self.n_total} shapes {dims} fail"
        unsure = len(self.inconclusive)
        return text + (f"; {unsure} verified nothing" if unsure else "")

    def __str__(self) -> str:
        lines = [self.summary()]
        if self.rule is None:
            lines.append("  rule: none sought (the shapes do not all have the same number of dimensions)")
        else:
            lines.append(f"  rule: {self.rule}")
            if self.rule.found and self.rule.alternatives:
                lines.append("  equally good on these shapes: " + "; ".join(self.rule.alternatives))
        counts = ", ".join(f"{n} {v}" for v, n in self.counts.items())
        engines = ", ".join(f"{e} ({n})" for e, n in self.engines.items())
        entries = sum(r.size for r in self.results)
        lines.append(f"  {entries} entries checked: {counts or 'none'}; engine {engines}; "
                     f"{self.n_total} checks in {self.seconds:.3g} s")
        groups = self.where_groups()
        if groups:
            lines.append(f"  {'shapes':>6}  where the mismatches sit   e.g. ({', '.join(self.dim_names)})")
            # a lone extra group is shown rather than counted as "1 other layout"
            shown = groups if len(groups) <= _WHERE_GROUPS + 1 else groups[:_WHERE_GROUPS]
            width = max(len(text) for text, _ in shown)
            for text, members in shown:
                examples = ", ".join(str(s) for s in members[:_EXAMPLES])
                lines.append(f"  {len(members):>6}  {text:<{width}}   {examples}")
            if len(shown) < len(groups):
                rest = sum(len(m) for _, m in groups[len(shown):])
                lines.append(f"  {rest:>6}  in {len(groups) - len(shown)} other layouts")
            failed = self.failed
            items = [str(s) for s in failed[:_LISTED_SHAPES]]
            if len(failed) > _LISTED_SHAPES:
                items.append(f"... ({len(failed) - _LISTED_SHAPES} more: .failed lists all)")
            lines += _wrap_items(items, "  failing shapes: ", "    ")
        lines += self._inconclusive_lines()
        lines += [f"  next: {step}" for step in next_steps(self)]
        return "\n".join(lines)

    def _inconclusive_lines(self) -> list[str]:
        unsure = [r for r in self.results if r.status == _status.INCONCLUSIVE]
        if not unsure:
            return []
        items = [str(r.shape) for r in unsure[:_LISTED_SHAPES]]
        if len(unsure) > _LISTED_SHAPES:
            items.append(f"... ({len(unsure) - _LISTED_SHAPES} more: .inconclusive lists all)")
        lines = _wrap_items(items, f"  {_status.NOTHING_VERIFIED} at: ", "    ")
        kept = next((r for r in unsure if r.report is not None), None)
        if kept is not None:  # the reports are kept for failing and inconclusive shapes by default
            why, way_out = _status.why_nothing_verified(kept.report)
            lines += [f"  e.g. at {kept.shape}: {why}", f"  way out: {way_out}"]
        return lines

    def __repr__(self) -> str:
        return f"<SweepReport {self.summary()}>"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: counts, the rule, and one compact entry per shape."""
        rule = None
        if self.rule is not None:
            rule = {"text": self.rule.text, "found": self.rule.found, "exact": self.rule.exact,
                    "accuracy": self.rule.accuracy, "kind": self.rule.kind,
                    "alternatives": list(self.rule.alternatives),
                    "best_candidate": self.rule.best_candidate, "str": str(self.rule)}
        return {
            "name": self.name, "status": self.status, "passed": self.passed,
            "dim_names": list(self.dim_names), "inconclusive": [list(s) for s in self.inconclusive],
            "n_total": self.n_total, "n_failed": self.n_failed, "counts": self.counts,
            "engines": self.engines, "seconds": self.seconds, "rule": rule,
            "where_groups": [{"where": w, "shapes": [list(s) for s in members]}
                             for w, members in self.where_groups()],
            "failed": [list(s) for s in self.failed],
            "shapes": [r.to_dict() for r in self.results],
        }

    def plot(self, path: str | Path, **options: str | int | None) -> Path:
        """Write a PNG grid of which shapes fail (see :func:`gradcheck._report.plot.plot_sweep`
        for ``rows=``, ``cols=``, ``panels=``); needs matplotlib (``gradcheck[plot]``)."""
        return plot_sweep(self, path, **options)


# -- parts of a flat input ---------------------------------------------------------
def _part_layouts(mask: np.ndarray, parts: PartsSpec) -> tuple[tuple[str, LayoutDescription], ...]:
    return tuple((name, describe_layout(piece)) for name, piece in split_parts(mask, parts)
                 if piece.any())


# -- the sweep ---------------------------------------------------------------------
def _as_shapes(shapes: Any) -> list[Shape]:
    out = []
    for s in shapes:
        t = (int(s),) if np.isscalar(s) else tuple(int(d) for d in s)  # type: ignore[arg-type]
        out.append(t)
    if not out:
        raise ValueError("shape_sweep needs at least one shape")
    return out


def _subject_at(f: Any, grad: Any, shape: Shape, factory: bool) -> tuple[Any, Any]:
    if not factory:
        return f, grad
    made = f(shape)
    if isinstance(made, tuple):
        if len(made) != 2:
            raise TypeError(f"the factory returned a tuple of {len(made)} items at shape {shape}; "
                            "return f, or the pair (f, grad)")
        if grad is not None:
            raise TypeError("the factory returned (f, grad) and grad= was given too; use one")
        return made
    return made, (grad(shape) if grad is not None else None)


def shape_sweep(
    f: Callable[..., Any],
    shapes: Iterable[Sequence[int] | int],
    make_input: Callable[[Shape], Any],
    grad: Any = None,
    *,
    factory: bool = False,
    config: Config | None = None,
    engine: str = "auto",
    backend: Any = None,
    vectorized: bool = False,
    dim_names: Sequence[str] | None = None,
    parts: Parts | None = None,
    name: str | None = None,
    keep: str = "failing",
    adjudicate: bool | str = "auto",
) -> SweepReport:
    """Check the claimed gradient at every shape, find which shapes fail and why.

    ``shapes`` is a list of shape tuples (ints for 1-D) or a :func:`grid`.
    ``make_input(shape)`` returns the input ``x`` to check at that shape.

    Parameters
    ----------
    f : callable
        How the function is given is an explicit flag, never guessed. With ``factory=False``
        (default), ``f`` is the function, the same at every shape. With ``factory=True``,
        ``f(shape)`` builds the function for that shape and returns it, or the pair
        ``(function, grad)``: use it for kernels that take their dimensions as parameters,
        e.g. ``lambda s: (nf := native_function("matmul_tn", iparams=s), nf.gradient)``.
    shapes : iterable of tuple of int, or Grid
        The shapes to check (ints for 1-D), or a :func:`grid`.
    make_input : callable
        ``make_input(shape)`` returns the input ``x`` to check at that shape.
    grad : callable, optional
        The claimed gradient ``grad(x)`` (or VJP ``grad(x, v)``), or None for the backend's
        own gradient; with ``factory=True`` a factory too, ``grad(shape) -> claim``.
    factory : bool, default False
        ``f`` (and ``grad``) build the function for each shape (above).
    config : Config, optional
        Passed to :func:`gradcheck.check` unchanged.
    engine : str, default "auto"
        Passed to :func:`gradcheck.check` (``"auto"``: the fastest engine that applies, per
        shape).
    backend : str or backend object, optional
        Passed to :func:`gradcheck.check` unchanged.
    vectorized : bool, default False
        Passed to :func:`gradcheck.check` unchanged.
    dim_names : sequence of str, optional
        Names of the dimensions in the rule and the table (a named :func:`grid` supplies them).
    parts : callable, optional
        ``parts(shape)`` names consecutive pieces of a flat input with their shapes, e.g.
        ``{"A": (k, m), "B": (k, n)}``, so the layout is described per piece ("A: the last
        column; B: the last column") rather than on the flat vector.
    name : str, optional
        What the report calls the function.
    keep : {"failing", "all", "none"}, default "failing"
        Which full reports to keep: the shapes that did not pass (inconclusive ones
        included), all, or none.
    adjudicate : {"auto", True, False}, default "auto"
        Passed to :func:`gradcheck.check` unchanged.

    Returns
    -------
    SweepReport
        One result per shape, the rule that separates failing from passing shapes, and
        where the mismatches sit; ``.assert_all_pass()`` in a test.

    Raises
    ------
    ValueError
        No shape, an unknown ``keep`` or ``engine``, or ``dim_names`` that do not fit the shapes.
    TypeError
        A factory that returns something other than a function or ``(function, grad)``, a
        ``grad`` given twice, or ``parts``/``grad`` that are not functions.
    GradcheckError
        As :func:`gradcheck.check` raises at a shape (a function that raises, a claim of
        the wrong shape, ...).

    Examples
    --------
    >>> import numpy as np, gradcheck
    >>> def grad(x):  # wrong in the last entry whenever the length is even
    ...     g = 2 * x
    ...     if x.size % 2 == 0:
    ...         g[-1] += 1.0
    ...     return g
    >>> sweep = gradcheck.shape_sweep(lambda x: (x * x).sum(), [(n,) for n in range(1, 9)],
    ...                               lambda s: np.linspace(0.5, 1.5, s[0]), grad,
    ...                               dim_names=("n",), adjudicate=False)
    >>> str(sweep.rule)
    'n is even (exact: 4 of 8 shapes fail)'
    """
    _arguments.choice("keep", keep, KEEP_CHOICES)
    config, adjudicate = as_config(config), _arguments.as_adjudicate(adjudicate)
    factory, vectorized = bool(_arguments.flag("factory", factory)), bool(_arguments.flag("vectorized", vectorized))
    engine, name = _arguments.choice("engine", engine, ENGINE_NAMES), _arguments.text("name", name)
    if parts is not None and not callable(parts):
        raise TypeError(f"parts must be a function parts(shape) -> {{name: shape}} or None, got "
                        f"{type(parts).__name__}")
    if not factory and grad is not None and not callable(grad):
        raise TypeError("grad must be a function grad(x) (one array cannot be the gradient at "
                        "every shape); with factory=True it is a factory grad(shape)")
    shape_list = _as_shapes(shapes)
    axes = shapes.axes if isinstance(shapes, Grid) else None
    ndims = {len(s) for s in shape_list}
    ndim = ndims.pop() if len(ndims) == 1 else None
    names = _dim_names(dim_names, shapes, ndim)
    label = _arguments.label_of(f, name)

    started = time.perf_counter()
    results = []
    for shape in shape_list:
        try:
            fn, g = _subject_at(f, grad, shape, factory)
            x = make_input(shape)
            report = check(fn, x, g, config=config, name=f"{label} at {shape}", backend=backend,
                           engine=engine, vectorized=vectorized, adjudicate=adjudicate)
        except Exception as exc:
            if hasattr(exc, "add_note"):  # Python >= 3.11
                exc.add_note(f"gradcheck.shape_sweep: while checking shape {shape}")
            raise
        results.append(_compact(shape, report, parts, keep))
    seconds = time.perf_counter() - started

    rule = None
    if ndim is not None:
        rule = find_shape_rule(shape_list, [r.failed for r in results], dim_names=names)
    return SweepReport(label, tuple(results), names, rule, seconds, axes, parts)


def _dim_names(dim_names: Sequence[str] | None, shapes: Iterable[Sequence[int] | int], ndim: int | None) -> tuple[str, ...]:
    if dim_names is None and isinstance(shapes, Grid):
        dim_names = shapes.dim_names
    if dim_names is None:
        return tuple(f"d{i}" for i in range(ndim or 0))
    if not isinstance(dim_names, (str, list, tuple)) or not all(isinstance(n, str) for n in dim_names):
        raise TypeError(f"dim_names must be names (a list of str, or one str of one-letter names), one per "
                        f"dimension, or None, got {dim_names!r}")
    names = tuple(dim_names)
    if ndim is not None and len(names) != ndim:
        raise ValueError(f"{len(names)} dim_names {names} for shapes of {ndim} dimensions")
    return names


def _compact(shape: Shape, report: Any, parts: Parts | None, keep: str) -> ShapeResult:
    mismatch = report.codes == Verdict.MISMATCH
    layout = part_layouts = None
    if mismatch.any():
        layout = describe_layout(mismatch)
        if parts is not None:
            part_layouts = _part_layouts(mismatch, parts(shape))
    counts = {v.name: n for v, n in report.counts.items() if n}
    kept = keep == "all" or (keep == "failing" and not report.passed)
    return ShapeResult(shape, report.passed, report.size, counts, report.engine,
                       report.evaluations, report.seconds, layout, part_layouts or (),
                       report if kept else None, report.status)
