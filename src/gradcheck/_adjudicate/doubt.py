"""Which entries go to the referee, and what its answers change.

Entries still in doubt after the step study (a MISMATCH near its tolerance, UNCHECKED,
KINK) are adjudicated, and the worst few gross MISMATCHes confirmed; where the exact value
and a confident finite difference disagree, the finite difference's verdict stands.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._core.judged import Judged
from .._core.tolerance import Tolerance
from .._core.verdict import Cause, Verdict
from .referee import MAX_ADJUDICATED, Referee
from .zeros import prove_zeros

#: A MISMATCH this far outside its tolerance after the step study (which found it stable
#: across steps) is not in doubt; the referee confirms only the worst few of those, so the
#: report shows exact values without paying for every entry of a wholesale bug.
GROSS_EXCESS = 4.0


GROSS_CONFIRMED = 3


def adjudicate_doubts(judged: Judged, referee: Referee, analytic, idx_map, unit, cfg, claim_scale,
                      claim_rounding: Callable[[np.ndarray], np.ndarray] | None = None) -> None:
    """Send the entries in doubt to ``referee`` and write its verdicts into ``judged``.

    ``claim_rounding(positions)`` (None: not measured) returns the claim's own round-off at
    those entries of ``analytic`` at the cost of one more call of the claim (:mod:`.claimround`); it is called
    only when the referee runs, and widens the referee's allowance for a MISMATCH where it
    exceeds ``k*u*claim_scale``."""
    codes = judged.codes
    # Excess (error over tolerance) of the mismatches only: no arrays of N but the masks.
    mismatches = np.flatnonzero(codes == Verdict.MISMATCH)
    with np.errstate(divide="ignore", invalid="ignore"):
        tol = Tolerance.of(cfg).per_entry(analytic[mismatches], judged.numeric[mismatches], judged.noise[mismatches])
        excess = np.abs(analytic[mismatches] - judged.numeric[mismatches]) / tol
    big = excess >= GROSS_EXCESS
    gross = mismatches[big][np.argsort(-excess[big])][:GROSS_CONFIRMED]
    doubt = np.isin(codes, [int(Verdict.UNCHECKED), int(Verdict.KINK)])
    doubt &= judged.causes != Cause.BUDGET  # the second look could not afford them: neither can the referee
    doubt[mismatches[~big]] = True
    positions = np.union1d(np.flatnonzero(doubt & np.isfinite(analytic)), gross)
    info: dict[str, Any] = {"attempted": False, "entries": 0}
    judged.adjudication = info
    if not positions.size:
        return
    reason = referee.unavailable()
    probed = referee.take_probes()  # its one call of f at high precision, counted here
    judged.evaluations += probed
    info["evaluations"] = probed
    if reason is not None:
        info["reason"] = f"no exact derivatives (not adjudicable): {reason}"
        return
    if claim_scale is None:
        finite = analytic[np.isfinite(analytic)]
        claim_scale = float(np.abs(finite).max()) if finite.size else 0.0
    # Claims of 0 where the differences see only noise: proven together when they all are (.zeros).
    positions = prove_zeros(judged, referee, positions, analytic, idx_map,
                            Tolerance.of(cfg).round_off(unit, claim_scale), info)
    if not positions.size:
        info.update(attempted=True, entries=0, seconds=0.0, evaluations=probed, digits=referee.digits,
                    min_certified_digits=None)
        return
    if positions.size > MAX_ADJUDICATED:
        info["skipped"] = int(positions.size - MAX_ADJUDICATED)
        positions = positions[:MAX_ADJUDICATED]
    claim_noise = None
    if claim_rounding is not None:
        # One more call of the claimed gradient (not of f: report.evaluations counts f's calls).
        info["claim_calls"] = 1
        try:
            claim_noise = claim_rounding(positions)
        except Exception as exc:  # a claim that cannot be called again: the old allowance, said
            info["claim_rounding_failed"] = f"{type(exc).__name__}: {exc}"
    before = (codes[positions].copy(), judged.causes[positions].copy())
    adj = referee.adjudicate(positions, idx_map[positions], analytic, codes.copy(), **Tolerance.of(cfg).rule(), unit=unit,
                             claim_scale=claim_scale, claim_noise=claim_noise)
    if adj.forgiven:
        info["claim_rounding"] = adj.forgiven
    judged.codes[positions] = adj.codes
    judged.causes[positions] = adj.causes
    judged.exact[positions] = adj.exact
    judged.digits[positions] = adj.digits
    kinks = adj.causes == Cause.KINK_EXACT
    judged.left[positions[kinks]] = adj.left[kinks]
    judged.right[positions[kinks]] = adj.right[kinks]
    judged.refined[positions] = True
    judged.evaluations += adj.evaluations
    info.update(attempted=True, entries=int(positions.size), seconds=adj.seconds,
                evaluations=probed + adj.evaluations, digits=referee.digits,
                min_certified_digits=int(adj.digits.min()) if adj.digits.size else None)
    _guard_disagreement(judged, positions, adj, before, idx_map, cfg, info)


#: The exact value and a confident step-study estimate disagree when they differ by more
#: than this many times the sum of their error bounds.
DISAGREEMENT = 10.0


def _guard_disagreement(judged: Judged, positions, adj, before, idx_map, cfg, info) -> None:
    """Where the step study produced a confident estimate (its bound, which includes the
    truncation it measured, within ``resolution`` of the value) and the exact derivative
    lies far outside both bounds, the referee differentiated another function than the one
    the finite differences measured (a branch on the dtype, inputs that alias). The user's
    function is the one that ran on floats: those entries keep their finite-difference
    verdict (a MISMATCH stays one; nothing becomes PASS on the referee's word) and the
    report names the disagreement. First-pass estimates, whose bound holds no truncation,
    are not used for this."""
    fd_codes, fd_causes = before
    n = judged.numeric[positions]
    fd_bound = Tolerance.of(cfg).noise_term(judged.noise[positions])
    with np.errstate(invalid="ignore", over="ignore"):
        studied = (fd_causes == Cause.STEP_STUDY) & np.isin(fd_codes, [int(Verdict.PASS), int(Verdict.MISMATCH),
                                                                         int(Verdict.UNCHECKED)])
        confident = studied & (fd_bound <= cfg.resolution * np.abs(n)) & np.isfinite(adj.exact)
        far = np.abs(adj.exact - n) > DISAGREEMENT * (fd_bound + adj.error)
        split = np.flatnonzero(confident & far & (adj.causes != Cause.KINK_EXACT))
    if not split.size:
        return
    at = positions[split]
    info["disagreement"] = [(int(idx_map[p]), float(n[j]), float(fd_bound[j]), float(adj.exact[j]),
                             float(adj.error[j])) for p, j in zip(at[:3], split[:3])]
    info["disagreement_count"] = int(split.size)
    judged.codes[at], judged.causes[at] = fd_codes[split], fd_causes[split]
    judged.exact[at], judged.digits[at] = np.nan, -1
