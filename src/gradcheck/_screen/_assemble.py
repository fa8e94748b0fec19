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
from ._limit import describe, screening_limit
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
