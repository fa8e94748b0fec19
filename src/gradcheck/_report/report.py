"""The result of one check: always returned, never a flag that changes its type.

:class:`Report` holds the data and answers questions about it (counts, status, entries,
worst, layout); its renderings are mixed in: text (``ReportText``, :mod:`.text`), JSON
(``ReportSerialize``, :mod:`.serialize`), HTML (``HtmlViews``, :mod:`.html`) and the PNG
heat map (``plot``, :mod:`.plot`).
"""
from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import InitVar, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from .._classify.rule import relative_error
from .._core import status as _status
from .._core.errors import GradientAssertionError
from .._core.judged import MEASURED
from .._core.sparse import SparseColumn
from .._core.verdict import FAILING, Cause, Verdict
from .html import HtmlViews
from .layout import LayoutDescription, describe_layout
from .plot import plot_report
from .serialize import ReportSerialize
from .text import ReportText

if TYPE_CHECKING:
    from .._core.config import Config

_VERDICT_BY_CODE = np.array(list(Verdict), dtype=object)


@dataclass(frozen=True, eq=False)
class Report(ReportText, ReportSerialize, HtmlViews, _status.PassedAsTruth):
    """Per-entry verdicts of one check, with everything needed to judge them.

    Arrays are shaped like the checked input: ``analytic`` (the claimed gradient),
    ``numeric`` (central difference, refined where a step study ran), ``noise``
    (estimated round-off of the numeric value), ``tolerance`` and ``codes`` (verdict
    codes; ``verdicts`` gives :class:`Verdict` members).

    The second look's values where they were measured (NaN elsewhere), shaped like ``x``:
    ``exact`` (the referee's exact derivative; ``digits`` its certified digits, -1
    elsewhere) and ``left``/``right`` (one-sided slopes where a kink test ran); ``causes``
    says how each verdict was reached. ``exact``, ``left`` and ``right`` are stored sparsely
    (only suspects get values); each is materialised when read, a new array of the input's
    size at each access (``measured_at`` reads one entry).

    ``status`` is ``"PASS"``, ``"FAIL"`` (a MISMATCH or NONFINITE entry, or a
    nondeterministic ``f``) or ``"INCONCLUSIVE"`` (no entry could be verified: not one
    PASS, e.g. all UNCHECKED because ``f`` returns bfloat16); ``passed`` is true for PASS
    only, and so is ``bool(report)``: ``assert report`` fails on FAIL and INCONCLUSIVE.
    ``gradcheck._core.status`` states the rule and its edge cases.

    Examples
    --------
    >>> import numpy as np, gradcheck
    >>> r = gradcheck.check(lambda x: (x**3).sum(), np.array([1.0, 2.0]), grad=lambda x: 3*x**2)
    >>> r.passed, r.counts[gradcheck.Verdict.PASS]
    (True, 2)
    """

    name: str
    analytic: np.ndarray
    numeric: np.ndarray
    noise: np.ndarray
    tolerance: np.ndarray
    codes: np.ndarray
    refined: np.ndarray
    dtype: str
    engine: str
    config: Config
    deterministic: bool = True
    drift: float = 0.0
    evaluations: int = 0
    seconds: float = 0.0
    notes: tuple[str, ...] = field(default_factory=tuple)
    # Second look (None when not recorded): how each verdict was reached (Cause codes), the
    # exact derivative and its certified digits where the referee ran (NaN / -1 elsewhere),
    # and one-sided slopes where a kink test ran. exact, left and right are init-only: they
    # are kept in ``measured`` (sparse) and read back through the properties of those names.
    causes: np.ndarray | None = None
    exact: InitVar[np.ndarray | SparseColumn | None] = None
    digits: np.ndarray | None = None
    left: InitVar[np.ndarray | SparseColumn | None] = None
    right: InitVar[np.ndarray | SparseColumn | None] = None
    adjudication: dict[str, Any] = field(default_factory=dict)
    # The dtype of f's output ("" when not recorded): says when low precision is why
    # nothing could be verified.
    output_dtype: str = ""
    # f's own unit round-off as measured, when it was far above its output dtype's (f computes
    # in lower precision inside, e.g. float32 in a float64 function); None otherwise.
    measured_roundoff: float | None = None
    # Screening (gradcheck.screen) only: per entry, the smallest error that would have been
    # found (inf where nothing was concluded); None for an entry-wise check.
    detection_limit: np.ndarray | None = None
    # The step study of each studied entry (at most 1000, failing verdicts first): index ->
    # (steps h, central differences D(h) at them). Empty when no entry was studied.
    step_study: dict[tuple[int, ...], tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    # The second look's measured values ("exact", "left", "right"; a name absent: not recorded),
    # shaped like x, as sparse columns: only the suspects have values.
    measured: dict[str, SparseColumn] = field(default_factory=dict)

    def __post_init__(self, exact: np.ndarray | SparseColumn | None, left: np.ndarray | SparseColumn | None,
                      right: np.ndarray | SparseColumn | None) -> None:
        given = {k: v for k, v in zip(MEASURED, (exact, left, right)) if v is not None}
        if given:  # Report(exact=array, ...): kept sparse like the pipeline's
            store = dict(self.measured)
            store.update({k: v if isinstance(v, SparseColumn) else SparseColumn.from_dense(v) for k, v in given.items()})
            object.__setattr__(self, "measured", store)

    def measured_at(self, name: str, index: tuple[int, ...]) -> float:
        """The second-look value ``name`` (``"exact"``, ``"left"`` or ``"right"``) at ``index``
        (a multi-index), NaN where not measured or not recorded; read from the sparse store,
        without the array of the report's size that ``report.exact`` (etc.) makes."""
        col = self.measured.get(name)
        return np.float64(np.nan) if col is None else col[index]

    # -- views ---------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.codes.shape)

    @property
    def size(self) -> int:
        return int(self.codes.size)

    @property
    def verdicts(self) -> np.ndarray:
        """Object array shaped like ``x`` holding :class:`Verdict` members."""
        return _VERDICT_BY_CODE[self.codes]

    @property
    def rel_error(self) -> np.ndarray:
        """The seed's relative error ``|a-n| / max(|a|, |n|, 1e-12)``."""
        return relative_error(self.analytic, self.numeric)

    @property
    def counts(self) -> dict[Verdict, int]:
        """Number of entries per verdict (every member present, zeros included)."""
        found = np.bincount(self.codes.reshape(-1), minlength=len(Verdict))
        return {v: int(found[v]) for v in Verdict}

    @property
    def status(self) -> str:
        """``"PASS"``, ``"FAIL"`` or ``"INCONCLUSIVE"`` (no entry could be verified)."""
        return _status.status_of(self.counts, self.size, self.deterministic)

    @property
    def passed(self) -> bool:
        """No MISMATCH, no NONFINITE, a deterministic function, and at least one entry
        verified (``status == "PASS"``)."""
        return self.status == _status.PASS

    @property
    def reason(self) -> str:
        """Why nothing could be verified, and the ways out ("" unless INCONCLUSIVE)."""
        if self.status != _status.INCONCLUSIVE:
            return ""
        why, way_out = _status.why_nothing_verified(self)
        return f"{why}. Way out: {way_out}"

    def entries(self, verdict: Verdict | Iterable[Verdict]) -> list[tuple[int, ...]]:
        """Multi-indices (row-major order) of the entries with this verdict (or these)."""
        wanted = [verdict] if isinstance(verdict, Verdict) else list(verdict)
        mask = np.isin(self.codes, np.array([int(v) for v in wanted], dtype=np.uint8))
        return [tuple(int(i) for i in ix) for ix in np.argwhere(mask)]

    @functools.cached_property
    def layout(self) -> LayoutDescription:
        """Where the MISMATCH entries sit, in words: a
        :class:`~gradcheck._report.layout.LayoutDescription` such as "the last column (column 4)"
        or "column 5 and one entry (10, 20)" (its text is ``"none"`` when nothing mismatches)."""
        return describe_layout(self.codes == Verdict.MISMATCH)

    def cause(self, index: tuple[int, ...]) -> Cause:
        """How the verdict of the entry at ``index`` was reached."""
        return Cause(int(self.causes[index])) if self.causes is not None else Cause.FIRST_PASS

    def excess(self) -> np.ndarray:
        """``|a - n| / tolerance``: above 1 means outside tolerance."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.abs(self.analytic - self.numeric) / self.tolerance

    def rank(self, flat: ArrayLike | None = None, first: int | None = None) -> np.ndarray:
        """Flat indices (of every entry, or of ``flat``) from the most to the least severe:
        failing verdicts first, then by how far each entry is beyond its tolerance (err/tol),
        SCREENED entries last. An entry the layout names on its own beside a pattern ("column 5
        and one entry (10, 20)") comes right after the worst entry: a stray bug is not buried
        under the pattern's many entries. ``first``: only the first ``first`` of that order (the
        same indices as ``rank(flat)[:first]``, without sorting the whole report)."""
        codes = self.codes.reshape(-1)
        idx = np.arange(codes.size) if flat is None else np.asarray(flat, dtype=np.int64).reshape(-1)
        ex = np.nan_to_num(self.excess().reshape(-1)[idx], nan=np.inf, posinf=np.inf)
        ex[codes[idx] == Verdict.SCREENED] = -np.inf  # screening: never looked at alone, listed last
        failing = np.isin(codes[idx], [int(v) for v in FAILING])
        layout = self.layout if self.counts[Verdict.MISMATCH] else None
        strays = None
        if layout is not None and layout.kind == "plus" and idx.size > 1:
            strays = np.array([np.ravel_multi_index(ix, self.shape) for ix in layout.details["entries"]], np.int64)
        keep = None if first is None or first < 0 else _leading(ex, failing, first + 1 + (0 if strays is None else strays.size))
        if keep is not None:  # a subset in idx's order: the sort's ties fall as in the whole order
            if strays is not None:
                keep |= np.isin(idx, strays)
            idx, ex, failing = idx[keep], ex[keep], failing[keep]
        order = idx[np.lexsort((-ex, ~failing))]
        if strays is not None and order.size > 1:
            named = np.isin(order, strays)
            named[0] = False  # the worst entry stays first
            order = np.concatenate([order[:1], order[named], order[1:][~named[1:]]])
        return order if first is None else order[:first]

    def worst(self, count: int = 10) -> list[tuple[int, ...]]:
        """Multi-indices of the ``count`` most severe entries, in the order of :meth:`rank`."""
        return [tuple(int(i) for i in np.unravel_index(j, self.shape)) for j in self.rank(first=count)]

    # -- judging -------------------------------------------------------------------
    def assert_pass(self, *, allow_unchecked: bool | None = None) -> Report:
        """Raise :class:`GradientAssertionError` (an AssertionError) unless the check passed.

        ``allow_unchecked``: ``None`` (the default) accepts UNCHECKED entries beside
        verified ones but fails an INCONCLUSIVE check (no entry verified), saying why and
        the way out; ``True`` also accepts an INCONCLUSIVE check; ``False`` fails on any
        UNCHECKED entry (nothing proven there). A FAIL always raises.
        Returns the report, so it can be chained.
        """
        refused = _status.refusal(self.status, self.counts[Verdict.UNCHECKED], allow_unchecked)
        if refused:
            raise GradientAssertionError(f"{refused}\n{self}", self)
        return self

    # -- rendering: text (summary, table, str) in .text, JSON in .serialize, HTML in .html ------
    def __repr__(self) -> str:
        # One line, the summary: what pytest shows for a failed ``assert report``
        # (``bool(report)`` is ``report.passed``: gradcheck._core.status.PassedAsTruth).
        return f"<Report {self.summary()}>"

    def plot(self, path: str | Path, **options: Any) -> Path:
        """Write a PNG heat map of the verdicts and relative errors to ``path`` (returned as
        a ``Path``); ``parts=`` and ``title=`` as in :func:`gradcheck._report.plot.plot_report`.
        Needs matplotlib: ``pip install "gradcheck[plot]"``."""
        return plot_report(self, path, **options)


def _leading(ex: np.ndarray, failing: np.ndarray, count: int) -> np.ndarray | None:
    """A mask holding the ``count`` entries first in the order failing, then largest ``ex``
    (ties at the boundary included), or None when that is about everything (sort it all)."""
    if count >= ex.size // 4:
        return None
    n_failing = int(failing.sum())
    if count <= n_failing:
        among = ex[failing]
        return failing & (ex >= np.partition(among, among.size - count)[among.size - count])
    others = ex[~failing]
    rest = count - n_failing
    return failing | (ex >= np.partition(others, others.size - rest)[others.size - rest])


def _materialised(name: str) -> property:
    def read(self: Report) -> np.ndarray | None:
        col = self.measured.get(name)
        return None if col is None else col.full()

    read.__doc__ = (f"``{name}`` shaped like ``x`` (NaN where not measured), or None when not recorded: "
                    "stored sparsely, materialised when read (a new array at each access).")
    return property(read)


# Properties, not dataclass fields: exact=, left=, right= are the init-only values the report
# stores sparsely (a property in the class body would become the InitVars' default).
for _name in MEASURED:
    setattr(Report, _name, _materialised(_name))
