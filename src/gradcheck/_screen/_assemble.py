"""Step 5 of a screen: the report.

``SCREENED`` for the entries cleared in every draw, the entry-wise verdicts (and second
look) of the localized entries, ``UNCHECKED`` for the rest; the detection limit per entry
(:mod:`._limit`) and the notes (:mod:`._words`).
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from .._adjudicate.notes import adjudication_notes

# gradcheck internals this module builds on (one place, for the package layout to come):
from .._classify.rule import tolerance
from .._core.judged import Judged
from .._core.sparse import SparseColumn
from .._core.tolerance import Tolerance
from .._core.verdict import Cause, Verdict
from .._report.report import Report
from ._bisect import Bisection
from ._entrywise import EntryJudge
from ._limit import describe, screening_limit, upward32
from ._measure import Measurer
from ._prepare import Prepared
from ._words import notes_for


@dataclass
class State:
    """What the screen found, for the report."""

    bisection: Bisection
    measurer: Measurer
    judge: EntryJudge
    blocks: int
    draws: int
    step_note: str
    complex_note: str
    engine_name: str
    phases: dict[str, int]           # evaluations: base and step search, top level, bisection
    shape: tuple[int, ...] = ()
    rtol: float = 0.0


def assemble(prep: Prepared, state: State, extra: list[str], deterministic: bool, drift: float,
              started: float) -> Report:
    cfg, n, shape = prep.config, prep.analytic.size, prep.shape
    bis = state.bisection
    codes = np.full(n, Verdict.UNCHECKED, dtype=np.uint8)
    screened = bis.cleared.all(axis=0)
    codes[screened] = Verdict.SCREENED
    numeric, noise = np.full(n, np.nan), np.full(n, np.nan)
    refined = np.zeros(n, dtype=bool)
    looks = Judged(numeric, noise, codes, refined, 0, np.zeros(n, np.uint8), SparseColumn(n),
                   np.full(n, -1, np.int16), SparseColumn(n), SparseColumn(n))
    localized = np.zeros(n, dtype=bool)
    for idx, judged in state.judge.parts:
        localized[idx] = True
        for key in ("numeric", "noise", "codes", "refined", "causes", "exact", "digits", "left", "right"):
            getattr(looks, key)[idx] = getattr(judged, key)
        looks.adjudication = judged.adjudication or looks.adjudication
        looks.studies.update({int(idx[p]): v for p, v in judged.studies.items()})
    own = screening_limit(bis.tau, bis.cleared, prep.weights, bis.depth_ratio)
    limit = np.maximum(own, prep.floor)
    rule = Tolerance.of(cfg)
    tol = tolerance(prep.analytic, numeric, noise, **rule.keywords())
    limit = np.where(localized, tol, np.where(screened, limit, np.inf))
    # An entry judged against its exact derivative: the referee's tolerance is what its verdict
    # could tell (the finite difference's, often far wider, did not decide it).
    at, exact = looks.exact.positions, looks.exact.values
    by_exact = localized[at] & np.isfinite(exact) & np.isin(looks.causes[at], [int(Cause.EXACT), int(Cause.EXACT_ZERO)])
    with np.errstate(invalid="ignore"):
        limit[at[by_exact]] = rule.against_exact(np.abs(exact[by_exact]),
                                                 rule.round_off(prep.unit, state.judge.claim_scale))
    summary = describe(np.where(screened & ~localized, limit, np.inf), prep.analytic, draws=state.draws,
                       blocks=state.blocks, screened=int((screened & ~localized).sum()), own=own)
    notes = notes_for(state, summary, localized, codes) + extra
    notes += [state.judge.referee_note] if state.judge.referee_note else []
    notes += adjudication_notes(looks.adjudication, state.judge.adjudicate)
    return Report(
        name=prep.label, analytic=prep.analytic.reshape(shape), numeric=numeric.reshape(shape),
        noise=noise.reshape(shape), tolerance=np.where(localized, tol, limit).reshape(shape),
        codes=codes.reshape(shape), refined=refined.reshape(shape), dtype=prep.dtype,
        engine=f"screen/{state.engine_name}", config=cfg, deterministic=deterministic, drift=drift,
        evaluations=state.measurer.evaluations, seconds=time.perf_counter() - started,
        notes=tuple(x for x in notes if x), detection_limit=limit.reshape(shape),
        **looks.second_look(shape),
    )


def trivial_report(prep: Prepared, started: float, code: Verdict, note: str) -> Report:
    """Every entry ``code`` without a screen (f not finite at x, or no entries at all)."""
    shape = prep.shape
    nan = np.full(shape, np.nan)
    return Report(
        name=prep.label, analytic=prep.analytic.reshape(shape), numeric=nan, noise=nan.copy(),
        tolerance=nan.copy(), codes=np.full(shape, code, dtype=np.uint8),
        refined=np.zeros(shape, dtype=bool), dtype=prep.dtype, engine="screen", config=prep.config,
        evaluations=prep.evaluations, seconds=time.perf_counter() - started, notes=(note,),
        detection_limit=np.full(shape, np.inf),
    )


# -- a range of the entries as one tensor (a whole model's name) --------------------------------

#: Entries per chunk of the per-range limits (no temporaries of a whole name at once).
RANGE_CHUNK = 1 << 20


def screened_limits(prep: Prepared, state: State, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(screened, limit, own)`` of the entries ``lo..hi``: cleared in every draw, the stated
    limit ``max(own, check's floor)`` there as :func:`assemble` states it, and ``own``, the
    blocks' screening limit (both inf where not screened); computed in chunks and held in
    float32, each rounded up (a whole model's reports: 4 bytes per entry)."""
    bis = state.bisection
    screened = np.asarray(bis.cleared[:, lo:hi].all(axis=0))
    limit, own = np.empty(hi - lo, np.float32), np.empty(hi - lo, np.float32)
    for a in range(lo, hi, RANGE_CHUNK):
        b = min(hi, a + RANGE_CHUNK)
        tau = bis.tau[:, a:b].astype(np.float64)  # float32 thresholds (a whole model): widened before any product
        blocks = screening_limit(tau, bis.cleared[:, a:b], np.asarray(prep.weights[a:b]), bis.depth_ratio)
        own[a - lo:b - lo] = upward32(blocks)
        limit[a - lo:b - lo] = upward32(np.maximum(blocks, prep.floor[a:b]))
    limit[~screened] = np.inf
    own[~screened] = np.inf
    return screened, limit, own


@dataclass
class Looked:
    """The entry-wise looks at the localized entries of a range: their positions (relative to
    the range's start, sorted), their verdicts and values (``judged``, one row each), check's
    tolerance there, and the detection limit (that tolerance, or the referee's against the
    exact value where the verdict was reached so)."""

    positions: np.ndarray
    judged: Judged
    tolerance: np.ndarray
    limit: np.ndarray


def looked_in(prep: Prepared, state: State, lo: int, hi: int) -> Looked:
    """The localized entries of ``lo..hi`` and how :func:`assemble` reports them."""
    rows = [(idx - lo, judged, np.flatnonzero((idx >= lo) & (idx < hi))) for idx, judged in state.judge.parts]
    positions, looks = _stacked([r for r in rows if r[2].size])
    analytic = prep.analytic[lo + positions]
    rule = Tolerance.of(prep.config)
    tol = tolerance(analytic, looks.numeric, looks.noise, **rule.keywords())
    limit, exact = tol.copy(), np.asarray(looks.exact)
    by_exact = np.isfinite(exact) & np.isin(looks.causes, [int(Cause.EXACT), int(Cause.EXACT_ZERO)])
    with np.errstate(invalid="ignore"):
        limit[by_exact] = rule.against_exact(np.abs(exact[by_exact]), rule.round_off(prep.unit, state.judge.claim_scale))
    return Looked(positions, looks, tol, limit)


def merge_looks(looks: list[Looked]) -> Looked:
    """The localized entries of several screens of one range (a later look at an entry wins)."""
    looks = [k for k in looks if k.positions.size] or looks[:1]
    if len(looks) == 1:
        return looks[0]
    positions, judged = _stacked([(k.positions, k.judged, np.arange(k.positions.size)) for k in looks])
    first = np.unique(positions[::-1], return_index=True)[1]
    keep = np.sort(positions.size - 1 - first)  # the last look at each entry, in order of position
    keep = keep[np.argsort(positions[keep], kind="stable")]
    _, judged = _stacked([(positions, judged, keep)])
    return Looked(positions[keep], judged, np.concatenate([k.tolerance for k in looks])[keep],
                  np.concatenate([k.limit for k in looks])[keep])


def _stacked(rows: list[tuple[np.ndarray, Judged, np.ndarray]]) -> tuple[np.ndarray, Judged]:
    """``(positions, judged)`` of the rows ``sel`` of each ``(positions, judged, sel)``, stacked."""
    k = sum(r[2].size for r in rows)
    looks = Judged(np.full(k, np.nan), np.full(k, np.nan), np.zeros(k, np.uint8), np.zeros(k, bool), 0,
                   np.zeros(k, np.uint8), SparseColumn(k), np.full(k, -1, np.int16), SparseColumn(k), SparseColumn(k))
    positions, at = np.zeros(k, np.int64), 0
    for where, judged, sel in rows:
        here = slice(at, at + sel.size)
        positions[here] = where[sel]
        for key in ("numeric", "noise", "codes", "refined", "causes", "digits"):
            getattr(looks, key)[here] = getattr(judged, key)[sel]
        for key in ("exact", "left", "right"):
            getattr(looks, key)[np.arange(at, at + sel.size)] = getattr(judged, key).take(sel)
        looks.adjudication = judged.adjudication or looks.adjudication
        looks.evaluations += judged.evaluations
        chosen = set(sel.tolist())
        looks.studies.update({at + int(np.searchsorted(sel, p)): v for p, v in judged.studies.items() if p in chosen})
        at += sel.size
    return positions, looks
