"""What the referee did, and why entries stayed UNCHECKED, in words for the report."""
from __future__ import annotations

from typing import Any

import numpy as np

from .._classify.rule import resolved_share
from .._core.verdict import Verdict
from .referee import MAX_ADJUDICATED
from .zeros import DRAWS


def adjudication_notes(info: dict[str, Any], adjudicate: bool | str, shape: tuple[int, ...] | None = None) -> list[str]:
    """What the referee did, in words for the report (``shape`` names entries by multi-index)."""
    if not info or adjudicate is False:
        return []
    notes = []
    batch = info.get("zero_batch")
    if batch and batch["proven"]:
        notes.append(f"{batch['entries']} claims of 0 proven zero together: {DRAWS} exact directional derivatives "
                     f"at {info.get('digits', 30)} digits along random coefficients on all of them "
                     f"({batch['evaluations']} high-precision evaluations; gradcheck._adjudicate.zeros)")
    elif batch:
        notes.append(f"{batch['entries']} claims of 0 were not all zero together ({batch['evaluations']} "
                     "high-precision evaluations): each was adjudicated alone")
    if info.get("attempted") and info["entries"]:
        notes.append(
            f"adjudicated {info['entries']} entries against exact derivatives at {info['digits']} digits"
            f" ({info['evaluations']} high-precision evaluations, {info['seconds']:.3g} s;"
            f" fewest certified digits {info['min_certified_digits']})"
        )
    if "reason" in info:
        notes.append(info["reason"] + " (entries in doubt keep their step-study verdicts)")
    if info.get("claim_rounding"):
        notes.append(
            f"{info['claim_rounding']} entries differ from the exact derivative by no more than the claimed"
            " gradient's own round-off, measured by calling it once more at inputs moved by a few ulps (a"
            " cancelling backward rounds at the size of its terms, not of its result): not a MISMATCH;"
            " UNCHECKED where that round-off exceeds the resolution a PASS needs")
    if info.get("claim_rounding_failed"):
        notes.append("the claimed gradient's own round-off could not be measured (calling it again at inputs"
                     f" moved by a few ulps raised {info['claim_rounding_failed']}): the referee allowed"
                     " k*u*max|claim| of round-off")
    if info.get("skipped"):
        notes.append(f"{info['skipped']} more entries in doubt were not adjudicated (limit {MAX_ADJUDICATED})")
    if info.get("disagreement"):
        flat, n, nb, e, eb = info["disagreement"][0]
        where = tuple(int(i) for i in np.unravel_index(flat, shape)) if shape else flat
        notes.append(
            f"the exact derivative disagrees with a confident finite difference at {info['disagreement_count']}"
            f" entries, e.g. {where}: finite difference {n:.6g} ± {nb:.2g}, exact {e:.6g} ± {eb:.2g}:"
            " f computes another function on arbitrary-precision input than on floats (a branch on the"
            " dtype, or inputs that alias); those entries keep their finite-difference verdicts")
    return notes


def unchecked_notes(analytic, numeric, tol, codes, resolution: float, f_scale: float | None, *,
                    atol: float = 0.0, floor_name: str = "atol") -> list[str]:
    """At most two notes on the UNCHECKED entries: the resolution they reached and why.
    The reason is the larger part of their tolerances: ``atol`` (named ``floor_name``) or
    the finite difference's round-off (``f_scale`` is |f(x)|, whose round-off it is)."""
    unchecked = np.flatnonzero(codes.reshape(-1) == Verdict.UNCHECKED)  # only these: no arrays of N
    if not unchecked.size:
        return []
    tol_u = np.asarray(tol, dtype=np.float64).reshape(-1)[unchecked]
    share = resolved_share(np.ravel(analytic)[unchecked], np.ravel(numeric)[unchecked], tol_u)
    rest = tol_u - atol  # round-off (and rtol) part
    if atol > 0 and np.median(rest) < atol:
        why = f"{floor_name} ({atol:.3g}) is a large share of these values"
    elif f_scale is not None:
        why = f"the round-off of f (|f| = {f_scale:.2g}) swamps their slopes"
    else:
        why = "round-off swamps their slopes"
    notes = []
    coarse = np.isfinite(share) & (share < 1.0)
    if coarse.any():
        s = share[coarse]
        spread = f"{_pct(s.min())} to {_pct(s.max())}" if s.min() < s.max() else _pct(s.min())
        notes.append(f"{int(coarse.sum())} entries UNCHECKED: resolved only to {spread} of the value (median "
                     f"{_pct(float(np.median(s)))}; a PASS needs {_pct(resolution)}): {why}")
    below = ~coarse
    if below.any():
        notes.append(f"{int(below.sum())} entries UNCHECKED: claimed and numeric values are both within the "
                     f"finite difference's noise (a tolerance at or above the value: a true gradient of 0, or {why})")
    return notes


def _pct(share: float) -> str:
    return f"{100 * share:.2g}%"
