"""Which shapes fail? The simplest rule over shape features that says so.

A shape sweep ends with a list of shapes and, for each, whether its gradient check failed.
:func:`find_shape_rule` states the simplest rule of a small grammar that separates the failing
shapes from the passing ones, or admits that there is none.

Grammar
-------
Features of one dimension ``d`` (in this order, for each dimension in turn):
``d is odd``, ``d is even``, ``d == 1``, ``d > 1``, ``d is a multiple of 4``,
``d is not a multiple of 4``, and the same two for 8 and 16.
Features of two dimensions ``a`` before ``b`` (after all one-dimension features, pairs in
order): ``a == b``, ``a != b``, ``a < b``, ``a > b``, ``a <= b``, ``a >= b``.

Rules, in simplicity order: the constants ("no shape fails", then "every shape fails"), one
feature, two features joined by AND, two features joined by OR. Within a level, ties go to the
earlier feature (then the earlier second feature) in the order above. Features that are constant
on the data are dropped; features that coincide on the data are merged and named by the
earliest (the others are listed in ``alternatives``).

Convincing
----------
An exact rule (accuracy 1.0) is always returned. Otherwise the most accurate non-constant rule
is returned only if it is convincing, i.e. all of:

* accuracy >= ``MIN_ACCURACY`` (0.97),
* it predicts failure for at least ``MIN_RECALL`` (90%) of the failing shapes,
* it makes at most ``MAX_ERROR_RATIO`` (25%) as many mistakes as the majority classifier
  ("no shape fails" or "every shape fails", whichever is right more often).

The last condition is what keeps a random 10% labeling from being "explained" by a rule that
merely predicts "no shape fails" for nearly everything. Otherwise :meth:`ShapeRule.none` is
returned: text "no simple rule", carrying the best candidate's text and accuracy.

Example:
    >>> shapes = [(m, k, n) for m in range(1, 9) for k in range(1, 9) for n in range(1, 9)]
    >>> failed = [m % 2 == 1 and n % 2 == 1 for m, k, n in shapes]
    >>> str(find_shape_rule(shapes, failed, dim_names=("m", "k", "n")))
    'm is odd and n is odd (exact: 128 of 512 shapes fail)'
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

MIN_ACCURACY = 0.97
MIN_RECALL = 0.90
MAX_ERROR_RATIO = 0.25
_MAX_ALTERNATIVES = 4

_PAIR_OPS = {
    "==": np.equal, "!=": np.not_equal, "<": np.less,
    ">": np.greater, "<=": np.less_equal, ">=": np.greater_equal,
}


@dataclass(frozen=True)
class _Feature:
    """One boolean feature of a shape: ``kind`` on dimension(s) ``dims``."""

    kind: str  # "odd", "even", "eq1", "gt1", "mult", "notmult" or a key of _PAIR_OPS
    dims: tuple[int, ...]
    modulus: int = 0

    def evaluate(self, arr: np.ndarray) -> np.ndarray:
        """The feature on every row of an (N, ndim) integer array, as an (N,) bool array."""
        a = arr[:, self.dims[0]]
        if self.kind in _PAIR_OPS:
            return _PAIR_OPS[self.kind](a, arr[:, self.dims[1]])
        if self.kind == "odd":
            return a % 2 == 1
        if self.kind == "even":
            return a % 2 == 0
        if self.kind == "eq1":
            return a == 1
        if self.kind == "gt1":
            return a > 1
        if self.kind == "mult":
            return a % self.modulus == 0
        return a % self.modulus != 0  # "notmult"

    def text(self, names: Sequence[str]) -> str:
        """Human wording, e.g. ``"m is odd"`` or ``"m < n"``."""
        a = names[self.dims[0]]
        if self.kind in _PAIR_OPS:
            return f"{a} {self.kind} {names[self.dims[1]]}"
        return {
            "odd": f"{a} is odd", "even": f"{a} is even", "eq1": f"{a} == 1", "gt1": f"{a} > 1",
            "mult": f"{a} is a multiple of {self.modulus}",
            "notmult": f"{a} is not a multiple of {self.modulus}",
        }[self.kind]


def _grammar(ndim: int) -> list[_Feature]:
    """Every feature, in the documented tie-break order."""
    feats: list[_Feature] = []
    for d in range(ndim):
        feats += [_Feature("odd", (d,)), _Feature("even", (d,)),
                  _Feature("eq1", (d,)), _Feature("gt1", (d,))]
        for m in (4, 8, 16):
            feats += [_Feature("mult", (d,), m), _Feature("notmult", (d,), m)]
    for i in range(ndim):
        for j in range(i + 1, ndim):
            feats += [_Feature(op, (i, j)) for op in _PAIR_OPS]
    return feats


@dataclass(frozen=True)
class RulePredicate:
    """A rule as a callable on one shape tuple: ``op`` joins ``features`` (or is a constant).

    Example:
        >>> RulePredicate("and", (_Feature("odd", (0,)), _Feature("eq1", (1,))))((3, 1))
        True
    """

    op: str  # "none" (never fails), "all" (always fails), "single", "and", "or"
    features: tuple[_Feature, ...] = ()

    def evaluate(self, shapes: np.ndarray) -> np.ndarray:
        """The rule on an (N, ndim) integer array of shapes, as an (N,) bool array."""
        if self.op in ("none", "all"):
            return np.full(len(shapes), self.op == "all")
        cols = [f.evaluate(shapes) for f in self.features]
        if self.op == "and":
            return cols[0] & cols[1]
        if self.op == "or":
            return cols[0] | cols[1]
        return cols[0]

    def __call__(self, shape: Sequence[int]) -> bool:
        return bool(self.evaluate(np.asarray([tuple(shape)], dtype=np.int64).reshape(1, -1))[0])


@dataclass(frozen=True)
class ShapeRule:
    """The rule that says which shapes fail, or "no simple rule".

    ``kind`` is ``"constant"``, ``"single"``, ``"and"``, ``"or"`` or ``"none"``. ``predicate``
    is ``None`` for ``"none"`` (there is no rule to apply). ``alternatives`` lists other rules of
    the same simplicity that fit the data equally well (the data cannot tell them apart).
    ``best_candidate`` is, for ``"none"``, the text of the most accurate rule that was rejected.

    Example:
        >>> r = find_shape_rule([(1, 2), (3, 2), (2, 2)], [True, True, False])
        >>> r.text, r.exact, r.predicate((5, 7))
        ('d0 is odd', True, True)
    """

    text: str
    accuracy: float
    exact: bool
    n_failed: int
    n_total: int
    predicate: RulePredicate | None = field(default=None, compare=False, repr=False)
    kind: str = "none"
    alternatives: tuple[str, ...] = ()
    best_candidate: str = ""

    @classmethod
    def none(cls, n_failed: int, n_total: int, best_accuracy: float,
             best_candidate: str = "") -> ShapeRule:
        """The answer "no simple rule", carrying the best rejected candidate for information."""
        return cls("no simple rule", best_accuracy, False, n_failed, n_total, None, "none",
                   (), best_candidate)

    @property
    def found(self) -> bool:
        """Whether a rule (exact or convincing) was found."""
        return self.kind != "none"

    def __str__(self) -> str:
        counts = f"{self.n_failed} of {self.n_total} shapes fail"
        if not self.found:
            best = f"; best candidate '{self.best_candidate}'" if self.best_candidate else ""
            return f"no simple rule ({counts}{best} right for {self.accuracy:.1%})"
        if self.exact:
            return f"{self.text} (exact: {counts})"
        return f"{self.text} (approximate: right for {self.accuracy:.1%}; {counts})"


def _merge_columns(feats: list[_Feature], cols: np.ndarray
                   ) -> tuple[list[_Feature], np.ndarray, list[list[_Feature]]]:
    """Drop constant columns and merge identical ones (the earliest names the group)."""
    kept: list[_Feature] = []
    aliases: list[list[_Feature]] = []
    keep_idx: list[int] = []
    seen: dict[bytes, int] = {}
    for k, feat in enumerate(feats):
        col = cols[:, k]
        if col.all() or not col.any():
            continue  # a constant feature is a constant rule, already considered
        key = np.packbits(col).tobytes()
        if key in seen:
            aliases[seen[key]].append(feat)
            continue
        seen[key] = len(kept)
        kept.append(feat)
        aliases.append([])
        keep_idx.append(k)
    return kept, cols[:, keep_idx], aliases


def _rule_inputs(shapes: Sequence[Sequence[int]], failed: Sequence[bool],
                 dim_names: Sequence[str] | None) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    """``(shapes, failed, names)`` as arrays and names, or a ValueError saying what is wrong."""
    arr = np.asarray(shapes, dtype=np.int64)
    y = np.asarray(failed, dtype=bool)
    if arr.ndim != 2 or len(arr) == 0:
        raise ValueError("shapes must be a non-empty sequence of equal-length integer tuples")
    if y.shape != (len(arr),):
        raise ValueError(f"failed has {y.size} entries for {len(arr)} shapes")
    ndim = arr.shape[1]
    names = tuple(dim_names) if dim_names is not None else tuple(f"d{i}" for i in range(ndim))
    if len(names) != ndim:
        raise ValueError(f"{len(names)} dim_names for shapes of length {ndim}")
    return arr, y, names


def _rule_scores(cols: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """How many shapes each candidate rule classifies correctly, in simplicity order: the two
    constants, each feature, the AND of each pair ``(iu[p], ju[p])``, then their OR (-1: a
    pair that is never both true, or never both false, is a constant in disguise)."""
    n_failed = int(y.sum())
    n_pass = len(y) - n_failed
    # Correct counts for every rule at once. Counts through float matmuls (exact below 2**53)
    # because BLAS makes the all-pairs AND/OR tables cost next to nothing.
    fy, fn = cols[y].astype(float), cols[~y].astype(float)
    gy, gn = 1.0 - fy, 1.0 - fn
    single = fy.sum(0) + gn.sum(0)
    iu, ju = np.triu_indices(cols.shape[1], 1)
    both_fail, both_pass = (fy.T @ fy)[iu, ju], (fn.T @ fn)[iu, ju]
    neither_fail, neither_pass = (gy.T @ gy)[iu, ju], (gn.T @ gn)[iu, ju]
    and_ok = both_fail + (n_pass - both_pass)
    or_ok = (n_failed - neither_fail) + neither_pass
    and_ok[both_fail + both_pass == 0] = -1
    or_ok[neither_fail + neither_pass == 0] = -1
    scores = np.concatenate([[n_pass, n_failed], single, and_ok, or_ok]).round().astype(np.int64)
    return scores, iu, ju


def find_shape_rule(shapes: Sequence[Sequence[int]], failed: Sequence[bool], *,
                    dim_names: Sequence[str] | None = None) -> ShapeRule:
    """The simplest rule over shape features that separates failing from passing shapes.

    See the module docstring for the grammar, the simplicity order and when an inexact rule is
    convincing enough to be returned.

    Example:
        >>> shapes = [(m, n) for m in range(1, 5) for n in range(1, 5)]
        >>> find_shape_rule(shapes, [m < n for m, n in shapes], dim_names="mn").text
        'm < n'
    """
    arr, y, names = _rule_inputs(shapes, failed, dim_names)
    n_total, n_failed = len(y), int(y.sum())
    n_pass = n_total - n_failed
    feats = _grammar(arr.shape[1])
    all_cols = (np.stack([f.evaluate(arr) for f in feats], axis=1) if feats
                else np.zeros((n_total, 0), bool))
    feats, cols, aliases = _merge_columns(feats, all_cols)
    n_feat = len(feats)
    scores, iu, ju = _rule_scores(cols, y)
    n_pairs = len(iu)
    starts = {"constant": 0, "single": 2, "and": 2 + n_feat, "or": 2 + n_feat + n_pairs}

    def decode(idx: int) -> tuple[str, RulePredicate, list[str]]:
        """Text, predicate and alias texts of the candidate at flat index ``idx``."""
        if idx < 2:
            op = ("none", "all")[idx]
            return ("no shape fails", "every shape fails")[idx], RulePredicate(op), []
        if idx < starts["and"]:
            k = idx - 2
            f = feats[k]
            return f.text(names), RulePredicate("single", (f,)), [a.text(names) for a in aliases[k]]
        op = "and" if idx < starts["or"] else "or"
        p = idx - starts[op]
        i, j = int(iu[p]), int(ju[p])
        fi, fj = feats[i], feats[j]
        alt = [f"{a.text(names)} {op} {fj.text(names)}" for a in aliases[i]]
        alt += [f"{fi.text(names)} {op} {a.text(names)}" for a in aliases[j]]
        return (f"{fi.text(names)} {op} {fj.text(names)}",
                RulePredicate(op, (fi, fj)), alt)

    def level_of(idx: int) -> str:
        # AND and OR share one simplicity level; AND wins ties by coming first.
        return "constant" if idx < 2 else "single" if idx < starts["and"] else "pair"

    def build(idx: int, exact: bool) -> ShapeRule:
        text, pred, alts = decode(idx)
        level = level_of(idx)
        for other in np.flatnonzero(scores == scores[idx]):
            if len(alts) >= _MAX_ALTERNATIVES:
                break  # tiny sweeps tie thousands of pairs; a few make the point
            if other != idx and level_of(int(other)) == level:
                alts.append(decode(int(other))[0])
        kind = "constant" if idx < 2 else ("single" if level == "single" else pred.op)
        return ShapeRule(text, float(scores[idx]) / n_total, exact, n_failed, n_total, pred,
                         kind, tuple(alts[:_MAX_ALTERNATIVES]))

    exact_hits = np.flatnonzero(scores == n_total)
    if exact_hits.size:
        return build(int(exact_hits[0]), exact=True)  # the first is the simplest

    # argmax keeps the first maximum, so ties go to the simpler / earlier rule.
    best = 2 + int(np.argmax(scores[2:])) if n_feat else int(np.argmax(scores[:2]))
    correct = int(scores[best])
    predicted = decode(best)[1].evaluate(arr)
    recall = float((predicted & y).sum()) / n_failed if n_failed else 1.0
    majority_errors = min(n_failed, n_pass)
    if (best >= 2 and correct / n_total >= MIN_ACCURACY and recall >= MIN_RECALL
            and n_total - correct <= MAX_ERROR_RATIO * majority_errors):
        return build(best, exact=False)
    return ShapeRule.none(n_failed, n_total, correct / n_total, decode(best)[0])
