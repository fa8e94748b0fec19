"""What a screen says in its report's notes: the limit, the cost, what stopped it."""
from __future__ import annotations

from typing import Any

import numpy as np

#: Verdict codes this module reads (the values of gradcheck.Verdict).
_MISMATCH = 1
#: Halves measured this much less precisely than their blocks get a note (the factor
#: widens the limits whatever its size).
DEPTH_NOTE = 1.25


def notes_for(state: Any, summary: str, localized: np.ndarray, codes: np.ndarray) -> list[str]:
    """The report's notes, most important first."""
    notes = [summary]
    found = int(localized.sum())
    if found:
        bad = int(np.sum(codes[localized] == _MISMATCH))
        notes.append(f"localized {found} entries by bisection for an entry-wise look ({bad} MISMATCH)")
        judge = state.judge
        if getattr(judge, "looked_along", 0):
            notes.append(f"{judge.looked_along} localized entries whose entry-wise look could not exclude an error "
                         "above the screen's floor were measured along their own direction (a step search, "
                         f"Richardson and its bound, as for a block): {judge.flagged_along} MISMATCH found so")
        notes += _traced(state, codes)
    return notes + run_notes(state, int(np.sum(codes[localized] == _MISMATCH)))


def run_notes(state: Any, failing: int) -> list[str]:
    """The notes on the run as a whole (what stopped it, its cost, its step), for ``failing``
    MISMATCH entries found."""
    bis = state.bisection
    notes = _stops(state, failing)
    phases = ", ".join(f"{v} {k}" for k, v in state.phases.items() if v)
    notes.append(f"{state.measurer.evaluations} evaluations of f ({phases}); {state.draws} draws x "
                 f"{state.blocks} blocks, engine {state.engine_name}")
    notes.append(state.step_note)
    if state.complex_note:
        notes.append(state.complex_note)
    if bis.depth_ratio > DEPTH_NOTE:
        notes.append(f"halves were measured up to {bis.depth_ratio:.3g}x less precisely than their blocks: "
                     "the limits are widened by that factor")
    return notes


def _stops(state: Any, failing: int) -> list[str]:
    bis = state.bisection
    left = bis.disagreeing_tops()
    total = len(bis.tops)
    if bis.dense and not getattr(bis, "follow_dense", True):
        measured = [n for n in bis.tops if np.isfinite(n.bound)]
        spread = sum(bis.disagrees(n) for n in measured)
        draws = len({n.draw for n in measured})
        return [f"the error is spread over {spread} of the {len(measured)} blocks measured ({draws} "
                f"draw{'s' if draws > 1 else ''}): a dense error, not isolated entries; no block was followed "
                "down to entries (the entries of disagreeing blocks are UNCHECKED unless a later look settles them)"]
    if bis.dense and failing:
        return [f"the error is spread over at least {len(left)} of {total} blocks ({state.draws} draws): "
                "a dense error, not isolated entries; the screen stopped splitting after following "
                "a few blocks down to example entries (the other entries of disagreeing blocks are UNCHECKED)"]
    if bis.dense:
        return [f"{len(left)} of {total} blocks disagree, but the entries they were followed down to "
                "agree entry by entry: the differences along blocks are not reliable here (kinks or "
                "curvature within the block's step?); the other entries of those blocks are UNCHECKED"]
    if bis.budget_hit:
        return [f"the budget ({state.measurer.budget} evaluations) ran out with {len(left)} of {total} blocks "
                "still disagreeing: their unresolved entries are UNCHECKED (a larger budget= localizes more)"]
    if left:
        worst = max(bis.significance(n) for n in left)
        return [f"{len(left)} of {total} blocks disagree beyond their bounds (up to {worst:.3g}x) with no "
                "entry to explain it: their halves agree or their entries passed entry by entry (kinks "
                "or curvature at the block's step?); entries cleared in halves count as screened"]
    return []


#: Entries named in the note on resolved disagreements within tolerance.
TRACED_SHOWN = 5


def _traced(state: Any, codes: np.ndarray) -> list[str]:
    """Localized entries whose claim differs from the numeric value beyond its noise but
    within check's tolerance (not a failure by check's rule; the screen says where)."""
    bis = state.bisection
    idx, err, bound = bis.loc_idx, bis.loc_err, bis.loc_bound
    # Named only when beyond the noise AND large enough to be what made a block disagree.
    relevant = bis.relevance[idx] / state.measurer.weights[idx] if bis.relevance is not None else 0.0
    resolved = np.isfinite(bound) & (np.abs(err) > bound + relevant) & (codes[idx] != _MISMATCH)
    if not resolved.any():
        return []
    a = state.measurer.analytic
    shape = state.shape
    order = np.argsort(-np.abs(err[resolved]))[:TRACED_SHOWN]
    where = [(int(i), float(e)) for i, e in zip(idx[resolved][order], err[resolved][order])]
    shown = ", ".join(f"{tuple(int(k) for k in np.unravel_index(i, shape))} "
                      f"({abs(e) / max(abs(a[i]), np.finfo(float).tiny):.2g} relative)" for i, e in where)
    more = f" and {int(resolved.sum()) - len(where)} more" if resolved.sum() > len(where) else ""
    return [f"disagreement traced to {shown}{more}: a difference beyond f's noise, within check's "
            f"tolerance (rtol {state.rtol:g}), so not a MISMATCH"]
