"""From differences to verdicts: classify, then a second look at the suspects.

Shared by ``check`` and ``check_params``; knows nothing of engines or reports.

1. classify every entry (the rule in ``_classify``);
2. retry entries whose step left f's domain with smaller steps;
3. step study (``_refine``) of every MISMATCH, and in float64 of PASS entries whose
   tolerance is mostly round-off (after a quick look at 8h and 16h, which certifies most
   of those) and of UNCHECKED entries: confirms, explains away, or finds a kink;
4. the referee (``_referee``) settles what is still in doubt against the exact derivative,
   when f runs at arbitrary precision.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._causes import Cause
from ._classify_kernel import classify  # the fused kernel from 1e5 entries, numpy below
from ._config import Config
from ._differences import slope_and_noise
from ._referee import MAX_ADJUDICATED, Referee
from ._refine import quick_certify, step_study
from ._verdict import Verdict

ADJUDICATE_CHOICES = ("auto", True, False)
#: Noisy PASS entries get the quick look (``_refine.quick_certify``) before the full step
#: study. False gives the full study to every suspect (the tests compare the two).
QUICK_LOOK = True


@dataclass
class Judged:
    numeric: np.ndarray
    noise: np.ndarray
    codes: np.ndarray
    refined: np.ndarray
    evaluations: int
    causes: np.ndarray | None = None
    exact: np.ndarray | None = None
    digits: np.ndarray | None = None
    left: np.ndarray | None = None
    right: np.ndarray | None = None
    adjudication: dict[str, Any] = field(default_factory=dict)

    def second_look(self, shape: tuple[int, ...], positions: np.ndarray | None = None) -> dict[str, Any]:
        """The report's second-look fields (causes, exact, digits, one-sided slopes,
        adjudication) in ``shape``; with ``positions`` (flat), these entries are the
        judged ones and the others get the "not looked at" fill values."""
        fills = {"causes": (0, np.uint8), "exact": (np.nan, np.float64), "digits": (-1, np.int16),
                 "left": (np.nan, np.float64), "right": (np.nan, np.float64)}
        out: dict[str, Any] = {"adjudication": self.adjudication}
        size = int(np.prod(shape, dtype=np.int64))
        for name, (fill, dtype) in fills.items():
            values = getattr(self, name)
            if positions is None:
                out[name] = values.reshape(shape)
            else:
                full = np.full(size, fill, dtype=dtype)
                full[positions] = values
                out[name] = full.reshape(shape)
        return out


def judge_entries(
    differencer, values: np.ndarray, analytic: np.ndarray, diffs, steps: np.ndarray, *,
    unit: float, config: Config, drift: float | None, base_finite: bool,
    flat_indices: np.ndarray | None = None, base_value: float | None = None,
    referee: Referee | None = None, adjudicate: Any = "auto", claim_scale: float | None = None,
) -> Judged:
    """Verdicts for entries already differenced once.

    ``values``, ``analytic``, ``diffs`` and ``steps`` are aligned 1-D arrays; the
    differencer takes indices into the perturbed array (``flat_indices`` maps to them).
    ``base_value`` (f at x) enables the kink test; ``referee`` the exact derivatives.
    ``claim_scale`` is the magnitude of the backward's values (default: the largest claimed
    entry here); a claim within ``k*u*claim_scale`` of an exact value is within round-off.
    """
    cfg = config
    fp, fm, denom = (np.array(d, dtype=np.float64) for d in diffs)
    count = values.size
    idx_map = np.arange(count) if flat_indices is None else np.asarray(flat_indices)
    numeric, noise = slope_and_noise(fp, fm, denom, unit)
    if drift is not None:
        # Run-to-run drift is noise the difference cannot see through.
        with np.errstate(divide="ignore", invalid="ignore"):
            noise = noise + drift / np.abs(denom)
    codes = classify(analytic, numeric, noise, rtol=cfg.rtol, atol=cfg.atol, noise_factor=cfg.noise_factor)
    refined = np.zeros(count, dtype=bool)
    causes = np.zeros(count, dtype=np.uint8)
    left = np.full(count, np.nan)
    right = np.full(count, np.nan)
    evaluations = 0
    sub = lambda j, h: differencer(idx_map[j], h)  # noqa: E731  positions -> perturbed indices
    if base_finite:
        retried = _retry_nonfinite_steps(sub, values, analytic, (fp, fm, denom), steps,
                                         codes, numeric, noise, unit, cfg)
        evaluations += 2 * retried.sum() if retried.size else 0
        causes[retried] = Cause.STEP_RETRY
    if cfg.refine and drift is None:
        suspect = codes == Verdict.MISMATCH
        if cfg.refine_noisy:
            # PASS entries whose tolerance is mostly round-off certify less than rtol;
            # UNCHECKED entries may sit on a kink.
            scale = np.maximum(np.abs(analytic), np.abs(numeric))
            suspect |= (codes == Verdict.PASS) & (cfg.noise_factor * noise > cfg.rtol * scale)
            suspect |= codes == Verdict.UNCHECKED
        suspects = np.flatnonzero(suspect & np.isfinite(fp) & np.isfinite(fm))
        options = dict(base_value=base_value, unit_roundoff=unit, rtol=cfg.rtol, atol=cfg.atol,
                       noise_factor=cfg.noise_factor)
        per_bound = lambda b: b / cfg.noise_factor if cfg.noise_factor else b  # noqa: E731
        # Noisy PASS entries get the quick look first; what it certifies skips the study.
        quick = (codes[suspects] == Verdict.PASS) & QUICK_LOOK
        noisy = suspects[quick]
        batches = [(suspects[~quick], None)]
        if noisy.size:
            q = quick_certify(sub, noisy, steps[noisy], analytic[noisy], (fp[noisy], fm[noisy], denom[noisy]),
                              **options)
            ok = noisy[q.certified]
            numeric[ok], noise[ok] = q.numeric[q.certified], per_bound(q.bound[q.certified])
            refined[ok] = True
            causes[ok] = Cause.STEP_STUDY
            evaluations += q.evaluations
            rest = ~q.certified
            batches.append((noisy[rest], {f: tuple(d[rest] for d in q.raw[f]) for f in q.raw}))
        for group, measured in batches:
            if not group.size:
                continue
            study = step_study(sub, group, steps[group], analytic[group], (fp[group], fm[group], denom[group]),
                               measured=measured, **options)
            numeric[group] = study.numeric
            noise[group] = per_bound(study.bound)
            codes[group] = study.codes
            refined[group] = True
            causes[group] = np.where(study.kink, Cause.KINK_STEPS, Cause.STEP_STUDY)
            left[group], right[group] = study.left, study.right
            evaluations += study.evaluations

    judged = Judged(numeric, noise, codes, refined, int(evaluations), causes,
                    np.full(count, np.nan), np.full(count, -1, dtype=np.int16), left, right)
    if referee is not None and adjudicate is not False and drift is None:
        _adjudicate(judged, referee, analytic, idx_map, unit, cfg, claim_scale)
    return judged


#: A MISMATCH this far outside its tolerance after the step study (which found it stable
#: across steps) is not in doubt; the referee confirms only the worst few of those, so the
#: report shows exact values without paying for every entry of a wholesale bug.
GROSS_EXCESS = 4.0
GROSS_CONFIRMED = 3


def _adjudicate(judged: Judged, referee: Referee, analytic, idx_map, unit, cfg, claim_scale) -> None:
    codes = judged.codes
    with np.errstate(divide="ignore", invalid="ignore"):
        tol = cfg.atol + cfg.rtol * np.maximum(np.abs(analytic), np.abs(judged.numeric)) + cfg.noise_factor * judged.noise
        excess = np.abs(analytic - judged.numeric) / tol
    mismatch = codes == Verdict.MISMATCH
    gross = np.flatnonzero(mismatch & (excess >= GROSS_EXCESS))
    gross = gross[np.argsort(-excess[gross])][:GROSS_CONFIRMED]
    doubt = (mismatch & ~(excess >= GROSS_EXCESS)) | np.isin(codes, [int(Verdict.UNCHECKED), int(Verdict.KINK)])
    positions = np.union1d(np.flatnonzero(doubt & np.isfinite(analytic)), gross)
    info: dict[str, Any] = {"attempted": False, "entries": 0}
    judged.adjudication = info
    if not positions.size:
        return
    reason = referee.unavailable()
    if reason is not None:
        info["reason"] = f"not adjudicable: {reason}"
        return
    if positions.size > MAX_ADJUDICATED:
        info["skipped"] = int(positions.size - MAX_ADJUDICATED)
        positions = positions[:MAX_ADJUDICATED]
    if claim_scale is None:
        finite = analytic[np.isfinite(analytic)]
        claim_scale = float(np.abs(finite).max()) if finite.size else 0.0
    adj = referee.adjudicate(positions, idx_map[positions], analytic, codes.copy(), rtol=cfg.rtol, atol=cfg.atol,
                             noise_factor=cfg.noise_factor, unit=unit, claim_scale=claim_scale)
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
                evaluations=adj.evaluations, digits=referee.digits,
                min_certified_digits=int(adj.digits.min()) if adj.digits.size else None)


def _retry_nonfinite_steps(differencer, x, a, diffs, steps, codes, numeric, noise, unit, cfg) -> np.ndarray:
    """Entries whose x and claimed value are finite but whose perturbed evaluations were
    not (a step that left f's domain, e.g. log near 0) are retried with a step relative
    to |x_i| alone, then smaller ones. ``steps`` and ``diffs`` are updated in place for
    the entries that worked, so a later step study starts from a step inside the domain.
    Returns the positions that were retried successfully."""
    fp, fm, denom = diffs
    stuck = np.flatnonzero(
        np.isfinite(x) & np.isfinite(a) & ~(np.isfinite(fp) & np.isfinite(fm))
    )
    done = []
    relative = cfg.step * np.maximum(np.abs(x), np.finfo(np.float64).tiny)
    for shrink in (1.0, 1e-2, 1e-4):
        if not stuck.size:
            break
        trial = np.minimum(relative[stuck] * shrink, steps[stuck])
        p, m, d = differencer(stuck, trial)
        ok = np.isfinite(p) & np.isfinite(m) & (d > 0)
        if ok.any():
            idx = stuck[ok]
            fp[idx], fm[idx], denom[idx], steps[idx] = p[ok], m[ok], d[ok], trial[ok]
            n, z = slope_and_noise(p[ok], m[ok], d[ok], unit)
            numeric[idx], noise[idx] = n, z
            codes[idx] = classify(a[idx], n, z, rtol=cfg.rtol, atol=cfg.atol, noise_factor=cfg.noise_factor)
            done.append(idx)
        stuck = stuck[~ok]
    return np.concatenate(done) if done else np.zeros(0, dtype=np.int64)


def adjudication_notes(info: dict[str, Any], adjudicate: Any) -> list[str]:
    """What the referee did, in words for the report."""
    if not info or adjudicate is False:
        return []
    notes = []
    if info.get("attempted"):
        notes.append(
            f"adjudicated {info['entries']} entries against exact derivatives at {info['digits']} digits"
            f" ({info['evaluations']} high-precision evaluations, {info['seconds']:.3g} s;"
            f" fewest certified digits {info['min_certified_digits']})"
        )
    if "reason" in info:
        notes.append(info["reason"] + " (entries in doubt keep their step-study verdicts)")
    if info.get("skipped"):
        notes.append(f"{info['skipped']} more entries in doubt were not adjudicated (limit {MAX_ADJUDICATED})")
    return notes
